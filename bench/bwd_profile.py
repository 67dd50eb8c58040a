"""Where a norm's backward spends its device time, kernel by kernel: the op's backward compiled
with stock torch.compile and with tilec (the Triton emitter, every kernel taken, or the hook's
own choice with `--hook`), run on a cold L2 under the profiler. Prints one JSON line per op,
shape and side: the whole backward as % of a same-size copy of the model bytes, and each kernel's
median device microseconds. With `--code DIR`, writes each side's generated modules there.

    python bench/bwd_profile.py 4096x16384,4096x32768 layernorm_bwd,rmsnorm_bwd [--hook] [--code DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tilec
from bench import BACKWARD, FUNCTIONS, gradients, make_inputs, model_bytes, parse_shapes
from tilec.runtime.timing import device_ms

FLUSH = "CUDAFunctorOnSelf_add"  # the cold-L2 flush's kernel, left out of the backward's


def kernel_us(call: Callable[[], Any], reps: int = 10) -> dict[str, float]:
    """Median device microseconds per kernel name of one `call()` on a cold L2 (names launched
    more than once a call are summed within the call)."""
    flush = torch.empty(64 * 2**20, device="cuda", dtype=torch.float32)
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            flush.add_(1)
            call()
        torch.cuda.synchronize()
    per_call: dict[str, list[float]] = defaultdict(list)
    sums: dict[str, float] = {}
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        if FLUSH in event.name:
            for name, us in sums.items():
                per_call[name].append(us)
            sums = {}
            continue
        sums[event.name] = sums.get(event.name, 0.0) + event.time_range.elapsed_us()
    for name, us in sums.items():
        per_call[name].append(us)
    return {name: round(statistics.median(v), 1) for name, v in per_call.items()}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes")
    parser.add_argument("ops", nargs="?", default="rmsnorm_bwd,layernorm_bwd")
    parser.add_argument("--hook", action="store_true", help="tilec as installed (its rules decide), not every kernel")
    parser.add_argument("--code", type=Path, help="write each side's generated modules here")
    args = parser.parse_args(argv)
    tilec.install()
    sides: dict[str, Callable[[], Any]] = {
        "stock": lambda: tilec.config.patch(enabled=False),
        "tilec": (lambda: tilec.config.patch(enabled=True))
        if args.hook
        else (lambda: tilec.config.patch(enabled=True, emitter="triton", decline=False, autotune=False)),
    }
    for m, n in parse_shapes(args.shapes):
        src = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        dst = torch.empty_like(src)
        copy_ms = device_ms(lambda: dst.copy_(src))  # noqa: B023
        copy_gbps = 2 * src.numel() * src.element_size() / copy_ms / 1e6
        for op in args.ops.split(","):
            forward = BACKWARD[op]
            inputs = make_inputs(op, m, n, torch.bfloat16)
            for side, settings in sides.items():
                torch._dynamo.reset()
                with (
                    settings(),
                    torch._inductor.config.patch(fx_graph_cache=False),
                    torch._functorch.config.patch(donated_buffer=False),
                ):
                    from torch._inductor.utils import run_and_get_code

                    call = gradients(torch.compile(FUNCTIONS[forward], dynamic=False), inputs, forward)
                    _, codes = run_and_get_code(call)
                    if args.code:
                        args.code.mkdir(parents=True, exist_ok=True)
                        (args.code / f"{op}-{m}x{n}-{side}.py").write_text("\n\n# ---- next module\n\n".join(codes))
                    ms = device_ms(call, reps=15)
                    kernels = kernel_us(call)
                row = {
                    "op": op,
                    "shape": f"{m}x{n}",
                    "side": side,
                    "copy_pct": round(100 * model_bytes(op, m, n, 2) / ms / 1e6 / copy_gbps, 1),
                    "us": round(ms * 1e3, 1),
                    "copy_us": round(copy_ms * 1e3, 1),
                    "kernels": kernels,
                }
                print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
