"""Where a model step's host time goes, tilec against stock, in one process: the models of
`bench/models.py` (size `small` by default: 1 x 128 tokens, whose steps' host time is ten times
their device time), each side compiled from a code object of its own as the models bench compiles
it, and a second stock side (`control`) compiled first, before tilec's: what the order of
compiling alone does.

Per family and mode (`infer`, `train`; no CUDA graphs), after three warm-up steps a side:

- host time per step: `steps` steps queued without waiting for the GPU, which keeps up with them
  at this size (queueing them behind a spin kernel instead fills the launch queue, and the host
  then waits for the GPU), three rounds in turn, the order reversed each round;
- tilec's kernels in the side's wrapper modules: each `TilecKernel`'s launches by role and whether
  its launch is bound (`_bound`: the compiled kernel's C launcher called directly), so that a
  kernel left on Triton's general path shows;
- each side's steps under cProfile ($OUT/profile_FAMILY_MODE_SIDE.txt: every function by its own
  time), to compare the code each side runs per step.

    python bench/host_models.py [FAMILIES] [MODES] [SIZE]     # llama infer,train small
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models as bench_models

import tilec
from tilec.runtime.launch import TilecKernel


def host_us(step: Callable[[], Any], steps: int) -> float:
    """Microseconds of host time per step: `steps` steps queued without waiting for the GPU."""
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    dt = (time.perf_counter() - t) / steps * 1e6
    torch.cuda.synchronize()
    return dt


def tilec_kernels() -> list[TilecKernel]:
    from torch._inductor.codecache import PyCodeCache

    found = []
    for module in list(PyCodeCache.modules):
        for value in vars(module).values():
            if isinstance(value, TilecKernel) and value not in found:
                found.append(value)
    return found


def profile_text(step: Callable[[], Any], steps: int) -> str:
    torch.cuda.synchronize()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(steps):
        step()
    profile.disable()
    torch.cuda.synchronize()
    s = io.StringIO()
    stats = pstats.Stats(profile, stream=s)
    stats.sort_stats("tottime").print_stats()
    return s.getvalue()


def probe(family: str, mode: str, size: str, out: str) -> dict[str, Any]:
    train = mode == "train"
    sides = ("control", "tilec", "stock")  # made, compiled and warmed up in this order
    backends = {side: "tilec" if side == "tilec" else "inductor" for side in sides}
    step = bench_models.stepper(family, size, backends, train)
    for side in sides:
        for _ in range(3):
            step(side)
    torch.cuda.synchronize()
    steps = 20 if train else 50
    rounds: list[dict[str, float]] = []
    for r in range(3):
        order = sides if r % 2 == 0 else sides[::-1]
        rounds.append({side: host_us(lambda side=side: step(side), steps) for side in order})
    kernels = [
        {"name": k.name, "bound": k._bound is not None, "launches": {r: n for r, n in k.launches.items() if n}}
        for k in tilec_kernels()
    ]
    for side in sides:
        text = profile_text(lambda side=side: step(side), steps)
        Path(out, f"profile_{family}_{mode}_{side}.txt").write_text(text)
    row = {
        "family": family,
        "mode": mode,
        "size": size,
        "host_us": rounds,
        "taken": sum(r.taken for r in tilec.report()),
        "kernels": kernels,
    }
    torch._dynamo.reset()
    return row


def main() -> None:
    families = (sys.argv[1] if len(sys.argv) > 1 else "llama").split(",")
    modes = (sys.argv[2] if len(sys.argv) > 2 else "infer,train").split(",")
    size = sys.argv[3] if len(sys.argv) > 3 else "small"
    out = os.environ.get("OUT", ".")
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}))
    for family in families:
        for mode in modes:
            print(json.dumps(probe(family, mode, size, out)), flush=True)


if __name__ == "__main__":
    main()
