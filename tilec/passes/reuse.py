"""reuse: an input read from global memory in several phases is read once.

Row kernels read their input in two or three phases (RMSNorm: sum of squares, then normalize;
softmax: max and sum, then exp). Loads of the same elements are found two ways: identical loads
(same pointer, offsets, mask and fill value, no store to that pointer in between), and loads in
sibling loops with equal bounds whose offsets and masks are the same function of each loop's
index (not loops marked `reread`: the part of a row `split-rows` leaves past its cache). Then:

- `cache=registers`: identical loads merge into the first (the row stays in registers). Loads in
  separate loops cannot share registers; their reload stays, visibly.
- `cache=smem`: the row block is copied once into shared memory by TMA (one box per chunk, all
  issued before the first phase, one mbarrier each) and every phase reads shared memory. Needs an
  affine 2-D load with contiguous rows (TMA: a 16-byte aligned row stride) and a cache that fits
  the shared-memory budget. Loads in sibling loops that TMA cannot describe (a row of 50257 bf16
  logits starts off a 16-byte boundary) are copied by cp.async instead where their chunks start
  on 16-byte boundaries (`align-rows` marks the offsets so) and their masks keep each vector
  whole: a copy loop over the first loop's bounds issues every chunk's copies up front, every
  thread arriving on the chunk's barrier once its own copies land (`tile.async_copy_arrive`), and
  the first loop waits for chunk k on barrier k (cp.async's group wait takes only a constant
  count, which a loop over chunks cannot give). Otherwise it falls back to `registers`.
- `cache=auto`: `smem` where it applies, else `registers`.

Before (whole row, two phases):
    %a = tile.load %x, %offs, %mask : tile<[4, 1024], bf16>
    ...
    %b = tile.load %x, %offs, %mask : tile<[4, 1024], bf16>
After (cache=smem):
    %x_cache = tile.smem_alloc : smem<[4, 1024], bf16, #shared, slots = 1>
    %x_ready = tile.mbarrier_alloc : mbarrier<1>
    ... tile.tma_load %x_desc, %row0, %c0, %x_ready, %c0, %slot ...
    tile.mbarrier_wait %x_ready, %c0, %c0
    %a = tile.smem_load %slot : tile<[4, 1024], bf16, #blocked>
    ...
    %b = tile.smem_load %slot : tile<[4, 1024], bf16, #blocked>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tilec.ir.builder import Builder
from tilec.ir.clone import clone_op
from tilec.ir.core import (
    Block,
    BlockArg,
    Kernel,
    Module,
    Operation,
    OpResult,
    Value,
    ancestor_in,
    defining_op,
    replace_uses,
)
from tilec.ir.dtypes import DType, i32
from tilec.ir.expr import evaluate
from tilec.ir.layouts import BlockedLayout, NVMMASharedLayout, SwizzledSharedLayout
from tilec.ir.ops import (
    AssumeMultipleOp,
    BinaryOp,
    BroadcastOp,
    CmpOp,
    ConvertLayoutOp,
    ExpandDimsOp,
    ForOp,
    LoadOp,
    StoreOp,
)
from tilec.ir.target import DEFAULT
from tilec.ir.types import MBarrierType, PointerType, SharedBufferType, TensorDescType, TileType
from tilec.passes.affine import Affine, affine
from tilec.passes.band_chunks import CHUNKED
from tilec.passes.base import Pass, register
from tilec.passes.ranges import RangeAnalysis, max_trip_count, trip_count
from tilec.passes.rewrite import backward_slice, const_value

# ---------------------------------------------------------------------------------------------
# Finding loads of the same elements


def _same_operands(a: LoadOp, b: LoadOp) -> bool:
    """Same elements read: eviction hints differ between phases (Inductor's evict_last, then
    evict_first) but name the same data."""
    return len(a.operands) == len(b.operands) and all(x is y for x, y in zip(a.operands, b.operands))


def _equivalent(a: Value, b: Value, pairs: dict[int, Value], memo: dict[tuple[int, int], bool]) -> bool:
    """Whether `a` and `b` compute the same values, given value pairs known to correspond."""
    if a is b:
        return True
    if pairs.get(id(a)) is b:
        return True
    key = (id(a), id(b))
    if key in memo:
        return memo[key]
    memo[key] = False
    oa, ob = defining_op(a), defining_op(b)
    ok = (
        oa is not None
        and ob is not None
        and oa.is_pure
        and type(oa) is type(ob)
        and oa.attributes == ob.attributes
        and isinstance(a, OpResult)
        and isinstance(b, OpResult)
        and a.index == b.index
        and a.type == b.type
        and len(oa.operands) == len(ob.operands)
        and all(_equivalent(x, y, pairs, memo) for x, y in zip(oa.operands, ob.operands))
    )
    memo[key] = ok
    return ok


def _loads_in(block: Block, ptr: Value) -> list[LoadOp]:
    return [op for op in block.walk() if isinstance(op, LoadOp) and op.ptr is ptr]


def _stores_to(ops: list[Operation], ptr: Value) -> bool:
    return any(isinstance(op, StoreOp) and op.ptr is ptr for top in ops for op in top.walk())


@dataclass
class Group:
    """Loads that read the same elements: `first` and `later`, in program order."""

    first: LoadOp
    later: list[LoadOp]
    loops: list[ForOp] | None = None  # for loads in sibling loops: the loop of each load (first's first)


def find_groups(kernel: Kernel) -> list[Group]:
    groups: list[Group] = []
    for block in [kernel.body, *[r for op in kernel.walk() for r in op.regions]]:
        ops = block.ops
        # identical loads in one block, no store to the pointer in between
        seen: list[tuple[int, LoadOp]] = []
        for i, op in enumerate(ops):
            if not isinstance(op, LoadOp) or not isinstance(op.result.type, TileType):
                continue
            for j, earlier in seen:
                if _same_operands(earlier, op) and not _stores_to(ops[j + 1 : i], op.ptr):
                    g = next((g for g in groups if g.first is earlier), None)
                    if g is None:
                        groups.append(Group(earlier, [op]))
                    else:
                        g.later.append(op)
                    break
            else:
                seen.append((i, op))
        # loads in sibling loops with the same bounds
        loops = [(i, op) for i, op in enumerate(ops) if isinstance(op, ForOp)]
        for a_pos, (ia, la) in enumerate(loops):
            for ib, lb in loops[a_pos + 1 :]:
                if not (la.lower is lb.lower and la.upper is lb.upper and la.step is lb.step):
                    continue
                if la.attr("reread") or lb.attr("reread"):
                    continue  # the part of a row past its cache (split-rows): read again
                for load_a in [op for op in la.body.ops if isinstance(op, LoadOp)]:
                    ptr = load_a.ptr
                    if _stores_to([la, *ops[ia + 1 : ib]], ptr):
                        continue
                    pairs: dict[int, Value] = {id(la.induction_var): lb.induction_var}
                    for load_b in [op for op in lb.body.ops if isinstance(op, LoadOp) and op.ptr is ptr]:
                        same = len(load_a.operands) == len(load_b.operands)
                        memo: dict[tuple[int, int], bool] = {}
                        if same and all(
                            _equivalent(x, y, pairs, memo) for x, y in zip(load_a.operands, load_b.operands)
                        ):
                            stores_before = _stores_to([op for op in lb.body.ops[: lb.body.ops.index(load_b)]], ptr)
                            if stores_before:
                                continue
                            g = next((g for g in groups if g.first is load_a), None)
                            if g is None:
                                groups.append(Group(load_a, [load_b], [la, lb]))
                            elif g.loops is not None:
                                g.later.append(load_b)
                                g.loops.append(lb)
    return groups


# ---------------------------------------------------------------------------------------------
# The TMA view of a load


@dataclass
class Box:
    """How a 2-D load maps to TMA: global shape and row stride, box shape, and the box origin as
    scalars (row = pid * rows_per_pid + row_const; col = iv + col_const, iv possibly absent)."""

    shape: tuple[int, int]
    stride: int
    block: tuple[int, int]
    pid: Value | None
    rows_per_pid: int
    row_const: int
    iv: Value | None
    col_const: int


def _mask_terms(v: Value | None) -> list[CmpOp] | None:
    """The comparisons a mask is the conjunction of (None if it is something else)."""
    if v is None:
        return []
    op = defining_op(v)
    if op is None:
        return None
    if isinstance(op, (BroadcastOp, ConvertLayoutOp)):
        return _mask_terms(op.src)
    if isinstance(op, BinaryOp) and op.name == "tile.and":
        a, b = _mask_terms(op.lhs), _mask_terms(op.rhs)
        return None if a is None or b is None else a + b
    if isinstance(op, CmpOp):
        return [op]
    return None


def tma_box(kernel: Kernel, load: LoadOp, loop: ForOp | None) -> tuple[Box, bool] | None:
    """The box of a 2-D load, and whether its mask only excludes elements outside the box's
    global view (so TMA's zero fill makes the mask redundant)."""
    t = load.result.type
    if not isinstance(t, TileType) or t.rank != 2 or not all(isinstance(d, int) for d in t.shape):
        return None
    rows, cols = t.shape
    assert isinstance(rows, int) and isinstance(cols, int)
    aff = affine(load.offsets)
    if aff is None:
        return None
    dims = aff.dims()
    stride = dims.get(0, 0)
    if dims.get(1) != 1 or stride <= 0:
        return None
    pid_terms = {k: c for k, c in aff.scalar_terms().items() if aff.scalars[k].type == i32}
    pid: Value | None = None
    iv: Value | None = None
    rows_per_pid = 0
    for key, c in pid_terms.items():
        s = aff.scalars[key]
        owner = defining_op(s)
        if owner is not None and owner.name == "tile.program_id" and c % stride == 0:
            pid, rows_per_pid = s, c // stride
        elif loop is not None and s is loop.induction_var and c == 1:
            iv = s
        else:
            return None
    row_const, col_const = divmod(aff.const, stride)
    # the global view: N columns, M rows, from the masks (or from what the masks were proved to allow)
    terms = _mask_terms(load.mask)
    if terms is None:
        return None
    n_cols: int | None = None
    n_rows: int | None = None
    bounds_only = True
    for cmp in terms:
        lhs, rhs = affine(cmp.lhs), const_value(cmp.rhs)
        if cmp.attr("predicate") != "lt" or lhs is None or not isinstance(rhs, int):
            bounds_only = False
            continue
        if _is_col_index(lhs, iv, col_const):
            n_cols = rhs
        elif _is_row_index(lhs, pid, rows_per_pid, row_const):
            n_rows = rhs
        else:
            bounds_only = False
    trips = trip_count(loop) if loop is not None else 1
    if trips is None:
        return None
    if n_cols is None:
        step = const_value(loop.step) if loop is not None else cols
        n_cols = col_const + (trips - 1) * int(step or 0) + cols
    if n_rows is None:
        try:
            grid = [evaluate(g, kernel.bound_constexprs()) for g in kernel.launch.grid]
        except KeyError:  # a symbolic size: a descriptor's shape must be known when compiling
            return None
        n_rows = row_const + grid[0] * rows_per_pid if pid is not None else row_const + rows
    if n_cols > stride:
        return None
    return Box((n_rows, n_cols), stride, (rows, cols), pid, rows_per_pid, row_const, iv, col_const), bounds_only


def _is_col_index(a: Affine, iv: Value | None, col_const: int) -> bool:
    expect = {("dim", 1): 1}
    if iv is not None:
        expect[("val", id(iv))] = 1
    return a.coeffs == expect and a.const == col_const


def _is_row_index(a: Affine, pid: Value | None, rows_per_pid: int, row_const: int) -> bool:
    expect = {("dim", 0): 1}
    if pid is not None:
        expect[("val", id(pid))] = rows_per_pid
    return a.coeffs == expect and a.const == row_const


def _shared_layout(dt: DType) -> NVMMASharedLayout:
    # swizzle 0: row reductions read rows; it gave no bank conflicts and the fewest TMA messages
    return NVMMASharedLayout(0, dt.bits, 2)


# ---------------------------------------------------------------------------------------------
# Rewriting


def _descriptor(kernel: Kernel, ptr: Value, box: Box) -> Value:
    """The kernel's TMA descriptor for `ptr` with this view and box (added once)."""
    assert isinstance(ptr.type, PointerType)
    dt = ptr.type.pointee
    t = TensorDescType(box.block, dt, _shared_layout(dt))
    attrs = {"source": ptr.name_hint, "shape": list(box.shape), "strides": [box.stride, 1]}
    for p, pa in zip(kernel.params, kernel.param_attrs):
        if p.type == t and pa == attrs:
            return p
    name = f"{ptr.name_hint}_desc"
    taken = {p.name_hint for p in kernel.params}
    k = 1
    while name in taken:
        name = f"{ptr.name_hint}_desc{k}"
        k += 1
    return kernel.add_param(name, t, **attrs)


def _coords(b: Builder, box: Box, col: Value | None) -> tuple[Value, Value]:
    if box.pid is not None:
        row = b.op("tile.mul", box.pid, b.constant(box.rows_per_pid, i32))
        if box.row_const:
            row = b.op("tile.add", row, b.constant(box.row_const, i32))
    else:
        row = b.constant(box.row_const, i32)
    if col is None:
        col = b.constant(box.col_const, i32)
    elif box.col_const:
        col = b.op("tile.add", col, b.constant(box.col_const, i32))
    return row, col


def read_slot(b: Builder, load: LoadOp, slot: Value, bounds_only: bool) -> Value:
    """What replaces `load`: its slot read back, with the load's mask applied unless TMA's zero fill
    already gives the same values."""
    t = load.result.type
    assert isinstance(t, TileType)
    v = b.op("tile.smem_load", slot, type=t, name_hint=load.result.name_hint)
    if load.mask is not None and (load.other is not None or not bounds_only):
        other = load.other if load.other is not None else b.constant(0, t.dtype)
        v = b.op("tile.where", load.mask, v, other)
    return v


def _anchor(kernel: Kernel, group: Group) -> Operation:
    """Where the copies are issued: the top-level op holding the first load."""
    op: Operation = group.loops[0] if group.loops else group.first
    while op.parent is not kernel.body:
        assert op.parent is not None and op.parent.parent_op is not None
        op = op.parent.parent_op
    return op


def cache_in_smem(kernel: Kernel, group: Group, budget: int) -> str | None:
    """Caches the group's row in shared memory, filled by TMA; returns why not when it does not."""
    loop = group.loops[0] if group.loops else None
    first_top: Operation = loop if loop is not None else group.first
    if first_top.parent is not kernel.body:
        return "the first load is nested below the kernel's top level (the copies are issued there)"
    found = tma_box(kernel, group.first, loop)
    if found is None:
        return "its offsets are not a row block a TMA box can describe"
    box, bounds_only = found
    ptr = group.first.ptr
    assert isinstance(ptr.type, PointerType)
    dt = ptr.type.pointee
    if dt.bits not in (8, 16, 32, 64):
        return f"its element type {dt} cannot be a TMA operand (8, 16, 32 or 64 bits)"
    if (
        box.stride * dt.bytes % 16
        or box.block[1] * dt.bytes < 16
        or box.block[0] & (box.block[0] - 1)
        or box.block[1] & (box.block[1] - 1)
    ):
        return "TMA needs 16-byte aligned rows, an inner box of 16 bytes or more and power-of-two boxes"
    slots = (trip_count(loop) or 0) if loop is not None else 1
    cache_bytes = slots * box.block[0] * box.block[1] * dt.bytes
    used = _smem_in_use(kernel)
    if slots < 1:
        return "its loop's trip count is not known"
    if used + cache_bytes + 8 * slots > budget:
        return f"{cache_bytes} bytes of cache do not fit the {budget} bytes of shared memory ({used} in use)"
    desc = _descriptor(kernel, ptr, box)
    anchor = _anchor(kernel, group)
    b = Builder.before(anchor)
    layout = _shared_layout(dt)
    base = ptr.name_hint or "x"
    buf = b.op("tile.smem_alloc", type=SharedBufferType(box.block, dt, layout, slots), name_hint=f"{base}_cache")
    bars = b.op("tile.mbarrier_alloc", type=MBarrierType(slots), name_hint=f"{base}_ready")
    nbytes = box.block[0] * box.block[1] * dt.bytes
    lo = const_value(loop.lower) if loop is not None else 0
    step = const_value(loop.step) if loop is not None else 0
    assert isinstance(lo, int) and isinstance(step, int)
    for k in range(slots):
        idx = b.constant(k, i32)
        b.create("tile.mbarrier_init", bars, idx, count=1)
        b.create("tile.mbarrier_expect", bars, idx, bytes=nbytes)
        col = b.constant(lo + k * step, i32) if loop is not None else None
        row_v, col_v = _coords(b, box, col)
        slot = b.op("tile.smem_index", buf, idx)
        b.create("tile.tma_load", desc, row_v, col_v, bars, idx, slot)

    _use_cache(kernel, group, buf, bars, slots, bounds_only)
    return None


def _use_cache(kernel: Kernel, group: Group, buf: Value, bars: Value, slots: int, bounds_only: bool) -> None:
    """Every load of the group replaced by its chunk's slot of `buf`, read back; the first load
    of each chunk waits for the chunk's barrier (phase 0) first. The barriers are retired at the
    end of the kernel."""

    def slot_of(load: LoadOp, this_loop: ForOp | None, wait: bool) -> None:
        lb = Builder.before(load)
        if this_loop is None:
            k = lb.constant(0, i32)
        else:
            rel = lb.op("tile.sub", this_loop.induction_var, this_loop.lower)
            k = lb.op("tile.div", rel, this_loop.step)
        if wait:
            lb.create("tile.mbarrier_wait", bars, k, lb.constant(0, i32))
        slot = lb.op("tile.smem_index", buf, k)
        value = read_slot(lb, load, slot, bounds_only)
        replace_uses(kernel.body, load.result, value)
        load.erase()

    slot_of(group.first, group.loops[0] if group.loops else None, wait=True)
    for i, later in enumerate(group.later):
        slot_of(later, group.loops[i + 1] if group.loops else None, wait=False)
    end = Builder.at_end(kernel.body)
    for k in range(slots):
        end.create("tile.mbarrier_invalidate", bars, end.constant(k, i32))


# ---------------------------------------------------------------------------------------------
# The cache filled by cp.async: rows a TMA box cannot describe, read in aligned chunks


def _issues_copies(loop: ForOp) -> bool:
    """Whether the loop issues a cache's copies (as `cache_by_async_copy` makes them)."""
    return any(op.name == "tile.async_copy_arrive" for op in loop.body.ops)


def _divisible(v: Value, vec: int) -> bool:
    """Whether the integer scalar or tile `v` is a multiple of `vec` everywhere, from how it is made."""
    c = const_value(v)
    if isinstance(c, int) and not isinstance(c, bool):
        return c % vec == 0
    if isinstance(v, BlockArg):
        loop = v.block.parent_op
        return isinstance(loop, ForOp) and v.index == 0 and _divisible(loop.lower, vec) and _divisible(loop.step, vec)
    op = defining_op(v)
    if isinstance(op, AssumeMultipleOp):
        return op.attr("divisors")[-1] % vec == 0
    if isinstance(op, (BroadcastOp, ExpandDimsOp, ConvertLayoutOp)):
        return _divisible(op.src, vec)
    if isinstance(op, BinaryOp) and op.name in ("tile.add", "tile.sub"):
        return _divisible(op.lhs, vec) and _divisible(op.rhs, vec)
    if isinstance(op, BinaryOp) and op.name == "tile.mul":
        return _divisible(op.lhs, vec) or _divisible(op.rhs, vec)
    return False


def _vector_constant(mask: Value | None, t: TileType, vec: int) -> bool:
    """Whether the mask is the same over each aligned group of `vec` neighbours along the tile's
    last dimension (so each group copies as one vector): comparisons of the column against a
    multiple of `vec` (`col + a < b`, `col + a >= b`, a and b multiples), comparisons that do not
    depend on the column (a row's mask), and their conjunctions."""
    terms = _mask_terms(mask)
    if terms is None:
        return False
    last = t.rank - 1
    for cmp in terms:
        lhs, rhs = affine(cmp.lhs), affine(cmp.rhs)
        if lhs is None or rhs is None:
            return False
        d = lhs.plus(rhs, -1)  # the comparison is of d against 0
        slope = d.coeff(("dim", last))
        if slope == 0:
            continue  # the same along the row (a row's mask)
        if cmp.attr("predicate") not in {1: ("lt", "ge"), -1: ("gt", "le")}.get(slope, ()) or d.const % vec:
            return False
        for term, k in d.coeffs.items():
            if term[0] == "dim" and term[1] != last and k % vec and t.shape[term[1]] != 1:
                return False
            if term[0] == "val" and k % vec and not _divisible(d.scalars[term[1]], vec):
                return False
    return True


def _copy_width(load: LoadOp) -> int | None:
    """The elements of one 16-byte vector, where the load's chunks start on 16-byte boundaries (its
    offsets promised so, `tile.assume_multiple`, as `align-rows` makes them) and each thread holds
    4 bytes or more of a vector, or whole vectors; None otherwise."""
    ptr, t = load.ptr.type, load.result.type
    assert isinstance(ptr, PointerType) and isinstance(t, TileType)
    dt = ptr.pointee
    if dt.bits % 8 or 16 % dt.bytes:
        return None
    vec = 16 // dt.bytes
    promise = defining_op(load.offsets)
    if not isinstance(promise, AssumeMultipleOp) or promise.attr("divisors")[-1] % vec:
        return None
    layout = t.layout
    held = layout.size_per_thread[-1] if isinstance(layout, BlockedLayout) else 0
    if held * dt.bytes < 4 or (held % vec and vec % held):  # cp.async copies 4, 8 or 16 bytes
        return None
    return vec


def cache_by_async_copy(kernel: Kernel, group: Group, budget: int) -> str | None:
    """Caches the group's chunks in shared memory, copied by cp.async: a loop ahead of the first
    one issues every chunk's copy, each thread then arriving on the chunk's barrier, and the first
    loop waits for each chunk's barrier before reading it. Returns why not when it does not."""
    assert group.loops, "cp.async caches loops over chunks"
    loop, load = group.loops[0], group.first
    if loop.parent is not kernel.body:
        return "the first load is nested below the kernel's top level (the copies are issued there)"
    t = load.result.type
    assert isinstance(t, TileType)
    if not all(isinstance(n, int) for n in t.shape):
        return "its chunk has a symbolic shape"
    vec = _copy_width(load)
    if vec is None:
        return "its chunks do not start on 16-byte boundaries, or a thread holds less than 4 bytes of one (cp.async copies 4 to 16 bytes)"
    if not _vector_constant(load.mask, t, vec):
        return "its mask does not keep each 16-byte vector whole"
    slots = max_trip_count(loop, RangeAnalysis(kernel))
    if slots is None:
        return "its loop's trip count has no known bound"
    if slots < 1:
        return "its loop never runs"
    ops = backward_slice(loop.body, [load.offsets] + ([load.mask] if load.mask is not None else []))
    if any(op.regions or not op.is_pure for op in ops):
        return "its offsets or mask are computed by an op that cannot run twice"
    ptr = load.ptr
    cache = copy_slots(load, slots)
    cache_bytes = evaluate(cache.nbytes(), kernel.bound_constexprs())
    used = _smem_in_use(kernel)
    if used + cache_bytes + 8 * slots > budget:
        return f"{cache_bytes} bytes of cache do not fit the {budget} bytes of shared memory ({used} in use)"

    # the copies go as early as their operands allow: ahead of whatever the kernel does first
    outside = [loop.lower, loop.upper, loop.step, ptr, load.offsets] + ([load.mask] if load.mask is not None else [])
    inside = {id(r) for op in ops for r in op.results} | {id(loop.induction_var)}
    outside = [v for v in outside if id(v) not in inside]
    outside += [v for op in ops for v in op.operands if id(v) not in inside]
    tops = [kernel.body.ops.index(top) for v in outside if (top := _top_level(kernel, v)) is not None]
    # and after the copies of caches made before (the row's earlier chunks first)
    tops += [i for i, op in enumerate(kernel.body.ops) if isinstance(op, ForOp) and _issues_copies(op)]
    b = Builder(kernel.body, max(tops, default=-1) + 1)
    base = ptr.name_hint or "x"
    buf = b.op("tile.smem_alloc", type=cache, name_hint=f"{base}_cache")
    bars = b.op("tile.mbarrier_alloc", type=MBarrierType(slots), name_hint=f"{base}_ready")
    threads = 32 * (kernel.launch.num_warps or 4)
    for k in range(slots):  # every thread arrives on its chunk's barrier
        b.create("tile.mbarrier_init", bars, b.constant(k, i32), count=threads)
    copy = b.for_(loop.lower, loop.upper, loop.step, iv_name=f"{base}_chunk")
    mapping: dict[int, Value] = {id(loop.induction_var): copy.induction_var}
    with b.inside(copy.body):
        for op in ops:
            b.insert(clone_op(op, mapping))
        rel = b.op("tile.sub", copy.induction_var, loop.lower)
        k_v = b.op("tile.div", rel, loop.step, name_hint="k")
        slot = b.op("tile.smem_index", buf, k_v)
        mask = [mapping.get(id(load.mask), load.mask)] if load.mask is not None else []
        b.create("tile.async_copy", slot, ptr, mapping.get(id(load.offsets), load.offsets), *mask)
        b.create("tile.async_copy_arrive", bars, k_v)
        b.yield_()
    _use_cache(kernel, group, buf, bars, slots, bounds_only=False)
    return None


def copy_slots(load: LoadOp, slots: int) -> SharedBufferType:
    """`slots` shared-memory slots for cp.async copies of `load`'s tile: its shape, its pointer's
    element type, unswizzled (each thread's copies land where its reads find them)."""
    t, p = load.result.type, load.ptr.type
    assert isinstance(t, TileType) and isinstance(p, PointerType) and isinstance(p.pointee, DType)
    return SharedBufferType(t.shape, p.pointee, SwizzledSharedLayout(1, 1, 1, tuple(range(t.rank - 1, -1, -1))), slots)


def _top_level(kernel: Kernel, v: Value) -> Operation | None:
    """The op of the kernel's top level that defines `v` or holds its definition (None: a parameter)."""
    op = defining_op(v) or (v.block.parent_op if isinstance(v, BlockArg) else None)
    return ancestor_in(kernel.body, op) if op is not None else None


def _smem_in_use(kernel: Kernel) -> int:
    """The bytes of shared memory the kernel's buffers take."""
    allocated = [op.results[0].type for op in kernel.walk() if op.name == "tile.smem_alloc"]
    return sum(evaluate(t.nbytes(), kernel.bound_constexprs()) for t in allocated if isinstance(t, SharedBufferType))


def merge_in_registers(kernel: Kernel, group: Group) -> str | None:
    """Keeps the group's first load for the later ones; returns why not when it cannot."""
    if group.loops is not None:
        return "the loads are in different loops: their chunks do not stay in registers"
    if kernel.attributes.get(CHUNKED):
        # a banded kernel's row in chunks (`band-chunks`): its column sums take the registers, and
        # a row chunk kept from the statistics to dx would spill them
        return "the row of a banded kernel in chunks is read again (band-chunks)"
    for later in group.later:
        replace_uses(kernel.body, later.result, group.first.result)
        later.erase()
    group.first.attributes.pop("eviction", None)  # read once now: no phase will come back for it
    return None


@register
class Reuse(Pass):
    """Reads each input row from global memory once: from a shared-memory or register cache."""

    name = "reuse"
    cache: Literal["auto", "smem", "registers"] = "auto"
    smem_budget: int = DEFAULT.smem_per_block

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            if kernel.launch.num_ctas > 1:  # what a slice reads again past its cache is the plan's choice
                self.remark(kernel, "a program of several CTAs caches its slices itself (the plan's row_cache)")
                continue
            groups = find_groups(kernel)
            # in program order: a row's caches fill from its first chunks on
            position = {id(op): i for i, op in enumerate(kernel.walk())}
            groups.sort(key=lambda g: position[id(g.first)])
            if not groups:
                self.remark(kernel, "no input is loaded more than once at the same offsets")
            for group in groups:
                if group.first.parent is None:
                    continue
                what = f"%{group.first.ptr.name_hint}"
                if self.cache in ("auto", "smem"):
                    smem_why = cache_in_smem(kernel, group, self.smem_budget)
                    if smem_why is None:
                        continue
                    if group.loops:  # chunks TMA cannot copy may still be copied by cp.async
                        copy_why = cache_by_async_copy(kernel, group, self.smem_budget)
                        if copy_why is None:
                            continue
                        smem_why += f"; nor by cp.async: {copy_why}"
                    self.remark(kernel, f"{what} not cached in shared memory: {smem_why}")
                why = merge_in_registers(kernel, group)
                if why is not None:
                    self.remark(kernel, f"{what} not kept in registers: {why}")
