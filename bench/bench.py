"""tilec's benchmark suite: memory-bound forward kernels against their peers and a plain copy.

    tilec bench [--ops rmsnorm,layernorm,softmax] [--shapes 8192x4096,...] [--dtype bf16]
                [--impls tilec-gluon,compile,...] [--out DIR]
    python bench/bench.py ...           # the same

On a GPU, in one process, per (op, shape, dtype) and implementation: compile (torch.compile with
`dynamic=False`, caches reset first), run once on fresh random inputs and check every output
against a float32 reference, then time with `triton.testing.do_bench` (median, L2 flushed between
runs). Bandwidth counts model bytes: inputs and weights read once, outputs written once. The
ceiling of each shape is a device-to-device copy of the same MxN, timed the same way.

Writes to --out: results.md (GB/s and % of the copy, one table per dtype), results.jsonl (one
record per measurement) and results.png (% of the copy per shape, a line per implementation).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import platform
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# The suite (bf16); fp16 and fp32 run two shapes each.
SUITE = [
    (32768, 512),
    (65536, 1024),
    (32768, 2048),
    (8192, 4096),
    (32768, 4096),
    (8192, 8192),
    (16384, 8192),
    (4096, 16384),
    (16384, 16384),
    (4096, 32768),
    (8192, 65536),
]
SOFTMAX_EXTRA = [(32768, 50257)]  # neither a power of two nor a multiple of 8
OTHER_DTYPE_SHAPES = [(32768, 2048), (4096, 16384)]
OPS = ("rmsnorm", "layernorm", "softmax")
IMPLS = ("tilec-gluon", "tilec-triton", "eager", "compile", "max-autotune", "liger", "copy")
EPS = 1e-6


# ---------------------------------------------------------------------------------------------
# The ops: eager definitions (what torch.compile sees), inputs, references, model bytes


def rmsnorm(x: Any, w: Any) -> Any:
    import torch

    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


def layernorm(x: Any, w: Any, b: Any) -> Any:
    import torch

    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)


def softmax(x: Any) -> Any:
    import torch

    return torch.softmax(x, dim=-1)


FUNCTIONS: dict[str, Callable[..., Any]] = {"rmsnorm": rmsnorm, "layernorm": layernorm, "softmax": softmax}


def make_inputs(op: str, m: int, n: int, dtype: Any) -> list[Any]:
    import torch

    x = torch.randn(m, n, device="cuda", dtype=dtype)
    if op == "rmsnorm":
        return [x, torch.randn(n, device="cuda", dtype=dtype)]
    if op == "layernorm":
        return [x, torch.randn(n, device="cuda", dtype=dtype), torch.randn(n, device="cuda", dtype=dtype)]
    return [x]


def reference(op: str, inputs: list[Any]) -> Any:
    return FUNCTIONS[op](*[t.float() for t in inputs])


def model_bytes(op: str, m: int, n: int, itemsize: int) -> int:
    weights = {"rmsnorm": 1, "layernorm": 2, "softmax": 0}[op]
    return (2 * m * n + weights * n) * itemsize


# ---------------------------------------------------------------------------------------------
# Implementations: each returns a callable on the inputs, or raises Unavailable


class UnavailableError(Exception):
    """This implementation does not exist here (not installed, or refuses the op)."""


@dataclass
class Built:
    fn: Callable[..., Any]
    compile_s: float = 0.0
    note: str = ""  # e.g. which kernels tilec took


def _compiled(op: str, inputs: list[Any], mode: str | None, tilec_emitter: str | None) -> Built:
    import torch

    import tilec

    torch.compiler.reset()
    tilec.reset_report()
    fn = FUNCTIONS[op]
    settings = (
        tilec.config.patch(enabled=True, emitter=tilec_emitter, strict=False)
        if tilec_emitter
        else tilec.config.patch(enabled=False)
    )
    start = time.perf_counter()
    with settings:
        compiled = torch.compile(fn, dynamic=False, mode=mode)
        compiled(*inputs)  # compiles here, under the settings
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    note = ""
    if tilec_emitter:
        records = tilec.report()
        taken = [r for r in records if r.taken]
        note = f"tilec took {len(taken)} of {len(records)} kernels"
        reasons = sorted({r.reason for r in records if not r.taken and r.reason})
        if reasons:
            note += "; not taken: " + "; ".join(reasons)
    return Built(compiled, elapsed, note)


def _liger(op: str) -> Callable[..., Any]:
    try:
        if op == "rmsnorm":
            from liger_kernel.ops.rms_norm import LigerRMSNormFunction

            # casting_mode "llama": normalize in fp32, cast, then scale by the weight (as rmsnorm above)
            return lambda x, w: LigerRMSNormFunction.apply(x, w, EPS, 0.0, "llama", False)
        if op == "layernorm":
            from liger_kernel.ops.layer_norm import LigerLayerNormFunction

            return lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, EPS)
        from liger_kernel.ops.softmax import LigerSoftmaxFunction

        return lambda x: LigerSoftmaxFunction.apply(x)
    except ImportError as e:
        raise UnavailableError(f"liger-kernel is not importable ({e})") from None


def build(impl: str, op: str, inputs: list[Any]) -> Built:
    if impl == "tilec-gluon":
        return _compiled(op, inputs, None, "gluon")
    if impl == "tilec-triton":
        return _compiled(op, inputs, None, "triton")
    if impl == "compile":
        return _compiled(op, inputs, None, None)
    if impl == "max-autotune":
        return _compiled(op, inputs, "max-autotune-no-cudagraphs", None)
    if impl == "eager":
        return Built(FUNCTIONS[op])
    if impl == "liger":
        return Built(_liger(op))
    raise ValueError(f"unknown implementation {impl!r}")


# ---------------------------------------------------------------------------------------------
# Measuring


@dataclass
class Result:
    op: str
    m: int
    n: int
    dtype: str
    impl: str
    ok: bool
    ms: float | None = None
    gbps: float | None = None
    pct_of_copy: float | None = None
    compile_s: float | None = None
    error: str = ""
    note: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def bench_ms(fn: Callable[[], Any]) -> float:
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))


def copy_ms(m: int, n: int, dtype: Any) -> float:
    import torch

    src = torch.randn(m, n, device="cuda", dtype=dtype)
    dst = torch.empty_like(src)
    return bench_ms(lambda: dst.copy_(src))


def warm_up(seconds: float = 3.0) -> None:
    """Copies for a few seconds before the first measurement: the first case of a run otherwise
    meets a GPU that has not reached its clocks (it measured 30-50% low)."""
    import torch

    src = torch.randn(64 * 2**20, device="cuda")
    dst = torch.empty_like(src)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(20):
            dst.copy_(src)
        torch.cuda.synchronize()


def check(op: str, out: Any, ref: Any, dtype: Any) -> None:
    from tilec.testing import assert_close

    assert_close(out, ref, dtype, what=op)


def run_case(op: str, m: int, n: int, dtype_name: str, impls: list[str], log: Callable[[str], None]) -> list[Result]:
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
    itemsize = torch.tensor([], dtype=dtype).element_size()
    nbytes = model_bytes(op, m, n, itemsize)
    copy_time = copy_ms(m, n, dtype)
    copy_gbps = 2 * m * n * itemsize / copy_time / 1e6
    results = [Result(op, m, n, dtype_name, "copy", True, copy_time, copy_gbps, 100.0)]
    log(f"{op} {m}x{n} {dtype_name}: copy {copy_gbps:.0f} GB/s")
    torch.manual_seed(m * 131 + n)
    inputs = make_inputs(op, m, n, dtype)
    ref = reference(op, inputs)
    for impl in impls:
        if impl == "copy":
            continue
        r = Result(op, m, n, dtype_name, impl, False)
        try:
            built = build(impl, op, inputs)
            r.compile_s, r.note = round(built.compile_s, 2), built.note
            out = built.fn(*inputs)
            torch.cuda.synchronize()
            check(op, out, ref, dtype)
            r.ms = bench_ms(lambda f=built.fn: f(*inputs))
            r.gbps = nbytes / r.ms / 1e6
            r.pct_of_copy = 100.0 * r.gbps / copy_gbps
            r.ok = True
            log(f"  {impl:13s} {r.gbps:7.0f} GB/s {r.pct_of_copy:5.1f}% of copy  {r.note}")
        except UnavailableError as e:
            r.error = str(e)
            log(f"  {impl:13s} unavailable: {e}")
        except Exception as e:  # a failing implementation is a result, not the end of the run
            r.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            log(f"  {impl:13s} FAILED: {r.error}")
            log(traceback.format_exc(limit=4))
        results.append(r)
        built = None
        torch.cuda.empty_cache()
    return results


# ---------------------------------------------------------------------------------------------
# Reports


def environment() -> dict[str, str]:
    import torch
    import triton

    env = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    try:
        import tilec

        env["tilec"] = tilec.__version__
    except ImportError:
        pass
    with contextlib.suppress(Exception):
        import importlib.metadata

        env["liger-kernel"] = importlib.metadata.version("liger-kernel")
    return env


def markdown(results: list[Result], env: dict[str, str], impls: list[str]) -> str:
    lines = [
        "# tilec bench",
        "",
        ", ".join(f"{k} {v}" for k, v in env.items()),
        "",
        "Each cell: model bandwidth in GB/s and, in parentheses, % of a device-to-device copy of the",
        "same MxN in the same run. `-`: not available; `fail`: wrong result or error (see results.jsonl).",
        "",
    ]
    cols = [i for i in impls if i != "copy"]
    keyed: dict[tuple[str, int, int, str], dict[str, Result]] = {}
    for r in results:
        keyed.setdefault((r.op, r.m, r.n, r.dtype), {})[r.impl] = r
    for dtype in sorted({r.dtype for r in results}, key=["bf16", "fp16", "fp32"].index):
        lines += [
            f"## {dtype}",
            "",
            "| op | MxN | copy GB/s | " + " | ".join(cols) + " |",
            "|---" * (3 + len(cols)) + "|",
        ]
        for (op, m, n, dt), row in keyed.items():
            if dt != dtype:
                continue
            cells = []
            for impl in cols:
                r = row.get(impl)
                if r is None or (not r.ok and r.error.startswith("liger-kernel is not")):
                    cells.append("-")
                elif not r.ok:
                    cells.append("fail")
                else:
                    cells.append(f"{r.gbps:.0f} ({r.pct_of_copy:.0f})")
            copy = row.get("copy")
            lines.append(f"| {op} | {m}x{n} | {copy.gbps:.0f} | " + " | ".join(cells) + " |" if copy else "")
        lines.append("")
    geo = geomean_speedups(results)
    if geo:
        lines += ["Geometric mean speedup over torch.compile default, shapes where both ran:", ""]
        lines += [f"- {impl}: {v:.3f}x ({k} shapes)" for impl, (v, k) in geo.items()]
        lines.append("")
    notes = sorted(
        {f"{r.op} {r.m}x{r.n} {r.dtype} {r.impl}: {r.note}" for r in results if r.note and "took 0" in r.note}
    )
    if notes:
        lines += ["tilec declined (stock Inductor ran):", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def geomean_speedups(results: list[Result]) -> dict[str, tuple[float, int]]:
    by: dict[tuple[str, int, int, str], dict[str, float]] = {}
    for r in results:
        if r.ok and r.ms:
            by.setdefault((r.op, r.m, r.n, r.dtype), {})[r.impl] = r.ms
    out: dict[str, tuple[float, int]] = {}
    for impl in IMPLS:
        if impl in ("compile", "copy"):
            continue
        ratios = [row["compile"] / row[impl] for row in by.values() if "compile" in row and impl in row]
        if ratios:
            out[impl] = (math.exp(sum(math.log(x) for x in ratios) / len(ratios)), len(ratios))
    return out


def plot(results: list[Result], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    cases = []
    for r in results:
        key = (r.op, r.m, r.n, r.dtype)
        if key not in cases:
            cases.append(key)
    impls = [i for i in IMPLS if i != "copy" and any(r.impl == i and r.ok for r in results)]
    fig, ax = plt.subplots(figsize=(max(8, len(cases) * 0.45), 5))
    for impl in impls:
        ys = []
        for key in cases:
            match = [r for r in results if (r.op, r.m, r.n, r.dtype) == key and r.impl == impl and r.ok]
            ys.append(match[0].pct_of_copy if match else float("nan"))
        ax.plot(range(len(cases)), ys, marker="o", label=impl)
    ax.axhline(100, color="gray", linewidth=0.8)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([f"{o} {m}x{n} {d}" for o, m, n, d in cases], rotation=75, fontsize=7)
    ax.set_ylabel("% of same-size copy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


# ---------------------------------------------------------------------------------------------
# Command line


def cases(
    ops: list[str], shapes: list[tuple[int, int]] | None, dtypes: list[str]
) -> Iterator[tuple[str, int, int, str]]:
    for dtype in dtypes:
        for op in ops:
            if shapes is not None:
                chosen = shapes
            elif dtype == "bf16":
                chosen = SUITE + (SOFTMAX_EXTRA if op == "softmax" else [])
            else:
                chosen = OTHER_DTYPE_SHAPES
            for m, n in chosen:
                yield op, m, n, dtype


def parse_shapes(text: str) -> list[tuple[int, int]]:
    shapes = []
    for part in text.split(","):
        m, _, n = part.strip().lower().partition("x")
        if not (m.isdigit() and n.isdigit()):
            raise argparse.ArgumentTypeError(f"shapes are MxN, comma-separated (8192x4096); got {part!r}")
        shapes.append((int(m), int(n)))
    return shapes


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tilec bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default=",".join(OPS), help=f"comma-separated, of {', '.join(OPS)}")
    p.add_argument("--shapes", type=parse_shapes, help="MxN,... (default: the suite)")
    p.add_argument(
        "--dtype", default="all", help="bf16, fp16, fp32, or all (the suite: bf16 everywhere, fp16/fp32 on two shapes)"
    )
    p.add_argument("--impls", default=",".join(IMPLS), help=f"comma-separated, of {', '.join(IMPLS)}")
    p.add_argument("--out", default="bench-out", help="directory for results.md, results.jsonl, results.png")
    p.add_argument(
        "--report",
        nargs="+",
        metavar="JSONL",
        help="no GPU work: write results.md and results.png to --out from earlier runs' results.jsonl files",
    )
    return p


def load_results(paths: list[str]) -> list[Result]:
    results = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                results.append(Result(**json.loads(line)))
    return results


def write_report(results: list[Result], out: Path, impls: list[str], note: str = "") -> bool:
    out.mkdir(parents=True, exist_ok=True)
    env = results[0].meta if results and results[0].meta else {}
    (out / "results.md").write_text(markdown(results, env, impls) + note)
    return plot(results, out / "results.png")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    bad = [o for o in ops if o not in OPS] + [i for i in impls if i not in IMPLS]
    if bad:
        print(f"tilec bench: unknown op or implementation: {', '.join(bad)}", file=sys.stderr)
        return 2
    if args.report:
        results = load_results(args.report)
        present = [i for i in IMPLS if any(r.impl == i for r in results)]
        write_report(results, Path(args.out), present)
        print(f"wrote {Path(args.out) / 'results.md'} from {len(results)} results")
        return 0
    dtypes = ["bf16", "fp16", "fp32"] if args.dtype == "all" else [args.dtype]
    if any(d not in ("bf16", "fp16", "fp32") for d in dtypes):
        print(f"tilec bench: --dtype must be bf16, fp16, fp32 or all; got {args.dtype}", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("tilec bench: needs a CUDA GPU", file=sys.stderr)
        return 2
    import tilec

    tilec.install()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = environment()
    log_file = (out / "results.log").open("w")

    def log(line: str) -> None:
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    log(json.dumps(env))
    warm_up()
    results: list[Result] = []
    start = time.perf_counter()
    with (out / "results.jsonl").open("w") as jl:
        for op, m, n, dtype in cases(ops, args.shapes, dtypes):
            for r in run_case(op, m, n, dtype, impls, log):
                r.meta = env
                jl.write(json.dumps(asdict(r)) + "\n")
                jl.flush()
                results.append(r)
    plotted = write_report(results, out, impls, f"\nWall time: {time.perf_counter() - start:.0f} s\n")
    log(
        f"wrote {out / 'results.md'}, {out / 'results.jsonl'}"
        + (f", {out / 'results.png'}" if plotted else " (no matplotlib: no plot)")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
