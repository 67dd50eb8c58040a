"""Host time per call of a graph whose one kernel tilec declines, against stock torch.compile's,
in one process: RMSNorm at 32768x512 bf16 (the H200's rules keep stock's kernel there), each side
compiled from a function of its own (backend="tilec" against the default), fx-graph cache off.

Per side, three rounds of: 200 calls queued while the GPU is held by a spin kernel (the host's
time per call, not the GPU's); then each side's 200 calls under cProfile ($OUT/profile_tilec.txt,
$OUT/profile_stock.txt) and the wrapper modules Inductor loaded ($OUT/code.tar), to compare the
code each side runs per call.

    python bench/host_declined.py          # prints the report's kernels and one JSON line a round
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import tarfile
import time
from collections.abc import Callable
from typing import Any

import torch

import tilec


def rms_tilec(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def rms_stock(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def host_us(f: Callable[..., Any], args: tuple[Any, ...], n: int = 200) -> float:
    """Microseconds of host time per call: `n` calls queued behind a spin kernel."""
    for _ in range(5):
        f(*args)
    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)
    t = time.perf_counter()
    for _ in range(n):
        f(*args)
    dt = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    return dt


def main() -> None:
    out = os.environ.get("OUT", ".")
    x = torch.randn(32768, 512, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(512, device="cuda", dtype=torch.bfloat16)
    torch._inductor.config.fx_graph_cache = False
    sides = {
        "tilec": torch.compile(rms_tilec, backend="tilec", dynamic=False),
        "stock": torch.compile(rms_stock, dynamic=False),
    }
    for f in sides.values():
        f(x, w)
    print([(r.kernel, r.taken, r.reason) for r in tilec.report()])
    for rnd in range(3):
        print(json.dumps({"round": rnd, **{f"{k}_host_us": host_us(f, (x, w)) for k, f in sides.items()}}))
    from torch._inductor.codecache import PyCodeCache

    files = [m.__file__ for m in PyCodeCache.modules if getattr(m, "__file__", None)]
    with tarfile.open(os.path.join(out, "code.tar"), "w") as tf:
        for i, f in enumerate(files):
            tf.add(f, arcname=f"{i}_{os.path.basename(f)}")
    for name, f in sides.items():
        torch.cuda.synchronize()
        torch.cuda._sleep(200_000_000)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(200):
            f(x, w)
        profile.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(profile, stream=s).sort_stats("tottime").print_stats(18)
        with open(os.path.join(out, f"profile_{name}.txt"), "w") as fh:
            fh.write(s.getvalue())


if __name__ == "__main__":
    main()
