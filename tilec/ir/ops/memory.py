"""Ops that touch memory: global loads and stores, shared memory, TMA, mbarriers, fences."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from tilec.ir.core import Attr, Operand, Operation, Optional, Value, Variadic, enclosing_ops
from tilec.ir.dtypes import DType, Type, i1
from tilec.ir.formatting import format_type
from tilec.ir.ops.common import (
    check_int_scalar,
    check_mask,
    check_results,
    elem_dtype,
    tile_or_scalar,
)
from tilec.ir.types import MBarrierType, PointerType, SharedBufferType, TensorDescType, TileType

READS = frozenset({"reads"})
ALLOC = frozenset({"alloc"})
EVICTION = ("", "evict_first", "evict_last")

# ---------------------------------------------------------------------------------------------
# Global memory


def _check_offsets(op: Operation, ptr: Value, offsets: Value) -> DType:
    if not isinstance(ptr.type, PointerType):
        raise op.error("first operand must be a pointer")
    dt = elem_dtype(offsets.type)
    if dt is None or not dt.is_int or dt.is_bool:
        raise op.error("offsets must be integers")
    return ptr.type.pointee


class LoadOp(Operation):
    """Reads ptr[offsets]. With a mask, masked-off elements are not read and take `other`
    (0 if absent)."""

    name = "tile.load"
    ptr = Operand()
    offsets = Operand()
    mask = Optional()
    other = Optional()
    attrs = {"eviction": Attr("choice", required=False, default="", choices=EVICTION)}
    num_results = 1
    traits = READS

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        ptr, offsets = operands[0].type, operands[1].type
        if not isinstance(ptr, PointerType):
            return None
        return [tile_or_scalar(offsets, ptr.pointee)]

    def verify_(self) -> None:
        pointee = _check_offsets(self, self.ptr, self.offsets)
        offsets = self.offsets.type
        if self.mask is not None:
            check_mask(self, self.mask, offsets)
        if self.other is not None:
            other = self.other.type
            if elem_dtype(other) != pointee:
                raise self.error(f"'other' must have the pointee dtype {pointee}")
            if isinstance(other, TileType) and (
                not isinstance(offsets, TileType) or other.shape != offsets.shape or other.layout != offsets.layout
            ):
                raise self.error("'other' must be a scalar or shaped like the offsets")
        check_results(self, [tile_or_scalar(offsets, pointee)])


class StoreOp(Operation):
    """Writes value to ptr[offsets] where the mask is true. `eviction` is a cache hint for the
    written lines (`evict_first`: a row written and not read again here, `reread{stream=true}`)."""

    name = "tile.store"
    ptr = Operand()
    offsets = Operand()
    value = Operand()
    mask = Optional()
    attrs = {"eviction": Attr("choice", required=False, default="", choices=EVICTION)}
    num_results = 0

    def verify_(self) -> None:
        pointee = _check_offsets(self, self.ptr, self.offsets)
        offsets, value = self.offsets.type, self.value.type
        if elem_dtype(value) != pointee:
            raise self.error(f"value must have the pointee dtype {pointee}, got {elem_dtype(value)}")
        if isinstance(value, TileType) and (
            not isinstance(offsets, TileType) or value.shape != offsets.shape or value.layout != offsets.layout
        ):
            raise self.error("value must be a scalar or shaped like the offsets")
        if self.mask is not None:
            check_mask(self, self.mask, offsets)


ATOMIC_DTYPES = ("f32", "f16", "bf16", "i32", "i64")


class AtomicAddOp(StoreOp):
    """Adds value to ptr[offsets] where the mask is true, each element as one atomic
    read-modify-write: lanes (and programs) that name the same element all add to it, in an
    unspecified order. A scatter that accumulates (`index_put_(..., accumulate=True)`)."""

    name = "tile.atomic_add"
    attrs: ClassVar[dict[str, Attr]] = {}  # no cache hint: Triton's atomics take none

    def verify_(self) -> None:
        super().verify_()  # the store's checks, the pointer's among them
        ptr = self.ptr.type
        assert isinstance(ptr, PointerType)
        pointee = ptr.pointee
        if pointee.name not in ATOMIC_DTYPES:
            raise self.error(f"atomic adds take {', '.join(ATOMIC_DTYPES)}, not {pointee}")


# ---------------------------------------------------------------------------------------------
# Shared memory


def _smem(op: Operation, v: Value, what: str, slots: bool | None = False) -> SharedBufferType:
    t = v.type
    if not isinstance(t, SharedBufferType):
        raise op.error(f"{what} must be a shared-memory buffer")
    if slots is False and t.slots is not None:
        raise op.error(f"{what} has slots: pick one with 'tile.smem_index' first")
    if slots is True and t.slots is None:
        raise op.error(f"{what} has no slots")
    return t


class SmemAllocOp(Operation):
    """Allocates a shared-memory buffer for the whole kernel. Its contents start undefined."""

    name = "tile.smem_alloc"
    num_results = 1
    traits = ALLOC

    def verify_(self) -> None:
        if not isinstance(self.result.type, SharedBufferType):
            raise self.error("result must be a shared-memory buffer")


class SmemIndexOp(Operation):
    """Slot `slot` of a multi-slot buffer (a run-time index)."""

    name = "tile.smem_index"
    buf = Operand()
    slot = Operand()
    num_results = 1
    traits = frozenset({"pure"})

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        t = operands[0].type
        return [t.slot_type()] if isinstance(t, SharedBufferType) and t.slots is not None else None

    def verify_(self) -> None:
        t = _smem(self, self.buf, "buffer", slots=True)
        check_int_scalar(self, self.slot, "slot")
        check_results(self, [t.slot_type()])


class SmemSliceOp(Operation):
    """A sub-range [start, start + length) of dimension `dim` (compile-time bounds)."""

    name = "tile.smem_slice"
    buf = Operand()
    attrs = {"dim": Attr("int"), "start": Attr("int"), "length": Attr("int")}
    num_results = 1
    traits = frozenset({"pure"})

    def verify_(self) -> None:
        t = _smem(self, self.buf, "buffer")
        dim, start, length = self.attr("dim"), self.attr("start"), self.attr("length")
        if not 0 <= dim < len(t.shape):
            raise self.error(f"dim {dim} out of range")
        size = t.shape[dim]
        if start < 0 or length < 1 or (isinstance(size, int) and start + length > size):
            raise self.error(f"slice [{start}, {start + length}) out of bounds of {size}")
        shape = t.shape[:dim] + (length,) + t.shape[dim + 1 :]
        check_results(self, [SharedBufferType(shape, t.dtype, t.layout)])


class SmemLoadOp(Operation):
    """Reads a whole shared buffer into a register tile of the result's layout."""

    name = "tile.smem_load"
    buf = Operand()
    num_results = 1
    traits = READS

    def verify_(self) -> None:
        t = _smem(self, self.buf, "buffer")
        r = self.result.type
        if not isinstance(r, TileType) or r.shape != t.shape or r.dtype != t.dtype:
            raise self.error("result must be a tile of the buffer's shape and dtype")


class SmemStoreOp(Operation):
    """Writes a register tile into a whole shared buffer."""

    name = "tile.smem_store"
    buf = Operand()
    value = Operand()
    num_results = 0

    def verify_(self) -> None:
        t = _smem(self, self.buf, "buffer")
        v = self.value.type
        if not isinstance(v, TileType) or v.shape != t.shape or v.dtype != t.dtype:
            raise self.error("value must be a tile of the buffer's shape and dtype")


# ---------------------------------------------------------------------------------------------
# Asynchronous copies (cp.async)


class AsyncCopyOp(Operation):
    """Starts copying ptr[offsets] into the shared buffer `dst` (shaped like the offsets) without
    waiting for it: the copy belongs to the group the next `tile.async_commit` closes, and its
    data may be read only after a `tile.async_wait` that leaves that group no longer pending.
    With a mask, masked-off elements are not read and become 0. Each thread copies the elements
    the offsets' layout gives it (cp.async: 4, 8 or 16 bytes at a time)."""

    name = "tile.async_copy"
    dst = Operand()
    ptr = Operand()
    offsets = Operand()
    mask = Optional()
    num_results = 0

    def verify_(self) -> None:
        t = _smem(self, self.dst, "destination")
        if not isinstance(self.ptr.type, PointerType):
            raise self.error("second operand must be a pointer")
        pointee = _check_offsets(self, self.ptr, self.offsets)
        o = self.offsets.type
        if not isinstance(o, TileType) or o.shape != t.shape:
            raise self.error("offsets must be a tile of the destination's shape")
        if pointee != t.dtype:
            raise self.error(f"copies {pointee} into a buffer of {t.dtype}")
        if self.mask is not None:
            check_mask(self, self.mask, o)


class AsyncCommitOp(Operation):
    """Closes the group of this thread's asynchronous copies started since the last commit (a
    commit with none closes an empty group, which counts like any other)."""

    name = "tile.async_commit"
    num_results = 0


class AsyncWaitOp(Operation):
    """Waits until at most `pending` of this thread's committed groups of asynchronous copies are
    still in flight (the newest ones): the data of every older group may then be read."""

    name = "tile.async_wait"
    attrs = {"pending": Attr("int", required=False, default=0)}
    num_results = 0

    def verify_(self) -> None:
        if self.attr("pending") < 0:
            raise self.error("pending must be 0 or more")


# ---------------------------------------------------------------------------------------------
# TMA


def _desc(op: Operation, v: Value) -> TensorDescType:
    if not isinstance(v.type, TensorDescType):
        raise op.error("first operand must be a TMA descriptor")
    return v.type


def _barrier(op: Operation, bars: Value, index: Value) -> MBarrierType:
    if not isinstance(bars.type, MBarrierType):
        raise op.error("needs an mbarrier array")
    check_int_scalar(op, index, "barrier index")
    return bars.type


class TmaLoadOp(Operation):
    """Copies the box at `coords` from global memory into `dst`; the copy's bytes complete a
    transaction on barrier bars[index]. Out-of-bounds parts of the box are filled with zeros.
    `coords` has one value per dimension of the descriptor; the copy happens only where `pred`
    (an i1 scalar, when present) is true."""

    name = "tile.tma_load"
    desc = Operand()
    coords = Variadic()
    bars = Operand()
    index = Operand()
    dst = Operand()
    pred = Optional()
    num_results = 0

    def variadic_length(self) -> int | None:
        desc = self.operands[0].type if self.operands else None
        return len(desc.block_shape) if isinstance(desc, TensorDescType) else None

    def verify_(self) -> None:
        if not self.operands:
            raise self.error("needs a descriptor")
        desc = _desc(self, self.desc)
        for c in self.coords:
            check_int_scalar(self, c, "coordinate")
        _barrier(self, self.bars, self.index)
        dst = _smem(self, self.dst, "destination")
        if dst.shape != desc.block_shape or dst.dtype != desc.dtype:
            raise self.error("destination must match the descriptor's block shape and dtype")
        if dst.layout != desc.layout:
            raise self.error("destination must have the descriptor's layout")
        if self.pred is not None and self.pred.type != i1:
            raise self.error("predicate must be an i1 scalar")


class TmaStoreOp(Operation):
    """Copies `src` to the box at `coords` in global memory; out-of-bounds parts are dropped.
    Completion is awaited with `tile.tma_store_wait`. `coords` has one value per dimension."""

    name = "tile.tma_store"
    desc = Operand()
    coords = Variadic()
    src = Operand()
    num_results = 0

    def verify_(self) -> None:
        if not self.operands:
            raise self.error("needs a descriptor")
        desc = _desc(self, self.desc)
        rank = len(desc.block_shape)
        if len(self.coords) != rank:
            raise self.error(f"takes {rank} coordinates for a rank-{rank} descriptor, got {len(self.coords)}")
        for c in self.coords:
            check_int_scalar(self, c, "coordinate")
        src = _smem(self, self.src, "source")
        if src.shape != desc.block_shape or src.dtype != desc.dtype or src.layout != desc.layout:
            raise self.error("source must match the descriptor's block shape, dtype and layout")


class TmaStoreWaitOp(Operation):
    """Waits until at most `pendings` TMA stores of this thread are still reading shared memory."""

    name = "tile.tma_store_wait"
    attrs = {"pendings": Attr("int", required=False, default=0)}
    num_results = 0

    def verify_(self) -> None:
        if self.attr("pendings") < 0:
            raise self.error("pendings must not be negative")


# ---------------------------------------------------------------------------------------------
# mbarriers


class MBarrierAllocOp(Operation):
    """Allocates an array of mbarriers in shared memory (uninitialized)."""

    name = "tile.mbarrier_alloc"
    num_results = 1
    traits = ALLOC

    def verify_(self) -> None:
        if not isinstance(self.result.type, MBarrierType):
            raise self.error("result must be an mbarrier array")


class MBarrierOp(Operation):
    """Base: an op on barrier bars[index]."""

    bars = Operand()
    index = Operand()
    num_results = 0

    def verify_(self) -> None:
        _barrier(self, self.bars, self.index)


class MBarrierInitOp(MBarrierOp):
    """Initializes bars[index] to expect `count` arrivals per phase; phase 0 is then in progress."""

    name = "tile.mbarrier_init"
    attrs = {"count": Attr("int", required=False, default=1)}

    def verify_(self) -> None:
        super().verify_()
        if self.attr("count") < 1:
            raise self.error("count must be positive")


class MBarrierExpectOp(MBarrierOp):
    """Arrives once on bars[index] and adds `bytes` to the transaction bytes the phase waits for."""

    name = "tile.mbarrier_expect"
    attrs = {"bytes": Attr("symint")}


class MBarrierWaitOp(MBarrierOp):
    """Waits until the phase of parity `phase` of bars[index] has completed."""

    name = "tile.mbarrier_wait"
    bars = Operand()
    index = Operand()
    phase = Operand()

    def verify_(self) -> None:
        super().verify_()
        check_int_scalar(self, self.phase, "phase")


class MBarrierArriveOp(MBarrierOp):
    """Arrives `count` times on bars[index]."""

    name = "tile.mbarrier_arrive"
    attrs = {"count": Attr("int", required=False, default=1)}


class AsyncCopyArriveOp(MBarrierOp):
    """Each thread that runs it arrives once on bars[index] when all the asynchronous copies it
    started before have landed (cp.async.mbarrier.arrive.noinc): a barrier initialized with a
    count of the CTA's threads completes its phase once every thread's copies are in shared
    memory, so a wait on it makes them readable, chunk by chunk, where `tile.async_wait` needs
    a constant count of groups still pending."""

    name = "tile.async_copy_arrive"


class MBarrierInvalidateOp(MBarrierOp):
    """Invalidates bars[index]; it may not be used again until re-initialized."""

    name = "tile.mbarrier_invalidate"


# ---------------------------------------------------------------------------------------------
# Fences and barriers


class FenceAsyncSharedOp(Operation):
    """Orders this thread's generic shared-memory accesses before later async-proxy (TMA) accesses."""

    name = "tile.fence_async_shared"
    num_results = 0


class CtaBarrierOp(Operation):
    """Every thread of the CTA (of the partition, inside warp_specialize) waits here for the others."""

    name = "tile.cta_barrier"
    num_results = 0


# ---------------------------------------------------------------------------------------------
# Thread-block clusters


class ClusterGatherOp(Operation):
    """Every CTA of the cluster gets every CTA's element of each operand. Each operand is a tile
    of one element per CTA: shape [C] (C the kernel's `num_ctas`), element j held by CTA j (the
    layout's CTA bases [[1], [2], [4], ...]). Results, operand-major: result i*C + j is CTA j's
    element of operand i, in every element (every CTA holds it). On a GPU the CTAs exchange the
    values through their shared memory (distributed shared memory), so every CTA of the cluster
    must reach the op. `exchange` says how, which changes no result:

    - `barriers` (the default): each CTA stores its values in its own shared memory, and between
      two cluster barriers reads every peer's;
    - `push`: each CTA writes its values into every peer's shared memory, each write completing
      bytes on the peer's mbarrier, and waits on its own for all of the cluster's — one cluster
      barrier (after the mbarrier's initialization) and no remote reads. At the kernel's top level
      the mbarrier serves once. Directly in the body of a loop (a `tile.for` at the top level,
      the op in no conditional or partition) it serves every iteration: two sets of slots and two
      mbarriers, by the iteration's parity, each re-armed after its wait, initialized at the first
      iteration (a peer's write for iteration i + 2 needs this CTA's write for i + 1, which comes
      after its reads of iteration i's slots)."""

    name = "tile.cluster_gather"
    values = Variadic()
    num_results = None
    attrs = {"exchange": Attr("choice", required=False, default="barriers", choices=("barriers", "push"))}

    def verify_(self) -> None:
        if not self.operands:
            raise self.error("takes at least one value")
        tiles: list[TileType] = []
        for v in self.operands:
            t = v.type
            if not isinstance(t, TileType) or t.rank != 1 or t.layout is None:
                raise self.error(f"takes rank-1 tiles with layouts, got {format_type(t)}")
            if t.dtype.bytes != 4:
                raise self.error(f"exchanges 32-bit values, got {t.dtype}")
            tiles.append(t)
        first = tiles[0]
        if any((t.shape, t.layout) != (first.shape, first.layout) for t in tiles):
            raise self.error("operands must share their shape and layout")
        assert first.layout is not None
        ctas = first.layout.num_ctas
        if first.shape != (ctas,) or first.layout.cga != tuple((1 << i,) for i in range(ctas.bit_length() - 1)):
            raise self.error(
                f"each operand holds one element per CTA, element j in CTA j: shape [{ctas}] and CTA bases "
                f"{[[1 << i] for i in range(ctas.bit_length() - 1)]}, got {format_type(first)}"
            )
        if ctas < 2:
            raise self.error("gathers across the CTAs of a cluster: the layout spans one CTA")
        check_results(self, [v.type for v in self.operands for _ in range(ctas)])
        outer = list(enclosing_ops(self))
        if self.attr("exchange") == "push" and outer and [o.name for o in outer] != ["tile.for"]:
            raise self.error(
                "exchange = \"push\" stands at the kernel's top level or directly in a top-level loop's body "
                f"(its mbarriers count the loop's iterations), not inside {', '.join(repr(o.name) for o in outer)}"
            )
