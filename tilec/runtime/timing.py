"""GPU time of a call on a cold L2, with the host kept out of the measurement.

    ms = device_ms(lambda: kernel.run(*args), reps=20)

As `triton.testing.do_bench` (flush L2 by zeroing a 256 MiB buffer, record an event, call, record
an event; the median over the calls), with the GPU held in a spin kernel (`torch.cuda._sleep`)
after each flush, long enough for the host to queue the whole call before the start event is
reached: a call's host time (a wrapper, a launcher: tens of microseconds) then never shows up as
GPU time. The autotuner (tilec/inductor/autotune.py) and `tilec bench` both time this way.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

__all__ = ["SPIN_CYCLES", "device_ms"]

# the spin after each flush: about 0.6 ms at the H100's clock, several times a call's host time
SPIN_CYCLES = 1_000_000
_flush: dict[Any, Any] = {}  # device -> the buffer zeroed to flush L2


def _flush_buffer() -> Any:
    import torch

    device = torch.cuda.current_device()
    if device not in _flush:
        _flush[device] = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")
    return _flush[device]


def device_ms(fn: Callable[[], Any], reps: int = 20, warmup: int = 3) -> float:
    """Median GPU milliseconds of `fn()` on a cold L2 over `reps` calls, after `warmup` calls."""
    import torch

    cache = _flush_buffer()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        cache.zero_()
        torch.cuda._sleep(SPIN_CYCLES)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return float(statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)))
