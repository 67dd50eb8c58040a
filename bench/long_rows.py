"""Plans for rows longer than one tile: one row a program, by chunk and warps, on the Triton pipeline.

    python bench/long_rows.py [--ops rmsnorm,layernorm,softmax] [--shapes 8192x65536,...] [--out DIR]
    python bench/long_rows.py --list       # anywhere: the plans, as options of the plan pass

For each op and shape, the kernel Inductor schedules is captured, run through `triton-default`
with each plan's options on its `plan` pass (`def`: the pipeline's own heuristic plan, 16 warps
in chunks of 8192; `cC-wW`: one row a program in chunks of C over W warps), emitted as Triton,
launched directly, checked against an fp32 reference and timed (`tilec.runtime.timing.device_ms`:
cold L2, the host kept out), as % of a same-size device-to-device copy timed the same way.
Writes long.jsonl (one record per plan) to DIR. The chooser's long-row rules and the autotuner's
long-row candidates were read from such a run (bench/results/2026-11-25-long-rows).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from variants import arguments

from bench import FUNCTIONS, make_inputs, model_bytes, parse_shapes, warm_up
from tilec.passes.pipelines import with_plan

DEFAULT_SHAPES = "8192x65536,4096x131072,2048x262144,32768x50257,4096x32768"
PLANS = {"def": ""}
for _w in (32, 16):
    for _c in (4096, 8192, 16384, 32768):
        PLANS[f"c{_c}-w{_w}"] = f"xblock=1,chunk={_c},num_warps={_w}"


def pipeline(plan: str) -> str:
    return with_plan("triton-default", plan) if plan else "triton-default"


def run(ops: list[str], shapes: list[tuple[int, int]], out: Path) -> None:
    import torch

    from tilec.emit.triton import emit_triton
    from tilec.frontend.capture import capture
    from tilec.frontend.result import Lowered
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.runtime import load_source
    from tilec.runtime.timing import device_ms
    from tilec.testing import assert_close

    out.mkdir(parents=True, exist_ok=True)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    warm_up()
    with (out / "long.jsonl").open("w") as jl:
        for op in ops:
            for m, n in shapes:
                torch.manual_seed(0)
                inputs = make_inputs(op, m, n, torch.bfloat16)
                ref = FUNCTIONS[op](*[t.float() for t in inputs]).to(torch.bfloat16)
                (captured,) = capture(FUNCTIONS[op], inputs, strict=True)
                lowered = captured.result
                assert isinstance(lowered, Lowered)
                text = print_kernel(lowered.kernel)
                written = next(a.param for a in lowered.args if a.access == "write")
                src = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
                dst = torch.empty_like(src)
                copy_gbps = 4 * m * n / device_ms(lambda s=src, d=dst: d.copy_(s), reps=20) / 1e6
                del src, dst
                nbytes = model_bytes(op, m, n, 2)
                for name, plan in PLANS.items():
                    rec: dict[str, Any] = {"op": op, "m": m, "n": n, "variant": name, "plan": plan}
                    try:
                        module = parse(text)
                        run_pipeline(module, pipeline(plan))
                        kernel = module.kernels[0]
                        launched = load_source(emit_triton(kernel).source)
                        args, outs = arguments(lowered, inputs)
                        launched.launch(*args)
                        torch.cuda.synchronize()
                        assert_close(outs[written].reshape(ref.shape), ref, torch.bfloat16, what=name)
                        ms = device_ms(lambda lm=launched, a=args: lm.launch(*a), reps=20)
                        rec.update(ms=ms, pct=100 * nbytes / ms / 1e6 / copy_gbps, cx=dict(kernel.constexprs))
                    except Exception as e:  # a plan that fails is a result too
                        rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                    print(json.dumps(rec), flush=True)
                    jl.write(json.dumps(rec) + "\n")
                    jl.flush()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/long_rows.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default="rmsnorm,layernorm,softmax")
    p.add_argument("--shapes", type=parse_shapes, default=parse_shapes(DEFAULT_SHAPES))
    p.add_argument("--out", default="bench-out")
    p.add_argument("--list", action="store_true", help="print each plan's pipeline and exit (no GPU)")
    args = p.parse_args(argv)
    if args.list:
        for name, plan in PLANS.items():
            print(f"{name}: {pipeline(plan)}")
        return 0
    run(args.ops.split(","), args.shapes, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
