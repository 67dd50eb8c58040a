"""softmax-groups: a loop's softmax statistics kept for each group of a thread's consecutive
elements, combined across the row once after the loop.

A loop over a row's chunks that folds each chunk's softmax statistics (its maximum and its sum of
exp(x - max): `tile.softmax_reduce`) into the row's running pair (`tile.softmax_combine`: a
cross-entropy's log-sum-exp, softmax's first loop) reduces every chunk across the program's
threads (shuffles and, across warps, shared memory and a barrier, twice a chunk) and rescales the
row's pair every chunk. On the H200 the cross-entropy's log-sum-exp over rows of 50257 took 16.5
instructions an element that way, and was bound by them
(bench/results/2026-11-29-h200-cross-entropy-profile). This pass views the chunk `[1, C]` as
`[1, C / G, G]` (`tile.reshape`; each thread's G consecutive elements, its 16-byte vector for
G = 8 of bf16, stay in its registers: the layout puts the G along the last axis, in one thread)
and carries a pair per group: each chunk's group maximum (a reduction along the group, within
the thread) joins the group's running maximum, the running sum is rescaled to it and the chunk's
exp(x - that maximum) added: one exp an element and one a group, no reduction across threads in
the loop. After the
loop the groups' pairs are combined once (the largest maximum; each sum scaled by exp(its
maximum - that) and added) and joined, by one combine, to the pair the loop started from. A
hand-written kernel of this form read the logits at 4.07 TB/s on the H200 where tilec's read 3.1
(bench/results/2026-11-29-h200-lse-probe). The sums regroup: results equal up to rounding.

It acts on the loops of a planned kernel whose plan set `groups` (the kernel attribute
`softmax_groups`: G, a power of two): each top-level loop carrying only such a pair, its chunk a
`[1, C]` tile reduced along its last axis, with at least one group per thread (a loop over a
vector or two, align-rows' first and last pieces, stays: one trip, nothing to gain), and a layout
giving each thread a multiple of G consecutive elements. Else it leaves the loop with a remark.
After `align-rows` and `softmax-lanes` (which keeps statistics per lane instead where the plan
asks it to: the two forms are alternatives); Triton's pipeline (its layouts are Triton's choice;
Triton 3.6 lays the reshaped chunk out with the G in one thread).

Before (a loop over chunks of 4096):
    %m, %s = tile.for %r = ... iter_args(%am = %m0, %as = %s0) {
      %mp, %sp = tile.softmax_reduce %x {axis = 1} : tile<[1], f32, ...>
      %an, %sn = tile.softmax_combine %am, %as, %mp, %sp
      tile.yield %an, %sn }
After (G = 8):
    %gm, %gs = tile.for %r = ... iter_args(%am = -inf, %as = 0 : tile<[1, 512], f32, ...>) {
      %x3 = tile.reshape %x : tile<[1, 512, 8], f32, ...>
      %mp = tile.reduce %x3 {kind = "max", axis = 2} : tile<[1, 512], f32, ...>
      %an = tile.maximum %am, %mp
      %base = %an, 0 where it is -inf
      %sn = %as * exp(%am - %base) + tile.reduce exp(%x3 - %base) {kind = "sum", axis = 2}
      tile.yield %an, %sn }
    (%gm, %gs converted to the chunk's 2-D layout)
    %top = tile.reduce %gm {kind = "max", axis = 1}
    %total = tile.reduce (%gs * exp(%gm - %top)) {kind = "sum", axis = 1}   (0 where %top is -inf)
    %m, %s = tile.softmax_combine %m0, %s0, %top, %total
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tilec.ir.builder import Builder
from tilec.ir.clone import clone_op
from tilec.ir.core import Kernel, Module, Value, replace_uses, use_counts
from tilec.ir.dtypes import f32, i1
from tilec.ir.layouts import BlockedLayout, SliceLayout
from tilec.ir.ops import ForOp, SoftmaxCombineOp, SoftmaxReduceOp, yielded_values
from tilec.ir.types import TileType
from tilec.passes.base import Pass, register
from tilec.passes.chains import broadcast_row
from tilec.passes.plan import SOFTMAX_GROUPS
from tilec.passes.softmax_lanes import carried_statistics, joined_statistics


def folds_statistics(kernel: Kernel) -> bool:
    """Whether the kernel computes softmax's statistics of a row (`tile.softmax_reduce`), which a
    plan's `groups` may keep per group once the row is read in a loop."""
    return any(isinstance(op, SoftmaxReduceOp) for op in kernel.walk())


def _grouping(part: SoftmaxReduceOp, group: int, threads: int) -> BlockedLayout | str:
    """The layout of the chunk `part` reduces viewed as [1, C / group, group] (each thread's
    consecutive elements along the row split into groups on a last axis of its own), or why its
    statistics cannot be kept per group."""
    t = part.src.type
    if not isinstance(t, TileType) or t.rank != 2 or part.attr("axis") != 1 or t.shape[0] != 1:
        return "its chunk is not one row's [1, C] tile reduced along the row"
    width = t.shape[1]
    if not isinstance(width, int) or width % group:
        return f"its chunk of {width} columns is no multiple of the group's {group}"
    if width // group < threads:
        return f"its chunk of {width} columns holds fewer groups of {group} than the program has threads"
    lay = t.layout
    if not isinstance(lay, BlockedLayout) or lay.order != (1, 0) or lay.cga_layout:
        return "the chunk's layout is not a row-major blocked layout of one CTA"
    spt = lay.size_per_thread[1]
    if spt % group:
        return f"a thread holds {spt} consecutive elements of the chunk, no multiple of the group's {group}"
    return BlockedLayout(
        (1, spt // group, group),
        (lay.threads_per_warp[0], lay.threads_per_warp[1], 1),
        (lay.warps_per_cta[0], lay.warps_per_cta[1], 1),
        (2, 1, 0),
    )


def _fold_groups(
    b: Builder, chunk: Value, mask: Value | None, carried: Sequence[Value], grouped: TileType, lanes: TileType
) -> tuple[Value, Value]:
    """The groups' running pair after this chunk: the chunk viewed as groups (the elements off
    `mask` -inf), each group's maximum (within the thread) joined to its running one, its running sum
    rescaled to the new maximum and the chunk's exp(x - new maximum) added (one exp an element,
    one a group). A group that saw only -inf keeps maximum -inf and sum 0 (its exps taken against
    0); a NaN or +inf gives NaN, as the chunk's statistics did."""
    x3 = b.op("tile.reshape", chunk, type=grouped, name_hint="grouped")
    if mask is not None:
        mask_t = TileType(grouped.shape, i1, grouped.layout)
        mask3 = b.op("tile.reshape", mask, type=mask_t, name_hint="grouped_mask")
        x3 = b.op("tile.where", mask3, x3, b.constant(-math.inf, f32, name_hint="fill"), type=grouped, name_hint="kept")
    run_max, run_sum = carried
    chunk_max = b.op("tile.reduce", x3, type=lanes, kind="max", axis=2, name_hint="group_max_part")
    top = b.op("tile.maximum", run_max, chunk_max, type=lanes, name_hint="group_max_next")
    neg_inf = b.constant(-math.inf, f32, name_hint="neg_inf")
    empty = b.op(
        "tile.cmp", top, neg_inf, type=TileType(lanes.shape, i1, lanes.layout), predicate="eq", name_hint="empty"
    )
    base = b.op("tile.where", empty, b.constant(0.0, f32, name_hint="zero"), top, type=lanes, name_hint="group_base")
    shift = b.op("tile.sub", run_max, base, type=lanes, name_hint="group_shift")
    rescale = b.op("tile.exp", shift, type=lanes, name_hint="group_rescale")
    col = b.op("tile.expand_dims", base, axis=2, name_hint="group_base_col")
    wide = b.op("tile.broadcast", col, type=grouped, name_hint="group_base_wide")
    exps = b.op(
        "tile.exp", b.op("tile.sub", x3, wide, type=grouped, name_hint="shifted"), type=grouped, name_hint="exps"
    )
    chunk_sum = b.op("tile.reduce", exps, type=lanes, kind="sum", axis=2, name_hint="group_sum_part")
    kept = b.op("tile.mul", run_sum, rescale, type=lanes, name_hint="group_sum_kept")
    return top, b.op("tile.add", kept, chunk_sum, type=lanes, name_hint="group_sum_next")


def group_statistics(
    kernel: Kernel, loop: ForOp, part: SoftmaxReduceOp, combine: SoftmaxCombineOp, group: int, lay3: BlockedLayout
) -> None:
    """Rewrites `loop` (carrying only the row's softmax pair, folded by `combine` from `part`) to
    carry a pair per group of `group` consecutive elements, its chunk laid out as `lay3`
    (`_grouping`; the module's doc)."""
    chunk = part.src.type
    row = part.results[0].type
    assert isinstance(chunk, TileType) and isinstance(row, TileType)
    shape3 = (1, chunk.shape[1] // group, group)  # type: ignore[operator]
    grouped = TileType(shape3, chunk.dtype, lay3)
    lanes = TileType(shape3[:2], f32, SliceLayout(2, lay3))
    b = Builder.before(loop)
    start_max = b.op("tile.full", type=lanes, value=-math.inf, name_hint="group_max_init")
    start_sum = b.op("tile.full", type=lanes, value=0.0, name_hint="group_sum_init")
    names = [r.name_hint for r in loop.results]
    new = b.for_(
        loop.lower,
        loop.upper,
        loop.step,
        [start_max, start_sum],
        iv_name=loop.induction_var.name_hint,
        names=[f"{n}_groups" if n else None for n in names],
        **loop.attributes,
    )
    mapping: dict[int, Value] = {id(loop.induction_var): new.induction_var}
    with b.inside(new.body):
        for op in loop.body.ops:
            if op is part:
                src = mapping.get(id(part.src), part.src)
                mask = mapping.get(id(part.mask), part.mask) if part.mask is not None else None
                nexts = _fold_groups(b, src, mask, new.iter_args, grouped, lanes)
                mapping[id(combine.results[0])], mapping[id(combine.results[1])] = nexts
            elif op is combine:
                continue  # folded with the chunk's group statistics above
            elif op is loop.body.terminator:
                b.yield_(*(mapping[id(v)] for v in yielded_values(loop.body)))
            else:
                b.insert(clone_op(op, mapping))
    # the groups' pairs in the chunk's 2-D layout, combined as softmax-lanes combines its lanes':
    # the largest maximum, each sum scaled to it, joined to the loop's initial pair
    b = Builder.after(new)
    flat = TileType(lanes.shape, f32, chunk.layout)
    gmax = b.op("tile.convert_layout", new.results[0], type=flat, name_hint="groups_max_flat")
    gsum = b.op("tile.convert_layout", new.results[1], type=flat, name_hint="groups_sum_flat")
    top = b.op("tile.reduce", gmax, type=row, kind="max", axis=1, name_hint="groups_max")
    shifted = b.op(
        "tile.sub", gmax, broadcast_row(b, top, flat, "groups_max_wide"), type=flat, name_hint="groups_shift"
    )
    scale = b.op("tile.exp", shifted, type=flat, name_hint="groups_scale")
    scaled = b.op("tile.mul", gsum, scale, type=flat, name_hint="groups_scaled")
    joined = joined_statistics(b, list(loop.inits), top, scaled, row, names)
    for old, r in zip(loop.results, joined.results):
        replace_uses(kernel.body, old, r)
    loop.erase()


@register
class SoftmaxGroups(Pass):
    """Keeps a loop's softmax statistics per group of a thread's consecutive elements, as the
    plan asks (`groups`)."""

    name = "softmax-groups"
    unchanged = "the plan does not ask for it (its `groups`)"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            group = kernel.attributes.get(SOFTMAX_GROUPS)
            if not group:
                continue
            threads = 32 * (kernel.launch.num_warps or 4)
            counts = use_counts(kernel.body)
            done = 0
            for loop in [op for op in kernel.body.ops if isinstance(op, ForOp)]:
                found = carried_statistics(loop, counts)
                if isinstance(found, str):
                    continue  # a loop of other values: not this pass's
                part, combine = found
                lay3 = _grouping(part, int(group), threads)
                if isinstance(lay3, str):
                    self.remark(kernel, f"loop %{loop.induction_var.name_hint}: {lay3}")
                    continue
                group_statistics(kernel, loop, part, combine, int(group), lay3)
                done += 1
            if not done:
                self.remark(kernel, "no loop carries a row's softmax statistics in chunks of whole groups")
