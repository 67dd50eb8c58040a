"""Layout assignment: gives every tile of a kernel a distributed layout.

Rank-2 tiles take one blocked parent layout P. Rank-1 tiles take a slice of P, found by
unification: a value expanded along axis a, or produced by a reduction along a, is `slice(a, P)`;
the operands and results of elementwise ops, loads, stores, loop-carried values and conditional
results share one layout. Kernels whose tiles are all rank 1 (pointwise) take a 1-D blocked layout.
"""

from __future__ import annotations

from tilec.ir.core import Block, Kernel, Operation, Value
from tilec.ir.errors import TilecError
from tilec.ir.expr import pow2_floor
from tilec.ir.layouts import WARP_SIZE, BlockedLayout, DistributedLayout, SliceLayout
from tilec.ir.ops import (
    CombineOp,
    ElementwiseOp,
    ExpandDimsOp,
    ForOp,
    IfOp,
    LoadOp,
    ReductionOp,
    StoreOp,
    WhereOp,
    yielded_values,
)
from tilec.ir.types import TileType


def parent_layout(rows: int, cols: int, num_warps: int, vec: int) -> BlockedLayout:
    """A row-major blocked layout for [rows, cols] tiles: `vec` contiguous elements per thread,
    a warp along a row where the row is long enough, warps stacked over rows first."""
    vec = max(1, min(vec, cols))
    while True:
        tc = min(WARP_SIZE, max(1, cols // vec))
        tr = WARP_SIZE // tc
        if tr <= rows or vec == 1:
            break
        vec //= 2
    wr = min(num_warps, pow2_floor(max(1, rows // tr)))
    wc = num_warps // wr
    return BlockedLayout((1, vec), (tr, tc), (wr, wc), (1, 0))


def column_layout(rows: int, cols: int, num_warps: int, vec: int) -> BlockedLayout:
    """A column-major blocked layout for [rows, cols] tiles whose memory is contiguous along the
    rows (dimension 0): `parent_layout` of the transposed tile, transposed — `vec` neighbouring
    rows per thread, a warp across the rows first, warps stacked down the columns."""
    t = parent_layout(cols, rows, num_warps, vec)
    return BlockedLayout(t.size_per_thread[::-1], t.threads_per_warp[::-1], t.warps_per_cta[::-1], (0, 1))


def flat_layout(num_warps: int, vec: int) -> BlockedLayout:
    return BlockedLayout((max(1, vec),), (WARP_SIZE,), (num_warps,), (0,))


class _Unify:
    """Union-find over rank-1 tile values, each class optionally pinned to a slice dimension."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.dim: dict[int, int] = {}
        self.values: dict[int, Value] = {}

    def find(self, v: Value) -> int:
        k = id(v)
        self.values.setdefault(k, v)
        self.parent.setdefault(k, k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a: Value, b: Value, op: Operation) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        da, db = self.dim.get(ra), self.dim.get(rb)
        if da is not None and db is not None and da != db:
            raise TilecError(f"plan: '{op.name}' combines a row vector and a column vector", op.loc)
        self.parent[rb] = ra
        if da is None and db is not None:
            self.dim[ra] = db

    def pin(self, v: Value, dim: int, op: Operation) -> None:
        r = self.find(v)
        if self.dim.get(r, dim) != dim:
            raise TilecError(f"plan: a value used by '{op.name}' must lie along two dimensions at once", op.loc)
        self.dim[r] = dim


def _rank1(v: Value) -> bool:
    return isinstance(v.type, TileType) and v.type.rank == 1


def _tiles(values: list[Value]) -> list[Value]:
    return [v for v in values if _rank1(v)]


def _constrain(block: Block, u: _Unify) -> None:
    for op in block.ops:
        for region in op.regions:
            _constrain(region, u)
        if isinstance(op, ExpandDimsOp) and _rank1(op.src):
            u.pin(op.src, op.attr("axis"), op)
        elif isinstance(op, ReductionOp):
            for r in _tiles(list(op.results)):
                u.pin(r, op.attr("axis"), op)
        group: list[Value] = []
        if isinstance(op, (ElementwiseOp, WhereOp, CombineOp, LoadOp, StoreOp)) or op.name in (
            "tile.cast",
            "tile.bitcast",
            "tile.broadcast",
            "tile.rand",
        ):
            group = _tiles(list(op.operands) + list(op.results))
        elif isinstance(op, ForOp):
            yielded = yielded_values(op.body)
            for i, init in enumerate(op.inits):
                vals = _tiles([init, op.iter_args[i], op.results[i]] + ([yielded[i]] if i < len(yielded) else []))
                for v in vals[1:]:
                    u.union(vals[0], v, op)
        elif isinstance(op, IfOp):
            for i, res in enumerate(op.results):
                vals = _tiles([res] + [yielded_values(r)[i] for r in op.regions if r.terminator is not None])
                for v in vals[1:]:
                    u.union(vals[0], v, op)
        for v in group[1:]:
            u.union(group[0], v, op)


def _all_values(kernel: Kernel) -> list[Value]:
    out: list[Value] = list(kernel.params)
    for op in kernel.walk():
        for r in op.regions:
            out.extend(r.args)
        out.extend(op.results)
    return out


def assign_layouts(kernel: Kernel, parent: BlockedLayout, flat: BlockedLayout) -> None:
    """Rewrites every tile type of `kernel` to carry a layout (in place)."""
    values = _all_values(kernel)
    has_2d = any(isinstance(v.type, TileType) and v.type.rank == 2 for v in values)
    if any(isinstance(v.type, TileType) and v.type.rank > 2 for v in values):
        raise TilecError(f"plan: kernel @{kernel.name} has tiles of rank > 2", kernel.loc)
    u = _Unify()
    _constrain(kernel.body, u)
    for v in values:
        t = v.type
        if not isinstance(t, TileType):
            continue
        layout: DistributedLayout
        if t.rank == 2:
            layout = parent
        elif not has_2d:
            layout = flat
        else:
            dim = u.dim.get(u.find(v), 0)
            layout = SliceLayout(dim, parent)
        v.type = t.with_(layout=layout)
