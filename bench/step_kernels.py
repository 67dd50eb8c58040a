"""Where a whole model's step spends its device time, kernel by kernel, tilec and stock in one
process: the kernels to work on next, and the ones both sides share.

    python bench/step_kernels.py [FAMILIES] [MODES]      # llama,gpt2 train (default); modes: train, infer

Per family and mode (`bench/models.py`'s models at the default size, bf16; a training step is
forward, loss, backward and AdamW), each side (`backend="tilec"` and stock) warmed up three steps,
then three steps under the profiler: one JSON line per side and kernel (or copy) to
$OUT/step_kernels.jsonl with its device time per step, launches per step and, for Inductor's
kernels, what tilec did with it (its emitter, or `stock:` and the reason it declined). The total
per side is printed.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))


def main(argv: list[str]) -> None:
    import models as bench_models
    import torch

    import tilec

    families = (argv[0] if argv else "llama,gpt2").split(",")
    modes = (argv[1] if len(argv) > 1 else "train").split(",")

    def run(fam: str, mode: str, out: Any) -> None:
        step = bench_models.stepper(fam, "default", {"tilec": "tilec", "stock": "inductor"}, mode == "train")
        for s in ("tilec", "stock"):
            for _ in range(3):
                step(s)
        torch.cuda.synchronize()
        what = {r.kernel: (r.emitter if r.taken else "stock: " + (r.reason or "")[:60]) for r in tilec.report()}
        for s in ("tilec", "stock"):
            times = bench_models.kernel_times(lambda s=s: step(s))
            for name, (us, count) in times.items():
                row = {"family": fam, "mode": mode, "side": s, "kernel": name[:200], "us": us, "count": count}
                out.write(json.dumps({**row, "tilec": what.get(name)}) + "\n")
            print(fam, mode, s, f"{sum(us for us, _ in times.values()):.1f} us", flush=True)
        out.flush()

    with open(f"{os.environ.get('OUT', '.')}/step_kernels.jsonl", "a") as out:
        for fam in families:
            for mode in modes:
                run(fam, mode, out)
                torch._dynamo.reset()
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
