"""`tilec bench --host`: host time per kernel launch, tilec against stock Inductor, in one run.

    tilec bench --host [--out DIR] [--kernels 16] [--calls 200]

A compiled function of K independent small RMSNorms (K inputs of 64 rows, each of another length
from 1024 up, so that Inductor cannot fuse them: K kernels, each a few microseconds on the GPU)
is called again and again without waiting for the GPU: the GPU
never catches up, so the wall time is the host's — the wrapper's Python and each kernel's
launcher. Per implementation, the median over repeats of (wall time per call) / K is the host
time per launch:

- stock: Inductor's own kernels and launcher (tilec installed but disabled);
- tilec-triton, tilec-gluon: every kernel taken by tilec, with that emitter (the chooser off).

The targets (the open launch-parity work): tilec Triton within 1 µs of stock per launch, tilec
Gluon (TMA descriptors) within 2 µs. With `--profile`, the tilec launches are also run under
cProfile and the functions that cost the most host time per launch are listed.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

IMPLS = ("stock", "tilec-triton", "tilec-gluon")
SHAPE = (64, 1024)


def _model(k: int) -> Callable[..., Any]:
    import torch

    def rmsnorm(x: Any, w: Any) -> Any:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w

    def many(ws: list[Any], xs: list[Any]) -> list[Any]:
        return [rmsnorm(x, w) for x, w in zip(xs, ws)]

    return many


def _settings(impl: str) -> Any:
    import tilec

    if impl == "stock":
        return tilec.config.patch(enabled=False)
    emitter = impl.removeprefix("tilec-")
    return tilec.config.patch(enabled=True, emitter=emitter, decline=False, autotune=False, strict=True)


def measure(impl: str, k: int, calls: int, repeats: int, profile: bool) -> dict[str, Any]:
    import torch

    import tilec

    torch._dynamo.reset()
    tilec.reset_report()
    sizes = [SHAPE[1] + 64 * i for i in range(k)]  # another row length each: no fusion
    xs = [torch.randn(SHAPE[0], n, device="cuda", dtype=torch.bfloat16) for n in sizes]
    ws = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for n in sizes]
    with _settings(impl), torch._inductor.config.patch(fx_graph_cache=False):
        fn = torch.compile(_model(k), dynamic=False)
        fn(ws, xs)
        torch.cuda.synchronize()
        records = tilec.report()
        taken = sum(r.taken for r in records)
        per_call = []
        for _ in range(repeats):
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(calls):
                fn(ws, xs)
            per_call.append((time.perf_counter() - start) / calls * 1e6)
            torch.cuda.synchronize()
        top = ""
        if profile and impl != "stock":
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(calls):
                fn(ws, xs)
            prof.disable()
            torch.cuda.synchronize()
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(15)
            top = buf.getvalue()
    us = statistics.median(per_call)
    return {
        "impl": impl,
        "kernels": len(records),
        "taken": taken,
        "us_per_call": us,
        "us_per_launch": us / max(1, len(records)),
        "spread_us_per_launch": (max(per_call) - min(per_call)) / max(1, len(records)),
        "profile": top,
    }


def main(out: Path, k: int = 16, calls: int = 200, repeats: int = 15, profile: bool = False) -> int:
    import torch

    import tilec

    tilec.install()
    out.mkdir(parents=True, exist_ok=True)
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    import triton

    env["triton"] = triton.__version__
    rows = []
    for impl in IMPLS:
        if impl == "tilec-gluon" and torch.cuda.get_device_capability()[0] < 9:
            continue
        r = measure(impl, k, calls, repeats, profile)
        rows.append(r)
        print(
            f"{impl:14s} {r['us_per_launch']:6.2f} us per launch (spread {r['spread_us_per_launch']:.2f}), "
            f"{r['taken']} of {r['kernels']} kernels taken by tilec",
            flush=True,
        )
        if r["profile"]:
            print(r["profile"], flush=True)
    stock = next((r["us_per_launch"] for r in rows if r["impl"] == "stock"), None)
    lines = [
        "# tilec bench --host",
        "",
        f"{env['gpu']}, torch {env['torch']}, triton {env['triton']}; {k} RMSNorm kernels of "
        f"{SHAPE[0]} rows of {SHAPE[1]} to {SHAPE[1] + 64 * (k - 1)} bf16 elements per call, {calls} calls "
        f"per repeat, median of {repeats} repeats. The difference to stock is tilec's cost per launch.",
        "",
        "| implementation | host µs per launch | spread | over stock | kernels taken by tilec |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        over = "" if stock is None or r["impl"] == "stock" else f"{r['us_per_launch'] - stock:+.2f}"
        lines.append(
            f"| {r['impl']} | {r['us_per_launch']:.2f} | {r['spread_us_per_launch']:.2f} | {over} | "
            f"{r['taken']} of {r['kernels']} |"
        )
    (out / "host.md").write_text("\n".join(lines) + "\n")
    with (out / "host.jsonl").open("w") as f:
        for r in rows:
            f.write(json.dumps({**{k2: v for k2, v in r.items() if k2 != "profile"}, "meta": env}) + "\n")
    print("\n".join(lines))
    return 0
