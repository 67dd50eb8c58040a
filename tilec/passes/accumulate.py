"""accumulate: a loop's running sum (or maximum, minimum) is kept as a whole tile, reduced once after the loop.

In the logical form each chunk of a reduction loop is reduced to one value per row, and the
partial is added to the carried total. Along an axis that a program's warps share (a column
reduction's rows: the column layout spreads the warps down them), every chunk's reduction goes
through shared memory and a barrier. Carrying the chunk-shaped tile instead, with each element's
running sum in the thread that loads it, leaves one cross-thread reduction per loop, after it.
This is how stock Inductor's reduction loops accumulate. The sums are regrouped (per lane, then
across lanes, rather than per chunk, then across chunks): equal up to rounding, not bit-equal.

An unrolled loop — a straight-line chain of adds, each adding the next chunk's sum to the one
before (`cluster-rows` unrolls a CTA's chunks so, before the exchange) — is carried the same way:
each chunk's tile adds to the running tile where its sum was added, so each chunk's values die
there as before, and one reduction follows the last.

A loop's running maximum or minimum (softmax's first loop over a row of symbolic length, where
Inductor does not use its online form) is carried the same way, each lane's `maximum` of the
chunks (masked elements -inf), one `max` reduction after the loop: the same value, bit for bit.

A banded kernel's column sums (a norm's weight gradients: its loop over a program's rows adds
each row block's sum over its rows, expanded back to a row, to a carried row of sums) are carried
the same way: the row block's tile, each element's sum over the rows its thread loads, one
reduction over the block's rows after the band. Where the plan stacks warps over the block's rows
(two rows a block over 8 warps: two warps down, four across), every row block's column sums went
through shared memory and a barrier; LayerNorm's backward has two of them. The band loop must add
to the row directly: the one-chunk loop the frontend wraps a row in inlined (`canonicalize`)
first.

Only sums, maxima and minima of float tiles, in loops where the carried value's one use is that
combine (chains: sums alone; every link's sum and partial total used once, every chunk a tile of
one type). Which loops
(`where`): "warps" (the default), those whose chunk sum crosses warps: a column reduction's, and
a row's when the plan spreads one row over several warps (one row a program over 16 or 32 warps:
the Triton plan for rows of 32K and more, where the per-chunk barrier cost RMSNorm a third of its
bandwidth on the H100, 98% of a copy with the tile carried, 76% without, 8192x65536), and a band
loop's column sums where they cross warps; "columns", only kernels that read columns; "bands", a
banded kernel's band loop alone; "all", every loop.

Before:
    %s = tile.for %r = ... iter_args(%acc = %zero) -> (tile<[16], f32, #slice<...>>) {
      %part = tile.reduce %v, %mask {kind = "sum", axis = 1} : tile<[16], f32, #slice<...>>
      %next = tile.add %acc, %part
      tile.yield %next
    }
After:
    %zero_2d = tile.full {value = 0.0} : tile<[16, 256], f32, #blocked>
    %s_2d = tile.for %r = ... iter_args(%acc = %zero_2d) -> (tile<[16, 256], f32, #blocked>) {
      %kept = tile.where %mask, %v, %c0 : tile<[16, 256], f32, #blocked>
      %next = tile.add %acc, %kept
      tile.yield %next
    }
    %s = tile.reduce %s_2d {kind = "sum", axis = 1} : tile<[16], f32, #slice<...>>

A band loop's column sum, before:
    %c = tile.for %xoffset = ... iter_args(%acc = %zero) -> (tile<[1, 2048], f32, #blocked>) {
      %part = tile.reduce %v, %mask {kind = "sum", axis = 0} : tile<[2048], f32, #slice<dim = 0, ...>>
      %row = tile.expand_dims %part {axis = 0} : tile<[1, 2048], f32, #blocked>
      %next = tile.add %acc, %row
      tile.yield %next
    }
After:
    %zero_2d = tile.full {value = 0.0} : tile<[2, 2048], f32, #blocked>
    %c_2d = tile.for %xoffset = ... iter_args(%acc = %zero_2d) -> (tile<[2, 2048], f32, #blocked>) {
      %kept = tile.where %mask, %v, %c0 : tile<[2, 2048], f32, #blocked>
      %next = tile.add %acc, %kept
      tile.yield %next
    }
    %total = tile.reduce %c_2d {kind = "sum", axis = 0} : tile<[2048], f32, #slice<dim = 0, ...>>
    %c = tile.expand_dims %total {axis = 0} : tile<[1, 2048], f32, #blocked>

A chain, before:
    %p0 = tile.reduce %v0, %m0 {kind = "sum", axis = 1}
    %s0 = tile.add %init, %p0
    %p1 = tile.reduce %v1, %m1 {kind = "sum", axis = 1}
    %s1 = tile.add %s0, %p1
After:
    %kept = tile.where %m0, %v0, %c0
    %kept_1 = tile.where %m1, %v1, %c0
    %lanes_sum = tile.add %kept, %kept_1
    %total = tile.reduce %lanes_sum {kind = "sum", axis = 1}
    %s1 = tile.add %init, %total                     (only where %init is not a zero)
"""

from __future__ import annotations

import math
from typing import Literal

from tilec.ir.builder import Builder
from tilec.ir.core import Kernel, Module, Operation, Value, defining_op, replace_uses, use_counts
from tilec.ir.layouts import BlockedLayout
from tilec.ir.ops import ElementwiseOp, ExpandDimsOp, ForOp, ReduceOp, ReductionOp, yielded_values
from tilec.ir.types import TileType
from tilec.passes.base import Pass, register
from tilec.passes.plan import band_loop, reads_columns
from tilec.passes.rewrite import const_value


def warps_along(red: ReductionOp) -> int:
    """How many warps share the reduced axis of `red`'s operand (1 where its layout is not blocked)."""
    t = red.src.type
    layout = t.layout if isinstance(t, TileType) else None
    if not isinstance(layout, BlockedLayout):
        return 1
    return layout.warps_per_cta[red.attr("axis")]


# a running reduction's kind -> the op that folds a chunk's value into it, its identity and the
# identity's name
COMBINES = {
    "sum": ("tile.add", 0.0, "c0"),
    "max": ("tile.maximum", -math.inf, "lowest"),
    "min": ("tile.minimum", math.inf, "highest"),
}
NOUNS = {"sum": "sum", "max": "maximum", "min": "minimum"}
FOLDS = {name: kind for kind, (name, _, _) in COMBINES.items()}  # the folding op -> its reduction's kind


def running_reduction(loop: ForOp, i: int, counts: dict[int, int]) -> ReduceOp | str:
    """The chunk reduction that carried value `i` of `loop` folds up (a sum, maximum or minimum,
    along the chunk's last axis, in the carried dtype, each value on the way used once), or why it
    is not one."""
    acc = loop.iter_args[i]
    t = acc.type
    if not isinstance(t, TileType) or not t.dtype.is_float:
        return "the carried value is not a float tile"
    nxt = yielded_values(loop.body)[i]
    fold = defining_op(nxt)
    if not isinstance(fold, ElementwiseOp) or fold.name not in FOLDS or fold.parent is not loop.body:
        return "the carried value is not updated by an add, a maximum or a minimum"
    kind = FOLDS[fold.name]
    a, b = fold.operands
    part = b if a is acc else a if b is acc else None
    if part is None or counts.get(id(acc), 0) != 1 or counts.get(id(nxt), 0) != 1:
        return "the carried value has other uses"
    red = defining_op(part)
    if not isinstance(red, ReduceOp) or red.attr("kind") != kind or red.parent is not loop.body:
        return f"what the {NOUNS[kind]} takes is not a {NOUNS[kind]} of the chunk"
    if counts.get(id(part), 0) != 1:
        return f"the chunk's {NOUNS[kind]} has other uses"
    src = red.src.type
    if not isinstance(src, TileType) or src.dtype != t.dtype or red.attr("axis") != src.rank - 1:
        return f"the chunk's {NOUNS[kind]} is not along the loop's axis in the carried dtype"
    return red


def accumulate(kernel: Kernel, loop: ForOp, i: int, red: ReduceOp) -> None:
    """Rewrites carried value `i` of `loop` (the running sum, maximum or minimum of `red`) as a
    chunk-shaped tile."""
    src = red.src.type
    assert isinstance(src, TileType)
    kind = red.attr("kind")
    name, identity, _ = COMBINES[kind]
    init, result = _carry_tile(loop, i, red, identity)
    red.erase()
    after = Builder.after(loop)
    total = after.op("tile.reduce", result, type=red.result.type, kind=kind, axis=src.rank - 1, name_hint="total")
    made = [defining_op(total)]
    if const_value(init) != identity:
        total = after.op(name, init, total, type=red.result.type, name_hint="total")
        made.append(defining_op(total))
    replace_uses(kernel.body, result, total, keep=made)


def running_column_sum(loop: ForOp, i: int, counts: dict[int, int]) -> tuple[ReduceOp, ExpandDimsOp] | str:
    """The column sum that carried value `i` of a band loop adds up — a [1, N] row to which each
    row block's sum over its rows (axis 0), expanded back to a row, is added, in the carried
    dtype, each value on the way used once — as the sum and its expand_dims; or why it is not one."""
    acc = loop.iter_args[i]
    t = acc.type
    if not isinstance(t, TileType) or not t.dtype.is_float or t.rank != 2 or t.shape[0] != 1:
        return "the carried value is not a row of float sums"
    nxt = yielded_values(loop.body)[i]
    fold = defining_op(nxt)
    if isinstance(fold, ForOp):
        return "the carried row goes through a loop over the row's chunks (a loop of one chunk: canonicalize first)"
    if not isinstance(fold, ElementwiseOp) or fold.name != "tile.add" or fold.parent is not loop.body:
        return "the carried row is not updated by an add"
    a, b = fold.operands
    part = b if a is acc else a if b is acc else None
    if part is None or counts.get(id(acc), 0) != 1 or counts.get(id(nxt), 0) != 1:
        return "the carried row has other uses"
    expand = defining_op(part)
    if not isinstance(expand, ExpandDimsOp) or expand.attr("axis") != 0 or expand.parent is not loop.body:
        return "what the row adds is not a row block's column sums"
    red = defining_op(expand.src)
    if (
        not isinstance(red, ReduceOp)
        or red.attr("kind") != "sum"
        or red.attr("axis") != 0
        or red.parent is not loop.body
    ):
        return "what the row adds is not a sum over the row block's rows"
    src = red.src.type
    if counts.get(id(part), 0) != 1 or counts.get(id(expand.src), 0) != 1:
        return "the row block's column sums have other uses"
    if not isinstance(src, TileType) or src.dtype != t.dtype or src.rank != 2 or src.shape[1] != t.shape[1]:
        return "the row block's column sums are not the carried row's shape and dtype"
    return red, expand


def accumulate_columns(
    kernel: Kernel, loop: ForOp, i: int, red: ReduceOp, expand: ExpandDimsOp, anchor: Operation
) -> Operation:
    """Rewrites carried value `i` of band loop `loop` (the column sums `red` adds up, row block by
    row block) as the row block's tile, reduced over its rows once after the loop, after `anchor`
    (the loop, or the last op an earlier sum's rewrite made there); returns the last op it made."""
    row_type = expand.result.type
    init, result = _carry_tile(loop, i, red, 0.0)
    expand.erase()
    red.erase()
    after = Builder.after(anchor)
    total = after.op("tile.reduce", result, type=red.result.type, kind="sum", axis=0, name_hint="total")
    row = after.op("tile.expand_dims", total, type=row_type, axis=0, name_hint="column_total")
    made = [defining_op(total), defining_op(row)]
    if const_value(init) != 0.0:
        row = after.op("tile.add", init, row, type=row_type, name_hint="column_total")
        made.append(defining_op(row))
    replace_uses(kernel.body, result, row, keep=made)
    last = made[-1]
    assert last is not None
    return last


def _carry_tile(loop: ForOp, i: int, red: ReduceOp, identity: float) -> tuple[Value, Value]:
    """Carried value `i` of `loop` made the tile `red` reduces: started at `identity` (a tile of
    it before the loop), each iteration folding in that tile (masked to the identity) where it
    folded in `red`'s result. Returns the value the loop started from and the loop's result,
    whose uses are still the reduced value's (the caller reduces it after the loop)."""
    src = red.src.type
    assert isinstance(src, TileType)
    init = loop.inits[i]
    start = Builder.before(loop).op("tile.full", type=src, value=identity, name_hint=f"{init.name_hint or 'acc'}_2d")
    loop.inits = [start if k == i else v for k, v in enumerate(loop.inits)]
    acc, result = loop.iter_args[i], loop.results[i]
    acc.type = src
    result.type = src
    fold = defining_op(yielded_values(loop.body)[i])
    assert fold is not None
    kept = _kept(red)
    fold.operands = [acc, kept] if fold.operands[0] is acc else [kept, acc]
    fold.result.type = src
    return init, result


def _kept(red: ReduceOp) -> Value:
    """The chunk tile `red` reduces, its kind's identity (0 for a sum) where its mask is off."""
    if red.mask is None:
        return red.src
    src = red.src.type
    assert isinstance(src, TileType)
    b = Builder.before(red)
    _, identity, hint = COMBINES[red.attr("kind")]
    fill = b.constant(identity, src.dtype, name_hint=hint)
    return b.op("tile.where", red.mask, red.src, fill, type=src, name_hint="kept")


def _chunk_sum(v: Value, row: object, block: object, counts: dict[int, int]) -> ReduceOp | None:
    """The chunk sum `v` is, where a chain may carry it: a sum along its tile's last axis in the
    row's type, in `block`, used once."""
    red = defining_op(v)
    if not isinstance(red, ReduceOp) or red.attr("kind") != "sum" or red.parent is not block:
        return None
    src = red.src.type
    if not isinstance(src, TileType) or not src.dtype.is_float or red.attr("axis") != src.rank - 1:
        return None
    if red.result.type != row or src.dtype != getattr(row, "dtype", None) or counts.get(id(v), 0) != 1:
        return None
    return red


def _chain(last: ElementwiseOp, counts: dict[int, int]) -> tuple[Value, list[tuple[ReduceOp, ElementwiseOp]]] | None:
    """The straight-line chain of chunk sums that ends at the add `last`, first chunk first, and
    the total it starts from: each add adds one chunk's sum to the partial total before it (an
    unrolled loop). None where fewer than two chunks chain."""
    row = last.result.type
    links: list[tuple[ReduceOp, ElementwiseOp]] = []
    add: Operation | None = last
    start: Value | None = None
    while isinstance(add, ElementwiseOp) and add.name == "tile.add" and add.parent is last.parent:
        a, b = add.operands
        red = _chunk_sum(b, row, last.parent, counts)
        before = a
        if red is None:
            red, before = _chunk_sum(a, row, last.parent, counts), b
        if red is None or (links and red.src.type != links[-1][0].src.type):
            break
        links.append((red, add))
        start = before
        add = defining_op(before)
        if counts.get(id(before), 0) != 1:
            break
    if len(links) < 2 or start is None:
        return None
    links.reverse()
    return start, links


def accumulate_chain(kernel: Kernel, start: Value, links: list[tuple[ReduceOp, ElementwiseOp]]) -> None:
    """Rewrites an unrolled chain of chunk sums as one running chunk-shaped tile, reduced after
    its last add; `start` is the total the chain adds to."""
    src = links[0][0].src.type
    assert isinstance(src, TileType)
    last = links[-1][1]
    running = _kept(links[0][0])
    for red, add in links[1:]:
        kept = _kept(red)
        running = Builder.before(add).op("tile.add", running, kept, type=src, name_hint="lanes_sum")
    b = Builder.before(last)
    row = last.result.type
    total = b.op("tile.reduce", running, type=row, kind="sum", axis=src.rank - 1, name_hint="total")
    if const_value(start) != 0:
        total = b.op("tile.add", start, total, type=row, name_hint="total")
    replace_uses(kernel.body, last.result, total)
    for red, add in reversed(links):
        add.erase()
        red.erase()


@register
class Accumulate(Pass):
    """Running sums (maxima, minima) of reduction loops carried as whole tiles, reduced once after
    the loop."""

    name = "accumulate"
    unchanged = "no loop or unrolled chain carries a sum, maximum or minimum of chunk reductions"
    where: Literal["columns", "warps", "bands", "all"] = "warps"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            columns = reads_columns(kernel)
            if self.where == "columns" and not columns:
                self.remark(kernel, "it reads rows (where=columns)")
                continue
            band = band_loop(kernel)
            if self.where == "bands" and band is None:
                self.remark(kernel, "it has no band loop (where=bands)")
                continue
            changed, why = self.column_sums(kernel, band) if band is not None else (False, [])
            if self.where == "bands":
                if why and not changed:
                    self.remark(kernel, "; ".join(why))
                continue
            for loop in [op for op in kernel.walk() if isinstance(op, ForOp)]:
                for i in range(len(loop.inits)):
                    found = running_reduction(loop, i, use_counts(kernel.body))
                    if isinstance(found, ReduceOp) and self.where == "warps" and not columns and warps_along(found) < 2:
                        found = f"the chunk's {NOUNS[found.attr('kind')]} stays within a warp: no barrier to save"
                    if isinstance(found, str):
                        why.append(f"%{loop.iter_args[i].name_hint}: {found}")
                    else:
                        accumulate(kernel, loop, i, found)
                        changed = True
            # unrolled chains, each found from its last add
            seen: set[int] = set()
            adds = [op for op in kernel.walk() if isinstance(op, ElementwiseOp) and op.name == "tile.add"]
            for last in reversed(adds):
                if id(last) in seen:
                    continue
                chain = _chain(last, use_counts(kernel.body))
                if chain is None:
                    continue
                start, links = chain
                seen.update(id(add) for _, add in links)
                if self.where == "warps" and not columns and warps_along(links[0][0]) < 2:
                    why.append(f"%{last.result.name_hint}: the chunks' sums stay within a warp: no barrier to save")
                    continue
                accumulate_chain(kernel, start, links)
                changed = True
            if why and not changed:
                self.remark(kernel, "; ".join(why))

    def column_sums(self, kernel: Kernel, band: ForOp) -> tuple[bool, list[str]]:
        """Carries `band`'s column sums as row block tiles where they are (and, unless `where` is
        "all", cross warps). Whether any was, and why each carried row it left stays."""
        why: list[str] = []
        changed = False
        anchor: Operation = band
        for i in range(len(band.inits)):
            found = running_column_sum(band, i, use_counts(kernel.body))
            if not isinstance(found, str) and self.where != "all" and warps_along(found[0]) < 2:
                found = "the row block's column sums stay within a warp: no barrier to save"
            if isinstance(found, str):
                why.append(f"%{band.iter_args[i].name_hint}: {found}")
            else:
                anchor = accumulate_columns(kernel, band, i, *found, anchor)
                changed = True
        return changed, why
