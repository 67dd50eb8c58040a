"""A plan survey of row reductions over rows of symbolic length: RMSNorm, LayerNorm and softmax
traced with every size symbolic (`torch.compile(dynamic=True)`; an attention softmax over a
varying sequence), each of tilec's plans timed at several sizes against stock torch.compile.

    python bench/symbolic_survey.py [--ops softmax,...] [--shapes 1000x3000,...] [--out DIR] [--lines]

A kernel over rows of symbolic length is compiled once and runs at every length, so one plan must
serve all of them: each op's kernel is captured once with every size symbolic (tilec's `capture`,
`dynamic="all"`), run through each plan (`PLANS`: both emitters' heuristic plans and one row a
program in chunks of 256-4096 over 1-16 warps, the statistics kept per lane), compiled once, then
launched, checked against an fp32 reference and timed at each size (`tilec.runtime.timing.
device_ms`: cold L2, the host kept out). Stock is compiled afresh at each size
(`torch.compile(dynamic=True)`, its kernel autotuned at that size: its best case there), timed the
same way.

Writes results.jsonl to DIR: a first line `{"meta": {...}}` (GPU, versions, date), then a record a
op and size, as the autotuner's records read (`bench/rules.py --kernels DIR` derives the
`symbolic=True` rules: a plan is taken where it beats stock at every size measured): `report`, one
kernel with its `signature` (the row length None), `timings` ((candidate, device ms): the plans as
`triton{...}`, stock as `stock`) and `traced` (the size timed); and `pct`, each candidate's % of a
same-size copy (model bytes), for the notes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import FUNCTIONS, copy_ms, environment, make_inputs, model_bytes, own_code, parse_shapes, reference, warm_up

OPS = ("softmax", "rmsnorm", "layernorm")
# the size the kernels are traced at (any: every size is symbolic)
TRACED = (1000, 3000)
# the sizes timed: rows of 256 (a short attention sequence) to 32768, lengths that are and are not
# multiples of the 16-byte vector, 16-64 MiB of bf16 a call, and the traced size
SHAPES = [
    (65536, 256),
    (16384, 1000),
    (32768, 1024),
    (8192, 2048),
    (4000, 3000),
    (8192, 4096),
    (4096, 8192),
    (2048, 16384),
    (1024, 32768),
    (1000, 3000),
]


def plans(lines: bool = False) -> dict[str, str]:
    """Candidate -> plan options ("" for the Triton pipeline's heuristic plan): one row a program
    (a row's misalignment differs from row to row: `align-rows`), chunks of 256-4096 over 1-16
    warps, 4 to 16 elements of a chunk a thread; with `lines`, each also with a row's whole chunks
    starting on 16-byte vectors (`line=16`) rather than align-rows' 128-byte lines. (The Gluon
    pipeline's heuristic plan ran at 2-46% of a copy in a first survey,
    bench/results/2026-11-28-h200-symbolic-survey/first.jsonl.)"""
    found = {"triton": ""}
    for r in (256, 512, 1024, 2048, 4096):
        for w in (1, 2, 4, 8, 16):
            if 4 <= r // (32 * w) <= 16:
                for line in ("", ",line=16") if lines else ("",):
                    plan = f"xblock=1,rblock={r},num_warps={w},lanes_reread=true{line}"
                    found[f"triton{{{plan}}}"] = plan
    return found


def sized_arguments(lowered: Any, inputs: list[Any], m: int, n: int) -> tuple[list[Any], list[Any]]:
    """The kernel's arguments for inputs of m rows of n (its pointers, then its sizes: the rows
    `xnumel` and the row length `rnumel`) and the outputs it writes."""
    import torch

    from tilec.frontend.dtypes import to_torch
    from tilec.ir.dtypes import DType

    tensors = iter(inputs)  # the graph's tensor inputs in order (its size symbols are not buffers)
    args: list[Any] = []
    outs: list[Any] = []
    for a in lowered.args:
        if a.is_written:
            out = torch.empty(m, n, device="cuda", dtype=to_torch(DType(a.dtype)))
            outs.append(out)
            args.append(out)
        else:
            args.append(next(tensors))
    sizes = {"xnumel": m, "rnumel": n}
    unknown = set(lowered.sizes) - set(sizes)
    if unknown:
        raise ValueError(f"sizes the survey cannot give: {sorted(unknown)}")
    return args + [sizes[s] for s in lowered.sizes], outs


def run(ops: list[str], shapes: list[tuple[int, int]], out: Path, jobs: int, lines: bool = False) -> None:
    import torch

    import tilec
    from tilec.emit.gluon import emit_gluon
    from tilec.emit.triton import emit_triton
    from tilec.frontend.capture import capture
    from tilec.frontend.result import Lowered
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.passes.chooser import signature
    from tilec.passes.pipelines import with_plan
    from tilec.runtime import load_source
    from tilec.runtime.timing import device_ms
    from tilec.testing import assert_close

    out.mkdir(parents=True, exist_ok=True)
    warm_up()
    started = time.perf_counter()
    dtype = torch.bfloat16
    with (out / "results.jsonl").open("w") as jl:

        def write(rec: dict[str, Any]) -> None:
            print(json.dumps(rec), flush=True)
            jl.write(json.dumps(rec) + "\n")
            jl.flush()

        write({"meta": environment() | {"traced": f"{TRACED[0]}x{TRACED[1]}", "symbolic": "all"}})
        for op in ops:
            (captured,) = capture(FUNCTIONS[op], make_inputs(op, *TRACED, dtype), dynamic="all", strict=True)
            lowered = captured.result
            assert isinstance(lowered, Lowered) and lowered.rnumel is None, captured.summary()
            sig = signature(lowered.kernel)
            text = print_kernel(lowered.kernel)
            built: dict[str, Any] = {}
            for name, plan in plans(lines).items():
                emitter = name.partition("{")[0]  # (every plan surveyed now is Triton's)
                try:
                    module = parse(text)
                    run_pipeline(module, with_plan(f"{emitter}-default", plan) if plan else f"{emitter}-default")
                    emit = emit_triton if emitter == "triton" else emit_gluon
                    built[name] = load_source(emit(module.kernels[0]).source)
                except Exception as e:  # a plan that fails is a result too
                    built[name] = e

            def first(name: str, built: dict[str, Any] = built, op: str = op, lowered: Any = lowered) -> None:
                if not isinstance(built[name], Exception):
                    inputs = make_inputs(op, *TRACED, dtype)
                    try:
                        built[name].launch(*sized_arguments(lowered, inputs, *TRACED)[0])
                    except Exception as e:
                        built[name] = e

            with ThreadPoolExecutor(jobs) as pool:  # the first launches compile, in threads
                list(pool.map(first, list(built)))
            torch.cuda.synchronize()
            for m, n in shapes:
                torch.manual_seed(0)
                inputs = make_inputs(op, m, n, dtype)
                want = reference(op, inputs).to(dtype)
                copy = copy_ms(m, n, dtype) * model_bytes(op, m, n, 2) / (2 * m * n * 2)
                timings: list[tuple[str, float]] = []
                errors: dict[str, str] = {}
                for name, launched in built.items():
                    try:
                        if isinstance(launched, Exception):
                            raise launched
                        args, outs = sized_arguments(lowered, inputs, m, n)
                        launched.launch(*args)
                        torch.cuda.synchronize()
                        assert_close(outs[0], want, dtype, what=f"{op} {m}x{n} {name}")
                        timings.append((name, device_ms(lambda lm=launched, a=args: lm.launch(*a), reps=20)))
                    except Exception as e:
                        errors[name] = f"{type(e).__name__}: {str(e)[:300]}"
                try:  # stock, compiled at this size
                    torch._dynamo.reset()
                    with tilec.config.patch(enabled=False), torch._inductor.config.patch(fx_graph_cache=False):
                        f = torch.compile(own_code(FUNCTIONS[op]), dynamic=True)
                        assert_close(f(*inputs), want, dtype, what=f"{op} {m}x{n} stock")
                    timings.append(("stock", device_ms(lambda f=f, i=inputs: f(*i), reps=20)))
                except Exception as e:
                    errors["stock"] = f"{type(e).__name__}: {str(e)[:300]}"
                timings.sort(key=lambda t: t[1])
                kernel = {
                    "kernel": captured.name,
                    "signature": [sig.family, sig.row_inputs, sig.elem_bytes, None, None, 0],
                    "timings": timings,
                    "traced": [m, n],
                }
                pct = {c: round(100 * copy / ms, 1) for c, ms in timings}
                write({"op": op, "m": m, "n": n, "dtype": "bf16", "report": [kernel], "pct": pct, "errors": errors})
                print(f"# {op} {m}x{n} done at {time.perf_counter() - started:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/symbolic_survey.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--shapes", type=parse_shapes, help="MxN,... (default: SHAPES)")
    p.add_argument("--out", default="bench-out")
    p.add_argument("--jobs", type=int, default=12, help="plans compiled at once")
    p.add_argument(
        "--lines",
        action="store_true",
        help="each plan also with a row's whole chunks on 16-byte vectors (line=16), not 128-byte lines",
    )
    args = p.parse_args(argv)
    run(args.ops.split(","), args.shapes or SHAPES, Path(args.out), args.jobs, args.lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
