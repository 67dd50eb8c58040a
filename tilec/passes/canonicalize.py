"""canonicalize: local simplifications to a fixpoint.

- constants fold (integers wrap at their width; f32/f64 round; half precision is left alone);
- identities go: x + 0, x - 0, x * 1, x / 1; casts, broadcasts and layout conversions to the
  same type; integer x % c and x // c when x's range makes them trivial;
- comparisons decided by integer ranges become constants, as does `i + k < upper` for a loop's
  induction variable `i` below its upper bound and `k <= 0` (a band loop's row mask with one row a
  step); masks that are all true leave loads, stores and reductions;
- loops with zero or one iteration and conditionals on constants are inlined.

Before:
    %c0 = tile.constant {value = 0} : i32
    %c64 = tile.constant {value = 64} : i32
    %r = tile.for %i = %c0 to %c64 step %c64 iter_args(%a = %z) -> (f32) {
      %b = tile.add %a, %one : f32
      tile.yield %b
    }
After:
    %b = tile.add %z, %one : f32
"""

from __future__ import annotations

from tilec.ir.core import Module, Operation, Value
from tilec.ir.dtypes import DType, i1
from tilec.ir.ops import (
    BinaryOp,
    BitcastOp,
    BroadcastOp,
    CastOp,
    CmpOp,
    ConvertLayoutOp,
    ElementwiseOp,
    ForOp,
    IfOp,
    LoadOp,
    ReductionOp,
    ReshapeOp,
    StoreOp,
    WhereOp,
)
from tilec.ir.ops.common import elem_dtype
from tilec.ir.types import TileType
from tilec.passes.base import Pass, register
from tilec.passes.ranges import RangeAnalysis, trip_count
from tilec.passes.rewrite import (
    Pattern,
    Rewriter,
    apply_patterns,
    const_value,
    fold_binary,
    fold_cmp,
    make_const,
    round_float,
    wrap_int,
)


def _fold_elementwise(op: Operation, rw: Rewriter) -> bool:
    assert isinstance(op, ElementwiseOp)
    vals = [const_value(v) for v in op.operands]
    if any(v is None for v in vals):
        return False
    dt = op.operand_dtype
    out: int | float | bool | None = None
    if isinstance(op, CmpOp):
        out = int(fold_cmp(op.attr("predicate"), vals[0], vals[1]))  # type: ignore[arg-type]
    elif op.arity == 2:
        out = fold_binary(op.name, vals[0], vals[1], dt)  # type: ignore[arg-type]
    elif op.name == "tile.neg" and (dt.is_int or dt.name in ("f32", "f64")):
        out = wrap_int(-int(vals[0]), dt) if dt.is_int else -float(vals[0])  # type: ignore[arg-type]
    if out is None:
        return False
    res_dt = elem_dtype(op.result.type)
    assert res_dt is not None
    rw.replace(op, [make_const(rw.before(op), out, op.result, res_dt)])
    return True


def _is(v: Value, value: int | float) -> bool:
    c = const_value(v)
    return c is not None and not isinstance(c, bool) and c == value


def _identity(op: Operation, rw: Rewriter) -> bool:
    if not isinstance(op, BinaryOp):
        return False
    a, b = op.lhs, op.rhs
    dt = elem_dtype(op.result.type)
    assert dt is not None
    keep: Value | None = None
    if op.name == "tile.add":
        keep = a if _is(b, 0) else b if _is(a, 0) else None
    elif op.name == "tile.sub":
        keep = a if _is(b, 0) else None
    elif op.name == "tile.mul":
        keep = a if _is(b, 1) else b if _is(a, 1) else None
        if keep is None and dt.is_int and (_is(a, 0) or _is(b, 0)):
            rw.replace(op, [make_const(rw.before(op), 0, op.result)])
            return True
    elif op.name == "tile.div":
        keep = a if _is(b, 1) else None
    elif op.name == "tile.and" and dt.is_bool:
        keep = a if _is(b, 1) else b if _is(a, 1) else None
    elif op.name == "tile.or" and dt.is_bool:
        keep = a if _is(b, 0) else b if _is(a, 0) else None
    if keep is not None and keep.type == op.result.type:
        rw.replace(op, [keep])
        return True
    return False


def _int_by_range(op: Operation, rw: Rewriter, ranges: RangeAnalysis) -> bool:
    """x % c → x and x // c → 0 when 0 <= x < c; comparisons decided by ranges."""
    assert isinstance(op, ElementwiseOp)
    if isinstance(op, CmpOp):
        if op.attr("predicate") == "lt" and ranges.below(op.lhs, op.rhs):
            rw.replace(op, [make_const(rw.before(op), 1, op.result, i1)])
            return True
        a, b = ranges(op.lhs), ranges(op.rhs)
        if a is None or b is None:
            return False
        p = op.attr("predicate")
        lo_a, hi_a, lo_b, hi_b = a[0], a[1], b[0], b[1]
        decided = {
            "lt": (hi_a < lo_b, lo_a >= hi_b),
            "le": (hi_a <= lo_b, lo_a > hi_b),
            "gt": (lo_a > hi_b, hi_a <= lo_b),
            "ge": (lo_a >= hi_b, hi_a < lo_b),
        }.get(p)
        if decided is None or not any(decided):
            return False
        rw.replace(op, [make_const(rw.before(op), 1 if decided[0] else 0, op.result, i1)])
        return True
    if not isinstance(op, BinaryOp) or op.name not in ("tile.rem", "tile.div"):
        return False
    c = const_value(op.rhs)
    x = ranges(op.lhs)
    if not isinstance(c, int) or c <= 0 or x is None or x[0] < 0 or x[1] >= c:
        return False
    if op.name == "tile.rem" and op.lhs.type == op.result.type:
        rw.replace(op, [op.lhs])
        return True
    if op.name == "tile.div":
        rw.replace(op, [make_const(rw.before(op), 0, op.result)])
        return True
    return False


def _same_type(op: Operation, rw: Rewriter) -> bool:
    assert isinstance(op, (CastOp, BroadcastOp, ConvertLayoutOp, ReshapeOp))
    if op.src.type == op.result.type:
        rw.replace(op, [op.src])
        return True
    return False


def _fold_cast(op: Operation, rw: Rewriter) -> bool:
    assert isinstance(op, CastOp)
    if isinstance(op, BitcastOp):
        return False
    c = const_value(op.src)
    src, dst = elem_dtype(op.src.type), elem_dtype(op.result.type)
    if c is None or src is None or dst is None:
        return False
    out: int | float
    if dst.is_int:
        if src.is_float and (c != c or abs(c) == float("inf")):
            return False
        out = wrap_int(int(c), dst) if not dst.is_bool else int(c != 0)
    elif dst.name in ("f32", "f64", "f16", "bf16"):
        out = round_float(float(c), dst)
    else:
        return False
    rw.replace(op, [make_const(rw.before(op), out, op.result, dst)])
    return True


def _broadcast_const(op: Operation, rw: Rewriter) -> bool:
    assert isinstance(op, BroadcastOp)
    c = const_value(op.src)
    if c is None:
        return False
    rw.replace(op, [make_const(rw.before(op), c, op.result)])
    return True


def _where(op: Operation, rw: Rewriter) -> bool:
    assert isinstance(op, WhereOp)
    c = const_value(op.cond)
    if c is None:
        return False
    chosen = op.true_value if c else op.false_value
    if chosen.type == op.result.type:
        rw.replace(op, [chosen])
        return True
    if isinstance(op.result.type, TileType) and isinstance(chosen.type, DType):
        rw.replace(op, [rw.before(op).op("tile.broadcast", chosen, type=op.result.type)])
        return True
    return False


def _true_mask(op: Operation, rw: Rewriter) -> bool:
    """Drops a mask that is true everywhere (and the load's `other`, then unused)."""
    assert isinstance(op, (LoadOp, StoreOp, ReductionOp))
    if op.mask is None or const_value(op.mask) != 1:
        return False
    if isinstance(op, LoadOp):
        op.other = None
    op.mask = None
    rw.changed = True
    return True


def _loop(op: Operation, rw: Rewriter) -> bool:
    assert isinstance(op, ForOp)
    n = trip_count(op)
    if n == 0:
        rw.replace(op, list(op.inits))
        return True
    if n == 1:
        rw.inline(op, op.body, [op.lower, *op.inits])
        return True
    return False


def _if(op: Operation, rw: Rewriter) -> bool:
    assert isinstance(op, IfOp)
    c = const_value(op.cond)
    if c is None:
        return False
    rw.inline(op, op.regions[0] if c else op.regions[1], [])
    return True


def canonicalization_patterns() -> dict[type[Operation], list[Pattern]]:
    # Range facts change as ops fold, so each query starts afresh (cheap at these sizes).
    def by_range(op: Operation, rw: Rewriter) -> bool:
        return _int_by_range(op, rw, RangeAnalysis(rw.kernel))

    return {
        ElementwiseOp: [_fold_elementwise, _identity, by_range],
        CastOp: [_same_type, _fold_cast],
        BroadcastOp: [_same_type, _broadcast_const],
        ConvertLayoutOp: [_same_type],
        ReshapeOp: [_same_type],
        WhereOp: [_where],
        LoadOp: [_true_mask],
        StoreOp: [_true_mask],
        ReductionOp: [_true_mask],
        ForOp: [_loop],
        IfOp: [_if],
    }


@register
class Canonicalize(Pass):
    """Folds constants, removes identities, decides masks and trivial control flow."""

    name = "canonicalize"
    unchanged = "nothing to fold, inline or simplify"
    max_iterations: int = 32

    def run(self, module: Module) -> None:
        apply_patterns(module, canonicalization_patterns(), self.max_iterations)
