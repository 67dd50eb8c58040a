"""pipeline{stages=S}: a shared-memory cache filled by TMA becomes a stream of copies through S slots.

The copies of a cache (from `reuse{cache=smem}`: K chunks of each row block, read by P phases) are
numbered g = 0, 1, ...: item g lives in slot g % S and its barrier phase has parity (g // S) & 1.
A prologue issues the first S items; after the last read of an item, each thread fences, the CTA
meets at a barrier, and the slot is refilled with item g + S (when there is one). Then:

- S >= K (resident): the K chunks of a row block stay in their slots for every phase; an item is
  a chunk, and after the last phase read it its slot is refilled with the item S ahead: under
  `persistent` a chunk of one of the program's next row blocks, so S / K row blocks are in
  flight and the next blocks' loads overlap this block's work (with one block per program there
  is no next block: S is capped at K);
- S < K (ring): chunks do not stay; each phase streams the K chunks through the ring again
  (P * K items per row block), so the copy of chunk g + S overlaps the work on chunk g.

Before (resident cache of K = 4 chunks, one row block per program):
    tile.for %k ... { tile.mbarrier_expect %ready, %k ... ; tile.tma_load %desc, %row, %col, %ready, %k, %slot }
    ... tile.mbarrier_wait %ready, %chunk, %c0 ; %x = tile.smem_load %s ...      // phase 1
    ... %x2 = tile.smem_load %s2 ...                                              // phase 2
After (stages=2: a ring):
    (prologue: items 0 and 1)
    ... %g = ... ; %slot = tile.rem %g, %c2 ; %par = tile.and (tile.div %g, %c2), %c1
        tile.mbarrier_wait %ready, %slot, %par ; %x = tile.smem_load ...
        tile.fence_async_shared ; tile.cta_barrier
        tile.if (%g + 2 < %total) { ... tile.tma_load ... (item g + 2) }
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tilec.ir.builder import Builder
from tilec.ir.core import Block, Kernel, Module, Operation, Value, defining_op, use_counts
from tilec.ir.dtypes import i32
from tilec.ir.ops import (
    ForOp,
    MBarrierExpectOp,
    MBarrierInitOp,
    MBarrierInvalidateOp,
    MBarrierWaitOp,
    SmemAllocOp,
    SmemIndexOp,
    SmemLoadOp,
    TmaLoadOp,
    WarpSpecializeOp,
)
from tilec.ir.target import DEFAULT
from tilec.ir.types import MBarrierType, SharedBufferType, TensorDescType
from tilec.passes.affine import affine
from tilec.passes.base import Pass, register
from tilec.passes.persistent import persistent_loop
from tilec.passes.rewrite import const_value

RING_HEADROOM = 35 * 1024  # bytes of a block's shared memory the rings leave to the rest (192 KiB on the H100)


@dataclass
class Read:
    load: SmemLoadOp
    index: SmemIndexOp  # the slot it reads (its operand 1 is the chunk number)
    phase: int


@dataclass
class Cache:
    """A TMA-filled shared-memory cache as reuse{cache=smem} leaves it."""

    buf: Value
    ready: Value
    desc: Value
    nbytes: int
    chunks: int  # K
    col0: int  # the column of chunk 0
    col_step: int  # columns between chunks
    rows_per_block: int  # row coordinate = block * rows_per_block + row_const
    row_const: int
    fills: list[Operation]  # the copy ops (and their expects) to replace
    reads: list[Read]
    waits: list[MBarrierWaitOp]

    @property
    def phases(self) -> int:
        return max((r.phase for r in self.reads), default=-1) + 1


def _top(block: Block, op: Operation) -> Operation | None:
    cur: Operation | None = op
    while cur is not None and cur.parent is not block:
        parent = cur.parent
        cur = parent.parent_op if parent is not None else None
    return cur


def _slot_of(view: Value, buf: Value) -> SmemIndexOp | None:
    """The `tile.smem_index` that makes `view` a slot of `buf`, or None."""
    op = defining_op(view)
    return op if isinstance(op, SmemIndexOp) and op.buf is buf else None


def find_caches(kernel: Kernel, body: Block, row_var: Value) -> list[Cache]:
    caches = []
    for alloc in [op for op in kernel.body.ops if isinstance(op, SmemAllocOp)]:
        buf = alloc.result
        t = buf.type
        if not isinstance(t, SharedBufferType) or t.slots is None:
            continue
        copies = [op for op in body.walk() if isinstance(op, TmaLoadOp) and _slot_of(op.dst, buf) is not None]
        if not copies or any(op.parent is not body for op in copies):
            continue
        desc = copies[0].desc
        assert isinstance(desc.type, TensorDescType)
        if len(desc.type.block_shape) != 2:
            continue
        ready = copies[0].bars
        cols: list[int] = []
        rows: set[tuple[int, int]] = set()
        for c in copies:
            row, col = affine(c.coords[0]), const_value(c.coords[1])
            if row is None or not isinstance(col, int) or c.bars is not ready or c.desc is not desc:
                break
            terms = row.scalar_terms()
            if set(terms) - {id(row_var)}:
                break
            rows.add((terms.get(id(row_var), 0), row.const))
            cols.append(col)
        else:
            if len(rows) != 1:
                continue
            ((rows_per_block, row_const),) = rows
            step = cols[1] - cols[0] if len(cols) > 1 else 0
            if cols != [cols[0] + i * step for i in range(len(cols))]:
                continue
            expects = [op for op in body.ops if isinstance(op, MBarrierExpectOp) and op.bars is ready]
            reads = [
                Read(op, view, 0)
                for op in body.walk()
                if isinstance(op, SmemLoadOp) and (view := _slot_of(op.buf, buf)) is not None
            ]
            tops: list[Operation] = []
            for r in reads:
                top = _top(body, r.load)
                if top is None:
                    break
                if top not in tops:
                    tops.append(top)
                r.phase = tops.index(top)
            else:
                waits = [op for op in body.walk() if isinstance(op, MBarrierWaitOp) and op.bars is ready]
                nbytes = int(expects[0].attr("bytes")) if expects else 0
                caches.append(
                    Cache(
                        buf,
                        ready,
                        desc,
                        nbytes,
                        len(copies),
                        cols[0],
                        step,
                        rows_per_block,
                        row_const,
                        [*copies, *expects],
                        reads,
                        waits,
                    )
                )
    return caches


BlockOf = Callable[[Builder, Value], Value]  # the row block of an item, from its block counter


def _issue(b: Builder, cache: Cache, g: Value, items: int, stages: int, block_of: BlockOf) -> None:
    """Copies item `g` (into slot g % stages)."""
    c = b.constant
    it = b.op("tile.div", g, c(items, i32), name_hint="item_block")
    j = b.op("tile.rem", g, c(items, i32), name_hint="item_in_block")
    k = b.op("tile.rem", j, c(cache.chunks, i32), name_hint="item_chunk")
    blk = block_of(b, it)
    row = b.op("tile.mul", blk, c(cache.rows_per_block, i32), name_hint="item_row")
    if cache.row_const:
        row = b.op("tile.add", row, c(cache.row_const, i32))
    col = b.op("tile.mul", k, c(cache.col_step, i32))
    if cache.col0:
        col = b.op("tile.add", col, c(cache.col0, i32))
    slot = b.op("tile.rem", g, c(stages, i32), name_hint="item_slot")
    b.create("tile.mbarrier_expect", cache.ready, slot, bytes=cache.nbytes)
    view = b.op("tile.smem_index", cache.buf, slot)
    b.create("tile.tma_load", cache.desc, row, col, cache.ready, slot, view)


def _issue_if_before(
    b: Builder, g: Value, total: Value, cache: Cache, items: int, stages: int, block_of: BlockOf
) -> None:
    """Copies item `g` if it is one of the `total` items: `if g < total { issue }`."""
    guard = b.if_(b.op("tile.cmp", g, total, predicate="lt"))
    with b.inside(guard.regions[0]):
        _issue(b, cache, g, items, stages, block_of)
        b.yield_()
    Builder.at_end(guard.regions[1]).yield_()


def pipeline_cache(kernel: Kernel, cache: Cache, stages: int, anchor: Operation) -> None:
    """Rewrites one cache; its ring, barriers and prologue go right before `anchor`."""
    loop = persistent_loop(kernel)
    resident = stages >= cache.chunks
    slots = stages
    items = cache.chunks if resident else cache.phases * cache.chunks

    # the ring: a buffer of `slots` slots and as many barriers, made before the (loop) body
    alloc_op = defining_op(cache.buf)
    ready_op = defining_op(cache.ready)
    assert alloc_op is not None and ready_op is not None
    bt = cache.buf.type
    assert isinstance(bt, SharedBufferType)
    b = Builder.before(anchor)
    new_buf = b.op(
        "tile.smem_alloc", type=SharedBufferType(bt.shape, bt.dtype, bt.layout, slots), name_hint=cache.buf.name_hint
    )
    new_ready = b.op("tile.mbarrier_alloc", type=MBarrierType(slots), name_hint=cache.ready.name_hint)
    for op in list(kernel.walk()):
        if isinstance(op, (MBarrierInitOp, MBarrierInvalidateOp)) and op.bars is cache.ready:
            owner = op.parent.parent_op if op.parent is not None else None
            op.erase()
            if isinstance(owner, ForOp) and owner is not loop and all(o.name == "tile.yield" for o in owner.body.ops):
                owner.erase()  # an init or invalidate loop, now empty
    b = Builder.before(anchor)  # (erasing moved the ops before it)
    for s in range(slots):
        b.create("tile.mbarrier_init", new_ready, b.constant(s, i32), count=1)
    end = Builder.at_end(kernel.body)
    for s in range(slots):
        end.create("tile.mbarrier_invalidate", new_ready, end.constant(s, i32))

    # how many items this program copies, and which row block an item belongs to
    if loop is not None:
        pid, nblocks, nprog = loop.lower, loop.upper, loop.step
        left = b.op("tile.sub", nblocks, pid)
        ceil = b.op("tile.add", left, b.op("tile.sub", nprog, b.constant(1, i32)))
        blocks = b.op("tile.div", ceil, nprog, name_hint="my_blocks")
        total = b.op("tile.mul", blocks, b.constant(items, i32), name_hint="items")
        it_value: Value = loop.iter_args[0]

        def block_of(bb: Builder, it: Value) -> Value:
            return bb.op("tile.add", pid, bb.op("tile.mul", it, nprog), name_hint="item_rowblock")
    else:
        pid_ops = [op for op in kernel.body.ops if op.name == "tile.program_id"]
        pid = pid_ops[0].result
        total = b.constant(items, i32, name_hint="items")
        it_value = b.constant(0, i32)

        def block_of(bb: Builder, it: Value) -> Value:
            return pid  # one row block per program

    cache.buf, cache.ready = new_buf, new_ready
    # prologue: the first `slots` items
    for q in range(slots):
        _issue_if_before(b, b.constant(q, i32), total, cache, items, slots, block_of)

    # every read: wait (first read of an item), read its slot, and release it after its last read
    last_phase = cache.phases - 1
    for r in cache.reads:
        rb = Builder.before(r.load)
        chunk = r.index.slot
        base = rb.op("tile.mul", it_value, rb.constant(items, i32))
        offset = r.phase * cache.chunks if not resident else 0
        g = rb.op("tile.add", base, rb.op("tile.add", chunk, rb.constant(offset, i32)), name_hint="item")
        slot = rb.op("tile.rem", g, rb.constant(slots, i32), name_hint="slot")
        if not resident or r.phase == 0:
            rnd = rb.op("tile.div", g, rb.constant(slots, i32))
            parity = rb.op("tile.and", rnd, rb.constant(1, i32), name_hint="parity")
            rb.create("tile.mbarrier_wait", new_ready, slot, parity)
        # a view of its own: the old view may be shared with the copy or another read
        r.load.buf = rb.op("tile.smem_index", new_buf, slot, type=r.index.result.type)
        if not resident or r.phase == last_phase:
            after = Builder.after(r.load)
            after.create("tile.fence_async_shared")
            after.create("tile.cta_barrier")
            h = after.op("tile.add", g, after.constant(slots, i32), name_hint="next_item")
            _issue_if_before(after, h, total, cache, items, slots, block_of)
    for op in cache.waits:
        op.erase()
    for op in cache.fills:
        op.erase()
    # the views of the old buffer the copies and reads used are unused now
    uses = use_counts(kernel.body)
    for op in list(kernel.walk()):
        if isinstance(op, SmemIndexOp) and op.buf is alloc_op.result and not uses.get(id(op.result)):
            op.erase()
    uses = use_counts(kernel.body)
    assert not uses.get(id(alloc_op.result)) and not uses.get(id(ready_op.result)), "the old cache is still used"
    alloc_op.erase()
    ready_op.erase()


def _first_use(block: Block, caches: list[Cache]) -> Operation:
    """The first op of `block` that copies into or reads from one of the caches."""
    uses = {id(op) for c in caches for op in [*c.fills, *(r.load for r in c.reads)]}
    for op in block.ops:
        if any(id(o) in uses for o in op.walk()):
            return op
    raise AssertionError("the caches are never used")


@register
class Pipeline(Pass):
    """Streams TMA-filled caches through `stages` slots (all chunks resident when they fit)."""

    name = "pipeline"
    stages: int = 0  # 0: chosen (resident; under persistent, row blocks enough for inflight_bytes)
    inflight_bytes: int = 65536  # stages=0 under persistent: bytes of copies to keep in flight
    # stages=0: the rings' shared memory stays below this; the rest of the block's is left to the
    # other shared buffers (barriers, a second cache) and the compiler's own
    smem_budget: int = DEFAULT.smem_per_block - RING_HEADROOM

    def run(self, module: Module) -> None:
        if self.stages < 0:
            raise ValueError("stages must be at least 1 (or 0: chosen by the pass)")
        for kernel in module.kernels:
            if any(isinstance(op, WarpSpecializeOp) for op in kernel.walk()):
                self.remark(kernel, "warp-specialized (run pipeline before warp-specialize)")
                continue
            loop = persistent_loop(kernel)
            body = loop.body if loop is not None else kernel.body
            row_var = (
                loop.induction_var
                if loop is not None
                else next(op.result for op in kernel.body.ops if op.name == "tile.program_id")
            )
            caches = find_caches(kernel, body, row_var)
            if not caches:
                self.remark(
                    kernel, "no shared-memory cache filled by a TMA copy per row block (reuse{cache=smem} makes them)"
                )
                continue
            # every cache's copies start together: under `persistent` before the loop, else
            # before the first use of any of them (so the tail's chunk overlaps the main loop)
            first = loop if loop is not None else _first_use(kernel.body, caches)
            # a placeholder marks the spot: the op there may be a copy that is about to go
            anchor = defining_op(Builder.before(first).constant(0, i32))
            assert anchor is not None
            for cache, stages in zip(caches, self.choose(caches, loop is not None)):
                pipeline_cache(kernel, cache, stages, anchor)
            anchor.erase()

    def choose(self, caches: list[Cache], persistent: bool) -> list[int]:
        """Slots per cache. Without a next row block, more than K slots would never fill."""
        if self.stages:
            return [self.stages if persistent else min(self.stages, c.chunks) for c in caches]
        if not persistent:
            return [c.chunks for c in caches]
        block = sum(c.chunks * c.nbytes for c in caches)  # one row block of every cache
        blocks = max(1, min(self.inflight_bytes // max(block, 1), self.smem_budget // max(block, 1)))
        return [c.chunks * blocks for c in caches]
