"""`LogicalBuilder` builds a logical-form kernel op by op: the kernel prologue, reduction loops
with their accumulators, masks, loads and stores, and elementwise math with explicit broadcasts.

Values are `TV`s: an IR value plus the kernel dimensions it varies along (`dims`: "" for a
scalar, "x" for a per-row value, "r" for a per-column value, "xr" for both) and the scope it
lives in (the kernel's top level, or the reduction loop being built). In a reduction kernel a
value of dims "x" is a `[XBLOCK, 1]` tile, "r" is `[1, RBLOCK]`, "xr" is `[XBLOCK, RBLOCK]`; in a
pointwise kernel "x" is `[XBLOCK]`.

Pure ops are placed in the outermost scope their operands allow, so per-row math that only
depends on values computed before a loop is computed once before it, and identical pure ops
are built once (Inductor's LoopBodies are not CSE'd: a multi-output reduction repeats its whole
input chain in every output node).

Reduction loops are built as a detached block; a reduction adds loop-carried accumulators to it
as it is met, and closing the loop creates the `tile.for` (after everything the loop uses).

A **banded** kernel (Inductor's mix-order reduction: a norm's backward, its rows' dx and its
columns' sums over the rows in one kernel) gives each program a band of `RSPLIT` consecutive
rows: the row code above runs inside a loop over the band's row blocks (`XBLOCK` rows at a time),
and each column sum (`partial_accumulate`) is carried through that loop as a `[1, RBLOCK]` fp32
accumulator, stored after it to the program's row of a workspace (`ws_ptr`); the wrapper sums
the workspace's rows. The whole row is one tile (`RBLOCK` is bound to cover it), so each
reduction loop runs once and the column accumulators pass through it unchanged but for the add.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tilec.frontend.reasons import (
    NESTED_REDUCTION_USE,
    REDUCTION_OUTSIDE_LOOP,
    UnsupportedError,
    unsupported_reduction,
)
from tilec.ir.builder import Builder
from tilec.ir.core import Block, Kernel, Launch, Operation, Value, use_counts
from tilec.ir.dtypes import DType, Type, f32, i1, i8, i32
from tilec.ir.expr import CallExpr, IntExpr, Sym, next_pow2
from tilec.ir.ops import ForOp, YieldOp
from tilec.ir.ops.common import elem_dtype
from tilec.ir.types import PointerType, TileType

XBLOCK = Sym("XBLOCK")
RBLOCK = Sym("RBLOCK")
RSPLIT = Sym("RSPLIT")  # a banded kernel's rows per program
WORKSPACE = "ws_ptr"  # a banded kernel's column sums, one row per program and sum (Inductor's name)
XNUMEL = "xnumel"  # the scalar parameter holding a symbolic x size
RNUMEL = "rnumel"  # the scalar parameter holding a symbolic reduction length

# Initial accumulators and the op combining two partial results, per reduction kind.
_REDUCE = {
    "sum": ("sum", "tile.add"),
    "prod": ("prod", "tile.mul"),
    "max": ("max", "tile.maximum"),
    "min": ("min", "tile.minimum"),
    "any": ("max", "tile.maximum"),
}


def _identity(kind: str, dtype: DType) -> int | float:
    if kind == "sum":
        return 0.0 if dtype.is_float else 0
    if kind == "prod":
        return 1.0 if dtype.is_float else 1
    if dtype.is_float:
        return float("-inf") if kind == "max" else float("inf")
    if dtype.is_bool:
        return 0 if kind == "max" else 1
    bits = dtype.bits
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if dtype.is_signed else (0, 2**bits - 1)
    return lo if kind == "max" else hi


def _const_name(value: Any, dtype: DType) -> str:
    if dtype.is_bool:
        return "true" if value else "false"
    if isinstance(value, int):
        return f"c{value}" if value >= 0 else f"cm{-value}"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "ninf"
    return "cst"


def _accumulation_dtype(rtype: str, value: DType, result: DType) -> DType:
    """What a reduction accumulates in: sums and products of 16-bit floats in f32 (as Triton's
    accumulator types), `any` in i8, max and min exactly; the result is cast afterwards."""
    if rtype == "any":
        return i8
    if rtype in ("sum", "prod"):
        if value.is_float and value.bits < 32:
            return f32 if result.bits <= 32 else result
        return value if value.bits >= result.bits or value.is_float != result.is_float else result
    return value


@dataclass(eq=False)
class TV:
    """A value of the kernel being built: an IR value, the dimensions it spans, its scope."""

    value: Value
    dims: str
    loop: Loop | None = None

    @property
    def dtype(self) -> DType:
        dt = elem_dtype(self.value.type)
        assert dt is not None
        return dt


class PendingReduction:
    """One output of a reduction whose loop is still open; it becomes a `[XBLOCK, 1]` value when
    the loop closes."""

    def __init__(self, loop: Loop, result: int, kind: str, post: DType | None) -> None:
        self.loop = loop
        self.result = result  # index among the loop's results
        self.kind = kind
        self.post = post  # cast the final value to this dtype (argmax's index)
        self.final: TV | None = None


@dataclass(eq=False)
class Loop:
    """A reduction loop being built."""

    body: Block
    builder: Builder
    offset: TV
    cache: dict[Any, TV] = field(default_factory=dict)
    loads: dict[Any, TV] = field(default_factory=dict)
    inits: list[Value] = field(default_factory=list)
    nexts: list[Value] = field(default_factory=list)
    reductions: dict[Any, tuple[PendingReduction, ...]] = field(default_factory=dict)
    pending_stores: list[tuple[Callable[[TV], Any], PendingReduction]] = field(default_factory=list)
    op: ForOp | None = None
    columns: list[tuple[int, int]] = field(default_factory=list)  # (band column sum, index among the results)


@dataclass(eq=False)
class Band:
    """A banded kernel's loop over its program's rows, being built: its body, and each column
    sum's carried value as the body has it so far (its block argument, then the result of each
    reduction loop that added to it)."""

    body: Block
    offset: Value  # the row block's first row (the loop's induction variable)
    inits: list[Value] = field(default_factory=list)
    current: list[Value] = field(default_factory=list)


class LogicalBuilder:
    def __init__(
        self,
        name: str,
        numel: int | None,
        rnumel: int | None,
        reduction: bool,
        index_dtype: DType,
        banded: bool = False,
    ) -> None:
        """`numel` None: the x size is symbolic, a scalar parameter `xnumel` the launch passes;
        `rnumel` None likewise (the parameter `rnumel`). `banded`: a mix-order reduction's kernel
        (a known row length, which one `RBLOCK` covers)."""
        constexprs: dict[str, int | None] = {"XBLOCK": None}
        if reduction:
            constexprs["RBLOCK"] = None
        xsize: IntExpr = Sym(XNUMEL) if numel is None else numel
        grid: tuple[IntExpr, ...] = (CallExpr("cdiv", (xsize, XBLOCK)),)
        if banded:
            assert reduction and rnumel is not None
            constexprs = {"XBLOCK": None, "RBLOCK": next_pow2(rnumel), "RSPLIT": None}
            grid = (CallExpr("cdiv", (xsize, RSPLIT)),)
        self.kernel = Kernel(name, [], constexprs=constexprs, launch=Launch(grid=grid))
        self.outer = Builder.at_end(self.kernel.body)  # the kernel's top level (a banded kernel's band loop is in it)
        self.band: Band | None = None
        self.top = self.outer
        self.top_cache: dict[Any, TV] = {}
        self.top_loads: dict[Any, TV] = {}
        self.numel, self.rnumel, self.reduction = numel, rnumel, reduction
        self.index_dtype = index_dtype
        self.loop: Loop | None = None
        self.conditions: list[TV] = []  # masks of the enclosing `masked` sub-blocks
        self.params: dict[str, Value] = {}
        self.size_params: dict[str, TV] = {}  # scalar parameters (sizes, values passed by value), by name
        self.protected: set[int] = set()  # prologue values kept even when unused
        self._prologue()

    # -- types and shapes

    def shape(self, dims: str) -> tuple[IntExpr, ...] | None:
        if not dims:
            return None
        if not self.reduction:
            return (XBLOCK,)
        return (XBLOCK if "x" in dims else 1, RBLOCK if "r" in dims else 1)

    def type_of(self, dims: str, dtype: DType) -> Type:
        shape = self.shape(dims)
        return dtype if shape is None else TileType(shape, dtype)

    # -- emitting ops

    def _scope(self, operands: Sequence[TV], pure: bool, dims: str) -> Loop | None:
        loops = {id(t.loop): t.loop for t in operands if t.loop is not None}
        if len(loops) > 1 or (loops and self.loop is None) or (loops and id(self.loop) not in loops):
            raise AssertionError("a value of a closed reduction loop was used outside it")
        if not pure or "r" in dims:
            # tiles spanning r live in the loop that uses them (hoisting them would keep whole
            # [XBLOCK, RBLOCK] tiles live across the loop)
            return self.loop
        return next(iter(loops.values())) if loops else None

    def emit(
        self,
        name: str,
        operands: Sequence[TV],
        dims: str,
        dtype: DType,
        hint: str | None = None,
        pure: bool = True,
        result_type: Type | None = None,
        **attrs: Any,
    ) -> TV:
        """One single-result op. Pure ops are built once per scope and placed in the outermost
        scope their operands allow."""
        scope = self._scope(operands, pure, dims)
        rtype = result_type if result_type is not None else self.type_of(dims, dtype)
        key = (name, tuple(id(t.value) for t in operands), tuple(sorted((k, repr(v)) for k, v in attrs.items())), rtype)
        cache = self.top_cache if scope is None else scope.cache
        if pure and key in cache:
            return cache[key]
        builder = self.top if scope is None else scope.builder
        value = builder.op(name, *(t.value for t in operands), type=rtype, name_hint=hint, **attrs)
        tv = TV(value, dims, scope)
        if pure:
            cache[key] = tv
        return tv

    def const(self, value: int | float | bool | IntExpr, dtype: DType, hint: str | None = None) -> TV:
        if dtype.is_bool:
            value = int(bool(value))
        elif dtype.is_float and not isinstance(value, float):
            value = float(value)  # type: ignore[arg-type]
        key = ("const", repr(value), dtype)
        if key in self.top_cache:
            return self.top_cache[key]
        tv = TV(self.top.op("tile.constant", type=dtype, value=value, name_hint=hint or _const_name(value, dtype)), "")
        self.top_cache[key] = tv
        return tv

    def size_param(self, name: str) -> TV:
        """The scalar kernel parameter `name` (index dtype) holding a size the launch passes."""
        return self.scalar_param(name, self.index_dtype)

    def scalar_param(self, name: str, dtype: DType) -> TV:
        """The scalar kernel parameter `name` of `dtype`: a size, or a value the launch passes
        (`x.item()`)."""
        if name not in self.size_params:
            self.size_params[name] = TV(self.kernel.add_param(name, dtype), "")
        return self.size_params[name]

    def cast(self, t: TV, dtype: DType, hint: str = "cast") -> TV:
        if t.dtype == dtype:
            return t
        return self.emit("tile.cast", [t], t.dims, dtype, hint)

    def to_dims(self, t: TV, dims: str) -> TV:
        """`t` broadcast to exactly `dims` (scalars become tiles)."""
        if t.dims == dims:
            return t
        assert set(t.dims) <= set(dims), (t.dims, dims)
        return self.emit("tile.broadcast", [t], dims, t.dtype, "bcast")

    def elementwise(
        self, name: str, operands: Sequence[TV], dtype: DType | None = None, hint: str | None = None, **attrs: Any
    ) -> TV:
        """An elementwise op; tile operands are broadcast to their common dims, scalars splat."""
        dims = "".join(d for d in "xr" if any(d in t.dims for t in operands))
        ops = [t if not t.dims else self.to_dims(t, dims) for t in operands]
        out = dtype if dtype is not None else ops[-1].dtype
        return self.emit(name, ops, dims, out, hint or name.split(".")[1], **attrs)

    def logical_and(self, a: TV | None, b: TV | None) -> TV | None:
        if a is None or b is None:
            return a if b is None else b
        return self.elementwise("tile.and", [a, b], hint="mask")

    # -- the prologue: program id, x index and mask, reduction sizes

    def _prologue(self) -> None:
        idt, top = self.index_dtype, self.top

        def range_of(end: IntExpr, hint: str) -> Value:
            r = top.op("tile.arange", type=TileType((end,), i32), end=end, name_hint=hint)
            return r if idt == i32 else top.op("tile.cast", r, type=TileType((end,), idt), name_hint=hint + "64")

        pid = top.op("tile.program_id", type=i32, name_hint="pid")
        if idt != i32:
            pid = top.op("tile.cast", pid, type=idt, name_hint="pid64")
        # the sizes get their own constants (not shared with equal coefficients): clearer loops
        if self.numel is None:
            xnumel = self.size_param(XNUMEL)
        else:
            xnumel = TV(top.op("tile.constant", type=idt, value=self.numel, name_hint="xnumel"), "")
        xblock = self.const(XBLOCK, idt, "xblock")
        if "RSPLIT" in self.kernel.constexprs:
            # the band: rows [pid * RSPLIT, min(pid * RSPLIT + RSPLIT, xnumel)), XBLOCK at a time
            rsplit = top.op("tile.constant", type=idt, value=RSPLIT, name_hint="rsplit")
            start = top.op("tile.mul", pid, rsplit, type=idt, name_hint="band_start")
            after = top.op("tile.add", start, rsplit, type=idt, name_hint="band_after")
            end = top.op("tile.minimum", after, xnumel.value, type=idt, name_hint="band_end")
            body = Block([idt], ["xoffset"])
            self.band = Band(body, body.args[0])
            self.band_bounds = (start, end, xblock.value)
            self.protected.update(id(op.result) for op in top.block.ops)
            top = self.top = Builder.at_end(body)
            self.top_cache = {}
            xoffset = self.band.offset
            xnumel = TV(end, "")  # rows past the band's end are masked off (they are the next band's)
        else:
            xoffset = top.op("tile.mul", pid, xblock.value, type=idt, name_hint="xoffset")
        xrange = range_of(XBLOCK, "xrange")
        flat = top.op("tile.add", xrange, xoffset, type=xrange.type, name_hint="xrow" if self.reduction else "xindex")
        if self.reduction:
            flat = top.op("tile.expand_dims", flat, type=TileType((XBLOCK, 1), idt), axis=1, name_hint="xindex")
        self.xindex = TV(flat, "x")
        self.xmask = self.emit("tile.cmp", [self.xindex, xnumel], "x", i1, "xmask", predicate="lt")
        self.protected.update(id(op.result) for op in top.block.ops)
        if self.reduction:
            if self.rnumel is None:
                self.rnumel_tv = self.size_param(RNUMEL)
            else:
                self.rnumel_tv = TV(top.op("tile.constant", type=idt, value=self.rnumel, name_hint="rnumel"), "")
            self.c0 = self.const(0, idt, "c0")
            self.rblock = self.const(RBLOCK, idt, "rblock")
            # one arange for every loop: rindex = roffset + arange(RBLOCK)
            self.rrange = TV(range_of(RBLOCK, "rrange"), "")
            self.protected.update(id(t.value) for t in (self.rnumel_tv, self.c0, self.rblock, self.rrange))

    def index_var(self, name: str, prefix: str, divisor: TV | None, length: TV | None) -> TV:
        """A range-tree variable: (root // divisor) % length of xindex or rindex; `divisor` None
        where it is 1, `length` None where the variable runs over the whole root (no remainder).
        Both are scalars of the index dtype: constants, or size parameters."""
        if prefix == "x":
            root = self.xindex
        else:
            if self.loop is None:
                raise AssertionError("reduction index used outside a reduction loop")
            root = self.rindex
        key = ("var", name)
        cache = self.top_cache if root.loop is None else root.loop.cache
        if key in cache:
            return cache[key]
        v = root
        if divisor is not None:
            v = self.elementwise("tile.div", [v, divisor], hint=name)
        if length is not None:
            v = self.elementwise("tile.rem", [v, length], hint=name)
        cache[key] = v
        return v

    # -- masks

    def base_mask(self, dims: str) -> TV | None:
        if not dims:
            return None
        if dims == "x":
            return self.xmask
        assert self.loop is not None
        if dims == "r":
            return self.rmask
        return self.emit("tile.and", [self.to_dims(self.xmask, "xr"), self.to_dims(self.rmask, "xr")], "xr", i1, "mask")

    # -- reduction loops

    def open_loop(self) -> None:
        assert self.reduction and self.loop is None
        idt = self.index_dtype
        body = Block([idt], ["roffset"])
        builder = Builder.at_end(body)
        self.loop = loop = Loop(body, builder, TV(body.args[0], ""))
        loop.offset.loop = loop
        rcol = builder.op(
            "tile.add", self.rrange.value, loop.offset.value, type=self.rrange.value.type, name_hint="rcol"
        )
        rindex = builder.op("tile.expand_dims", rcol, type=TileType((1, RBLOCK), idt), axis=0, name_hint="rindex")
        self.rindex = TV(rindex, "r", loop)
        self.rmask = self.emit("tile.cmp", [self.rindex, self.rnumel_tv], "r", i1, "rmask", predicate="lt")

    def close_loop(self) -> None:
        loop = self.loop
        assert loop is not None
        loop.builder.insert(YieldOp(list(loop.nexts)))
        op = ForOp(
            [self.c0.value, self.rnumel_tv.value, self.rblock.value, *loop.inits],
            [v.type for v in loop.inits],
            {},
            [loop.body],
        )
        for r, a in zip(op.results, loop.body.args[1:]):
            r.name_hint = (a.name_hint or "acc").replace("acc_", "", 1)
        self.top.insert(op)
        loop.op = op
        self.loop = None
        if self.band is not None:
            for column, result in loop.columns:
                self.band.current[column] = op.results[result]
        for store, pending in loop.pending_stores:
            store(self.resolve(pending))

    def _accumulator(self, loop: Loop, kind: str, dtype: DType, hint: str) -> Value:
        t = TileType((XBLOCK,), dtype)
        value = 0 if kind == "zero" else _identity(kind, dtype)
        init = self.top.op(
            "tile.full", type=t, value=float(value) if dtype.is_float else value, name_hint=hint + "_init"
        )
        loop.inits.append(init)
        return loop.body.add_arg(t, "acc_" + hint)

    def reduce(self, rtype: str, value: TV, dtype: DType) -> tuple[PendingReduction, ...]:
        """Reduces a value of the open loop along r: per chunk, then combined with the loop-carried
        accumulator. Identical reductions are built once."""
        loop = self.loop
        if loop is None:
            raise UnsupportedError(REDUCTION_OUTSIDE_LOOP)
        key = (rtype, id(value.value), dtype)
        if key in loop.reductions:
            return loop.reductions[key]
        mask = self.base_mask("xr")
        assert mask is not None
        red = TileType((XBLOCK,), dtype)
        lb = loop.builder
        first = len(loop.inits)
        outs: tuple[PendingReduction, ...]
        if rtype in _REDUCE:
            kind, combine = _REDUCE[rtype]
            work = _accumulation_dtype(rtype, value.dtype, dtype)
            v = self.to_dims(self.cast(value, work), "xr")
            red = TileType((XBLOCK,), work)
            acc = self._accumulator(loop, "zero" if rtype == "any" else kind, work, rtype)
            part = lb.op("tile.reduce", v.value, mask.value, type=red, kind=kind, axis=1, name_hint=rtype + "_part")
            loop.nexts.append(lb.op(combine, acc, part, type=red, name_hint="acc_" + rtype + "_next"))
            outs = (PendingReduction(loop, first, rtype, dtype if dtype != work else None),)
        elif rtype in ("argmax", "argmin"):
            kind = rtype[3:]
            v = self.to_dims(value, "xr")
            vt, it = TileType((XBLOCK,), v.dtype), TileType((XBLOCK,), self.index_dtype)
            acc_v = self._accumulator(loop, kind, v.dtype, rtype + "_value")
            acc_i = self._accumulator(loop, "zero", self.index_dtype, rtype)
            pv, pi = lb.create(
                "tile.argreduce",
                v.value,
                mask.value,
                result_types=[vt, it],
                names=[rtype + "_pvalue", rtype + "_pchunk"],
                kind=kind,
                axis=1,
            ).results
            gi = lb.op("tile.add", pi, loop.offset.value, type=it, name_hint=rtype + "_pindex")
            nv, ni = lb.create(
                "tile.arg_combine",
                acc_v,
                acc_i,
                pv,
                gi,
                result_types=[vt, it],
                names=["acc_" + rtype + "_value_next", "acc_" + rtype + "_next"],
                kind=kind,
            ).results
            loop.nexts += [nv, ni]
            outs = (PendingReduction(loop, first + 1, rtype, dtype),)
        elif rtype == "welford_reduce":
            v = self.to_dims(self.cast(value, f32), "xr")
            t = TileType((XBLOCK,), f32)
            names = ("mean", "m2", "weight")
            accs = [self._accumulator(loop, "zero", f32, "welford_" + n) for n in names]
            parts = lb.create(
                "tile.welford",
                v.value,
                mask.value,
                result_types=[t] * 3,
                names=[f"welford_{n}_part" for n in names],
                axis=1,
            ).results
            nexts = lb.create(
                "tile.welford_combine",
                *accs,
                *parts,
                result_types=[t] * 3,
                names=[f"acc_welford_{n}_next" for n in names],
            ).results
            loop.nexts += list(nexts)
            outs = tuple(PendingReduction(loop, first + i, "welford_" + n, None) for i, n in enumerate(names))
        elif rtype == "online_softmax_reduce":
            v = self.to_dims(self.cast(value, f32), "xr")
            t = TileType((XBLOCK,), f32)
            acc_m = self._accumulator(loop, "max", f32, "softmax_max")
            acc_s = self._accumulator(loop, "zero", f32, "softmax_sum")
            parts = lb.create(
                "tile.softmax_reduce",
                v.value,
                mask.value,
                result_types=[t, t],
                names=["softmax_max_part", "softmax_sum_part"],
                axis=1,
            ).results
            nexts = lb.create(
                "tile.softmax_combine",
                acc_m,
                acc_s,
                *parts,
                result_types=[t, t],
                names=["acc_softmax_max_next", "acc_softmax_sum_next"],
            ).results
            loop.nexts += list(nexts)
            outs = (
                PendingReduction(loop, first, "softmax_max", None),
                PendingReduction(loop, first + 1, "softmax_sum", None),
            )
        else:
            raise UnsupportedError(unsupported_reduction(rtype))
        loop.reductions[key] = outs
        return outs

    def column_sum(self, value: TV) -> None:
        """A banded kernel's `partial_accumulate(sum)`: `value` ([XBLOCK, RBLOCK] in the open
        reduction loop) summed over the block's rows in fp32 and added to a new column sum carried
        through the band loop (and through this reduction loop, which runs once)."""
        band, loop = self.band, self.loop
        assert band is not None
        if loop is None:
            raise UnsupportedError(REDUCTION_OUTSIDE_LOOP)
        mask = self.base_mask("xr")
        assert mask is not None
        v = self.to_dims(self.cast(value, f32), "xr")
        row = TileType((1, RBLOCK), f32)
        init = self.outer.op("tile.full", type=row, value=0.0, name_hint="column_init")
        band.inits.append(init)
        band.current.append(band.body.add_arg(row, "acc_column"))
        column = len(band.current) - 1
        loop.inits.append(band.current[column])
        acc = loop.body.add_arg(row, "acc_column_chunk")
        lb = loop.builder
        part = lb.op(
            "tile.reduce",
            v.value,
            mask.value,
            type=TileType((RBLOCK,), f32),
            kind="sum",
            axis=0,
            name_hint="column_part",
        )
        wide = lb.op("tile.expand_dims", part, type=row, axis=0, name_hint="column_part_row")
        loop.nexts.append(lb.op("tile.add", acc, wide, type=row, name_hint="acc_column_next"))
        loop.columns.append((column, len(loop.inits) - 1))

    def close_band(self) -> None:
        """Ends a banded kernel's band loop and stores each column sum to the workspace: sum `i`
        of program `p` at row `p + i * programs`, `rnumel` floats a row."""
        band = self.band
        assert band is not None and self.loop is None
        Builder.at_end(band.body).insert(YieldOp(list(band.current)))
        start, end, step = self.band_bounds
        op = ForOp([start, end, step, *band.inits], [v.type for v in band.inits], {}, [band.body])
        for r in op.results:
            r.name_hint = "column"
        self.outer.insert(op)
        self.top, self.band = self.outer, None
        if not op.results:
            return
        out, idt = self.outer, self.index_dtype
        ws = self.param(WORKSPACE, f32)
        pid = out.op("tile.program_id", type=i32, name_hint="pid")
        programs = out.op("tile.num_programs", type=i32, name_hint="programs")
        if idt != i32:
            pid = out.op("tile.cast", pid, type=idt, name_hint="pid64")
            programs = out.op("tile.cast", programs, type=idt, name_hint="programs64")
        cols = out.op("tile.arange", type=TileType((RBLOCK,), i32), end=RBLOCK, name_hint="column_index")
        if idt != i32:
            cols = out.op("tile.cast", cols, type=TileType((RBLOCK,), idt), name_hint="column_index64")
        cols = out.op("tile.expand_dims", cols, type=TileType((1, RBLOCK), idt), axis=0, name_hint="column")
        rnumel = out.op("tile.constant", type=idt, value=self.rnumel, name_hint="rnumel")
        mask = out.op("tile.cmp", cols, rnumel, type=TileType((1, RBLOCK), i1), predicate="lt", name_hint="column_mask")
        for i, total in enumerate(op.results):
            row = pid
            if i:
                k = out.op("tile.constant", type=idt, value=i, name_hint=f"c{i}")
                row = out.op("tile.add", pid, out.op("tile.mul", programs, k, type=idt), type=idt, name_hint="ws_row")
            base = out.op("tile.mul", row, rnumel, type=idt, name_hint="ws_base")
            offs = out.op("tile.add", cols, base, type=TileType((1, RBLOCK), idt), name_hint="ws_offsets")
            out.create("tile.store", ws, offs, total, mask)

    def resolve(self, pending: PendingReduction) -> TV:
        """The `[XBLOCK, 1]` value of a reduction output (its loop must be closed)."""
        if pending.final is not None:
            return pending.final
        op = pending.loop.op
        if op is None:
            raise UnsupportedError(NESTED_REDUCTION_USE)
        t = TV(op.results[pending.result], "")
        if pending.post is not None and pending.post != t.dtype:
            t = TV(
                self.top.op("tile.cast", t.value, type=TileType((XBLOCK,), pending.post), name_hint=pending.kind), ""
            )
        row = self.top.op(
            "tile.expand_dims", t.value, type=TileType((XBLOCK, 1), t.dtype), axis=1, name_hint=pending.kind + "_row"
        )
        pending.final = TV(row, "x")
        return pending.final

    # -- memory

    def param(self, name: str, dtype: DType) -> Value:
        p = self.params.get(name)
        if p is None:
            p = self.kernel.add_param(name, PointerType(dtype))
            self.params[name] = p
        return p

    def _condition(self, dims: str) -> tuple[str, TV | None]:
        """The dims and mask of an access spanning `dims` inside the current `masked` blocks."""
        cond: TV | None = None
        for c in self.conditions:
            cond = self.logical_and(cond, c)
        if cond is not None:
            dims = "".join(d for d in "xr" if d in dims or d in cond.dims)
        return dims, self.logical_and(self.base_mask(dims), cond)

    def load(self, param: str, dtype: DType, offsets: TV, read_only: bool = False) -> TV:
        """A load of `param[offsets]`, masked as the access's dims and the enclosing `masked`
        blocks ask. A load of a buffer the kernel does not write (`read_only`) whose offsets and
        mask do not vary along r is placed before the reduction loop, as stock codegen hoists it:
        a per-row value (a gather's index, a saved statistic) is read once per row."""
        dims, mask = self._condition(offsets.dims)
        offsets = self.to_dims(offsets, dims) if dims else offsets
        ptr = TV(self.param(param, dtype), "")
        operands = [ptr, offsets] + ([mask] if mask is not None else [])
        hoist = read_only and "r" not in dims and all(t.loop is None for t in operands)
        cache = self.top_loads if self.loop is None or hoist else self.loop.loads
        key = (param, tuple(id(t.value) for t in operands))
        if key in cache:
            return cache[key]
        if hoist and self.loop is not None:
            value = self.top.op(
                "tile.load", *(t.value for t in operands), type=self.type_of(dims, dtype), name_hint="load"
            )
            tv = TV(value, dims, None)
        else:
            tv = self.emit("tile.load", operands, dims, dtype, "load", pure=False)
        cache[key] = tv
        return tv

    def check(self, ok: TV, message: str) -> None:
        """A `tile.assert` that `ok` holds wherever the access it guards is not masked off,
        placed in the outermost scope `ok` allows (a per-row index is checked once per row,
        not once per chunk of the row)."""
        _, mask = self._condition(ok.dims)
        if mask is not None:
            ok = self.elementwise("tile.or", [ok, self.elementwise("tile.not", [mask], hint="not")], hint="ok")
        builder = self.top if ok.loop is None else ok.loop.builder
        builder.create("tile.assert", ok.value, message=message)

    def store(self, param: str, dtype: DType, offsets: TV, value: TV, atomic: bool = False) -> Operation:
        """A store of `value` to `param[offsets]` (an atomic add with `atomic`)."""
        dims = "".join(d for d in "xr" if d in offsets.dims or d in value.dims)
        offsets = self.to_dims(offsets, dims) if dims else offsets
        value = self.cast(value, dtype)
        if value.dims and value.dims != dims:
            value = self.to_dims(value, dims)
        mask = self.base_mask(dims)
        ptr = self.param(param, dtype)
        builder = self.top if self.loop is None else self.loop.builder
        operands = [ptr, offsets.value, value.value] + ([mask.value] if mask is not None else [])
        op = builder.create("tile.atomic_add" if atomic else "tile.store", *operands)
        for cache in (self.top_loads, self.loop.loads if self.loop else {}):
            for k in [k for k in cache if k[0] == param]:
                del cache[k]
        return op

    # -- clean-up

    def erase_dead(self) -> None:
        """Drops pure ops whose results are unused (after stores to removed buffers went)."""
        changed = True
        while changed:
            changed = False
            counts = use_counts(self.kernel.body)
            for op in reversed(list(self.kernel.walk())):
                if (
                    op.is_pure
                    and not op.regions
                    and op.parent is not None
                    and all(counts.get(id(r), 0) == 0 and id(r) not in self.protected for r in op.results)
                ):
                    op.erase()
                    changed = True
