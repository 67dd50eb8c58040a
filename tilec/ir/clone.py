"""Copying ops and regions, with a map from old values to new ones."""

from __future__ import annotations

from tilec.ir.core import Block, Operation, Value


def clone_op(op: Operation, mapping: dict[int, Value]) -> Operation:
    """A copy of `op` (regions included). Operands found in `mapping` (by id) are replaced; the
    copy's results and block arguments are added to it."""
    new_regions = [clone_block(r, mapping) for r in op.regions]
    operands = [mapping.get(id(v), v) for v in op.operands]
    new = type(op)(operands, [r.type for r in op.results], dict(op.attributes), new_regions, op.loc)
    for old, fresh in zip(op.results, new.results):
        fresh.name_hint = old.name_hint
        mapping[id(old)] = fresh
    return new


def clone_block(block: Block, mapping: dict[int, Value]) -> Block:
    new = Block([a.type for a in block.args], [a.name_hint for a in block.args])
    for old, fresh in zip(block.args, new.args):
        mapping[id(old)] = fresh
    for op in block.ops:
        new.append(clone_op(op, mapping))
    return new
