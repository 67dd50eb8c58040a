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
from tilec.ir.core import Kernel, Module
from tilec.ir.ops import ForOp
from tilec.passes.base import Pass, register
from tilec.passes.rewrite import const_value, split_loop


def peel_loop(kernel: Kernel, loop: ForOp) -> str | None:
    """Peels `loop`; returns why not when it does not."""
    lo, hi, step = (const_value(v) for v in (loop.lower, loop.upper, loop.step))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi, step)):
        return "its bounds or step are not constants"
    assert isinstance(lo, int) and isinstance(hi, int) and isinstance(step, int)
    if step <= 0 or hi <= lo:
        return "it runs no step"
    trips = -(-(hi - lo) // step)
    if trips < 2:
        return "it runs one step"
    if (hi - lo) % step == 0:
        return f"its step {step} divides its {hi - lo} iterations: no partial last step"
    b = Builder.before(loop)
    split_loop(kernel, loop, b.constant(lo + (trips - 1) * step, loop.lower.type, name_hint="rmain"))  # type: ignore[arg-type]
    return None


@register
class Peel(Pass):
    """Splits loops with a partial last step into full steps and a tail."""

    name = "peel"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            loops = [op for op in kernel.walk() if isinstance(op, ForOp)]
            why = [(f"%{op.induction_var.name_hint}", peel_loop(kernel, op)) for op in loops]
            if not loops:
                self.remark(kernel, "no loop")
            elif all(w is not None for _, w in why):
                self.remark(kernel, "no loop peeled: " + "; ".join(f"{v}: {w}" for v, w in why))
