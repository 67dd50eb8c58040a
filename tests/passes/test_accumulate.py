"""accumulate's unrolled chains: a straight-line chain of chunk sums (what `cluster-rows` makes
of a CTA's chunks) carried as one running tile computes what the chain of reductions computed,
in the interpreter; in RMSNorm's cluster form it leaves one reduction a CTA before the exchange."""

from __future__ import annotations

from pathlib import Path

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples
from test_cluster_rows import assert_op_close, clustered

from tilec import interp
from tilec.ir import parse
from tilec.ir.ops import ReduceOp
from tilec.passes import run_pipeline
from tilec.passes.pipelines import with_plan

GOLDEN = Path(__file__).with_name("accumulate.tile")


def _unrolled_sums(chunk: int, chained: bool) -> object:
    """accumulate.tile's @unrolled_sums (three chunk sums added to 1, the third masked at the
    row's 700th column), planned one row a program over four warps, with or without the pass."""
    module = parse(GOLDEN.read_text())
    module.kernels = [k for k in module.kernels if k.name == "unrolled_sums"]
    run_pipeline(module, f"plan{{xblock=1,rblock={chunk},num_warps=4}}" + (",accumulate" if chained else ""))
    return module.kernels[0]


@settings(max_examples=examples(10), deadline=None)
@given(
    chunk=st.sampled_from([128, 256]),
    rows=st.integers(1, 4),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
    seed=st.integers(0, 2**16),
)
def test_a_chain_carried_as_one_tile_sums_what_its_reductions_summed(
    chunk: int, rows: int, scale: float, seed: int
) -> None:
    """The chain's total, 1 plus the squares of a row's first 3 chunks up to its 700th column
    (rows 700 apart: chunks of 256 reach into the next row, which the third chunk's mask leaves
    out), equals the per-chunk reductions' within f32 rounding, and a masked element adds
    nothing (past the last row: NaN)."""
    g = torch.Generator().manual_seed(seed)
    width = min(700, 3 * chunk)
    x = (torch.randn(rows * 700 + 3 * chunk, generator=g) * scale).bfloat16()
    x[rows * 700 :] = float("nan")
    got, want = torch.zeros(rows), torch.zeros(rows)
    interp.run(_unrolled_sums(chunk, True), x, got, grid=(rows,))
    interp.run(_unrolled_sums(chunk, False), x, want, grid=(rows,))
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=0)
    rowwise = torch.stack([x[r * 700 : r * 700 + width].double().pow(2).sum() + 1 for r in range(rows)])
    torch.testing.assert_close(got.double(), rowwise, rtol=1e-5, atol=0)


def test_rmsnorm_in_a_cluster_reduces_its_chunks_once_a_cta() -> None:
    """RMSNorm over rows of 65536 in clusters of 2, each CTA's 32768 in four chunks over 16 warps
    (the plans the tables take for long rows): the Gluon pipeline leaves one sum of the CTA's
    chunks, after the last, where each chunk had its own; the kernel computes RMSNorm."""
    plan = "xblock=1,chunk=8192,num_warps=16,cluster=2"
    kernel = clustered("rmsnorm", 65536, with_plan("gluon-default", plan))
    sums = [op for op in kernel.walk() if isinstance(op, ReduceOp) and op.attr("kind") == "sum"]
    assert len(sums) == 1, sums
    chain = [
        op for op in kernel.walk() if op.name == "tile.add" and (op.results[0].name_hint or "").startswith("lanes_sum")
    ]
    assert len(chain) == 3
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(2, 65536, generator=g).bfloat16(), torch.randn(65536, generator=g).bfloat16()
    y = torch.full((2, 65536), float("nan")).bfloat16()
    interp.run(kernel, x, w, y, grid=(2,))
    assert_op_close("rmsnorm", y, x, w, w)
