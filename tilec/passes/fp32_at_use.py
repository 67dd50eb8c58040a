"""fp32-at-use: upcasts move from where a value is made to where it is used.

A bf16/f16 value widened once and used in several places would keep the wide copy alive from the
first use to the last (across a reduction, in a row kernel); with one cast right before each use,
the narrow value is what lives — half the registers, and a cache in shared memory stays narrow.
The cast is copied, never dropped, so results do not change. Run it after CSE, which would merge
the copies again.

Before:
    %x = tile.load %in, %offs : tile<[4, 1024], bf16>
    %xf = tile.cast %x : tile<[4, 1024], f32>
    %sq = tile.mul %xf, %xf : ...          // phase 1
    ...
    %y = tile.mul %xf, %rstd : ...         // phase 2
After:
    %x = tile.load %in, %offs : tile<[4, 1024], bf16>
    %xf = tile.cast %x : tile<[4, 1024], f32>
    %sq = tile.mul %xf, %xf : ...
    ...
    %xf_1 = tile.cast %x : tile<[4, 1024], f32>
    %y = tile.mul %xf_1, %rstd : ...
"""

from __future__ import annotations

from tilec.ir.builder import Builder
from tilec.ir.core import Kernel, Module, Operation
from tilec.ir.ops import CastOp
from tilec.ir.ops.common import elem_dtype
from tilec.passes.base import Pass, register

NARROW = ("bf16", "f16")


def widening(op: Operation) -> bool:
    if not isinstance(op, CastOp):
        return False
    src, dst = elem_dtype(op.src.type), elem_dtype(op.result.type)
    return src is not None and dst is not None and src.name in NARROW and dst.is_float and dst.bits > src.bits


def move_casts_to_uses(kernel: Kernel) -> int:
    """One cast per using op; returns how many casts were added."""
    added = 0
    for cast in [op for op in kernel.walk() if isinstance(op, CastOp) and widening(op)]:
        users = [op for op in kernel.walk() if any(v is cast.result for v in op.operands)]
        for user in users[1:]:
            copy = Builder.before(user).op(
                "tile.cast", cast.src, type=cast.result.type, name_hint=cast.result.name_hint
            )
            user.operands = [copy if v is cast.result else v for v in user.operands]
            added += 1
    return added


@register
class Fp32AtUse(Pass):
    """Upcasts at each use, so loaded and cached values stay narrow."""

    name = "fp32-at-use"
    unchanged = "no widening cast of a bf16 or f16 value has more than one use"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            move_casts_to_uses(kernel)
