"""`tilec bench --host`: host time per kernel launch, tilec against stock Inductor, in one run.

    tilec bench --host [--out DIR] [--kernels 16] [--calls 200]

A compiled function of K independent small RMSNorms (K inputs of 64 rows, each of another length
from 1024 up, so that Inductor cannot fuse them: K kernels, each a few microseconds on the GPU)
is called again and again without waiting for the GPU, which keeps up with the kernels, so the
wall time is the host's — the wrapper's Python and each kernel's launcher. The implementations
are compiled first, each from a function of its own (a code object each: Dynamo's cache lookup
never passes over another's entry), then timed in turn, `calls` calls a round, the order
reversed every other round: the host's drift over a run (on the H200 machine stock alone read
13.3 and 20.2 us a launch in two runs minutes apart, each implementation timed in one stretch)
falls on every implementation alike. Per implementation, the median over the rounds of (wall
time per call) / K is the host time per launch:

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


def _model(impl: str) -> Callable[..., Any]:
    """The function `impl` compiles: K RMSNorms, in a code object of its own."""
    import torch

    def rmsnorm(x: Any, w: Any) -> Any:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w

    name = "many_" + impl.replace("-", "_")
    namespace: dict[str, Any] = {"rmsnorm": rmsnorm}
    exec(f"def {name}(ws, xs):\n    return [rmsnorm(x, w) for x, w in zip(xs, ws)]\n", namespace)
    return namespace[name]  # type: ignore[no-any-return]


def _settings(impl: str) -> Any:
    import tilec

    if impl == "stock":
        return tilec.config.patch(enabled=False)
    emitter = impl.removeprefix("tilec-")
    return tilec.config.patch(enabled=True, emitter=emitter, decline=False, autotune=False, strict=True)


def _sync(device: str) -> None:
    import torch

    if device != "cpu":
        torch.cuda.synchronize()


def compile_impl(impl: str, ws: list[Any], xs: list[Any], device: str) -> tuple[Callable[..., Any], int, int]:
    """`impl`'s compiled function, called once (it compiles), with the kernels of its graph and
    how many of them tilec took."""
    import torch

    import tilec

    tilec.reset_report()
    with _settings(impl), torch._inductor.config.patch(fx_graph_cache=False):
        fn = torch.compile(_model(impl), dynamic=False)
        fn(ws, xs)
    _sync(device)
    records = tilec.report()
    return fn, len(records), sum(r.taken for r in records)


def measure(
    impls: tuple[str, ...], k: int, calls: int, repeats: int, profile: bool, device: str = "cuda"
) -> list[dict[str, Any]]:
    """Each implementation compiled, then timed in turn over `repeats` rounds of `calls` calls."""
    import torch

    torch._dynamo.reset()
    sizes = [SHAPE[1] + 64 * i for i in range(k)]  # another row length each: no fusion
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    xs = [torch.randn(SHAPE[0], n, device=device, dtype=dtype) for n in sizes]
    ws = [torch.randn(n, device=device, dtype=dtype) for n in sizes]
    compiled = {impl: compile_impl(impl, ws, xs, device) for impl in impls}
    per_call: dict[str, list[float]] = {impl: [] for impl in impls}
    for r in range(repeats):
        for impl in impls if r % 2 == 0 else impls[::-1]:
            fn = compiled[impl][0]
            _sync(device)
            start = time.perf_counter()
            for _ in range(calls):
                fn(ws, xs)
            per_call[impl].append((time.perf_counter() - start) / calls * 1e6)
            _sync(device)
    rows = []
    for impl in impls:
        fn, kernels, taken = compiled[impl]
        top = ""
        if profile and impl != "stock":
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(calls):
                fn(ws, xs)
            prof.disable()
            _sync(device)
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(15)
            top = buf.getvalue()
        times = per_call[impl]
        us = statistics.median(times)
        rows.append(
            {
                "impl": impl,
                "kernels": kernels,
                "taken": taken,
                "us_per_call": us,
                "us_per_launch": us / max(1, kernels),
                "spread_us_per_launch": (max(times) - min(times)) / max(1, kernels),
                "rounds_us_per_call": times,
                "profile": top,
            }
        )
    return rows


def main(
    out: Path, k: int = 16, calls: int = 200, repeats: int = 15, profile: bool = False, device: str = "cuda"
) -> int:
    """`device="cpu"` (Triton's interpreter active: tilec's CPU hook; no Gluon) runs the same
    steps without a GPU, for the tests: its times say nothing of a GPU's host."""
    import torch
    import triton

    import tilec

    out.mkdir(parents=True, exist_ok=True)
    gpu = device != "cpu"
    env = {"gpu": torch.cuda.get_device_name() if gpu else "CPU", "torch": torch.__version__}
    env["triton"] = triton.__version__
    hopper = gpu and torch.cuda.get_device_capability()[0] >= 9
    impls = tuple(i for i in IMPLS if i != "tilec-gluon" or hopper)
    with tilec.installed(cpu=not gpu):
        rows = measure(impls, k, calls, repeats, profile, device)
    torch._dynamo.reset()
    for r in rows:
        print(
            f"{r['impl']:14s} {r['us_per_launch']:6.2f} us per launch (spread {r['spread_us_per_launch']:.2f}), "
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
        f"{SHAPE[0]} rows of {SHAPE[1]} to {SHAPE[1] + 64 * (k - 1)} {'bf16' if gpu else 'fp32'} elements per "
        f"call, {calls} calls per round, the implementations timed in turn (the order reversed every other "
        f"round), median of {repeats} rounds. The difference to stock is tilec's cost per launch.",
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
