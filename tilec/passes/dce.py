"""dce: removes ops whose results nobody uses and that have no effect.

Pure ops, memory reads and allocations go when unused; loops and conditionals go when their
results are unused and their regions have no effect; a loop-carried value goes when its result is
unused and what the loop computes from it only flows back into it.

Before:
    %a = tile.load %x, %offs : tile<[128], bf16>
    %b = tile.exp %c : f32
    tile.store %y, %offs, %v
After:
    tile.store %y, %offs, %v
"""

from __future__ import annotations

from tilec.ir.core import Kernel, Module, Operation, use_counts
from tilec.ir.ops import ForOp, IfOp, YieldOp
from tilec.passes.base import Pass, register


def _op_effect_free(op: Operation) -> bool:
    if isinstance(op, YieldOp):
        return True
    if isinstance(op, (ForOp, IfOp)):
        return all(_op_effect_free(inner) for r in op.regions for inner in r.ops)
    return op.is_removable


def _dead_carry_slice(loop: ForOp, i: int, uses: dict[int, int]) -> list[Operation] | None:
    """The body ops that only serve carried value i, if that value is dead: its result is unused
    and everything computed from its block argument flows back only into its own yield slot."""
    if uses.get(id(loop.results[i]), 0):
        return None
    term = loop.body.terminator
    assert isinstance(term, YieldOp)
    tainted = {id(loop.iter_args[i])}
    chain: list[Operation] = []
    for op in loop.body.ops:
        if op is term or not any(id(v) in tainted for v in op.operands):
            continue
        if op.regions or not op.is_removable:
            return None
        chain.append(op)
        tainted.update(id(r) for r in op.results)
    # the carried value and the chain's values may be used only inside the chain (directly, not
    # from a nested region) and by yield slot i
    for r in [loop.iter_args[i], *(r for op in chain for r in op.results)]:
        internal = sum(1 for o in chain for v in o.operands if v is r)
        own_yield = 1 if term.values[i] is r else 0
        if uses.get(id(r), 0) != internal + own_yield:
            return None
    for j, v in enumerate(term.values):
        if j != i and id(v) in tainted:
            return None
    return chain


def _drop_dead_carries(loop: ForOp, uses: dict[int, int]) -> bool:
    term = loop.body.terminator
    assert isinstance(term, YieldOp)
    for i in reversed(range(len(loop.inits))):
        chain = _dead_carry_slice(loop, i, uses)
        if chain is None:
            continue
        for op in reversed(chain):
            op.erase()
        loop.inits = [v for j, v in enumerate(loop.inits) if j != i]
        term.values = [v for j, v in enumerate(term.values) if j != i]
        loop.body.args.pop(i + 1)
        loop.results.pop(i)
        for j, a in enumerate(loop.body.args):
            a.index = j
        for j, r in enumerate(loop.results):
            r.index = j
        return True
    return False


def dce_kernel(kernel: Kernel) -> bool:
    changed_any = False
    while True:
        uses = use_counts(kernel.body)
        changed = False
        for op in reversed(list(kernel.walk())):
            if op.parent is None:
                continue
            if any(uses.get(id(r), 0) for r in op.results):
                if isinstance(op, ForOp) and _drop_dead_carries(op, uses):
                    changed = True
                    break
                continue
            if isinstance(op, YieldOp):
                continue
            if _op_effect_free(op):
                op.erase()
                changed = True
                for v in op.operands:
                    uses[id(v)] = uses.get(id(v), 1) - 1
            elif isinstance(op, ForOp) and op.results and _drop_dead_carries(op, uses):
                changed = True
                break
        changed_any |= changed
        if not changed:
            return changed_any


@register
class DCE(Pass):
    """Removes unused, effect-free ops."""

    name = "dce"
    unchanged = "no op is unused"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            dce_kernel(kernel)
