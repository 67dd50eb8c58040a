"""A plan survey: each op and shape's kernel under each plan of tilec's emitters, beside stock.

    python bench/plans.py [--ops rmsnorm,...] [--dtype bf16,fp32] [--shapes 8192x65536,... | --min-row 32768] [--out DIR] [--jobs 12]
    python bench/plans.py --list [--shapes ...]  # anywhere: each row length's plans, as pipelines

For each op, dtype and shape (default: the forward suite's), the kernel Inductor schedules is
captured and run through each plan: an emitter's default pipeline with the plan's options on its
`plan` pass. Rows that fit the Triton plan's one tile (16384 elements): both emitters' heuristic
plans (`gluon`, `triton`) and, for each emitter, rows per program by warps (`gluon-x2-w8`: two rows
a program over 8 warps), and the Triton loop over chunks shorter than the row
(`triton-x1-r2048-w16`). Longer rows: the Triton pipeline's heuristic plan (`triton`: 16 warps,
chunks of 8192) and one row a program by chunk and warps (`triton-c8192-w32`), and the Gluon loop by
chunk and warps (`gluon-c8192-w16`: the row cached in shared memory where it fits), also with only
the first K bytes of the row cached and the rest read again (`gluon-c16384-w8-k65536`: the plan's
`row_cache`), and the Triton loop reading the row again from its last chunk back, the rows written
evict-first, or both (`triton-c16384-w16-rev`, `-st`, `-rev-st`: the plan's `reverse` and `stream`).
Every plan is emitted, compiled (`--jobs` at a time), launched, checked against an fp32 reference
and timed (`tilec.runtime.timing.device_ms`: cold L2, the host kept out), as % of a same-size
device-to-device copy timed the same way; stock `torch.compile` (record `compile`) is timed the same
way beside them. bf16 at every suite shape, fp32 at the suite's two (`--dtype`). `--ops
add_rmsnorm,add_layernorm` surveys the residual-fused norms (two row inputs; each of their two
outputs is checked).

Writes plans.jsonl to DIR: a first line `{"meta": {...}}` (GPU, versions, date; the shapes with
`--shapes`, `min_row` with `--min-row`), then a record per op, dtype, shape and plan (`emitter`,
`plan`, `ms`, `pct`, or `error`). `python bench/rules.py --plans DIR/plans.jsonl` derives that GPU's
chooser rules from it. The H100's long-row rules were read from such a survey of the Triton plans
alone (bench/results/2026-11-25-long-rows, whose records name their plans `def` and `cC-wW`).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from variants import arguments

from bench import (
    FUNCTIONS,
    OTHER_DTYPE_SHAPES,
    SOFTMAX_EXTRA,
    SUITE,
    check,
    environment,
    make_inputs,
    model_bytes,
    parse_shapes,
    reference,
    warm_up,
)
from tilec.inductor.autotune import LONG_ROW, SLICE_BYTES
from tilec.passes.pipelines import with_plan

OPS = ("rmsnorm", "layernorm", "softmax")
# also surveyed with --ops: the residual-fused norms (two row inputs, two outputs)
RESIDUAL_OPS = ("add_rmsnorm", "add_layernorm")
# rows per program x row length, at most: a block this large stays in registers and shared memory
BLOCK = 32768
# a looped plan's block (rows per program x chunk), at most
LOOP_BLOCK = 8192
PIPELINES = {"gluon": "gluon-default", "triton": "triton-default"}


def plans(n: int, op: str | None = None) -> dict[str, tuple[str, str]]:
    """The plans surveyed for rows of `n` elements of `op` (None: every op's): name -> (emitter,
    plan options). 32 warps only for rows of 8192 and more (a block of fewer than four elements a
    thread wastes the rest)."""
    if n > LONG_ROW:  # longer than the Triton plan's one tile: a loop over chunks
        found = {"triton": ("triton", "")}
        for w in (32, 16):
            for c in (4096, 8192, 16384, 32768):
                found[f"triton-c{c}-w{w}"] = ("triton", f"xblock=1,chunk={c},num_warps={w}")
        # the second read from the row's last chunk back (`reverse`), the rows written evict-first
        # (`stream`), both (`reread`): more of the row still in L2 when read again. Chunks of 8192
        # and more: in a probe on both GPUs the best plans at these lengths
        for w in (32, 16):
            for c in (8192, 16384, 32768):
                for suffix, options in (
                    ("rev", "reverse=true"),
                    ("st", "stream=true"),
                    ("rev-st", "reverse=true,stream=true"),
                ):
                    if c < n:  # a row of one chunk is not read twice
                        found[f"triton-c{c}-w{w}-{suffix}"] = ("triton", f"xblock=1,chunk={c},num_warps={w},{options}")
        # the Gluon loop, one row a program, the row cached in shared memory where it fits (read
        # from HBM once): chunks of 8192 and 16384 over 8 and 16 warps. On the H100 smaller
        # chunks, 32 warps and a persistent grid were slower at every op at rows of 32768 and
        # 65536 (bench/results/2026-11-27-h100-gluon-long-rows)
        for w in (16, 8):
            for c in (8192, 16384):
                found[f"gluon-c{c}-w{w}"] = ("gluon", f"xblock=1,chunk={c},num_warps={w}")
        # a misaligned row (50257) is cached by cp.async in align-rows' aligned chunks, a chunk
        # at a time: also chunks of 2048 and 4096, at least 8 elements a thread (whole 16-byte
        # copies). A probe of the form on the H100 (softmax 32768x50257, its statistics per lane)
        # reached 97.4% of a copy in chunks of 4096 over 8 or 16 warps, 88.6 in chunks of 2048
        # over 8, 75.3 in chunks of 8192 over 16
        if n % 8:
            for c, w in ((2048, 8), (4096, 8), (4096, 16)):
                found[f"gluon-c{c}-w{w}"] = ("gluon", f"xblock=1,chunk={c},num_warps={w}")
            # over 16 warps the compiler takes 80 registers a thread, one CTA an SM where the
            # cache's 104 KiB allow two: capped at 64 (no spills), two. The probe's kernel (64
            # registers) reached 97.4 on the H100 and 78.9 on the H200 there; uncapped, 65.8 and
            # 52.3; capped, 70.7 on the H200 (bench/results/2026-11-27-h200-cp-async-regs)
            found["gluon-c4096-w16-reg64"] = ("gluon", "xblock=1,chunk=4096,num_warps=16,maxnreg=64")
        # and a part of the row cached (`row_cache`, bytes; split-rows), the rest read again: for
        # aligned rows past 64 KiB of bf16, whose whole cache leaves one program an SM or no room
        if n % 8 == 0:
            for w in (16, 8):
                for k in (65536, 131072):
                    if 2 * n > k:
                        found[f"gluon-c16384-w{w}-k{k}"] = (
                            "gluon",
                            f"xblock=1,chunk=16384,num_warps={w},row_cache={k}",
                        )
        # each row split across a thread-block cluster, each CTA's slice in its shared memory
        # (`cluster`: cluster-rows), from rows of 65536: clusters of 4 and 8 CTAs over 4 to 16
        # warps (at least 8 elements a thread a chunk), the slice in 2 to 8 chunks of at most 64
        # KiB in all (several CTAs an SM). A probe of the form (bench/cluster.py,
        # bench/results/2026-11-27-h100-cluster) beat the one-CTA loop from rows of 131072 on both GPUs
        # From rows of 131072, where they win: also clusters of 16 CTAs, and each cluster size with
        # the exchange that pushes each CTA's partials into its peers' shared memory (`-push`:
        # exchange=push). In a probe on the H100 (bench/results/2026-11-27-h100-exchange) the CTAs'
        # wait at the exchange cost 5-20 points of a copy, and which exchange waited less depended
        # on the op, the cluster and the warps. Below rows of 131072 (the H200's rows of 65536,
        # where the Triton loop's second read misses L2: softmax 78.3% of a copy) also clusters of
        # 2, and both exchanges at every length
        if n >= 65536:
            for ctas in (4, 8, 16) if n >= 131072 else (2, 4, 8):
                for w in (4, 8, 16):
                    for c in (2048, 4096, 8192):
                        k = n // (ctas * c)
                        fits = n // ctas * 2 <= 65536 and c >= 8 * 32 * w
                        if n % (ctas * c) == 0 and 2 <= k <= 8 and fits:
                            options = f"xblock=1,chunk={c},num_warps={w},cluster={ctas}"
                            if ctas < 16:
                                found[f"gluon-cl{ctas}-c{c}-w{w}"] = ("gluon", options)
                            found[f"gluon-cl{ctas}-c{c}-w{w}-push"] = ("gluon", options + ",exchange=push")
        # and from rows of 131072, the fewest CTAs whose slices fit 128 KiB (one CTA an SM):
        # clusters of 2 at 131072, of 4 at 262144. The norms ran 6-8 points of a copy slower in
        # clusters of 8 than of 4 wherever both were surveyed (4096x131072, 8192x65536), and
        # clusters of 4 with 64 KiB slices do not cover a row of 262144. With one CTA an SM, also
        # each chunk's other inputs (a norm's weight) read a chunk ahead (`-pf1`: prefetch=1,
        # early-loads): RMSNorm 2048x262144 95.7% of a copy against 94.1 in a probe on the H100
        # (bench/results/2026-11-27-h100-early-loads)
        if n >= 131072:
            ctas = n * 2 // SLICE_BYTES
            cache = n * 2 * 3 // 4  # three quarters of the row's bytes (below)
            for w in (8, 16):
                for c in (8192, 16384):
                    if ctas <= 4 and n % (ctas * c) == 0 and 2 <= n // (ctas * c) <= 8:
                        options = f"xblock=1,chunk={c},num_warps={w},cluster={ctas}"
                        found[f"gluon-cl{ctas}-c{c}-w{w}"] = ("gluon", options)
                        found[f"gluon-cl{ctas}-c{c}-w{w}-push"] = ("gluon", options + ",exchange=push")
                        found[f"gluon-cl{ctas}-c{c}-w{w}-push-pf1"] = ("gluon", options + ",exchange=push,prefetch=1")
                        # and three quarters of the slice cached (`row_cache`, bytes of the row),
                        # the last quarter read again from L2: 96 KiB a CTA, two CTAs an SM (16
                        # warps capped at 64 registers a thread so the registers allow two)
                        cap = "-reg64" if w == 16 else ""
                        cached = f"{options},row_cache={cache},exchange=push" + (",maxnreg=64" if cap else "")
                        found[f"gluon-cl{ctas}-c{c}-w{w}-k{cache}-push{cap}"] = ("gluon", cached)
                        found[f"gluon-cl{ctas}-c{c}-w{w}-k{cache}-push{cap}-pf1"] = ("gluon", cached + ",prefetch=1")
        # and at rows of 32768 softmax's and LayerNorm's statistics per lane through loops that read
        # the row's chunks again (`lanes_reread`, below), the rereads from L1 and L2: softmax
        # 4096x32768 98.2% of a copy on the H200, the Gluon loop with the row cached 93.6
        # (bench/results/2026-11-28-h200-lanes-32768). Longer rows read again miss L2: at most 83.1
        # at 8192x65536 (softmax's clusters of 2 96.9), 60 at 4096x131072 (-h200-lanes-long)
        if n == 32768 and op in (None, "softmax", "layernorm"):
            found.update(lanes_plans(n, "chunk"))
        # softmax's first loop keeping its statistics per group of 8 of a thread's elements
        # (`groups`: softmax-groups), fewer instructions an element: the cross-entropy's
        # log-sum-exp over the same rows ran 1.15-1.19x the Gluon loop's speed on the H200
        # (bench/results/2026-11-29-h200-cross-entropy-groups); also with the second read from the
        # row's last chunk back and the rows written evict-first
        if op in (None, "softmax"):
            for c, w in ((4096, 8), (8192, 8), (8192, 16)):
                found[f"triton-c{c}-w{w}-g8"] = ("triton", f"xblock=1,chunk={c},num_warps={w},groups=8")
            found["triton-c8192-w16-rev-st-g8"] = (
                "triton",
                "xblock=1,chunk=8192,num_warps=16,reverse=true,stream=true,groups=8",
            )
        return found
    found = {e: (e, "") for e in PIPELINES}
    for e in PIPELINES:
        for x in (1, 2, 4, 8):
            for w in (4, 8, 16, 32):
                if x * n <= BLOCK and x * n >= 4 * 32 * w and (w < 32 or n >= 8192):
                    found[f"{e}-x{x}-w{w}"] = (e, f"xblock={x},num_warps={w}")
    # rows of 8192 and 16384 split across clusters of 2 and 4 CTAs, the exchange pushed: a row's
    # work in smaller pieces, twice or four times the programs, for GPUs where few rows leave SMs
    # idle. On the H200 (bench/results/2026-11-28-h200-mid-clusters) LayerNorm lost 17-23 points of
    # a copy that way and softmax tied its one-tile plans
    if n in (8192, 16384):
        for ctas in (2, 4):
            for w in (4, 8):
                for c in (2048, 4096, 8192):
                    k = n // (ctas * c)
                    if n % (ctas * c) == 0 and 1 <= k <= 4 and c >= 8 * 32 * w:
                        options = f"xblock=1,chunk={c},num_warps={w},cluster={ctas},exchange=push"
                        found[f"gluon-cl{ctas}-c{c}-w{w}-push"] = ("gluon", options)
    # softmax's and LayerNorm's statistics kept per lane through the Triton loop over chunks, each
    # chunk read again from global memory (`lanes_reread`: softmax-lanes, welford-lanes): a loop of
    # each lane's maximum (sum), one of its sum of exp (squared deviations), then the output's, with
    # no reduction across warps inside a loop, the rereads from L1 while the rows in flight fit
    # there. A probe of the forms on the H200 (`bench/lanes_probe.py`,
    # bench/results/2026-11-28-h200-lanes/probe.log), % of a copy at 4096x16384: softmax 97.9 in
    # chunks of 2048 over 16 warps (the one-tile plan 95.7), LayerNorm 96.4 in chunks of 8192 over
    # 16 (stock 93.5)
    # (rows of 4096 too: softmax 8192x4096 98.8 in chunks of 1024 over 4 warps, the best one-tile
    # plan 97.6; bench/results/2026-11-28-h200-lanes-4096)
    if n in (4096, 8192, 16384) and op in (None, "softmax", "layernorm"):
        found.update(lanes_plans(n, "rblock"))
    # the Triton loop over chunks of a row that would fit one tile, as Inductor's max-autotune
    # often picks (its coordinate descent: R0_BLOCK below the row, 16 warps): the row's second
    # read comes from L2
    for r in (512, 1024, 2048, 4096):
        for x in (1, 2, 4, 8):
            for w in (4, 8, 16):
                if r < n and x * r <= LOOP_BLOCK and 8 <= x * r // (32 * w) <= 32:  # elements a thread
                    found[f"triton-x{x}-r{r}-w{w}"] = ("triton", f"xblock={x},rblock={r},num_warps={w}")
    return found


def lanes_plans(n: int, step: str) -> dict[str, tuple[str, str]]:
    """One row a program in Triton loops over chunks of `step` (the plan's `rblock` for rows that
    fit one tile, `chunk` for longer ones) with `lanes_reread`: 4 to 16 elements of a chunk a
    thread."""
    found = {}
    for r in (1024, 2048, 4096, 8192):
        for w in (4, 8, 16, 32):
            if r < n and 4 <= r // (32 * w) <= 16 and (w < 32 or n > 16384):
                name = f"triton-x1-r{r}-w{w}-lanes" if step == "rblock" else f"triton-c{r}-w{w}-lanes"
                found[name] = ("triton", f"xblock=1,{step}={r},num_warps={w},lanes_reread=true")
    return found


def pipeline(emitter: str, plan: str) -> str:
    return with_plan(PIPELINES[emitter], plan) if plan else PIPELINES[emitter]


def suite_shapes(op: str, dtype: str, min_row: int = 0) -> list[tuple[int, int]]:
    """The forward suite's shapes for `op` in `dtype` (bf16: all; fp32: two), by row length; with
    `min_row`, those with rows of at least that many elements, and a misaligned row for every op."""
    shapes = SUITE + (SOFTMAX_EXTRA if op == "softmax" else []) if dtype == "bf16" else OTHER_DTYPE_SHAPES
    if min_row and dtype == "bf16":
        # and softmax's misaligned row (50257) for every op: rules placed before the whole
        # survey's (bench/rules.py) would otherwise stretch over a row size measured before
        shapes = shapes + [s for s in SOFTMAX_EXTRA if s[1] % 8 and s not in shapes]
    return sorted((s for s in shapes if s[1] >= min_row), key=lambda s: (s[1], s[0]))


def run(
    ops: list[str], dtypes: list[str], shapes: list[tuple[int, int]] | None, out: Path, jobs: int, min_row: int = 0
) -> None:
    import torch

    import tilec
    from tilec.emit.gluon import emit_gluon
    from tilec.emit.triton import emit_triton
    from tilec.frontend.capture import capture
    from tilec.frontend.dtypes import DTYPE_ALIASES
    from tilec.frontend.result import Lowered
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.runtime import load_source
    from tilec.runtime.timing import device_ms

    out.mkdir(parents=True, exist_ok=True)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    warm_up()
    started = time.perf_counter()
    with (out / "plans.jsonl").open("w") as jl:

        def write(rec: dict[str, Any]) -> None:
            print(json.dumps(rec), flush=True)
            jl.write(json.dumps(rec) + "\n")
            jl.flush()

        # a survey of chosen shapes or of the long rows says so: bench/rules.py then starts its
        # rules at its shortest row
        chosen = {"shapes": [f"{m}x{n}" for m, n in shapes]} if shapes else {}
        write({"meta": environment() | chosen | ({"min_row": min_row} if min_row else {})})
        for op, dtype in itertools.product(ops, dtypes):
            torch_dtype = DTYPE_ALIASES[dtype]
            for m, n in shapes or suite_shapes(op, dtype, min_row):
                torch.manual_seed(0)
                inputs = make_inputs(op, m, n, torch_dtype)
                expected = reference(op, inputs)
                refs = [t.to(torch_dtype) for t in (expected if isinstance(expected, tuple) else (expected,))]
                (captured,) = capture(FUNCTIONS[op], inputs, strict=True)
                lowered = captured.result
                assert isinstance(lowered, Lowered)
                text = print_kernel(lowered.kernel)
                written = [a.param for a in lowered.args if a.is_written]
                src = torch.empty(m, n, device="cuda", dtype=torch_dtype)
                dst = torch.empty_like(src)
                size = src.element_size()
                copy_gbps = 2 * size * m * n / device_ms(lambda s=src, d=dst: d.copy_(s), reps=20) / 1e6
                del src, dst
                nbytes = model_bytes(op, m, n, size)

                def pct(ms: float, nbytes: int = nbytes, copy_gbps: float = copy_gbps) -> float:
                    return 100 * nbytes / ms / 1e6 / copy_gbps

                built: dict[str, Any] = {}  # name -> (kernel, module) or the exception
                for name, (emitter, plan) in plans(n, op).items():
                    try:
                        module = parse(text)
                        run_pipeline(module, pipeline(emitter, plan))
                        kernel = module.kernels[0]
                        emit = emit_triton if emitter == "triton" else emit_gluon
                        built[name] = (kernel, load_source(emit(kernel).source))
                    except Exception as e:
                        built[name] = e

                compile_all(built, lowered, inputs, jobs)
                torch.cuda.synchronize()
                for name, (emitter, plan) in plans(n, op).items():
                    rec: dict[str, Any] = {
                        "op": op,
                        "m": m,
                        "n": n,
                        "dtype": dtype,
                        "emitter": emitter,
                        "variant": name,
                        "plan": plan,
                    }
                    try:
                        if isinstance(built[name], Exception):
                            raise built[name]
                        kernel, launched = built[name]
                        args, outs = arguments(lowered, inputs)
                        launched.launch(*args)
                        torch.cuda.synchronize()
                        check_written(outs, written, refs, torch_dtype, name)
                        ms = device_ms(lambda lm=launched, a=args: lm.launch(*a), reps=20)
                        rec.update(ms=ms, pct=pct(ms), cx=dict(kernel.constexprs), warps=kernel.launch.num_warps)
                    except Exception as e:  # a plan that fails is a result too
                        rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                    write(rec)
                rec = {"op": op, "m": m, "n": n, "dtype": dtype, "variant": "compile"}
                try:
                    with tilec.config.patch(enabled=False):
                        torch.compiler.reset()
                        f = torch.compile(FUNCTIONS[op], dynamic=False)
                        check(op, f(*inputs), tuple(refs) if len(refs) > 1 else refs[0], torch_dtype)
                    ms = device_ms(lambda f=f, i=inputs: f(*i), reps=20)
                    rec.update(ms=ms, pct=pct(ms))
                except Exception as e:
                    rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                write(rec)
                del inputs, built
                print(f"# {op} {m}x{n} {dtype} done at {time.perf_counter() - started:.0f} s", flush=True)


def check_written(outs: dict[str, Any], written: list[str], refs: list[Any], dtype: Any, name: str) -> None:
    """Each output the kernel writes equals one of the op's outputs (a residual-fused norm writes
    two: the residual stream and the norm), and each of those is written."""
    from tilec.testing import assert_close

    assert len(written) == len(refs), f"{name}: {len(written)} outputs written, the op has {len(refs)}"
    unmatched = list(range(len(refs)))
    for param in written:
        out = outs[param]
        for i in unmatched:
            try:
                assert_close(out.reshape(refs[i].shape), refs[i], dtype, what=name)
            except AssertionError:
                continue
            unmatched.remove(i)
            break
        else:
            raise AssertionError(f"{name}: output {param} equals none of the op's outputs")


def compile_all(built: dict[str, Any], lowered: Any, inputs: list[Any], jobs: int) -> None:
    """Launches each built plan once, `jobs` at a time: a first launch compiles, and compiles in
    threads overlap. A failure is dropped: the timing loop launches again and records it."""
    import torch

    def first(name: str) -> None:
        if not isinstance(built[name], Exception):
            args, _ = arguments(lowered, inputs)
            with contextlib.suppress(Exception):
                built[name][1].launch(*args)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(first, list(built)))
    torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/plans.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--dtype", default="bf16,fp32", help="comma-separated, of bf16, fp16, fp32 (fp32: two shapes)")
    p.add_argument("--shapes", type=parse_shapes, help="MxN,... (default: the suite's, one per row length)")
    p.add_argument(
        "--min-row",
        type=int,
        default=0,
        help="the suite's shapes with rows of at least this many elements, and a misaligned row (50257) for "
        "every op: a survey of the long rows alone",
    )
    p.add_argument("--out", default="bench-out")
    p.add_argument("--jobs", type=int, default=12, help="plans compiled at a time")
    p.add_argument("--list", action="store_true", help="print each shape's plans as pipelines and exit (no GPU)")
    args = p.parse_args(argv)
    ops = args.ops.split(",")
    if args.list:
        dtypes = args.dtype.split(",")
        for op in ops:
            for n in sorted({n for d in dtypes for _, n in args.shapes or suite_shapes(op, d, args.min_row)}):
                for name, (emitter, plan) in plans(n, op).items():
                    print(f"{op} N={n} {name}: {pipeline(emitter, plan)}")
        return 0
    run(ops, args.dtype.split(","), args.shapes, Path(args.out), args.jobs, args.min_row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
