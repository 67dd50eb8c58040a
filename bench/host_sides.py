"""Host time per call of identical compiled models, side by side in one process.

    python bench/host_sides.py FAMILY ORDER OUT     # e.g. gpt2 stock,tilecoff,tilec /tmp/wrappers

One of `tilec bench --models`' models (bench/models.py) at the small size, inference, compiled
once per side in ORDER — `stock` (torch.compile), `tilec` (backend="tilec") and `tilecoff`
(backend="tilec" with tilec.config.enabled off: tilec's backend, stock's kernels) — each through
its own entry function. The sides' calls alternate in ABBA order, 30 rounds of 20 calls each;
per side the median host time per call (20 calls without waiting for the GPU) and wall time
(until the GPU is done). The wrapper modules Inductor loaded are copied to OUT, to compare the
code each side runs per call.
"""

from __future__ import annotations

import copy
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import SIZES, build, entry

import tilec


def main(family: str, order: list[str], out: str) -> None:
    from torch._inductor.codecache import PyCodeCache

    torch.set_grad_enabled(False)
    base = build(family, "small", 0.0).eval()
    ids = torch.randint(0, base.config.vocab_size, SIZES["small"]).cuda()
    tilec.uninstall()
    sides = {}
    for side in order:
        model = copy.deepcopy(base).cuda().to(torch.bfloat16)
        fn = torch.compile(entry(side), backend="tilec" if side.startswith("tilec") else "inductor", dynamic=False)
        with tilec.config.patch(enabled=side != "tilecoff"):
            fn(model, ids, None)
        for _ in range(3):
            fn(model, ids, None)
        torch.cuda.synchronize()
        sides[side] = (fn, model)
    host: dict[str, list[float]] = {s: [] for s in sides}
    wall: dict[str, list[float]] = {s: [] for s in sides}
    for r in range(30):
        for side in order if r % 2 == 0 else order[::-1]:
            fn, model = sides[side]
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(20):
                fn(model, ids, None)
            host[side].append((time.perf_counter() - start) / 20 * 1e6)
            torch.cuda.synchronize()
            wall[side].append((time.perf_counter() - start) / 20 * 1e6)
    for side in order:
        h, w = sorted(host[side]), sorted(wall[side])
        print(
            f"{family} {','.join(order)} {side}: host {h[len(h) // 2]:.1f} us/call, wall {w[len(w) // 2]:.1f} us/call"
        )
    os.makedirs(out, exist_ok=True)
    for mod in list(PyCodeCache.modules):
        path = getattr(mod, "__file__", None)
        if path:
            with open(path) as src, open(os.path.join(out, os.path.basename(path)), "w") as dst:
                dst.write(src.read())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(","), sys.argv[3])
