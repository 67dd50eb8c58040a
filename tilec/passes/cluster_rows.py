"""cluster-rows: each row split across a thread-block cluster, each CTA's slice in shared memory.

A row too long for one CTA to read once (past the 227 KiB of its shared memory, or read twice from
L2 by the one-CTA loop) is split across the C CTAs of a cluster (`num_ctas = C`): CTA r holds
columns [r * N/C, (r + 1) * N/C) of the cluster's one row. The pass turns the frontend's logical
long-row kernel (a first loop over the row's chunks accumulating its statistics, later loops
reading it again to write the output) into that form, planned:

- a program is a cluster and handles one row (XBLOCK = 1); every tile carries the CTA as its first
  dimension (`[XBLOCK, RBLOCK]` becomes `[C, CH]` with a layout whose `cga_layout` puts row r in
  CTA r, a column tile `[1, RBLOCK]` becomes `[C, CH]` too: each CTA its own columns);
- the loops are unrolled over the K chunks of a CTA's slice (CH = N / (C * K) columns each; a
  cluster-split shared buffer can be neither indexed nor sliced in Gluon, so each chunk has a
  buffer of its own);
- every row input the first loop reads is copied into shared memory up front, all K chunks in
  flight at once (`tile.async_copy`, a group a chunk), and read from there by every loop: a chunk
  as its group lands in the first, again in the later ones. With option `row_cache` (bytes of
  the row, all its row inputs), only the first chunks of each slice that many bytes hold are
  copied; every loop reads the rest from global memory (the later loops from L2), and each CTA's
  shared memory shrinks so more CTAs share an SM;
- after the first loop, each CTA's statistics (the loop's carried values) are gathered from the
  whole cluster (`tile.cluster_gather`) and combined in CTA order with the loop's own combine (the
  op that folds a chunk's part into the carried value: `tile.add`, `tile.softmax_combine`,
  `tile.welford_combine`, ...), so every CTA has the row's statistics, bit for bit the same.

It acts on a logical kernel with constexprs XBLOCK and RBLOCK, a grid of `cdiv(M, XBLOCK)`, and
top-level loops from 0 to the row length N (a constant) in steps of RBLOCK, the first of which
alone carries values, each carried value folded by one combine op and used by nothing else in the
loop; N must split into C * K chunks of a power of two (at least a warp's 32 threads wide). Else
it leaves the kernel with a remark. It replaces `plan` (it assigns every layout); run
`canonicalize`, `cse` and `dce` after it. Gluon only (clusters). Option `exchange` is the
gather's (`barriers`, the default, or `push`: tile.cluster_gather says how each works).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from tilec.ir.builder import Builder
from tilec.ir.core import Block, Kernel, Module, Operation, Value
from tilec.ir.dtypes import DType, i32
from tilec.ir.expr import CallExpr, Sym
from tilec.ir.layouts import BlockedLayout, SliceLayout, SwizzledSharedLayout
from tilec.ir.ops import (
    ArangeOp,
    BroadcastOp,
    ConstantOp,
    ExpandDimsOp,
    ForOp,
    LoadOp,
    YieldOp,
)
from tilec.ir.ops.compute import ArgReduceOp, CombineOp, ElementwiseOp, ReductionOp
from tilec.ir.types import SharedBufferType, TileType
from tilec.passes.base import Pass, register
from tilec.passes.rewrite import backward_slice, const_value

X, R = Sym("XBLOCK"), Sym("RBLOCK")
# the elementwise ops that fold a chunk's part into a carried value (either operand order)
FOLDS = ("tile.add", "tile.maximum", "tile.minimum", "tile.mul")


class DeclinedError(Exception):
    """Why the pass leaves a kernel as it is."""


class ClusterRowsRewriter:
    def __init__(
        self, kernel: Kernel, ctas: int, chunks: int, warps: int, exchange: str = "barriers", row_cache: int = 0
    ) -> None:
        self.k = kernel
        self.C, self.K, self.W = ctas, chunks, warps
        self.exchange = exchange
        self.loops = self.row_loops()
        n = self.N
        if n % (ctas * chunks):
            raise DeclinedError(f"its row of {n} does not split into {ctas} CTAs of {chunks} chunks")
        self.CH = n // (ctas * chunks)
        if self.CH & (self.CH - 1) or self.CH < 32:
            raise DeclinedError(f"a chunk of {self.CH} columns is not a power of two of 32 or more")
        # the chunks of each CTA's slice copied into shared memory: all, or as many as `row_cache`
        # bytes of the row (all its row inputs) hold, the first ones; the rest read from global
        # memory by every loop (the later loops' reads from L2)
        self.cached = chunks
        if row_cache:
            inputs = {id(ld.ptr): ld.result.type for ld in self.row_loads(self.loops[0])}
            row_bytes = sum(
                t.dtype.bytes for t in inputs.values() if isinstance(t, TileType) and isinstance(t.dtype, DType)
            )
            self.cached = min(chunks, row_cache // max(1, row_bytes * self.CH * ctas))
            if self.cached < 1:
                raise DeclinedError(f"a row cache of {row_cache} bytes holds no chunk of {self.CH} columns a CTA")
        spt = max(1, min(8, self.CH // (32 * warps)))
        cga = tuple((1 << i, 0) for i in range(ctas.bit_length() - 1))
        self.B = BlockedLayout((1, spt), (1, 32), (1, warps), (1, 0), cga)
        self.S = SwizzledSharedLayout(1, 1, 1, (1, 0), cga)
        self.map: dict[int, Value] = {}
        self.buffers: dict[tuple[int, int], Value] = {}  # (pointer id, chunk) -> buffer
        self.copied: dict[tuple[int, int], LoadOp] = {}  # (pointer id, chunk) -> the first loop's load
        # (pointer id, chunk) -> the offsets and mask that chunk's copy read (cloned)
        self.access: dict[tuple[int, int], tuple[Value, Value | None]] = {}

    # -- what the kernel must look like

    def row_loops(self) -> list[ForOp]:
        k = self.k
        if not {"XBLOCK", "RBLOCK"} <= set(k.constexprs) or any(
            isinstance(r.type, TileType) and r.type.layout is not None for op in k.walk() for r in op.results
        ):
            raise DeclinedError("it is not a logical kernel over XBLOCK x RBLOCK tiles")
        grid = k.launch.grid
        if len(grid) != 1 or not (isinstance(grid[0], CallExpr) and grid[0].fn == "cdiv" and grid[0].args[1] == X):
            raise DeclinedError("its grid is not cdiv(rows, XBLOCK)")
        loops = [op for op in k.body.ops if isinstance(op, ForOp)]
        if not loops:
            raise DeclinedError("it has no loop over its row")
        bounds = set()
        for loop in loops:
            lo, hi = const_value(loop.lower), const_value(loop.upper)
            step_op = loop.step.op if hasattr(loop.step, "op") else None
            if lo != 0 or not isinstance(hi, int) or not isinstance(step_op, ConstantOp) or step_op.attr("value") != R:
                raise DeclinedError("a loop does not run over the row from 0 in steps of RBLOCK")
            if any(isinstance(o, ForOp) for o in loop.body.walk()):
                raise DeclinedError("a loop over the row holds another loop")
            bounds.add(hi)
        if len(bounds) != 1:
            raise DeclinedError("its loops run over rows of different lengths")
        if any(loop.results for loop in loops[1:]):
            raise DeclinedError("a loop after the first carries values")
        self.N = int(bounds.pop())
        return loops

    # -- types

    def tile_type(self, t: TileType) -> TileType:
        ctas, chunk = self.C, self.CH
        shape = tuple(t.shape)
        if shape == (X, R) or shape == (1, R):
            return TileType((ctas, chunk), t.dtype, self.B)
        if shape == (X, 1):
            return TileType((ctas, 1), t.dtype, self.B)
        if shape == (X,):
            return TileType((ctas,), t.dtype, SliceLayout(1, self.B))
        if shape == (R,):
            return TileType((chunk,), t.dtype, SliceLayout(0, self.B))
        raise DeclinedError(f"a tile of shape {list(shape)} is neither a row block, a row's values nor a column range")

    def type_of(self, t: object) -> object:
        return self.tile_type(t) if isinstance(t, TileType) else t

    def v(self, value: Value) -> Value:
        return self.map.get(id(value), value)

    # -- the rewrite

    def run(self) -> None:
        old = list(self.k.body.ops)
        body = Block()  # the new ops, moved into the kernel's body once all are built
        self.b = Builder.at_end(body)
        self.cta_offsets: Value | None = None
        first = self.loops[0]
        for op in old:
            if op is first:
                self.copy_rows(op)
                self.unroll(op, first=True)
            elif isinstance(op, ForOp):
                self.unroll(op, first=False)
            else:
                self.clone(op)
        self.k.body.ops = []
        for op in body.ops:
            self.k.body.append(op)
        grid = self.k.launch.grid[0]
        assert isinstance(grid, CallExpr)
        self.k.launch.grid = (grid.args[0],)  # a cluster a row
        self.k.launch.num_warps = self.W
        self.k.launch.num_ctas = self.C
        self.k.constexprs.pop("XBLOCK")
        self.k.constexprs.pop("RBLOCK")
        self.k.attributes["cluster"] = self.C

    def offsets(self) -> Value:
        """Each CTA's first column in its row, [C, CH]: r * N / C."""
        if self.cta_offsets is None:
            b, ctas = self.b, self.C
            r = b.op("tile.arange", type=TileType((ctas,), i32, SliceLayout(1, self.B)), end=ctas, name_hint="cta")
            n = b.constant(self.N // ctas, i32)
            first = b.op("tile.mul", r, n, type=r.type, name_hint="cta_first")
            col = b.op("tile.expand_dims", first, type=TileType((ctas, 1), i32, self.B), axis=1)
            wide = TileType((ctas, self.CH), i32, self.B)
            self.cta_offsets = b.op("tile.broadcast", col, type=wide, name_hint="cta_cols")
        return self.cta_offsets

    def clone(self, op: Operation) -> list[Value]:
        b = self.b
        if isinstance(op, ConstantOp) and op.attr("value") in (X, R):
            value = b.constant(1 if op.attr("value") == X else self.CH, op.result.type)  # type: ignore[arg-type]
            self.map[id(op.result)] = value
            return [value]
        if isinstance(op, ArangeOp) and op.attr("end") == X:  # every CTA holds the cluster's one row
            t = self.tile_type(op.result.type)  # type: ignore[arg-type]
            value = b.op("tile.full", type=t, value=0, name_hint=op.result.name_hint)
            self.map[id(op.result)] = value
            return [value]
        if isinstance(op, ArangeOp) and op.attr("end") == R:
            t = self.tile_type(op.result.type)  # type: ignore[arg-type]
            value = b.op("tile.arange", type=t, end=self.CH, name_hint=op.result.name_hint)
            self.map[id(op.result)] = value
            return [value]
        if isinstance(op, ExpandDimsOp) and op.result.type.shape == (1, R):  # type: ignore[attr-defined]
            # a column range becomes each CTA's columns
            src = self.v(op.src)
            row = b.op("tile.expand_dims", src, type=TileType((1, self.CH), i32, self.B), axis=0)
            wide = b.op("tile.broadcast", row, type=TileType((self.C, self.CH), i32, self.B))
            value = b.op("tile.add", wide, self.offsets(), type=wide.type, name_hint=op.result.name_hint)
            self.map[id(op.result)] = value
            return [value]
        if isinstance(op, BroadcastOp):
            src = self.v(op.src)
            t = self.tile_type(op.result.type)  # type: ignore[arg-type]
            if src.type == t:  # a column tile is already each CTA's
                self.map[id(op.result)] = src
                return [src]
        if isinstance(op, ReductionOp):
            src_type = op.src.type
            two_d = isinstance(src_type, TileType) and src_type.rank == 2
            if isinstance(op, ArgReduceOp) or op.attr("axis") != 1 or not two_d:
                # along a row block's rows the CTAs would have to reduce across each other; an
                # index within a CTA's chunk is not the row's
                raise DeclinedError(f"'{op.name}' reduces other than along the row, or gives an index")
        if op.regions:
            raise DeclinedError(f"'{op.name}' outside the row's loops has regions")
        new = type(op)(
            [self.v(o) for o in op.operands],
            [self.type_of(r.type) for r in op.results],  # type: ignore[misc]
            dict(op.attributes),
            [],
            op.loc,
        )
        for r, n in zip(op.results, new.results):
            n.name_hint = r.name_hint
            self.map[id(r)] = n
        b.insert(new)
        return list(new.results)

    # -- the row's copies into shared memory

    def row_loads(self, loop: ForOp) -> list[LoadOp]:
        return [
            op
            for op in loop.body.ops
            if isinstance(op, LoadOp) and isinstance(op.result.type, TileType) and op.result.type.shape == (X, R)
        ]

    def copy_rows(self, loop: ForOp) -> None:
        """Every chunk of every row input the first loop reads, on its way into shared memory at
        once: the index arithmetic each copy needs (cloned again in the loop: `cse` merges them),
        a copy a row input, a group a chunk."""
        loads = self.row_loads(loop)
        if not loads:
            raise DeclinedError("its first loop reads no row to keep in shared memory")
        for load in loads:
            if load.other is not None:
                raise DeclinedError("a row load gives masked-off elements a value (a copy makes them 0)")
        needed = set(backward_slice(loop.body, [v for ld in loads for v in (ld.offsets, ld.mask) if v is not None]))
        for i in range(self.cached):
            saved = dict(self.map)
            self.map[id(loop.body.args[0])] = self.b.constant(i * self.CH, i32, name_hint="chunk_first")
            for op in loop.body.ops:
                if op in needed:
                    self.clone(op)
            for load in loads:
                key = (id(load.ptr), i)
                if key not in self.buffers:
                    t = load.result.type
                    assert isinstance(t, TileType) and isinstance(t.dtype, DType)
                    buf = self.b.op(
                        "tile.smem_alloc", type=SharedBufferType((self.C, self.CH), t.dtype, self.S), name_hint="slice"
                    )
                    self.buffers[key] = buf
                    self.copied[key] = load
                    self.access[key] = (self.v(load.offsets), self.v(load.mask) if load.mask is not None else None)
                    ops = [self.buffers[key], self.v(load.ptr), self.v(load.offsets)]
                    if load.mask is not None:
                        ops.append(self.v(load.mask))
                    self.b.create("tile.async_copy", *ops)
            self.b.create("tile.async_commit")
            self.map = saved

    # -- the loops, unrolled over the slice's chunks

    def unroll(self, loop: ForOp, first: bool) -> None:
        carried = [self.v(v) for v in loop.inits]
        folds = self.folds(loop) if first else []
        for i in range(self.K):
            carried = self.clone_chunk(loop, i, carried, self.cached - 1 - i if first else None)
        if first and loop.results:
            totals = self.combine_across_cluster(loop, carried, folds)
            for r, t in zip(loop.results, totals):
                self.map[id(r)] = t

    def clone_chunk(self, loop: ForOp, i: int, carried: list[Value], pending: int | None) -> list[Value]:
        """Chunk i of `loop` cloned at the builder, its iteration arguments `carried`: each read of
        a chunk in a buffer (`same_access`) a shared-memory load, the first of them after waiting
        until `pending` copy groups are left (None: no wait). Returns what the chunk yields."""
        self.map[id(loop.body.args[0])] = self.b.constant(i * self.CH, i32, name_hint="chunk_first")
        for a, v in zip(loop.body.args[1:], carried):
            self.map[id(a)] = v
        waited = pending is None
        for op in loop.body.ops:
            if isinstance(op, YieldOp):
                carried = [self.v(v) for v in op.operands]
                continue
            key = (id(op.ptr), i) if isinstance(op, LoadOp) else None
            if isinstance(op, LoadOp) and key in self.buffers and self.same_access(op, key):
                if not waited:
                    self.b.create("tile.async_wait", pending=pending)
                    waited = True
                value = self.b.op(
                    "tile.smem_load",
                    self.buffers[key],
                    type=self.tile_type(op.result.type),  # type: ignore[arg-type]
                    name_hint=op.result.name_hint,
                )
                self.map[id(op.result)] = value
                continue
            self.clone(op)
        return carried

    def same_access(self, load: LoadOp, key: tuple[int, int]) -> bool:
        """Whether `load` (its operands cloned for this chunk) reads what the chunk's copy read."""
        if load is self.copied[key]:
            return True
        offsets, mask = self.access[key]
        if load.other is not None or (load.mask is None) != (mask is None):
            return False
        if not _same(self.v(load.offsets), offsets):
            return False
        return mask is None or (load.mask is not None and _same(self.v(load.mask), mask))

    # -- the statistics of the whole row

    def folds(self, loop: ForOp) -> list[tuple[Operation, list[int], list[Value]]]:
        """For each op folding a chunk's part into carried values: the op, the carried values'
        positions among the loop's results in its operand order, and its part operands."""
        (yield_op,) = [op for op in loop.body.ops if isinstance(op, YieldOp)]
        args: list[Value] = list(loop.body.args[1:])
        out: list[tuple[Operation, list[int], list[Value]]] = []
        seen: set[int] = set()
        for value in yield_op.operands:
            op = getattr(value, "op", None)
            if op is None or id(op) in seen:
                continue
            seen.add(id(op))
            if isinstance(op, CombineOp):
                half = len(op.operands) // 2
                accs, parts = list(op.operands[:half]), list(op.operands[half:])
            elif isinstance(op, ElementwiseOp) and op.name in FOLDS and len(op.operands) == 2:
                a, b = op.operands
                accs, parts = ([a], [b]) if a in args else ([b], [a])
            else:
                raise DeclinedError(f"a carried value is folded by '{op.name}', which is not a combine")
            if not all(a in args for a in accs) or any(p in args for p in parts):
                raise DeclinedError(f"'{op.name}' does not fold a part into the carried values")
            positions = [args.index(a) for a in accs]
            if [yield_op.operands[p] for p in positions] != list(op.results):
                raise DeclinedError(f"'{op.name}' results are not the carried values it folds")
            out.append((op, positions, parts))
        uses = [o for o in loop.body.walk() for v in o.operands if v in args]
        if len(uses) != sum(len(p) for _, p, _ in out):
            raise DeclinedError("a carried value is used by more than the op that folds it")
        return out

    def combine_across_cluster(
        self, loop: ForOp, carried: Sequence[Value], folds: list[tuple[Operation, list[int], list[Value]]]
    ) -> list[Value]:
        """Every CTA's carried values gathered, folded in CTA order with the loop's own folds."""
        ctas = self.C
        gathered: list[Value] = list(
            self.b.create(
                "tile.cluster_gather",
                *carried,
                result_types=[v.type for v in carried for _ in range(ctas)],
                exchange=self.exchange,
            ).results
        )
        totals: list[Value] = [gathered[k * ctas] for k in range(len(carried))]
        for j in range(1, ctas):
            for op, positions, _ in folds:
                accs = [totals[p] for p in positions]
                parts = [gathered[p * ctas + j] for p in positions]
                if isinstance(op, CombineOp):
                    operands = accs + parts
                else:
                    operands = [accs[0], parts[0]] if op.operands[0] in loop.body.args else [parts[0], accs[0]]
                new = self.b.create(type(op), *operands, result_types=[v.type for v in accs], **op.attributes)
                for p, r in zip(positions, new.results):
                    totals[p] = r
        return totals


def _same(a: Value, b: Value) -> bool:
    """Whether two values are computed alike (the same op on the same operands, recursively)."""
    if a is b:
        return True
    oa, ob = getattr(a, "op", None), getattr(b, "op", None)
    if oa is None or ob is None or oa.name != ob.name or oa.attributes != ob.attributes or a.type != b.type:
        return False
    if oa.regions or ob.regions or "reads" in oa.traits:
        return False
    return len(oa.operands) == len(ob.operands) and all(_same(x, y) for x, y in zip(oa.operands, ob.operands))


def cluster_rows(
    kernel: Kernel, ctas: int, chunks: int, warps: int, exchange: str = "barriers", row_cache: int = 0
) -> str | None:
    """Rewrites `kernel` into the cluster form; returns why not when it does not. `row_cache` > 0:
    at most that many bytes of the row cached (whole chunks of each CTA's slice, the first ones)."""
    try:  # the kernel's body is replaced only once the whole new one is built
        ClusterRowsRewriter(kernel, ctas, chunks, warps, exchange, row_cache).run()
    except DeclinedError as e:
        return str(e)
    return None


@register
class ClusterRows(Pass):
    name = "cluster-rows"
    ctas: int = 8
    chunks: int = 4
    warps: int = 4
    exchange: Literal["barriers", "push"] = "barriers"  # tile.cluster_gather's
    row_cache: int = 0  # > 0: at most this many bytes of the row cached, the rest of each slice read again
    unchanged = "its row is not split across a cluster"

    def __post_init__(self) -> None:  # (a pipeline's parser reports it as the pass's option error)
        if self.ctas not in (2, 4, 8, 16) or self.chunks < 1 or self.warps not in (1, 2, 4, 8, 16, 32):
            raise ValueError("ctas must be 2, 4, 8 or 16, chunks at least 1, warps a power of two to 32")
        if self.row_cache < 0:
            raise ValueError(f"row_cache must be 0 (the whole row) or more bytes, got {self.row_cache}")

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            why = cluster_rows(kernel, self.ctas, self.chunks, self.warps, self.exchange, self.row_cache)
            if why is not None:
                self.remark(kernel, why)
