"""softmax-lanes: softmax over a row split across a cluster, each CTA's chunks' statistics kept
per lane, computes what the per-chunk chain computed and what torch computes, in the
interpreter: rows far from zero, rows holding -inf (a masked logit), rows of -inf only, NaN and
+inf included."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples
from test_cluster_rows import clustered

from tilec import interp
from tilec.ir.ops import SoftmaxReduceOp
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
