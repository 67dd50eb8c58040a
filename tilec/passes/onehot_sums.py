"""onehot-sums: a row's sum of a one-hot row computed from the row's index, not by a loop over it.

The cross-entropy's backward sums, over each row of logits, its one-hot gradient: a value that
depends on the column only through whether the column equals the row's label
(`where(col == label, -scale, 0)`, `nll_loss_backward`'s scatter). Inductor computes that sum in
a loop over the whole row that loads nothing of it: on rows of 50257 a chunk of integer compares,
selects and adds per 8192 columns, seven chunks a row of pure arithmetic beside the six the
logits take, and a load-free loop that keeps `align-rows` from narrowing the other loop's first
and last pieces (docs/passes.md). For such a summand f(col == u) — u one value per row — the sum
over the columns 0 .. n-1 is f(true) + (n - 1) * f(false) where 0 <= u < n (one column matches)
and n * f(false) where u is outside them (a label of -100, ignored): this pass computes that once a
row, from the row's values, and drops the loop's sum (and the loop, where the sum was all it
carried). With f(false) = 0, as the gradient has it, the result is f(true) or 0 exactly; else
equal up to rounding (the loop added n copies one at a time). NaN and infinities in the row's
values give what the loop gave (0 * inf is NaN either way).

It acts on the logical form (before `plan`), on a loop `for c = 0 to n step RBLOCK` whose carried
sum adds, each chunk, the masked `tile.reduce {kind = "sum"}` of a tile that depends on the
columns only through one `tile.cmp {predicate = "eq"}` of the column index (`arange(RBLOCK) + c`,
widened by casts, broadcast) with a value that does not vary along the row; every other operand on
the way (casts, selects, arithmetic) does not vary along the row either, and the reduction's mask
is the column mask `col < n` and'ed with row masks. The remark says which condition a loop failed.

Before:
    %sum = tile.for %c = %c0 to %rnumel step %rblock iter_args(%acc = %zero) {
      %rindex = tile.expand_dims (tile.add %rrange, %c) {axis = 0}
      %rmask = tile.cmp %rindex, %rnumel {predicate = "lt"}
      %hit = tile.cmp (tile.broadcast %label), (tile.broadcast (tile.cast %rindex)) {predicate = "eq"}
      %v = tile.mul (tile.where %hit, %cm1, %c0f), (tile.broadcast %scale)
      %part = tile.reduce %v, (tile.and (tile.broadcast %xmask), (tile.broadcast %rmask)) {kind = "sum", axis = 1}
      tile.yield (tile.add %acc, %part) }
After (computed once a row, before where the loop was):
    %hit_t = tile.cmp %label, %label {predicate = "eq"}      (true in every row)
    %hit_f = tile.cmp %label, %label {predicate = "ne"}      (false)
    %v_t = tile.mul (tile.where %hit_t, %cm1, %c0f), %scale   (f(true), one value a row)
    %v_f = tile.mul (tile.where %hit_f, %cm1, %c0f), %scale   (f(false))
    %inside = (%label >= 0) & (%label < %rnumel)
    %row = tile.where %inside, %v_t + %v_f * (n - 1), %v_f * n
    %sum = tile.reduce %row, %xmask {kind = "sum", axis = 1}
"""

from __future__ import annotations

from tilec.ir.builder import Builder
from tilec.ir.core import BlockArg, Kernel, Module, Operation, Value, defining_op, replace_uses, use_counts
from tilec.ir.dtypes import DType, i1
from tilec.ir.expr import Sym
from tilec.ir.ops import (
    ArangeOp,
    BroadcastOp,
    CastOp,
    ElementwiseOp,
    ExpandDimsOp,
    ForOp,
    ReduceOp,
    WhereOp,
)
from tilec.ir.types import TileType, Type
from tilec.passes.accumulate import running_reduction
from tilec.passes.base import Pass, register
from tilec.passes.dce import dce_kernel
from tilec.passes.rewrite import const_value, same_value

# ops through which a value keeps being one value a row (or the one-hot's function of the match)
PURE_MAPS = (ElementwiseOp, WhereOp, CastOp, BroadcastOp)


class _Loop:
    """What a loop over a row in chunks gives the analysis: its induction variable, the row
    length it runs to and which values vary along the row."""

    def __init__(self, loop: ForOp) -> None:
        self.loop = loop
        self.iv = loop.induction_var
        self.upper = loop.upper
        self._uniform: dict[int, bool] = {}

    def inside(self, v: Value) -> bool:
        """Whether `v` is defined in the loop's body (or is one of its arguments)."""
        block = v.block if isinstance(v, BlockArg) else getattr(defining_op(v), "parent", None)
        while block is not None:
            if block is self.loop.body:
                return True
            owner = block.parent_op
            block = owner.parent if owner is not None else None
        return False

    def uniform(self, v: Value) -> bool:
        """Whether `v` takes one value along the row: defined before the loop without a dimension
        along it (a scalar, or a tile whose dimensions are all the rows' or 1), or computed in the
        loop by pure maps from such values."""
        key = id(v)
        if key not in self._uniform:
            self._uniform[key] = False  # cycles (carried values) are not uniform
            self._uniform[key] = self._is_uniform(v)
        return self._uniform[key]

    def _is_uniform(self, v: Value) -> bool:
        if not self.inside(v):
            t = v.type
            return not isinstance(t, TileType) or all(d != Sym("RBLOCK") for d in t.shape)
        op = defining_op(v)
        if op is None or not isinstance(op, PURE_MAPS) or op.regions:
            return False  # the induction variable, a carried value, a load, a reduction
        return all(self.uniform(o) for o in op.operands)

    def column(self, v: Value) -> bool:
        """Whether `v` is the loop's column index (`arange(RBLOCK) + c`, as a [1, RBLOCK] row),
        through broadcasts and casts that widen integers."""
        op = defining_op(v)
        while isinstance(op, (BroadcastOp, CastOp)):
            if isinstance(op, CastOp):
                src, dst = _dtype(op.src), _dtype(op.result)
                if src is None or dst is None or not (src.is_int and dst.is_int and dst.bits >= src.bits):
                    return False
            op = defining_op(op.operands[0])
        if not isinstance(op, ExpandDimsOp) or op.attr("axis") != 0:
            return False
        add = defining_op(op.src)
        if not isinstance(add, ElementwiseOp) or add.name != "tile.add":
            return False
        a, b = add.operands
        rng = a if b is self.iv else b if a is self.iv else None
        arange = defining_op(rng) if rng is not None else None
        return isinstance(arange, ArangeOp) and arange.attr("start") == 0 and arange.attr("end") == Sym("RBLOCK")


def _dtype(v: Value) -> DType | None:
    """The element dtype of a tile or a scalar (None for a pointer or a buffer)."""
    t = v.type
    return t.dtype if isinstance(t, TileType) else t if isinstance(t, DType) else None


def _row_masks(mask: Value, lp: _Loop) -> list[Value] | str:
    """The mask's row factors (values uniform along the row), where its other factor is the column
    mask `col < n` (n the loop's bound); or why the mask is not of that form."""
    rows: list[Value] = []
    column = False
    todo = [mask]
    while todo:
        m = todo.pop()
        op = defining_op(m)
        if isinstance(op, ElementwiseOp) and op.name == "tile.and":
            todo.extend(op.operands)
            continue
        if lp.uniform(m):
            rows.append(m)
            continue
        while isinstance(op, BroadcastOp):
            op = defining_op(op.src)
        if (
            isinstance(op, ElementwiseOp)
            and op.name == "tile.cmp"
            and op.attr("predicate") == "lt"
            and lp.column(op.operands[0])
            and same_value(op.operands[1], lp.upper)
        ):
            column = True
            continue
        return "its reduction's mask is not the column mask and row masks"
    return rows if column else "its reduction's mask has no column mask (col < the loop's bound)"


def _one_hot(v: Value, lp: _Loop) -> tuple[list[Operation], Operation, Value] | str:
    """The ops from the match to `v` (first first), the match (`col == u`), and u; or why `v`
    varies along the row otherwise."""
    path: list[Operation] = []
    hits: list[Operation] = []
    seen: set[int] = set()

    def walk(x: Value) -> bool:
        op = defining_op(x)
        if op is None or not lp.inside(x):
            return False
        if id(op) in seen:
            return True
        seen.add(id(op))
        if isinstance(op, ElementwiseOp) and op.name == "tile.cmp" and op.attr("predicate") == "eq":
            a, b = op.operands
            if (lp.column(a) and lp.uniform(b)) or (lp.column(b) and lp.uniform(a)):
                hits.append(op)
                return True
        if not isinstance(op, PURE_MAPS) or op.regions:
            return False
        for o in op.operands:
            if not lp.uniform(o) and not walk(o):
                return False
        path.append(op)
        return True

    if not walk(v):
        return "its summand varies along the row other than by one match of the column with a row's value"
    if len(hits) != 1:
        return f"its summand compares the column {len(hits)} times"
    (hit,) = hits
    a, b = hit.operands
    return path, hit, b if lp.column(a) else a


def _narrow(v: Value, lp: _Loop, b: Builder, memo: dict[int, Value]) -> Value:
    """`v` (uniform along the row) as one value a row, computed before the loop: a broadcast's
    source, a value from before the loop as it is, a map in the loop cloned on narrowed operands."""
    if not lp.inside(v):
        return v
    if id(v) in memo:
        return memo[id(v)]
    op = defining_op(v)
    assert op is not None
    if isinstance(op, BroadcastOp):
        out = _narrow(op.src, lp, b, memo)
    else:
        operands = [_narrow(o, lp, b, memo) for o in op.operands]
        out = b.op(op.name, *operands, type=_row_type(v, operands), name_hint=v.name_hint, **op.attributes)
    memo[id(v)] = out
    return out


def _row_type(v: Value, operands: list[Value]) -> Type:
    """`v`'s type with one column (a scalar where every operand is one)."""
    t = v.type
    if not isinstance(t, TileType):
        return t
    shaped = [o.type for o in operands if isinstance(o.type, TileType)]
    if not shaped:
        return t.dtype
    return t.with_(shape=shaped[0].shape)


def _running_sum(loop: ForOp, i: int, counts: dict[int, int]) -> ReduceOp | None:
    """The sum of a 2-D chunk along its row that carried value `i` adds up (accumulate's
    `running_reduction`), or None."""
    red = running_reduction(loop, i, counts)
    if isinstance(red, str) or red.attr("kind") != "sum":
        return None
    return red if isinstance(red.src.type, TileType) and red.src.type.rank == 2 else None


def _rewrite(kernel: Kernel, loop: ForOp, i: int, red: ReduceOp) -> str | None:
    """Replaces carried sum `i` of `loop` by its closed form, or says why it cannot."""
    lp = _Loop(loop)
    if const_value(loop.lower) != 0 or defining_op(loop.step) is None:
        return "the loop does not run over the row from column 0"
    if red.mask is None:
        return "its reduction is not masked to the row"
    rows = _row_masks(red.mask, lp)
    if isinstance(rows, str):
        return rows
    found = _one_hot(red.src, lp)
    if isinstance(found, str):
        return found
    path, hit, u = found
    b = Builder.before(loop)
    memo: dict[int, Value] = {}  # the loop's values uniform along the row, narrowed once
    un = _narrow(u, lp, b, memo)
    row_t = red.result.type
    assert isinstance(row_t, TileType)  # (a sum along the row of a 2-D chunk)
    if isinstance(un.type, DType):  # one value for every row: each row's
        un = b.op("tile.broadcast", un, type=TileType((*row_t.shape, 1), un.type), name_hint=un.name_hint)
    ut = un.type
    assert isinstance(ut, TileType) and ut.dtype.is_int  # (compared with the integer column)
    bool_t = ut.with_(dtype=i1)
    values: list[Value] = []
    for predicate in ("eq", "ne"):  # the match true in every row, then false
        hit_on = {id(hit.result): b.op("tile.cmp", un, un, type=bool_t, predicate=predicate, name_hint="hit")}
        for op in path:
            operands = [hit_on[id(o)] if id(o) in hit_on else _narrow(o, lp, b, memo) for o in op.operands]
            hit_on[id(op.result)] = b.op(
                op.name, *operands, type=_row_type(op.result, operands), name_hint=op.result.name_hint, **op.attributes
            )
        values.append(hit_on[id(red.src)])
    on, off = values
    vt = on.type
    assert isinstance(vt, TileType)
    n = b.op("tile.cast", loop.upper, type=ut.dtype, name_hint="n")
    zero = b.constant(0, ut.dtype, name_hint="c0")
    inside = b.op(
        "tile.and",
        b.op("tile.cmp", un, zero, type=bool_t, predicate="ge", name_hint="from0"),
        b.op("tile.cmp", un, n, type=bool_t, predicate="lt", name_hint="below_n"),
        type=bool_t,
        name_hint="inside",
    )
    nf = b.op("tile.cast", loop.upper, type=vt.dtype, name_hint="count")
    others = b.op("tile.sub", nf, b.constant(1.0, vt.dtype, name_hint="c1"), type=vt.dtype, name_hint="others")
    with_hit = b.op(
        "tile.add", on, b.op("tile.mul", off, others, type=vt, name_hint="misses"), type=vt, name_hint="with_hit"
    )
    without = b.op("tile.mul", off, nf, type=vt, name_hint="without_hit")
    row = b.op("tile.where", inside, with_hit, without, type=vt, name_hint="onehot_row")
    mask = None
    for m in rows:
        nm = _narrow(m, lp, b, memo)
        if nm.type != bool_t.with_(shape=vt.shape):  # a scalar's, or a row mask of its own shape
            nm = b.op("tile.broadcast", nm, type=bool_t.with_(shape=vt.shape), name_hint="row_mask")
        mask = nm if mask is None else b.op("tile.and", mask, nm, type=nm.type, name_hint="row_mask")
    operands = [row] if mask is None else [row, mask]
    total = b.op("tile.reduce", *operands, type=row_t, kind="sum", axis=1, name_hint="onehot_sum")
    init = loop.inits[i]
    if const_value(init) != 0:
        total = b.op("tile.add", init, total, type=row_t, name_hint="onehot_sum")
    replace_uses(kernel.body, loop.results[i], total)
    return None


@register
class OnehotSums(Pass):
    """A loop's sum over a row of a one-hot function of the column computed once a row."""

    name = "onehot-sums"
    unchanged = "no loop over a row carries a sum"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            if "RBLOCK" not in kernel.constexprs:
                self.remark(kernel, "not a row reduction")
                continue
            if kernel.constexprs["RBLOCK"] is not None:
                self.remark(kernel, "its block sizes are bound already (the pass runs on the logical form)")
                continue
            why: list[str] = []
            changed = False
            for loop in [op for op in kernel.body.ops if isinstance(op, ForOp)]:
                for i in range(len(loop.inits)):
                    red = _running_sum(loop, i, use_counts(kernel.body))
                    if red is None:
                        continue  # another carried value: not this pass's
                    why_not = _rewrite(kernel, loop, i, red)
                    if why_not is None:
                        changed = True
                    else:
                        why.append(f"%{loop.iter_args[i].name_hint}: {why_not}")
            if changed:
                dce_kernel(kernel)
            elif why:
                self.remark(kernel, "; ".join(why))
