"""Structured control flow: loops, conditionals, warp-specialized partitions, and the device-side
assert that stops a kernel."""

from __future__ import annotations

from tilec.ir.core import Attr, Block, BlockArg, Operand, Operation, Value, Variadic
from tilec.ir.dtypes import DType, Type, i1
from tilec.ir.ops.common import check_int_scalar, elem_dtype
from tilec.ir.types import TileType


class YieldOp(Operation):
    """Ends a region, passing values to the op that owns it."""

    name = "tile.yield"
    values = Variadic()
    num_results = 0
    traits = frozenset({"terminator"})


def yielded_values(block: Block) -> list[Value]:
    """The values the block's `tile.yield` passes on ([] if it has none)."""
    term = block.terminator
    return term.values if isinstance(term, YieldOp) else []


def _check_yield(op: Operation, block: Block, types: list[Type], what: str) -> None:
    term = block.terminator
    got = [v.type for v in yielded_values(block)]
    if term is None and types:
        raise op.error(f"{what} must end with 'tile.yield' of {len(types)} values")
    if got != types:
        raise op.error(f"{what} yields {len(got)} values of other types than the op's results")


class ForOp(Operation):
    """for iv in range(lb, ub, step) with loop-carried values.

    Operands: lb, ub, step, then the initial values. The body's arguments are the induction
    variable and the carried values; it yields the next carried values; the results are the
    last ones. `unroll` asks for a compile-time unrolled loop (bounds must then be constants).
    `stages` > 1 asks for software pipelining: the loads of the next `stages - 1` iterations
    issued while this one computes (Triton's `tl.range(..., num_stages=stages)`; a hint that
    does not change what the loop computes). `reread` marks a loop over the part of a row past its
    shared-memory cache (`split-rows`): `reuse` leaves its loads reading global memory."""

    name = "tile.for"
    lower = Operand()
    upper = Operand()
    step = Operand()
    inits = Variadic()
    attrs = {
        "unroll": Attr("bool", required=False, default=False),
        "stages": Attr("int", required=False, default=0),
        "reread": Attr("bool", required=False, default=False),
    }
    num_results = None
    num_regions = 1

    @property
    def body(self) -> Block:
        return self.regions[0]

    @property
    def induction_var(self) -> BlockArg:
        return self.body.args[0]

    @property
    def iter_args(self) -> list[BlockArg]:
        return self.body.args[1:]

    def verify_(self) -> None:
        for v, what in zip((self.lower, self.upper, self.step), ("lower bound", "upper bound", "step")):
            check_int_scalar(self, v, what)
        if not (self.lower.type == self.upper.type == self.step.type):
            raise self.error("bounds and step must have one dtype")
        if len(self.regions) != 1:
            raise self.error("has one region")
        body = self.body
        if not body.args or body.args[0].type != self.lower.type:
            raise self.error("body's first argument is the induction variable, typed like the bounds")
        init_types = [v.type for v in self.inits]
        if [a.type for a in self.iter_args] != init_types:
            raise self.error("body's carried arguments must match the initial values' types")
        if [r.type for r in self.results] != init_types:
            raise self.error("results must match the initial values' types")
        _check_yield(self, body, init_types, "body")


class IfOp(Operation):
    """Runs the then-region if `cond` is true, else the else-region; results come from their yields."""

    name = "tile.if"
    cond = Operand()
    num_results = None
    num_regions = 2

    def verify_(self) -> None:
        if self.cond.type != i1:
            raise self.error("condition must be an i1 scalar")
        if len(self.regions) != 2:
            raise self.error("has a then-region and an else-region")
        types = [r.type for r in self.results]
        for block, what in zip(self.regions, ("then-region", "else-region")):
            if block.args:
                raise self.error(f"{what} takes no arguments")
            _check_yield(self, block, types, what)


class WarpSpecializeOp(Operation):
    """Runs partitions concurrently on disjoint warps of the CTA.

    Region 0 is the default partition (the kernel's warps); regions 1.. are workers, each with
    `worker_warps[i]` warps and a register budget `worker_regs[i]`. Operands are the captured
    values, `captures[i]` of them for partition i, in order; each partition's block arguments
    receive its captures. Partitions see nothing else (isolated). Workers take no register tiles.
    The default partition's yield gives the op's results."""

    name = "tile.warp_specialize"
    attrs = {
        "captures": Attr("ints"),
        "worker_warps": Attr("ints"),
        "worker_regs": Attr("ints"),
    }
    num_results = None
    num_regions = -1  # one per partition
    captured = Variadic()
    traits = frozenset({"isolated"})

    def partition_captures(self, i: int) -> list[Value]:
        counts = self.attr("captures")
        start = sum(counts[:i])
        return self.captured[start : start + counts[i]]

    def verify_(self) -> None:
        counts, warps, regs = self.attr("captures"), self.attr("worker_warps"), self.attr("worker_regs")
        n = len(self.regions)
        if n < 2:
            raise self.error("needs a default partition and at least one worker")
        if len(counts) != n:
            raise self.error(f"has {n} partitions but {len(counts)} capture counts")
        if len(warps) != n - 1 or len(regs) != n - 1:
            raise self.error("needs worker_warps and worker_regs for each worker partition")
        if sum(counts) != len(self.operands):
            raise self.error(f"capture counts add up to {sum(counts)}, the op has {len(self.operands)} operands")
        for w in warps:
            if w < 1 or w & (w - 1):
                raise self.error(f"worker warps must be powers of two, got {w}")
        for r in regs:
            if not 24 <= r <= 256 or r % 8:
                raise self.error(f"worker register budgets must be multiples of 8 in 24..256, got {r}")
        for i, block in enumerate(self.regions):
            caps = self.partition_captures(i)
            if [a.type for a in block.args] != [v.type for v in caps]:
                raise self.error(f"partition {i}'s arguments must match its captures")
            if i > 0:
                for a in block.args:
                    if isinstance(a.type, TileType):
                        raise self.error(f"worker partition {i} takes a register tile; workers take none")
                _check_yield(self, block, [], f"worker partition {i}")
        _check_yield(self, self.regions[0], [r.type for r in self.results], "default partition")
        for r in self.results:
            if not isinstance(r.type, (TileType, DType)):
                raise self.error("results must be tiles or scalars")


class AssertOp(Operation):
    """Stops the kernel with `message` where `cond` is false (any element of a tile): the bounds
    check of an indirect index, as Inductor writes it. Triton compiles the kernel with asserts
    enabled where it holds one."""

    name = "tile.assert"
    cond = Operand()
    attrs = {"message": Attr("str")}
    num_results = 0

    def verify_(self) -> None:
        if elem_dtype(self.cond.type) != i1:
            raise self.error("cond must have dtype i1")
