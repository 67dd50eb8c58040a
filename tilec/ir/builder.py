"""Building IR from code: an insertion point plus shorthands for the common ops.

b = Builder.at_end(kernel.body)
pid = b.op("tile.program_id")
loop = b.for_(lb, ub, step, [zero])
with b.inside(loop.body):
    ...
    b.yield_(acc)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tilec.ir import ops as _ops  # noqa: F401  (registers the ops)
from tilec.ir.core import OPS, Block, Operation, Value
from tilec.ir.dtypes import DType, Type
from tilec.ir.errors import Location
from tilec.ir.ops import ForOp, IfOp, YieldOp


class Builder:
    def __init__(self, block: Block, index: int | None = None, loc: Location | None = None) -> None:
        self.block = block
        self.index = index  # None: append at the end
        self.loc = loc

    @classmethod
    def at_end(cls, block: Block) -> Builder:
        return cls(block)

    @classmethod
    def before(cls, op: Operation) -> Builder:
        assert op.parent is not None
        return cls(op.parent, op.parent.ops.index(op))

    @classmethod
    def after(cls, op: Operation) -> Builder:
        assert op.parent is not None
        return cls(op.parent, op.parent.ops.index(op) + 1)

    @contextmanager
    def inside(self, block: Block) -> Iterator[Builder]:
        """Temporarily append to `block` (a region being filled)."""
        saved = (self.block, self.index)
        self.block, self.index = block, None
        try:
            yield self
        finally:
            self.block, self.index = saved

    def insert(self, op: Operation) -> Operation:
        if op.loc is None:
            op.loc = self.loc
        if self.index is None:
            self.block.append(op)
        else:
            self.block.insert(self.index, op)
            self.index += 1
        return op

    def create(
        self,
        name: str | type[Operation],
        *operands: Value,
        result_types: Sequence[Type] | None = None,
        regions: Sequence[Block] = (),
        names: Sequence[str | None] = (),
        **attrs: Any,
    ) -> Operation:
        cls = OPS[name] if isinstance(name, str) else name
        if result_types is not None:
            types: list[Type] | None = list(result_types)
        elif cls.num_results == 0:
            types = []
        else:
            types = cls.infer(operands, attrs)
        if types is None:
            raise ValueError(f"{cls.name} cannot infer its result types; pass result_types")
        op = cls(list(operands), types, attrs, regions)
        for r, n in zip(op.results, names):
            r.name_hint = n
        return self.insert(op)

    def op(
        self,
        name: str | type[Operation],
        *operands: Value,
        type: Type | None = None,
        name_hint: str | None = None,
        **attrs: Any,
    ) -> Value:
        """Creates a single-result op and returns its result."""
        op = self.create(name, *operands, result_types=[type] if type is not None else None, names=[name_hint], **attrs)
        return op.result

    def constant(self, value: Any, dtype: DType, name_hint: str | None = None) -> Value:
        if dtype.is_float and isinstance(value, int):
            value = float(value)
        return self.op("tile.constant", type=dtype, value=value, name_hint=name_hint)

    def for_(
        self,
        lower: Value,
        upper: Value,
        step: Value,
        inits: Sequence[Value] = (),
        iv_name: str | None = None,
        names: Sequence[str | None] = (),
        **attrs: Any,
    ) -> ForOp:
        """A loop with an empty body; fill it with `inside(loop.body)` and end with `yield_`."""
        body = Block([lower.type] + [v.type for v in inits], [iv_name] + list(names or [None] * len(inits)))
        op = ForOp([lower, upper, step, *inits], [v.type for v in inits], attrs, [body])
        for r, a in zip(op.results, body.args[1:]):
            r.name_hint = a.name_hint
        self.insert(op)
        return op

    def if_(self, cond: Value, result_types: Sequence[Type] = ()) -> IfOp:
        op = IfOp([cond], list(result_types), {}, [Block(), Block()])
        self.insert(op)
        return op

    def yield_(self, *values: Value) -> Operation:
        return self.insert(YieldOp(list(values)))
