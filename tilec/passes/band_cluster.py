"""band-cluster: a banded kernel's rows each split across a thread-block cluster, its ring the prefetch.

A banded kernel (a norm's backward fused with its weights' gradients: `tilec.frontend.logical`)
keeps each column sum of its band in one program's registers. `band-ring` (one CTA a band) holds
RMSNorm's one sum to rows of 32768 and LayerNorm's two to 16384; past that the sums spill. Here a
program is a cluster of C CTAs (`num_ctas = C`) and CTA r owns columns [r·N/C, (r+1)·N/C) of
every row of the cluster's band, in K chunks of CH columns (N = C·K·CH): its slice of the row
inputs' ring, of the weights and of the column sums is its own. The pass turns the frontend's
logical banded kernel into that form, planned (it lays out every tile, as `cluster-rows` does for
the forward's long rows; it replaces `band-chunks`, `plan` and `band-ring`):

- every tile carries the CTA as its first dimension (`[XBLOCK, RBLOCK]` and a column tile
  `[1, RBLOCK]` become `[C, CH]` with a layout whose `cga_layout` puts row r in CTA r; a row's
  values `[XBLOCK]`, `[XBLOCK, 1]` become `[C]`, `[C, 1]`: each CTA the same row), one row a step
  (XBLOCK = 1), the band loop over the cluster's rows;
- the loops over the row are unrolled over the CTA's K chunks; a column sum is carried as K
  `[C, CH]` tiles (a chunk's column part over one row is the chunk itself: masked, not reduced);
- each row input's chunk c has a shared-memory buffer of its own (a cluster-split buffer can be
  neither indexed nor sliced in Gluon); the band's first row is copied into them before the band
  loop (`tile.async_copy`, a group a chunk, masked off where the band is empty), the weights'
  chunks (reads that do not move with the row) once before that, one group, where they fit in
  `smem_budget` beside the rows (else read from global memory: L2);
- in the band, the first read of chunk c waits until K - 1 - c groups are pending, every read of a
  chunk reads its buffer; after the row's statistics loop each CTA's partials are gathered from
  the whole cluster (`tile.cluster_gather`, `exchange`: its push form in the band loop, one wait
  a row) and combined in CTA order, so every CTA has the row's statistics bit for bit the same;
  after the last read of chunk c, a CTA barrier, then the next row's chunk c copied into its
  buffers (masked off past the band's end) and committed;
- a row's own values the band loop reads from memory (a norm's saved mean and rstd) are read a
  row ahead: the band's first row's before the loop, each step the next row's (masked off past
  the band), carried by the band loop (the load no longer waits after the row's exchange);
- after the band every copy is waited for, and each CTA stores its chunks of each column sum to
  its columns of the program's (the cluster's) workspace row.

`RSPLIT`, where unbound, gives about `bands` clusters (default: as many as run at once, one CTA
an SM: `Target.clusters_at_once`; more would run in two waves).

On the H100 the hand-written kernel of this form (`bench/ring_bwd_probe.py`'s `cluster_source`,
clusters of 2, the pushed exchange; bench/results/2026-11-28-h100-cluster-ring) ran RMSNorm's
whole backward at 90.9 / 95.2 / 85.9% of a copy at 4096x32768 / 8192x32768 / 2048x65536 (stock
59-60, 36), LayerNorm's at 79.3 / 82.4 (41-42) at rows of 32768. This pass's kernel, through the
hook with the H100's rules (`gluon-cluster-ring`, bench/results/2026-11-28-h100-cluster-bands-validation):
RMSNorm 90.9 / 89.4 at 4096x32768 / 2048x65536 in clusters of 2 and 8, LayerNorm 83.3 / 82.5 in
clusters of 4 and 8 (two CTAs an SM); autotuned in place the residual-fused RMSNorm 91.9 / 93.5 /
93.7 (-h100-cluster-bands).

It acts on a logical banded kernel (constexprs XBLOCK, RBLOCK, RSPLIT; a grid of cdiv(rows,
RSPLIT)) whose band loop's loops run over the row from 0 to its length N (a constant) by RBLOCK,
the loops before the column sums' carrying the row's statistics (each folded by one combine op),
and whose ops after the band store the column sums; N must split into C·K chunks of a power of two
of at least 32 columns. Else it leaves the kernel with a remark. Gluon only (clusters, cp.async);
run `canonicalize`, `cse` and `dce` after it.

Before (`tilec dump --ir examples/rmsnorm_backward.py`):
    %col = tile.for %x = %band_start to %band_end step %xblock iter_args(%acc = %zero) {
      %s = tile.for %r = %c0 to %n step %rblock iter_args(%a = %z) { ... tile.reduce {axis = 1} ... }
      %cc = tile.for %r_1 = %c0 to %n step %rblock iter_args(%acc_chunk = %acc) {
        ... tile.store %out_ptr1 ... tile.reduce {axis = 0} ...
      }
      tile.yield %cc
    }
    tile.store %ws_ptr, %ws_offsets, %col, %column_mask
After (K = 2):
    %in_ptr0_slice = tile.smem_alloc : smem<[C, CH], bf16, #swizzled> (one a row input and chunk)
    (the weights' chunks copied, committed; the first row's chunk 0 copied, committed; chunk 1 ...)
    %col, %col_1 = tile.for %x = %band_start to %band_end step %c1 iter_args(%acc = %zero, %acc_1 = %zero) {
      tile.async_wait {pending = 1} ; (chunk 0's statistics from its buffers)
      tile.async_wait ; (chunk 1's)
      %p0, %p1 = tile.cluster_gather %part {exchange = "push"} ; %s = tile.add %p0, %p1
      (chunk 0's dx, stored; its column parts added to %acc) ; tile.cta_barrier ;
      (the next row's chunk 0 copied, committed) ; (chunk 1 likewise, into %acc_1)
      tile.yield %acc_next, %acc_1_next
    }
    tile.async_wait
    tile.store %ws_ptr, (CTA r's columns of chunk 0), %col ; tile.store (chunk 1's), %col_1
"""

from __future__ import annotations

from typing import Any, Literal

from tilec.ir.builder import Builder
from tilec.ir.core import Block, Kernel, Module, Operation, Value
from tilec.ir.dtypes import DType, i32
from tilec.ir.expr import CallExpr
from tilec.ir.ops import ExpandDimsOp, ForOp, LoadOp, StoreOp, YieldOp
from tilec.ir.ops.compute import ReductionOp
from tilec.ir.target import DEFAULT
from tilec.ir.types import SharedBufferType, TileType
from tilec.passes.base import Pass, register
from tilec.passes.cluster_rows import ClusterRowsRewriter, DeclinedError, R, X
from tilec.passes.plan import band_loop, row_loop_bounds, x_numel
from tilec.passes.rewrite import backward_slice, depends_on


class BandClusterRewriter(ClusterRowsRewriter):
    def __init__(
        self,
        kernel: Kernel,
        ctas: int,
        chunk: int,
        warps: int,
        exchange: str = "push",
        bands: int = 0,
        smem_budget: int = DEFAULT.smem_per_block,
        weights: bool = True,
    ) -> None:
        self.chunk, self.bands, self.smem_budget, self.weights = chunk, bands, smem_budget, weights
        n = self.row_length(kernel)
        if n % (ctas * chunk):
            raise DeclinedError(f"its row of {n} does not split into {ctas} CTAs of chunks of {chunk}")
        super().__init__(kernel, ctas, n // (ctas * chunk), warps, exchange)

    # -- what the kernel must look like

    def row_length(self, kernel: Kernel) -> int:
        band = band_loop(kernel)
        if band is None or not {"XBLOCK", "RBLOCK"} <= set(kernel.constexprs):
            raise DeclinedError("not a banded kernel over XBLOCK x RBLOCK tiles")
        self.band = band
        bounds = {row_loop_bounds(op) for op in band.body.ops if isinstance(op, ForOp)}
        if len(bounds) != 1 or None in bounds:
            raise DeclinedError("its loops over the row do not all run over one constant row by RBLOCK")
        lo, hi = bounds.pop()  # type: ignore[misc]
        if lo != 0:
            raise DeclinedError("its loops over the row do not start at 0")
        return hi

    def row_loops(self) -> list[ForOp]:
        k, band = self.k, self.band
        if any(isinstance(r.type, TileType) and r.type.layout is not None for op in k.walk() for r in op.results):
            raise DeclinedError("it is not a logical kernel (its tiles have layouts)")
        grid = k.launch.grid
        if len(grid) != 1 or not (isinstance(grid[0], CallExpr) and grid[0].fn == "cdiv"):
            raise DeclinedError("its grid is not cdiv(rows, RSPLIT)")
        if any(isinstance(op, ForOp) and op is not band for op in k.body.ops):
            raise DeclinedError("it has a loop besides its band loop")
        if any(op.regions for op in band.body.ops if not isinstance(op, ForOp)):
            raise DeclinedError("its band holds branches")
        loops = [op for op in band.body.ops if isinstance(op, ForOp)]
        if any(isinstance(o, ForOp) for lp in loops for o in lp.body.walk()):
            raise DeclinedError("a loop over the row holds another loop")
        sums = {id(a): j for j, a in enumerate(band.iter_args)}
        columns = [lp for lp in loops if any(id(v) in sums for v in lp.inits)]
        if len(columns) != 1 or len(columns[0].inits) != len(band.iter_args):
            raise DeclinedError("its column sums are not carried by one loop over the row, alone")
        self.columns = columns[0]
        self.which = [sums.get(id(v), -1) for v in self.columns.inits]  # the band's sum of each iter arg
        if sorted(self.which) != list(range(len(band.iter_args))):
            raise DeclinedError("its column loop carries more than the column sums")
        yielded = band.body.terminator
        assert yielded is not None
        if [id(v) for v in yielded.operands] != [id(self.columns.results[self.which.index(j)]) for j in sums.values()]:
            raise DeclinedError("its band loop does not pass on the column loop's sums")
        if any(lp.results for lp in loops[loops.index(self.columns) + 1 :]):
            raise DeclinedError("a loop after the column sums' carries values")
        after = k.body.ops[k.body.ops.index(band) + 1 :]
        results = {id(r) for r in band.results}
        if any(isinstance(op, StoreOp) and id(op.value) not in results for op in after):
            raise DeclinedError("it stores more than the column sums after its band")
        if any(op.regions for op in after):
            raise DeclinedError("it has a loop after its band")
        self.N = self.row_length(k)
        return loops

    # -- the rewrite

    def clone(self, op: Operation) -> list[Value]:
        b = self.b
        if isinstance(op, ReductionOp) and op.attr("axis") == 0:
            # a chunk's column part over one row: the chunk, its masked-off elements 0
            t = op.src.type
            if not (isinstance(t, TileType) and t.rank == 2 and t.shape[0] == X) or op.attr("kind") != "sum":
                raise DeclinedError(f"'{op.name}' reduces along the rows other than a sum of a row block")
            if len(op.results) != 1:
                raise DeclinedError(f"'{op.name}' along the rows gives more than the sum")
            value = self.v(op.src)
            if op.mask is not None:
                zero = b.constant(0.0, value.type.dtype)  # type: ignore[attr-defined]
                value = b.op("tile.where", self.v(op.mask), value, zero, type=value.type, name_hint="column_part")
            self.map[id(op.result)] = value
            self.column_parts.add(id(value))
            return [value]
        if isinstance(op, ExpandDimsOp) and id(self.v(op.src)) in self.column_parts:
            self.map[id(op.result)] = self.v(op.src)  # (the part is a [C, CH] tile already)
            return [self.v(op.src)]
        values = super().clone(op)
        if self.shift and isinstance(op, ExpandDimsOp) and op.result.type.shape == (1, R):  # type: ignore[attr-defined]
            # after the band: chunk c's columns of the workspace
            value = b.op(
                "tile.add", values[0], b.constant(self.shift, i32), type=values[0].type, name_hint="chunk_cols"
            )
            self.map[id(op.result)] = value
            return [value]
        return values

    def run(self) -> None:
        k, band = self.k, self.band
        self.column_parts: set[int] = set()
        self.shift = 0
        self.reads = self.chunk_reads()
        rsplit = None  # the rows a cluster's band takes, where unbound: about `bands` clusters
        if k.constexprs.get("RSPLIT") is None:
            rows = x_numel(k, "RSPLIT")
            if rows is None:
                raise DeclinedError("its row count is symbolic (bind RSPLIT first)")
            rsplit = -(-rows // (self.bands or DEFAULT.clusters_at_once(self.C)))
        old = list(k.body.ops)
        body = Block()
        self.b = Builder.at_end(body)
        self.cta_offsets = None
        where = old.index(band)
        for op in old[:where]:
            self.clone(op)
        self.offsets()  # (before the band: its chunks' copies and the workspace's stores use it)
        sums = self.build_band()
        self.b.create("tile.async_wait", pending=0)
        for c in range(self.K):  # each chunk's column sums to its columns of the workspace
            self.shift = c * self.CH
            for r, v in zip(band.results, sums[c]):
                self.map[id(r)] = v
            for op in old[where + 1 :]:
                self.clone(op)
        k.body.ops = []
        for op in body.ops:
            k.body.append(op)
        if rsplit is not None:
            k.constexprs["RSPLIT"] = rsplit
        k.launch.num_warps = self.W
        k.launch.num_ctas = self.C
        k.constexprs.pop("XBLOCK")
        k.constexprs.pop("RBLOCK")
        k.attributes["cluster"] = self.C

    def chunk_reads(self) -> dict[int, tuple[LoadOp, bool]]:
        """Each pointer whose chunks the loops over the row read (its first such read, and whether
        the read moves with the row: a row input's, not a weight's), in the order of first reads."""
        iv = self.band.induction_var
        out: dict[int, tuple[LoadOp, bool]] = {}
        for loop in self.loops:
            for op in loop.body.ops:
                if not isinstance(op, LoadOp) or id(op.ptr) in out:
                    continue
                t = op.result.type
                if not (isinstance(t, TileType) and t.shape in ((X, R), (1, R))):
                    continue
                if op.other is not None:
                    raise DeclinedError("a chunk's read gives masked-off elements a value (a copy makes them 0)")
                sources = [op.offsets] + ([op.mask] if op.mask is not None else [])
                moves = any(depends_on(v, iv) for v in sources)
                if moves and op.mask is None:
                    raise DeclinedError("a row input's read is not masked by the band's rows")
                out[id(op.ptr)] = (op, moves)
        if not any(moves for _, moves in out.values()):
            raise DeclinedError("its loops read no row input")
        return out

    def slice_bytes(self, load: LoadOp) -> int:
        t = load.result.type
        assert isinstance(t, TileType) and isinstance(t.dtype, DType)
        return self.K * self.CH * t.dtype.bytes

    def read_at(self, load: LoadOp, loop: ForOp, c: int, row: Value) -> tuple[Value, Value | None]:
        """`load`'s offsets and mask for chunk c of the row `row` (the band's row index), cloned at
        the builder."""
        saved = dict(self.map)
        self.map[id(self.band.induction_var)] = row
        self.map[id(loop.body.args[0])] = self.b.constant(c * self.CH, i32, name_hint="chunk_first")
        sources = [load.offsets] + ([load.mask] if load.mask is not None else [])
        inner = backward_slice(loop.body, sources)
        outer = backward_slice(self.band.body, [o for op in inner for o in op.operands] + sources)
        for op in outer + inner:
            self.clone(op)
        got = self.v(load.offsets), self.v(load.mask) if load.mask is not None else None
        self.map = saved
        return got

    def same_access(self, load: LoadOp, key: tuple[int, int]) -> bool:
        """cluster-rows' check, the pointer's first read of the chunk in the band (as its copies
        read it) recorded first: what its other reads of the chunk must match to read the buffer."""
        if load is self.reads[key[0]][0]:
            self.copied[key] = load
            self.access[key] = (self.v(load.offsets), self.v(load.mask) if load.mask else None)
        return super().same_access(load, key)

    def row_value(self, load: LoadOp, row: Value) -> Value:
        """The band loop's `load` of row `row` (the band's row index), cloned at the builder."""
        saved = dict(self.map)
        self.map[id(self.band.induction_var)] = row
        for op in backward_slice(self.band.body, [load.results[0]]):
            self.clone(op)
        value = self.v(load.results[0])
        self.map = saved
        return value

    def copy(self, ptr: int, c: int, row: Value) -> None:
        load, _ = self.reads[ptr]
        loop = next(lp for lp in self.loops if load.parent is lp.body)
        offsets, mask = self.read_at(load, loop, c, row)
        self.b.create("tile.async_copy", self.buffers[(ptr, c)], self.v(load.ptr), offsets, *([mask] if mask else []))

    def build_band(self) -> list[list[Value]]:
        """The band loop in the cluster form; returns each chunk's column sums after it."""
        band, b = self.band, self.b
        rows = [p for p, (_, moves) in self.reads.items() if moves]
        cached = list(self.reads)
        need = sum(self.slice_bytes(self.reads[p][0]) for p in cached)
        if need > self.smem_budget or not self.weights:
            cached = rows
            need = sum(self.slice_bytes(self.reads[p][0]) for p in rows)
            if need > self.smem_budget:
                raise DeclinedError(
                    f"its {self.K} chunks of {len(rows)} row inputs take {need} bytes of shared memory a CTA, "
                    f"more than {self.smem_budget}"
                )
        for p in cached:
            load = self.reads[p][0]
            t = load.result.type
            assert isinstance(t, TileType) and isinstance(t.dtype, DType)
            name = f"{load.ptr.name_hint or 'x'}_slice"
            for c in range(self.K):
                buf_type = SharedBufferType((self.C, self.CH), t.dtype, self.S)
                self.buffers[(p, c)] = b.op("tile.smem_alloc", type=buf_type, name_hint=name)
        lower, upper = self.v(band.lower), self.v(band.upper)
        weights = [p for p in cached if p not in rows]
        for p in weights:
            for c in range(self.K):
                self.copy(p, c, lower)
        if weights:
            b.create("tile.async_commit")
        for c in range(self.K):
            for p in rows:
                self.copy(p, c, lower)
            b.create("tile.async_commit")

        s = len(band.iter_args)
        inits = [self.v(v) for _ in range(self.K) for v in band.inits]
        # a row's own values read from memory (a norm's saved statistics) come one row ahead:
        # the band's first row's before the loop, each step the next row's (masked past the band)
        scalars = [op for op in band.body.ops if isinstance(op, LoadOp) and depends_on(op.offsets, band.induction_var)]
        ahead = [self.row_value(op, lower) for op in scalars]
        body = Block()
        iv = body.add_arg(i32, band.induction_var.name_hint)
        accs = [
            [body.add_arg(v.type, f"{a.name_hint or 'acc'}_{c}") for a, v in zip(band.iter_args, inits)]
            for c in range(self.K)
        ]
        carried_ahead = [
            body.add_arg(v.type, f"{op.result.name_hint or 'load'}_ahead") for op, v in zip(scalars, ahead)
        ]
        outer, self.b = self.b, Builder.at_end(body)
        self.map[id(band.induction_var)] = iv
        self.map[id(band.step)] = step = outer.constant(1, i32, name_hint="one_row")
        after: list[Value] = []
        reading = [lp for lp in self.loops if any(isinstance(op, LoadOp) and id(op.ptr) in rows for op in lp.body.ops)]
        first, last = reading[0], reading[-1]
        nexts: list[list[Value]] = [[] for _ in range(self.K)]
        for op in band.body.ops:
            if isinstance(op, YieldOp):
                continue
            if op in scalars:
                self.map[id(op.results[0])] = carried_ahead[scalars.index(op)]
                next_row = self.b.op("tile.add", iv, step, type=i32, name_hint="next_row")
                after.append(self.row_value(op, next_row))
                continue
            if not isinstance(op, ForOp):
                self.clone(op)
                continue
            folds = self.folds(op) if op.results and op is not self.columns else []
            carried = [self.v(v) for v in op.inits]
            for c in range(self.K):
                if op is self.columns:
                    carried = [accs[c][j] for j in self.which]
                carried = self.clone_chunk(op, c, carried, self.K - 1 - c if op is first else None)
                if op is self.columns:
                    nexts[c] = [carried[self.which.index(j)] for j in range(s)]
                if op is last:  # every thread has read chunk c: the next row's, into its buffers
                    self.b.create("tile.cta_barrier")
                    following = self.b.op("tile.add", iv, step, type=i32, name_hint="next_row")
                    for p in rows:
                        self.copy(p, c, following)
                    self.b.create("tile.async_commit")
            if folds:
                totals = self.combine_across_cluster(op, carried, folds)
                for r, total in zip(op.results, totals):
                    self.map[id(r)] = total
        self.b.create("tile.yield", *[v for c in range(self.K) for v in nexts[c]], *after)
        self.b = outer
        inits += ahead
        loop = ForOp([lower, upper, step, *inits], [v.type for v in inits], dict(band.attributes), [body], band.loc)
        outer.insert(loop)
        for c in range(self.K):
            for j, r in enumerate(band.results):
                loop.results[c * s + j].name_hint = f"{r.name_hint or 'column'}{f'_chunk{c}' if c else ''}"
        for op, r in zip(scalars, loop.results[self.K * s :]):
            r.name_hint = f"{op.results[0].name_hint or 'load'}_past_band"  # (the row after it: unused)
        return [list(loop.results[c * s : (c + 1) * s]) for c in range(self.K)]


def band_cluster(kernel: Kernel, ctas: int, chunk: int, warps: int, **options: Any) -> str | None:
    """Rewrites `kernel` into the cluster form (`options`: `BandClusterRewriter`'s exchange,
    bands, smem_budget, weights); returns why not when it does not."""
    try:  # the kernel's body is replaced only once the whole new one is built
        BandClusterRewriter(kernel, ctas, chunk, warps, **options).run()
    except DeclinedError as e:
        return str(e)
    return None


@register
class BandCluster(Pass):
    """A banded kernel's rows split across thread-block clusters, each CTA's slice of the row in
    a ring of shared-memory buffers refilled with the next row's (Gluon)."""

    name = "band-cluster"
    ctas: int = 2
    chunk: int = 2048
    warps: int = 8
    exchange: Literal["barriers", "push"] = "push"  # tile.cluster_gather's
    bands: int = 0  # the clusters (0: as many as run at once, one CTA an SM)
    smem_budget: int = DEFAULT.smem_per_block
    weights: bool = True  # the weights' chunks cached too, where they fit
    unchanged = "its rows are not split across clusters"

    def __post_init__(self) -> None:
        if self.ctas not in (2, 4, 8, 16) or self.warps not in (1, 2, 4, 8, 16, 32):
            raise ValueError("ctas must be 2, 4, 8 or 16, warps a power of two to 32")
        if self.chunk < 32 or self.chunk & (self.chunk - 1):
            raise ValueError(f"chunk must be a power of two of 32 or more, got {self.chunk}")

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            options = {k: getattr(self, k) for k in ("exchange", "bands", "smem_budget", "weights")}
            why = band_cluster(kernel, self.ctas, self.chunk, self.warps, **options)
            if why is not None:
                self.remark(kernel, why)
