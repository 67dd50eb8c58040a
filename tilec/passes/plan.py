"""plan: chooses how a logical kernel is tiled and laid out.

It binds the block sizes (rows per program `XBLOCK`, reduction tile `RBLOCK`: the whole row, or a
loop over chunks), sets `num_warps`, and gives every tile a distributed layout. Emitters require
planned IR. Options override the heuristic.

Heuristic: a row of up to `max_rblock` elements is one tile (RBLOCK = the next power of two), a
longer row loops over chunks of `chunk` elements; rows per program grow until a program handles
about `target_elems` elements; warps give each thread about 16 elements; each thread's contiguous
run is 16 bytes of the narrowest loaded dtype.

A column reduction — a kernel whose 2-D loads run contiguously along x, not along the reduction
(a weight gradient: the sum over tokens of each hidden column) — is tiled the other way: XBLOCK
`column_block` columns (fewer where that would leave under `min_programs` programs), RBLOCK the
rows that fill `target_elems`, and a layout whose contiguous dimension is x (order [0, 1]), so a
warp reads whole 16-byte runs of neighbouring columns.

Before:
    tile.kernel @k(...) constexprs(XBLOCK, RBLOCK) attributes {grid = [cdiv(64, XBLOCK)]} {
      %r = tile.arange {end = RBLOCK} : tile<[RBLOCK], i32>
After (rnumel 1000):
    tile.kernel @k(...) constexprs(XBLOCK = 4, RBLOCK = 1024) attributes {grid = [16], num_warps = 8} {
      %r = tile.arange {end = 1024} : tile<[1024], i32, #slice<dim = 0, parent = #blocked>>
"""

from __future__ import annotations

from tilec.ir.core import Kernel, Module
from tilec.ir.errors import TilecError
from tilec.ir.expr import CallExpr, Sym
from tilec.ir.ops import ConstantOp, ForOp, LoadOp
from tilec.ir.types import PointerType, TileType
from tilec.passes.affine import local_stride
from tilec.passes.base import Pass, register
from tilec.passes.layouts import assign_layouts, column_layout, flat_layout, parent_layout
from tilec.passes.rewrite import const_value
from tilec.passes.specialize import bind_constexprs


def next_pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _pow2_floor(v: int) -> int:
    return 1 << (max(1, v).bit_length() - 1)


def reduction_numel(kernel: Kernel) -> int | None:
    """The trip range of the loops that step by RBLOCK (the row length), if constant."""
    for op in kernel.walk():
        if isinstance(op, ForOp):
            step = op.step.op if hasattr(op.step, "op") else None
            if isinstance(step, ConstantOp) and step.attr("value") == Sym("RBLOCK"):
                lo, hi = const_value(op.lower), const_value(op.upper)
                if isinstance(lo, int) and isinstance(hi, int):
                    return hi - lo
    return None


def x_numel(kernel: Kernel) -> int | None:
    """xnumel from a grid of the form cdiv(xnumel, XBLOCK)."""
    g = kernel.launch.grid[0] if kernel.launch.grid else None
    if isinstance(g, CallExpr) and g.fn == "cdiv" and isinstance(g.args[0], int) and g.args[1] == Sym("XBLOCK"):
        return g.args[0]
    return None


def narrowest_load_bytes(kernel: Kernel) -> int:
    sizes = [p.type.pointee.bytes for p in kernel.params if isinstance(p.type, PointerType)]
    for op in kernel.walk():
        if isinstance(op, LoadOp) and isinstance(op.result.type, TileType):
            sizes.append(op.result.type.dtype.bytes)
    return min(sizes) if sizes else 4


def widest_row_load_bytes(kernel: Kernel) -> int:
    """The element size of the widest 2-D tile loaded from global memory along the row (a row's
    bytes per element). A per-row value ([XBLOCK, 1]: an embedding's or a loss's int64 index, a
    saved statistic) is not part of a row."""
    sizes = [
        op.result.type.dtype.bytes
        for op in kernel.walk()
        if isinstance(op, LoadOp)
        and isinstance(op.result.type, TileType)
        and op.result.type.rank == 2
        and op.result.type.shape[1] != 1
    ]
    return max(sizes, default=4)


def reads_columns(kernel: Kernel) -> bool:
    """Whether the kernel's 2-D loads (full tiles, not a row's or a column's vector) mostly run
    contiguously along dimension 0 (x) rather than along the reduction (dimension 1). A load
    that reads the same element all along one dimension (a per-row statistic in a column
    kernel: LayerNorm's saved mean in its weight gradient) is a vector broadcast, and no vote."""
    along = [0, 0]
    for op in kernel.walk():
        if not isinstance(op, LoadOp):
            continue
        t = op.result.type
        if isinstance(t, TileType) and t.rank == 2 and 1 not in t.shape:
            strides = [local_stride(op.offsets, d) for d in (0, 1)]
            for d in (0, 1):
                along[d] += strides[d] == 1 and strides[1 - d] != 0
    return along[0] > along[1]


def largest_2d_tile(kernel: Kernel) -> tuple[int, int] | None:
    """The largest [rows, cols] among the kernel's 2-D tiles (the shape the parent layout covers)."""
    best: tuple[int, int] | None = None
    for op in kernel.walk():
        for r in op.results:
            t = r.type
            if isinstance(t, TileType) and t.rank == 2 and all(isinstance(d, int) for d in t.shape):
                rows, cols = t.shape
                assert isinstance(rows, int) and isinstance(cols, int)
                if best is None or rows * cols > best[0] * best[1]:
                    best = (rows, cols)
    return best


@register
class Plan(Pass):
    """Binds block sizes and warps, and lays out every tile."""

    name = "plan"
    unchanged = "every block size is bound and every tile laid out already"
    xblock: int | None = None
    rblock: int | None = None
    num_warps: int | None = None
    max_rblock: int = 8192
    chunk: int = 2048
    target_elems: int = 4096
    elems_per_thread: int = 16
    row_block_bytes: int = 0  # > 0: at most this many bytes of a row block's input rows (a shared-memory cache)
    column_block: int = 128  # a column reduction's columns per program
    min_programs: int = 264  # a column reduction takes fewer columns rather than leave fewer programs

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            self.plan(kernel)

    def choose(self, kernel: Kernel, columns: bool = False) -> dict[str, int]:
        """The block sizes; `columns`: the kernel is a column reduction (`reads_columns`)."""
        cx = dict(kernel.constexprs)
        values: dict[str, int] = {}
        rnumel = reduction_numel(kernel)
        xnumel = x_numel(kernel)
        if columns and "XBLOCK" in cx:
            return self.checked(kernel, self.choose_columns(cx, xnumel, rnumel))
        if "RBLOCK" in cx and cx["RBLOCK"] is None:
            if self.rblock is not None:
                values["RBLOCK"] = self.rblock
            elif rnumel is not None and next_pow2(rnumel) <= self.max_rblock:
                values["RBLOCK"] = next_pow2(rnumel)
            else:
                values["RBLOCK"] = self.chunk
        rb = values.get("RBLOCK", cx.get("RBLOCK") or 1)
        if "XBLOCK" in cx and cx["XBLOCK"] is None:
            if self.xblock is not None:
                values["XBLOCK"] = self.xblock
            else:
                xb = max(1, self.target_elems // rb) if "RBLOCK" in cx else 1024
                if xnumel is not None:
                    xb = min(xb, next_pow2(xnumel))
                if self.row_block_bytes and rnumel is not None:
                    row = rnumel * widest_row_load_bytes(kernel)
                    xb = min(xb, max(1, _pow2_floor(self.row_block_bytes // row)))
                values["XBLOCK"] = min(xb, 64) if "RBLOCK" in cx else xb
        return self.checked(kernel, values)

    def choose_columns(self, cx: dict[str, int | None], xnumel: int | None, rnumel: int | None) -> dict[str, int]:
        values: dict[str, int] = {}
        xb = cx["XBLOCK"]
        if xb is None:
            xb = self.xblock
        if xb is None:
            xb = self.column_block
            while xnumel is not None and xb > 16 and xnumel // xb < self.min_programs:
                xb //= 2
            if xnumel is not None:
                xb = min(xb, next_pow2(xnumel))
        if cx["XBLOCK"] is None:
            values["XBLOCK"] = xb
        if cx["RBLOCK"] is None:
            rb = self.rblock if self.rblock is not None else max(1, self.target_elems // xb)
            values["RBLOCK"] = min(rb, next_pow2(rnumel)) if rnumel is not None and self.rblock is None else rb
        return values

    def checked(self, kernel: Kernel, values: dict[str, int]) -> dict[str, int]:
        for name, v in values.items():
            if v < 1 or v & (v - 1):
                raise TilecError(f"plan: {name} must be a power of two, got {v}", kernel.loc)
        return values

    def plan(self, kernel: Kernel) -> None:
        if kernel.launch.num_warps is not None and all(v is not None for v in kernel.constexprs.values()):
            return  # already planned
        columns = "RBLOCK" in kernel.constexprs and reads_columns(kernel)
        values = self.choose(kernel, columns)
        bind_constexprs(kernel, values)
        unbound = [k for k, v in kernel.constexprs.items() if v is None]
        if unbound:
            raise TilecError(
                f"plan: kernel @{kernel.name} has constexprs the plan does not know: {unbound}", kernel.loc
            )
        xb = kernel.constexprs.get("XBLOCK") or 1
        rb = kernel.constexprs.get("RBLOCK") or 1
        tile_elems = xb * rb
        if self.num_warps is not None:
            warps = self.num_warps
        else:
            warps = max(1, min(16, _pow2_floor(tile_elems // (32 * self.elems_per_thread))))
        vec = max(1, 16 // narrowest_load_bytes(kernel))
        rows, cols = largest_2d_tile(kernel) or (xb, rb)
        if self.num_warps is None and "RBLOCK" not in kernel.constexprs:
            elems = max(rows * cols, xb)
            warps = max(1, min(16, _pow2_floor(elems // (32 * self.elems_per_thread))))
        kernel.launch.num_warps = warps
        parent = (column_layout if columns else parent_layout)(rows, cols, warps, vec)
        assign_layouts(kernel, parent, flat_layout(warps, min(vec, max(1, xb // (32 * warps)))))
