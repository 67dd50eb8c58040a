"""The Inductor ops handler tilec replays LoopBodies under: every `ops.*` call becomes tile IR.

Math maps onto elementwise ops in the dtypes the LoopBody writes, with fp16 and bf16 computed in
f32 from load to store as stock Inductor computes them (`tilec.frontend.dtypes.compute_dtype`);
memory, index and reduction ops go to the kernel being built (`tilec.frontend.lower`). An op
outside the table raises `UnsupportedError` with a stable reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch._inductor.ops_handler import DefaultHandler

from tilec.frontend.dtypes import compute_dtype, promote, to_tilec
from tilec.frontend.logical import TV, LogicalBuilder, PendingReduction
from tilec.frontend.reasons import (
    MASKED_BODY,
    RANDOM_INTEGERS,
    SCAN,
    SORT,
    SPLIT_REDUCTION_PARTIALS,
    UnsupportedError,
    unsupported_op,
)
from tilec.ir.dtypes import DType, f32, i1


class KernelSink(Protocol):
    """What the handler needs of the kernel being built (`tilec.frontend.lower.KernelBuilder`):
    memory, index and reduction ops, which know the kernel's buffers and index variables."""

    lb: LogicalBuilder

    def load(self, name: str, index: Any) -> TV: ...

    def store(self, name: str, index: Any, value: TV, atomic: bool = False) -> None: ...

    def store_reduction(self, name: str, index: Any, value: Any) -> None: ...

    def partial_accumulate(self, name: str, rtype: str, value: TV) -> None: ...

    def note_reduction(self, rtype: str) -> None: ...

    def index(self, expr: Any, dtype: DType) -> TV: ...

    def indirect(self, value: TV, size: Any, check: bool, wrap_neg: bool) -> Any: ...

    def check_bounds(self, expr: Any, size: Any, lower: bool, upper: bool) -> None: ...

    def load_seed(self, name: str, offset: Any) -> TV: ...

    def rand(self, seed: TV, offset: TV, dist: str) -> TV: ...


# Inductor op → (tile op, operand class): "float" ops cast integer operands to f32 first.
_UNARY = {
    "neg": ("tile.neg", None),
    "abs": ("tile.abs", None),
    "exp": ("tile.exp", "float"),
    "exp2": ("tile.exp2", "float"),
    "log": ("tile.log", "float"),
    "log2": ("tile.log2", "float"),
    "sqrt": ("tile.sqrt", "float"),
    "rsqrt": ("tile.rsqrt", "float"),
    "sin": ("tile.sin", "float"),
    "cos": ("tile.cos", "float"),
    "tanh": ("tile.tanh", "float"),
    "erf": ("tile.erf", "float"),
    "sigmoid": ("tile.sigmoid", "float"),
    "floor": ("tile.floor", "float"),
    "ceil": ("tile.ceil", "float"),
    "bitwise_not": ("tile.not", None),
}
_BINARY = {
    "add": "tile.add",
    "sub": "tile.sub",
    "mul": "tile.mul",
    "maximum": "tile.maximum",
    "minimum": "tile.minimum",
    "truncdiv": "tile.div",
    "mod": "tile.rem",  # Triton's %: C remainder (Inductor emits `a % b`)
    "fmod": "tile.rem",
    "bitwise_and": "tile.and",
    "and_": "tile.and",  # Inductor's `&`, `|`, `^` (range masks of slices and pads)
    "or_": "tile.or",
    "xor": "tile.xor",
    "bitwise_or": "tile.or",
    "bitwise_xor": "tile.xor",
    "left_shift": "tile.shl",
    "right_shift": "tile.shr",
}
_COMPARE = {"lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "eq": "eq", "ne": "ne"}
_LOGICAL = {"logical_and": "tile.and", "logical_or": "tile.or", "logical_xor": "tile.xor"}

Operand = TV | PendingReduction | bool | int | float


class TileOpsHandler(DefaultHandler):
    """Receives every op of a LoopBody replay and builds the matching tile IR."""

    def __init__(self, kb: KernelSink) -> None:
        self.kb = kb
        self.lb = kb.lb

    # -- dispatch

    def _default(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # (looked up on the class: DefaultHandler.__getattr__ answers every name)
        method: Callable[..., Any] | None = getattr(type(self), "op_" + name, None)
        if method is not None:
            return method(self, *args, **kwargs)
        if name in _UNARY:
            return self._unary(name, *args)
        if name in _BINARY:
            return self._binary(_BINARY[name], *args)
        if name in _COMPARE:
            return self._compare(_COMPARE[name], *args)
        if name in _LOGICAL:
            a, b = (self._bool(x) for x in args)
            return self.lb.elementwise(_LOGICAL[name], [a, b], hint=name.split("_")[1])
        raise UnsupportedError(unsupported_op(name))

    # -- operand helpers

    def tv(self, x: Any, like: DType | None = None) -> TV:
        if isinstance(x, TV):
            return x
        if isinstance(x, PendingReduction):
            return self.lb.resolve(x)  # Unsupported while its loop is still open
        if isinstance(x, (bool, int, float)):
            dtype = like or (i1 if isinstance(x, bool) else f32 if isinstance(x, float) else DType("i64"))
            if dtype.is_int and not dtype.is_bool and isinstance(x, float):
                if not math.isfinite(x) or x != int(x):
                    dtype = f32
                else:
                    x = int(x)
            return self.lb.const(x, dtype)
        raise UnsupportedError(unsupported_op(f"operand of type {type(x).__name__}"))

    def _pair(self, a: Any, b: Any) -> tuple[TV, TV]:
        ta = self.tv(a) if isinstance(a, (TV, PendingReduction)) else None
        tb = self.tv(b) if isinstance(b, (TV, PendingReduction)) else None
        if ta is None:
            ta = self.tv(a, tb.dtype if tb is not None else None)
        if tb is None:
            tb = self.tv(b, ta.dtype)
        dt = promote(ta.dtype, tb.dtype)
        return self.lb.cast(ta, dt), self.lb.cast(tb, dt)

    def _float(self, t: TV) -> TV:
        return t if t.dtype.is_float else self.lb.cast(t, f32)

    def _bool(self, x: Any) -> TV:
        t = self.tv(x, i1)
        if t.dtype.is_bool:
            return t
        return self.lb.elementwise("tile.cmp", [t, self.lb.const(0, t.dtype)], dtype=i1, hint="cmp", predicate="ne")

    def _unary(self, name: str, x: Any) -> TV:
        op, cls = _UNARY[name]
        t = self.tv(x)
        if cls == "float":
            t = self._float(t)
        return self.lb.elementwise(op, [t], hint=name)

    def _binary(self, op: str, a: Any, b: Any) -> TV:
        ta, tb = self._pair(a, b)
        return self.lb.elementwise(op, [ta, tb])

    def _compare(self, predicate: str, a: Any, b: Any) -> TV:
        ta, tb = self._pair(a, b)
        return self.lb.elementwise("tile.cmp", [ta, tb], dtype=i1, hint="cmp", predicate=predicate)

    # -- constants, casts, selection

    def op_constant(self, value: Any, dtype: torch.dtype) -> TV:
        dt = compute_dtype(to_tilec(dtype))
        if dt.is_bool:
            value = bool(value)
        elif dt.is_float:
            value = float(value)
        else:
            value = int(value)
        return self.lb.const(value, dt)

    def op_to_dtype(self, x: Any, dtype: torch.dtype, src_dtype: Any = None, use_compute_types: bool = True) -> TV:
        # use_compute_types=False is a rounding Inductor asks for (emulate_precision_casts, a saved
        # low-precision output): the value really becomes fp16/bf16; otherwise bf16 stays f32
        dt = to_tilec(dtype) if not use_compute_types else compute_dtype(to_tilec(dtype))
        t = self.tv(x, dt)
        return self.lb.cast(t, dt)

    def op_to_dtype_bitcast(self, x: Any, dtype: torch.dtype, src_dtype: Any = None) -> TV:
        dt = to_tilec(dtype)
        t = self.tv(x)
        if t.dtype == dt:
            return t
        if t.dtype.bits != dt.bits:
            raise UnsupportedError(unsupported_op("to_dtype_bitcast"))
        return self.lb.cast(self.lb.emit("tile.bitcast", [t], t.dims, dt, "bitcast"), compute_dtype(dt))

    def op_identity(self, x: Any) -> TV:
        return self.tv(x)

    def op_where(self, cond: Any, a: Any, b: Any) -> TV:
        c = self._bool(cond)
        ta, tb = self._pair(a, b)
        return self.lb.elementwise("tile.where", [c, ta, tb], hint="where")

    def op_logical_not(self, x: Any) -> TV:
        return self.lb.elementwise("tile.not", [self._bool(x)], hint="not")

    # -- arithmetic that needs more than one tile op

    def op_truediv(self, a: Any, b: Any) -> TV:
        ta, tb = self._pair(a, b)
        return self.lb.elementwise("tile.div", [self._float(ta), self._float(tb)])

    def op_reciprocal(self, x: Any) -> TV:
        t = self._float(self.tv(x))
        return self.lb.elementwise("tile.div", [self.lb.const(1.0, t.dtype), t], hint="recip")

    def op_square(self, x: Any) -> TV:
        t = self.tv(x)
        return self.lb.elementwise("tile.mul", [t, t], hint="square")

    def op_relu(self, x: Any) -> TV:
        t = self.tv(x)
        return self.lb.elementwise("tile.maximum", [t, self.lb.const(0, t.dtype)], hint="relu")

    def op_pow(self, a: Any, b: Any) -> TV:
        ta, tb = self._pair(a, b)
        return self.lb.elementwise("tile.pow", [self._float(ta), self._float(tb)])

    def op_fma(self, a: Any, b: Any, c: Any) -> TV:
        ta, tb = self._pair(a, b)
        tc = self.lb.cast(self.tv(c, ta.dtype), ta.dtype)
        return self.lb.elementwise("tile.fma", [ta, tb, tc])

    def _floor_fix(self, q: TV, r: TV, b: TV, fixed: TV) -> TV:
        """`fixed` where r != 0 and r, b have opposite signs (Python semantics), else `q`."""
        lb = self.lb
        zero = lb.const(0, r.dtype)
        nonzero = lb.elementwise("tile.cmp", [r, zero], dtype=i1, hint="cmp", predicate="ne")
        rneg = lb.elementwise("tile.cmp", [r, zero], dtype=i1, hint="cmp", predicate="lt")
        bneg = lb.elementwise("tile.cmp", [b, zero], dtype=i1, hint="cmp", predicate="lt")
        differ = lb.elementwise("tile.xor", [rneg, bneg], hint="xor")
        return lb.elementwise(
            "tile.where", [lb.elementwise("tile.and", [nonzero, differ], hint="and"), fixed, q], hint="where"
        )

    def op_floordiv(self, a: Any, b: Any) -> TV:
        ta, tb = self._pair(a, b)
        if ta.dtype.is_float:
            return self.lb.elementwise("tile.floor", [self.lb.elementwise("tile.div", [ta, tb])])
        q = self.lb.elementwise("tile.div", [ta, tb])
        r = self.lb.elementwise("tile.rem", [ta, tb])
        return self._floor_fix(q, r, tb, self.lb.elementwise("tile.sub", [q, self.lb.const(1, q.dtype)]))

    def op_remainder(self, a: Any, b: Any) -> TV:
        ta, tb = self._pair(a, b)
        r = self.lb.elementwise("tile.rem", [ta, tb])
        return self._floor_fix(r, r, tb, self.lb.elementwise("tile.add", [r, tb]))

    # -- memory, indices, reductions

    def op_load(self, name: str, index: Any) -> TV:
        value = self.kb.load(name, index)
        return self.lb.cast(value, compute_dtype(value.dtype), hint="wide")

    def op_store(self, name: str, index: Any, value: Any, mode: Any = None) -> None:
        if mode not in (None, "atomic_add"):
            raise UnsupportedError(unsupported_op(f"store mode {mode}"))
        self.kb.store(name, index, self.tv(value), atomic=mode == "atomic_add")

    def op_store_reduction(self, name: str, index: Any, value: Any) -> None:
        self.kb.store_reduction(name, index, value)

    def op_partial_accumulate(self, name: str, reduction_type: str, value: Any, extra_meta: Any = None) -> None:
        self.kb.partial_accumulate(name, reduction_type, self.tv(value))

    def op_reduction(self, dtype: torch.dtype, src_dtype: torch.dtype, reduction_type: str, value: Any) -> Any:
        if isinstance(value, tuple):
            raise UnsupportedError(SPLIT_REDUCTION_PARTIALS)
        outs = self.lb.reduce(reduction_type, self.tv(value), compute_dtype(to_tilec(dtype)))
        self.kb.note_reduction(reduction_type)
        return outs if len(outs) > 1 else outs[0]

    def op_index_expr(self, expr: Any, dtype: torch.dtype) -> TV:
        return self.kb.index(expr, to_tilec(dtype))

    op_value_expr = op_index_expr

    def op_masked(self, mask: Any, body: Callable[[], Any], other: Any) -> TV:
        cond = self._bool(mask)
        self.lb.conditions.append(cond)
        try:
            result = body()
        finally:
            self.lb.conditions.pop()
        if not isinstance(result, TV):
            raise UnsupportedError(MASKED_BODY)
        fill = self.tv(other, result.dtype)
        fill = self.lb.cast(fill, result.dtype)
        return self.lb.elementwise("tile.where", [cond, result, fill], hint="masked")

    def op_indirect_indexing(self, x: Any, size: Any, check: bool = True, wrap_neg: bool = True) -> Any:
        t = self.tv(x)
        if not t.dtype.is_int or t.dtype.is_bool:
            raise UnsupportedError(unsupported_op(f"indirect index of dtype {t.dtype}"))
        return self.kb.indirect(t, size, check, wrap_neg)

    def op_check_bounds(self, expr: Any, size: Any, lower: bool, upper: bool) -> None:
        self.kb.check_bounds(expr, size, lower, upper)

    # -- random numbers: the seed Inductor draws per graph, Philox at the element's linear index

    def op_load_seed(self, name: str, offset: Any) -> TV:
        return self.kb.load_seed(name, offset)

    def op_rand(self, seed: Any, offset: Any) -> TV:
        return self.kb.rand(self.tv(seed), self.tv(offset), "uniform")

    def op_randn(self, seed: Any, offset: Any) -> TV:
        return self.kb.rand(self.tv(seed), self.tv(offset), "normal")

    def op_randint64(self, *args: Any) -> Any:
        raise UnsupportedError(RANDOM_INTEGERS)

    def op_scan(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(SCAN)

    def op_sort(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(SORT)
