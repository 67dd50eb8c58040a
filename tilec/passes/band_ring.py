"""band-ring: a banded kernel in chunks as one program a band whose row cache is also its prefetch.

A banded kernel (a norm's backward fused with its weights' gradients: `tilec.frontend.logical`)
whose row `band-chunks` unrolled into K chunks reads each chunk of each row input twice a row —
for the row's statistics, then for dx and the column sums — and each chunk of its weights once a
row. Here, planned one row a step (XBLOCK = 1), those reads come from shared memory:

- each row input gets K slots of a chunk (`tile.smem_alloc`, slots = K); the band's first row is
  copied into them by cp.async before the band loop (`tile.async_copy`, a group a chunk: every
  input's chunk c in group c), masked off where the band is empty;
- in the band, the first read of chunk c waits until at most K - 1 - c groups are pending
  (`tile.async_wait`), and every read of a chunk reads its slot (`tile.smem_load`); a thread
  reads back exactly the elements it copied (the copy takes the reads' layout), so its own wait
  is enough, with no barrier after it;
- after the band's last read of chunk c, a CTA barrier (every thread has read the slot), then
  the next row's chunk c is copied into the same slots (masked off past the band's end) and
  committed as a group: the next row streams in while this one is finished, K groups pending
  when the next row starts, in chunk order;
- the weights (reads that do not move with the row: the same chunk every row) are copied once
  into slots of their own before the band's first row, one group, and read from there — where
  their slots and the row inputs' fit in shared memory together; else they stay reads of global
  memory (from L2 after the first row), the row inputs' slots alone;
- after the band loop every copy is waited for.

x and dy thus come from HBM once a row and the weights once a program. On the H100
(bench/ring_bwd_probe.py, bench/results/2026-11-27-h100-ring-backward; the `gluon-ring` pipeline,
one program an SM, the column sums in registers), whole backward with the workspace's sums, % of
a copy: RMSNorm 4096x32768 85.4 (a hand-written kernel of the form 88.6, stock 59.3), 8192x16384
91.6 (92.0); LayerNorm 8192x16384 88.6 (90.4, stock 47.7).

Gluon only (cp.async, shared memory). Runs after `plan` (the buffers take the loads' shapes) and
before `canonicalize`, `cse` and `dce`, which drop the reads it replaced. It leaves a kernel with
a remark where the band is not one row a step in chunks, a read's offsets are not affine in the
row, its inputs' chunks do not pair up, or the row inputs' slots do not fit the shared memory.
Options: `smem_budget`, the bytes of shared memory the slots may take (the H100's 227 KiB);
`weights=false`, the weights' chunks never cached.

Before (K = 2; `%s` the statistics' reads, `%c` the column loop's, `%w` the weight's):
    %col = tile.for %x = %band_start to %band_end step %c1 iter_args(...) {
      %s0 = tile.load %in_ptr0, %offs_0 ; %w0 = tile.load %in_ptr1, %rindex_0 ; ...
      %c0 = tile.load %in_ptr0, %offs_0' ; ...
After:
    %in_ptr0_ring = tile.smem_alloc : smem<[1, CH], bf16, #swizzled, slots = 2>
    (the weight's slots, copied, committed; the first row's chunk 0 copied, committed; chunk 1 ...)
    %col = tile.for %x = ... {
      tile.async_wait {pending = 1} ; %s0 = tile.smem_load (slot 0) ; ...
      tile.async_wait {pending = 0} ; ...
      %c0 = tile.smem_load (slot 0) ; ... (chunk 0's last read)
      tile.cta_barrier ; tile.async_copy (slot 0), %in_ptr0, (the next row's offsets), (its mask) ;
      tile.async_commit ; ...
    }
    tile.async_wait {pending = 0}
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from tilec.ir.builder import Builder
from tilec.ir.clone import clone_op
from tilec.ir.core import Kernel, Module, Value, replace_uses
from tilec.ir.dtypes import i1, i32
from tilec.ir.expr import evaluate
from tilec.ir.ops import LoadOp
from tilec.ir.target import DEFAULT
from tilec.ir.types import TileType
from tilec.passes.affine import affine
from tilec.passes.band_chunks import CHUNKED
from tilec.passes.base import Pass, register
from tilec.passes.plan import band_loop
from tilec.passes.reuse import copy_slots, read_slot
from tilec.passes.rewrite import backward_slice, depends_on

Key = tuple[int, tuple[tuple[tuple[str, int], int], ...], int]  # (pointer id, affine terms, constant)


def _key(load: LoadOp) -> Key | None:
    """What a read of a chunk reads: its pointer and its offsets' affine form (None: not affine)."""
    form = affine(load.offsets)
    if form is None:
        return None
    return id(load.ptr), tuple(sorted(form.coeffs.items())), form.const


def ring_band(kernel: Kernel, smem_budget: int = DEFAULT.smem_per_block, weights: bool = True) -> str | None:
    """Rewrites `kernel`'s band as the module docstring says; returns why not when it does not."""
    band = band_loop(kernel)
    if band is None:
        return "not a banded kernel"
    if not kernel.attributes.get(CHUNKED):
        return "its row is not in chunks (band-chunks)"
    if kernel.constexprs.get("XBLOCK") != 1:
        return "it does not take one row a step (XBLOCK = 1)"
    rblock = kernel.constexprs.get("RBLOCK")
    if not isinstance(rblock, int):
        return "its chunk (RBLOCK) is not bound"
    body = band.body
    if any(op.regions for op in body.ops):
        return "its band holds loops or branches (the chunks are not unrolled)"
    iv = band.induction_var
    carried = [a for a in body.args if a is not iv]
    reads: dict[Key, list[LoadOp]] = defaultdict(list)
    moves: dict[Key, bool] = {}  # whether the read moves with the row (a row input) or not (a weight)
    for op in body.ops:
        if not isinstance(op, LoadOp):
            continue
        t = op.result.type
        if not (isinstance(t, TileType) and t.rank == 2 and t.shape[1] == rblock):
            continue  # a per-row value ([1, 1]: a saved statistic), read from global memory
        if op.other is not None:
            return "a chunk's read fills masked-off elements with a value of its own"
        if t.layout is None:
            return "it is not planned (its tiles have no layouts)"
        key = _key(op)
        if key is None:
            return "a chunk's offsets are not affine in the row"
        sources = [op.offsets] + ([op.mask] if op.mask is not None else [])
        if any(depends_on(v, a) for v in sources for a in carried):
            return "a chunk's offsets depend on the column sums"
        moves[key] = any(depends_on(v, iv) for v in sources)
        reads[key].append(op)
    if not reads:
        return "its band reads no chunk of a row"
    # each thread reads back exactly the elements it copied (the copy takes the reads' layout), so
    # waiting for its own copies (cp.async's groups are a thread's) is enough: no barrier after
    if any(ld.result.type != loads[0].result.type for loads in reads.values() for ld in loads):
        return "a chunk is read into different layouts"
    # each input's chunks, in the order of their first reads
    chunks: dict[int, list[Key]] = defaultdict(list)
    for key in reads:
        chunks[key[0]].append(key)
    counts = {len(keys) for keys in chunks.values()}
    if len(counts) != 1:
        return "its inputs are read in different numbers of chunks"
    k = counts.pop()
    index = {key: c for keys in chunks.values() for c, key in enumerate(keys)}
    position = {id(op): n for n, op in enumerate(body.ops)}
    rows = [key for key in reads if moves[key]]
    if not rows:
        return "its band reads no row input (every chunk is the same each row)"
    # the last read of each chunk of the row inputs, in chunk order (the groups' order)
    last = [max(position[id(ld)] for key in rows if index[key] == c for ld in reads[key]) for c in range(k)]
    if last != sorted(last):
        return "its chunks' last reads are not in chunk order"

    # the slots: K a pointer, shaped like its reads; where the row inputs' and the weights' do not
    # fit together, the row inputs' alone (the weights' chunks then read from global memory every
    # row: from L2 after the first)
    buffers = {ptr_id: copy_slots(reads[keys[0]][0], k) for ptr_id, keys in chunks.items()}
    nbytes = {p: int(evaluate(t.nbytes(), kernel.bound_constexprs())) for p, t in buffers.items()}
    if sum(nbytes.values()) > smem_budget or not weights:
        row_ptrs = {key[0] for key in rows}
        need = sum(nbytes[p] for p in row_ptrs)
        if need > smem_budget:
            inputs = len(row_ptrs)
            return f"its {k} chunks of {inputs} row inputs take {need} bytes of shared memory, more than {smem_budget}"
        for ptr_id in [p for p in chunks if p not in row_ptrs]:
            for key in chunks.pop(ptr_id):
                del reads[key]
            del buffers[ptr_id]
    b = Builder.before(band)
    slots: dict[int, Value] = {}
    for ptr_id, keys in chunks.items():
        name = f"{reads[keys[0]][0].ptr.name_hint or 'x'}_ring"
        slots[ptr_id] = b.op("tile.smem_alloc", type=buffers[ptr_id], name_hint=name)

    def slot(bld: Builder, key: Key) -> Value:
        return bld.op("tile.smem_index", slots[key[0]], bld.constant(index[key], i32, name_hint="chunk"))

    def copy(bld: Builder, key: Key, row: Value | None, valid: Value | None) -> None:
        """The copy of `key`'s chunk into its slot at `bld`, the row index `row` in place of the
        band loop's (None: a weight's, as it is), masked by the scalar `valid` as well."""
        first = reads[key][0]
        mapping: dict[int, Value] = {} if row is None else {id(iv): row}
        for op in backward_slice(body, [first.offsets] + ([first.mask] if first.mask is not None else [])):
            bld.insert(clone_op(op, mapping))
        offsets = mapping.get(id(first.offsets), first.offsets)
        mask = mapping.get(id(first.mask), first.mask) if first.mask is not None else None
        if valid is not None:
            t = offsets.type
            assert isinstance(t, TileType)
            keep = bld.op("tile.broadcast", valid, type=dataclasses.replace(t, dtype=i1), name_hint="row_ok")
            mask = keep if mask is None else bld.op("tile.and", mask, keep, type=keep.type, name_hint="copy_mask")
        bld.create("tile.async_copy", slot(bld, key), first.ptr, offsets, *([mask] if mask is not None else []))

    # before the band: the weights' chunks, one group; the band's first row, a group a chunk
    constant = [key for key in reads if not moves[key]]
    for key in constant:
        copy(b, key, None, None)
    if constant:
        b.create("tile.async_commit")
    has_rows = b.op("tile.cmp", band.lower, band.upper, type=i1, predicate="lt", name_hint="band_rows")
    for c in range(k):
        for key in rows:
            if index[key] == c:
                copy(b, key, band.lower, has_rows)
        b.create("tile.async_commit")

    # in the band: waits before each chunk's first read, the reads from the slots, the refills
    firsts = [min(position[id(ld)] for key in reads if index[key] == c for ld in reads[key]) for c in range(k)]
    waits = {firsts[c]: c for c in range(k)}
    ops = list(body.ops)
    for n, op in enumerate(ops):
        if n in waits:
            Builder.before(op).create("tile.async_wait", pending=k - 1 - waits[n])
    for key, loads in reads.items():
        for ld in loads:
            bld = Builder.before(ld)
            # (a masked-off element's copy reads nothing: the load's zero where its mask is off)
            replace_uses(kernel.body, ld.result, read_slot(bld, ld, slot(bld, key), bounds_only=False))
    for c in range(k):
        anchor = ops[last[c]]
        bld = Builder.after(anchor)
        bld.create("tile.cta_barrier")
        step = bld.op("tile.add", iv, band.step, type=iv.type, name_hint="next_row")
        more = bld.op("tile.cmp", step, band.upper, type=i1, predicate="lt", name_hint="more_rows")
        for key in rows:
            if index[key] == c:
                copy(bld, key, step, more)
        bld.create("tile.async_commit")
    for ld in (ld for loads in reads.values() for ld in loads):
        ld.erase()
    Builder.after(band).create("tile.async_wait", pending=0)
    return None


@register
class BandRing(Pass):
    """A banded kernel in chunks, one row a step: each row input's chunks cached in a ring of
    shared-memory slots refilled with the next row's chunk as it is read, the weights' chunks
    copied once (Gluon)."""

    name = "band-ring"
    smem_budget: int = DEFAULT.smem_per_block
    weights: bool = True  # the weights' chunks cached too, where they fit

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            why = ring_band(kernel, self.smem_budget, self.weights)
            if why is not None:
                self.remark(kernel, why)
