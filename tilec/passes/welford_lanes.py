"""welford-lanes: a loop's running mean and spread kept per lane, combined once after the loop.

In the logical form each chunk of a Welford loop (LayerNorm's statistics) is reduced to a mean,
a sum of squared deviations (m2) and a count per row — two reductions, the second after the
first — and the partial joins the carried one by Chan's combine. Where the chunk's row spreads
over several warps (one row a program over 8-32 warps: the Triton plan for long rows), each of
those reductions goes through shared memory and a barrier, twice a chunk. Carried per lane
instead, each element's running mean and m2 stay in the thread that loads it and take one
Welford update a chunk (two subtractions and two multiply-adds; every lane has seen the same
count, so one reciprocal a row serves all of them), and after the loop the lanes combine once:
lanes of equal count c combine as mean = sum(mean_i) / L and m2 = sum(m2_i + c (mean_i - mean)^2)
over the L lanes, the count L c. That is what stock Inductor's reduction loops do
(`welford_reduce`), with a division an element. The result is then combined with the loop's
initial statistics (a first chunk peeled before the loop; zeros otherwise), which also turns an
infinite mean into NaN as the per-chunk form does. The sums are regrouped: equal up to rounding.

Only loops whose chunks are unmasked (every lane sees one element a step: after `peel` and
`canonicalize`, the main loop of full chunks) and whose carried statistics are used only by
the combine, along the chunk's last axis, with at most `MAX_LANE_ELEMS` elements of a chunk a
thread (each costs two registers across the loop). Like `accumulate`, by default
(`where=warps`) only where the chunk's reduction crosses warps; `where=all` every such loop.

With a plan's `lanes_reread` (kernel attribute), a loop that carries only such statistics over a
constant number of chunks, each computed by pure ops from global loads, becomes two passes over
its chunks instead, each reading them again (from L1 while the rows in flight fit there): a loop of
each lane's sum, one reduction and the row's mean (the sum over the count, trips x chunk); then a
loop of each lane's sum of squared deviations from that mean, one reduction (the row's m2);
joined to the loop's initial statistics by one combine. One value an element is carried at a
time, so a thread may hold up to MAX_REREAD_LANE_ELEMS elements of a chunk; the variance is the
exact two-pass one.

An unrolled loop — a straight-line chain of combines, each folding the next chunk's statistics
into the one before (`cluster-rows` unrolls a CTA's chunks so, before the exchange) — is kept
per lane the same way: chunk k (from 1) moves each lane's mean by 1/k of its distance (a
constant), where its combine was, so each chunk's values die there as before.

Before:
    %m, %q, %n = tile.for %r = ... iter_args(%am = %init, %aq = %init, %an = %init) -> (...) {
      %pm, %pq, %pn = tile.welford %v {axis = 1} : tile<[1], f32, ...>, ...
      %nm, %nq, %nn = tile.welford_combine %am, %aq, %an, %pm, %pq, %pn : ...
      tile.yield %nm, %nq, %nn
    }
After:
    %m, %q, %n = tile.for %r = ... iter_args(%am = %zero_2d, %aq = %zero_2d, %an = %zero) -> (...) {
      %count = tile.add %an, 1.0                       (the lanes' count, a row's)
      %rcp = tile.div 1.0, %count                      (once a row)
      %delta = tile.sub %v, %am
      %nm = tile.add %am, %delta * broadcast(%rcp)
      %nq = tile.add %aq, %delta * (%v - %nm)
      tile.yield %nm, %nq, %count
    }
    %lanes_mean = tile.reduce %m {kind = "sum"} / L
    %lanes_m2 = tile.reduce %q + broadcast(%n) * (%m - broadcast(%lanes_mean))^2 {kind = "sum"}
    %mean, %m2, %count = tile.welford_combine %init, %init, %init, %lanes_mean, %lanes_m2, %n * L
"""

from __future__ import annotations

from functools import partial
from typing import Literal

from tilec.ir.builder import Builder
from tilec.ir.core import Kernel, Launch, Module, Operation, Value, defining_op, replace_uses, use_counts
from tilec.ir.dtypes import Type, f32
from tilec.ir.ops import ForOp, WelfordCombineOp, WelfordOp, YieldOp, yielded_values
from tilec.ir.types import TileType
from tilec.passes.accumulate import warps_along
from tilec.passes.base import Pass, register
from tilec.passes.chains import broadcast_row, chain, chain_ends, lane_elems, lane_loop, replace_chain
from tilec.passes.plan import LANES_REREAD
from tilec.passes.ranges import trip_count
from tilec.passes.rewrite import backward_slice


def _running_welford(
    loop: ForOp, i: int, counts: dict[int, int], launch: Launch, limit: int
) -> tuple[WelfordOp, WelfordCombineOp] | str:
    """The chunk statistics that carried values i..i+2 of `loop` combine, or why they are not."""
    args = loop.iter_args[i : i + 3]
    nexts = yielded_values(loop.body)[i : i + 3]
    combine = defining_op(nexts[0])
    if not isinstance(combine, WelfordCombineOp) or combine.parent is not loop.body:
        return "the carried values are not a Welford combine's"
    if list(combine.results) != nexts or list(combine.operands[:3]) != args:
        return "the carried values are not combined in order"
    part = defining_op(combine.operands[3])
    if not isinstance(part, WelfordOp) or part.parent is not loop.body or list(part.results) != combine.operands[3:]:
        return "what is combined is not one chunk's Welford statistics"
    if any(counts.get(id(v), 0) != 1 for v in (*args, *nexts, *part.results)):
        return "the statistics have other uses"
    why = _chunk(part, launch, limit)
    return why if why else (part, combine)


def _chunk(part: WelfordOp, launch: Launch, limit: int) -> str:
    """Why one chunk's statistics cannot be kept per lane, at most `limit` elements of it a thread
    ("" where they can)."""
    if part.mask is not None:
        return "the chunk is masked (not the main loop of full chunks)"
    src = part.src.type
    if not isinstance(src, TileType) or src.rank != 2 or part.attr("axis") != 1 or not isinstance(src.shape[1], int):
        return "the chunk is not a 2-D tile reduced along its static last axis"
    if not fits_registers(src, launch, limit):
        return f"more than {limit} elements of the chunk a thread: their lanes' statistics would cost registers"
    return ""


# A thread's elements of the chunk, at most: each takes two more registers (its lane's mean and
# m2) across the loop. On the H100 (bench/results/2026-11-27-h100-welford-lanes), LayerNorm over
# rows of 32768-65536: 4 and 8 elements a thread gained up to 31 points of a copy where the
# registers left two CTAs an SM (chunks of 4096 over 32 warps: 64.9 to 96.5% at 4096x32768);
# 16 and 32 lost up to 31 (chunks of 16384 over 16 warps, 96.8 to 66.2: 94 registers a thread
# where 64 had let two CTAs share an SM)
MAX_LANE_ELEMS = 8
# ... and in the two-pass form (a plan's `lanes_reread`), where each of its two loops carries one
# value an element (a lane's sum, then its sum of squared deviations), never both at once
MAX_REREAD_LANE_ELEMS = 32


def fits_registers(chunk: TileType, launch: Launch, limit: int = MAX_LANE_ELEMS) -> bool:
    """Whether a thread's elements of the chunk are few enough (at most `limit`) to carry their
    lanes' statistics across the loop (`MAX_LANE_ELEMS`: a mean and an m2 each); a cluster's tile
    is shared by its CTAs."""
    held = lane_elems(chunk, launch)
    return held is not None and held <= limit


def _update(b: Builder, v: Value, mean: Value, m2: Value, rcp: Value) -> tuple[Value, Value]:
    """One chunk's Welford update of each lane's `mean` and `m2` by its value in `v`, `rcp` the
    reciprocal of the lanes' count after it (a chunk-shaped tile or a scalar)."""
    src = v.type
    delta = b.op("tile.sub", v, mean, type=src, name_hint="delta")
    step = b.op("tile.mul", delta, rcp, type=src, name_hint="step")
    mean = b.op("tile.add", mean, step, type=src, name_hint="lane_mean")
    dev = b.op("tile.sub", v, mean, type=src, name_hint="dev")
    spread = b.op("tile.mul", delta, dev, type=src, name_hint="spread")
    return mean, b.op("tile.add", m2, spread, type=src, name_hint="lane_m2")


def _combine_lanes(
    b: Builder, inits: list[Value], rm: Value, rq: Value, rn: Value, src: TileType, row: Type, names: list[str | None]
) -> Operation:
    """After the last chunk: the lanes' means `rm` and m2s `rq` (chunk-shaped), each lane's count
    `rn` (a row's), combined across the lanes and joined to the statistics `inits` (a
    `tile.welford_combine`, returned)."""
    width = src.shape[1]
    assert isinstance(width, int)
    total = b.op("tile.reduce", rm, type=row, kind="sum", axis=1, name_hint="lanes_sum")
    lanes_n = b.constant(float(width), f32, name_hint="lanes")
    lanes_mean = b.op("tile.div", total, lanes_n, type=row, name_hint="lanes_mean")
    dev = b.op("tile.sub", rm, broadcast_row(b, lanes_mean, src, "lanes_mean_wide"), type=src, name_hint="lane_dev")
    sq = b.op("tile.mul", dev, dev, type=src, name_hint="lane_dev_sq")
    weighted = b.op("tile.mul", broadcast_row(b, rn, src, "count_wide"), sq, type=src, name_hint="lane_between")
    within = b.op("tile.add", rq, weighted, type=src, name_hint="lane_spread")
    lanes_m2 = b.op("tile.reduce", within, type=row, kind="sum", axis=1, name_hint="lanes_m2")
    lanes_count = b.op("tile.mul", rn, lanes_n, type=row, name_hint="lanes_count")
    return b.create(WelfordCombineOp, *inits, lanes_mean, lanes_m2, lanes_count, result_types=[row] * 3, names=names)


def lanes(kernel: Kernel, loop: ForOp, i: int, part: WelfordOp, combine: WelfordCombineOp) -> None:
    """Rewrites carried values i..i+2 of `loop` (mean, m2, count) as per-lane statistics."""
    src = part.src.type
    assert isinstance(src, TileType)
    row = part.results[0].type
    inits = loop.inits[i : i + 3]
    before = Builder.before(loop)
    zero_2d = before.op("tile.full", type=src, value=0.0, name_hint="lanes_init")
    zero = before.op("tile.full", type=row, value=0.0, name_hint="count_init")
    one = before.constant(1.0, f32, name_hint="one")
    ones = before.op("tile.full", type=row, value=1.0, name_hint="ones")
    loop.inits = [*loop.inits[:i], zero_2d, zero_2d, zero, *loop.inits[i + 3 :]]
    am, aq, an = loop.iter_args[i : i + 3]
    rm, rq, rn = loop.results[i : i + 3]
    for carried in (am, aq, rm, rq):
        carried.type = src

    b = Builder.before(combine)
    count = b.op("tile.add", an, one, type=row, name_hint="count")
    rcp = b.op("tile.div", ones, count, type=row, name_hint="rcp")
    mean, m2 = _update(b, part.src, am, aq, broadcast_row(b, rcp, src, "rcp_wide"))
    yield_op = loop.body.terminator
    assert yield_op is not None
    yield_op.operands = [*yield_op.operands[:i], mean, m2, count, *yield_op.operands[i + 3 :]]
    combine.erase()
    part.erase()

    b = Builder.after(loop)
    joined = _combine_lanes(b, inits, rm, rq, rn, src, row, [r.name_hint for r in (rm, rq, rn)])
    block = loop.parent
    assert block is not None
    made = block.ops[block.ops.index(loop) + 1 : block.ops.index(joined) + 1]
    for old, new in zip((rm, rq, rn), joined.results):
        replace_uses(kernel.body, old, new, keep=made)


def lanes_chain(kernel: Kernel, links: list[tuple[WelfordOp, WelfordCombineOp]]) -> None:
    """Rewrites an unrolled chain of chunk statistics as per-lane statistics: chunk k (from 1)
    updates each lane's mean by 1/k of its distance, where its combine was."""
    first, _ = links[0]
    src = first.src.type
    assert isinstance(src, TileType)
    row = first.results[0].type
    inits = list(links[0][1].operands[:3])
    last = links[-1][1]
    mean, m2 = first.src, Builder.before(links[0][1]).op("tile.full", type=src, value=0.0, name_hint="lanes_init")
    for k, (part, combine) in enumerate(links[1:], start=2):
        b = Builder.before(combine)
        mean, m2 = _update(b, part.src, mean, m2, b.constant(1.0 / k, f32, name_hint="rcp"))
    b = Builder.before(last)
    count = b.op("tile.full", type=row, value=float(len(links)), name_hint="count")
    replace_chain(
        kernel, links, _combine_lanes(b, inits, mean, m2, count, src, row, [r.name_hint for r in last.results])
    )


def _again(loop: ForOp, part: WelfordOp, combine: WelfordCombineOp) -> tuple[list[Operation], int] | str:
    """The ops of `loop`'s body that give its chunk (pure ops and reads of global memory, which each
    pass runs again) and the loop's trip count; or why its chunks cannot be read in two passes."""
    if len(loop.inits) != 3:
        return "the loop carries other values too"
    trips = trip_count(loop)
    if not trips:
        return "the loop's trip count is not a known constant"
    ops = backward_slice(loop.body, [part.src])
    for op in ops:
        if op.name != "tile.load" and (op.regions or not op.is_pure):
            return f"the chunk comes from {op.name}, which would run twice"
    # anything else the body computes must be pure: the loop yields only the statistics, so it is
    # unused (the pipeline's dce comes later)
    kept = {id(op) for op in (*ops, part, combine, loop.body.terminator)}
    other = [op for op in loop.body.ops if id(op) not in kept and (op.regions or not op.is_pure)]
    if other:
        return f"the loop also computes {other[0].name}"
    return ops, trips


def two_passes(kernel: Kernel, loop: ForOp, part: WelfordOp, ops: list[Operation], trips: int) -> None:
    """Rewrites a loop of Welford statistics (and nothing else) as two loops over its chunks, each
    reading them again (`ops`): each lane's sum, reduced once to the row's mean; then each lane's
    sum of squared deviations from that mean, reduced once to the row's m2; joined to the loop's
    initial statistics by one combine."""
    src = part.src.type
    assert isinstance(src, TileType) and isinstance(src.shape[1], int)
    row = part.results[0].type
    b = Builder.before(loop)
    zero = b.op("tile.full", type=src, value=0.0, name_hint="lanes_zero")

    def add(b: Builder, carried: Value, v: Value, _: dict[int, Value]) -> Value:
        return b.op("tile.add", carried, v, type=src, name_hint="lane_sum")

    lane_sum = lane_loop(b, loop, zero, ops, part.src, "lane_sum", add)
    total = b.op("tile.reduce", lane_sum, type=row, kind="sum", axis=1, name_hint="row_sum")
    count = b.op("tile.full", type=row, value=float(trips * src.shape[1]), name_hint="count")
    mean = b.op("tile.div", total, count, type=row, name_hint="row_mean")
    wide = broadcast_row(b, mean, src, "row_mean_wide")

    def deviations(b: Builder, carried: Value, v: Value, _: dict[int, Value]) -> Value:
        dev = b.op("tile.sub", v, wide, type=src, name_hint="dev")
        sq = b.op("tile.mul", dev, dev, type=src, name_hint="dev_sq")
        return b.op("tile.add", carried, sq, type=src, name_hint="lane_m2")

    lane_m2 = lane_loop(b, loop, zero, ops, part.src, "lane_m2", deviations)
    m2 = b.op("tile.reduce", lane_m2, type=row, kind="sum", axis=1, name_hint="row_m2")
    joined = b.create(
        WelfordCombineOp,
        *loop.inits,
        mean,
        m2,
        count,
        result_types=[row] * 3,
        names=[r.name_hint for r in loop.results],
    )
    for old, new in zip(loop.results, joined.results):
        replace_uses(kernel.body, old, new)
    loop.erase()


@register
class WelfordLanes(Pass):
    """Running Welford statistics of unmasked chunk loops (and unrolled chains of chunks) kept per
    lane, combined once after the last chunk."""

    name = "welford-lanes"
    unchanged = "no loop or unrolled chain carries Welford statistics of chunks"
    where: Literal["warps", "all"] = "warps"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            why: list[str] = []
            reread = bool(kernel.attributes.get(LANES_REREAD))
            limit = MAX_REREAD_LANE_ELEMS if reread else MAX_LANE_ELEMS
            for loop in [op for op in kernel.walk() if isinstance(op, ForOp)]:
                i = 0
                while i + 3 <= len(loop.inits):
                    found = _running_welford(loop, i, use_counts(kernel.body), kernel.launch, limit)
                    if not isinstance(found, str) and self.where == "warps" and warps_along(found[0]) < 2:
                        found = "the chunk's statistics stay within a warp: no barrier to save"
                    if not isinstance(found, str) and reread:
                        again = _again(loop, *found)
                        if not isinstance(again, str):
                            two_passes(kernel, loop, found[0], *again)
                            break
                        per_lane = _chunk(found[0], kernel.launch, MAX_LANE_ELEMS)  # nor per-lane Welford?
                        found = f"{again}; and {per_lane}" if per_lane else found
                    if isinstance(found, str):
                        if isinstance(defining_op(yielded_values(loop.body)[i]), WelfordCombineOp):
                            why.append(f"%{loop.iter_args[i].name_hint}: {found}")
                        i += 1
                        continue
                    lanes(kernel, loop, i, *found)
                    i += 3
            # unrolled chains, each found from its last combine
            for last in chain_ends(kernel, WelfordCombineOp):
                if last.parent is None:  # erased with an earlier chain
                    continue
                chained = chain(
                    last,
                    WelfordOp,
                    use_counts(kernel.body),
                    partial(_chunk, launch=kernel.launch, limit=MAX_LANE_ELEMS),
                )
                if isinstance(chained, list) and self.where == "warps" and warps_along(chained[0][0]) < 2:
                    chained = "the chunk's statistics stay within a warp: no barrier to save"
                if isinstance(chained, str):
                    if chained != "one chunk: nothing to carry" and not isinstance(
                        last.parent and last.parent.terminator, YieldOp
                    ):
                        why.append(f"%{last.results[0].name_hint}: {chained}")
                    continue
                lanes_chain(kernel, chained)
            if why:
                self.remark(kernel, "; ".join(why))
