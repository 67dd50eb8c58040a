"""persistent: a fixed grid of programs, each looping over row blocks.

The grid becomes min(number of SMs, row blocks); program p handles row blocks p, p + P, p + 2P, ...
(P = number of programs). Shared buffers and barriers are allocated and initialized once, before
the loop, and retired after it; the loop carries an iteration counter, so a barrier that completes
once per row block is waited on with parity `it & 1`. Before the next block's copies overwrite the
cache, every thread fences its reads and meets at a CTA barrier. The `pipeline` pass, run after
this one, lets the next block's copies start while this block computes.

Before:
    tile.kernel @k(...) attributes {grid = [4096], num_warps = 8} {
      %pid = tile.program_id : i32
      ... (%pid picks the row block; waits on the cache's barriers with parity 0)
After:
    tile.kernel @k(...) attributes {grid = [min(num_sms, 4096)], num_warps = 8, persistent = true} {
      %pid = tile.program_id : i32
      %nprog = tile.num_programs : i32
      ... allocations, barrier inits
      %last = tile.for %blk = %pid to %nblocks step %nprog iter_args(%it = %c0) -> (i32) {
        %phase = tile.and %it, %c1 : i32
        ... (%blk picks the row block; waits with parity %phase)
        tile.fence_async_shared
        tile.cta_barrier
        %it_next = tile.add %it, %c1 : i32
        tile.yield %it_next
      }
      ... barrier invalidation
"""

from __future__ import annotations

from tilec.ir.builder import Builder
from tilec.ir.core import Block, Kernel, Module, Operation, Value, defining_op, replace_uses
from tilec.ir.dtypes import i32
from tilec.ir.expr import CallExpr, Sym, evaluate
from tilec.ir.ops import (
    AsyncCopyArriveOp,
    ForOp,
    MBarrierAllocOp,
    MBarrierInitOp,
    MBarrierInvalidateOp,
    MBarrierWaitOp,
    ProgramIdOp,
    SmemAllocOp,
    TmaLoadOp,
    WarpSpecializeOp,
)
from tilec.passes.base import Pass, register
from tilec.passes.ranges import RangeAnalysis, trip_count_range
from tilec.passes.rewrite import const_value


def _only(block: Block, cls: type) -> bool:
    """Whether every op of `block` (ignoring its yield) is of class `cls`."""
    return all(isinstance(op, cls) or op.name == "tile.yield" for op in block.ops)


def _setup(op: Operation) -> bool:
    """Ops that run once per program: allocations and barrier initialization (direct or in a loop)."""
    if isinstance(op, (SmemAllocOp, MBarrierAllocOp, MBarrierInitOp)):
        return True
    return isinstance(op, ForOp) and _only(op.body, MBarrierInitOp)


def _teardown(op: Operation) -> bool:
    if isinstance(op, MBarrierInvalidateOp):
        return True
    return isinstance(op, ForOp) and _only(op.body, MBarrierInvalidateOp)


def persistent_loop(kernel: Kernel) -> ForOp | None:
    """The row-block loop of a persistent kernel: from the program id, stepping by the program count."""
    for op in kernel.body.ops:
        if isinstance(op, ForOp):
            lo, step = defining_op(op.lower), defining_op(op.step)
            if (
                lo is not None
                and lo.name == "tile.program_id"
                and step is not None
                and step.name == "tile.num_programs"
            ):
                return op
    return None


def _copies_vary(kernel: Kernel) -> bool:
    """Whether a loop of cp.async copies that arrive on a cache's barriers (`reuse`'s, one barrier
    a chunk) may run a different number of times for different row blocks (by its bounds'
    ranges): a misaligned row's chunks, which start at the row's offset past a boundary
    (`align-rows`). Its barriers would then complete in some row blocks and not in others, where
    the loop over row blocks waits on each with the parity of the row block's count."""
    ranges = RangeAnalysis(kernel)
    for loop in kernel.walk():
        if isinstance(loop, ForOp) and any(isinstance(o, AsyncCopyArriveOp) for o in loop.body.walk()):
            trips = trip_count_range(loop, ranges)
            if trips is None or trips[0] != trips[1]:
                return True
    return False


def make_persistent(kernel: Kernel) -> str | None:
    """Makes `kernel` persistent; returns why not when it does not."""
    if kernel.launch.persistent:
        return "already persistent"
    if len(kernel.launch.grid) != 1:
        return f"a grid of {len(kernel.launch.grid)} dimensions (persistent kernels loop over one)"
    if any(isinstance(op, WarpSpecializeOp) for op in kernel.walk()):
        return "warp-specialized (run persistent before warp-specialize)"
    try:
        blocks = evaluate(kernel.launch.grid[0], kernel.bound_constexprs())
    except KeyError:
        return "the grid is not known (run plan first)"
    pids = [op for op in kernel.walk() if isinstance(op, ProgramIdOp) and op.name == "tile.program_id"]
    if blocks < 2:
        return "one row block: nothing to loop over"
    if len(pids) != 1 or pids[0].parent is not kernel.body or pids[0].attr("axis") != 0:
        return "the program id is not read once, at the top of the kernel, on axis 0"
    if _copies_vary(kernel):
        return (
            "a cp.async cache's chunks a row vary with the row (a misaligned row's): its barriers "
            "would not complete once per row block"
        )
    pid_op = pids[0]
    body = kernel.body
    ops = list(body.ops)
    first = ops.index(pid_op)
    before = [op for op in ops[: first + 1]]
    rest = ops[first + 1 :]
    setup = [op for op in rest if _setup(op)]
    teardown = [op for op in rest if _teardown(op)]
    work = [op for op in rest if op not in setup and op not in teardown]
    # scalar constants are loop-invariant, and setup and teardown use some: they stay before the loop
    hoisted_consts = [op for op in work if op.name == "tile.constant"]
    work = [op for op in work if op not in hoisted_consts]
    body.ops = []
    for op in before + hoisted_consts + setup:
        body.append(op)
    b = Builder.at_end(body)
    nprog = b.op("tile.num_programs", name_hint="nprog")
    nblocks = b.constant(blocks, i32, name_hint="nblocks")
    zero = b.constant(0, i32)
    loop = b.for_(pid_op.result, nblocks, nprog, [zero], iv_name="blk", names=["it"])
    it = loop.iter_args[0]
    with b.inside(loop.body):
        one = b.constant(1, i32)
        phase = b.op("tile.and", it, one, name_hint="phase")
        for op in work:
            loop.body.append(op)
        inner = Builder.at_end(loop.body)
        if any(isinstance(op, TmaLoadOp) for w in work for op in w.walk()):
            # every read of the cache is done before the next block's copies overwrite it
            inner.create("tile.fence_async_shared")
            inner.create("tile.cta_barrier")
        nxt = inner.op("tile.add", it, one, name_hint="it_next")
        inner.yield_(nxt)
    # inside the loop, the row block is the loop variable, not the program id
    replace_uses(loop.body, pid_op.result, loop.induction_var)
    _parities(loop.body, phase)
    for op in teardown:
        body.append(op)
    kernel.launch.grid = (CallExpr("min", (Sym("num_sms"), blocks)),)
    kernel.launch.persistent = True
    return None


def _parities(block: Block, phase: Value) -> None:
    """Waits on barriers allocated before the loop complete once per row block: parity `it & 1`."""
    for op in block.walk():
        if isinstance(op, MBarrierWaitOp) and const_value(op.phase) == 0:
            op.phase = phase


@register
class Persistent(Pass):
    """A grid of min(SMs, row blocks) programs, each looping over row blocks."""

    name = "persistent"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            why = make_persistent(kernel)
            if why is not None:
                self.remark(kernel, why)
