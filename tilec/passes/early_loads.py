"""early-loads: a cluster CTA's chunks read their other inputs a few chunks ahead.

`cluster-rows` unrolls the phases after a row's statistics over a CTA's chunks: each chunk reads
its slice of the row from shared memory and, where the op has them, other inputs from global
memory (a norm's weight, one row shared by every row, so from L2), then stores its output. Each
such read waits an L2 round trip before the chunk's arithmetic can start, chunk after chunk, and
with one CTA an SM (a slice of 128 KiB) nothing else on the SM hides the wait.

This pass moves each such read `prefetch` chunks earlier (the kernel attribute a plan's `prefetch`
sets): chunk k's reads are issued where chunk k - prefetch starts, and the first chunks' before
the cluster's exchange (`tile.cluster_gather`), whose wait they then overlap. A chunk starts at
its first read of a shared-memory buffer no earlier chunk read (the first, right after the
exchange, where the row's statistics are combined). Only reads of pointers the kernel
never writes move (nothing between the old and the new place can change what they read), with the
pure index arithmetic they need that is not computed before their new place yet. The values are
the same; the reads only leave earlier, and each live value costs registers for longer: a survey
decides (RMSNorm 2048x262144 in clusters of 4 on the H100: 95.7% of a copy a chunk ahead, 94.1 in
place; LayerNorm, two such inputs, slower ahead where its registers cost a CTA an SM;
bench/results/2026-11-27-h100-early-loads).

Run after the last `cse` and `dce` (the chunks' index arithmetic merged; a later merge could pull
a moved op's operand back after it) and before `separate-reads`. Gluon only in practice (clusters).

Before (`prefetch = 1`):
    %g... = tile.cluster_gather %s {exchange = "push"} : ...
    %x0 = tile.smem_load %slice : ...
    %w0 = tile.load %in_ptr1, %cols0 : ...
    tile.store %out_ptr0, %offs0, %y0
    %x1 = tile.smem_load %slice_1 : ...
    %w1 = tile.load %in_ptr1, %cols1 : ...
    tile.store %out_ptr0, %offs1, %y1
After:
    %w0 = tile.load %in_ptr1, %cols0 : ...
    %g... = tile.cluster_gather %s {exchange = "push"} : ...
    %w1 = tile.load %in_ptr1, %cols1 : ...
    %x0 = tile.smem_load %slice : ...
    tile.store %out_ptr0, %offs0, %y0
    %x1 = tile.smem_load %slice_1 : ...
    tile.store %out_ptr0, %offs1, %y1
"""

from __future__ import annotations

from tilec.ir.core import Kernel, Module, Operation
from tilec.ir.ops import LoadOp, SmemLoadOp
from tilec.ir.types import TileType
from tilec.passes.base import Pass, register
from tilec.passes.plan import PREFETCH
from tilec.passes.rewrite import backward_slice


def written_pointers(kernel: Kernel) -> set[int]:
    """The values any op writes through (its first operand): stores, atomics, copies out."""
    return {id(op.operands[0]) for op in kernel.walk() if op.operands and not op.is_pure and "reads" not in op.traits}


def load_early(kernel: Kernel, distance: int) -> int:
    """Moves the later phases' global reads `distance` chunks ahead; returns how many moved."""
    ops = kernel.body.ops
    gathers = [op for op in ops if op.name == "tile.cluster_gather"]
    if not gathers or distance < 1:
        return 0
    gather = gathers[-1]
    after = ops[ops.index(gather) + 1 :]
    starts: list[Operation] = []  # each chunk's first read of a buffer no earlier chunk read
    seen: set[int] = set()
    for op in after:
        if isinstance(op, SmemLoadOp) and id(op.buf) not in seen:
            seen.add(id(op.buf))
            starts.append(op)
    if starts:
        starts[0] = after[0]  # the first chunk starts right after the exchange
    written = written_pointers(kernel)
    loads = [
        op
        for op in after
        if isinstance(op, LoadOp) and isinstance(op.result.type, TileType) and id(op.ptr) not in written
    ]
    moved = 0
    for load in loads:
        at = ops.index(load)
        chunk = max(0, sum(1 for s in starts if ops.index(s) <= at) - 1)
        anchor = gather if chunk < distance else starts[chunk - distance]
        place = ops.index(anchor)
        if place >= at:
            continue
        # the load and what it needs that is computed after its new place, in program order
        needed = [op for op in backward_slice(kernel.body, list(load.operands)) if ops.index(op) >= place]
        if any(not op.is_pure or op is anchor for op in needed):  # (it would have to precede itself)
            continue
        for op in [*needed, load]:
            ops.remove(op)
            kernel.body.insert(ops.index(anchor), op)
        moved += 1
    return moved


@register
class EarlyLoads(Pass):
    """A cluster plan's later phases read their other inputs `prefetch` chunks ahead."""

    name = "early-loads"
    unchanged = "no kernel asks for its reads ahead (a cluster plan's `prefetch`)"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            distance = kernel.attributes.get(PREFETCH, 0)
            if distance and not load_early(kernel, int(distance)):
                self.remark(
                    kernel, f"prefetch={distance}: no other input is read after the row's statistics are gathered"
                )
