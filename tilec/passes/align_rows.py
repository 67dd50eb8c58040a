"""align-rows: a row that starts off a 16-byte boundary is read in chunks that start on one.

A row of N elements starts at row * N; when N is not a multiple of the 16-byte vector (50257 bf16
logits: GPT-2's vocabulary), most rows start at an unaligned address and every element is its own
2-byte access, for Triton as for stock Inductor (and TMA cannot copy such rows at all). For a
kernel that handles one row per program (XBLOCK = 1) in loops over chunks, each loop moves back
by the row's misalignment, `head = (row * N) % vec`, so that its chunks start at aligned
addresses, and becomes four:

- the first chunk, masked to the columns before the first aligned one (0 .. vec - head);
- the chunks wholly inside the row from there, unmasked: with their offsets marked aligned
  (`tile.assume_multiple`), Triton reads and writes them in 16-byte vectors;
- what is left of the row up to its last aligned column, masked there: the column counted from
  the aligned chunk start against that bound, marked a multiple of the vector, so the mask is
  constant over each vector and Triton keeps the vectors (a mask ending at the row's own end
  makes every access of its chunk a 2-byte one);
- the last partial vector (less than `vec` elements), masked at the row's end.

The bounds of the last three depend on the row, so they stay loops (`peel` and `canonicalize`
leave them). Only kernels with XBLOCK = 1, one row length that is no multiple of the vector,
chunk loops from 0 to N, and every access and reduction in them masked; the loads and stores
rewritten are those at the row start plus the column. Chunk sums regroup (equal up to rounding).

`line=128` starts the whole chunks on a 128-byte cache line instead of a 16-byte vector (the
first piece then holds up to a line, 64 bf16 columns; the rest and the last partial vector stay
on vectors): a warp's 512-byte access that starts off a line touches five lines, not four. On the
H200 the cross-entropy backward at 8192x50257 took 451 us so against 470, softmax 32768x50257 in
Gluon 80.4% of a copy against 76.3. Rows on 16-byte boundaries but off a line ran as slowly as
misaligned ones (the backward at 50264 472 us, at 50304 423); `vector_rows=true` splits those too
(434 us), else they stay whole, as the tables measured them (TMA copies them in Gluon: softmax at
4096x50264 83.4% whole, 80.8 split; bench/results/2026-11-29-h200-line-rows).

A row of symbolic length (the kernel's `rnumel` parameter: `torch.compile(dynamic=True)`, an
attention softmax over a varying sequence) is split the same way, whatever the length turns out
to be: Triton compiles the length unspecialized, so without the split every access of such a row
is a 2-byte one even where the length is a multiple of the vector (softmax's three loops over
rows of 3000 for sm_90: 2-byte loads and stores only). The rest's vectors keep the chunk's width
(how many there are depends on the length); at a length that is a multiple of the vector the
first and last pieces run no trip.

Before (N = 50257, vec = 8):
    %s = tile.for %r = %c0 to %c50257 step %c8192 iter_args(%a = %z) ... {
      %cols = tile.add %rrange, %r
      %rmask = tile.cmp %rindex, %c50257 {predicate = "lt"}
      %offs = tile.add %rowstart, %rindex
      %v = tile.load %x, %offs, %mask ...
After:
    %head = tile.rem %rowstart, %vec                 (the row's misalignment)
    %span = tile.add %c50257, %head                  (the shifted row's end)
    %full = ...                                      (8 + whole chunks up to span)
    %s0 = tile.for %r = %c0 to %c8 step %c8192 iter_args(%a = %z) ... {
      %r_1 = tile.sub %r, %head
      %cols = tile.add %rrange, %r_1
      %rmask = tile.cmp %rindex, %c50257 {predicate = "lt"}
      %from0 = tile.cmp %rindex, %c0 {predicate = "ge"}
      %rmask_1 = tile.and %rmask, %from0
      %head_1 = tile.cmp %rindex, %headless {predicate = "lt"}      (headless = 8 - head)
      %rmask_2 = tile.and %rmask_1, %head_1
      %offs_1 = tile.assume_multiple %offs {divisors = [1, 8]}
      ...
    }
    %s1 = tile.for %r = %c8 to %full ... iter_args(%a = %s0)       (the row masks replaced by true)
    %end = tile.assume_multiple (%span - %span % 8) {divisors = [8]}
    %s2 = tile.for %r = %full to %end ... iter_args(%a = %s1) {    (the row masks: rrange + %r < %end)
    %s = tile.for %r = %end to %span ... iter_args(%a = %s2)       (masked at the row's end)
"""

from __future__ import annotations

import math

from tilec.ir.builder import Builder
from tilec.ir.clone import clone_op
from tilec.ir.core import BlockArg, Kernel, Module, Operation, Value, defining_op, replace_uses
from tilec.ir.dtypes import DType
from tilec.ir.ops import ArangeOp, BroadcastOp, CmpOp, ForOp, LoadOp, ProgramIdOp, ReduceOp, ReductionOp, StoreOp
from tilec.ir.ops.common import elem_dtype
from tilec.ir.types import PointerType, TileType
from tilec.passes.affine import local_stride
from tilec.passes.base import Pass, register
from tilec.passes.plan import ROW_LINE
from tilec.passes.rewrite import const_value, depends_on

VECTOR_BYTES = 16
LINE_BYTES = 128  # a cache line: what `line=128` starts the whole chunks on

# a row's length: a constant, or the kernel's size parameter (a symbolic length)
Length = int | Value


def _is_length(v: Value, rnumel: Length) -> bool:
    """`v` is the row length: the constant, or the size parameter itself."""
    return v is rnumel if isinstance(rnumel, Value) else const_value(v) == rnumel


def _row_accesses(loop: ForOp, rnumel: Length) -> list[LoadOp | StoreOp]:
    """The loop's loads and stores at the row start plus the column."""
    return [
        op
        for op in loop.body.walk()
        if isinstance(op, (LoadOp, StoreOp)) and _row_offsets(op.offsets, loop.induction_var, rnumel)
    ]


def _row_start(v: Value, rnumel: Length) -> bool:
    """`v` is a row start: a row index times the row length (broadcast along the row)."""
    op = defining_op(v)
    while isinstance(op, BroadcastOp):
        op = defining_op(op.src)
    if op is None or op.name != "tile.mul":
        return False
    return any(_is_length(x, rnumel) for x in op.operands)


def _row_offsets(offsets: Value, iv: Value, rnumel: Length) -> bool:
    """Offsets that are the row start plus the column (the column stepping by 1 along the row)."""
    op = defining_op(offsets)
    if op is None or op.name != "tile.add" or not isinstance(offsets.type, TileType):
        return False
    last = offsets.type.rank - 1
    a, b = op.operands
    for start, col in ((a, b), (b, a)):
        if _row_start(start, rnumel) and depends_on(col, iv) and local_stride(col, last) == 1:
            return True
    return False


def row_length(kernel: Kernel) -> Length | None:
    """The row length of a planned kernel: the end of its top-level chunk loops from 0, a constant
    or a size parameter of the kernel (a symbolic length); None where there are none, or they
    end differently."""
    ends: dict[object, Length] = {}
    for op in kernel.body.ops:
        if isinstance(op, ForOp) and const_value(op.lower) == 0:
            hi, step = const_value(op.upper), const_value(op.step)
            if not isinstance(step, int):
                return None
            if isinstance(hi, int) and step < hi:
                ends[hi] = hi
            elif hi is None and isinstance(op.upper, BlockArg) and op.upper.block is kernel.body:
                ends[id(op.upper)] = op.upper
            else:
                return None
    return ends.popitem()[1] if len(ends) == 1 else None


def _loops(kernel: Kernel) -> list[ForOp]:
    return [op for op in kernel.body.ops if isinstance(op, ForOp)]


def vector_or_reason(
    kernel: Kernel, line_bytes: int = VECTOR_BYTES, vector_rows: bool = False
) -> tuple[int, int, Length] | str:
    """The vector width in elements the kernel's rows get, the boundary in elements its whole
    chunks start on (`line_bytes` of the narrowest element; the vector where the chunks are no
    multiple of that) and the rows' length, or why it is left. `vector_rows`: rows whose length
    is a multiple of the vector (starting on 16 bytes, off a line) are split too."""
    if kernel.constexprs.get("XBLOCK") != 1:
        return "more than one row per program: a program's rows start at different offsets"
    rnumel = row_length(kernel)
    if rnumel is None:
        return "no loops over a row's chunks of one length"
    loops = _loops(kernel)
    rows = [a for loop in loops for a in _row_accesses(loop, rnumel)]
    if not rows:
        return "no load or store reads a row at its start plus the column"
    widths = [p.pointee.bits // 8 for p in (a.ptr.type for a in rows) if isinstance(p, PointerType)]
    vec = VECTOR_BYTES // max(1, min(widths))
    line = max(vec, line_bytes // max(1, min(widths)))
    steps = {const_value(loop.step) for loop in loops}
    if any(not isinstance(s, int) or s % line for s in steps):  # chunks of no whole lines start on vectors
        line = vec
    if vec <= 1 or (isinstance(rnumel, int) and rnumel % line == 0):
        return f"rows of {rnumel} elements start on {line * min(widths)}-byte boundaries"
    if not vector_rows and isinstance(rnumel, int) and rnumel % vec == 0:
        return f"rows of {rnumel} elements start on {VECTOR_BYTES}-byte boundaries (left whole: vector_rows=false)"
    masked = (LoadOp, StoreOp, ReductionOp)
    if any(isinstance(op, masked) and op.mask is None for loop in loops for op in loop.body.walk()):
        return "an access or a reduction in a row loop has no mask to leave the head out"
    if not any(isinstance(op, ProgramIdOp) for op in kernel.body.ops):
        return "no program id at the top level"
    if len(steps) != 1 or not isinstance(s := steps.pop(), int) or s % vec:
        return "the loops' chunks are not one multiple of the vector"
    return vec, line, rnumel


def _shift(loop: ForOp, head: Value) -> Value:
    """The loop's induction variable minus `head`, in place of it everywhere in the body."""
    iv = loop.induction_var
    shifted = Builder(loop.body, 0).op("tile.sub", iv, head, type=iv.type, name_hint=iv.name_hint)
    replace_uses(loop.body, iv, shifted, keep=[defining_op(shifted)])
    return shifted


def _compare(b: Builder, col: Value, predicate: str, bound: Value | int, mask: Value, hint: str) -> Value:
    """`col <predicate> bound`, shaped like `mask` (the bound cast to the column's dtype)."""
    dt = elem_dtype(col.type)
    assert dt is not None
    if isinstance(bound, int):
        bound = b.constant(bound, dt, "c0")
    elif bound.type != dt:
        bound = b.op("tile.cast", bound, type=dt, name_hint=bound.name_hint)
    return b.op("tile.cmp", col, bound, type=mask.type, predicate=predicate, name_hint=hint)


def _narrow(loop: ForOp, mask: Value, col: Value, predicate: str, bound: Value | int, hint: str) -> Value:
    """`mask and (col <predicate> bound)` in place of `mask` everywhere in the loop's body."""
    b = Builder.after(defining_op(mask))  # type: ignore[arg-type]
    cond = _compare(b, col, predicate, bound, mask, hint)
    both = b.op("tile.and", mask, cond, type=mask.type, name_hint=mask.name_hint)
    replace_uses(loop.body, mask, both, keep=[defining_op(cond), defining_op(both)])
    return both


def _from_zero(loop: ForOp, shifted: Value, rnumel: Length) -> list[tuple[Value, Value]]:
    """Each `column < N` mask also asks `column >= 0`; returns the new masks and their columns."""
    masks = []
    for op in [o for o in loop.body.walk() if isinstance(o, CmpOp)]:
        if op.attr("predicate") == "lt" and _is_length(op.rhs, rnumel) and depends_on(op.lhs, shifted):
            masks.append((_narrow(loop, op.result, op.lhs, "ge", 0, "from0"), op.lhs))
    return masks


def _unshifted(col: Value, shifted: Value, iv: Value, at: Operation) -> Value:
    """`col` computed again from the loop's own induction variable `iv` where it was computed from
    `shifted` (iv - head): the ops between copied before `at`. Triton knows the chunk start `iv`
    is a multiple of the vector; of `iv - head` it knows nothing."""
    mapping: dict[int, Value] = {id(shifted): iv}
    block = at.parent
    assert block is not None

    def walk(v: Value) -> Value:
        if id(v) in mapping:
            return mapping[id(v)]
        op = defining_op(v)
        if op is None or not depends_on(v, shifted):
            return v
        for o in op.operands:
            walk(o)
        block.insert_before(at, clone_op(op, mapping))
        return mapping[id(v)]

    return walk(col)


def _bound_at_vector(loop: ForOp, mask: Value, col: Value, shifted: Value, end: Value) -> None:
    """In `loop` (chunks past the first aligned column), `mask` becomes `column < end`, `end` the
    last aligned column inside the row: the same test on a column counted from the aligned
    chunk start, so the mask is constant over each vector."""
    at = defining_op(mask)
    assert at is not None
    aligned = _unshifted(col, shifted, loop.induction_var, at)
    inside = _compare(Builder.before(at), aligned, "lt", end, mask, "vectors")
    replace_uses(loop.body, mask, inside, keep=[defining_op(inside)])


def _wide(t: object, width: int) -> bool:
    return isinstance(t, TileType) and t.shape[-1] == width


def _retype(op: Operation, width: int, new: int) -> None:
    """`op`'s chunk-wide results (and an arange's end) made `new` columns wide."""
    for r in op.results:
        if _wide(r.type, width):
            t = r.type
            assert isinstance(t, TileType)
            r.type = t.with_(shape=(*t.shape[:-1], new))
    if isinstance(op, ArangeOp):
        op.attributes["end"] = op.attr("start") + new


def narrow_loop(loop: ForOp, width: int, new: int) -> str | None:
    """Makes `loop`'s chunk `new` columns wide where it was `width` (its step too): its tiles of
    `width` columns, and copies, before the loop, of those it uses from outside. Returns why it
    cannot, for a loop that carries a chunk-wide tile (`accumulate`'s running sums: the loops
    before and after it carry the same tile) or uses one that is not computed from ranges,
    broadcasts and elementwise ops."""
    if any(_wide(v.type, width) for v in loop.inits):
        return "it carries a tile of the chunk's width"
    if any(op.regions for op in loop.body.walk()):
        return "it holds a loop or a branch of its own"
    outside: dict[int, Value] = {}
    b = Builder.before(loop)

    def narrowed(v: Value) -> Value | None:
        if id(v) in outside:
            return outside[id(v)]
        op = defining_op(v)
        if op is None or op.regions or isinstance(op, (LoadOp, ReductionOp)):
            return None
        mapping: dict[int, Value] = {}
        for o in op.operands:
            if _wide(o.type, width):
                n = narrowed(o)
                if n is None:
                    return None
                mapping[id(o)] = n
        copy = b.insert(clone_op(op, mapping))
        _retype(copy, width, new)
        for old, fresh in zip(op.results, copy.results):
            outside[id(old)] = fresh
        return outside[id(v)]

    ops = list(loop.body.walk())
    inner = {id(r) for op in ops for r in op.results}
    # the copies first (a loop left as it was leaves them unused, for dce), then the loop changes
    for op in ops:
        for o in op.operands:
            if id(o) not in inner and _wide(o.type, width) and narrowed(o) is None:
                return f"it uses %{o.name_hint}, a chunk-wide tile it cannot narrow"
    for op in ops:
        op.operands = [outside.get(id(o), o) for o in op.operands]  # (outside: values from before the loop)
        _retype(op, width, new)
    step = loop.step.type
    assert isinstance(step, DType)
    loop.step = b.constant(new, step, "vec" if new < 64 else "rest")
    return None


def _rest_width(rnumel: Length, vec: int, chunk: int, line: int | None = None) -> int:
    """The columns the rest's whole vectors can span (after the first piece, up to the first
    `line` boundary, and the whole chunks), over every misalignment a row can have, rounded up to
    a power of two (a chunk for a symbolic length)."""
    if not isinstance(rnumel, int):
        return chunk
    line = line or vec
    most = 0
    for head in range(0, line, math.gcd(rnumel, line)):  # row r starts r * rnumel % line past a line
        span = rnumel + head
        full = line + (span - line) // chunk * chunk
        most = max(most, span - span % vec - full)
    return max(vec, 1 << max(0, most - 1).bit_length())


def align_loop(
    kernel: Kernel,
    loop: ForOp,
    rows: list[LoadOp | StoreOp],
    rnumel: Length,
    vec: int,
    narrow: bool = False,
    line: int | None = None,
) -> list[str]:
    """Splits `loop` (whose accesses at the row start plus the column are `rows`) into its first
    piece (up to the first column on a `line`-element boundary: the vector by default), the
    aligned chunks inside the row, the rest's whole vectors and its last partial vector; returns
    why a piece kept the chunk's width."""
    line = line or vec
    pid = next(op for op in kernel.body.ops if isinstance(op, ProgramIdOp)).result
    iv = loop.induction_var
    it = iv.type
    assert isinstance(it, DType)
    step = const_value(loop.step)
    assert isinstance(step, int)
    odt = elem_dtype(rows[0].offsets.type)
    assert odt is not None
    b = Builder.before(loop)
    start = pid if pid.type == odt else b.op("tile.cast", pid, type=odt, name_hint="row")
    if isinstance(rnumel, int):
        length = b.constant(rnumel, odt, "rnumel")
    else:
        length = rnumel if rnumel.type == odt else b.op("tile.cast", rnumel, type=odt, name_hint="rnumel")
    rowstart = b.op("tile.mul", start, length, type=odt, name_hint="rowstart")
    modulus = b.constant(line, odt, "vec" if line == vec else "line")
    head = b.op("tile.rem", rowstart, modulus, type=odt, name_hint="head")
    if odt != it:
        head = b.op("tile.cast", head, type=it, name_hint="head")
    span = b.op("tile.add", loop.upper, head, type=it, name_hint="span")
    chunk = b.constant(step, it, "chunk")
    first = b.constant(line, it, "first")  # the first aligned column after the row's start, shifted
    inner_span = b.op("tile.sub", span, first, type=it, name_hint="inner")
    if not isinstance(rnumel, int):  # a symbolic row may end inside its first vector
        inner_span = b.op("tile.maximum", inner_span, b.constant(0, it, "c0"), type=it, name_hint="inner")
    whole = b.op("tile.div", inner_span, chunk, type=it, name_hint="chunks")
    full = b.op(
        "tile.add", first, b.op("tile.mul", whole, chunk, type=it, name_hint="whole"), type=it, name_hint="full"
    )
    headless = b.op("tile.sub", first, head, type=it, name_hint="headless")  # columns the first chunk keeps
    # the rest's whole vectors end at the last aligned column inside the row
    ragged = b.op("tile.rem", span, b.constant(vec, it, "vec"), type=it, name_hint="ragged")
    aligned_end = b.op("tile.sub", span, ragged, type=it, name_hint="vectors_end")
    if not isinstance(rnumel, int):  # ... and then the rest and the last vector have no columns
        aligned_end = b.op("tile.maximum", aligned_end, full, type=it, name_hint="vectors_end")
    aligned_end = b.op("tile.assume_multiple", aligned_end, type=it, divisors=[vec], name_hint="vectors_end")
    shifted = _shift(loop, head)
    masks = _from_zero(loop, shifted, rnumel)
    for a in rows:
        t = a.offsets.type
        assert isinstance(t, TileType)
        a.offsets = Builder.before(a).op(
            "tile.assume_multiple",
            a.offsets,
            type=t,
            divisors=[1] * (t.rank - 1) + [vec],
            name_hint=a.offsets.name_hint,
        )
    parent = loop.parent
    assert parent is not None
    mapping: dict[int, Value] = {}
    middle = clone_op(loop, mapping)
    assert isinstance(middle, ForOp)
    middle.lower, middle.upper = first, full
    middle.inits = list(loop.results)
    inner = Builder(middle.body, 0)
    for m, _ in masks:
        replace_uses(middle.body, mapping[id(m)], inner.op("tile.full", type=m.type, value=1, name_hint="inside"))
    # the rest's whole vectors: masked at a vector boundary, so Triton still reads vectors
    vmap: dict[int, Value] = {}
    vectors = clone_op(loop, vmap)
    assert isinstance(vectors, ForOp)
    vectors.lower, vectors.upper = full, aligned_end
    vectors.inits = list(middle.results)
    for m, col in masks:
        _bound_at_vector(vectors, vmap[id(m)], vmap[id(col)], vmap[id(shifted)], aligned_end)
    # and the last partial vector, masked at the row's end
    tail = clone_op(loop, {})
    assert isinstance(tail, ForOp)
    tail.lower, tail.upper = aligned_end, span
    tail.inits = list(vectors.results)
    # the first chunk: the loop itself, one step, keeping the columns before the first aligned one
    loop.upper = first
    for m, col in masks:
        _narrow(loop, m, col, "lt", headless, "head")
    at = parent.ops.index(loop)
    for k, new_loop in enumerate((middle, vectors, tail)):
        parent.insert(at + 1 + k, new_loop)
    for old, new in zip(loop.results, tail.results):
        replace_uses(parent, old, new, keep=[middle, vectors])
    if not narrow:
        return []
    if not isinstance(rnumel, int):
        _own_lanes(loop, middle, vectors, tail, step, line, vec)
    # the first chunk holds less than a line of the row, the last partial vector less than a
    # vector, the rest's vectors less than a chunk: each as a tile of its own width, not the chunk's
    rest = _rest_width(rnumel, vec, step, line)
    kept = []
    first_piece = "first vector" if line == vec else "first line"
    for what, piece, width in ((first_piece, loop, line), ("rest", vectors, rest), ("last vector", tail, vec)):
        if width < step and (why := narrow_loop(piece, step, width)) is not None:
            kept.append(f"the {what} of a row loop keeps the chunk's width: {why}")
    return kept


def _own_lanes(head: ForOp, middle: ForOp, vectors: ForOp, tail: ForOp, step: int, line: int, vec: int) -> None:
    """The first and last pieces of a loop whose running sum, maximum or minimum `accumulate`
    carries as a whole chunk each carry lanes of their own, as wide as the piece (`line`, `vec`),
    from the reduction's identity, reduced after the loops and folded into the chunk's total: so
    they can be narrowed. (A row of symbolic length may be shorter than a chunk; its first and
    last pieces as whole chunks took two of every three trips of its loops at rows of 256.) A carried tile
    whose one use after the loops is not such a reduction, or whose start is not the identity,
    stays a chunk wide in every piece."""
    from tilec.passes.accumulate import COMBINES

    parent = tail.parent
    assert parent is not None
    for i, init in enumerate(list(head.inits)):
        t = init.type
        if not isinstance(t, TileType) or not _wide(t, step):
            continue
        users = [op for op in parent.walk() if any(o is tail.results[i] for o in op.operands)]
        red = users[0] if len(users) == 1 else None
        if not isinstance(red, ReduceOp) or red.attr("kind") not in COMBINES or red.attr("axis") != t.rank - 1:
            continue
        kind = red.attr("kind")
        fold, identity, _ = COMBINES[kind]
        start = defining_op(init)
        if start is None or start.name != "tile.full" or start.attr("value") != identity:
            continue
        b = Builder.before(head)
        for piece, width in ((head, line), (tail, vec)):
            narrow = t.with_(shape=(*t.shape[:-1], width))
            piece.inits = [
                b.op("tile.full", type=narrow, value=identity, name_hint=f"{init.name_hint}_vec") if k == i else v
                for k, v in enumerate(piece.inits)
            ]
            piece.iter_args[i].type = narrow
            piece.results[i].type = narrow
        middle.inits = [init if k == i else v for k, v in enumerate(middle.inits)]
        row = red.results[0].type
        red.operands = [vectors.results[i], *red.operands[1:]]
        after = Builder.after(red)
        total: Value = red.results[0]
        made: list[Operation] = []
        for piece in (head, tail):
            part = after.op("tile.reduce", piece.results[i], type=row, kind=kind, axis=t.rank - 1, name_hint="ends")
            total = after.op(fold, total, part, type=row, name_hint="total")
            made += [defining_op(part), defining_op(total)]  # type: ignore[list-item]
        replace_uses(parent, red.results[0], total, keep=made)


# Why a kernel with a loop over the row that reads none of it keeps every piece chunk-wide. Such
# a loop's tiles (the cross-entropy backward's sum of its one-hot rows) have no load for Triton to
# lay them out by; beside narrow pieces, Triton 3.6 laid the loop's chunk-wide tiles out by the
# row's [1, 1] values, a whole chunk in each thread (at chunks of 32768 over 32 warps, a compile
# that had not ended after five minutes; chunk-wide pieces keep it to one layout, in a second).
READLESS = (
    "a loop over the row reads none of it: its tiles have no load to be laid out by, so every piece "
    "keeps the chunk's width (beside narrow pieces Triton lays them out a whole chunk a thread)"
)


@register
class AlignRows(Pass):
    """Row loops of misaligned rows read aligned chunks: 16-byte vectors inside the row."""

    name = "align-rows"
    # the first piece, the rest and the last partial vector as tiles of their own width (the
    # Triton pipeline's), not the chunk's
    narrow: bool = False
    # the boundary in bytes the whole chunks start on: the 16-byte vector, or a 128-byte cache
    # line (a warp's access of 16-byte vectors that starts off a line touches a line more); the
    # first piece then spans up to a line. A plan's `line` (kernel attribute `row_line`) overrides it
    line: int = VECTOR_BYTES
    # with line=128, whether rows that start on 16-byte boundaries (off a line: 50264 bf16
    # elements) are split too; by default they stay whole, as the pipelines' other passes and
    # the tables measured them (TMA copies them; `reread` turns their second read around)
    vector_rows: bool = False

    def __post_init__(self) -> None:
        if self.line not in (VECTOR_BYTES, LINE_BYTES):
            raise ValueError(
                f"line must be {VECTOR_BYTES} (the vector) or {LINE_BYTES} (a cache line), got {self.line}"
            )

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            line = kernel.attributes.get(ROW_LINE) or self.line  # the plan's, where it sets one
            found = vector_or_reason(kernel, line, self.vector_rows)
            if isinstance(found, str):
                self.remark(kernel, found)
                continue
            vec, line, rnumel = found
            loops = [(loop, _row_accesses(loop, rnumel)) for loop in _loops(kernel)]
            narrow = self.narrow
            if narrow and any(not rows for _, rows in loops):
                narrow = False
                self.remark(kernel, READLESS)
            for loop, rows in loops:
                if rows:
                    for why in align_loop(kernel, loop, rows, rnumel, vec, narrow, line):
                        self.remark(kernel, why)
