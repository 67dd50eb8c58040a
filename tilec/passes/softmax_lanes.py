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

Through loops: a row cached in shared memory by `reuse` and read in loops over its chunks (a
misaligned row, which `align-rows` splits into the first vector, the whole chunks, the rest's
vectors and the last partial vector: a top-level chunk, then loops carrying the statistics) is
rewritten the same way over the whole chain: each lane's maximum carried through a loop per loop
(its body cloned, the chunk's maximum replaced), one reduction after the last, then each lane's
sum of exp(x - max) carried through a second loop per loop that reads its chunks again (the pure
ops and shared-memory reads that give them; a loop of one trip over a few columns, the last
partial vector, may read global memory again), one reduction. Only where a thread holds at most
MAX_LOOP_LANE_ELEMS elements of a chunk (the carried lanes cost registers), and with a loop over
the row's chunks in shared memory.

Read again from global memory: a kernel whose plan set `lanes_reread` (the Triton pipeline's
loops, no cache) may have the second loop load its chunks again from global memory (from L1 while
the rows in flight fit there), and the output's divisions by the row's sum (`exp / sum`, the sum
broadcast along a chunk) become multiplications by its reciprocal, taken once a row: the form
takes exp twice an element, and a division (`div.full`: a reciprocal and a multiplication) is a
third op an element of the special-function unit exp uses (bench/results/2026-11-28-h200-lanes).

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
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from tilec.ir.builder import Builder
from tilec.ir.clone import clone_op
from tilec.ir.core import Block, Kernel, Module, Operation, Value, defining_op, replace_uses, use_counts
from tilec.ir.dtypes import f32, i1
from tilec.ir.ops import ForOp, SoftmaxCombineOp, SoftmaxReduceOp, yielded_values
from tilec.ir.types import TileType
from tilec.passes.accumulate import warps_along
from tilec.passes.base import Pass, register
from tilec.passes.chains import broadcast_row, chain, chain_ends, lane_elems, lane_loop, replace_chain
from tilec.passes.plan import LANES_REREAD
from tilec.passes.ranges import RangeAnalysis, max_trip_count
from tilec.passes.rewrite import backward_slice

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
    names = [r.name_hint for r in last.results]
    replace_chain(kernel, links, joined_statistics(b, inits, row_max, lane_sum, row, names))


def joined_statistics(
    b: Builder, inits: list[Value], row_max: Value, lane_sum: Value, row: TileType, names: list[str | None]
) -> Operation:
    """The lanes' sums reduced (0 for a row whose chunks are all masked or -inf, as
    softmax_reduce gives) and joined, with the row's maximum, to the initial statistics `inits`
    by one `tile.softmax_combine` (returned). `softmax-groups` joins its groups' sums so too."""
    total = b.op("tile.reduce", lane_sum, type=row, kind="sum", axis=1, name_hint="row_sum")
    neg_inf = b.constant(-math.inf, f32, name_hint="neg_inf")
    empty = b.op(
        "tile.cmp", row_max, neg_inf, type=TileType(row.shape, i1, row.layout), predicate="eq", name_hint="empty"
    )
    zero = b.constant(0.0, f32, name_hint="zero")
    total = b.op("tile.where", empty, zero, total, type=row, name_hint="row_sum")
    return b.create(SoftmaxCombineOp, *inits, row_max, total, result_types=[row] * 2, names=names)


# ---------------------------------------------------------------------------------------------
# Chains through loops: a row's statistics carried across loops over its chunks


@dataclass
class Segment:
    """One step of a row's statistics: a chunk folded in at the top level (`loop` None), or a loop
    that folds one chunk an iteration into the two values it carries."""

    part: SoftmaxReduceOp
    combine: SoftmaxCombineOp
    loop: ForOp | None = None
    again: list[Operation] = field(default_factory=list)  # a loop's ops that give its chunk again

    @property
    def before(self) -> list[Value]:
        """The statistics this step starts from."""
        return list(self.loop.inits) if self.loop is not None else list(self.combine.operands[:2])

    @property
    def after(self) -> list[Value]:
        return list(self.loop.results) if self.loop is not None else list(self.combine.results)

    @property
    def op(self) -> Operation:
        return self.loop if self.loop is not None else self.combine


def carried_statistics(loop: ForOp, counts: dict[int, int]) -> tuple[SoftmaxReduceOp, SoftmaxCombineOp] | str:
    """The chunk statistics a loop carrying softmax statistics (and nothing else) folds in, or why
    the loop is not one (`softmax-groups` reads it too)."""
    if len(loop.inits) != 2:
        return "the loop carries other values too"
    nexts = yielded_values(loop.body)
    combine = defining_op(nexts[0])
    if not isinstance(combine, SoftmaxCombineOp) or combine.parent is not loop.body:
        return "the carried values are not a softmax combine's"
    if list(combine.results) != nexts or list(combine.operands[:2]) != loop.iter_args:
        return "the carried values are not combined in order"
    part = defining_op(combine.operands[2])
    if (
        not isinstance(part, SoftmaxReduceOp)
        or part.parent is not loop.body
        or list(part.results) != combine.operands[2:]
    ):
        return "what is combined is not one chunk's statistics"
    if any(counts.get(id(v), 0) != 1 for v in (*loop.iter_args, *nexts, *part.results)):
        return "the statistics have other uses"
    return part, combine


# The most columns a loop may span and still read its chunk from global memory again for the
# sums: align-rows' last partial vector (less than a vector; its bounds' ranges move with the
# row's head, up to a vector or, with `align-rows{line=128}`, a cache line: 128 one-byte elements)
MAX_REREAD_COLUMNS = 160


def _tiny(loop: ForOp, ranges: RangeAnalysis) -> bool:
    """Whether the loop runs at most once over at most MAX_REREAD_COLUMNS columns (from its
    bounds' ranges: a row's last, partial vector)."""
    lo, hi = ranges(loop.lower), ranges(loop.upper)
    trips = max_trip_count(loop, ranges)
    return (
        trips is not None and trips <= 1 and lo is not None and hi is not None and hi[1] - lo[0] <= MAX_REREAD_COLUMNS
    )


def _again(seg: Segment, ranges: RangeAnalysis, from_global: bool) -> list[Operation] | str:
    """The ops of a loop's body that give its chunk and mask again, for a second loop over the
    same chunks: pure ops and shared-memory reads; reads of global memory only in a loop over a
    few columns (`_tiny`: a row's last, partial vector), or in any loop `from_global` (the plan's
    `lanes_reread`)."""
    assert seg.loop is not None
    once = _tiny(seg.loop, ranges) or from_global
    ops = backward_slice(seg.loop.body, [seg.part.src] + ([seg.part.mask] if seg.part.mask is not None else []))
    for op in ops:
        reread = op.name == "tile.smem_load" or (op.name == "tile.load" and once)
        if not reread and (op.regions or not op.is_pure):
            return f"the chunk comes from {op.name}, which would run twice"
    if not once and not any(op.name == "tile.smem_load" for op in ops):
        return "the chunk is not read from shared memory"
    return ops


# A thread's elements of a chunk, at most, for the statistics through loops: the loops carry a
# lane maximum, then a lane sum, a register each. On the H100 softmax 32768x50257 in chunks of
# 8192 over 8 warps (32 a thread) ran at 97.5% of a copy against the Triton loop's 87.1
# (bench/results/2026-11-27-h100-cp-async); on the H200 4096x32768 in chunks of 16384 over 8
# warps (64 a thread) fell from 92.4 to 81.6 (123 registers a thread where 80 had let three CTAs
# share an SM; bench/results/2026-11-27-h200-cp-async)
MAX_LOOP_LANE_ELEMS = 32


def _segments(kernel: Kernel) -> tuple[list[list[Segment]], list[str]]:
    """The kernel's chains of statistics through loops: each chain's steps in order, first to last
    (chains with no loop are left to the unrolled form). And why chains were refused."""
    counts = use_counts(kernel.body)
    ranges = RangeAnalysis(kernel)
    from_global = bool(kernel.attributes.get(LANES_REREAD))
    steps: dict[int, Segment] = {}  # id of each step's first result -> the step
    why: list[str] = []
    for op in kernel.body.ops:
        if isinstance(op, ForOp):
            found = carried_statistics(op, counts)
            if isinstance(found, str):
                if len(op.inits) == 2 and isinstance(defining_op(yielded_values(op.body)[0]), SoftmaxCombineOp):
                    why.append(f"%{op.iter_args[0].name_hint}: {found}")
                continue
            seg = Segment(*found, loop=op)
        elif isinstance(op, SoftmaxCombineOp):
            part = defining_op(op.operands[2])
            if not isinstance(part, SoftmaxReduceOp) or list(part.results) != op.operands[2:]:
                continue
            if any(counts.get(id(v), 0) != 1 for v in part.results):
                continue
            seg = Segment(part, op)
        else:
            continue
        steps[id(seg.after[0])] = seg
    feeding = {id(seg.before[0]) for seg in steps.values()}
    chains: list[list[Segment]] = []
    for seg in steps.values():
        if id(seg.after[0]) in feeding:
            continue  # not the last step of its chain
        chain_: list[Segment] = [seg]
        while True:
            first = chain_[0]
            prev = steps.get(id(first.before[0]))
            if prev is None or prev.after != first.before or any(counts.get(id(v), 0) != 1 for v in prev.after):
                break
            chain_.insert(0, prev)
        if not any(s.loop is not None for s in chain_):
            continue
        name = f"%{seg.after[0].name_hint}"
        src = chain_[0].part.src.type
        problem = ""
        held = lane_elems(src, kernel.launch) if isinstance(src, TileType) else None
        if held is None or held > MAX_LOOP_LANE_ELEMS:
            why.append(
                f"{name}: more than {MAX_LOOP_LANE_ELEMS} elements of a chunk a thread: the lanes' statistics "
                "carried through the loops would cost registers"
            )
            continue
        for s in chain_:
            problem = _chunk(s.part)
            if not problem and s.part.src.type != src:
                problem = "its chunks are tiles of different types"
            if not problem and s.loop is not None:
                again = _again(s, ranges, from_global)
                if isinstance(again, str):
                    problem = again
                else:
                    s.again = again
            if problem:
                break
        if (
            not problem
            and not from_global
            and not any(s.loop is not None and not _tiny(s.loop, ranges) for s in chain_)
        ):
            problem = "no loop over the row's chunks reads them from shared memory"
        if problem:
            why.append(f"{name}: {problem}")
            continue
        chains.append(chain_)
    return chains, why


def lanes_through_loops(kernel: Kernel, chain_: list[Segment]) -> None:
    """Rewrites a chain of statistics through loops: each lane's maximum over every chunk (a loop
    carries it as a tile), reduced once; then each lane's sum of exp over the chunks again (each
    loop's chunks read again by a second loop), reduced once; joined to the chain's initial
    statistics by one combine."""
    src = chain_[0].part.src.type
    assert isinstance(src, TileType)
    row = chain_[0].part.results[0].type
    assert isinstance(row, TileType)
    inits = chain_[0].before
    end = chain_[-1]

    def kept(part: SoftmaxReduceOp, v: Value, b: Builder, fill: float, mapping: dict[int, Value]) -> Value:
        if part.mask is None:
            return v
        c = b.constant(fill, f32, name_hint="fill")
        return b.op("tile.where", mapping.get(id(part.mask), part.mask), v, c, type=src, name_hint="kept")

    def max_step(b: Builder, carried: Value, v: Value, m: dict[int, Value], part: SoftmaxReduceOp) -> Value:
        return b.op("tile.maximum", carried, kept(part, v, b, -math.inf, m), type=src, name_hint="lane_max")

    # each lane's maximum, where the statistics were folded
    lane_max: Value | None = None
    for seg in chain_:
        b = Builder.before(seg.op)
        if seg.loop is None:
            v = kept(seg.part, seg.part.src, b, -math.inf, {})
            lane_max = v if lane_max is None else b.op("tile.maximum", lane_max, v, type=src, name_hint="lane_max")
            continue
        start = (
            lane_max if lane_max is not None else b.op("tile.full", type=src, value=-math.inf, name_hint="lanes_init")
        )
        body = [op for op in seg.loop.body.ops if op not in (seg.part, seg.combine, seg.loop.body.terminator)]
        lane_max = lane_loop(b, seg.loop, start, body, seg.part.src, "lane_max", partial(max_step, part=seg.part))
    assert lane_max is not None
    b = Builder.after(end.op)
    row_max = b.op("tile.reduce", lane_max, type=row, kind="max", axis=1, name_hint="row_max")
    wide = broadcast_row(b, row_max, src, "row_max_wide")

    def lane_exp(part: SoftmaxReduceOp, v: Value, b: Builder, mapping: dict[int, Value]) -> Value:
        shifted = b.op("tile.sub", v, wide, type=src, name_hint="shifted")
        return kept(part, b.op("tile.exp", shifted, type=src, name_hint="lane_exp"), b, 0.0, mapping)

    def sum_step(b: Builder, carried: Value, v: Value, m: dict[int, Value], part: SoftmaxReduceOp) -> Value:
        return b.op("tile.add", carried, lane_exp(part, v, b, m), type=src, name_hint="lane_sum")

    # each lane's sum of exp(x - max), the loops' chunks read again
    lane_sum: Value | None = None
    for seg in chain_:
        if seg.loop is None:
            e = lane_exp(seg.part, seg.part.src, b, {})
            lane_sum = e if lane_sum is None else b.op("tile.add", lane_sum, e, type=src, name_hint="lane_sum")
            continue
        start = lane_sum if lane_sum is not None else b.op("tile.full", type=src, value=0.0, name_hint="lanes_zero")
        lane_sum = lane_loop(b, seg.loop, start, seg.again, seg.part.src, "lane_sum", partial(sum_step, part=seg.part))
    assert lane_sum is not None
    joined = joined_statistics(b, inits, row_max, lane_sum, row, [r.name_hint for r in end.after])
    for old, new in zip(end.after, joined.results):
        replace_uses(kernel.body, old, new)
    for seg in reversed(chain_):
        if seg.loop is not None:
            seg.loop.erase()
        else:
            seg.combine.erase()
            seg.part.erase()
    if kernel.attributes.get(LANES_REREAD):
        reciprocal_uses(kernel, joined.results[1])


def reciprocal_uses(kernel: Kernel, total: Value) -> None:
    """Each division by the row's `total` broadcast along a chunk (the output's `exp / sum`)
    becomes a multiplication by its reciprocal, computed once a row after `total`. The form that
    reads the chunks again takes exp twice an element, and a division is one more op of the
    special-function unit an element (`div.full`: a reciprocal and a multiplication), which both
    share. Each element is then rounded twice (the reciprocal and the product, within 1.5 ulp of
    f32 where the division was within 1)."""
    found: list[tuple[Operation, Operation, Operation]] = []
    for op in kernel.walk():
        if op.name != "tile.div":
            continue
        wide = defining_op(op.operands[1])
        if wide is None or wide.name != "tile.broadcast":
            continue
        col = defining_op(wide.operands[0])
        if col is not None and col.name == "tile.expand_dims" and col.operands[0] is total:
            found.append((op, wide, col))
    if not found:
        return
    made = defining_op(total)
    assert made is not None
    b = Builder.after(made)
    ones = b.op("tile.full", type=total.type, value=1.0, name_hint="ones")
    rcp = b.op("tile.div", ones, total, type=total.type, name_hint="row_rcp")
    for op, wide, col in found:
        b = Builder.before(op)
        rcol = b.op("tile.expand_dims", rcp, axis=col.attr("axis"), name_hint="row_rcp_col")
        rwide = b.op("tile.broadcast", rcol, type=wide.results[0].type, name_hint="row_rcp_wide")
        scaled = b.op("tile.mul", op.operands[0], rwide, type=op.results[0].type, name_hint="scaled")
        replace_uses(kernel.body, op.results[0], scaled)
        op.erase()


@register
class SoftmaxLanes(Pass):
    """Chains of softmax statistics over chunks in shared memory (unrolled, or through loops over
    a cached row) kept per lane: two reductions across warps a chain, not two a chunk."""

    name = "softmax-lanes"
    unchanged = "no chain of softmax statistics of chunks, unrolled or through loops"
    where: Literal["warps", "all"] = "warps"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            chains, why = _segments(kernel)
            for chain_ in chains:
                if self.where == "warps" and warps_along(chain_[0].part) < 2:
                    why.append(
                        f"%{chain_[-1].after[0].name_hint}: the chunk's statistics stay within a warp: no barrier to save"
                    )
                    continue
                lanes_through_loops(kernel, chain_)
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
