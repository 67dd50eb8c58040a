"""separate-reads: a CTA barrier between two reads of one shared-memory buffer, so both stay reads.

`reuse{cache=smem}` copies a row block into shared memory once and has every phase read it again
from there, so the row does not stay live in registers between phases. Triton does not know that:
its CSE merges a shared-memory load into an earlier identical one when nothing with a side effect
lies between them, and the row would be held in registers after all. This pass places a
`tile.cta_barrier` right before each `tile.smem_load` that reads the same buffer value, into the
same layout, as an earlier `tile.smem_load` of the same block with no side effect between them. A
side effect is any op that is neither pure nor a memory read: a store, a TMA copy, an mbarrier op,
a fence, a barrier (one already there, or one this pass placed: it separates every read before
it), an allocation, a loop or a conditional. Each block is scanned on its own: a loop body or a
branch starts with no earlier reads, and its reads do not count after it (the loop or conditional
is a side effect to the block around it). Reads into different layouts are different reads.

The barrier changes no value; it only keeps the reads apart. Run it last, after the last `cse`:
buffers are compared as IR values, so two equal views of one buffer that CSE has not merged yet
would look different to this pass (and equal to Triton's CSE), and a pass that rewrote the reads
after it could leave a barrier where none is needed, or none where one is. The Gluon emitter
prints the barriers where the IR has them and places none itself.

Before:
    %x1 = tile.smem_load %buf : tile<[2, 256], bf16, #blocked>
    %sq = tile.mul %x1, %x1 : tile<[2, 256], bf16, #blocked>
    %x2 = tile.smem_load %buf : tile<[2, 256], bf16, #blocked>
After:
    %x1 = tile.smem_load %buf : tile<[2, 256], bf16, #blocked>
    %sq = tile.mul %x1, %x1 : tile<[2, 256], bf16, #blocked>
    tile.cta_barrier
    %x2 = tile.smem_load %buf : tile<[2, 256], bf16, #blocked>
"""

from __future__ import annotations

from typing import Any

from tilec.ir.builder import Builder
from tilec.ir.core import Block, Module, Operation, Value
from tilec.ir.ops import CtaBarrierOp, SmemLoadOp
from tilec.passes.base import Pass, register

NOTHING_TO_SEPARATE = "no shared-memory buffer is read twice without a side effect between the reads"


def _is_effect(op: Operation) -> bool:
    """Whether `op` separates two reads for Triton's CSE: anything but pure ops and memory reads."""
    return not op.is_pure and "reads" not in op.traits


def separate_block(block: Block) -> int:
    """Places the barriers in `block` and the blocks nested in it; returns how many."""
    placed = 0
    # the reads since the last side effect in this block, by buffer value and result layout
    reads: dict[tuple[int, Any], Value] = {}
    for op in list(block.ops):
        if isinstance(op, SmemLoadOp):
            key = (id(op.buf), getattr(op.result.type, "layout", None))
            if key in reads:
                Builder(block, block.ops.index(op), loc=op.loc).create(CtaBarrierOp)
                placed += 1
                reads.clear()  # the barrier is a side effect: it separates every read before it
            reads[key] = op.buf
        for region in op.regions:
            placed += separate_block(region)
        if _is_effect(op):
            reads.clear()
    return placed


@register
class SeparateReads(Pass):
    """A CTA barrier between two reads of one shared-memory buffer with no side effect between."""

    name = "separate-reads"
    unchanged = NOTHING_TO_SEPARATE

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            if not separate_block(kernel.body):
                self.remark(kernel, NOTHING_TO_SEPARATE)
