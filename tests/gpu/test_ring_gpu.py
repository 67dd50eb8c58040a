"""On the GPU: a norm's fused backward (Inductor's mix-order kernel) through the `gluon-ring`
pipeline (`band-ring`: one program a band, the row's chunks in a ring of shared-memory slots that
is also the next row's prefetch) computes dx and the weights' gradients as the backward graph
does, within bf16's tolerance, and the same bits on every run. Rows of 8192 (two chunks of 4096)
and 32768 (eight: every slot of the ring refilled, several rows a band). The hook does not take
this form yet (its mix-order kernels have a Triton plan only); the kernel is built, emitted and
launched as `bench/ring_bwd_probe.py` times it (`tilec_ring`)."""

from __future__ import annotations

import pytest
import torch
from bench_scripts import load

from tilec.testing import assert_close

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("op", ["rms", "ln"])
@pytest.mark.parametrize(("m", "n"), [(1056, 8192), (528, 32768)])
def test_the_ring_form_computes_the_backward(op: str, m: int, n: int) -> None:
    if op == "ln" and n > 16384:
        pytest.skip("LayerNorm's dW and dB over rows of 32768 spill one CTA's registers (62% of a copy at best)")
    made = load("ring_bwd_probe").tilec_ring(op, m, n)
    assert made["kernel"].attributes["band_chunks"] == n // 4096
    got = made["run"]()
    torch.cuda.synchronize()
    want = made["want"]
    assert len(got) == len(want) == (3 if op == "ln" else 2)  # dx, then each weight's gradient
    for i, (a, ref) in enumerate(zip(got, want)):
        assert_close(a, ref, torch.bfloat16, what="dx" if i == 0 else f"column sum {i}")
    again = made["run"]()
    assert all(torch.equal(a, b) for a, b in zip(got, again)), "two runs differ"


@pytest.mark.parametrize("op", ["rms", "ln"])
@pytest.mark.parametrize(
    ("m", "n", "ctas", "chunk"),
    [(264, 32768, 2, 2048), (300, 65536, 2, 2048), (300, 65536, 8, 1024)],
)
def test_the_cluster_form_computes_the_backward(op: str, m: int, n: int, ctas: int, chunk: int) -> None:
    """The `gluon-cluster-ring` pipeline (`band-cluster`: each row split across a cluster, the row's
    statistics pushed across it every row) at rows of 32768 and 65536: several rows a band, the
    last band cut short (300 rows over 66 clusters of 2, and over 16 of 8), the same results as the
    backward graph and the same bits twice. (Inductor's own capture of fewer rows, 40x32768 or
    132x65536, splits the column reductions otherwise: not a banded kernel.)"""
    from tilec.passes.pipelines import with_options

    pipeline = with_options("gluon-cluster-ring", "band-cluster", f"ctas={ctas},chunk={chunk},warps=8")
    made = load("ring_bwd_probe").tilec_ring(op, m, n, pipeline=pipeline)
    assert made["kernel"].launch.num_ctas == ctas
    got = made["run"]()
    torch.cuda.synchronize()
    want = made["want"]
    assert len(got) == len(want) == (3 if op == "ln" else 2)
    for i, (a, ref) in enumerate(zip(got, want)):
        assert_close(a, ref, torch.bfloat16, what="dx" if i == 0 else f"column sum {i}")
    again = made["run"]()
    assert all(torch.equal(a, b) for a, b in zip(got, again)), "two runs differ"
