"""Layouts of tiles (distributed over threads) and of shared-memory buffers.

They mirror Gluon's layout classes field for field, so the Gluon emitter only prints the fields.
Each layout checks itself on construction; shared layouts also check the buffer shape they are
attached to (`check_shape`), because Triton can abort the whole process on an invalid swizzle.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.ir.errors import LayoutError
from tilec.ir.expr import IntExpr

WARP_SIZE = 32


def _is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def _check_order(order: tuple[int, ...], rank: int, what: str) -> None:
    if sorted(order) != list(range(rank)):
        raise LayoutError(f"{what}: order {list(order)} is not a permutation of 0..{rank - 1}")


CGA = tuple[tuple[int, ...], ...]


def _check_cga(bases: object, rank: int, what: str) -> CGA:
    """A cluster's CTA tiling (Gluon's `cga_layout`): one basis per bit of the CTA's index in its
    cluster, each the offset (one power of two in one dimension, or all zeros: the CTAs that
    differ in that bit hold the same elements) that bit moves the CTA's part of the tile by."""
    if not isinstance(bases, (list, tuple)):
        raise LayoutError(f"{what}: cga_layout must be a list of bases, got {bases!r}")
    out = []
    for b in bases:
        if not isinstance(b, (list, tuple)) or len(b) != rank:
            raise LayoutError(f"{what}: each cga_layout basis needs {rank} entries, got {b!r}")
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in b):
            raise LayoutError(f"{what}: cga_layout entries must be non-negative integers, got {list(b)}")
        nonzero = [v for v in b if v]
        if len(nonzero) > 1 or not all(_is_pow2(v) for v in nonzero):
            raise LayoutError(f"{what}: a cga_layout basis moves one dimension by a power of two, got {list(b)}")
        out.append(tuple(b))
    if len(out) > 4:
        raise LayoutError(f"{what}: a cluster has at most 16 CTAs (4 bases), got {len(out)}")
    return tuple(out)


class Layout:
    """Base of all layouts."""

    kind: str = ""


class DistributedLayout(Layout):
    """How a tile's elements are spread over registers, threads and warps (and over the CTAs of a
    cluster, where the kernel launches clusters)."""

    @property
    def rank(self) -> int:
        raise NotImplementedError

    @property
    def num_warps(self) -> int:
        raise NotImplementedError

    @property
    def cga(self) -> CGA:
        """The CTA tiling, one basis per bit of the CTA's index in its cluster (empty: one CTA)."""
        raise NotImplementedError

    @property
    def num_ctas(self) -> int:
        return 1 << len(self.cga)


@dataclass(frozen=True)
class BlockedLayout(DistributedLayout):
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]
    cga_layout: CGA = ()

    kind = "blocked"

    def __post_init__(self) -> None:
        for f in ("size_per_thread", "threads_per_warp", "warps_per_cta", "order"):
            object.__setattr__(self, f, tuple(getattr(self, f)))
        object.__setattr__(self, "cga_layout", _check_cga(self.cga_layout, len(self.order), "blocked"))
        rank = len(self.size_per_thread)
        if rank == 0:
            raise LayoutError("blocked: rank must be at least 1")
        if not (len(self.threads_per_warp) == len(self.warps_per_cta) == len(self.order) == rank):
            raise LayoutError(
                "blocked: size_per_thread, threads_per_warp, warps_per_cta and order must have the same length"
            )
        for name, vals in (
            ("size_per_thread", self.size_per_thread),
            ("threads_per_warp", self.threads_per_warp),
            ("warps_per_cta", self.warps_per_cta),
        ):
            if not all(_is_pow2(v) for v in vals):
                raise LayoutError(f"blocked: {name} entries must be powers of two, got {list(vals)}")
        threads = 1
        for v in self.threads_per_warp:
            threads *= v
        if threads != WARP_SIZE:
            raise LayoutError(f"blocked: threads_per_warp must multiply to {WARP_SIZE}, got {threads}")
        _check_order(self.order, rank, "blocked")

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def num_warps(self) -> int:
        n = 1
        for v in self.warps_per_cta:
            n *= v
        return n

    @property
    def cga(self) -> CGA:
        return self.cga_layout

    def shape_per_cta_tile(self) -> tuple[int, ...]:
        """Elements covered by one repetition of the layout over the CTA, per dimension."""
        return tuple(
            s * t * w for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta, strict=True)
        )


@dataclass(frozen=True)
class SliceLayout(DistributedLayout):
    """The layout of `parent` with dimension `dim` removed (what a reduction along `dim` returns)."""

    dim: int
    parent: DistributedLayout

    kind = "slice"

    def __post_init__(self) -> None:
        if not isinstance(self.parent, DistributedLayout):
            raise LayoutError("slice: parent must be a distributed layout")
        if not 0 <= self.dim < self.parent.rank:
            raise LayoutError(f"slice: dim {self.dim} out of range for a parent of rank {self.parent.rank}")
        if self.parent.rank < 2:
            raise LayoutError("slice: parent must have rank 2 or more")

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    @property
    def cga(self) -> CGA:
        return tuple(b[: self.dim] + b[self.dim + 1 :] for b in self.parent.cga)


class SharedLayout(Layout):
    """How a shared-memory buffer's elements are arranged in banks."""

    def check_shape(self, shape: tuple[IntExpr, ...], bits: int) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class NVMMASharedLayout(SharedLayout):
    """The swizzled layout TMA and wgmma use; the only layout a TMA descriptor accepts."""

    swizzle_byte_width: int
    element_bitwidth: int
    rank: int = 2
    transposed: bool = False
    fp4_padded: bool = False

    kind = "nvmma_shared"

    def __post_init__(self) -> None:
        if self.swizzle_byte_width not in (0, 32, 64, 128):
            raise LayoutError(
                f"nvmma_shared: swizzle_byte_width must be 0, 32, 64 or 128, got {self.swizzle_byte_width}"
            )
        if self.element_bitwidth not in (8, 16, 32, 64):
            raise LayoutError(f"nvmma_shared: element_bitwidth must be 8, 16, 32 or 64, got {self.element_bitwidth}")
        if self.rank < 1:
            raise LayoutError("nvmma_shared: rank must be at least 1")

    def check_shape(self, shape: tuple[IntExpr, ...], bits: int) -> None:
        if bits != self.element_bitwidth:
            raise LayoutError(
                f"nvmma_shared: element_bitwidth {self.element_bitwidth} does not match a {bits}-bit dtype"
            )
        if len(shape) != self.rank:
            raise LayoutError(f"nvmma_shared: rank {self.rank} does not match a buffer of rank {len(shape)}")
        if self.swizzle_byte_width == 0 or not all(isinstance(d, int) for d in shape):
            return
        dims = [d for d in shape if isinstance(d, int)]
        inner = dims[0] if self.transposed else dims[-1]
        outer = 1
        for d in dims[1:] if self.transposed else dims[:-1]:
            outer *= d
        inner_bytes = inner * bits // 8
        sw = self.swizzle_byte_width
        if inner_bytes < sw or inner_bytes % sw:
            raise LayoutError(
                f"nvmma_shared: a {sw}-byte swizzle needs an inner dimension that is a multiple of {sw} bytes; "
                f"this one has {inner_bytes} bytes"
            )
        if outer < 8:
            raise LayoutError(f"nvmma_shared: a {sw}-byte swizzle needs at least 8 rows; this buffer has {outer}")


@dataclass(frozen=True)
class SwizzledSharedLayout(SharedLayout):
    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]
    cga_layout: CGA = ()

    kind = "swizzled_shared"

    def __post_init__(self) -> None:
        object.__setattr__(self, "order", tuple(self.order))
        object.__setattr__(self, "cga_layout", _check_cga(self.cga_layout, len(self.order), "swizzled_shared"))
        for name in ("vec", "per_phase", "max_phase"):
            if not _is_pow2(getattr(self, name)):
                raise LayoutError(f"swizzled_shared: {name} must be a power of two, got {getattr(self, name)}")
        _check_order(self.order, len(self.order), "swizzled_shared")

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def num_ctas(self) -> int:
        return 1 << len(self.cga_layout)

    def check_shape(self, shape: tuple[IntExpr, ...], bits: int) -> None:
        if len(shape) != self.rank:
            raise LayoutError(f"swizzled_shared: order has rank {self.rank}, the buffer has rank {len(shape)}")


LAYOUT_CLASSES: dict[str, type[Layout]] = {
    cls.kind: cls for cls in (BlockedLayout, SliceLayout, NVMMASharedLayout, SwizzledSharedLayout)
}
