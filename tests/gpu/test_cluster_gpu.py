"""On the GPU: bench/cluster.py's kernels — each row split across a thread-block cluster of 4 or 8
CTAs, the partial statistics exchanged through distributed shared memory — equal an fp32
reference over every element (RMSNorm, softmax; rows of 131072 and 262144 bf16 elements): a CTA
that combined other statistics than its peers would normalize its slice of the row wrongly."""

from __future__ import annotations

import pytest
from bench_scripts import load

pytestmark = [pytest.mark.gpu]


@pytest.fixture(scope="module")
def cluster():
    return load("cluster")


@pytest.mark.parametrize("op", ["rmsnorm", "softmax"])
@pytest.mark.parametrize(("n", "ctas"), [(131072, 4), (131072, 8), (262144, 8)])
def test_a_row_split_across_a_cluster_equals_the_reference(cluster, op: str, n: int, ctas: int) -> None:
    from gpu_support import hopper

    if not hopper():
        pytest.skip("thread-block clusters need Hopper or newer")
    cluster.checked(op, 37, n, ctas, 16)
