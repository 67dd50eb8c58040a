"""band-chunks: a banded kernel's long row in column chunks, each chunk with its own column sums.

A banded kernel (a norm's backward fused with its weights' gradients: `tilec.frontend.logical`)
carries each column sum across its band of rows as a `[1, RBLOCK]` fp32 tile, and its row is one
tile: its loops over the row (the row's statistics, then dx and the column sums' parts, which
reads the row again) run once. At rows of 16384 bf16 elements that is too much for one program's
registers: LayerNorm's two column sums are 32768 fp32 values beside the row's x, dy and w, and
Triton's output for sm_90 spills (255 registers and 400 bytes of stack a thread at 8 warps).

With `chunk` set, a row longer than it and column sums of more than `column_elems` values in all,
the pass binds `RBLOCK` to `chunk` and unrolls each
loop over the row into its chunks, in order: the statistics' loop adds its chunks' parts, and the
column loop's chunks each add to a column sum of their own, carried across the band (a column sum
of a row of N in N / chunk tiles). After the band loop each chunk's sums are stored to their
columns of the workspace. The column loop reads its chunk of the row again: only the column sums
stay in registers across the band, one chunk of the row at a time beside them (`reuse` keeps
those reads, `band_chunks` in the kernel's attributes: merged into the statistics' reads they
would keep the whole row live again), and the loads in the band have no cache hints (Inductor's
evict_last on the first read and evict_first on the second cost the H100 14% of this kernel's
time: bench/results/2026-11-26-h100-square-fusion). LayerNorm at 4096x16384 on the H100: the whole
backward 74.6% of a copy in chunks of 8192 against 52.1 as one tile
(bench/results/2026-11-26-h100-band-chunks, -square-fusion). RMSNorm's one column sum of 16384 is no more than the
Triton pipeline's `column_elems=16384`: there the whole row measured as fast or faster (the
residual-fused RMSNorm read by two projections 87.4 as one tile against 76.3 in chunks).

Before (RBLOCK = 16384, chunk 8192; one column sum):
    %col = tile.for %x = ... iter_args(%acc = %zero) {
      %s = tile.for %r = %c0 to %c16384 step %rblock iter_args(%a = %z) { ... tile.yield %a_next }
      %cc = tile.for %r_1 = %c0 to %c16384 step %rblock iter_args(%acc_chunk = %acc) {
        ... tile.yield %acc_chunk_next
      }
      tile.yield %cc
    }
    tile.store %ws_ptr, %ws_offsets, %col, %column_mask
After (RBLOCK = 8192):
    %col, %col_1 = tile.for %x = ... iter_args(%acc = %zero, %acc_1 = %zero) {
      (the statistics' body at %r = 0, then at %r = 8192, the second adding to the first's sums)
      (the column body at %r_1 = 0 adding to %acc, then at %r_1 = 8192 adding to %acc_1)
      tile.yield %acc_next, %acc_next_1
    }
    tile.store %ws_ptr, %ws_offsets, %col, %column_mask
    tile.store %ws_ptr, %ws_offsets + 8192, %col_1, (%column + 8192) < rnumel
"""

from __future__ import annotations

from tilec.ir.builder import Builder
from tilec.ir.clone import clone_block
from tilec.ir.core import Kernel, Module, Value, defining_op, replace_uses
from tilec.ir.ops import CmpOp, ForOp, LoadOp, StoreOp, YieldOp
from tilec.ir.ops.common import elem_dtype
from tilec.ir.ops.control import yielded_values
from tilec.passes.base import Pass, register
from tilec.passes.plan import band_loop, row_loop_bounds
from tilec.passes.ranges import trip_count_of
from tilec.passes.rewrite import inline_block

# the kernel attribute saying its row was chunked (read by `reuse`: keep the column loop's reads)
CHUNKED = "band_chunks"


def _row_trips(loop: ForOp, chunk: int) -> int | None:
    """How many chunks of `chunk` a loop over the row (from 0, by RBLOCK) runs, else None."""
    bounds = row_loop_bounds(loop)
    if bounds is None or bounds[0] != 0 or bounds[1] < 1:
        return None
    return trip_count_of(0, bounds[1], chunk)


def _unroll(loop: ForOp, trips: int, chunk: int, carried: list[list[Value]] | None = None) -> list[list[Value]]:
    """Copies of `loop`'s body, one per chunk, in front of the loop, the induction variable the
    chunk's start; chunk c's iter args are `carried[c]`, or (None) the previous chunk's yields.
    Returns each chunk's yielded values."""
    index = elem_dtype(loop.induction_var.type)
    assert index is not None
    out: list[list[Value]] = []
    previous = list(loop.inits)
    for c in range(trips):
        offset = Builder.before(loop).constant(c * chunk, index, name_hint="roffset")
        args = carried[c] if carried is not None else previous
        previous = inline_block(loop, clone_block(loop.body, {}), [offset, *args])
        out.append(previous)
    return out


def chunk_band(kernel: Kernel, chunk: int, column_elems: int = 0) -> str | None:
    """Chunks `kernel`'s band as the module docstring says, where its column sums hold more than
    `column_elems` values; returns why not when it does not."""
    band = band_loop(kernel)
    if band is None:
        return "not a banded kernel"
    rblock = kernel.constexprs.get("RBLOCK")
    if not isinstance(rblock, int):
        return "its row tile (RBLOCK) is not bound"
    if rblock <= chunk:
        return f"its row of {rblock} elements is one chunk of {chunk}"
    if rblock % chunk:
        return f"its row tile of {rblock} is no multiple of {chunk}"
    if len(band.iter_args) * rblock <= column_elems:
        return (
            f"its {len(band.iter_args)} column sum(s) of {rblock} hold {len(band.iter_args) * rblock} values, "
            f"not more than {column_elems}"
        )
    loops = [op for op in band.body.ops if isinstance(op, ForOp)]
    sums = {id(a): j for j, a in enumerate(band.iter_args)}
    column_loops = [lp for lp in loops if any(id(v) in sums for v in lp.inits)]
    if len(column_loops) != 1:
        return "its column sums are not carried by one loop over the row"
    columns = column_loops[0]
    if any(id(v) not in sums for v in columns.inits) or len(columns.inits) != len(band.iter_args):
        return "its column loop carries more than the column sums"
    which = [sums[id(v)] for v in columns.inits]  # column sum j of each of the loop's iter args
    band_yield = yielded_values(band.body)
    if [id(v) for v in band_yield] != [id(columns.results[which.index(j)]) for j in range(len(band.iter_args))]:
        return "its band loop does not pass on the column loop's sums"
    trips = [_row_trips(lp, chunk) for lp in loops]
    if any(t is None for t in trips) or len(set(trips)) != 1:
        return "its loops over the row do not all run from 0 to the row length by RBLOCK"
    n = trips[0]
    assert n is not None
    after = band.parent
    assert after is not None
    results = {id(r): j for j, r in enumerate(band.results)}
    stores = [op for op in after.ops if isinstance(op, StoreOp) and id(op.value) in results]
    for st in stores:
        cmp = defining_op(st.mask) if st.mask is not None else None
        if not (isinstance(cmp, CmpOp) and cmp.attr("predicate") == "lt"):
            return "its workspace stores are not masked by column < row length"

    # the column sums of chunks 1.. are carried as more band arguments (chunk 0 keeps the first)
    s = len(band.iter_args)
    chunk_args: list[list[Value]] = [list(band.iter_args)]
    for c in range(1, n):  # (the first chunk's arguments: `band.iter_args` grows as they are added)
        chunk_args.append([band.body.add_arg(a.type, f"{a.name_hint}_chunk{c}") for a in chunk_args[0]])
    kernel.constexprs["RBLOCK"] = chunk
    for lp in loops:
        if lp is columns:
            per_chunk = _unroll(lp, n, chunk, [[args[j] for j in which] for args in chunk_args])
            nexts = [[per_chunk[c][which.index(j)] for j in range(s)] for c in range(n)]
        else:
            finals = _unroll(lp, n, chunk)[-1]
            for old, new in zip(lp.results, finals):
                replace_uses(kernel.body, old, new)
        lp.erase()
    old_yield = band.body.terminator
    assert old_yield is not None
    old_yield.erase()
    Builder.at_end(band.body).insert(YieldOp([v for c in range(n) for v in nexts[c]]))

    # the band loop again, with every chunk's sums as results
    zeros = list(band.inits)
    wider = ForOp(
        [band.lower, band.upper, band.step, *[zeros[j] for _ in range(n) for j in range(s)]],
        [a.type for _ in range(n) for a in chunk_args[0]],
        dict(band.attributes),
        [band.body],
        band.loc,
    )
    after.insert(after.ops.index(band), wider)
    for i, r_new in enumerate(wider.results):
        c, j = divmod(i, s)
        r_new.name_hint = f"{band.results[j].name_hint or 'column'}{f'_chunk{c}' if c else ''}"
    for r, r_new in zip(band.results, wider.results):
        replace_uses(kernel.body, r, r_new)
    band.regions.clear()
    band.erase()
    for st in stores:  # chunk 0's sums stay where they were stored; the later chunks' follow
        j = next(i for i in range(s) if st.value is wider.results[i])
        assert st.mask is not None
        cmp = defining_op(st.mask)
        assert isinstance(cmp, CmpOp)
        column, length = cmp.lhs, cmp.rhs
        length_dtype = elem_dtype(length.type)
        assert length_dtype is not None
        b = Builder.after(st)
        for c in range(1, n):
            shift = b.constant(c * chunk, length_dtype, name_hint="chunk_start")
            col = b.op("tile.add", column, shift, type=column.type, name_hint="chunk_column")
            mask = b.op("tile.cmp", col, length, type=cmp.result.type, predicate="lt", name_hint="chunk_mask")
            offs = b.op("tile.add", st.offsets, shift, type=st.offsets.type, name_hint="chunk_offsets")
            b.create("tile.store", st.ptr, offs, wider.results[c * s + j], mask)
    for op in wider.body.ops:  # no cache hints: the row is read again from L2 without them
        if isinstance(op, LoadOp):
            op.attributes.pop("eviction", None)
    kernel.attributes[CHUNKED] = n
    return None


@register
class BandChunks(Pass):
    """A banded kernel's row longer than `chunk` elements in chunks of `chunk` (0: off), where its
    column sums hold more than `column_elems` values."""

    name = "band-chunks"
    chunk: int = 0
    column_elems: int = 0

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            why = chunk_band(kernel, self.chunk, self.column_elems) if self.chunk else "chunk=0: off"
            if why is not None:
                self.remark(kernel, why)
