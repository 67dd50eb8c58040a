"""split-rows: a row too long for shared memory is cached in part.

`reuse{cache=smem}` caches a row block whose phases read it in loops over its chunks, but only
where the whole row block fits shared memory. A plan's `row_cache` (bytes, the kernel attribute
`row_cache`) asks for at most that much of it cached: this pass splits every loop over the row at
the first column past what fits, the same column for every phase, so that the loops over the
first part are siblings with equal bounds (which `reuse` caches, read from HBM once) and the loops
over the rest are marked `reread` (which `reuse` leaves reading global memory each phase). The
cut is a whole number of chunks (RBLOCK), counting every input `reuse` would cache (its
`find_groups`: loaded at the same offsets in sibling loops). On the GPU the rest's second read comes from L2 more
often the less of each row is in flight; and a smaller cache leaves room for more programs an SM
(a 64 KiB cache three, 128 KiB one).

It acts where the row's loops start at 0 and stop at one constant, step RBLOCK, and the cut falls
inside them; else it leaves the kernel with a remark (a row that fits its cache is cached whole by
`reuse`). Run it after `plan` (RBLOCK bound) and `peel`, before `reuse`.

Before (rows of 262144, RBLOCK 8192, row_cache 131072 bytes of bf16: 65536 columns):
    %s = tile.for %r = %c0 to %c262144 step %rblock iter_args(%a = %z) -> (...) { ... load %x ... }
    tile.for %r2 = %c0 to %c262144 step %rblock { ... load %x ... store ... }
After:
    %cached = tile.constant {value = 65536} : i32
    %s0 = tile.for %r = %c0 to %cached step %rblock iter_args(%a = %z) -> (...) { ... }
    %s = tile.for %r_1 = %cached to %c262144 step %rblock iter_args(%a_1 = %s0) -> (...) {reread = true} { ... }
    tile.for %r2 = %c0 to %cached step %rblock { ... }
    tile.for %r2_1 = %cached to %c262144 step %rblock {reread = true} { ... }
"""

from __future__ import annotations

from tilec.ir.builder import Builder
from tilec.ir.core import Kernel, Module
from tilec.ir.dtypes import i32
from tilec.ir.ops import ForOp
from tilec.ir.types import PointerType
from tilec.passes.base import Pass, register
from tilec.passes.plan import ROW_CACHE, row_loop_bounds
from tilec.passes.reuse import find_groups
from tilec.passes.rewrite import split_loop


def cached_columns(kernel: Kernel, budget: int) -> int:
    """The columns of a row block that `budget` bytes hold: whole chunks of every input `reuse`
    would cache (loaded at the same offsets in sibling loops over the row: `find_groups`)."""
    cached = {id(g.first.ptr): g.first.ptr.type for g in find_groups(kernel) if g.loops}
    per_column = (kernel.constexprs.get("XBLOCK") or 1) * sum(
        t.pointee.bytes for t in cached.values() if isinstance(t, PointerType)
    )
    rblock = kernel.constexprs.get("RBLOCK") or 1
    return budget // per_column // rblock * rblock if per_column else 0


def split_rows(kernel: Kernel, budget: int) -> str | None:
    """Splits the kernel's loops over its row at the columns `budget` bytes cache; returns why not
    when it does not."""
    rblock = kernel.constexprs.get("RBLOCK")
    bounds_of = {op: row_loop_bounds(op, rblock) for op in kernel.body.ops if isinstance(op, ForOp)}
    loops = [op for op, b in bounds_of.items() if b is not None]
    if len(loops) < 2:
        return "its row is not read in two loops over its chunks"
    bounds = {bounds_of[op] for op in loops}
    lo, n = next(iter(bounds))  # type: ignore[misc]
    if len(bounds) != 1 or lo != 0:
        return f"its loops over the row run over different ranges or not from 0 ({sorted(bounds)})"  # type: ignore[type-var]
    columns = cached_columns(kernel, budget)
    if columns == 0:
        return f"{budget} bytes of cache hold less than a chunk of every input read again"
    if columns >= n:
        return f"its row block fits {budget} bytes of cache: reuse caches it whole"
    at = Builder.before(loops[0]).constant(columns, i32, name_hint="cached")
    for loop in loops:
        rest = split_loop(kernel, loop, at)
        rest.attributes["reread"] = True
    return None


@register
class SplitRows(Pass):
    """Splits the loops over a row its shared-memory cache does not hold at the cached columns."""

    name = "split-rows"
    unchanged = "no kernel asks for part of its row cached (the plan's `row_cache`)"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            budget = kernel.attributes.get(ROW_CACHE)
            if not budget:
                continue
            why = split_rows(kernel, int(budget))
            if why is not None:
                self.remark(kernel, why)
