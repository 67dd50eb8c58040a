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

A banded kernel (a mix-order reduction: constexpr `RSPLIT`, the rows each program loops over,
its row one `RBLOCK` already) gets `XBLOCK` as a row kernel does, at most 8 warps, `RSPLIT` so
that about `bands` programs cover the rows (default: one per SM: each program's column sums are a
row of the workspace the wrapper adds up), and
its band loop `stages`-deep software pipelining (the next row blocks' loads in flight while one
computes).

Before:
    tile.kernel @k(...) constexprs(XBLOCK, RBLOCK) attributes {grid = [cdiv(64, XBLOCK)]} {
      %r = tile.arange {end = RBLOCK} : tile<[RBLOCK], i32>
After (rnumel 1000):
    tile.kernel @k(...) constexprs(XBLOCK = 4, RBLOCK = 1024) attributes {grid = [16], num_warps = 8} {
      %r = tile.arange {end = 1024} : tile<[1024], i32, #slice<dim = 0, parent = #blocked>>
"""

from __future__ import annotations

import math
from typing import Literal

from tilec.ir.core import Kernel, Module
from tilec.ir.errors import TilecError
from tilec.ir.expr import CallExpr, Sym, next_pow2, pow2_floor
from tilec.ir.ops import ConstantOp, ForOp, LoadOp
from tilec.ir.target import DEFAULT, H100, Target
from tilec.ir.types import PointerType, TileType, numel
from tilec.passes.affine import local_stride
from tilec.passes.base import Pass, register
from tilec.passes.cluster_rows import cluster_rows
from tilec.passes.layouts import assign_layouts, column_layout, flat_layout, parent_layout
from tilec.passes.rewrite import const_value
from tilec.passes.specialize import bind_constexprs


def row_loop_bounds(loop: ForOp, rblock: int | None = None) -> tuple[int, int] | None:
    """A loop over a row's chunks (stepping by RBLOCK, or by `rblock`: the value the plan bound it
    to): its bounds, if constant; else None."""
    step = loop.step.op if hasattr(loop.step, "op") else None
    value = step.attr("value") if isinstance(step, ConstantOp) else None
    if value == Sym("RBLOCK") or (rblock is not None and value == rblock):
        lo, hi = const_value(loop.lower), const_value(loop.upper)
        if isinstance(lo, int) and isinstance(hi, int):
            return lo, hi
    return None


def reduction_numel(kernel: Kernel) -> int | None:
    """The trip range of the loops that step by RBLOCK (the row length), if constant."""
    for op in kernel.walk():
        if isinstance(op, ForOp) and (bounds := row_loop_bounds(op)) is not None:
            return bounds[1] - bounds[0]
    return None


# the kernel attribute a plan's `row_cache` sets: the bytes of a row block `split-rows` caches
ROW_CACHE = "row_cache"
# the kernel attributes a plan's `reverse` and `stream` set, which `reread` reads: the loops that
# read a row again run from its last chunk back; the rows written are stored evict-first
REVERSE = "reverse"
STREAM = "stream"
# the kernel attribute a plan's `lanes_reread` sets, which `softmax-lanes` and `welford-lanes` read:
# a loop's chunks may be read again from global memory for the statistics kept per lane (from L1 or
# L2 where the rows in flight fit there)
LANES_REREAD = "lanes_reread"
# the kernel attribute a plan's `groups` sets, which `softmax-groups` reads: the elements of a
# group whose softmax statistics a loop keeps
SOFTMAX_GROUPS = "softmax_groups"
# the kernel attribute a plan's `line` sets, which `align-rows` reads over its own `line`: the
# boundary in bytes a misaligned row's whole chunks start on (16: a vector, 128: a cache line)
ROW_LINE = "row_line"
# the kernel attribute a cluster plan's `prefetch` sets, which `early-loads` reads: the chunks
# ahead whose other inputs (a norm's weight) each chunk of the later phases reads
PREFETCH = "prefetch"

# a banded kernel's pipelining: the row loads each SM keeps in flight (measured on the H100:
# bench/results/2026-11-26-h100-mix-order), and the shared memory the stages may take (the H100's
# and H200's 227 KiB per CTA less room for the reductions' scratch)
IN_FLIGHT = 48 * 1024
SMEM_FOR_STAGES = 216 * 1024


def band_in_flight(target: Target) -> int:
    """The row loads in flight per SM a banded kernel's stages are sized for on `target` (the
    plan's `in_flight`): IN_FLIGHT, measured on the H100, scaled by the target's bytes in flight
    per SM against the H100's (the H200: 48 KiB x 21818 / 15227 = 69 KiB, measured 1-5 points of a
    copy faster than 48 KiB there: bench/results/2026-11-26-h200-inflight); IN_FLIGHT where the
    target's bandwidth is not described."""
    if not target.bytes_in_flight_per_sm:
        return IN_FLIGHT
    return round(IN_FLIGHT * target.bytes_in_flight_per_sm / H100.bytes_in_flight_per_sm)


def band_row_bytes(kernel: Kernel) -> int:
    """A banded kernel's bytes of row loads per element of a row block (x and dy in bf16: 4),
    read from its logical form ([XBLOCK, RBLOCK] loads); 0 for any other kernel."""
    band = band_loop(kernel)
    if band is None:
        return 0
    rows = {
        id(op.ptr): op.result.type.dtype.bytes
        for op in band.walk()
        if isinstance(op, LoadOp)
        and isinstance(op.result.type, TileType)
        and op.result.type.rank == 2
        and op.result.type.shape[0] == Sym("XBLOCK")
        and op.result.type.shape[1] != 1
    }
    return sum(rows.values())  # each input once (a reduction loop and the next read the same rows)


def _tile_bytes(t: TileType) -> int:
    """A planned tile's bytes."""
    n = numel(t.shape)
    assert isinstance(n, int), t
    return n * t.dtype.bytes


def band_loop(kernel: Kernel) -> ForOp | None:
    """A banded kernel's loop over its program's rows (the loop at its top level), else None."""
    if "RSPLIT" not in kernel.constexprs:
        return None
    return next((op for op in kernel.body.ops if isinstance(op, ForOp)), None)


def x_size(kernel: Kernel, per: str = "XBLOCK") -> int | Sym | None:
    """xnumel from a grid of the form cdiv(xnumel, XBLOCK) (a banded kernel's: cdiv(xnumel, RSPLIT)):
    a constant, or the size parameter's symbol where the size is symbolic."""
    g = kernel.launch.grid[0] if kernel.launch.grid else None
    if isinstance(g, CallExpr) and g.fn == "cdiv" and isinstance(g.args[0], (int, Sym)) and g.args[1] == Sym(per):
        return g.args[0]
    return None


def x_numel(kernel: Kernel, per: str = "XBLOCK") -> int | None:
    """xnumel from a grid of the form cdiv(xnumel, XBLOCK) where it is a constant."""
    size = x_size(kernel, per)
    return size if isinstance(size, int) else None


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
    bands: int = 0  # a banded kernel's programs (0: one per SM)
    rows: int = 0  # the row count to band where a banded kernel's own is symbolic (what its graph was traced with)
    stages: int = 0  # a banded kernel's band loop: software pipelining depth (0: from the bytes in flight)
    in_flight: int = 0  # a banded kernel's row loads in flight per SM that size its stages (0: IN_FLIGHT)
    # > 0: at most this many bytes of a row block's input rows cached in shared memory, the rest read
    # again (kernel attribute `row_cache`, which `split-rows` reads; a row that fits is cached whole).
    # A cluster plan's: the first chunks of each CTA's slice, cluster-rows' `row_cache`
    row_cache: int = 0
    # the loops that read a row again run from its last chunk back (kernel attribute `reverse`),
    # and the rows written are stored evict-first (`stream`): both for `reread`, for rows whose
    # second read comes from L2 only in part
    reverse: bool = False
    stream: bool = False
    # softmax's and LayerNorm's statistics of a row in a loop over chunks kept per lane, each chunk
    # read again from global memory (kernel attribute `lanes_reread`, which `softmax-lanes` and
    # `welford-lanes` read): a loop of each lane's maximum (sum), then one of its sum of exp (squared
    # deviations), then the output's, each with no reduction across warps inside. For rows whose
    # chunks stay in L1 or L2 between the reads (rows of 4096-32768 on the H200)
    lanes_reread: bool = False
    # > 0 (a power of two): a loop's softmax statistics kept for each group of this many of a
    # thread's consecutive elements of a chunk, combined across the row after the loop (kernel
    # attribute `softmax_groups`, which `softmax-groups` reads): one exp an element and no
    # reduction across threads in the loop, for loops bound by their instructions (the
    # cross-entropy's log-sum-exp on the H200)
    groups: int = 0
    # > 0: the boundary in bytes (16 or 128) a misaligned row's whole chunks start on, over
    # align-rows' own `line` (kernel attribute `row_line`, which `align-rows` reads): a rule's
    # choice for the rows it measured (softmax over rows of symbolic length on the H200: 16)
    line: int = 0
    # > 1: each row split across a thread-block cluster of this many CTAs, each CTA's slice in its
    # shared memory in chunks of `chunk` (`cluster-rows`: Gluon, one row a cluster, `num_warps` a
    # CTA); a kernel it cannot take is planned as usual, with the remark why
    cluster: int = 0
    exchange: Literal["barriers", "push"] = "barriers"  # the cluster's tile.cluster_gather's
    # > 0: at most this many registers a thread (the launch's `maxnreg`): where shared memory lets
    # more CTAs share an SM than the registers the compiler takes would (softmax's cp.async cache of
    # a row of 50257 over 16 warps: 80 registers leave one CTA an SM where 104 KiB of cache allow two)
    maxnreg: int = 0
    # > 0, a cluster plan: each of a CTA's chunks in the phases after the statistics reads its
    # other inputs (not cached: a norm's weight, from L2) this many chunks early (kernel attribute
    # `prefetch`, which `early-loads` reads), the first chunks' before the cluster's exchange
    prefetch: int = 0

    def __post_init__(self) -> None:
        if self.maxnreg and not 24 <= self.maxnreg <= 256:
            raise ValueError(f"maxnreg must be 0 (no cap) or in 24..256, got {self.maxnreg}")
        if self.groups < 0 or self.groups & (self.groups - 1) or self.groups == 1:
            raise ValueError(f"groups must be 0 (none) or a power of two from 2, got {self.groups}")
        if self.prefetch < 0:
            raise ValueError(f"prefetch must be 0 (none) or more chunks, got {self.prefetch}")
        if self.line not in (0, 16, 128):
            raise ValueError(f"line must be 0 (align-rows' own), 16 (a vector) or 128 (a cache line), got {self.line}")

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            if self.cluster > 1 and self.split_across_cluster(kernel):
                if self.prefetch:
                    kernel.attributes[PREFETCH] = self.prefetch
            else:
                if self.prefetch:
                    self.remark(kernel, f"prefetch={self.prefetch}: only a cluster plan's chunks read ahead")
                self.plan(kernel)
            if self.maxnreg:  # either form's launch
                kernel.launch.maxnreg = self.maxnreg

    def cluster_chunks(self, n: int | None) -> int:
        """The chunks of `chunk` elements of each CTA's slice when rows of `n` elements split across
        `cluster` CTAs; 0 where they do not."""
        if not n or not self.cluster or n % (self.cluster * self.chunk):
            return 0
        return n // (self.cluster * self.chunk)

    def split_across_cluster(self, kernel: Kernel) -> bool:
        n = reduction_numel(kernel)
        chunks = self.cluster_chunks(n)
        if not chunks:
            self.remark(
                kernel, f"cluster={self.cluster}: a row of {n} does not split into CTAs of chunks of {self.chunk}"
            )
            return False
        why = cluster_rows(kernel, self.cluster, chunks, self.num_warps or 4, self.exchange, self.row_cache)
        if why is not None:
            self.remark(kernel, f"cluster={self.cluster}: {why}")
        return why is None

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
                    xb = min(xb, max(1, pow2_floor(self.row_block_bytes // row)))
                values["XBLOCK"] = min(xb, 64) if "RBLOCK" in cx else xb
        values = self.checked(kernel, values)
        if "RSPLIT" in cx and cx["RSPLIT"] is None:
            values["RSPLIT"] = self.rows_per_band(kernel, values.get("XBLOCK", cx.get("XBLOCK") or 1))
        return values

    def rows_per_band(self, kernel: Kernel, xblock: int) -> int:
        """A banded kernel's rows per program: about `bands` programs, a whole number of row blocks each."""
        rows = x_numel(kernel, "RSPLIT")
        if rows is None:
            if not self.rows:
                raise TilecError(
                    f"plan: kernel @{kernel.name} bands a symbolic number of rows: give rows (plan{{rows=...}})",
                    kernel.loc,
                )
            rows = self.rows
        # one program a SM, its band loop pipelined deep enough (`band_stages`): faster than two a
        # SM at every shape measured on the H100 (bench/results/2026-11-26-h100-fanout,
        # bands.jsonl); on the H200 faster at 4096 rows of 2048, slower at 32768 (-h200-fanout)
        bands = self.bands or DEFAULT.sm_count
        per = -(-rows // bands)
        return max(xblock, -(-per // xblock) * xblock)

    def band_stages(self, kernel: Kernel, band: ForOp, rows: int) -> int:
        """The band loop's pipelining depth: enough row blocks (`rows` bytes of row loads each) in
        flight for about `in_flight` bytes per SM (default 48 KiB; at least 3 stages), and no more than shared memory holds:
        Triton keeps stages - 1 copies of every load of the loop there (rows, the weight, per-row
        values)."""
        staged = sum(
            _tile_bytes(t) for op in band.walk() if isinstance(op, LoadOp) and isinstance(t := op.result.type, TileType)
        )
        grid = kernel.launch.grid[0] if kernel.launch.grid else None
        programs = grid if isinstance(grid, int) else DEFAULT.sm_count
        per_sm = max(1.0, programs / DEFAULT.sm_count)
        in_flight = self.in_flight or IN_FLIGHT
        stages = self.stages or max(3, 1 + math.ceil(in_flight / max(1.0, per_sm * rows)))
        while stages > 1 and (stages - 1) * staged > SMEM_FOR_STAGES:
            stages -= 1
        return stages

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
        row_bytes = band_row_bytes(kernel)  # (read while XBLOCK is a name: a row block of one row looks like a weight)
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
            warps = max(1, min(16, pow2_floor(tile_elems // (32 * self.elems_per_thread))))
        vec = max(1, 16 // narrowest_load_bytes(kernel))
        rows, cols = largest_2d_tile(kernel) or (xb, rb)
        if self.num_warps is None and "RBLOCK" not in kernel.constexprs:
            elems = max(rows * cols, xb)
            warps = max(1, min(16, pow2_floor(elems // (32 * self.elems_per_thread))))
        band = band_loop(kernel)
        if band is not None:
            if self.num_warps is None:
                warps = min(warps, 8)
            stages = self.band_stages(kernel, band, xb * rb * row_bytes)
            if stages > 1:
                band.attributes["stages"] = stages
        kernel.launch.num_warps = warps
        if self.row_cache > 0:
            kernel.attributes[ROW_CACHE] = self.row_cache
        for name, on in ((REVERSE, self.reverse), (STREAM, self.stream), (LANES_REREAD, self.lanes_reread)):
            if on:
                kernel.attributes[name] = True
        if self.groups:
            kernel.attributes[SOFTMAX_GROUPS] = self.groups
        if self.line:
            kernel.attributes[ROW_LINE] = self.line
        parent = (column_layout if columns else parent_layout)(rows, cols, warps, vec)
        assign_layouts(kernel, parent, flat_layout(warps, min(vec, max(1, xb // (32 * warps)))))
