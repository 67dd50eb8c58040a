"""peel: a loop whose step does not divide its range becomes a main loop of full steps followed by
a one-iteration tail. In the main loop every chunk is whole, so canonicalize can prove the bounds
masks true and drop them; only the tail keeps its masks.

Before (rnumel 1000, RBLOCK 256):
    %s = tile.for %r = %c0 to %c1000 step %c256 iter_args(%a = %z) -> (...) { ... masks ... }
After:
    %s0 = tile.for %r = %c0 to %c768 step %c256 iter_args(%a = %z) -> (...) { ... }
    %s = tile.for %r_1 = %c768 to %c1000 step %c256 iter_args(%a_1 = %s0) -> (...) { ... }
(then canonicalize: the main loop's masks fold away, the tail is inlined)
"""

from __future__ import annotations

from tilec.ir.builder import Builder
from tilec.ir.clone import clone_op
from tilec.ir.core import Kernel, Module, replace_uses
from tilec.ir.ops import ForOp
from tilec.passes.base import Pass, register
from tilec.passes.rewrite import const_value


def peel_loop(kernel: Kernel, loop: ForOp) -> bool:
    lo, hi, step = (const_value(v) for v in (loop.lower, loop.upper, loop.step))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi, step)):
        return False
    assert isinstance(lo, int) and isinstance(hi, int) and isinstance(step, int)
    if step <= 0 or hi <= lo:
        return False
    trips = -(-(hi - lo) // step)
    if trips < 2 or (hi - lo) % step == 0:
        return False
    main_end = lo + (trips - 1) * step
    b = Builder.before(loop)
    split = b.constant(main_end, loop.lower.type, name_hint="rmain")  # type: ignore[arg-type]
    tail = clone_op(loop, {})
    assert isinstance(tail, ForOp)
    loop.operands[1] = split
    tail.operands[0] = split
    parent = loop.parent
    assert parent is not None
    parent.insert(parent.ops.index(loop) + 1, tail)
    old_results = list(loop.results)
    # later uses read the tail's results; the tail starts from the main loop's
    for old, new in zip(old_results, tail.results):
        replace_uses(kernel.body, old, new)
    for i, res in enumerate(old_results):
        tail.operands[3 + i] = res
    return True


@register
class Peel(Pass):
    """Splits loops with a partial last step into full steps and a tail."""

    name = "peel"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            for op in list(kernel.walk()):
                if isinstance(op, ForOp):
                    peel_loop(kernel, op)
