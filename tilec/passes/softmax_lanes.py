"""softmax-lanes: an unrolled chain of softmax statistics kept per lane, reduced once.

In the logical form each chunk of softmax's first loop is reduced to its maximum and its sum of
exp(x - max) — two reductions, the second after the first — and the partial joins the running
one by the online-softmax combine. Where the chunk's row spreads over several warps, each of
those reductions goes through shared memory and a barrier, twice a chunk. `cluster-rows` unrolls
a CTA's chunks into a straight-line chain of such combines, each chunk already in the CTA's
shared memory. This pass keeps each lane's maximum across the chain instead (one `maximum` an
element, where each combine was), reduces it once after the last chunk, then sums each lane's
exp(x - max) over the chunks, read again from shared memory, and reduces that once: two
reductions across the warps a CTA, not two a chunk, and still one exp an element. The chain's
initial statistics join the result by one combine. The sums are regrouped: equal up to rounding.

A chunk's values are computed again for the sums, not kept: the ops that give them from its
shared-memory copy are cloned after the chain (so each chunk's registers die where its combine
was, as before). Only chains whose chunks are computed from shared memory by pure ops (a chunk
read from global memory would be read twice), at least two chunks of one 2-D tile type, each
link's statistics used once. Like `accumulate`, by default (`where=warps`) only where the
chunk's reductions cross warps; `where=all` every such chain.

Before (each chunk %v_k from a shared-memory slice):
    %m0, %s0 = tile.softmax_reduce %v0 {axis = 1}
    %am0, %as0 = tile.softmax_combine %init_m, %init_s, %m0, %s0
    %m1, %s1 = tile.softmax_reduce %v1 {axis = 1}
    %am1, %as1 = tile.softmax_combine %am0, %as0, %m1, %s1
After:
    %lane_max = tile.maximum %v0, %v1                 (where the second combine was)
    %row_max = tile.reduce %lane_max {kind = "max", axis = 1}
    %e0 = tile.exp (%v0' - broadcast(%row_max))       (%v0' computed again from its slice)
    %e1 = tile.exp (%v1' - broadcast(%row_max))
    %lane_sum = tile.add %e0, %e1
    %row_sum = tile.reduce %lane_sum {kind = "sum", axis = 1}   (0 where %row_max is -inf)
    %am1, %as1 = tile.softmax_combine %init_m, %init_s, %row_max, %row_sum
"""

from __future__ import annotations

import math
from typing import Literal

from tilec.ir.builder import Builder
from tilec.ir.clone import clone_op
from tilec.ir.core import Block, Kernel, Module, Operation, Value, defining_op, use_counts
from tilec.ir.dtypes import f32, i1
from tilec.ir.ops import SoftmaxCombineOp, SoftmaxReduceOp
from tilec.ir.types import TileType
from tilec.passes.accumulate import warps_along
from tilec.passes.base import Pass, register
from tilec.passes.chains import broadcast_row, chain, chain_ends, replace_chain

Link = tuple[SoftmaxReduceOp, SoftmaxCombineOp]


def _recomputable(v: Value, block: Block, chunk: TileType) -> list[Operation] | str:
    """The ops of `block` that compute the chunk `v` from shared memory, in program order: every
    chunk-shaped value it depends on, back to the shared-memory reads. Or why it cannot be
    computed again."""
    ops = {id(op): i for i, op in enumerate(block.ops)}
    found: dict[int, Operation] = {}
    work = [v]
    while work:
        op = defining_op(work.pop())
        if op is None or id(op) not in ops or id(op) in found:
            continue
        t = op.results[0].type if op.results else None
        if not isinstance(t, TileType) or t.shape != chunk.shape:
            continue  # a row's value or a scalar: used as it is
        if op.name == "tile.smem_load":
            found[id(op)] = op
            continue
        if op.regions or not op.is_pure:
            return f"the chunk comes from {op.name}, which would run twice"
        found[id(op)] = op
        work.extend(op.operands)
    if not any(op.name == "tile.smem_load" for op in found.values()):
        return "the chunk is not read from shared memory"
    return sorted(found.values(), key=lambda op: ops[id(op)])


def _chunk(part: SoftmaxReduceOp) -> str:
    """Why one chunk's statistics cannot be kept per lane ("" where they can)."""
    src = part.src.type
    if not isinstance(src, TileType) or src.rank != 2 or part.attr("axis") != 1:
        return "the chunk is not a 2-D tile reduced along its last axis"
    return ""


def lanes_chain(kernel: Kernel, links: list[Link], again: list[list[Operation]]) -> None:
    """Rewrites a chain of chunk statistics: each lane's maximum over the chain, reduced once,
    then each lane's sum of exp over the chunks computed `again`, reduced once."""
    first = links[0][0]
    src = first.src.type
    assert isinstance(src, TileType)
    row = first.results[0].type
    assert isinstance(row, TileType)
    inits = list(links[0][1].operands[:2])
    last = links[-1][1]

    def kept(part: SoftmaxReduceOp, v: Value, b: Builder, fill: float) -> Value:
        if part.mask is None:
            return v
        c = b.constant(fill, f32, name_hint="fill")
        return b.op("tile.where", part.mask, v, c, type=src, name_hint="kept")

    b = Builder.before(links[1][1])
    lane_max = kept(first, first.src, b, -math.inf)
    for part, combine in links[1:]:
        b = Builder.before(combine)
        v = kept(part, part.src, b, -math.inf)
        lane_max = b.op("tile.maximum", lane_max, v, type=src, name_hint="lane_max")
    b = Builder.before(last)
    row_max = b.op("tile.reduce", lane_max, type=row, kind="max", axis=1, name_hint="row_max")
    wide = broadcast_row(b, row_max, src, "row_max_wide")
    lane_sum: Value | None = None
    for (part, _), ops in zip(links, again):
        mapping: dict[int, Value] = {}
        for op in ops:
            b.insert(clone_op(op, mapping))
        v = mapping.get(id(part.src), part.src)
        shifted = b.op("tile.sub", v, wide, type=src, name_hint="shifted")
        e = kept(part, b.op("tile.exp", shifted, type=src, name_hint="lane_exp"), b, 0.0)
        lane_sum = e if lane_sum is None else b.op("tile.add", lane_sum, e, type=src, name_hint="lane_sum")
    assert lane_sum is not None
    total = b.op("tile.reduce", lane_sum, type=row, kind="sum", axis=1, name_hint="row_sum")
    # a row whose chunks are all masked or -inf: its sum is 0, as softmax_reduce gives
    neg_inf = b.constant(-math.inf, f32, name_hint="neg_inf")
    empty = b.op(
        "tile.cmp", row_max, neg_inf, type=TileType(row.shape, i1, row.layout), predicate="eq", name_hint="empty"
    )
    zero = b.constant(0.0, f32, name_hint="zero")
    total = b.op("tile.where", empty, zero, total, type=row, name_hint="row_sum")
    names = [r.name_hint for r in last.results]
    replace_chain(
        kernel, links, b.create(SoftmaxCombineOp, *inits, row_max, total, result_types=[row] * 2, names=names)
    )


@register
class SoftmaxLanes(Pass):
    """Unrolled chains of softmax statistics over chunks in shared memory kept per lane: two
    reductions across warps a chain, not two a chunk."""

    name = "softmax-lanes"
    unchanged = "no unrolled chain carries softmax statistics of chunks"
    where: Literal["warps", "all"] = "warps"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            why: list[str] = []
            for last in chain_ends(kernel, SoftmaxCombineOp):
                if last.parent is None:  # erased with an earlier chain
                    continue
                chained = chain(last, SoftmaxReduceOp, use_counts(kernel.body), _chunk)
                again: list[list[Operation]] = []
                if isinstance(chained, list):
                    src = chained[0][0].src.type
                    assert isinstance(src, TileType) and last.parent is not None
                    for part, _ in chained:
                        ops = _recomputable(part.src, last.parent, src)
                        if isinstance(ops, str):
                            chained = ops
                            break
                        again.append(ops)
                if isinstance(chained, list) and self.where == "warps" and warps_along(chained[0][0]) < 2:
                    chained = "the chunk's statistics stay within a warp: no barrier to save"
                if isinstance(chained, str):
                    if chained != "one chunk: nothing to carry":
                        why.append(f"%{last.results[0].name_hint}: {chained}")
                    continue
                lanes_chain(kernel, chained, again)
            if why:
                self.remark(kernel, "; ".join(why))
