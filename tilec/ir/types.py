"""Types of IR values.

Scalars are typed by their `DType`. Tiles live in registers and carry a distributed layout once the
plan pass has run (the logical form leaves it out). Shared buffers, mbarriers and TMA descriptors
are the physical form's types. Dimensions may be symbolic (`IntExpr`) until the plan binds them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.ir.dtypes import DType, Type
from tilec.ir.errors import IRTypeError
from tilec.ir.expr import BinExpr, IntExpr, free_symbols, substitute
from tilec.ir.layouts import DistributedLayout, NVMMASharedLayout, SharedLayout

Shape = tuple[IntExpr, ...]


def _check_shape(shape: Shape, what: str) -> None:
    for d in shape:
        if isinstance(d, bool) or (isinstance(d, int) and d < 1):
            raise IRTypeError(f"{what}: dimensions must be positive, got {list(shape)}")


def mul(a: IntExpr, b: IntExpr) -> IntExpr:
    return a * b if isinstance(a, int) and isinstance(b, int) else BinExpr("*", a, b)


def numel(shape: Shape) -> IntExpr:
    n: IntExpr = 1
    for d in shape:
        n = mul(n, d)
    return n


def shape_symbols(shape: Shape) -> set[str]:
    out: set[str] = set()
    for d in shape:
        out |= free_symbols(d)
    return out


@dataclass(frozen=True)
class PointerType(Type):
    """A pointer to global memory holding elements of `pointee`."""

    pointee: DType

    def __str__(self) -> str:
        return f"ptr<{self.pointee}>"


@dataclass(frozen=True)
class TileType(Type):
    """A block of values in registers."""

    shape: Shape
    dtype: DType
    layout: DistributedLayout | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        if not self.shape:
            raise IRTypeError("tile: rank must be at least 1 (use a scalar for rank 0)")
        _check_shape(self.shape, "tile")
        if self.layout is not None:
            if not isinstance(self.layout, DistributedLayout):
                raise IRTypeError("tile: layout must be a distributed layout (blocked or slice)")
            if self.layout.rank != len(self.shape):
                raise IRTypeError(f"tile: layout of rank {self.layout.rank} on a tile of rank {len(self.shape)}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    def with_(self, **changes: object) -> TileType:
        fields = {"shape": self.shape, "dtype": self.dtype, "layout": self.layout}
        fields.update(changes)
        return TileType(**fields)  # type: ignore[arg-type]


@dataclass(frozen=True)
class SharedBufferType(Type):
    """A shared-memory buffer; `slots` is the optional leading ring dimension of a multi-buffer."""

    shape: Shape
    dtype: DType
    layout: SharedLayout
    slots: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        if not self.shape:
            raise IRTypeError("smem: rank must be at least 1")
        _check_shape(self.shape, "smem")
        if self.slots is not None and (isinstance(self.slots, bool) or self.slots < 1):
            raise IRTypeError(f"smem: slots must be positive, got {self.slots}")
        if not isinstance(self.layout, SharedLayout):
            raise IRTypeError("smem: layout must be a shared layout (nvmma_shared or swizzled_shared)")
        self.layout.check_shape(self.shape, self.dtype.bits)

    def slot_type(self) -> SharedBufferType:
        return SharedBufferType(self.shape, self.dtype, self.layout)

    def nbytes(self) -> IntExpr:
        per_slot = mul(numel(self.shape), self.dtype.bytes)
        return per_slot if self.slots is None else mul(per_slot, self.slots)


@dataclass(frozen=True)
class MBarrierType(Type):
    """An array of `count` mbarriers in shared memory (8 bytes each)."""

    count: int

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or self.count < 1:
            raise IRTypeError(f"mbarrier: count must be positive, got {self.count}")

    def __str__(self) -> str:
        return f"mbarrier<{self.count}>"


@dataclass(frozen=True)
class TensorDescType(Type):
    """A TMA tensor descriptor: copies boxes of `block_shape` between global and shared memory."""

    block_shape: Shape
    dtype: DType
    layout: NVMMASharedLayout

    def __post_init__(self) -> None:
        object.__setattr__(self, "block_shape", tuple(self.block_shape))
        _check_shape(self.block_shape, "tensordesc")
        if not isinstance(self.layout, NVMMASharedLayout):
            raise IRTypeError("tensordesc: layout must be nvmma_shared")
        self.layout.check_shape(self.block_shape, self.dtype.bits)

    def box_bytes(self) -> IntExpr:
        return mul(numel(self.block_shape), self.dtype.bytes)


def substitute_type(t: Type, env: dict[str, int]) -> Type:
    """`t` with the symbols of `env` bound."""
    if isinstance(t, TileType):
        return t.with_(shape=tuple(substitute(d, env) for d in t.shape))
    if isinstance(t, SharedBufferType):
        return SharedBufferType(tuple(substitute(d, env) for d in t.shape), t.dtype, t.layout, t.slots)
    if isinstance(t, TensorDescType):
        return TensorDescType(tuple(substitute(d, env) for d in t.block_shape), t.dtype, t.layout)
    return t
