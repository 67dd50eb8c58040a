"""Times the forms of one tilec kernel against each other: the kernel Inductor schedules for an op
and shape, run through several pass pipelines, each emitted, checked against eager and timed
(tilec.runtime.timing.device_ms: cold L2, the host kept out), with a same-size copy as the
ceiling; stock Inductor (default and max-autotune) for reference. Tuning data for the plan
chooser; no torch.compile in the timed path.

    python bench/variants.py [--ops rmsnorm,softmax] [--shapes 8192x4096,...] [--variants NAME,...] [--out DIR]
    python bench/variants.py --ops layernorm --shapes 2048x262144 --variants "" \
        --plans "xblock=1,chunk=4096,num_warps=16,cluster=8;...,prefetch=1" --no-stock

`--plans`: plans of the Gluon pipeline (`plan` pass options, ";" between plans), each a variant
named `gluon:OPTIONS` (`--triton-plans`: the Triton pipeline's, `triton:OPTIONS`); `--line16`
adds each plan with align-rows' whole chunks on 16-byte vectors (`gluon-line16:OPTIONS`), where
the pipelines start them on 128-byte lines. `--no-stock`
leaves out stock Inductor's two kernels (max-autotune compiles long rows for minutes).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import FUNCTIONS, make_inputs, model_bytes, parse_shapes
from tilec.passes.pipelines import gluon_form, with_plan
from tilec.runtime.timing import device_ms

ROWS = "row_block_bytes=131072"
VARIANTS = {
    "gluon-default": "gluon-default",
    "cache-only": gluon_form(pipelined=False),
    "resident": gluon_form(),
    "persistent": gluon_form(persistent=True),
    "persistent-ws4": gluon_form(f"{ROWS},num_warps=4", persistent=True, specialize=True),
    "persistent-ws8": gluon_form(f"{ROWS},num_warps=8", persistent=True, specialize=True),
    "resident-ws4": gluon_form(f"{ROWS},num_warps=4", specialize=True),
    "ring3": gluon_form(stages=3),
    "triton-default": "triton-default",
    "resident-64k": gluon_form("row_block_bytes=65536"),
    "resident-x1": gluon_form("xblock=1"),
    "resident-x1-w8": gluon_form("xblock=1,num_warps=8"),
    "ring3-x1": gluon_form("xblock=1", stages=3),
    "ring4-x1-c1024": gluon_form("xblock=1,chunk=1024,max_rblock=1024", stages=4),
    # LayerNorm bf16: the cached row widened once, not at each of the three phases
    "gluon-no-fp32-at-use": gluon_form(cache="auto").replace(",fp32-at-use", ""),
}
# rows that fit: rows per program and warps, for both emitters (the rest of each default pipeline)
for _x in (1, 2, 4):
    for _w in (2, 4, 8, 16):
        VARIANTS[f"gluon-x{_x}-w{_w}"] = with_plan("gluon-default", f"xblock={_x},num_warps={_w}")
        VARIANTS[f"triton-x{_x}-w{_w}"] = with_plan("triton-default", f"xblock={_x},num_warps={_w}")
# a row of 32768 as one tile (Liger's softmax does this): 8, 16 or 32 warps
for _w in (8, 16, 32):
    VARIANTS[f"triton-r32768-w{_w}"] = with_plan("triton-default", f"max_rblock=32768,xblock=1,num_warps={_w}")
# rows too long for one tile: the Triton emitter's loop, by rows per program, chunk and warps
for _x in (1, 2):
    for _c in (1024, 2048, 4096, 8192):
        for _w in (4, 8, 16):
            VARIANTS[f"triton-x{_x}-c{_c}-w{_w}"] = with_plan(
                "triton-default", f"xblock={_x},chunk={_c},num_warps={_w}"
            )


def arguments(lowered: Any, inputs: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    import torch

    from tilec.frontend.dtypes import to_torch
    from tilec.ir.dtypes import DType

    args: list[Any] = []
    outs: dict[str, Any] = {}
    for a in lowered.args:
        if a.buffer.startswith("arg"):
            args.append(inputs[int(a.buffer[3:].split("_")[0])])
            continue
        buf = torch.empty_strided(a.shape, a.strides, dtype=to_torch(DType(a.dtype)), device="cuda")
        outs[a.param] = buf
        args.append(buf)
    return args, outs


def pipeline_of(name: str) -> str:
    """A variant's pipeline: a name of VARIANTS, or `gluon:OPTIONS` / `triton:OPTIONS` (a plan),
    or `gluon-line16:OPTIONS` / `triton-line16:OPTIONS` (with align-rows' whole chunks on 16-byte
    vectors, not on 128-byte lines: the pipelines' form before 2026-11-29)."""
    emitter, _, options = name.partition(":")
    if options and emitter in ("gluon", "triton"):
        return with_plan(f"{emitter}-default", options)
    if options and emitter in ("gluon-line16", "triton-line16"):
        pipeline = with_plan(f"{emitter[:-7]}-default", options)
        narrow = "narrow=true," if emitter.startswith("triton") else ""
        return re.sub(r"align-rows\{[^}]*\}", f"align-rows{{{narrow}line=16}}", pipeline)
    return VARIANTS[name]


def run(ops: list[str], shapes: list[tuple[int, int]], variants: list[str], out: Path, stock: bool = True) -> None:
    import torch

    from tilec.emit.gluon import emit_gluon
    from tilec.emit.triton import emit_triton
    from tilec.frontend.capture import capture
    from tilec.frontend.result import Lowered
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.runtime import load_source
    from tilec.testing import assert_close

    out.mkdir(parents=True, exist_ok=True)
    log = (out / "variants.log").open("w")
    jl = (out / "variants.jsonl").open("w")

    def say(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    say(f"{torch.cuda.get_device_name()} torch {torch.__version__}")
    from bench import warm_up

    warm_up()
    for op in ops:
        for m, n in shapes:
            torch.manual_seed(0)
            inputs = make_inputs(op, m, n, torch.bfloat16)
            ref = FUNCTIONS[op](*[t.float() for t in inputs]).to(torch.bfloat16)
            kernels = capture(FUNCTIONS[op], inputs)
            if len(kernels) != 1 or not isinstance(kernels[0].result, Lowered):
                say(f"{op} {m}x{n}: {len(kernels)} kernels, first: {kernels[0].summary() if kernels else '-'}")
                continue
            lowered = kernels[0].result
            text = print_kernel(lowered.kernel)
            out_param = next(a.param for a in lowered.args if a.access == "write")
            src_copy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
            dst_copy = torch.empty_like(src_copy)
            ceiling = device_ms(lambda s=src_copy, d=dst_copy: d.copy_(s), reps=30)
            del src_copy, dst_copy
            nbytes = model_bytes(op, m, n, 2)
            copy_gbps = 2 * m * n * 2 / ceiling / 1e6
            say(f"{op} {m}x{n}: copy {copy_gbps:.0f} GB/s")
            for name in variants:
                rec: dict[str, Any] = {"op": op, "m": m, "n": n, "variant": name}
                try:
                    module = parse(text)
                    run_pipeline(module, pipeline_of(name))
                    k = module.kernels[0]
                    src = emit_triton(k).source if name.startswith("triton") else emit_gluon(k).source
                    t0 = time.perf_counter()
                    mod = load_source(src)
                    args, outs = arguments(lowered, inputs)
                    mod.launch(*args)
                    torch.cuda.synchronize()
                    rec["compile_s"] = round(time.perf_counter() - t0, 2)
                    assert_close(outs[out_param].reshape(ref.shape), ref, torch.bfloat16, what=name)
                    ms = device_ms(lambda mod=mod, args=args: mod.launch(*args), reps=30)
                    gbps = nbytes / ms / 1e6
                    rec.update(
                        ms=ms, gbps=gbps, pct=100 * gbps / copy_gbps, warps=k.launch.num_warps, cx=dict(k.constexprs)
                    )
                    say(
                        f"  {name:16s} {gbps:6.0f} GB/s {100 * gbps / copy_gbps:5.1f}%  warps={k.launch.num_warps} {dict(k.constexprs)}"
                    )
                except Exception as e:
                    rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                    say(f"  {name:16s} FAILED {rec['error']}")
                    say(traceback.format_exc(limit=3))
                jl.write(json.dumps(rec) + "\n")
                jl.flush()
            # the stock kernel through torch.compile, for reference
            if not stock:
                continue
            try:
                import tilec

                for mode in (None, "max-autotune-no-cudagraphs"):
                    with tilec.config.patch(enabled=False):
                        torch.compiler.reset()
                        f = torch.compile(FUNCTIONS[op], dynamic=False, mode=mode)
                        f(*inputs)
                    ms = device_ms(lambda f=f, inputs=inputs: f(*inputs), reps=30)
                    gbps = nbytes / ms / 1e6
                    name = "inductor" if mode is None else "inductor-max-autotune"
                    say(f"  {name:16s} {gbps:6.0f} GB/s {100 * gbps / copy_gbps:5.1f}%")
                    rec = {"op": op, "m": m, "n": n, "variant": name, "ms": ms, "gbps": gbps}
                    jl.write(json.dumps({**rec, "pct": 100 * gbps / copy_gbps}) + "\n")
            except Exception as e:
                say(f"  inductor FAILED {e}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/variants.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default="rmsnorm,layernorm,softmax")
    p.add_argument("--shapes", type=parse_shapes, default=parse_shapes("32768x512,8192x4096,4096x16384,8192x65536"))
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--plans", default="", help="Gluon plans (plan options), ';' between them")
    p.add_argument("--triton-plans", default="", help="Triton plans (plan options), ';' between them")
    p.add_argument(
        "--line16", action="store_true", help="each plan also with align-rows{line=16} (`EMITTER-line16:OPTIONS`)"
    )
    p.add_argument("--no-stock", action="store_true", help="leave out stock Inductor's kernels")
    p.add_argument("--out", default="bench-out")
    a = p.parse_args(argv)
    variants = [v for v in a.variants.split(",") if v]
    variants += [f"gluon:{o}" for o in a.plans.split(";") if o]
    variants += [f"triton:{o}" for o in a.triton_plans.split(";") if o]
    if a.line16:
        variants += [v.replace(":", "-line16:", 1) for v in variants if v.startswith(("gluon:", "triton:"))]
    run(a.ops.split(","), a.shapes, variants, Path(a.out), stock=not a.no_stock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
