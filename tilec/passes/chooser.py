"""The chooser: which emitter prints a kernel, or whether stock Inductor keeps it — from measurement.

    choice = choose(kernel, hopper=True)            # a logical-form kernel
    if isinstance(choice, Decline): ...             # stock Inductor runs it; choice.reason says why
    else: choice.emitter                            # "gluon" or "triton"

A kernel is described by its `Signature`: the family of its reductions, read from the IR (what
they compute: a sum of squares as in RMSNorm, mean and variance as in LayerNorm, softmax's
max-and-sum, the same with no row written as in a cross-entropy's log-sum-exp (softmax's rules
where none of its own covers it: `FALLBACK`), sums of products as in a norm's backward, column
sums as in a weight gradient), how many inputs it reads as whole rows (one for the forward norms and softmax; a residual add or a backward kernel
reads more), the element size of those rows, its row length and the bytes of a row. `RULES` maps
signatures to the emitter that measured fastest on the H100, or to `stock` where stock Inductor's
kernel measured faster (or no slower: a tie goes to stock, whose launch costs less). `TABLES`
holds such a table per GPU it was measured on; a GPU with none never gets another GPU's rules.

`RULES` is a table of `Rule`s, one per row, with these columns:

- `family`, `elem_bytes`, `row_inputs`, `lo`, `hi`: the signatures it covers — a reduction
  family, an element size (2: bf16/fp16, 4: fp32) and a number of row inputs, over the row bytes
  from `lo` (inclusive) to `hi` (exclusive). No two rules of one family, element size and row
  inputs overlap.
- `action`: "gluon" or "triton" (tilec takes the kernel with that emitter) or "stock".
- `run`: the committed measurement the rule comes from, a path relative to bench/results/ (a
  `tilec bench` run's directory, or a `bench/variants.py` report), e.g. "2026-11-24-compute-type".
- `figures`: what that run measured, quoted — device time, % of a same-size copy, per shape:
  "MxN tilec vs stock", or "MxN a/b vs stock" where two tilec variants were measured (the comment
  above `RULES` says which, run by run); for a rule from whole models' kernels timed in place
  (`bench/rules.py --kernels`), device microseconds per kernel, "MxN tilec vs stock us". A reason cites the run and its figures (`Rule.evidence`):
  "stock Inductor measured faster for sum rows of 1024 bytes (bench/results/2026-11-24-compute-type:
  32768x512 98.9 vs 101.3; ...)". tests/passes/test_chooser.py checks that every run exists and
  holds the figures its rules quote.
- `plan`: options of the emitter's `plan` pass (rows per program, warps), where a plan variant
  measured faster than the heuristic plan; empty for the heuristic plan.

tilec takes only what a measurement says it wins: a kernel no rule covers — families, row
inputs, row sizes or element sizes never measured on the GPU (the models' pointwise kernels,
weight gradients and cross-entropy are measured on the H100 and the H200; reductions of symbolic
length and rotary embeddings of symbolic size have rules of their own: `Rule.symbolic`), kernels
drawing random numbers — stays with stock
Inductor, and the reason says so. `tilec.config.emitter` set to "gluon" or
"triton" forces that emitter for the kernels tilec takes; `tilec.config.decline = False` keeps
every kernel tilec can take (those no rule covers get the heuristic default: Gluon on Hopper,
Triton elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tilec.ir.core import Kernel, Value, defining_op
from tilec.ir.ops.memory import LoadOp, StoreOp
from tilec.ir.target import DEFAULT, H100, H200
from tilec.ir.types import TileType
from tilec.passes import repeats
from tilec.passes.plan import band_loop, reads_columns, reduction_numel, widest_row_load_bytes, x_numel
from tilec.passes.rewrite import const_value

__all__ = [
    "MIX_ORDER_FUSIONS",
    "NO_TABLE",
    "RESULTS",
    "RULES",
    "TABLES",
    "UNMEASURED",
    "Choice",
    "Decline",
    "MixOrderFusion",
    "Rule",
    "Signature",
    "choose",
    "has_table",
    "mix_order_fusion",
    "signature",
]

# Why a kernel no rule covers stays stock (a stable prefix: the rest names its signature).
UNMEASURED = "no measurement shows tilec faster than stock Inductor for"

KIB = 1024

# what a reason calls each family of pointwise kernels
POINTWISE = {
    "pointwise": "pointwise kernels",
    "pointwise-repeats": "pointwise kernels whose costly values repeat across the block (a rotary embedding's cos and sin)",
}

# Where the committed measurements are, relative to the repository root (`Rule.run` is under it).
RESULTS = "bench/results"


@dataclass(frozen=True)
class Signature:
    """What the choice depends on."""

    # "sum" (RMSNorm's sum of squares), "mean-var" (LayerNorm's), "softmax", "log-sum-exp" (softmax's
    # max and sum with no row written: a cross-entropy's forward), "sum-of-products" (a norm's backward), "column-sum" / "column-reduce" (along x: weight gradients), "mix-order" (a
    # norm's backward with its weight gradients: Inductor's mix-order reduction), "reduce", "pointwise",
    # "pointwise-repeats" (a pointwise kernel whose costly values repeat across its block: a rotary
    # embedding's cos and sin, the same for every head; the `repeats` pass computes them once)
    family: str
    rows: int | None  # M, if constant
    n: int | None  # the row length, if constant
    row_bytes: int  # n x the widest input element (0 if n is unknown)
    row_inputs: int = 1  # inputs read as whole rows ([XBLOCK, RBLOCK] tiles), each counted once
    elem_bytes: int = 2  # the widest element read as a row
    random: bool = False  # draws random numbers (dropout): Philox's arithmetic, never measured yet
    # a mix-order kernel's column sums carried across its band (RMSNorm's dW: 1; LayerNorm's dW
    # and dB: 2); 0 for other kernels
    column_sums: int = 0

    @property
    def symbolic(self) -> bool:
        """Whether what the rules range over is a symbolic size: a reduction's row length, a
        `pointwise-repeats` kernel's size (a plain pointwise kernel's rules cover every size)."""
        if self.family == "pointwise-repeats":
            return self.rows is None
        return self.n is None and not self.family.startswith("pointwise")

    def where(self) -> str:
        """What a rule's reason names: "sum rows of 4096 bytes", "pointwise kernels", with the
        element size and row inputs where they are not one row of 2-byte elements."""
        if self.family == "pointwise-repeats":
            return f"{POINTWISE[self.family]} of {self.size()}"
        if self.family.startswith("pointwise"):
            return POINTWISE[self.family]
        notes = [f"{self.elem_bytes}-byte elements"] if self.elem_bytes != 2 else []
        notes += [f"{self.row_inputs} row inputs"] if self.row_inputs != 1 else []
        notes += [f"{self.column_sums} column sums"] if self.column_sums > 1 else []
        return f"{self.family} {self.extent()}" + (f" ({', '.join(notes)})" if notes else "")

    def describe(self) -> str:
        drawing = " drawing random numbers" if self.random else ""
        if self.family == "pointwise-repeats":
            elements = "a symbolic number of" if self.rows is None else str(self.rows)
            return f"{POINTWISE[self.family]}{drawing} of {self.size()} ({elements} elements of up to {self.elem_bytes} bytes)"
        if self.family.startswith("pointwise"):
            return f"{POINTWISE[self.family]}{drawing}"
        inputs = "one row input" if self.row_inputs == 1 else f"{self.row_inputs} row inputs"
        return f"{self.family} kernels{drawing} with {inputs} of {self.elem_bytes}-byte elements, {self.extent()}"

    def size(self) -> str:
        """ "4096 bytes", "symbolic size": a `pointwise-repeats` kernel's bytes."""
        return "symbolic size" if self.rows is None else f"{self.row_bytes} bytes"

    def extent(self) -> str:
        """ "rows of 4096 bytes", "columns of symbolic length": what the reduction runs along."""
        along = "columns" if self.family.startswith("column") else "rows"
        return f"{along} of {self.row_bytes} bytes" if self.n is not None else f"{along} of symbolic length"


@dataclass(frozen=True)
class Choice:
    emitter: str  # "gluon" | "triton"
    reason: str
    plan: str = ""  # options set on the emitter's plan pass ("xblock=1,num_warps=4"), or none
    # rows of symbolic length: the plans of the shorter rows (`Rule.shorter`), launched in place of
    # `plan`'s kernel on them (tilec.runtime.launch's `split`)
    shorter: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Decline:
    reason: str


@dataclass(frozen=True)
class Rule:
    family: str
    lo: int  # row bytes, inclusive
    hi: int  # row bytes, exclusive
    action: str  # "gluon" | "triton" | "stock"
    run: str  # the measurement: a path relative to bench/results/ (a run's directory or a report)
    figures: str  # what that run measured, quoted: "MxN tilec vs stock" per shape, % of a copy
    plan: str = ""  # options for the plan pass of the action's pipeline (tilec.passes.pipelines.with_plan)
    elem_bytes: int = 2  # the element size measured (bf16/fp16 unless it says otherwise)
    row_inputs: int = 1  # the whole-row inputs of the kernels measured
    # covers kernels whose row length (a `pointwise-repeats` kernel: its size) is symbolic (no
    # bytes: `lo`, `hi` are 0 and 2**62), measured at the sizes their graphs were traced with; a
    # rule without it covers static sizes only (`Signature.symbolic`)
    symbolic: bool = False
    # a mix-order rule measured on kernels of this many column sums alone (RMSNorm's backward and
    # LayerNorm's differ there: one weight gradient or two); 0: kernels of any number
    column_sums: int = 0
    # a rule for rows of symbolic length whose plan serves its longer rows alone: (plan, below) for
    # the shorter ones, by length — a row shorter than `below` elements takes the first such plan
    # (the kernel launches one of its variants by the row length it is given); none: `plan` serves
    # every length
    shorter: tuple[tuple[str, int], ...] = ()

    @property
    def evidence(self) -> str:
        """The run and its figures, as a reason cites them."""
        return f"{RESULTS}/{self.run}: {self.figures}"

    def covers(self, sig: Signature) -> bool:
        return (
            self.family == sig.family
            and self.elem_bytes == sig.elem_bytes
            and self.row_inputs == sig.row_inputs
            and not sig.random  # no rule was measured with Philox's arithmetic in the kernel
            # a symbolic row length (a rotary's symbolic size) has no bytes: only a rule measured
            # on such kernels covers it
            and sig.symbolic == self.symbolic
            and self.lo <= sig.row_bytes < self.hi
            and self.column_sums in (0, sig.column_sums)
        )


# A GPU's table is what `bench/rules.py --plans` derives from plan surveys of both emitters on it
# (bench/plans.py: bf16 at every forward-suite shape, fp32 at two; rows that fit one tile also in
# chunks shorter than the row: `rblock=`), in the runs named, verbatim. Device time, % of a
# same-size copy, "MxN plan vs compile" (bf16 unless a rule says fp32), the plan being the one the
# rule sets (for stock: tilec's fastest of the survey's).
#
# The H100 (NVIDIA H100 80GB HBM3): the forward ops, then the residual-fused norms (two row
# inputs, two outputs: bench/plans.py --ops add_rmsnorm,add_layernorm), then the norms' backward
# where Inductor fuses it into a mix-order reduction (`bench/rules.py` on a `tilec bench --bwd`
# run at those shapes: the op's whole backward, tilec's banded kernel against stock's; two row
# inputs: x and dy; three to five: the residual-fused norms, also read by two or three projections);
# last, the models' other kernels, timed in place (figures in device microseconds: "MxN tilec vs
# stock us"; a pointwise kernel's M is its elements). First, surveys of one op's long rows alone
# (bench/plans.py --ops OP --min-row N), the newest first, each leaving the rows an earlier one
# covers to it; then the rows of 32768 and more from the survey of the long rows alone (--min-row
# 32768), its plans with the second read reversed and the rows written evict-first (`reverse`,
# `stream`: the `reread` pass) among them: all before the whole survey's rules, which decide the
# shorter rows. The runs and their order: bench/table_runs.json (bench/tables.py writes a table).
RULES: tuple[Rule, ...] = (
    # the norms' fused backward at rows of 32768 and 65536 autotuned in place with its cluster forms
    # (band-cluster): clusters of 2 at rows of 32768 (RMSNorm 0.314 ms against the ring's 0.326 at
    # 4096x32768, LayerNorm 0.351 against the banded Triton kernel's 1.085), clusters of 8 or 2 at 65536
    Rule(
        "mix-order",
        65536,
        131072,
        "gluon",
        "2026-11-28-h100-cluster-bands",
        "4096x32768 303.0 vs 4614.9 us; 8192x32768 586.6 vs 9667.4 us",
        plan="ctas=2,chunk=2048,warps=8",
        row_inputs=2,
        column_sums=1,
    ),
    Rule(
        "mix-order",
        131072,
        262144,
        "gluon",
        "2026-11-28-h100-cluster-bands",
        "2048x65536 307.1 vs 5091.2 us",
        plan="ctas=8,chunk=1024,warps=8,bands=30",
        row_inputs=2,
        column_sums=1,
    ),
    Rule(
        "mix-order",
        65536,
        131072,
        "gluon",
        "2026-11-28-h100-cluster-bands",
        "4096x32768 322.9 vs 4978.5 us; 8192x32768 627.9 vs 10447.9 us",
        plan="ctas=4,chunk=1024,warps=8,bands=60",
        row_inputs=2,
        column_sums=2,
    ),
    Rule(
        "mix-order",
        131072,
        262144,
        "gluon",
        "2026-11-28-h100-cluster-bands",
        "2048x65536 325.5 vs 5812.7 us",
        plan="ctas=8,chunk=1024,warps=8,bands=30",
        row_inputs=2,
        column_sums=2,
    ),
    Rule(
        "mix-order",
        65536,
        131072,
        "gluon",
        "2026-11-28-h100-cluster-bands",
        "4096x32768 397.1 vs 6273.2 us; 8192x32768 769.6 vs 12941.9 us",
        plan="ctas=2,chunk=2048,warps=8",
        row_inputs=3,
    ),
    Rule(
        "mix-order",
        131072,
        262144,
        "gluon",
        "2026-11-28-h100-cluster-bands",
        "2048x65536 389.1 vs 6705.7 us",
        plan="ctas=8,chunk=1024,warps=8,bands=30",
        row_inputs=3,
    ),
    # first, the long rows of all three ops from rows of 131072 (--min-row 131072), among the cluster
    # plans the fewest CTAs whose slices fit 128 KiB (clusters of 2 at 131072, of 4 at 262144),
    # whole or three quarters cached (`row_cache`: two CTAs an SM), the weight read a chunk ahead
    # (`prefetch`: early-loads)
    Rule(
        "mean-var",
        262144,
        524288,
        "gluon",
        "2026-11-27-h100-slice-cache",
        "4096x131072 94.2 vs 65.3",
        plan="xblock=1,chunk=4096,num_warps=16,cluster=4,exchange=push",
    ),
    Rule(
        "mean-var",
        524288,
        2**62,
        "gluon",
        "2026-11-27-h100-slice-cache",
        "2048x262144 86.7 vs 61.0",
        plan="xblock=1,chunk=4096,num_warps=16,cluster=8,exchange=push",
    ),
    Rule(
        "softmax",
        262144,
        524288,
        "gluon",
        "2026-11-27-h100-slice-cache",
        "4096x131072 97.1 vs 60.0; 8192x131072 98.4 vs 60.8",
        plan="xblock=1,chunk=8192,num_warps=8,cluster=2,exchange=push",
    ),
    Rule(
        "softmax",
        524288,
        2**62,
        "gluon",
        "2026-11-27-h100-slice-cache",
        "2048x262144 95.2 vs 58.8",
        plan="xblock=1,chunk=4096,num_warps=4,cluster=16,exchange=push",
    ),
    Rule(
        "sum",
        262144,
        524288,
        "gluon",
        "2026-11-27-h100-slice-cache",
        "4096x131072 100.1 vs 65.5",
        plan="xblock=1,chunk=8192,num_warps=8,cluster=4,exchange=push",
    ),
    Rule(
        "sum",
        524288,
        2**62,
        "gluon",
        "2026-11-27-h100-slice-cache",
        "2048x262144 96.1 vs 64.3",
        plan="xblock=1,chunk=8192,num_warps=16,cluster=4,row_cache=393216,exchange=push,maxnreg=64,prefetch=1",
    ),
    # first, softmax's rows of 50257 and more from a survey of those rows alone (--ops softmax
    # --min-row 50257): a misaligned row cached by cp.async in align-rows' aligned chunks, its
    # statistics kept per lane through the loops (softmax-lanes)
    Rule(
        "softmax",
        100514,
        131072,
        "gluon",
        "2026-11-27-h100-cp-async",
        "32768x50257 97.5 vs 48.1",
        plan="xblock=1,chunk=8192,num_warps=8",
    ),
    Rule(
        "softmax",
        131072,
        262144,
        "gluon",
        "2026-11-27-h100-cp-async",
        "8192x65536 99.7 vs 61.2",
        plan="xblock=1,chunk=8192,num_warps=8,cluster=2,exchange=push",
    ),
    # LayerNorm's rows of 65536 and more from a survey of those rows alone (--ops layernorm
    # --min-row 65536), the pushed exchange and clusters of 2 among its cluster plans at every length
    Rule(
        "mean-var",
        131072,
        262144,
        "gluon",
        "2026-11-27-h100-layernorm-clusters",
        "8192x65536 96.6 vs 63.3",
        plan="xblock=1,chunk=2048,num_warps=8,cluster=4,exchange=push",
    ),
    # first, RMSNorm's rows of 16384 and more from a survey of those rows alone (--ops rmsnorm
    # --min-row 16384), the sums of a cluster CTA's chunks carried as one tile (accumulate's
    # unrolled chains)
    Rule(
        "sum",
        32768,
        65536,
        "stock",
        "2026-11-27-h100-chain-sums",
        "4096x16384 100.1 vs 100.2; 16384x16384 100.8 vs 101.3",
    ),
    Rule(
        "sum",
        65536,
        100514,
        "triton",
        "2026-11-27-h100-chain-sums",
        "4096x32768 100.1 vs 96.9",
        plan="xblock=1,chunk=8192,num_warps=32,stream=true",
    ),
    Rule(
        "sum",
        100514,
        131072,
        "triton",
        "2026-11-27-h100-chain-sums",
        "32768x50257 93.8 vs 44.5",
        plan="xblock=1,chunk=16384,num_warps=16,reverse=true,stream=true",
    ),
    Rule(
        "sum",
        131072,
        262144,
        "triton",
        "2026-11-27-h100-chain-sums",
        "8192x65536 100.5 vs 70.2",
        plan="xblock=1,chunk=32768,num_warps=32,stream=true",
    ),
    # first, LayerNorm's rows of 16384 and more from a survey of those rows alone (--ops layernorm
    # --min-row 16384), its Triton loops and cluster plans keeping their statistics per lane
    # (welford-lanes) where a thread holds at most 8 elements of a chunk
    Rule(
        "mean-var",
        32768,
        65536,
        "stock",
        "2026-11-27-h100-welford-lanes",
        "4096x16384 97.9 vs 98.4; 16384x16384 100.2 vs 101.2",
    ),
    Rule(
        "mean-var",
        65536,
        100514,
        "triton",
        "2026-11-27-h100-welford-lanes",
        "4096x32768 97.5 vs 92.9",
        plan="xblock=1,chunk=8192,num_warps=32,reverse=true,stream=true",
    ),
    Rule(
        "mean-var",
        100514,
        131072,
        "triton",
        "2026-11-27-h100-welford-lanes",
        "32768x50257 68.8 vs 47.1",
        plan="xblock=1,chunk=16384,num_warps=16",
    ),
    Rule(
        "softmax",
        65536,
        100514,
        "triton",
        "2026-11-27-h100-long-rows",
        "4096x32768 98.4 vs 64.0",
        plan="xblock=1,chunk=16384,num_warps=16,reverse=true",
    ),
    Rule(
        "mean-var",
        0,
        4096,
        "stock",
        "2026-11-26-h100-narrow-ends",
        "32768x512 100.6 vs 100.6; 65536x1024 100.3 vs 99.5",
    ),
    Rule(
        "mean-var",
        4096,
        8192,
        "triton",
        "2026-11-26-h100-narrow-ends",
        "32768x2048 99.7 vs 85.8",
        plan="xblock=2,num_warps=4",
    ),
    Rule(
        "mean-var",
        8192,
        16384,
        "triton",
        "2026-11-26-h100-narrow-ends",
        "8192x4096 100.5 vs 88.4; 32768x4096 99.3 vs 87.1",
        plan="xblock=2,num_warps=16",
    ),
    Rule(
        "mean-var",
        16384,
        32768,
        "stock",
        "2026-11-26-h100-narrow-ends",
        "8192x8192 99.3 vs 99.1; 16384x8192 99.9 vs 99.9",
    ),
    Rule(
        "mean-var",
        0,
        2**62,
        "stock",
        "2026-11-26-h100-narrow-ends",
        "32768x2048 99.7 vs 100.0; 4096x16384 98.9 vs 99.1",
        elem_bytes=4,
    ),
    Rule(
        "softmax",
        0,
        2048,
        "triton",
        "2026-11-26-h100-narrow-ends",
        "32768x512 100.6 vs 99.1",
        plan="xblock=8,num_warps=8",
    ),
    Rule("softmax", 2048, 4096, "stock", "2026-11-26-h100-narrow-ends", "65536x1024 99.9 vs 99.1"),
    Rule(
        "softmax",
        4096,
        8192,
        "triton",
        "2026-11-26-h100-narrow-ends",
        "32768x2048 100.3 vs 57.7",
        plan="xblock=2,num_warps=4",
    ),
    Rule(
        "softmax",
        8192,
        32768,
        "triton",
        "2026-11-26-h100-narrow-ends",
        "8192x4096 101.7 vs 59.8; 32768x4096 99.8 vs 57.7; 8192x8192 99.4 vs 57.6; 16384x8192 99.6 vs 57.8",
        plan="xblock=1,num_warps=4",
    ),
    Rule(
        "softmax",
        32768,
        65536,
        "triton",
        "2026-11-26-h100-narrow-ends",
        "4096x16384 99.3 vs 61.3; 16384x16384 101.5 vs 63.6",
        plan="xblock=1,num_warps=32",
    ),
    Rule(
        "softmax",
        0,
        65536,
        "triton",
        "2026-11-26-h100-narrow-ends",
        "32768x2048 100.3 vs 99.1",
        plan="xblock=2,num_warps=4",
        elem_bytes=4,
    ),
    Rule("softmax", 65536, 2**62, "stock", "2026-11-26-h100-narrow-ends", "4096x16384 99.2 vs 98.5", elem_bytes=4),
    Rule("sum", 0, 4096, "stock", "2026-11-26-h100-narrow-ends", "32768x512 100.6 vs 100.2; 65536x1024 99.9 vs 99.6"),
    Rule(
        "sum",
        4096,
        8192,
        "triton",
        "2026-11-26-h100-narrow-ends",
        "32768x2048 100.6 vs 97.3",
        plan="xblock=1,num_warps=8",
    ),
    Rule(
        "sum",
        8192,
        16384,
        "triton",
        "2026-11-26-h100-narrow-ends",
        "8192x4096 101.2 vs 98.7; 32768x4096 100.1 vs 98.9",
        plan="xblock=1,rblock=2048,num_warps=8",
    ),
    Rule(
        "sum", 16384, 32768, "stock", "2026-11-26-h100-narrow-ends", "8192x8192 99.9 vs 99.8; 16384x8192 99.9 vs 99.9"
    ),
    Rule(
        "sum",
        0,
        2**62,
        "stock",
        "2026-11-26-h100-narrow-ends",
        "32768x2048 100.1 vs 100.7; 4096x16384 98.9 vs 99.4",
        elem_bytes=4,
    ),
    Rule(
        "mean-var",
        0,
        131072,
        "stock",
        "2026-11-26-h100-residual",
        "32768x512 111.4 vs 111.8; 65536x1024 101.0 vs 101.8; 32768x2048 101.3 vs 100.5; 8192x4096 104.4 vs 103.7; 32768x4096 100.0 vs 99.8; 8192x8192 100.4 vs 100.2; 16384x8192 99.7 vs 99.2; 4096x16384 99.4 vs 98.9; 16384x16384 99.2 vs 98.3; 4096x32768 98.8 vs 99.1",
        row_inputs=2,
    ),
    Rule(
        "mean-var",
        131072,
        262144,
        "triton",
        "2026-11-26-h100-residual",
        "8192x65536 97.0 vs 76.3",
        plan="xblock=1,chunk=16384,num_warps=16",
        row_inputs=2,
    ),
    Rule(
        "mean-var",
        262144,
        524288,
        "triton",
        "2026-11-26-h100-residual",
        "4096x131072 87.0 vs 74.5",
        plan="xblock=1,chunk=32768,num_warps=16",
        row_inputs=2,
    ),
    Rule(
        "mean-var",
        524288,
        2**62,
        "triton",
        "2026-11-26-h100-residual",
        "2048x262144 76.2 vs 74.5",
        plan="xblock=1,chunk=16384,num_warps=16",
        row_inputs=2,
    ),
    Rule(
        "sum",
        0,
        131072,
        "stock",
        "2026-11-26-h100-residual",
        "32768x512 111.0 vs 113.1; 65536x1024 101.5 vs 102.9; 32768x2048 101.1 vs 100.5; 8192x4096 104.6 vs 105.2; 32768x4096 100.0 vs 100.1; 8192x8192 101.0 vs 100.6; 16384x8192 99.9 vs 99.2; 4096x16384 100.3 vs 100.0; 16384x16384 99.9 vs 98.9; 4096x32768 99.7 vs 99.6",
        row_inputs=2,
    ),
    Rule(
        "sum",
        131072,
        2**62,
        "triton",
        "2026-11-26-h100-residual",
        "8192x65536 97.9 vs 76.8; 4096x131072 87.6 vs 75.6; 2048x262144 76.3 vs 75.0",
        plan="xblock=1,chunk=16384,num_warps=16",
        row_inputs=2,
    ),
    # Then the norms' backward over rows of 16384 and 32768 fused into one mix-order kernel, its Gluon ring form (band-ring) among the autotuner's candidates: `bench/rules.py --kernels RUN --families mix-order` on `tilec bench --bwd` runs with the autotuner on, each mix-order kernel timed in place against stock's and the banded Triton kernel's, device microseconds: RMSNorm, plain and residual-fused, 4096 and 8192 rows of 16384 and 32768; then LayerNorm, plain and residual-fused, and the residual-fused RMSNorm read by two projections, rows of 8192 and 16384. Before the fan-out run, whose rules cover the mix-order rows these runs do not
    Rule(
        "mix-order",
        32768,
        65536,
        "gluon",
        "2026-11-28-h100-ring-fusion",
        "4096x16384 159.6 vs 172.9 us; 8192x16384 299.9 vs 330.5 us",
        row_inputs=2,
    ),
    Rule(
        "mix-order",
        32768,
        65536,
        "gluon",
        "2026-11-28-h100-ring-fusion",
        "4096x16384 204.0 vs 256.2 us; 8192x16384 382.9 vs 495.9 us",
        row_inputs=3,
    ),
    Rule(
        "mix-order",
        16384,
        32768,
        "triton",
        "2026-11-28-h100-ring-kernels",
        "8192x8192 153.2 vs 195.8 us",
        row_inputs=2,
        column_sums=1,
    ),
    Rule(
        "mix-order",
        16384,
        32768,
        "triton",
        "2026-11-28-h100-ring-kernels",
        "8192x8192 157.1 vs 229.4 us",
        row_inputs=2,
        column_sums=2,
    ),
    Rule(
        "mix-order", 16384, 32768, "triton", "2026-11-28-h100-ring-kernels", "8192x8192 216.2 vs 263.8 us", row_inputs=3
    ),
    Rule(
        "mix-order", 16384, 32768, "triton", "2026-11-28-h100-ring-kernels", "8192x8192 247.0 vs 266.3 us", row_inputs=4
    ),
    Rule(
        "mix-order",
        32768,
        65536,
        "gluon",
        "2026-11-28-h100-ring-kernels",
        "4096x16384 250.5 vs 307.3 us; 8192x16384 479.9 vs 599.9 us",
        row_inputs=4,
    ),
    Rule(
        "mix-order",
        0,
        16384,
        "triton",
        "2026-11-26-h100-fanout",
        "4096x2048 75.6 vs 59.3; 8192x2048 80.5 vs 70.9; 16384x2048 86.3 vs 77.5; 32768x2048 89.5 vs 80.4; 4096x2048 59.9 vs 46.3; 8192x2048 68.0 vs 55.6; 16384x2048 76.9 vs 67.7; 32768x2048 83.6 vs 72.0; 4096x2048 74.9 vs 58.8; 8192x2048 80.1 vs 70.2; 16384x2048 86.1 vs 77.5; 32768x2048 89.4 vs 80.4; 8192x4096 85.1 vs 72.2; 16384x4096 88.8 vs 80.9; 32768x4096 92.2 vs 83.1; 8192x4096 78.0 vs 58.7; 16384x4096 83.8 vs 70.5; 32768x4096 89.6 vs 73.3; 8192x4096 85.8 vs 71.9; 16384x4096 90.1 vs 81.1; 32768x4096 92.2 vs 83.0",
        row_inputs=2,
    ),
    Rule(
        "mix-order",
        262144,
        2**62,
        "triton",
        "2026-11-26-h100-fanout",
        "4096x2048 75.6 vs 59.3; 8192x2048 80.5 vs 70.9; 16384x2048 86.3 vs 77.5; 32768x2048 89.5 vs 80.4; 4096x2048 59.9 vs 46.3; 8192x2048 68.0 vs 55.6; 16384x2048 76.9 vs 67.7; 32768x2048 83.6 vs 72.0; 4096x2048 74.9 vs 58.8; 8192x2048 80.1 vs 70.2; 16384x2048 86.1 vs 77.5; 32768x2048 89.4 vs 80.4; 8192x4096 85.1 vs 72.2; 16384x4096 88.8 vs 80.9; 32768x4096 92.2 vs 83.1; 8192x4096 78.0 vs 58.7; 16384x4096 83.8 vs 70.5; 32768x4096 89.6 vs 73.3; 8192x4096 85.8 vs 71.9; 16384x4096 90.1 vs 81.1; 32768x4096 92.2 vs 83.0",
        row_inputs=2,
    ),
    Rule(
        "mix-order",
        0,
        16384,
        "triton",
        "2026-11-26-h100-fanout",
        "4096x2048 69.1 vs 56.1; 8192x2048 76.4 vs 65.0; 32768x2048 88.2 vs 78.9; 4096x2048 83.0 vs 67.4; 8192x2048 86.9 vs 78.6; 32768x2048 92.2 vs 88.2; 8192x4096 83.0 vs 67.6; 16384x4096 88.3 vs 78.8; 8192x4096 90.2 vs 79.3; 16384x4096 92.4 vs 86.9",
        row_inputs=3,
    ),
    Rule(
        "mix-order",
        262144,
        2**62,
        "triton",
        "2026-11-26-h100-fanout",
        "4096x2048 69.1 vs 56.1; 8192x2048 76.4 vs 65.0; 32768x2048 88.2 vs 78.9; 4096x2048 83.0 vs 67.4; 8192x2048 86.9 vs 78.6; 32768x2048 92.2 vs 88.2; 8192x4096 83.0 vs 67.6; 16384x4096 88.3 vs 78.8; 8192x4096 90.2 vs 79.3; 16384x4096 92.4 vs 86.9",
        row_inputs=3,
    ),
    Rule(
        "mix-order",
        0,
        16384,
        "triton",
        "2026-11-26-h100-fanout",
        "4096x2048 90.7 vs 76.3; 8192x2048 92.6 vs 84.5; 32768x2048 95.7 vs 91.8; 4096x2048 77.9 vs 64.2; 8192x2048 83.3 vs 71.7; 32768x2048 92.1 vs 84.4; 4096x2048 90.0 vs 75.1; 8192x2048 92.0 vs 85.0; 32768x2048 95.4 vs 91.4; 8192x4096 94.4 vs 85.7; 16384x4096 94.8 vs 91.3; 8192x4096 88.4 vs 74.4; 16384x4096 91.4 vs 84.0; 8192x4096 94.2 vs 85.7; 16384x4096 95.1 vs 91.7",
        row_inputs=4,
    ),
    Rule(
        "mix-order",
        65536,
        2**62,
        "triton",
        "2026-11-26-h100-fanout",
        "4096x2048 90.7 vs 76.3; 8192x2048 92.6 vs 84.5; 32768x2048 95.7 vs 91.8; 4096x2048 77.9 vs 64.2; 8192x2048 83.3 vs 71.7; 32768x2048 92.1 vs 84.4; 4096x2048 90.0 vs 75.1; 8192x2048 92.0 vs 85.0; 32768x2048 95.4 vs 91.4; 8192x4096 94.4 vs 85.7; 16384x4096 94.8 vs 91.3; 8192x4096 88.4 vs 74.4; 16384x4096 91.4 vs 84.0; 8192x4096 94.2 vs 85.7; 16384x4096 95.1 vs 91.7",
        row_inputs=4,
    ),
    Rule(
        "mix-order",
        0,
        2**62,
        "triton",
        "2026-11-26-h100-fanout",
        "4096x2048 93.9 vs 84.8; 8192x2048 95.7 vs 89.9; 32768x2048 96.8 vs 94.3; 4096x2048 93.6 vs 84.7; 8192x2048 95.4 vs 89.4; 32768x2048 96.2 vs 93.9; 8192x4096 96.1 vs 89.7; 16384x4096 96.9 vs 94.9; 8192x4096 96.2 vs 89.7; 16384x4096 96.8 vs 94.8; 16384x8192 96.2 vs 94.4; 16384x8192 96.7 vs 94.4; 32768x16384 88.9 vs 75.2; 32768x16384 89.5 vs 72.5",
        row_inputs=5,
    ),
    # Then the kernels of whole models no suite op measures (`bench/rules.py --kernels` on the
    # `tilec bench --models --autotune` runs there: Llama, GPT-2 and Gemma at the default and small
    # sizes, inference and a training step, twice; and a training step with `--dynamic`, where the
    # tokens are a symbolic size; each kernel timed in place against stock's, device microseconds):
    # pointwise kernels, norms read with three or four rows, weight and bias gradients (column
    # sums, also over a symbolic number of tokens: `symbolic=True`), cross-entropy, the embedding's
    # gradient fused into a norm's backward.
    Rule(
        "column-sum",
        0,
        2**62,
        "stock",
        "2026-11-26-h100-model-kernels",
        "131072x192 28.1 vs 26.2 us; 131072x192 28.2 vs 26.3 us; 131072x256 34.9 vs 33.5 us; 131072x256 34.9 vs 33.5 us",
        symbolic=True,
    ),
    Rule(
        "column-sum",
        256,
        1024,
        "stock",
        "2026-11-26-h100-model-kernels",
        "196608x128 30.8 vs 24.4 us; 196608x128 30.6 vs 24.5 us; 98304x128 19.1 vs 15.5 us; 131072x128 22.5 vs 18.9 us",
    ),
    Rule(
        "column-sum",
        64,
        128,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "2048x16 4.6 vs 5.6 us; 2048x16 4.5 vs 5.6 us; 8192x16 4.8 vs 5.8 us; 6144x16 4.9 vs 5.7 us; 2048x16 4.6 vs 5.5 us; 2048x16 4.6 vs 5.6 us; 8192x16 5.0 vs 5.9 us; 8192x16 5.1 vs 6.0 us; 2048x24 4.7 vs 5.7 us; 2048x24 4.7 vs 5.7 us; 6144x24 4.9 vs 5.8 us; 2048x24 4.7 vs 5.6 us; 2048x24 4.6 vs 5.6 us",
        elem_bytes=4,
    ),
    Rule(
        "column-sum",
        128,
        256,
        "triton",
        "2026-11-26-h100-model-kernels",
        "2048x32 4.8 vs 5.8 us; 6144x32 5.0 vs 5.9 us; 2048x32 4.9 vs 5.7 us; 6144x32 5.1 vs 6.1 us; 2048x32 5.0 vs 5.9 us; 6144x32 5.2 vs 6.1 us",
        elem_bytes=4,
    ),
    Rule(
        "column-sum",
        256,
        512,
        "triton",
        "2026-11-26-h100-model-kernels",
        "8192x128 9.1 vs 10.0 us; 8192x128 9.2 vs 9.9 us",
        row_inputs=2,
    ),
    Rule(
        "column-sum",
        512,
        1024,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "2048x128 5.5 vs 5.9 us; 2048x128 5.7 vs 6.5 us; 2048x128 5.4 vs 5.9 us; 2048x128 5.5 vs 6.0 us; 2048x128 5.8 vs 6.7 us; 2048x128 5.6 vs 5.9 us",
        elem_bytes=4,
        row_inputs=2,
    ),
    Rule(
        "column-sum",
        0,
        2**62,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "49152x128 17.0 vs 75.8 us; 49152x128 17.2 vs 75.6 us",
        elem_bytes=4,
        row_inputs=3,
        symbolic=True,
    ),
    Rule(
        "column-sum",
        512,
        1024,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "32768x128 13.0 vs 13.5 us; 2048x128 5.8 vs 6.2 us; 2048x128 6.4 vs 7.0 us; 2048x128 5.7 vs 6.3 us; 2048x128 6.0 vs 6.4 us; 2048x128 6.5 vs 6.9 us; 2048x128 5.9 vs 6.3 us",
        elem_bytes=4,
        row_inputs=3,
    ),
    Rule(
        "column-sum",
        0,
        2**62,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "49152x128 21.9 vs 76.1 us; 49152x128 22.0 vs 75.8 us; 49152x128 21.9 vs 76.0 us; 49152x128 21.6 vs 79.9 us; 49152x128 21.6 vs 79.8 us; 49152x128 21.6 vs 79.8 us",
        elem_bytes=4,
        row_inputs=4,
        symbolic=True,
    ),
    Rule(
        "column-sum",
        512,
        1024,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "32768x128 15.8 vs 18.0 us; 32768x128 16.0 vs 17.3 us; 2048x128 6.6 vs 7.4 us; 2048x128 6.6 vs 7.5 us; 2048x128 6.6 vs 7.7 us; 2048x128 6.8 vs 7.6 us; 2048x128 6.8 vs 7.4 us; 2048x128 6.8 vs 8.0 us",
        elem_bytes=4,
        row_inputs=4,
    ),
    Rule(
        "column-sum",
        256,
        512,
        "stock",
        "2026-11-26-h100-model-kernels",
        "6144x128 6.8 vs 6.2 us; 6144x128 6.7 vs 6.1 us",
        row_inputs=5,
    ),
    Rule(
        "column-sum",
        0,
        2**62,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "49152x128 30.3 vs 80.1 us; 49152x128 28.1 vs 80.3 us; 49152x128 23.4 vs 82.3 us; 49152x128 23.4 vs 82.4 us",
        elem_bytes=4,
        row_inputs=5,
        symbolic=True,
    ),
    Rule(
        "column-sum",
        512,
        1024,
        "stock",
        "2026-11-26-h100-model-kernels",
        "32768x128 20.0 vs 19.3 us; 32768x128 19.6 vs 21.5 us; 32768x128 17.3 vs 19.1 us; 32768x128 19.3 vs 21.6 us",
        elem_bytes=4,
        row_inputs=5,
    ),
    Rule(
        "column-sum",
        0,
        2**62,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "49152x128 23.5 vs 83.2 us",
        elem_bytes=4,
        row_inputs=6,
        symbolic=True,
    ),
    Rule(
        "column-sum",
        512,
        1024,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "2048x128 7.7 vs 9.4 us; 2048x128 7.7 vs 9.5 us",
        elem_bytes=4,
        row_inputs=7,
    ),
    Rule(
        "column-sum",
        0,
        2**62,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "49152x128 43.5 vs 91.1 us",
        elem_bytes=4,
        row_inputs=9,
        symbolic=True,
    ),
    Rule(
        "column-sum",
        512,
        1024,
        "triton",
        "2026-11-26-h100-model-kernels",
        "32768x128 29.6 vs 35.5 us",
        elem_bytes=4,
        row_inputs=9,
    ),
    Rule(
        "mean-var",
        4096,
        8192,
        "stock",
        "2026-11-26-h100-model-kernels",
        "4096x2048 34.3 vs 29.3 us; 4096x2048 34.2 vs 29.3 us; 128x2048 6.8 vs 6.1 us; 128x2048 6.4 vs 5.8 us",
        row_inputs=3,
    ),
    Rule(
        "mean-var",
        4096,
        8192,
        "stock",
        "2026-11-26-h100-model-kernels",
        "4096x2048 36.6 vs 32.7 us; 4096x2048 36.7 vs 34.3 us; 128x2048 6.7 vs 7.1 us; 128x2048 6.7 vs 7.3 us",
        row_inputs=4,
    ),
    Rule(
        "mix-order",
        4096,
        8192,
        "triton",
        "2026-11-26-h100-model-kernels",
        "4096x2048 71.8 vs 94.2 us; 4096x2048 73.9 vs 94.5 us",
        row_inputs=8,
    ),
    Rule(
        "pointwise",
        0,
        2**62,
        "stock",
        "2026-11-26-h100-model-kernels",
        "205881344x1 1320.7 vs 420.8 us; 154411008x1 991.9 vs 317.1 us; 23068672x1 238.2 vs 81.6 us; 23068672x1 238.0 vs 81.6 us",
        elem_bytes=4,
        row_inputs=0,
    ),
    Rule(
        "reduce",
        8192,
        16384,
        "stock",
        "2026-11-26-h100-model-kernels",
        "512x8000 8.6 vs 8.7 us; 512x8000 8.6 vs 8.9 us; 896x7180 10.7 vs 13.9 us; 896x7180 10.9 vs 14.3 us",
    ),
    Rule(
        "reduce",
        16,
        32,
        "stock",
        "2026-11-26-h100-model-kernels",
        "128x7 4.5 vs 4.4 us; 128x7 4.6 vs 4.5 us; 128x4 4.4 vs 4.3 us; 128x4 4.2 vs 4.2 us",
        elem_bytes=4,
    ),
    Rule(
        "sum",
        4096,
        8192,
        "stock",
        "2026-11-26-h100-model-kernels",
        "128x2048 6.5 vs 5.2 us; 128x2048 6.3 vs 5.2 us; 128x2048 6.0 vs 5.4 us; 128x2048 6.6 vs 6.1 us",
        row_inputs=3,
    ),
    Rule(
        "sum",
        4096,
        8192,
        "stock",
        "2026-11-26-h100-model-kernels",
        "128x2048 6.7 vs 6.4 us; 128x2048 6.7 vs 6.6 us; 4096x2048 35.3 vs 34.8 us; 4096x2048 35.3 vs 34.9 us",
        row_inputs=4,
    ),
    Rule(
        "sum-of-products",
        0,
        2**62,
        "stock",
        "2026-11-26-h100-model-kernels",
        "1x3072 11.4 vs 9.6 us; 1x3072 11.4 vs 9.7 us; 1x3072 11.3 vs 9.8 us",
        elem_bytes=8,
        row_inputs=0,
        symbolic=True,
    ),
    Rule(
        "sum-of-products",
        1024,
        2048,
        "gluon",
        "2026-11-26-h100-model-kernels",
        "1x128 4.6 vs 5.1 us; 1x128 4.7 vs 5.3 us; 1x128 4.9 vs 5.3 us; 1x128 4.9 vs 5.3 us",
        elem_bytes=8,
        row_inputs=0,
    ),
    Rule(
        "sum-of-products",
        16384,
        65536,
        "stock",
        "2026-11-26-h100-model-kernels",
        "1x2048 7.6 vs 6.9 us; 1x2048 7.5 vs 6.9 us; 1x4096 9.8 vs 9.9 us; 1x4096 9.6 vs 9.9 us",
        elem_bytes=8,
        row_inputs=0,
    ),
    Rule(
        "sum-of-products",
        8192,
        16384,
        "stock",
        "2026-11-26-h100-model-kernels",
        "512x8000 8.7 vs 8.8 us; 512x8000 8.8 vs 8.8 us",
    ),
    Rule(
        "sum-of-products",
        65536,
        131072,
        "triton",
        "2026-11-26-h100-model-kernels",
        "2048x50257 171.4 vs 237.4 us; 4096x50257 331.2 vs 436.9 us; 128x50257 18.8 vs 29.1 us; 4096x50257 331.6 vs 438.3 us; 128x50257 19.0 vs 28.9 us",
    ),
    Rule(
        "sum-of-products",
        131072,
        262144,
        "triton",
        "2026-11-26-h100-model-kernels",
        "3072x50257 352.2 vs 606.6 us",
        plan="xblock=1,chunk=32768,num_warps=32",
        elem_bytes=4,
    ),
    Rule(
        "sum-of-products",
        4096,
        8192,
        "stock",
        "2026-11-26-h100-model-kernels",
        "128x2048 5.6 vs 5.0 us; 128x2048 5.6 vs 5.0 us; 128x2048 5.7 vs 5.2 us; 128x2048 5.7 vs 5.3 us",
        row_inputs=2,
    ),
    Rule(
        "sum-of-products",
        32768,
        65536,
        "triton",
        "2026-11-26-h100-model-kernels",
        "2048x32000 145.6 vs 154.4 us; 3072x32000 210.8 vs 223.1 us; 4096x32000 278.0 vs 290.8 us; 3072x32000 210.6 vs 220.7 us; 4096x32000 277.3 vs 292.6 us; 4096x32000 282.8 vs 303.1 us; 128x32000 14.9 vs 19.6 us; 4096x32000 283.3 vs 299.7 us; 128x32000 14.9 vs 19.6 us",
        plan="xblock=1,chunk=32768,num_warps=32",
        row_inputs=2,
    ),
    Rule(
        "sum-of-products",
        16384,
        32768,
        "triton",
        "2026-11-26-h100-model-kernels",
        "896x7180 10.9 vs 14.6 us; 896x7180 11.2 vs 14.5 us",
        elem_bytes=4,
        row_inputs=2,
    ),
    Rule(
        "sum-of-products",
        4096,
        8192,
        "stock",
        "2026-11-26-h100-model-kernels",
        "128x2048 6.1 vs 5.4 us; 128x2048 6.4 vs 5.8 us; 128x2048 6.2 vs 5.6 us; 128x2048 6.4 vs 6.0 us",
        row_inputs=3,
    ),
    Rule(
        "sum-of-products",
        4096,
        8192,
        "stock",
        "2026-11-26-h100-model-kernels",
        "128x2048 6.9 vs 6.0 us; 128x2048 6.7 vs 5.8 us; 128x2048 6.7 vs 5.9 us; 128x2048 6.5 vs 5.8 us",
        row_inputs=4,
    ),
    Rule(
        "sum-of-products",
        4096,
        8192,
        "stock",
        "2026-11-26-h100-model-kernels",
        "128x2048 7.2 vs 6.1 us; 128x2048 7.2 vs 6.1 us; 128x2048 7.2 vs 6.1 us; 128x2048 7.3 vs 6.2 us",
        row_inputs=5,
    ),
    # Then the cross-entropy's kernels over rows of 32000 to 256000 logits, one row input (the loss
    # of `tilec bench --bwd`'s cross_entropy_train: `bench/rules.py --kernels` on its run with the
    # autotuner on, 4096 and 8192 rows, each kernel timed in place against stock's, device
    # microseconds): the forward's log-sum-exp, the backward, and the count of the rows not
    # ignored (8-byte sums).
    Rule(
        "log-sum-exp",
        32768,
        65536,
        "triton",
        "2026-11-26-h100-cross-entropy-kernels",
        "4096x32000 97.9 vs 193.1 us; 8192x32000 188.1 vs 369.9 us",
        plan="xblock=1,chunk=16384,num_warps=16",
    ),
    Rule(
        "log-sum-exp", 65536, 131072, "gluon", "2026-11-26-h100-cross-entropy-kernels", "8192x50257 319.2 vs 636.8 us"
    ),
    Rule(
        "log-sum-exp",
        131072,
        524288,
        "triton",
        "2026-11-26-h100-cross-entropy-kernels",
        "4096x128256 376.5 vs 683.4 us; 8192x128256 731.5 vs 1326.2 us; 4096x256000 736.3 vs 1298.7 us; 8192x256000 1434.5 vs 2528.2 us",
        plan="xblock=1,chunk=16384,num_warps=16",
    ),
    Rule(
        "sum-of-products",
        65536,
        131072,
        "gluon",
        "2026-11-26-h100-cross-entropy-kernels",
        "1x8192 12.2 vs 13.3 us; 1x8192 12.3 vs 12.9 us; 1x8192 12.3 vs 13.3 us; 1x8192 12.4 vs 13.2 us",
        elem_bytes=8,
        row_inputs=0,
    ),
    Rule(
        "sum-of-products",
        32768,
        65536,
        "triton",
        "2026-11-26-h100-cross-entropy-kernels",
        "4096x32000 185.6 vs 202.8 us; 8192x32000 363.1 vs 394.0 us",
    ),
    Rule(
        "sum-of-products",
        131072,
        262144,
        "triton",
        "2026-11-26-h100-cross-entropy-kernels",
        "4096x128256 745.0 vs 783.0 us; 8192x128256 1464.9 vs 1533.4 us",
        plan="xblock=1,chunk=32768,num_warps=32",
    ),
    Rule(
        "sum-of-products",
        262144,
        524288,
        "triton",
        "2026-11-26-h100-cross-entropy-kernels",
        "4096x256000 1488.0 vs 1882.8 us; 8192x256000 2953.7 vs 3675.0 us",
        plan="xblock=1,chunk=16384,num_warps=16",
    ),
    # Then the norms' backward over rows of 32768 and 65536, which Inductor leaves unfused (dx,
    # and the weights' gradients as column sums): `bench/rules.py --kernels` on a `tilec bench
    # --bwd` run with the autotuner on (RMSNorm and LayerNorm, plain and residual-fused, 4096x32768,
    # 8192x32768 and 2048x65536), each kernel timed in place against stock's, device microseconds.
    Rule(
        "column-sum",
        8192,
        65536,
        "gluon",
        "2026-11-26-h100-long-bwd-kernels",
        "65536x2048 194.2 vs 199.2 us; 65536x2048 199.5 vs 209.2 us; 32768x4096 197.5 vs 201.5 us; 32768x4096 199.3 vs 210.6 us; 32768x8192 383.8 vs 398.0 us; 32768x8192 392.5 vs 403.6 us",
        elem_bytes=4,
        row_inputs=2,
    ),
    Rule(
        "mean-var",
        65536,
        131072,
        "stock",
        "2026-11-26-h100-long-bwd-kernels",
        "4096x32768 368.9 vs 367.9 us; 8192x32768 728.2 vs 727.0 us",
        row_inputs=3,
    ),
    Rule(
        "mean-var",
        131072,
        262144,
        "triton",
        "2026-11-26-h100-long-bwd-kernels",
        "2048x65536 376.6 vs 477.6 us",
        plan="xblock=1,chunk=16384,num_warps=16",
        row_inputs=3,
    ),
    Rule(
        "sum",
        65536,
        131072,
        "stock",
        "2026-11-26-h100-long-bwd-kernels",
        "4096x32768 365.7 vs 365.5 us; 8192x32768 722.4 vs 722.4 us",
        row_inputs=3,
    ),
    Rule(
        "sum",
        131072,
        262144,
        "triton",
        "2026-11-26-h100-long-bwd-kernels",
        "2048x65536 370.9 vs 474.8 us",
        plan="xblock=1,chunk=16384,num_warps=16",
        row_inputs=3,
    ),
    Rule(
        "sum-of-products",
        65536,
        131072,
        "triton",
        "2026-11-26-h100-long-bwd-kernels",
        "4096x32768 269.5 vs 276.1 us; 8192x32768 529.9 vs 539.5 us; 4096x32768 316.0 vs 460.3 us; 8192x32768 593.3 vs 902.4 us",
        plan="xblock=1,chunk=8192,num_warps=32",
        row_inputs=2,
    ),
    Rule(
        "sum-of-products",
        131072,
        262144,
        "triton",
        "2026-11-26-h100-long-bwd-kernels",
        "2048x65536 381.3 vs 451.1 us; 2048x65536 363.2 vs 466.9 us",
        plan="xblock=1,chunk=16384,num_warps=16",
        row_inputs=2,
    ),
    Rule(
        "sum-of-products",
        65536,
        131072,
        "triton",
        "2026-11-26-h100-long-bwd-kernels",
        "4096x32768 357.6 vs 517.5 us; 8192x32768 701.7 vs 1029.9 us; 4096x32768 363.4 vs 552.1 us; 8192x32768 712.8 vs 1078.9 us",
        plan="xblock=1,chunk=8192,num_warps=32",
        row_inputs=3,
    ),
    Rule(
        "sum-of-products",
        131072,
        262144,
        "triton",
        "2026-11-26-h100-long-bwd-kernels",
        "2048x65536 470.0 vs 544.2 us; 2048x65536 435.6 vs 554.2 us",
        plan="xblock=1,chunk=16384,num_warps=16",
        row_inputs=3,
    ),
    # Then the models' training step at vocabularies of 128256 and 256000 (`tilec bench --models
    # --autotune --vocab V`, Llama, GPT-2 and Gemma, `bench/rules.py --kernels`): the loss's
    # backward of two row inputs over rows of 256000 (Llama's and Gemma's; at 128256 the rule above,
    # measured on the norms' dx, gives the plan the autotuner picked there too).
    Rule(
        "sum-of-products",
        262144,
        524288,
        "triton",
        "2026-11-26-h100-vocab-kernels",
        "4096x256000 2223.3 vs 2341.1 us",
        plan="xblock=1,chunk=16384,num_warps=16",
        row_inputs=2,
    ),
    # Then the rotary embeddings with their cos and sin computed once a column (the `repeats` pass;
    # `tilec bench --models --autotune`, Llama and Gemma at the default and small sizes): at 4 x 1024
    # tokens forward and backward 1.3-2x faster than stock (the backward's head-major
    # kernel with rows a head apart); over 128 tokens the forward ties.
    Rule(
        "pointwise-repeats",
        1048576,
        2097152,
        "stock",
        "2026-11-26-h100-rotary-heads",
        "262144x1 6.2 vs 6.2 us; 262144x1 6.7 vs 7.0 us; 262144x1 6.3 vs 7.1 us",
        elem_bytes=4,
        row_inputs=0,
    ),
    Rule(
        "pointwise-repeats",
        33554432,
        67108864,
        "triton",
        "2026-11-26-h100-rotary-heads",
        "8388608x1 26.4 vs 34.8 us; 8388608x1 30.1 vs 47.1 us; 8388608x1 21.8 vs 43.0 us",
        elem_bytes=4,
        row_inputs=0,
    ),
    # Then the rotary embeddings over a symbolic number of tokens (`repeats` over a symbolic size;
    # `tilec bench --models --autotune --dynamic`, Llama and Gemma training: the graphs traced at
    # 512 and 768 tokens, then the symbolic one timed at 1024), and the static ones of those first
    # two graphs.
    Rule(
        "pointwise-repeats",
        0,
        2**62,
        "triton",
        "2026-11-27-h100-dynamic-rotary",
        "6291456x1 22.0 vs 29.6 us; 6291456x1 21.9 vs 29.7 us; 6291456x1 18.0 vs 35.2 us; 6291456x1 18.0 vs 35.4 us; 8388608x1 21.5 vs 44.8 us; 8388608x1 21.7 vs 44.7 us; 6291456x1 22.1 vs 29.9 us; 6291456x1 18.0 vs 35.5 us; 6291456x1 18.0 vs 35.6 us; 8388608x1 21.8 vs 44.7 us; 8388608x1 21.6 vs 44.7 us",
        elem_bytes=4,
        row_inputs=0,
        symbolic=True,
    ),
    Rule(
        "pointwise-repeats",
        16777216,
        33554432,
        "triton",
        "2026-11-27-h100-dynamic-rotary",
        "4194304x1 14.7 vs 19.8 us; 4194304x1 17.1 vs 26.5 us; 4194304x1 13.5 vs 24.5 us",
        elem_bytes=4,
        row_inputs=0,
    ),
)


def _through(v: Value) -> Value:
    """`v` with casts, broadcasts and layout conversions looked through."""
    op = defining_op(v)
    while op is not None and op.name in ("tile.cast", "tile.broadcast", "tile.convert_layout"):
        v = op.operands[0]
        op = defining_op(v)
    return v


def _plain(v: Value) -> bool:
    """Whether `v` is loaded values, or sums and differences of them (a residual stream `x + r`,
    a centred row `x - mean`): what a norm reduces, as against a product of two inputs."""
    op = defining_op(_through(v))
    if isinstance(op, LoadOp):
        return True
    return op is not None and op.name in ("tile.add", "tile.sub") and all(_plain(o) for o in op.operands)


def _summand(v: Value) -> str:
    """What a sum adds up: "square" (a * a, a ** 2: RMSNorm's and LayerNorm's sums of squares),
    "plain" (loaded values: LayerNorm's sum for the mean) or "product" (anything else: a backward
    kernel's sums of dy times x-hat or the weight)."""
    op = defining_op(_through(v))
    if op is not None and op.name == "tile.mul" and _through(op.operands[0]) is _through(op.operands[1]):
        return "square"
    if op is not None and op.name == "tile.pow" and const_value(op.operands[1]) == 2:
        return "square"
    return "plain" if _plain(v) else "product"


def _family(kernel: Kernel) -> str:
    """What the kernel's reductions compute, from the IR: a column reduction (its loads run along
    x, not along the reduction: a weight gradient's sums over tokens), softmax's max and sum,
    RMSNorm's sum of squares, LayerNorm's mean and variance (Welford, or a sum and a sum of
    squares), or sums of products (a norm's backward), or another reduction."""
    kinds: list[str] = []
    sums: list[str] = []
    if any(op.name == "tile.reduce" and op.attr("axis") == 0 for op in kernel.walk()) and band_loop(kernel):
        return "mix-order"  # rows' sums and, summed over each program's band of rows, columns' sums
    for op in kernel.walk():
        if op.name == "tile.reduce":
            kinds.append(str(op.attr("kind")))
            if op.attr("kind") == "sum":
                sums.append(_summand(op.operands[0]))
        elif op.name in ("tile.welford", "tile.softmax_reduce"):
            kinds.append(op.name.removeprefix("tile."))
    if not kinds:
        return "pointwise-repeats" if isinstance(repeats.find(kernel), repeats.Found) else "pointwise"
    if reads_columns(kernel):
        return "column-sum" if set(kinds) == {"sum"} else "column-reduce"
    if "softmax_reduce" in kinds or sorted(set(kinds)) == ["max", "sum"]:
        return "softmax" if _writes_rows(kernel) else "log-sum-exp"
    if "product" in sums:
        return "sum-of-products" if set(kinds) <= {"sum", "welford"} else "reduce"
    if set(kinds) == {"welford"} or (set(kinds) == {"sum"} and sorted(sums) == ["plain", "square"]):
        return "mean-var"
    if sums == ["square"]:
        return "sum"
    return "reduce"


def _whole_rows(t: object) -> bool:
    """Whether `t` is a block of whole rows: a 2-D tile with no broadcast dimension (a weight is
    [1, RBLOCK], a per-row value [XBLOCK, 1])."""
    return isinstance(t, TileType) and t.rank == 2 and all(d != 1 for d in t.shape)


def _writes_rows(kernel: Kernel) -> bool:
    """Whether the kernel stores whole rows, not only values per row (a cross-entropy's
    log-sum-exp)."""
    return any(isinstance(op, StoreOp) and _whole_rows(op.value.type) for op in kernel.walk())


def _row_inputs(kernel: Kernel) -> int:
    """How many pointers the kernel reads as whole rows (`_whole_rows` loads); a row read in two
    loops counts once."""
    return len({op.ptr for op in kernel.walk() if isinstance(op, LoadOp) and _whole_rows(op.results[0].type)})


def signature(kernel: Kernel) -> Signature:
    """The signature of a logical-form kernel."""
    n = reduction_numel(kernel)
    elem = widest_row_load_bytes(kernel)
    random = any(op.name == "tile.rand" for op in kernel.walk())
    family = _family(kernel)
    rows = x_numel(kernel)
    if family == "pointwise-repeats":
        # its measurements depend on its size (a small one is as fast either way): rules cover
        # ranges of the kernel's bytes (its elements, each of its widest element), as a reduction's
        # of its row's
        return Signature(family, rows, None, (rows or 0) * elem, _row_inputs(kernel), elem, random)
    band = band_loop(kernel) if family == "mix-order" else None
    sums = len(band.iter_args) if band is not None else 0
    return Signature(family, rows, n, n * elem if n else 0, _row_inputs(kernel), elem, random, sums)


# The H200 (the H100's SMs, 1.4x its bandwidth: more bytes must be in flight per SM), derived as
# the H100's table is (above), from the forward ops' survey. Rows of 1-4 KiB measured best at two
# or more rows a program or in chunks shorter than the row (more bytes in flight:
# docs/performance.md); softmax rows of 32768 in Gluon, the row cached in shared memory (the
# Triton loop's second read of the row misses L2 there). The residual-fused norms' survey (2026-11-26-h200-residual) is not in it:
# with its rules the models' inference ran slower at equal device time, so stock keeps them. Then
# the norms' backward where Inductor fuses it (`tilec bench --bwd`, as the H100's). First, as in
# the H100's, the surveys of one op's long rows, then the long rows' survey with `reverse` and
# `stream` among its plans.
H200_RULES: tuple[Rule, ...] = (
    # the norms' fused backward over rows of 512-2048 autotuned in place, the column sums carried across the band as the row block's tile (accumulate{where=bands}), with candidates of four rows a block and of 4 warps
    Rule(
        "mix-order",
        1024,
        8192,
        "triton",
        "2026-11-29-h200-band-columns",
        "16384x512 24.6 vs 31.0 us; 16384x768 31.9 vs 39.8 us; 16384x1024 37.6 vs 43.9 us; 4096x2048 22.4 vs 38.0 us; 32768x2048 113.8 vs 131.6 us",
        plan="num_warps=4",
        row_inputs=2,
        column_sums=1,
    ),
    Rule(
        "mix-order",
        1024,
        4096,
        "triton",
        "2026-11-29-h200-band-columns",
        "16384x512 27.1 vs 41.2 us; 16384x768 38.0 vs 51.2 us; 16384x1024 38.9 vs 55.8 us",
        plan="num_warps=4",
        row_inputs=2,
        column_sums=2,
    ),
    Rule(
        "mix-order",
        4096,
        8192,
        "triton",
        "2026-11-29-h200-band-columns",
        "4096x2048 23.0 vs 53.1 us; 32768x2048 114.5 vs 158.6 us",
        plan="xblock=4",
        row_inputs=2,
        column_sums=2,
    ),
    Rule(
        "mix-order",
        1024,
        4096,
        "triton",
        "2026-11-29-h200-band-columns",
        "16384x512 30.1 vs 37.2 us; 16384x768 38.4 vs 47.2 us; 16384x1024 45.2 vs 54.1 us",
        plan="num_warps=4",
        row_inputs=3,
        column_sums=1,
    ),
    Rule(
        "mix-order",
        4096,
        8192,
        "triton",
        "2026-11-29-h200-band-columns",
        "4096x2048 29.0 vs 45.9 us; 32768x2048 145.4 vs 160.1 us",
        row_inputs=3,
        column_sums=1,
    ),
    Rule(
        "mix-order",
        1024,
        4096,
        "triton",
        "2026-11-29-h200-band-columns",
        "16384x512 30.1 vs 47.6 us; 16384x768 41.2 vs 57.6 us; 16384x1024 46.4 vs 63.4 us",
        plan="num_warps=4",
        row_inputs=3,
        column_sums=2,
    ),
    Rule(
        "mix-order",
        4096,
        8192,
        "triton",
        "2026-11-29-h200-band-columns",
        "4096x2048 29.5 vs 57.9 us; 32768x2048 146.0 vs 180.2 us",
        plan="xblock=4",
        row_inputs=3,
        column_sums=2,
    ),
    # The cross-entropy's log-sum-exp timed in place again (`scripts/derive-kernel-rules ce`), with the autotuner's
    # loops keeping softmax's statistics per group of 8 (`autotune.GROUPS_PLANS`: softmax-groups) among
    # its candidates: they won at every vocabulary (1.15-1.19x the Gluon kernel the rules below took)
    Rule(
        "log-sum-exp",
        32768,
        65536,
        "triton",
        "2026-11-29-h200-cross-entropy-groups",
        "4096x32000 75.6 vs 192.0 us; 8192x32000 141.0 vs 368.9 us",
        plan="xblock=1,chunk=8192,num_warps=8,groups=8",
    ),
    Rule(
        "log-sum-exp",
        65536,
        131072,
        "triton",
        "2026-11-29-h200-cross-entropy-groups",
        "8192x50257 226.3 vs 641.6 us",
        plan="xblock=1,chunk=4096,num_warps=8,groups=8",
    ),
    Rule(
        "log-sum-exp",
        131072,
        524288,
        "triton",
        "2026-11-29-h200-cross-entropy-groups",
        "4096x128256 271.2 vs 687.4 us; 8192x128256 509.0 vs 1335.8 us; 4096x256000 516.1 vs 1308.7 us; 8192x256000 980.8 vs 2547.5 us",
        plan="xblock=1,chunk=8192,num_warps=8,groups=8",
    ),
    # softmax over rows of symbolic length surveyed again (bench/symbolic_survey.py --ops softmax --lines): each plan also with a split row's whole chunks on 16-byte vectors (line=16), not align-rows' 128-byte lines
    Rule(
        "softmax",
        0,
        2**62,
        "triton",
        "2026-11-29-h200-symbolic-lines",
        "65536x256 45.2 vs 58.5 us; 16384x1000 30.2 vs 61.4 us; 32768x1024 52.6 vs 117.4 us; 8192x2048 29.7 vs 64.0 us; 4000x3000 24.4 vs 56.4 us; 8192x4096 50.8 vs 111.0 us; 4096x8192 58.9 vs 100.7 us; 2048x16384 54.2 vs 97.9 us; 1024x32768 60.5 vs 114.2 us; 1000x3000 9.7 vs 18.0 us",
        plan="xblock=1,rblock=4096,num_warps=8,lanes_reread=true,line=16",
        symbolic=True,
        shorter=(
            ("xblock=1,rblock=256,num_warps=1,lanes_reread=true,line=16", 1000),
            ("xblock=1,rblock=512,num_warps=1,lanes_reread=true,line=16", 3000),
            ("xblock=1,rblock=1024,num_warps=2,lanes_reread=true,line=16", 8192),
        ),
    ),
    # the forward ops over rows of symbolic length (torch.compile(dynamic=True): bench/symbolic_survey.py), each plan timed at ten sizes against stock compiled at each; no one plan wins at every length, so the short rows take a plan of their own (Rule.short); RMSNorm's rows of 256 stay stock's
    Rule(
        "mean-var",
        0,
        2**62,
        "triton",
        "2026-11-28-h200-symbolic-survey",
        "65536x256 61.3 vs 69.1 us; 16384x1000 37.4 vs 71.9 us; 32768x1024 65.6 vs 139.9 us; 8192x2048 37.1 vs 74.4 us; 4000x3000 28.8 vs 66.8 us; 8192x4096 68.0 vs 131.6 us; 4096x8192 72.2 vs 114.1 us; 2048x16384 69.1 vs 105.2 us; 1024x32768 75.6 vs 102.9 us; 1000x3000 12.9 vs 18.7 us",
        plan="xblock=1,rblock=2048,num_warps=16,lanes_reread=true",
        symbolic=True,
        shorter=(
            ("xblock=1,rblock=256,num_warps=1,lanes_reread=true", 1000),
            ("xblock=1,rblock=512,num_warps=1,lanes_reread=true", 16384),
            ("xblock=1,rblock=1024,num_warps=8,lanes_reread=true", 32768),
        ),
    ),
    Rule(
        "sum",
        0,
        2**62,
        "stock",
        "2026-11-28-h200-symbolic-survey",
        "65536x256 45.2 vs 33.7 us; 2048x16384 51.2 vs 65.7 us; 1024x32768 53.6 vs 71.4 us; 4096x8192 49.0 vs 66.4 us",
        symbolic=True,
    ),
    # the norms' fused backward at rows of 32768 and 65536 autotuned in place with the cluster forms
    # (band-cluster), as many clusters as run at once: clusters of 4 two an SM (60 bands), of 8 over 30
    Rule(
        "mix-order",
        65536,
        131072,
        "gluon",
        "2026-11-28-h200-cluster-bands",
        "4096x32768 234.2 vs 3452.4 us",
        row_inputs=2,
        column_sums=1,
    ),
    Rule(
        "mix-order",
        131072,
        262144,
        "gluon",
        "2026-11-28-h200-cluster-bands",
        "2048x65536 244.0 vs 3948.4 us",
        plan="ctas=2,chunk=2048,warps=8",
        row_inputs=2,
        column_sums=1,
    ),
    Rule(
        "mix-order",
        65536,
        131072,
        "gluon",
        "2026-11-28-h200-cluster-bands",
        "4096x32768 271.9 vs 3713.3 us; 8192x32768 528.6 vs 7824.9 us",
        plan="ctas=4,chunk=1024,warps=8,bands=60",
        row_inputs=2,
        column_sums=2,
    ),
    Rule(
        "mix-order",
        131072,
        262144,
        "gluon",
        "2026-11-28-h200-cluster-bands",
        "2048x65536 270.4 vs 4489.0 us",
        plan="ctas=8,chunk=1024,warps=4,bands=30",
        row_inputs=2,
        column_sums=2,
    ),
    Rule(
        "mix-order",
        65536,
        131072,
        "gluon",
        "2026-11-28-h200-cluster-bands",
        "8192x32768 582.3 vs 9805.2 us",
        plan="ctas=2,chunk=2048,warps=8",
        row_inputs=3,
    ),
    Rule(
        "mix-order",
        131072,
        262144,
        "gluon",
        "2026-11-28-h200-cluster-bands",
        "2048x65536 308.7 vs 5130.1 us",
        plan="ctas=8,chunk=1024,warps=8,bands=30",
        row_inputs=3,
    ),
    # first, the norms' rows of 131072 and more (--ops rmsnorm,layernorm --min-row 131072) with the
    # H100's cluster candidates: slices of 128 KiB whole or three quarters cached (`row_cache`),
    # the weight read a chunk ahead (`prefetch`: early-loads)
    Rule(
        "mean-var",
        262144,
        524288,
        "gluon",
        "2026-11-27-h200-slice-cache",
        "4096x131072 78.4 vs 61.5",
        plan="xblock=1,chunk=4096,num_warps=16,cluster=4,exchange=push",
    ),
    Rule(
        "mean-var",
        524288,
        2**62,
        "gluon",
        "2026-11-27-h200-slice-cache",
        "2048x262144 74.9 vs 54.3",
        plan="xblock=1,chunk=4096,num_warps=16,cluster=8,exchange=push",
    ),
    Rule(
        "sum",
        262144,
        524288,
        "gluon",
        "2026-11-27-h200-slice-cache",
        "4096x131072 92.0 vs 64.8",
        plan="xblock=1,chunk=8192,num_warps=8,cluster=4,exchange=push",
    ),
    Rule(
        "sum",
        524288,
        2**62,
        "gluon",
        "2026-11-27-h200-slice-cache",
        "2048x262144 89.1 vs 64.0",
        plan="xblock=1,chunk=8192,num_warps=16,cluster=4,row_cache=393216,exchange=push,maxnreg=64,prefetch=1",
    ),
    # LayerNorm's rows of 65536 surveyed alone with the pushed exchange in clusters of 2 and 4
    # (bench/plans.py --ops layernorm --shapes 8192x65536): clusters of 4 pushed, 84.9% of a copy
    # against the Triton loop's 79.9 in the same run
    Rule(
        "mean-var",
        131072,
        262144,
        "gluon",
        "2026-11-28-h200-layernorm-clusters",
        "8192x65536 84.9 vs 58.5",
        plan="xblock=1,chunk=8192,num_warps=4,cluster=4,exchange=push",
    ),
    # then the long rows of all three ops from rows of 131072 (--min-row 131072), the H100's
    # one-CTA-an-SM slices, whole, and the weight read a chunk ahead, among the cluster plans:
    # softmax's rules (the norms' are the survey above's)
    Rule(
        "softmax",
        262144,
        524288,
        "gluon",
        "2026-11-27-h200-early-loads",
        "4096x131072 86.7 vs 46.7; 8192x131072 86.8 vs 47.5",
        plan="xblock=1,chunk=2048,num_warps=8,cluster=8,exchange=push",
    ),
    Rule(
        "softmax",
        524288,
        2**62,
        "gluon",
        "2026-11-27-h200-early-loads",
        "2048x262144 85.1 vs 47.2",
        plan="xblock=1,chunk=4096,num_warps=8,cluster=8,exchange=push",
    ),
    # first, softmax's rows of 50257 and more from a survey of those rows alone (--ops softmax
    # --min-row 50257): a misaligned row cached by cp.async in align-rows' aligned chunks, its
    # statistics kept per lane through the loops (softmax-lanes)
    Rule(
        "softmax",
        100514,
        131072,
        "gluon",
        "2026-11-27-h200-cp-async",
        "32768x50257 76.3 vs 36.0",
        plan="xblock=1,chunk=8192,num_warps=8",
    ),
    Rule(
        "softmax",
        131072,
        262144,
        "gluon",
        "2026-11-27-h200-cp-async",
        "8192x65536 96.9 vs 46.9",
        plan="xblock=1,chunk=8192,num_warps=8,cluster=2,exchange=push",
    ),
    # first, RMSNorm's rows of 16384 and more from a survey of those rows alone (--ops rmsnorm
    # --min-row 16384), the sums of a cluster CTA's chunks carried as one tile (accumulate's
    # unrolled chains)
    Rule(
        "sum",
        32768,
        65536,
        "triton",
        "2026-11-27-h200-chain-sums",
        "4096x16384 98.2 vs 94.7; 16384x16384 99.2 vs 98.7",
        plan="xblock=1,rblock=4096,num_warps=16",
    ),
    Rule(
        "sum",
        65536,
        100514,
        "triton",
        "2026-11-27-h200-chain-sums",
        "4096x32768 99.7 vs 97.7",
        plan="xblock=1,chunk=8192,num_warps=32,reverse=true,stream=true",
    ),
    Rule(
        "sum",
        100514,
        131072,
        "triton",
        "2026-11-27-h200-chain-sums",
        "32768x50257 84.5 vs 35.7",
        plan="xblock=1,chunk=16384,num_warps=16,reverse=true,stream=true",
    ),
    Rule(
        "sum",
        131072,
        262144,
        "triton",
        "2026-11-27-h200-chain-sums",
        "8192x65536 99.0 vs 68.7",
        plan="xblock=1,chunk=32768,num_warps=32,reverse=true,stream=true",
    ),
    # first, LayerNorm's rows of 8192 and 16384 from a survey of those rows alone (--ops layernorm --shapes
    # 4096x16384,16384x16384,8192x8192,16384x8192) with the Triton loop's statistics in two passes over
    # its chunks, each read again from global memory (`lanes_reread`: welford-lanes)
    Rule(
        "mean-var",
        16384,
        32768,
        "gluon",
        "2026-11-28-h200-layernorm-lanes",
        "8192x8192 95.3 vs 87.9; 16384x8192 98.1 vs 86.3",
        plan="xblock=1,num_warps=4",
    ),
    Rule(
        "mean-var",
        32768,
        65536,
        "triton",
        "2026-11-28-h200-layernorm-lanes",
        "4096x16384 97.2 vs 93.9; 16384x16384 101.1 vs 99.4",
        plan="xblock=1,rblock=8192,num_warps=16,lanes_reread=true",
    ),
    # first, softmax's and LayerNorm's rows of 50257 and more from a survey of those rows alone (--ops
    # softmax,layernorm --shapes 32768x50257,8192x65536,4096x131072,2048x262144) with the lanes_reread
    # loops among the plans: they win nowhere there (the rows read again miss L2; at most 83.1% of a copy
    # against 96.9 at rows of 65536), and the runs above keep every row of 65536 and more; it decides
    # LayerNorm's misaligned rows of 50257, which the survey of rows of 32768 below would reach (its
    # plan there, chunks of 8192 over 32 warps in two passes, reads 37.1)
    Rule(
        "mean-var",
        100514,
        131072,
        "triton",
        "2026-11-28-h200-lanes-long",
        "32768x50257 56.7 vs 34.1",
        plan="xblock=1,chunk=1024,num_warps=4,lanes_reread=true",
    ),
    # first, softmax's and LayerNorm's rows of 32768 from a survey of those rows alone (--ops softmax,layernorm
    # --shapes 4096x32768) with the Triton loop keeping the statistics per lane, the chunks read again
    # (lanes_reread): softmax 98.2% of a copy where the Gluon loop with the row cached read 93.6;
    # LayerNorm's two passes 91.6 against the one-pass loop's 91.2 (the rows of 32768 the survey of
    # LayerNorm's rows of 16384 and more, -27-h200-welford-lanes, and softmax's, -27-h200-long-rows,
    # decided before)
    Rule(
        "mean-var",
        65536,
        100514,
        "triton",
        "2026-11-28-h200-lanes-32768",
        "4096x32768 91.6 vs 72.5",
        plan="xblock=1,chunk=8192,num_warps=32,lanes_reread=true",
    ),
    Rule(
        "softmax",
        65536,
        100514,
        "triton",
        "2026-11-28-h200-lanes-32768",
        "4096x32768 98.2 vs 46.0",
        plan="xblock=1,chunk=4096,num_warps=32,lanes_reread=true",
    ),
    # first, softmax's rows of 8192 and 16384 from a survey of those rows alone (--ops softmax --shapes
    # 4096x16384,16384x16384,8192x8192,16384x8192) with the Triton loop keeping its statistics per lane,
    # each chunk read again from global memory (`lanes_reread`: softmax-lanes)
    Rule(
        "softmax",
        16384,
        32768,
        "triton",
        "2026-11-28-h200-softmax-lanes",
        "8192x8192 98.3 vs 42.3; 16384x8192 99.9 vs 41.7",
        plan="xblock=1,rblock=4096,num_warps=8,lanes_reread=true",
    ),
    Rule(
        "softmax",
        32768,
        65536,
        "triton",
        "2026-11-28-h200-softmax-lanes",
        "4096x16384 97.8 vs 44.4; 16384x16384 101.7 vs 45.5",
        plan="xblock=1,rblock=2048,num_warps=16,lanes_reread=true",
    ),
    # first, softmax's and LayerNorm's rows of 4096 from a survey of those rows alone (--ops softmax,layernorm
    # --shapes 8192x4096,32768x4096) with the lanes_reread loops among the plans: softmax in chunks of
    # 1024 over 4 warps; LayerNorm keeps its plan (two rows a program over 16 warps)
    Rule(
        "mean-var",
        8192,
        16384,
        "triton",
        "2026-11-28-h200-lanes-4096",
        "8192x4096 96.1 vs 66.7; 32768x4096 97.6 vs 67.9",
        plan="xblock=2,num_warps=16",
    ),
    Rule(
        "softmax",
        8192,
        16384,
        "triton",
        "2026-11-28-h200-lanes-4096",
        "8192x4096 98.8 vs 43.7; 32768x4096 97.1 vs 40.7",
        plan="xblock=1,rblock=1024,num_warps=4,lanes_reread=true",
    ),
    Rule("mean-var", 0, 4096, "stock", "2026-11-27-h200-survey", "32768x512 94.3 vs 96.7; 65536x1024 99.3 vs 99.1"),
    Rule(
        "mean-var",
        4096,
        8192,
        "triton",
        "2026-11-27-h200-survey",
        "32768x2048 100.1 vs 65.8",
        plan="xblock=1,num_warps=4",
    ),
    Rule(
        "mean-var",
        0,
        65536,
        "triton",
        "2026-11-27-h200-survey",
        "32768x2048 98.5 vs 95.4",
        plan="xblock=2,rblock=1024,num_warps=8",
        elem_bytes=4,
    ),
    Rule(
        "mean-var",
        65536,
        2**62,
        "triton",
        "2026-11-27-h200-survey",
        "4096x16384 95.9 vs 87.6",
        plan="xblock=2,num_warps=16",
        elem_bytes=4,
    ),
    Rule("softmax", 0, 2048, "triton", "2026-11-27-h200-survey", "32768x512 98.7 vs 92.1", plan="xblock=4,num_warps=4"),
    Rule("softmax", 2048, 4096, "stock", "2026-11-27-h200-survey", "65536x1024 99.8 vs 100.0"),
    Rule(
        "softmax",
        4096,
        8192,
        "triton",
        "2026-11-27-h200-survey",
        "32768x2048 100.0 vs 41.9",
        plan="xblock=1,num_warps=4",
    ),
    Rule(
        "softmax",
        0,
        65536,
        "triton",
        "2026-11-27-h200-survey",
        "32768x2048 98.7 vs 74.6",
        plan="xblock=2,rblock=1024,num_warps=8",
        elem_bytes=4,
    ),
    Rule(
        "softmax",
        65536,
        2**62,
        "triton",
        "2026-11-27-h200-survey",
        "4096x16384 97.9 vs 82.3",
        plan="xblock=1,num_warps=32",
        elem_bytes=4,
    ),
    Rule("sum", 0, 2048, "stock", "2026-11-27-h200-survey", "32768x512 98.0 vs 99.8"),
    Rule(
        "sum",
        2048,
        4096,
        "triton",
        "2026-11-27-h200-survey",
        "65536x1024 101.5 vs 99.8",
        plan="xblock=2,rblock=512,num_warps=4",
    ),
    Rule(
        "sum",
        4096,
        8192,
        "triton",
        "2026-11-27-h200-survey",
        "32768x2048 100.9 vs 87.5",
        plan="xblock=1,rblock=1024,num_warps=4",
    ),
    Rule(
        "sum",
        8192,
        16384,
        "triton",
        "2026-11-27-h200-survey",
        "8192x4096 100.2 vs 88.0; 32768x4096 100.7 vs 88.9",
        plan="xblock=1,rblock=2048,num_warps=8",
    ),
    Rule("sum", 16384, 32768, "stock", "2026-11-27-h200-survey", "8192x8192 100.7 vs 100.6; 16384x8192 100.5 vs 100.6"),
    Rule(
        "sum",
        0,
        2**62,
        "stock",
        "2026-11-27-h200-survey",
        "32768x2048 100.1 vs 101.6; 4096x16384 98.1 vs 99.5",
        elem_bytes=4,
    ),
    # the norms' fused backward, ring form or banded Triton, autotuned in place
    Rule(
        "mix-order",
        32768,
        65536,
        "gluon",
        "2026-11-28-h200-ring-fusion",
        "4096x16384 131.7 vs 144.3 us; 8192x16384 244.9 vs 273.0 us",
        row_inputs=2,
        column_sums=1,
    ),
    Rule(
        "mix-order",
        32768,
        65536,
        "triton",
        "2026-11-28-h200-ring-fusion",
        "4096x16384 149.6 vs 280.8 us; 8192x16384 273.6 vs 540.3 us",
        row_inputs=2,
        column_sums=2,
    ),
    Rule(
        "mix-order",
        32768,
        65536,
        "gluon",
        "2026-11-28-h200-ring-fusion",
        "4096x16384 151.6 vs 218.9 us; 8192x16384 282.1 vs 422.4 us",
        row_inputs=3,
    ),
    Rule(
        "mix-order",
        0,
        1024,
        "triton",
        "2026-11-26-h200-fanout",
        "8192x4096 69.3 vs 48.5; 8192x4096 79.4 vs 61.4; 16384x8192 85.4 vs 57.7; 16384x8192 89.8 vs 65.8",
        row_inputs=2,
    ),
    Rule(
        "mix-order",
        8192,
        32768,
        "triton",
        "2026-11-26-h200-fanout",
        "8192x4096 69.3 vs 48.5; 8192x4096 79.4 vs 61.4; 16384x8192 85.4 vs 57.7; 16384x8192 89.8 vs 65.8",
        row_inputs=2,
    ),
    Rule(
        "mix-order",
        262144,
        2**62,
        "triton",
        "2026-11-26-h200-fanout",
        "8192x4096 69.3 vs 48.5; 8192x4096 79.4 vs 61.4; 16384x8192 85.4 vs 57.7; 16384x8192 89.8 vs 65.8",
        row_inputs=2,
    ),
    Rule("mix-order", 0, 1024, "triton", "2026-11-26-h200-fanout", "8192x4096 82.2 vs 71.1", row_inputs=3),
    Rule("mix-order", 8192, 16384, "triton", "2026-11-26-h200-fanout", "8192x4096 82.2 vs 71.1", row_inputs=3),
    Rule("mix-order", 16384, 32768, "stock", "2026-11-26-h200-fanout", "16384x8192 76.4 vs 75.8", row_inputs=3),
    Rule("mix-order", 262144, 2**62, "stock", "2026-11-26-h200-fanout", "16384x8192 76.4 vs 75.8", row_inputs=3),
    Rule(
        "mix-order",
        0,
        2**62,
        "triton",
        "2026-11-26-h200-fanout",
        "4096x2048 70.8 vs 59.2; 32768x2048 87.3 vs 81.4; 4096x2048 86.0 vs 71.3; 32768x2048 92.4 vs 90.0; 8192x4096 83.9 vs 67.3; 8192x4096 89.7 vs 79.3; 16384x8192 83.0 vs 71.5; 16384x8192 87.2 vs 85.4",
        row_inputs=4,
    ),
    Rule(
        "mix-order",
        0,
        2**62,
        "triton",
        "2026-11-26-h200-fanout",
        "4096x2048 93.2 vs 81.4; 32768x2048 94.2 vs 92.5; 4096x2048 92.3 vs 80.6; 32768x2048 94.5 vs 93.1; 8192x4096 93.3 vs 85.6; 8192x4096 94.1 vs 85.0; 16384x8192 95.2 vs 92.3; 16384x8192 94.2 vs 91.7",
        row_inputs=5,
    ),
    # Then the models' other kernels, timed in place (`bench/rules.py --kernels` on one `tilec bench
    # --models --autotune` run: Llama, GPT-2 and Gemma at the default size, inference and a training
    # step; device microseconds), as the H100's.
    Rule(
        "column-sum",
        256,
        1024,
        "stock",
        "2026-11-26-h200-model-kernels",
        "196608x128 26.0 vs 19.0 us; 65536x128 12.8 vs 10.7 us; 131072x256 26.1 vs 25.0 us",
    ),
    Rule(
        "column-sum",
        64,
        256,
        "triton",
        "2026-11-26-h200-model-kernels",
        "8192x16 4.8 vs 5.7 us; 2048x32 4.8 vs 5.8 us; 6144x32 4.9 vs 5.8 us",
        elem_bytes=4,
    ),
    Rule(
        "mean-var",
        4096,
        8192,
        "gluon",
        "2026-11-26-h200-model-kernels",
        "4096x2048 13.1 vs 14.8 us; 4096x2048 18.3 vs 21.0 us; 4096x2048 21.4 vs 22.8 us; 4096x2048 21.6 vs 23.0 us",
        plan="xblock=1,num_warps=4",
        row_inputs=2,
    ),
    Rule(
        "mean-var",
        4096,
        8192,
        "stock",
        "2026-11-26-h200-model-kernels",
        "4096x2048 25.6 vs 24.1 us; 4096x2048 23.3 vs 26.5 us; 4096x2048 20.0 vs 24.0 us; 4096x2048 17.6 vs 22.0 us",
        row_inputs=3,
    ),
    Rule("mean-var", 4096, 8192, "stock", "2026-11-26-h200-model-kernels", "4096x2048 28.2 vs 28.6 us", row_inputs=4),
    Rule(
        "mix-order", 4096, 8192, "triton", "2026-11-26-h200-model-kernels", "4096x2048 60.9 vs 106.0 us", row_inputs=8
    ),
    Rule(
        "pointwise",
        0,
        2**62,
        "stock",
        "2026-11-26-h200-model-kernels",
        "8388608x1 40.9 vs 33.8 us; 8388608x1 56.2 vs 46.9 us; 8388608x1 49.6 vs 42.9 us; 33554432x1 45.5 vs 40.5 us",
        elem_bytes=4,
        row_inputs=0,
    ),
    Rule(
        "sum",
        4096,
        8192,
        "stock",
        "2026-11-26-h200-model-kernels",
        "4096x2048 18.2 vs 17.6 us; 4096x2048 18.2 vs 18.9 us; 4096x2048 13.7 vs 14.3 us; 4096x2048 13.2 vs 13.9 us",
        row_inputs=2,
    ),
    Rule(
        "sum",
        4096,
        8192,
        "stock",
        "2026-11-26-h200-model-kernels",
        "4096x2048 22.6 vs 22.3 us; 4096x2048 22.5 vs 23.2 us; 4096x2048 25.3 vs 27.1 us; 4096x2048 19.6 vs 21.7 us",
        row_inputs=3,
    ),
    Rule(
        "sum",
        4096,
        8192,
        "gluon",
        "2026-11-26-h200-model-kernels",
        "4096x2048 26.5 vs 27.3 us",
        plan="xblock=1,num_warps=4",
        row_inputs=4,
    ),
    Rule(
        "sum-of-products",
        32768,
        65536,
        "stock",
        "2026-11-26-h200-model-kernels",
        "1x4096 9.5 vs 9.7 us; 1x4096 9.1 vs 9.7 us",
        elem_bytes=8,
        row_inputs=0,
    ),
    Rule(
        "sum-of-products",
        65536,
        131072,
        "triton",
        "2026-11-26-h200-model-kernels",
        "4096x50257 266.0 vs 414.3 us",
        plan="target_elems=8192",
    ),
    Rule(
        "sum-of-products",
        32768,
        65536,
        "triton",
        "2026-11-26-h200-model-kernels",
        "4096x32000 201.5 vs 225.3 us",
        plan="xblock=1,chunk=8192,num_warps=32",
        row_inputs=2,
    ),
    Rule(
        "sum-of-products",
        4096,
        8192,
        "triton",
        "2026-11-26-h200-model-kernels",
        "4096x2048 31.8 vs 35.8 us",
        plan="target_elems=8192",
        row_inputs=5,
    ),
    # the norms' backward over rows past 16384 elements: their kernels (dx; the weights' column
    # sums) timed in place by the autotuner (`scripts/derive-kernel-rules long-bwd`)
    Rule(
        "column-sum",
        8192,
        32768,
        "gluon",
        "2026-11-26-h200-long-bwd-kernels",
        "65536x2048 137.1 vs 142.8 us; 65536x2048 142.4 vs 153.3 us; 32768x4096 137.1 vs 150.4 us; 32768x4096 141.7 vs 159.2 us",
        elem_bytes=4,
        row_inputs=2,
    ),
    Rule(
        "column-sum",
        32768,
        65536,
        "triton",
        "2026-11-26-h200-long-bwd-kernels",
        "32768x8192 265.2 vs 288.7 us; 32768x8192 274.0 vs 307.8 us",
        elem_bytes=4,
        row_inputs=2,
    ),
    Rule(
        "mean-var",
        65536,
        131072,
        "stock",
        "2026-11-26-h200-long-bwd-kernels",
        "4096x32768 272.7 vs 275.1 us; 8192x32768 534.6 vs 539.5 us",
        row_inputs=3,
    ),
    Rule(
        "mean-var",
        131072,
        262144,
        "triton",
        "2026-11-26-h200-long-bwd-kernels",
        "2048x65536 287.2 vs 352.9 us",
        plan="xblock=1,chunk=32768,num_warps=32",
        row_inputs=3,
    ),
    Rule(
        "sum",
        65536,
        131072,
        "stock",
        "2026-11-26-h200-long-bwd-kernels",
        "4096x32768 274.3 vs 274.3 us; 8192x32768 544.2 vs 545.8 us",
        row_inputs=3,
    ),
    Rule(
        "sum",
        131072,
        262144,
        "triton",
        "2026-11-26-h200-long-bwd-kernels",
        "2048x65536 281.6 vs 347.0 us",
        plan="xblock=1,chunk=16384,num_warps=16",
        row_inputs=3,
    ),
    Rule(
        "sum-of-products",
        65536,
        262144,
        "triton",
        "2026-11-26-h200-long-bwd-kernels",
        "4096x32768 208.1 vs 236.2 us; 8192x32768 405.1 vs 460.6 us; 4096x32768 264.1 vs 348.0 us; 8192x32768 518.3 vs 670.0 us; 2048x65536 327.2 vs 331.8 us; 2048x65536 280.6 vs 350.9 us",
        plan="xblock=1,chunk=8192,num_warps=32",
        row_inputs=2,
    ),
    Rule(
        "sum-of-products",
        65536,
        131072,
        "triton",
        "2026-11-26-h200-long-bwd-kernels",
        "4096x32768 268.1 vs 360.0 us; 8192x32768 521.3 vs 719.4 us; 4096x32768 282.4 vs 408.8 us; 8192x32768 550.1 vs 780.5 us",
        plan="xblock=1,chunk=8192,num_warps=32",
        row_inputs=3,
    ),
    Rule(
        "sum-of-products",
        131072,
        262144,
        "triton",
        "2026-11-26-h200-long-bwd-kernels",
        "2048x65536 376.7 vs 390.0 us; 2048x65536 331.9 vs 408.1 us",
        plan="xblock=1,chunk=16384,num_warps=16",
        row_inputs=3,
    ),
    # the cross-entropy's kernels timed in place (`scripts/derive-kernel-rules ce`)
    Rule(
        "sum-of-products",
        65536,
        131072,
        "gluon",
        "2026-11-26-h200-cross-entropy-kernels",
        "1x8192 12.1 vs 13.1 us; 1x8192 12.2 vs 13.0 us; 1x8192 12.2 vs 13.2 us; 1x8192 12.3 vs 13.2 us",
        plan="target_elems=8192",
        elem_bytes=8,
        row_inputs=0,
    ),
    Rule(
        "sum-of-products",
        32768,
        65536,
        "triton",
        "2026-11-26-h200-cross-entropy-kernels",
        "4096x32000 138.9 vs 173.3 us; 8192x32000 271.2 vs 331.6 us",
    ),
    Rule(
        "sum-of-products",
        131072,
        524288,
        "triton",
        "2026-11-26-h200-cross-entropy-kernels",
        "4096x128256 553.5 vs 651.3 us; 8192x128256 1091.5 vs 1261.4 us; 4096x256000 1096.9 vs 1649.4 us; 8192x256000 2172.8 vs 3217.4 us",
    ),
    # Then the models with the rotary embeddings' cos and sin computed once a column (`repeats`):
    # `tilec bench --models --autotune`, Llama and Gemma at the default and the small size, the
    # kernels the rules above leave (the small size's had no H200 rules: its norms' backward,
    # column sums and loss sums, one survey). The rotary embeddings 1.1-2.1x faster than stock's.
    Rule(
        "column-sum",
        512,
        1024,
        "gluon",
        "2026-11-26-h200-rotary",
        "2048x128 5.3 vs 5.9 us; 2048x128 5.3 vs 5.8 us",
        elem_bytes=4,
        row_inputs=2,
    ),
    Rule(
        "column-sum",
        512,
        1024,
        "gluon",
        "2026-11-26-h200-rotary",
        "2048x128 5.6 vs 6.1 us; 2048x128 5.7 vs 6.2 us",
        elem_bytes=4,
        row_inputs=3,
    ),
    Rule(
        "column-sum",
        512,
        1024,
        "gluon",
        "2026-11-26-h200-rotary",
        "2048x128 6.3 vs 7.2 us; 2048x128 6.4 vs 7.2 us; 2048x128 6.4 vs 7.6 us",
        elem_bytes=4,
        row_inputs=4,
    ),
    Rule(
        "column-sum", 512, 1024, "gluon", "2026-11-26-h200-rotary", "2048x128 7.3 vs 9.0 us", elem_bytes=4, row_inputs=7
    ),
    Rule(
        "pointwise-repeats",
        1048576,
        2097152,
        "triton",
        "2026-11-26-h200-rotary",
        "262144x1 5.7 vs 6.1 us; 262144x1 6.1 vs 6.8 us",
        elem_bytes=4,
        row_inputs=0,
    ),
    Rule(
        "pointwise-repeats",
        33554432,
        67108864,
        "triton",
        "2026-11-26-h200-rotary",
        "8388608x1 20.1 vs 33.7 us; 8388608x1 20.2 vs 42.8 us",
        elem_bytes=4,
        row_inputs=0,
    ),
    Rule("reduce", 8192, 16384, "triton", "2026-11-26-h200-rotary", "512x8000 7.4 vs 7.9 us"),
    Rule("reduce", 16, 32, "stock", "2026-11-26-h200-rotary", "128x4 4.1 vs 4.1 us; 128x4 4.0 vs 4.3 us", elem_bytes=4),
    Rule(
        "sum-of-products",
        1024,
        2048,
        "gluon",
        "2026-11-26-h200-rotary",
        "1x128 4.6 vs 5.3 us",
        plan="xblock=1,num_warps=4",
        elem_bytes=8,
        row_inputs=0,
    ),
    Rule(
        "sum-of-products",
        8192,
        16384,
        "triton",
        "2026-11-26-h200-rotary",
        "512x8000 7.6 vs 7.9 us",
        plan="target_elems=8192",
    ),
    Rule(
        "sum-of-products",
        4096,
        8192,
        "stock",
        "2026-11-26-h200-rotary",
        "128x2048 5.4 vs 4.9 us; 128x2048 5.4 vs 5.1 us",
        row_inputs=2,
    ),
    Rule(
        "sum-of-products",
        4096,
        8192,
        "stock",
        "2026-11-26-h200-rotary",
        "128x2048 6.2 vs 5.6 us; 128x2048 6.3 vs 5.8 us",
        row_inputs=4,
    ),
    # Then the models' kernels with a symbolic number of tokens (`tilec bench --models --autotune
    # --dynamic`: dynamic=None, 512 and 768 tokens compiled first, the third compile symbolic) and
    # the default size again with the rotary backward's head-major form: the weights' and biases'
    # column sums over symbolic tokens 3.1-5.2x faster than stock's in Gluon where they sum
    # several fp32 inputs, the loss's sums and one bf16 input stock's; the rotary forms 1.5-2.1x.
    Rule(
        "column-sum",
        0,
        2**62,
        "stock",
        "2026-11-27-h200-model-survey",
        "131072x256 32.7 vs 27.9 us; 131072x192 26.0 vs 22.2 us; 131072x256 32.6 vs 28.0 us; 131072x192 26.0 vs 22.4 us",
        symbolic=True,
    ),
    Rule(
        "column-sum",
        0,
        2**62,
        "gluon",
        "2026-11-27-h200-model-survey",
        "49152x128 14.8 vs 76.6 us; 49152x128 14.6 vs 76.4 us",
        elem_bytes=4,
        row_inputs=3,
        symbolic=True,
    ),
    Rule(
        "column-sum",
        0,
        2**62,
        "gluon",
        "2026-11-27-h200-model-survey",
        "49152x128 17.3 vs 80.0 us; 49152x128 17.4 vs 80.0 us; 49152x128 20.3 vs 76.8 us; 49152x128 20.2 vs 76.6 us; 49152x128 20.4 vs 76.8 us; 49152x128 17.4 vs 80.1 us",
        elem_bytes=4,
        row_inputs=4,
        symbolic=True,
    ),
    Rule(
        "column-sum",
        0,
        2**62,
        "gluon",
        "2026-11-27-h200-model-survey",
        "49152x128 18.7 vs 83.1 us; 49152x128 26.5 vs 80.7 us; 49152x128 25.0 vs 81.2 us; 49152x128 18.7 vs 83.6 us",
        elem_bytes=4,
        row_inputs=5,
        symbolic=True,
    ),
    Rule(
        "column-sum",
        512,
        1024,
        "stock",
        "2026-11-27-h200-model-survey",
        "32768x128 17.5 vs 17.0 us; 32768x128 15.9 vs 18.2 us; 32768x128 15.7 vs 18.0 us; 32768x128 15.5 vs 18.4 us",
        elem_bytes=4,
        row_inputs=5,
    ),
    Rule(
        "column-sum",
        0,
        2**62,
        "gluon",
        "2026-11-27-h200-model-survey",
        "49152x128 18.8 vs 84.0 us",
        elem_bytes=4,
        row_inputs=6,
        symbolic=True,
    ),
    Rule(
        "column-sum",
        0,
        2**62,
        "gluon",
        "2026-11-27-h200-model-survey",
        "49152x128 35.7 vs 91.4 us",
        elem_bytes=4,
        row_inputs=9,
        symbolic=True,
    ),
    Rule(
        "column-sum",
        512,
        1024,
        "triton",
        "2026-11-27-h200-model-survey",
        "32768x128 24.8 vs 31.0 us",
        elem_bytes=4,
        row_inputs=9,
    ),
    Rule(
        "pointwise-repeats",
        16777216,
        33554432,
        "triton",
        "2026-11-27-h200-model-survey",
        "4194304x1 12.6 vs 19.3 us; 4194304x1 16.1 vs 26.5 us; 4194304x1 12.4 vs 24.2 us",
        elem_bytes=4,
        row_inputs=0,
    ),
    Rule(
        "sum-of-products",
        0,
        2**62,
        "stock",
        "2026-11-27-h200-model-survey",
        "1x3072 11.2 vs 9.6 us; 1x3072 11.2 vs 9.6 us; 1x3072 11.3 vs 9.8 us",
        elem_bytes=8,
        row_inputs=0,
        symbolic=True,
    ),
    Rule(
        "sum-of-products",
        16384,
        32768,
        "stock",
        "2026-11-27-h200-model-survey",
        "1x2048 7.5 vs 6.8 us; 1x2048 7.5 vs 6.9 us",
        elem_bytes=8,
        row_inputs=0,
    ),
    Rule(
        "sum-of-products",
        131072,
        262144,
        "triton",
        "2026-11-27-h200-model-survey",
        "3072x50257 303.1 vs 488.0 us",
        plan="xblock=1,chunk=32768,num_warps=32",
        elem_bytes=4,
    ),
    Rule(
        "sum-of-products",
        4096,
        8192,
        "triton",
        "2026-11-27-h200-model-survey",
        "2048x2048 14.2 vs 18.7 us; 2048x2048 14.0 vs 16.9 us; 3072x2048 18.6 vs 26.6 us; 3072x2048 18.5 vs 27.1 us; 3072x2048 18.4 vs 27.3 us; 3072x2048 18.5 vs 27.2 us",
        row_inputs=3,
    ),
    # the rotary embeddings over a symbolic number of tokens (as the H100's)
    Rule(
        "pointwise-repeats",
        0,
        2**62,
        "triton",
        "2026-11-27-h200-dynamic-rotary",
        "6291456x1 16.7 vs 28.8 us; 6291456x1 16.7 vs 28.9 us; 6291456x1 16.3 vs 35.1 us; 6291456x1 16.6 vs 35.0 us; 8388608x1 20.4 vs 45.2 us; 8388608x1 20.3 vs 44.9 us; 6291456x1 16.8 vs 28.7 us; 6291456x1 16.4 vs 35.1 us; 6291456x1 16.5 vs 34.9 us; 8388608x1 20.3 vs 45.0 us; 8388608x1 20.5 vs 45.2 us",
        elem_bytes=4,
        row_inputs=0,
        symbolic=True,
    ),
    # Llama's first-layer norm backward of seven row inputs (the embedding's gradient a row per
    # token), timed in place by the autotuner (scripts/derive-model-rules default)
    Rule("mix-order", 4096, 8192, "triton", "2026-11-29-h200-seven-inputs", "4096x2048 45.3 vs 68.4 us", row_inputs=7),
)

# Tables by GPU (the driver's name for it: `torch.cuda.get_device_properties(i).name`): rules hold
# for that GPU only. A GPU without a table of its own gets the autotuner (tilec.inductor.policy),
# and stock Inductor where it cannot time.
TABLES: dict[str, tuple[Rule, ...]] = {H100.name: RULES, H200.name: H200_RULES}


@dataclass(frozen=True)
class MixOrderFusion:
    """Shapes of a norm's backward at which tilec has its dx and its column sums fused into one
    mix-order kernel where stock Inductor's own size checks would keep them apart (fewer than
    twice as many rows as the row is long, fewer than 4096 rows, rows past 16384 elements:
    docs/hook.md), because the banded kernel was measured faster there than the kernels it
    replaces: at least `min_rows` rows of `min_row` to `max_row` elements (inclusive) of
    `elem_bytes` bytes; with at most `max_sums` column sums (the weights' gradients) and
    `max_row_inputs` whole rows read (x, dy, a residual's gradient) where those are set; and,
    where `ring` is set, only where the Gluon emitter can run, the range having been measured
    with the banded kernel's Gluon form (`band-ring`: its rows in shared memory, which must hold
    them)."""

    min_rows: int
    min_row: int
    max_row: int
    elem_bytes: int
    run: str
    figures: str  # "MxN banded vs stock's unfused kernels" per op and shape, % of a copy
    max_sums: int | None = None
    max_row_inputs: int | None = None
    ring: bool = False

    def covers(
        self, rows: int, row: int, elem_bytes: int, sums: int = 1, row_inputs: int = 2, gluon: bool = True
    ) -> bool:
        return (
            rows >= self.min_rows
            and self.min_row <= row <= self.max_row
            and elem_bytes == self.elem_bytes
            and (self.max_sums is None or sums <= self.max_sums)
            and (self.max_row_inputs is None or row_inputs <= self.max_row_inputs)
            and (gluon or not self.ring)
        )


# By GPU, as TABLES: measured with `tilec bench --bwd` (tilec's banded kernel, the hook fusing it,
# against stock torch.compile's dx and column kernels; the norms' backward, plain, residual-fused
# and read by two projections), each op's slowest figures against stock's quoted. The H100: faster
# at every one of 30 op-shapes from 2048x4096 to 8192x16384 (1.11-1.95x); 1024 rows of 2048
# (fewer rows, shorter rows) lost for LayerNorm (bench/fusion_probe.py, unfused.jsonl there). The
# H200: faster at the same 30 op-shapes (1.01-1.79x; the residual-fused RMSNorm at rows of 16384
# by 1.2-1.7%, the others by 19% or more), since the banded kernel takes its rows of 16384 in
# chunks (band-chunks); before that, LayerNorm lost at rows of 16384 (43.1 vs 45.5 at 4096x16384,
# bench/results/2026-11-26-h200-fusion) and the range stopped at 8192. Square shapes, which stock never fuses (tilec.frontend.fusion), measured faster fused
# on both: the H100 at 4096x4096 to 16384x16384 (1.24-2.04x, bench/results/2026-11-26-h100-square-fusion),
# the H200 at 4096x4096 and 8192x8192 (1.30-2.12x, ../2026-11-26-h200-square-fusion). The H100's
# first range, rows of 16384 to 32768 with one column sum and two whole rows read where Inductor
# asks (RMSNorm, plain and residual-fused), holds for the banded kernel's Gluon ring form
# (`band-ring`; its rules: the table's mix-order rules from 2026-11-28-h100-ring-fusion), 1.44-1.71x
# stock's unfused kernels at rows of 32768; LayerNorm (two column sums) there measured 52-63% of a
# copy in that form against 55% unfused (../2026-11-27-h100-ring-backward), and stays unfused. The
# H200's first range is the same, measured in the same form (2026-11-28-h200-ring-fusion): 1.48-1.65x
# stock's unfused kernels at rows of 32768, its rules the ring's there. Ahead of those, the ranges
# of the banded kernel's cluster form (`band-cluster`: each row split across a cluster of CTAs,
# the column sums of a row past one CTA's registers), measured autotuned in place, the rules from
# the same runs, their band counts those of clusters that run at once
# (`Target.clusters_at_once`): on the H100 (2026-11-28-h100-cluster-bands) LayerNorm's two column
# sums at rows of 32768 (2.00x stock's unfused kernels) and every op at rows of 65536
# (1.89-2.08x), both with up to two sums and two whole rows read; on the H200
# (2026-11-28-h200-cluster-bands) the same: LayerNorm at rows of 32768 (70.0-72.9% of a copy,
# 1.8x stock; its unfused kernels, tilec's dx and stock's column sums, 48.9-49.0:
# -h200-cluster-validation, -h200-cluster-slots) — its RMSNorm keeps the ring there (0.234 ms
# against 0.257 in a cluster), the rules telling the two apart by their column sums
# (`Rule.column_sums`) — and every op at rows of 65536 (1.69-1.96x; LayerNorm's unfused kernels
# 47.2, and fused in clusters of 8 over 33 bands, one past what runs, 44-45:
# -h200-ring-validation).
# Ranges are tried in order. A GPU without an entry fuses what stock fuses.
MIX_ORDER_FUSIONS: dict[str, tuple[MixOrderFusion, ...]] = {
    H100.name: (
        MixOrderFusion(
            4096,
            32768,
            32768,
            2,
            "2026-11-28-h100-cluster-bands",
            "layernorm_bwd 4096x32768 82.4 vs 41.1; layernorm_bwd 8192x32768 83.8 vs 42.0; rmsnorm_bwd 4096x32768 90.4 vs 57.6; "
            "add_rmsnorm_bwd 4096x32768 91.9 vs 50.8",
            max_sums=2,
            max_row_inputs=2,
            ring=True,
        ),
        MixOrderFusion(
            2048,
            65536,
            65536,
            2,
            "2026-11-28-h100-cluster-bands",
            "rmsnorm_bwd 2048x65536 88.5 vs 42.5; layernorm_bwd 2048x65536 83.9 vs 41.1; add_rmsnorm_bwd 2048x65536 93.7 vs 49.7",
            max_sums=2,
            max_row_inputs=2,
            ring=True,
        ),
        MixOrderFusion(
            4096,
            16384,
            32768,
            2,
            "2026-11-28-h100-ring-fusion",
            "rmsnorm_bwd 4096x32768 85.4 vs 58.5; rmsnorm_bwd 8192x32768 88.1 vs 59.0; add_rmsnorm_bwd 4096x32768 85.0 "
            "vs 51.7; add_rmsnorm_bwd 8192x32768 87.7 vs 51.2; rmsnorm_bwd 4096x16384 88.9 vs 56.0",
            max_sums=1,
            max_row_inputs=2,
            ring=True,
        ),
        MixOrderFusion(
            2048,
            4096,
            16384,
            2,
            "2026-11-26-h100-fusion",
            "rmsnorm_bwd 6144x4096 76.1 vs 52.2; layernorm_bwd 4096x16384 51.3 vs 46.3; add_rmsnorm_bwd 4096x16384 "
            "76.7 vs 61.4; add_rmsnorm_mlp_bwd 2048x4096 89.8 vs 67.8; add_layernorm_mlp_bwd 4096x16384 62.3 vs 47.5",
        ),
    ),
    H200.name: (
        MixOrderFusion(
            4096,
            32768,
            32768,
            2,
            "2026-11-28-h200-cluster-bands",
            "layernorm_bwd 4096x32768 70.0 vs 38.5; layernorm_bwd 8192x32768 72.9 vs 39.6",
            max_sums=2,
            max_row_inputs=2,
            ring=True,
        ),
        MixOrderFusion(
            2048,
            65536,
            65536,
            2,
            "2026-11-28-h200-cluster-bands",
            "rmsnorm_bwd 2048x65536 80.2 vs 41.0; layernorm_bwd 2048x65536 71.0 vs 38.3; add_rmsnorm_bwd 2048x65536 "
            "82.8 vs 49.0",
            max_sums=2,
            max_row_inputs=2,
            ring=True,
        ),
        MixOrderFusion(
            4096,
            16384,
            32768,
            2,
            "2026-11-28-h200-ring-fusion",
            "rmsnorm_bwd 4096x32768 83.5 vs 51.7; rmsnorm_bwd 8192x32768 87.0 vs 52.8; add_rmsnorm_bwd 4096x32768 76.5 "
            "vs 51.8; add_rmsnorm_bwd 8192x32768 78.8 vs 51.9; rmsnorm_bwd 4096x16384 76.8 vs 55.6",
            max_sums=1,
            max_row_inputs=2,
            ring=True,
        ),
        MixOrderFusion(
            2048,
            4096,
            16384,
            2,
            "2026-11-26-h200-fusion-16384",
            "rmsnorm_bwd 4096x16384 71.4 vs 55.0; layernorm_bwd 4096x16384 60.3 vs 44.8; add_rmsnorm_bwd 8192x16384 "
            "62.2 vs 61.5; add_rmsnorm_mlp_bwd 2048x4096 97.2 vs 66.0; add_layernorm_mlp_bwd 4096x16384 55.7 vs 46.8",
        ),
    ),
}


def mix_order_fusion(
    gpu: str, rows: int, row: int, elem_bytes: int, sums: int = 1, row_inputs: int = 2, gluon: bool = True
) -> MixOrderFusion | None:
    """The measured range that has tilec fuse a norm's backward of `rows` rows of `row` elements on
    `gpu` where stock Inductor would not, or None: with `sums` column sums and `row_inputs` whole
    rows read, `gluon` whether the Gluon emitter can run (`MixOrderFusion.covers`)."""
    return next(
        (f for f in MIX_ORDER_FUSIONS.get(gpu, ()) if f.covers(rows, row, elem_bytes, sums, row_inputs, gluon)), None
    )


@dataclass(frozen=True)
class Rewrite:
    """A decomposition `torch.compile(backend="tilec")` gives AOT autograd in place of Inductor's
    own on a GPU (`name`: one of `tilec.inductor.decompositions.REWRITES`), because whole models'
    training steps measured faster with it there: `figures` quotes the run's device time per step
    with it against without it ("llama train 10408.8 vs 10446.5 us; ..."). `tokens`: the range
    [low, high) of the op's tokens (`decompositions.MEASURED`: an embedding's count of indices) the
    run measured, a power-of-two range as a rule's rows; an op of another count, or of a count
    known only at run time, keeps Inductor's decomposition. What a decomposition changes is a
    step's number of launches against its device time, so a host-bound step of fewer tokens may
    lose what a larger one gains."""

    name: str
    run: str
    figures: str
    tokens: tuple[int, int]


# By GPU, as TABLES. The H200 (2026-11-29-h200-embedding-grad: `bench/rewrite_probe.py`, the
# models' training steps at the default size, 4096 tokens, with and without the rewrite, in one process): an
# embedding's weight gradient accumulated a row per token and written in the weight's dtype, not
# through an fp32 table of the vocabulary; faster for Llama, GPT-2 and Gemma (0.4-0.9% of the
# step), each step's gradients as far from stock's as without it. A GPU without an entry keeps
# Inductor's decompositions.
GRAPH_REWRITES: dict[str, tuple[Rewrite, ...]] = {
    H200.name: (
        Rewrite(
            "embedding_dense_backward",
            "2026-11-29-h200-embedding-grad",
            "llama train 10408.8 vs 10446.5 us; gpt2 train 11467.4 vs 11575.3 us; gemma train 9484.0 vs 9568.6 us",
            tokens=(4096, 8192),  # 4 x 1024 tokens
        ),
    ),
}


def graph_rewrites(gpu: str) -> tuple[Rewrite, ...]:
    """The decompositions measured faster on `gpu` (a device name), in `GRAPH_REWRITES`' order."""
    return GRAPH_REWRITES.get(gpu, ())


# A family whose kernels a GPU's table may not cover on their own -> the family whose rules then
# decide: a log-sum-exp is softmax's first loop without its second (the row written), its rules
# measured on the cross-entropy's forward where the table has them (H100), softmax's elsewhere.
FALLBACK = {"log-sum-exp": "softmax"}

# Why a kernel stays stock on a GPU no table describes, when the autotuner could not decide.
NO_TABLE = "no measurement was made on this GPU"


def has_table(gpu: str) -> bool:
    """Whether the chooser has rules measured on `gpu` (a device name: "NVIDIA H100 80GB HBM3")."""
    return gpu in TABLES


def choose(
    kernel: Kernel, hopper: bool, forced: str | None = None, decline: bool = True, gpu: str = DEFAULT.name
) -> Choice | Decline:
    """The emitter for `kernel` (logical form), or Decline where stock Inductor measured faster.

    `hopper`: the Gluon emitter can run here. `forced`: the emitter the user set (no choice
    between emitters is made). `decline`: whether measured losses decline. `gpu`: the device's
    name; its table of rules decides (a GPU with none: stock, unless decline is off)."""
    sig = signature(kernel)
    rules = TABLES.get(gpu)
    if rules is None and decline:
        return Decline(f"{NO_TABLE} ({gpu}; the autotuner, tilec.config.autotune, decides where it can time)")
    rule = next((r for r in rules or () if r.covers(sig)), None)
    if rule is None and sig.family in FALLBACK:  # a family measured only in part: its parent's rules
        sig = replace(sig, family=FALLBACK[sig.family])
        rule = next((r for r in rules or () if r.covers(sig)), None)
    where = sig.where()
    if rule is not None and rule.action == "stock" and decline:
        return Decline(f"stock Inductor measured faster for {where} ({rule.evidence})")
    if rule is None and decline:
        return Decline(f"{UNMEASURED} {sig.describe()}: stock Inductor keeps it")
    if forced is not None:
        plan = rule.plan if rule is not None and rule.action == forced else ""
        return Choice(forced, f"tilec.config.emitter = {forced!r}", plan)
    if rule is not None and rule.action in ("gluon", "triton") and (rule.action == "triton" or hopper):
        reason = f"measured fastest for {where} ({rule.evidence})"
        return Choice(rule.action, reason, rule.plan, rule.shorter)
    if sig.family == "mix-order":  # its Gluon form (band-ring) only where a rule measured it
        return Choice("triton", "the default for a mix-order kernel: the banded Triton kernel")
    return Choice("gluon" if hopper else "triton", "the default: Gluon on Hopper and newer, Triton elsewhere")
