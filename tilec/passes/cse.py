"""cse: common subexpression elimination for pure ops.

Two pure ops with the same name, operands, attributes and result types compute the same values;
the later one is replaced by the earlier when the earlier dominates it (same block or an enclosing
one). Memory reads are never merged: two shared-memory loads stay two loads.

Before:
    %a = tile.mul %x, %y : f32
    %b = tile.mul %x, %y : f32
    %c = tile.add %a, %b : f32
After:
    %a = tile.mul %x, %y : f32
    %c = tile.add %a, %a : f32
"""

from __future__ import annotations

from typing import Any

from tilec.ir.core import Block, Module, Operation, Value
from tilec.ir.formatting import format_attr
from tilec.passes.base import Pass, register


def _key(op: Operation) -> tuple[Any, ...]:
    attrs = tuple(sorted((k, format_attr(v)) for k, v in op.attributes.items()))
    return (op.name, tuple(id(v) for v in op.operands), attrs, tuple(r.type for r in op.results))


def _cse_block(
    block: Block, available: dict[tuple[Any, ...], Operation], renamed: dict[int, tuple[Value, Value]]
) -> bool:
    """Merges the block's ops (and its regions') into those of `available` and earlier ones.
    Uses of a merged op's results are renamed as the walk meets them (`renamed`: by the old
    value's id, the old value kept so its id stays its own, and the value that replaces it):
    every use comes after its definition in the walk's program order."""
    changed = False
    scope = dict(available)
    for op in list(block.ops):
        if renamed:
            operands = op.operands
            for i, v in enumerate(operands):
                found = renamed.get(id(v))
                if found is not None:
                    operands[i] = found[1]
        if op.is_pure and not op.regions and op.results:
            key = _key(op)
            prior = scope.get(key)
            if prior is not None:
                for old, new in zip(op.results, prior.results):
                    renamed[id(old)] = (old, new)
                op.erase()
                changed = True
                continue
            scope[key] = op
        for region in op.regions:
            inner = {} if "isolated" in op.traits else scope
            changed |= _cse_block(region, inner, renamed)
    return changed


def cse(module: Module) -> bool:
    changed = False
    for kernel in module.kernels:
        while _cse_block(kernel.body, {}, {}):
            changed = True
    return changed


@register
class CSE(Pass):
    """Merges identical pure ops."""

    name = "cse"
    unchanged = "no two ops compute the same value"

    def run(self, module: Module) -> None:
        cse(module)
