"""softmax-lanes: softmax over a row split across a cluster, each CTA's chunks' statistics kept
per lane, computes what the per-chunk chain computed and what torch computes, in the
interpreter: rows far from zero, rows holding -inf (a masked logit), rows of -inf only, NaN and
+inf included. And through the Triton pipeline's loops with a plan's `lanes_reread` (each chunk
read again from global memory)."""

from __future__ import annotations

import math

import hypothesis
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples
from test_cluster_rows import clustered

from examples import assert_forms_agree, example, run_interp, run_triton
from tilec import interp
from tilec.ir.ops import ForOp, LoadOp, SoftmaxReduceOp
from tilec.passes.pipelines import with_plan

COLS = 8192


def _pipeline(ctas: int, chunks: int, lanes: bool, exchange: str) -> str:
    cut = f"cluster-rows{{ctas={ctas},chunks={chunks},warps=4,exchange={exchange}}},canonicalize"
    return f"{cut}{',softmax-lanes' if lanes else ''},cse,dce"


def _rows(rows: int, seed: int, scale: float, special: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, COLS, generator=g) * scale + scale
    picks = torch.randint(0, COLS, (rows, 16), generator=g)
    if special == "-inf":  # masked logits, one row entirely
        x.scatter_(1, picks, -math.inf)
        x[0] = -math.inf
    elif special == "nan":
        x[0, picks[0, 0]] = math.nan
    elif special == "+inf":
        x[0, picks[0, 0]] = math.inf
    return x.bfloat16()


def _run(kernel: object, x: torch.Tensor) -> torch.Tensor:
    y = torch.full_like(x, 7.0)
    interp.run(kernel, x, y, grid=(x.shape[0],))
    return y


@settings(max_examples=examples(10), deadline=None)
@given(
    ctas=st.sampled_from([2, 4]),
    chunks=st.sampled_from([2, 4]),
    rows=st.integers(1, 3),
    scale=st.sampled_from([1.0, 30.0]),
    special=st.sampled_from(["none", "-inf", "nan", "+inf"]),
    exchange=st.sampled_from(["barriers", "push"]),
    seed=st.integers(0, 2**16),
)
def test_chunk_statistics_kept_per_lane_equal_the_chain(
    ctas: int, chunks: int, rows: int, scale: float, special: str, exchange: str, seed: int
) -> None:
    """Equal to the chain of per-chunk reductions within bf16's rounding, NaN where it is NaN
    (a row of -inf only, a row holding NaN or +inf), and to torch's softmax."""
    lanes = clustered("softmax", COLS, _pipeline(ctas, chunks, True, exchange))
    chain = clustered("softmax", COLS, _pipeline(ctas, chunks, False, exchange))
    assert not [op for op in lanes.walk() if isinstance(op, SoftmaxReduceOp)]
    x = _rows(rows, seed, scale, special)
    got, want = _run(lanes, x), _run(chain, x)
    torch.testing.assert_close(got.float(), want.float(), rtol=1.6e-2, atol=1e-6, equal_nan=True)
    torch.testing.assert_close(
        got.float(), torch.softmax(x.double(), -1).bfloat16().float(), rtol=1.6e-2, atol=1e-6, equal_nan=True
    )


def test_the_plans_cluster_form_keeps_softmax_statistics_per_lane() -> None:
    """Through the Gluon pipeline with a table's cluster plan (rows of 131072 in clusters of 8,
    each CTA's 16384 in two chunks of 8192 over 4 warps): no per-chunk statistics are left, one
    max and one sum reduction a CTA before the exchange."""
    kernel = clustered("softmax", 131072, with_plan("gluon-default", "xblock=1,chunk=8192,num_warps=4,cluster=8"))
    assert not [op for op in kernel.walk() if isinstance(op, SoftmaxReduceOp)]
    kinds = sorted(op.attr("kind") for op in kernel.walk() if op.name == "tile.reduce")
    assert kinds == ["max", "sum"], kinds


@settings(max_examples=examples(16), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    rows=st.sampled_from([1, 3]),
    cols=st.sampled_from([1000, 2048, 3001, 4096]),
    dtype=st.sampled_from(["bf16", "f32"]),
    rblock=st.sampled_from([256, 512, 1024]),
    warps=st.sampled_from([2, 4]),
    specials=st.booleans(),
)
@hypothesis.example(rows=3, cols=4096, dtype="bf16", rblock=1024, warps=4, specials=True)
@hypothesis.example(
    rows=3, cols=3001, dtype="bf16", rblock=512, warps=4, specials=False
)  # misaligned: align-rows' pieces
def test_a_plans_lanes_reread_equals_eager(
    rows: int, cols: int, dtype: str, rblock: int, warps: int, specials: bool
) -> None:
    """The Triton pipeline with a plan's `lanes_reread` (each loop's chunks read again from global
    memory for the sums) equals eager in the interpreter, NaN, +inf and -inf included; and it
    computes what the pipeline computes without the option within rounding."""
    ex = example("softmax", rows, cols, dtype)
    if specials:
        ex = ex.with_specials()
    plan = f"xblock=1,rblock={rblock},num_warps={warps}"
    kernel = ex.kernel(with_plan("triton-default", f"{plan},lanes_reread=true"))
    got = run_interp(ex, kernel)
    ex.check(got, f"triton-default with {plan},lanes_reread=true")
    assert_forms_agree(got, run_interp(ex, ex.kernel(with_plan("triton-default", plan))))


def test_the_triton_lanes_plan_reads_each_chunk_three_times_with_no_reduction_in_a_loop() -> None:
    """The plan the H200's rules give softmax rows of 16384 (chunks of 2048 over 16 warps,
    `lanes_reread`), here over rows of 8192 (Inductor splits a few rows of 16384 across kernels):
    three loops over the row, none with a reduction inside; one max and one sum reduction a row;
    the emitted Triton kernel equals eager in Triton's interpreter."""
    ex = example("softmax", 8, 8192)
    kernel = ex.kernel(with_plan("triton-default", "xblock=1,rblock=2048,num_warps=16,lanes_reread=true"))
    loops = [op for op in kernel.body.ops if isinstance(op, ForOp)]
    assert len(loops) == 3
    assert not [op for loop in loops for op in loop.walk() if op.name in ("tile.reduce", "tile.softmax_reduce")]
    kinds = sorted(op.attr("kind") for op in kernel.walk() if op.name == "tile.reduce")
    assert kinds == ["max", "sum"], kinds
    assert all(sum(isinstance(op, LoadOp) for op in loop.walk()) == 1 for loop in loops)
    ex.check(run_triton(ex, kernel), "the emitted Triton kernel")
