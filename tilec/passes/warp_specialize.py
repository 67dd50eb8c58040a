"""warp-specialize{producer_warps=1,producer_regs=24}: TMA copies move to a producer partition.

Runs after `pipeline`. Each ring it left (a multi-slot buffer whose copies are issued by guarded
`tile.if`s: a prologue before the work, a refill after an item's last read) gets a producer
partition of `producer_warps` warps, register budget `producer_regs`, that issues every item of
the ring in order. Per slot, an "empty" barrier hands slots back:

    producer, item g = 0 .. total-1:             consumer (the default partition), item g:
      wait empty[g % S], parity ((g // S) & 1) ^ 1  wait ready[g % S], parity (g // S) & 1
      expect ready[g % S]; TMA copy of item g       read the slot (every phase that reads it)
                                                   fence_async_shared; arrive empty[g % S]

A fresh barrier passes parity 1 at once, so the producer's first round over the ring does not
wait. The consumer keeps the kernel's code with the prologue gone and each refill replaced by the
release (the fence orders its generic reads before the producer's next TMA write into the slot);
both sides count items the same way, so their trip counts agree. Each ring has its own producer:
one producer for two rings would have to interleave their items exactly as the consumer reads
them, or deadlock.

Before (after pipeline{stages=2}):
    tile.if (0 < %items) { ...; tile.mbarrier_expect %ready, %s; tile.tma_load ... }      // prologue
    ... tile.mbarrier_wait %ready, %slot, %parity ; %x = tile.smem_load ...
        tile.fence_async_shared ; tile.cta_barrier
        tile.if (%g + 2 < %items) { ... tile.tma_load ... }                                // refill
After:
    %empty = tile.mbarrier_alloc : mbarrier<2>   (+ inits, count 1)
    tile.warp_specialize default(...) {
        ... tile.mbarrier_wait %ready, %slot, %parity ; %x = tile.smem_load ...
            tile.fence_async_shared ; tile.mbarrier_arrive %empty, (%g + 2) % 2
    } worker(warps = 1, regs = 24)(...) {
        tile.for %g = 0 to %items { wait %empty, %g % 2, ((%g // 2) & 1) ^ 1 ; expect ; tma_load }
    }
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilec.ir.builder import Builder
from tilec.ir.core import Block, Kernel, Module, Operation, Value, defining_op
from tilec.ir.dtypes import i32
from tilec.ir.ops import (
    CtaBarrierOp,
    FenceAsyncSharedOp,
    ForOp,
    IfOp,
    MBarrierAllocOp,
    MBarrierInitOp,
    MBarrierInvalidateOp,
    SmemAllocOp,
    SmemIndexOp,
    TmaLoadOp,
    WarpSpecializeOp,
)
from tilec.ir.types import MBarrierType, SharedBufferType
from tilec.passes.base import Pass, register
from tilec.passes.rewrite import const_value


class NotApplicableError(Exception):
    """The kernel is not in the form this pass rewrites (the reason is the message)."""


@dataclass
class Ring:
    buf: Value
    ready: Value
    slots: int
    total: Value
    prologue: list[IfOp] = field(default_factory=list)
    refills: list[IfOp] = field(default_factory=list)


def _issue_parts(guard: IfOp) -> tuple[Value, Value, Value] | None:
    """(buffer, ready barriers, guarded item) of a `tile.if (item < total) { ... copy ... }`."""
    copies = [op for op in guard.regions[0].walk() if isinstance(op, TmaLoadOp)]
    if len(copies) != 1 or guard.regions[1].ops[:-1]:
        return None
    cond = defining_op(guard.operands[0])
    if cond is None or cond.name != "tile.cmp" or cond.attr("predicate") != "lt":
        return None
    view = defining_op(copies[0].operands[-1])
    if not isinstance(view, SmemIndexOp):
        return None
    rank = len(copies[0].operands) - 4
    return view.operands[0], copies[0].operands[1 + rank], cond.operands[0]


def find_rings(kernel: Kernel) -> list[Ring]:
    rings: dict[int, Ring] = {}
    guarded: set[int] = set()
    for op in kernel.walk():
        if not isinstance(op, IfOp):
            continue
        parts = _issue_parts(op)
        if parts is None:
            continue
        buf, ready, item = parts
        cond = defining_op(op.operands[0])
        assert cond is not None
        t = buf.type
        if not isinstance(t, SharedBufferType) or t.slots is None or not isinstance(defining_op(buf), SmemAllocOp):
            continue
        ring = rings.setdefault(id(buf), Ring(buf, ready, t.slots, cond.operands[1]))
        if ring.ready is not ready or ring.total is not cond.operands[1]:
            raise NotApplicableError(f"the copies into %{buf.name_hint} do not form one ring")
        if op.parent is kernel.body and isinstance(const_value(item), int):
            ring.prologue.append(op)
        else:
            ring.refills.append(op)
        guarded.update(id(o) for o in op.walk() if isinstance(o, TmaLoadOp))
    for op in kernel.walk():
        if isinstance(op, TmaLoadOp) and id(op) not in guarded:
            raise NotApplicableError("a TMA copy is not part of a pipelined ring (run `pipeline` first)")
    for ring in rings.values():
        if len(ring.prologue) != min(ring.slots, len(ring.prologue)) or not ring.prologue:
            raise NotApplicableError(f"the ring %{ring.buf.name_hint} has no prologue")
    return list(rings.values())


def _setup(op: Operation) -> bool:
    if isinstance(op, (SmemAllocOp, MBarrierAllocOp, MBarrierInitOp)):
        return True
    return isinstance(op, ForOp) and all(isinstance(o, MBarrierInitOp) or o.name == "tile.yield" for o in op.body.ops)


def _teardown(op: Operation) -> bool:
    if isinstance(op, MBarrierInvalidateOp):
        return True
    return isinstance(op, ForOp) and all(
        isinstance(o, MBarrierInvalidateOp) or o.name == "tile.yield" for o in op.body.ops
    )


class Partition:
    """A partition's block being filled: values from outside become captured block arguments."""

    def __init__(self) -> None:
        self.block = Block()
        self.captures: list[Value] = []
        self.map: dict[int, Value] = {}

    def capture(self, v: Value) -> Value:
        if id(v) not in self.map:
            self.captures.append(v)
            self.map[id(v)] = self.block.add_arg(v.type, v.name_hint)
        return self.map[id(v)]

    def materialize(self, v: Value, b: Builder, outside: set[int]) -> Value:
        """`v` inside the partition: captured if it is defined outside the work (`outside`),
        else recomputed from copies of its defining ops (scalar and pure, as index math is)."""
        if id(v) in self.map:
            return self.map[id(v)]
        op = defining_op(v)
        if id(v) in outside:
            return self.capture(v)
        if op is None:
            raise NotApplicableError(f"the copies use %{v.name_hint}, a loop value")
        if not op.is_pure or op.regions:
            raise NotApplicableError(f"the copies use %{v.name_hint}, which '{op.name}' computes")
        self.copy(op, b, outside)
        return self.map[id(v)]

    def copy(self, op: Operation, b: Builder, outside: set[int]) -> None:
        operands = [self.materialize(o, b, outside) for o in op.operands]
        new = b.create(type(op), *operands, result_types=[r.type for r in op.results], **op.attributes)
        new.loc = op.loc
        for old, fresh in zip(op.results, new.results):
            fresh.name_hint = old.name_hint
            self.map[id(old)] = fresh

    def capture_free(self) -> None:
        """Every value the block uses but does not define becomes a captured argument."""
        defined: set[int] = {id(a) for a in self.block.args}
        for op in self.block.walk():
            defined.update(id(r) for r in op.results)
            defined.update(id(a) for r in op.regions for a in r.args)
        for op in list(self.block.walk()):
            for i, v in enumerate(op.operands):
                if id(v) not in defined:
                    op.operands[i] = self.capture(v)


def specialize(kernel: Kernel, producer_warps: int, producer_regs: int) -> str | None:
    """Rewrites `kernel`; returns why not when it cannot."""
    if any(isinstance(op, WarpSpecializeOp) for op in kernel.walk()):
        return "already warp-specialized"
    if kernel.launch.num_warps is None:
        return "the kernel is not planned (run `plan` first)"
    if kernel.launch.num_warps % 4:
        return f"the kernel has {kernel.launch.num_warps} warps; Gluon specializes kernels of whole warp groups (4, 8, ...)"
    try:
        rings = find_rings(kernel)
    except NotApplicableError as e:
        return str(e)
    if not rings:
        return "no pipelined ring"
    body = kernel.body
    ops = list(body.ops)
    setup = [op for op in ops if _setup(op)]
    teardown = [op for op in ops if _teardown(op)]
    # scalars that setup and teardown use stay outside (captured where the work uses them too)
    keep: list[Operation] = []
    for op in setup + teardown:
        for inner in op.walk():
            for v in inner.operands:
                d = defining_op(v)
                if d is not None and d.parent is body and d not in keep and d not in setup:
                    if d.regions or not d.is_pure or d.operands:
                        return f"'{d.name}' feeds the barrier setup"
                    keep.append(d)
    outside_ops = {id(op) for op in setup + teardown + keep}
    work = [op for op in ops if id(op) not in outside_ops]
    outside = {id(r) for op in setup + keep for r in op.results} | {id(a) for a in kernel.params}

    # the empty barriers (in a scratch block until the body is rebuilt)
    scratch = Block()
    b = Builder.at_end(scratch)
    empties = []
    for ring in rings:
        empty = b.op("tile.mbarrier_alloc", type=MBarrierType(ring.slots), name_hint=f"{ring.buf.name_hint}_empty")
        for s in range(ring.slots):
            b.create("tile.mbarrier_init", empty, b.constant(s, i32), count=1)
        empties.append(empty)

    # the producers, while the work is still whole (they copy its index math)
    producers = []
    for ring, empty in zip(rings, empties):
        p = Partition()
        try:
            _producer(p, ring, p.capture(empty), outside)
        except NotApplicableError as e:
            return str(e)
        producers.append(p)

    # the consumer: the work without the prologue, each refill replaced by a release
    prologue = {id(g) for r in rings for g in r.prologue}
    consumer = Partition()
    for op in work:
        if id(op) not in prologue:
            consumer.block.append(op)
    for ring, empty in zip(rings, empties):
        for guard in ring.refills:
            _release(guard, empty, ring.slots)
    _drop_cta_barriers(consumer.block)
    Builder.at_end(consumer.block).yield_()
    consumer.capture_free()

    body.ops = []
    for op in keep + setup + scratch.ops:
        body.append(op)
    regions = [consumer, *producers]
    ws = WarpSpecializeOp(
        [v for r in regions for v in r.captures],
        [],
        {
            "captures": [len(r.captures) for r in regions],
            "worker_warps": [producer_warps] * len(producers),
            "worker_regs": [producer_regs] * len(producers),
        },
        [r.block for r in regions],
    )
    body.append(ws)
    for op in teardown:
        body.append(op)
    end = Builder.at_end(body)
    for ring, empty in zip(rings, empties):
        for s in range(ring.slots):
            end.create("tile.mbarrier_invalidate", empty, end.constant(s, i32))
    return None


def _producer(p: Partition, ring: Ring, empty: Value, outside: set[int]) -> None:
    """Fills the producer's block: every item of the ring, in order, each once its slot is empty.
    The copy is the prologue's first, with its constant item number replaced by the loop's."""
    b = Builder.at_end(p.block)
    first = ring.prologue[0]
    cond = defining_op(first.operands[0])
    assert cond is not None
    total = p.materialize(ring.total, b, outside)
    c0, c1, slots = b.constant(0, i32), b.constant(1, i32), b.constant(ring.slots, i32)
    loop = b.for_(c0, total, c1, iv_name="g")
    with b.inside(loop.body):
        g = loop.induction_var
        slot = b.op("tile.rem", g, slots, name_hint="slot")
        rnd = b.op("tile.div", g, slots, name_hint="round")
        par = b.op("tile.and", rnd, c1)
        epar = b.op("tile.xor", par, c1, name_hint="empty_parity")
        b.create("tile.mbarrier_wait", empty, slot, epar)
        p.map[id(cond.operands[0])] = g
        for op in first.regions[0].ops:
            if op.name != "tile.yield":
                p.copy(op, b, outside)
        b.yield_()
    Builder.at_end(p.block).yield_()


def _release(guard: IfOp, empty: Value, slots: int) -> None:
    """`if (h < total) {copy item h}` becomes `arrive empty[h % S]` (after a fence)."""
    cond = defining_op(guard.operands[0])
    assert cond is not None and guard.parent is not None
    b = Builder.before(guard)
    if not any(isinstance(o, FenceAsyncSharedOp) for o in guard.parent.ops[: guard.parent.ops.index(guard)]):
        b.create("tile.fence_async_shared")
    slot = b.op("tile.rem", cond.operands[0], b.constant(slots, i32), name_hint="release_slot")
    b.create("tile.mbarrier_arrive", empty, slot)
    guard.erase()


def _drop_cta_barriers(block: Block) -> None:
    """A CTA barrier right after a fence ordered reads before the next TMA write into the cache;
    the empty barriers order them now (and a barrier of all warps has no place in a partition)."""
    for op in list(block.walk()):
        if isinstance(op, CtaBarrierOp) and op.parent is not None:
            ops = op.parent.ops
            i = ops.index(op)
            if i > 0 and isinstance(ops[i - 1], FenceAsyncSharedOp):
                op.erase()


@register
class WarpSpecialize(Pass):
    """A producer partition issues each pipelined ring's TMA copies; the kernel's warps consume."""

    name = "warp-specialize"
    producer_warps: int = 1
    producer_regs: int = 24

    def run(self, module: Module) -> None:
        if self.producer_warps < 1 or self.producer_warps & (self.producer_warps - 1):
            raise ValueError("producer_warps must be a power of two")
        if not 24 <= self.producer_regs <= 256 or self.producer_regs % 8:
            raise ValueError("producer_regs must be a multiple of 8 in 24..256")
        for kernel in module.kernels:
            why = specialize(kernel, self.producer_warps, self.producer_regs)
            if why is not None:
                self.remark(kernel, why)
