"""accumulate: a loop's running sum is kept as a whole tile, reduced once after the loop.

In the logical form each chunk of a reduction loop is reduced to one value per row, and the
partial is added to the carried total. Along an axis that a program's warps share (a column
reduction's rows: the column layout spreads the warps down them), every chunk's reduction goes
through shared memory and a barrier. Carrying the chunk-shaped tile instead, with each element's
running sum in the thread that loads it, leaves one cross-thread reduction per loop, after it.
This is how stock Inductor's reduction loops accumulate. The sums are regrouped (per lane, then
across lanes, rather than per chunk, then across chunks): equal up to rounding, not bit-equal.

Only sums of float tiles, in loops where the carried value's one use is that add. Which loops
(`where`): "warps" (the default), those whose chunk sum crosses warps: a column reduction's, and
a row's when the plan spreads one row over several warps (one row a program over 16 or 32 warps:
the Triton plan for rows of 32K and more, where the per-chunk barrier cost RMSNorm a third of its
bandwidth on the H100, 98% of a copy with the tile carried, 76% without, 8192x65536); "columns",
only kernels that read columns; "all", every loop.

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
"""

from __future__ import annotations

from typing import Literal

from tilec.ir.builder import Builder
from tilec.ir.core import Kernel, Module, defining_op, replace_uses, use_counts
from tilec.ir.layouts import BlockedLayout
from tilec.ir.ops import ElementwiseOp, ForOp, ReduceOp, ReductionOp, yielded_values
from tilec.ir.types import TileType
from tilec.passes.base import Pass, register
from tilec.passes.plan import reads_columns
from tilec.passes.rewrite import const_value


def warps_along(red: ReductionOp) -> int:
    """How many warps share the reduced axis of `red`'s operand (1 where its layout is not blocked)."""
    t = red.src.type
    layout = t.layout if isinstance(t, TileType) else None
    if not isinstance(layout, BlockedLayout):
        return 1
    return layout.warps_per_cta[red.attr("axis")]


def _running_sum(loop: ForOp, i: int, counts: dict[int, int]) -> ReduceOp | str:
    """The chunk reduction that carried value `i` adds up, or why it is not one."""
    acc = loop.iter_args[i]
    t = acc.type
    if not isinstance(t, TileType) or not t.dtype.is_float:
        return "the carried value is not a float tile"
    nxt = yielded_values(loop.body)[i]
    add = defining_op(nxt)
    if not isinstance(add, ElementwiseOp) or add.name != "tile.add" or add.parent is not loop.body:
        return "the carried value is not updated by an add"
    a, b = add.operands
    part = b if a is acc else a if b is acc else None
    if part is None or counts.get(id(acc), 0) != 1 or counts.get(id(nxt), 0) != 1:
        return "the carried value has other uses"
    red = defining_op(part)
    if not isinstance(red, ReduceOp) or red.attr("kind") != "sum" or red.parent is not loop.body:
        return "what is added is not a sum of the chunk"
    if counts.get(id(part), 0) != 1:
        return "the chunk's sum has other uses"
    src = red.src.type
    if not isinstance(src, TileType) or src.dtype != t.dtype or red.attr("axis") != src.rank - 1:
        return "the chunk's sum is not along the loop's axis in the carried dtype"
    return red


def accumulate(kernel: Kernel, loop: ForOp, i: int, red: ReduceOp) -> None:
    """Rewrites carried value `i` of `loop` (the running sum of `red`) as a chunk-shaped tile."""
    src = red.src.type
    assert isinstance(src, TileType)
    init = loop.inits[i]
    before = Builder.before(loop)
    zero = before.op("tile.full", type=src, value=0.0, name_hint=f"{init.name_hint or 'acc'}_2d")
    loop.inits = [zero if k == i else v for k, v in enumerate(loop.inits)]
    acc, result = loop.iter_args[i], loop.results[i]
    acc.type = src
    result.type = src
    add = defining_op(yielded_values(loop.body)[i])
    assert add is not None
    kept = red.src
    if red.mask is not None:
        b = Builder.before(red)
        c0 = b.constant(0.0, src.dtype, name_hint="c0")
        kept = b.op("tile.where", red.mask, red.src, c0, type=src, name_hint="kept")
    add.operands = [acc, kept] if add.operands[0] is acc else [kept, acc]
    add.result.type = src
    red.erase()
    after = Builder.after(loop)
    total = after.op("tile.reduce", result, type=red.result.type, kind="sum", axis=src.rank - 1, name_hint="total")
    made = [defining_op(total)]
    if const_value(init) != 0:
        total = after.op("tile.add", init, total, type=red.result.type, name_hint="total")
        made.append(defining_op(total))
    replace_uses(kernel.body, result, total, keep=made)


@register
class Accumulate(Pass):
    """Running sums of reduction loops carried as whole tiles, reduced once after the loop."""

    name = "accumulate"
    unchanged = "no loop carries a sum of chunk reductions"
    where: Literal["columns", "warps", "all"] = "warps"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            columns = reads_columns(kernel)
            if self.where == "columns" and not columns:
                self.remark(kernel, "it reads rows (where=columns)")
                continue
            loops = [op for op in kernel.walk() if isinstance(op, ForOp)]
            why: list[str] = []
            for loop in loops:
                for i in range(len(loop.inits)):
                    found = _running_sum(loop, i, use_counts(kernel.body))
                    if isinstance(found, ReduceOp) and self.where == "warps" and not columns and warps_along(found) < 2:
                        found = "the chunk's sum stays within a warp: no barrier to save"
                    if isinstance(found, str):
                        why.append(f"%{loop.iter_args[i].name_hint}: {found}")
                    else:
                        accumulate(kernel, loop, i, found)
            if why and len(why) == sum(len(loop.inits) for loop in loops):
                self.remark(kernel, "; ".join(why))
