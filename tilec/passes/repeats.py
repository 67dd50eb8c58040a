"""repeats: a pointwise kernel's costly values that repeat across its block, computed once a column.

Llama's rotary embedding, as Inductor fuses it for the model, is one pointwise kernel over q laid
out (batch, tokens, heads, head_dim) that computes, for every element x, the angle
`inv_freq[x % 64] * ((x // 2048) % 1024)` and its cos and sin: the same values for each of a
token's 16 heads. On the H100 the transcendental arithmetic is what bounds it (stock's kernel runs
at 68% of a copy; with cos and sin computed once per token and column, 120%:
bench/results/2026-11-26-h100-rotary).

Such a value depends on the flat index x only through its low digits (x % P) and its high ones
(x // Q, ...), not those between. The pass finds that from the index arithmetic (`tile.div` and
`tile.rem` of x by constants: each result reads a known range of x's place values) and views the
block of XBLOCK elements as a tile [XBLOCK / P, P] — rows of P consecutive elements — with XBLOCK
a divisor of Q, so that within a block the high digits are the same for every element and the low
ones are the column's. Each value that depends on no other digits is computed on a [1, P] tile
(the block's first row: `xoffset + column`) and broadcast over the rows where a full-tile value
uses it; everything else runs on [XBLOCK / P, P] as before. Results are unchanged: the same
operations on the same operands.

Where the repeat is across an outer digit — the same rotary over q laid out (batch, heads, tokens,
head_dim), as attention's backward gives its gradient: the heads are above the tokens — no block
of consecutive elements repeats a value. Each program's rows then step by a stride L over the
digits between (row r, column c is `base + r * L + c`, a head's tokens x head_dim apart), and the
program's id fixes those digits (`base`: its group of rows and its columns within a row step):
values that read only the digits below P, those in [P, L) and those from the rows' group up are a
column's. The pass picks, of the splits whose sizes are powers of two (L need not be), the one that
hoists the most costly ops over the most rows, consecutive rows first.

Elements past the kernel's end (x >= xnumel, masked by the kernel's `xmask`) are the one place a
broadcast value differs from what the element would have computed: a column's first row is valid
wherever any of its rows is, so a [1, P] value reads what every valid row would, and an element
past the end is never stored. Masks and addresses of loads and stores are computed on the full
tile from full-tile operands, never broadcast from a first row.

A kernel over a symbolic size too (the size a parameter, the grid cdiv(xnumel, XBLOCK): Llama's
rotary over a symbolic number of tokens, its position `(x // 2048) % tokens`): the rows are
consecutive and the grid stays as it is; every store must be masked by the kernel's mask, since
no block size is known to divide the size; a remainder or quotient by a parameter reads what its
operand reads. `symbolic=false` leaves such kernels alone.

The pass binds XBLOCK (the largest power of two up to `xblock` that divides Q, no larger than the
kernel's size rounded up to a power of two) and P (the least power of two that the low digits
divide, at least `min_columns`), and acts where at least one costly op (cos, sin, exp, log, tanh, erf, sigmoid, pow, sqrt,
rsqrt) repeats over at least `min_rows` rows; it leaves every other kernel as it was, with a
remark. Run it first: it works on the logical form, before `plan` binds the block sizes.

Before (xnumel 8388608):
    %xindex = tile.add %xrange, %xoffset : tile<[XBLOCK], i32>
    %d = tile.rem %xindex, %c64 : tile<[XBLOCK], i32>
    %f = tile.load %inv_freq, %d, %xmask : tile<[XBLOCK], f32>
    %t = tile.div %xindex, %c2048 : tile<[XBLOCK], i32>
    ...
    %cos = tile.cos %angle : tile<[XBLOCK], f32>
After (XBLOCK = 2048, 128 columns):
    %xcol = tile.add %cols, %xoffset : tile<[1, 128], i32>
    %d = tile.rem %xcol, %c64 : tile<[1, 128], i32>
    ...
    %cos = tile.cos %angle : tile<[1, 128], f32>
    %cos_b = tile.broadcast %cos : tile<[16, 128], f32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilec.ir.builder import Builder
from tilec.ir.core import Block, Kernel, Module, Operation, Value, defining_op
from tilec.ir.expr import Sym, next_pow2
from tilec.ir.ops import ArangeOp, CmpOp, LoadOp, ProgramIdOp, StoreOp
from tilec.ir.types import TileType
from tilec.passes.base import Pass, register
from tilec.passes.plan import x_size
from tilec.passes.rewrite import const_value
from tilec.passes.specialize import bind_constexprs

# ops whose arithmetic is worth computing once per distinct value (tens of instructions an element)
COSTLY = frozenset(
    f"tile.{n}" for n in ("cos", "sin", "exp", "exp2", "log", "log2", "tanh", "erf", "sigmoid", "pow", "sqrt", "rsqrt")
)
# ops that change a tile's shape: the rewrite re-shapes elementwise math, comparisons, selects,
# casts, constants, loads and stores (what a pointwise kernel of Inductor's holds), not these
_SHAPE_CHANGING = frozenset(
    ("tile.expand_dims", "tile.reshape", "tile.broadcast", "tile.convert_layout", "tile.assume_multiple")
)
_UNBOUNDED = math.inf

Span = tuple[int, float]  # [lo, hi): the place values of x a value reads, (x // lo) % (hi / lo)


@dataclass(frozen=True)
class Dep:
    """What of the flat index x a value depends on: the spans of x's place values; `exact`: the
    value is exactly (x // lo) % (hi / lo) (x // lo where hi is unbounded); `valid`: it depends on
    whether its element is inside the kernel (x < xnumel), which the analysis leaves out of the
    spans (see the module's docstring)."""

    spans: frozenset[Span] = frozenset()
    exact: Span | None = None
    valid: bool = False

    def union(self, other: Dep) -> Dep:
        return Dep(self.spans | other.spans, None, self.valid or other.valid)


@dataclass(frozen=True)
class Split:
    """A program's elements as [rows, columns]: row r, column c is the flat index
    `base + r * stride + c`. With `stride == columns` (the common case) the rows are consecutive
    and the block is XBLOCK = rows x columns consecutive elements; a larger stride (a multiple of
    the columns) steps over the digits between them, which the program's id fixes."""

    columns: int  # P
    xblock: int  # rows x columns: the elements a program holds
    stride: int = 0  # L, the flat-index step between rows (0: the columns)

    @property
    def rows(self) -> int:
        return self.xblock // self.columns

    @property
    def step(self) -> int:
        return self.stride or self.columns

    @property
    def group(self) -> int:
        """The flat-index extent of the programs that share a value of the digits above the rows."""
        return self.step * self.rows

    def programs(self, xnumel: int) -> int:
        return -(-xnumel // self.group) * (self.step // self.columns)

    def column(self, dep: Dep) -> bool:
        """Whether a value of this dependence is the same in every row of a program's column:
        each span it reads lies below the columns, between the columns and the row step, or from
        the rows' group up (the last two fixed by the program's id)."""
        p, step, group = self.columns, self.step, self.group

        def fixed(lo: int, hi: float) -> bool:
            if hi != _UNBOUNDED and p % int(hi) == 0:
                return True
            if lo % p == 0 and hi != _UNBOUNDED and step % int(hi) == 0:
                return True
            return lo % group == 0

        return all(fixed(lo, hi) for lo, hi in dep.spans)


@dataclass
class Found:
    """A kernel the pass can rewrite: its flat index, the split, each value's dependence, its size."""

    xrange: Value
    xindex: Value
    split: Split
    deps: dict[int, Dep]  # id(value) -> its dependence
    xnumel: int | None  # None: symbolic (the kernel's parameter), its rows then consecutive


def _pointwise_index(kernel: Kernel) -> tuple[Value, Value] | str:
    """(xrange, xindex) of a 1-D pointwise kernel in logical form, or why it is not one."""
    if set(kernel.constexprs) != {"XBLOCK"}:
        return "not a pointwise kernel"
    if kernel.constexprs["XBLOCK"] is not None:
        return "its block size is bound already (the pass runs on the logical form)"
    aranges = [op for op in kernel.walk() if isinstance(op, ArangeOp)]
    if len(aranges) != 1 or aranges[0].attr("end") != Sym("XBLOCK"):
        return "not one block of XBLOCK elements (its aranges)"
    for op in kernel.walk():
        if op.regions:
            return f"has a region ({op.name})"
        if op.name in _SHAPE_CHANGING:
            return f"changes a tile's shape ({op.name})"
        if any(isinstance(r.type, TileType) and r.type.rank != 1 for r in op.results):
            return "has tiles of rank other than 1"
        if not op.results and not isinstance(op, StoreOp):
            return f"has an op with effects other than stores ({op.name})"
    xrange = aranges[0].result
    users = [op for op in kernel.walk() if any(v is xrange for v in op.operands)]
    if len(users) != 1 or users[0].name != "tile.add":
        return "its block's index is not the block's arange plus the program's offset"
    add = users[0]
    other = add.operands[1] if add.operands[0] is xrange else add.operands[0]
    if isinstance(other.type, TileType):
        return "its block's index is not the block's arange plus the program's offset"
    return xrange, add.result


def _int_const(v: Value) -> int | None:
    c = const_value(v)
    return c if isinstance(c, int) and not isinstance(c, bool) and c > 0 else None


def dependences(kernel: Kernel, xrange: Value, xindex: Value, xnumel: int | Value) -> dict[int, Dep]:
    """Each value's dependence on the flat index (`Dep`), in program order."""
    deps: dict[int, Dep] = {id(xindex): Dep(frozenset({(1, _UNBOUNDED)}), (1, _UNBOUNDED))}
    deps[id(xrange)] = Dep(frozenset({(1, _UNBOUNDED)}))

    def dep(v: Value) -> Dep:
        return deps.get(id(v), Dep())

    for op in kernel.walk():
        if not op.results or id(op.result) in deps:
            continue
        operands = [dep(v) for v in op.operands]
        d = Dep()
        for o in operands:
            d = d.union(o)
        if op.name in ("tile.rem", "tile.div") and operands[0].exact is not None:
            c = _int_const(op.operands[1])
            lo, hi = operands[0].exact
            width = hi if hi == _UNBOUNDED else hi / lo  # how many values the digits take
            if c is not None and (width == _UNBOUNDED or width % c == 0):
                span = (lo, lo * c) if op.name == "tile.rem" else (lo * c, hi)
                d = Dep(frozenset({span}) if span[0] < span[1] else frozenset(), span, operands[0].valid)
        elif _is_mask(op, xindex, xnumel):
            d = Dep(valid=True)  # the kernel's mask: whether the element exists
        deps[id(op.result)] = d
    return deps


def _candidates(limit: int, min_rows: int, min_columns: int, xnumel: int | None, places: set[int]) -> list[Split]:
    """Every split of at most `limit` elements a program: columns and rows powers of two (a tile's
    sizes), columns from `min_columns`, at least `min_rows` rows; rows consecutive, or apart by a
    power-of-two multiple of the columns or by one of `places` (where the costly values' digits
    end: a head's tokens x head_dim, which need not be a power of two) that the columns divide.
    A symbolic size (`xnumel` None) takes consecutive rows only: the grid stays cdiv(xnumel, XBLOCK)."""
    out = []
    columns = min_columns
    while columns * min_rows <= limit:
        rows = min_rows
        while columns * rows <= limit:
            out.append(Split(columns, columns * rows))  # consecutive rows
            if xnumel is not None:
                steps = {columns << k for k in range(1, (max(xnumel, 1) // columns).bit_length())}
                steps |= {v for v in places if v % columns == 0 and v != columns}
                for step in sorted(steps):
                    if step * rows <= max(next_pow2(xnumel), columns * rows):
                        out.append(Split(columns, columns * rows, step))
            rows *= 2
        columns *= 2
    return out


def find(
    kernel: Kernel, xblock: int = 2048, min_rows: int = 4, min_columns: int = 128, symbolic: bool = True
) -> Found | str:
    """What `repeats` would do to `kernel`, or why it leaves it alone (`symbolic`: a kernel over a
    symbolic size too)."""
    index = _pointwise_index(kernel)
    if isinstance(index, str):
        return index
    xrange, xindex = index
    grid_size = x_size(kernel)
    if grid_size is None:
        return "its grid is not cdiv(xnumel, XBLOCK) of its size"
    xnumel = grid_size if isinstance(grid_size, int) else None
    if xnumel is None and not symbolic:
        return "its size is symbolic (the pass's `symbolic` option is off)"
    try:
        size = grid_size if isinstance(grid_size, int) else kernel.param(grid_size.name)
    except KeyError:  # (num_sms)
        return "its grid is not cdiv(xnumel, XBLOCK) of its size"
    deps = dependences(kernel, xrange, xindex, size)
    costly = [op for op in kernel.walk() if op.name in COSTLY and isinstance(op.result.type, TileType)]
    if not costly:
        return "no costly op (cos, sin, exp, log, tanh, ...)"
    limit = xblock if xnumel is None else min(xblock, next_pow2(xnumel))
    masked = _stores_masked(kernel, xindex, size)
    if xnumel is None and not masked:
        return "its size is symbolic and a store is not masked by the kernel's mask"
    best: tuple[tuple[int, int, int, int], Split] | None = None
    places = {int(v) for c in costly for span in deps[id(c.result)].spans for v in span if v != _UNBOUNDED}
    for split in _candidates(limit, min_rows, min_columns, xnumel, places):
        if xnumel is not None and xnumel % split.group and not masked:
            continue
        hoisted = sum(split.column(deps[id(c.result)]) for c in costly)
        # the most costly ops hoisted, then the most rows sharing them, then consecutive rows
        key = (hoisted, split.rows, -split.step, split.columns)
        if hoisted and (best is None or key > best[0]):
            best = (key, split)
    if best is None:
        return (
            f"no costly op's value repeats over {min_rows} or more rows of a block of at most {limit} "
            "(each reads digits of the flat index between its columns and its block)"
        )
    return Found(xrange, xindex, best[1], deps, xnumel)


def _is_mask(op: Operation | None, xindex: Value, xnumel: int | Value) -> bool:
    """Whether `op` is the kernel's mask: `xindex < xnumel` (a constant, or the size parameter)."""
    if not (isinstance(op, CmpOp) and op.operands[0] is xindex and op.attr("predicate") == "lt"):
        return False
    bound = op.operands[1]
    return bound is xnumel if isinstance(xnumel, Value) else const_value(bound) == xnumel


def _stores_masked(kernel: Kernel, xindex: Value, xnumel: int | Value) -> bool:
    """Whether every store is masked by the kernel's mask, alone or in a conjunction (elements past
    the end are never stored)."""

    def has_mask(v: Value | None) -> bool:
        op = defining_op(v) if v is not None else None
        if _is_mask(op, xindex, xnumel):
            return True
        return op is not None and op.name == "tile.and" and any(has_mask(o) for o in op.operands)

    return all(has_mask(op.mask) for op in kernel.walk() if isinstance(op, StoreOp))


class _Rewrite:
    """Rebuilds the kernel's body with every tile [XBLOCK] as [rows, P] or, for column values, [1, P]."""

    def __init__(self, kernel: Kernel, found: Found) -> None:
        self.kernel = kernel
        self.f = found
        self.split = found.split
        self.block = Block()
        self.b = Builder.at_end(self.block)
        self.same: dict[int, Value] = {}  # scalars: the value in the new body
        self.col: dict[int, Value] = {}  # [1, P] versions
        self.full: dict[int, Value] = {}  # [rows, P] versions (broadcast from a column's where one is)
        self.exact: dict[int, Value] = {}  # [rows, P] versions computed from full-tile operands only
        self.defs: dict[int, Operation] = {}
        self._tainted: dict[int, bool] = {}

    def shape(self, kind: str) -> tuple[int, int]:
        return (1, self.split.columns) if kind == "col" else (self.split.rows, self.split.columns)

    def is_column(self, v: Value) -> bool:
        d = self.f.deps.get(id(v), Dep())
        return isinstance(v.type, TileType) and v is not self.f.xindex and self.split.column(d)

    def run(self) -> None:
        ops = list(self.kernel.body.ops)
        for op in ops:
            for r in op.results:
                self.defs[id(r)] = op
        # each op at its place (loads stay before the stores that follow them); a column value's
        # broadcast and a load's exactly computed operands are made where first needed
        for op in ops:
            if isinstance(op, StoreOp):
                operands = [self.get(v, "exact") for v in (op.ptr, op.offsets)] + [self.get(op.value, "full")]
                if op.mask is not None:
                    operands.append(self.get(op.mask, "exact"))
                self.clone(op, operands, None)
            elif not isinstance(op.result.type, TileType):
                self.same[id(op.result)] = self.clone(op, [self.scalar(v) for v in op.operands], None).result
            elif op.result is self.f.xindex:
                self.make_index(op)
            elif op.result is not self.f.xrange:  # (the rows and columns replace it)
                self.get(op.result, "col" if self.is_column(op.result) else "full")
        self.kernel.body.ops.clear()
        for op in list(self.block.ops):
            self.block.ops.remove(op)
            self.kernel.body.append(op)

    def scalar(self, v: Value) -> Value:
        return self.same.get(id(v), v)  # (kernel parameters stay as they are)

    def make_index(self, op: Operation) -> None:
        xoffset = self.scalar(op.operands[1] if op.operands[0] is self.f.xrange else op.operands[0])
        t = op.result.type
        assert isinstance(t, TileType)
        dt = t.dtype
        rows, cols, step = self.split.rows, self.split.columns, self.split.step
        b = self.b
        if step != cols:
            # the program's first element: its group of rows (pid // per) and its columns within
            # the row step (pid % per), `per` programs a group
            pid = next(o.result for o in self.kernel.body.ops if isinstance(o, ProgramIdOp))
            per = b.constant(step // cols, dt, name_hint="per")
            group = b.op("tile.div", self.scalar(pid), per, name_hint="xgroup")
            group = b.op("tile.mul", group, b.constant(self.split.group, dt, name_hint="xgroup"), name_hint="xgroup")
            within = b.op("tile.rem", self.scalar(pid), per, name_hint="xwithin")
            within = b.op("tile.mul", within, b.constant(cols, dt, name_hint="xwithin"), name_hint="xwithin")
            xoffset = b.op("tile.add", group, within, name_hint="xbase")
        r = b.op("tile.arange", type=TileType((rows,), dt), end=rows, name_hint="xrows")
        r2 = b.op("tile.expand_dims", r, axis=1, name_hint="xrows")
        p = b.constant(step, dt, name_hint=f"c{step}")
        r3 = b.op("tile.mul", r2, p, name_hint="xrows")
        c = b.op("tile.arange", type=TileType((cols,), dt), end=cols, name_hint="xcols")
        c2 = b.op("tile.expand_dims", c, axis=0, name_hint="xcols")
        xcol = b.op("tile.add", c2, xoffset, name_hint="xcol")
        rb = b.op("tile.broadcast", r3, type=TileType((rows, cols), dt), name_hint="xrows")
        cb = b.op("tile.broadcast", c2, type=TileType((rows, cols), dt), name_hint="xcols")
        xr = b.op("tile.add", rb, cb, name_hint="xrange")
        xindex = b.op("tile.add", xr, xoffset, name_hint=op.result.name_hint)
        self.col[id(op.result)] = xcol
        self.full[id(op.result)] = self.exact[id(op.result)] = xindex

    def get(self, v: Value, kind: str) -> Value:
        """`v` in the new body as a column ([1, P]), a full tile ([rows, P]) or an exactly computed
        full tile; scalars as they are."""
        if not isinstance(v.type, TileType):
            return self.scalar(v)
        table = {"col": self.col, "full": self.full, "exact": self.exact}[kind]
        if id(v) in table:
            return table[id(v)]
        op = self.defs[id(v)]
        if kind == "full" and self.is_column(v):
            out = self.b.op("tile.broadcast", self.get(v, "col"), type=self.tile(v, "full"), name_hint=v.name_hint)
        elif kind == "exact" and not self.tainted(v):
            out = self.get(v, "full")
        else:
            operand_kind = kind
            if isinstance(op, LoadOp) and kind != "col":
                operand_kind = "exact"  # a load's address and mask: never a first row's broadcast
            operands = [self.get(o, operand_kind) for o in op.operands]
            if isinstance(op, LoadOp) and op.other is not None and kind != "col":
                operands[-1] = self.get(op.other, "full")
            out = self.clone(op, operands, self.tile(v, kind)).result
        table[id(v)] = out
        return out

    def tainted(self, v: Value) -> bool:
        """Whether `v`'s full tile may take a first row's value where its element is past the end:
        a column value that depends on the mask, or anything computed from one."""
        if not isinstance(v.type, TileType) or v is self.f.xindex:
            return False
        if id(v) not in self._tainted:  # (once a value: operands are shared)
            op = self.defs[id(v)]
            if self.is_column(v):
                self._tainted[id(v)] = self.f.deps.get(id(v), Dep()).valid
            else:  # a load's address and mask are exact, and its value is memory's
                self._tainted[id(v)] = not isinstance(op, LoadOp) and any(self.tainted(o) for o in op.operands)
        return self._tainted[id(v)]

    def tile(self, v: Value, kind: str) -> TileType:
        t = v.type
        assert isinstance(t, TileType)
        return TileType(self.shape(kind), t.dtype)

    def clone(self, op: Operation, operands: list[Value], result: TileType | None) -> Operation:
        types = [result if result is not None else r.type for r in op.results]
        new = self.b.create(
            type(op), *operands, result_types=types, names=[r.name_hint for r in op.results], **op.attributes
        )
        new.loc = op.loc
        return new


@register
class Repeats(Pass):
    """Computes a pointwise kernel's costly values once per column where they repeat across rows."""

    name = "repeats"
    unchanged = "no pointwise kernel with a costly value that repeats across its block"
    xblock: int = 2048  # the largest block the pass binds
    min_rows: int = 4  # rows a hoisted value must repeat over
    # fewest columns a row has: at least a program's threads (128 at 4 warps), so Triton computes the
    # [1, P] values one a thread and converts them through shared memory. With fewer it lays them out
    # as the [rows, P] tile, each thread computing its columns' values and every row of threads
    # repeating them: the rotary embedding on [32, 64] tiles took 8 cos-and-sin evaluations a thread
    # (16 elements), on [16, 128] one (sm_90's PTX)
    min_columns: int = 128
    # kernels over a symbolic size too (the rotary over a symbolic number of tokens); the chooser
    # classifies them as this pass finds them, and its rules for them are their own (`symbolic`)
    symbolic: bool = True

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            found = find(kernel, self.xblock, self.min_rows, self.min_columns, self.symbolic)
            if isinstance(found, str):
                self.remark(kernel, found)
                continue
            bind_constexprs(kernel, {"XBLOCK": found.split.xblock})  # (a symbolic size's grid follows)
            if found.xnumel is not None:
                kernel.launch.grid = (found.split.programs(found.xnumel),)
            _Rewrite(kernel, found).run()


__all__ = ["COSTLY", "Dep", "Found", "Repeats", "Split", "dependences", "find"]
