"""warp-specialize{producer_warps=1,producer_regs=24}: TMA copies move to a producer partition.

What the pass reads from the IR, whatever pass wrote it (`pipeline`, then `canonicalize` or not):

- a ring: every `tile.tma_load` whose destination is a slot (`tile.smem_index`) of a buffer with
  slots that `tile.smem_alloc` made; the copies into one buffer are one ring, and their barrier
  (`bars`, the same for all of them, with the slot as its index) is the ring's "ready" barrier;
- each copy's item: from its slot index, `h % S` (S: the slots) is item h, a constant c is item c;
  the `tile.mbarrier_expect` on its barrier slot right before it goes with it;
- its guard, if any: the `tile.if (h < total)` right around it (a guard whose condition is
  anything else is refused). Guarded and unguarded copies are both accepted, so a prologue whose
  guards `canonicalize` decided (`0 < 4`), or a refill it proved in range, still counts;
- the item count: the guards' `total` (all the same); with no refill, the copied items themselves;
- the first fills (the prologue): the constant items 0 .. S-1, at the kernel's top level; every
  other copy is a refill of its slot. A ring with refills needs the whole prologue;
- the consumers: the `tile.mbarrier_wait`s on the ready barrier (there must be some).

Each ring gets a producer partition of `producer_warps` warps, register budget `producer_regs`,
that issues every item in order. Per slot, an "empty" barrier hands slots back:

    producer, item g = 0 .. total-1:             consumer (the default partition), item g:
      wait empty[g % S], parity ((g // S) & 1) ^ 1  wait ready[g % S], parity (g // S) & 1
      expect ready[g % S]; TMA copy of item g       read the slot (every phase that reads it)
                                                   fence_async_shared; arrive empty[g % S]

The producer's copy is a template: a copy whose coordinates are computed from its item value (a
guarded prologue copy as `pipeline` prints it, else a refill, whose h is a run-time value), with
that value replaced by the producer's loop counter g. The template is checked against every copy
of a constant item (its coordinates, evaluated at that item, must be that copy's); a ring whose
copies disagree is refused. Where every copy is of a constant item (no refill left, e.g. all
chunks resident and the guards folded), the producer issues those copies one by one in item order
(each under its guard if it has one), waiting on the empty barrier only for items >= S: a fresh
barrier passes parity 1 at once, so the first round over the ring never waits, and a ring without
refills needs no empty barriers at all.

The consumer keeps the kernel's code with the prologue gone and each refill replaced by the
release (the fence orders its generic reads before the producer's next TMA write into the slot);
both sides count items the same way, so their trip counts agree. Each ring has its own producer:
one producer for two rings would have to interleave their items exactly as the consumer reads
them, or deadlock. Refused, with a remark saying why: a TMA copy not into a ring slot, copies
into one buffer on different barriers, a slot index that is neither a constant nor `h % S`, a
copy under another condition, an unguarded refill with no count to take from a guard, a ring
without its prologue or without a consumer, copies that do not agree with the template.

Before (after pipeline{stages=2}):
    tile.if (0 < %items) { ...; tile.mbarrier_expect %ready, %s; tile.tma_load ... }      // prologue
    ... tile.mbarrier_wait %ready, %slot, %parity ; %x = tile.smem_load ...
        tile.fence_async_shared ; tile.cta_barrier
        tile.if (%g + 2 < %items) { ... tile.tma_load ... }                                // refill
    (after canonicalize as well: the prologue's guards gone where %items is a constant, its
     slots constants, some refills unguarded where their item is always in range)
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

from collections.abc import Hashable
from dataclasses import dataclass, field

from tilec.ir.builder import Builder
from tilec.ir.core import Block, Kernel, Module, Operation, Value, defining_op, use_counts
from tilec.ir.dtypes import DType, i32
from tilec.ir.ops import (
    BinaryOp,
    CmpOp,
    CtaBarrierOp,
    FenceAsyncSharedOp,
    ForOp,
    IfOp,
    MBarrierAllocOp,
    MBarrierExpectOp,
    MBarrierInitOp,
    MBarrierInvalidateOp,
    MBarrierWaitOp,
    SmemAllocOp,
    SmemIndexOp,
    TmaLoadOp,
    WarpSpecializeOp,
)
from tilec.ir.types import MBarrierType, SharedBufferType
from tilec.passes.base import Pass, register
from tilec.passes.rewrite import const_value, fold_binary, same_value


class NotApplicableError(Exception):
    """The kernel is not in the form this pass rewrites (the reason is the message)."""


@dataclass
class Copy:
    """A TMA copy into a ring slot, and what it says about the ring."""

    op: TmaLoadOp
    expect: MBarrierExpectOp
    slot: Value  # the slot index (the copy's barrier index too)
    item: Value  # h of a slot `h % S`; a constant slot is its own item
    number: int | None  # the item, where it is a constant
    guard: IfOp | None  # the `tile.if (item < total)` right around the copy, if any

    @property
    def top(self) -> Operation:
        return self.guard if self.guard is not None else self.op


@dataclass
class Ring:
    buf: Value
    ready: Value
    slots: int
    copies: list[Copy] = field(default_factory=list)
    total: Value | None = None  # the guards' item count
    template: Copy | None = None  # None: every item is a constant one, issued one by one

    def is_first(self, c: Copy) -> bool:
        """A copy of the prologue: the first fill of its slot (the producer issues it)."""
        return c.number is not None and c.number < self.slots

    @property
    def has_refills(self) -> bool:
        return any(not self.is_first(c) for c in self.copies)


def _name(v: Value) -> str:
    return f"%{v.name_hint}" if v.name_hint else "a value"


def _int(v: Value) -> int | None:
    c = const_value(v)
    return c if isinstance(c, int) and not isinstance(c, bool) else None


def find_rings(kernel: Kernel) -> list[Ring]:
    """The rings of the kernel's TMA copies; raises NotApplicableError where one does not fit."""
    by_buf: dict[int, list[TmaLoadOp]] = {}
    bufs: list[Value] = []
    for op in kernel.walk():
        if not isinstance(op, TmaLoadOp):
            continue
        view = defining_op(op.dst)
        buf = view.buf if isinstance(view, SmemIndexOp) else None
        t = buf.type if buf is not None else None
        if (
            buf is None
            or not isinstance(defining_op(buf), SmemAllocOp)
            or not isinstance(t, SharedBufferType)
            or t.slots is None
        ):
            raise NotApplicableError(
                "a TMA copy is not into a slot of a ring (a `tile.smem_alloc` buffer with slots): run `pipeline` first"
            )
        if id(buf) not in by_buf:
            bufs.append(buf)
        by_buf.setdefault(id(buf), []).append(op)
    return [_ring(kernel, buf, by_buf[id(buf)]) for buf in bufs]


def _ring(kernel: Kernel, buf: Value, ops: list[TmaLoadOp]) -> Ring:
    t = buf.type
    assert isinstance(t, SharedBufferType) and t.slots is not None
    ring = Ring(buf, ops[0].bars, t.slots)
    b = _name(buf)
    if any(op.bars is not ring.ready for op in ops):
        raise NotApplicableError(f"the copies into {b} complete on different barriers")
    claimed: set[int] = set()
    for op in ops:
        ring.copies.append(_copy(ring, op, claimed))

    numbers = [c.number for c in ring.copies if c.number is not None]
    for n in numbers:
        if numbers.count(n) > 1:
            raise NotApplicableError(f"item {n} of {b} is copied twice")
    for c in ring.copies:
        if c.number is not None and c.top.parent is not kernel.body:
            raise NotApplicableError(f"the copy of item {c.number} into {b} is not at the kernel's top level")
    dynamic = [c for c in ring.copies if c.number is None]
    firsts = sorted(n for n in numbers if n < ring.slots)
    if ring.has_refills and firsts != list(range(ring.slots)):
        raise NotApplicableError(f"the ring {b} has no prologue (items 0 to {ring.slots - 1} copied before the work)")
    if not dynamic and sorted(numbers) != list(range(len(numbers))):
        raise NotApplicableError(f"the copies into {b} are not items 0 to {len(numbers) - 1}")

    totals = []
    for c in ring.copies:
        if c.guard is not None:
            cond = defining_op(c.guard.cond)
            assert isinstance(cond, CmpOp)
            totals.append(cond.rhs)
    if any(not same_value(x, totals[0]) for x in totals):
        raise NotApplicableError(f"the copies into {b} are guarded by different item counts")
    ring.total = totals[0] if totals else None
    if not any(isinstance(op, MBarrierWaitOp) and op.bars is ring.ready for op in kernel.walk()):
        raise NotApplicableError(f"nothing waits on {_name(ring.ready)}: the copies into {b} have no consumer")
    if dynamic:
        if ring.total is None:
            raise NotApplicableError(
                f"the refills of {b} are not guarded by `item < count`: the number of items is unknown"
            )
        if len({str(c.expect.attr("bytes")) for c in ring.copies}) > 1:
            raise NotApplicableError(f"the copies into {b} expect different byte counts")
        ring.template = _template(ring, dynamic)
        _check_template(ring, ring.template)
    return ring


def _copy(ring: Ring, op: TmaLoadOp, claimed: set[int]) -> Copy:
    """The copy's slot, item, expect and guard."""
    b = _name(ring.buf)
    view = defining_op(op.dst)
    assert isinstance(view, SmemIndexOp)
    slot = view.slot
    if not same_value(op.index, slot):
        raise NotApplicableError(f"a copy into {b} completes on the barrier of another slot")
    item, number = slot, _int(slot)
    if number is None:
        rem = defining_op(slot)
        if not (isinstance(rem, BinaryOp) and rem.name == "tile.rem" and _int(rem.rhs) == ring.slots):
            raise NotApplicableError(f"the slot of a copy into {b} is neither a constant nor `item % {ring.slots}`")
        item, number = rem.lhs, _int(rem.lhs)

    # the expect that goes with it: the last one on its barrier slot before it, in its block
    block = op.parent
    assert block is not None
    expect = None
    for prev in reversed(block.ops[: block.ops.index(op)]):
        if isinstance(prev, MBarrierExpectOp) and prev.bars is ring.ready and same_value(prev.index, slot):
            expect = prev
            break
    if expect is None or id(expect) in claimed:
        raise NotApplicableError(f"a copy into {b} has no `tile.mbarrier_expect` of its own before it")
    claimed.add(id(expect))

    owner = block.parent_op
    guard = owner if isinstance(owner, IfOp) else None
    if guard is not None:
        cond = defining_op(guard.cond)
        if (
            block is not guard.regions[0]
            or not isinstance(cond, CmpOp)
            or cond.attr("predicate") != "lt"
            or not same_value(cond.lhs, item)
            or guard.results
            or any(o.name != "tile.yield" for o in guard.regions[1].ops)
        ):
            raise NotApplicableError(f"a copy into {b} is under a `tile.if` other than `item < count`")
        for o in block.ops:
            if o is not op and o is not expect and o.name != "tile.yield" and (not o.is_pure or o.regions):
                raise NotApplicableError(f"the `tile.if` around a copy into {b} does more than the copy ('{o.name}')")
    return Copy(op, expect, slot, item, number, guard)


def _template(ring: Ring, dynamic: list[Copy]) -> Copy:
    """The copy the producer's loop repeats: a guarded prologue copy whose slot is still computed
    from its item value (as `pipeline` prints it), else a refill (guarded ones first: a guard the
    range analysis could not decide says the item's range reaches the end of the items)."""
    for c in ring.copies:
        if ring.is_first(c) and c.guard is not None and c.item is not c.slot:
            cond = defining_op(c.guard.cond)
            if isinstance(cond, CmpOp) and cond.lhs is c.item:
                return c
    return next((c for c in dynamic if c.guard is not None), dynamic[0])


# A value as the pass compares copies: an integer `const + sum(coeff * atom)`, where an atom is a
# value the item does not reach or an op applied to such forms.
Sym = tuple[int, frozenset[tuple[Hashable, int]]]


def _sym(const: int, terms: dict[Hashable, int] | None = None) -> Sym:
    return const, frozenset((a, c) for a, c in (terms or {}).items() if c)


def _evaluate(v: Value, env: dict[int, Sym], memo: dict[int, Sym]) -> Sym:
    """`v` with the values of `env` replaced, folded where it is linear or constant."""
    if id(v) in env:
        return env[id(v)]
    if id(v) in memo:
        return memo[id(v)]
    c = _int(v)
    op = defining_op(v)
    out: Sym
    if c is not None:
        out = _sym(c)
    elif op is None:
        out = _sym(0, {("value", id(v)): 1})
    else:
        args = [_evaluate(o, env, memo) for o in op.operands]
        out = _sym(0, {_atom(op, v, args): 1})
        if isinstance(op, BinaryOp) and isinstance(v.type, DType) and v.type.is_int and not isinstance(op, CmpOp):
            (ca, ta), (cb, tb) = args
            if not ta and not tb:
                r = fold_binary(op.name, ca, cb, op.operand_dtype)
                if isinstance(r, int):
                    out = _sym(r)
            elif op.name in ("tile.add", "tile.sub"):
                k = 1 if op.name == "tile.add" else -1
                terms = dict(ta)
                for a, n in tb:
                    terms[a] = terms.get(a, 0) + k * n
                out = _sym(ca + k * cb, terms)
            elif op.name == "tile.mul" and (not ta or not tb):
                (s, _), (cx, tx) = (args[0], args[1]) if not ta else (args[1], args[0])
                out = _sym(s * cx, {a: s * n for a, n in tx})
    memo[id(v)] = out
    return out


def _atom(op: Operation, v: Value, args: list[Sym]) -> Hashable:
    if not op.is_pure or op.regions:
        return ("value", id(v))
    attrs = tuple(sorted((k, repr(a)) for k, a in op.attributes.items()))
    index = next(i for i, r in enumerate(op.results) if r is v)
    return ("op", op.name, attrs, tuple(args), repr(v.type), index)


def _check_template(ring: Ring, t: Copy) -> None:
    """Every copy of a constant item is what the template copies for that item."""

    def box(c: Copy) -> list[Value | None]:
        return [c.op.desc, *c.op.coords, c.op.pred]

    for c in ring.copies:
        if c.number is None or c is t:
            continue
        env = {id(t.item): _sym(c.number)}
        want = [v if v is None else _evaluate(v, {}, {}) for v in box(c)]
        memo: dict[int, Sym] = {}
        got = [v if v is None else _evaluate(v, env, memo) for v in box(t)]
        if want != got:
            raise NotApplicableError(
                f"the copies into {_name(ring.buf)} disagree: the copy of item {c.number} is not the one "
                f"the copy of item {_name(t.item)} makes for it"
            )


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
            op.operands = [v if id(v) in defined else self.capture(v) for v in op.operands]


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
    outside = {id(r) for op in setup + keep for r in op.results} | {id(a) for a in kernel.params}

    # the empty barriers, for the rings whose slots are refilled (in a scratch block until the
    # body is rebuilt)
    scratch = Block()
    b = Builder.at_end(scratch)
    empties: list[Value | None] = []
    for ring in rings:
        if not ring.has_refills:
            empties.append(None)
            continue
        bars = b.op("tile.mbarrier_alloc", type=MBarrierType(ring.slots), name_hint=f"{ring.buf.name_hint}_empty")
        for s in range(ring.slots):
            b.create("tile.mbarrier_init", bars, b.constant(s, i32), count=1)
        empties.append(bars)

    # the producers, while the work is still whole (they copy its index math)
    producers = []
    for ring, empty in zip(rings, empties):
        p = Partition()
        try:
            _producer(p, ring, p.capture(empty) if empty is not None else None, outside)
        except NotApplicableError as e:
            return str(e)
        producers.append(p)

    # the consumer: the work without the prologue, each refill replaced by a release
    for ring, empty in zip(rings, empties):
        for c in ring.copies:
            if ring.is_first(c):
                _drop_first(c, body)
            else:
                assert empty is not None
                _release(c, empty, ring.slots, body)
    consumer = Partition()
    for op in list(body.ops):
        if id(op) not in outside_ops:
            consumer.block.append(op)
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
        if empty is not None:
            for s in range(ring.slots):
                end.create("tile.mbarrier_invalidate", empty, end.constant(s, i32))
    return None


def _producer(p: Partition, ring: Ring, empty: Value | None, outside: set[int]) -> None:
    """Fills the producer's block: every item of the ring, in order, each once its slot is empty."""
    b = Builder.at_end(p.block)
    if ring.template is None:
        _issue_each(p, b, ring, empty, outside)
    else:
        assert empty is not None and ring.total is not None
        _issue_loop(p, b, ring, ring.template, ring.total, empty, outside)
    Builder.at_end(p.block).yield_()


def _issue_loop(p: Partition, b: Builder, ring: Ring, t: Copy, total: Value, empty: Value, outside: set[int]) -> None:
    """`for g = 0 to total`: the template copy, with its item value replaced by g."""
    n = p.materialize(total, b, outside)
    c0, c1, slots = b.constant(0, i32), b.constant(1, i32), b.constant(ring.slots, i32)
    loop = b.for_(c0, n, c1, iv_name="g")
    with b.inside(loop.body):
        g = loop.induction_var
        slot = b.op("tile.rem", g, slots, name_hint="slot")
        rnd = b.op("tile.div", g, slots, name_hint="round")
        par = b.op("tile.and", rnd, c1)
        epar = b.op("tile.xor", par, c1, name_hint="empty_parity")
        b.create("tile.mbarrier_wait", empty, slot, epar)
        p.map[id(t.item)] = g
        if t.guard is not None:
            for op in t.guard.regions[0].ops:
                if op.name != "tile.yield":
                    p.copy(op, b, outside)
        else:
            p.copy(t.expect, b, outside)
            p.copy(t.op, b, outside)
        b.yield_()


def _issue_each(p: Partition, b: Builder, ring: Ring, empty: Value | None, outside: set[int]) -> None:
    """Every copy is of a constant item: each in item order, under its guard if it has one."""
    for c in sorted(ring.copies, key=lambda c: c.number or 0):
        n = c.number
        assert n is not None
        if n >= ring.slots:  # the slot's earlier item must be read first
            assert empty is not None
            parity = ((n // ring.slots) & 1) ^ 1
            b.create("tile.mbarrier_wait", empty, b.constant(n % ring.slots, i32), b.constant(parity, i32))
        if c.guard is None:
            p.copy(c.expect, b, outside)
            p.copy(c.op, b, outside)
            continue
        for v in [*c.expect.operands, *c.op.operands]:  # index math before the guard: it dominates
            p.materialize(v, b, outside)
        guard = b.if_(p.materialize(c.guard.cond, b, outside))
        with b.inside(guard.regions[0]):
            p.copy(c.expect, b, outside)
            p.copy(c.op, b, outside)
            b.yield_()
        Builder.at_end(guard.regions[1]).yield_()


def _drop_first(c: Copy, root: Block) -> None:
    """A prologue copy leaves the consumer (the producer issues it)."""
    if c.guard is not None:
        c.guard.erase()
    else:
        _erase_with_feeders([c.expect, c.op], root)


def _release(c: Copy, empty: Value, slots: int, root: Block) -> None:
    """A refill `[if (h < total)] {expect; copy item h}` becomes `arrive empty[h % S]` (after a
    fence): the slot's earlier item has had its last read."""
    top = c.top
    block = top.parent
    assert block is not None
    b = Builder.before(top)
    first = c.expect if c.guard is None else top
    if not any(isinstance(o, FenceAsyncSharedOp) for o in block.ops[: block.ops.index(first)]):
        b.create("tile.fence_async_shared")
    if c.guard is not None:
        slot = b.op("tile.rem", c.item, b.constant(slots, i32), name_hint="release_slot")
        b.create("tile.mbarrier_arrive", empty, slot)
        c.guard.erase()
    else:
        b.create("tile.mbarrier_arrive", empty, c.slot)
        _erase_with_feeders([c.expect, c.op], root)


def _erase_with_feeders(ops: list[Operation], root: Block) -> None:
    """Erases `ops`, then the pure ops that only fed them (their index math)."""
    feeders = [defining_op(v) for op in ops for v in op.operands]
    for op in ops:
        op.erase()
    while feeders:
        uses = use_counts(root)
        nxt: list[Operation | None] = []
        for d in feeders:
            if d is None or d.parent is None or not d.is_pure or d.regions:
                continue
            if any(uses.get(id(r)) for r in d.results):
                continue
            nxt.extend(defining_op(v) for v in d.operands)
            d.erase()
        feeders = nxt


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
    """A producer partition issues each ring's TMA copies; the kernel's warps consume."""

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
