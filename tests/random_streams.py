"""The random streams stock Inductor draws from, computed with Triton's and Inductor's own
generators (in Triton's interpreter without a GPU): the reference tilec's `tile.rand` is held to.

    stock_stream(seed, base, n, lanes=1, dist="uniform")   # n f32 numbers at offsets base, base+1, ...

`lanes = 1`: `tl.rand`/`tl.randn` at each offset. `lanes = 4`: Inductor's `rand4x`/`randn4x`
where this torch has them, otherwise the same four-lane stream written here from `tl.rand4x`.

Shared by tests/emit/test_philox.py and tests/frontend/test_random.py.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers

BLOCK = 256

# Whether this torch's Inductor draws 1-D kernels' numbers from rand4x (and so the lanes of the
# stream its pointwise kernels use)
HAS_RAND4X = hasattr(triton_helpers, "rand4x")


@triton.jit
def _four_lanes(seed, offsets, normal: tl.constexpr, block: tl.constexpr):
    # the four-lane stream written independently of tilec and of Inductor: all four outputs of
    # counter base // 4 + i, interleaved so element 4i + j holds output j
    base = tl.min(offsets, axis=0)
    counters = base // 4 + tl.arange(0, block // 4)
    if normal:
        r0, r1, r2, r3 = tl.randn4x(seed, counters)
    else:
        r0, r1, r2, r3 = tl.rand4x(seed, counters)
    return tl.reshape(tl.join(tl.join(r0, r2), tl.join(r1, r3)), [block])


@triton.jit
def _stream(seed, base, n, out, lanes: tl.constexpr, normal: tl.constexpr, stock: tl.constexpr, block: tl.constexpr):
    i = tl.program_id(0) * block + tl.arange(0, block)
    offsets = (base + i).to(tl.uint32)
    if lanes == 1:
        if normal:
            r = tl.randn(seed, offsets)
        else:
            r = tl.rand(seed, offsets)
    elif stock:
        if normal:
            r = triton_helpers.randn4x(seed, offsets, block)
        else:
            r = triton_helpers.rand4x(seed, offsets, block)
    else:
        r = _four_lanes(seed, offsets, normal, block)
    tl.store(out + i, r, mask=i < n)


def stock_stream(
    seed: int, base: int, n: int, lanes: int = 1, dist: str = "uniform", stock: bool = True, device: str = "cpu"
) -> torch.Tensor:
    """n numbers of the stream at offsets base, base + 1, ...; base a multiple of 4 for lanes 4.
    `stock=False` takes the four-lane stream written here even where Inductor has rand4x."""
    assert lanes == 1 or base % 4 == 0
    out = torch.empty(triton.cdiv(n, BLOCK) * BLOCK, device=device)
    grid = (triton.cdiv(n, BLOCK),)
    _stream[grid](seed, base, n, out, lanes=lanes, normal=dist == "normal", stock=stock and HAS_RAND4X, block=BLOCK)
    return out[:n]
