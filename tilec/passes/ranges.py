"""Integer range analysis: the smallest and largest value an integer scalar or tile can hold.

Enough to decide masks like `rindex < rnumel` once the plan has bound the block sizes, and to
prove a loop's trip count. Ranges come from constants, `arange`, program ids (bounded by the grid;
where the grid is symbolic, by what an i32 holds),
loop induction variables, and +, -, * (by constants), division and remainder by positive constants.
"""

from __future__ import annotations

from tilec.ir.core import BlockArg, Kernel, Value, defining_op
from tilec.ir.expr import CallExpr, Sym, evaluate, substitute
from tilec.ir.ops import (
    ArangeOp,
    AssumeMultipleOp,
    BinaryOp,
    BroadcastOp,
    ConvertLayoutOp,
    ExpandDimsOp,
    ForOp,
    NumProgramsOp,
    ProgramIdOp,
    ReshapeOp,
)
from tilec.passes.rewrite import const_value

Range = tuple[int, int]
I32_MAX = 2**31 - 1


# ops that leave their operand's values as they are: broadcasts, added axes, layouts, reshapes
_SHAPE_OPS = (BroadcastOp, ExpandDimsOp, ConvertLayoutOp, ReshapeOp)


class RangeAnalysis:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.memo: dict[int, Range | None] = {}

    def grid(self, axis: int) -> int | None:
        grid = self.kernel.launch.grid
        if axis >= len(grid):
            return 1
        try:
            return evaluate(grid[axis], self.kernel.bound_constexprs())
        except KeyError:
            return None

    def __call__(self, v: Value) -> Range | None:
        key = id(v)
        if key not in self.memo:
            self.memo[key] = None  # cycles (loop-carried values) stay unknown
            self.memo[key] = self.compute(v)
        return self.memo[key]

    def compute(self, v: Value) -> Range | None:
        c = const_value(v)
        if isinstance(c, int) and not isinstance(c, bool):
            return (c, c)
        if isinstance(v, BlockArg):
            loop = v.block.parent_op
            if isinstance(loop, ForOp) and v.index == 0:
                return self.induction(loop)
            return None
        op = defining_op(v)
        if op is None:
            return None
        if isinstance(op, ArangeOp):
            start, end = op.attr("start"), op.attr("end")
            env = self.kernel.bound_constexprs()
            try:
                return (evaluate(start, env), evaluate(end, env) - 1)
            except KeyError:
                return None
        if isinstance(op, ProgramIdOp) and not isinstance(op, NumProgramsOp):
            g = self.grid(op.attr("axis"))
            return (0, g - 1) if g is not None else (0, I32_MAX)  # a symbolic grid: some program id
        if isinstance(op, (*_SHAPE_OPS, AssumeMultipleOp)):
            return self(op.src)
        if isinstance(op, BinaryOp):
            a, b = self(op.lhs), self(op.rhs)
            if a is None or b is None:
                return None
            return _binary(op.name, a, b)
        return None

    def below(self, v: Value, bound: Value) -> bool:
        """Whether every element of `v` is less than `bound`, from how `v` is made: a loop's
        induction variable is below the loop's upper bound, and adding what is at most 0 keeps it
        there (a band of one row: `xoffset + arange(0, 1) < band_end` in a loop over
        `[band_start, band_end)`), whatever the bound's value; and a program id is below the
        size parameter its grid axis counts (a symbolic number of rows one a program:
        `pid + arange(0, 1) < xnumel` on a grid of `cdiv(xnumel, 1)`)."""
        v = _through_shape(v)
        if isinstance(defining_op(v), ProgramIdOp) and not isinstance(defining_op(v), NumProgramsOp):
            return self.grid_is(defining_op(v).attr("axis"), _through_shape(bound))  # type: ignore[union-attr]
        if isinstance(v, BlockArg):
            loop = v.block.parent_op
            step = const_value(loop.step) if isinstance(loop, ForOp) else None
            return (
                isinstance(loop, ForOp)
                and v.index == 0
                and _through_shape(loop.upper) is _through_shape(bound)
                and isinstance(step, int)
                and step > 0
            )
        op = defining_op(v)
        if isinstance(op, BinaryOp) and op.name == "tile.add":
            for x, k in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
                r = self(k)
                if r is not None and r[1] <= 0 and self.below(x, bound):
                    return True
        return False

    def grid_is(self, axis: int, bound: Value) -> bool:
        """Whether the grid's `axis` is exactly `bound`, a size parameter of the kernel (its
        extent `xnumel`, or `cdiv(xnumel, 1)` with the block sizes bound)."""
        grid = self.kernel.launch.grid
        if axis >= len(grid) or not isinstance(bound, BlockArg) or bound.block is not self.kernel.body:
            return False
        extent = substitute(grid[axis], self.kernel.bound_constexprs())
        if isinstance(extent, CallExpr) and extent.fn == "cdiv" and extent.args[1] == 1:
            extent = extent.args[0]
        return extent == Sym(bound.name_hint or "")

    def induction(self, loop: ForOp) -> Range | None:
        lo, hi, step = self(loop.lower), self(loop.upper), const_value(loop.step)
        if lo is None or hi is None or not isinstance(step, int) or step <= 0:
            return None
        if lo[0] == lo[1] and hi[0] == hi[1]:
            n = trip_count_of(lo[0], hi[0], step)
            return (lo[0], lo[0] + (n - 1) * step) if n > 0 else None
        return (lo[0], hi[1] - 1)


def _through_shape(v: Value) -> Value:
    """`v` before broadcasts, added axes, layout conversions and reshapes (the same values)."""
    op = defining_op(v)
    while isinstance(op, _SHAPE_OPS):
        v = op.src
        op = defining_op(v)
    return v


def trip_count_of(lower: int, upper: int, step: int) -> int:
    return max(0, -(-(upper - lower) // step))


def _binary(name: str, a: Range, b: Range) -> Range | None:
    if name == "tile.add":
        return (a[0] + b[0], a[1] + b[1])
    if name == "tile.sub":
        return (a[0] - b[1], a[1] - b[0])
    if name == "tile.mul":
        products = [x * y for x in a for y in b]
        return (min(products), max(products))
    if name == "tile.div" and b[0] == b[1] and b[0] > 0 and a[0] >= 0:
        return (a[0] // b[0], a[1] // b[0])
    if name == "tile.rem" and b[0] == b[1] and b[0] > 0 and a[0] >= 0:
        return a if a[1] < b[0] else (0, b[0] - 1)
    if name == "tile.minimum":
        return (min(a[0], b[0]), min(a[1], b[1]))
    if name == "tile.maximum":
        return (max(a[0], b[0]), max(a[1], b[1]))
    return None


def trip_count_range(loop: ForOp, ranges: RangeAnalysis) -> Range | None:
    """The fewest and the most times the loop can run, from the ranges of its bounds (a constant
    step)."""
    lo, hi, step = ranges(loop.lower), ranges(loop.upper), const_value(loop.step)
    if lo is None or hi is None or not isinstance(step, int) or step <= 0:
        return None
    return trip_count_of(lo[1], hi[0], step), trip_count_of(lo[0], hi[1], step)


def max_trip_count(loop: ForOp, ranges: RangeAnalysis) -> int | None:
    """The most times the loop can run, from the ranges of its bounds (a constant step)."""
    trips = trip_count_range(loop, ranges)
    return None if trips is None else trips[1]


def trip_count(loop: ForOp) -> int | None:
    """The loop's trip count if its bounds and step are known constants."""
    lo, hi, step = const_value(loop.lower), const_value(loop.upper), const_value(loop.step)
    if isinstance(lo, int) and isinstance(hi, int) and isinstance(step, int) and step > 0:
        return trip_count_of(lo, hi, step)
    return None
