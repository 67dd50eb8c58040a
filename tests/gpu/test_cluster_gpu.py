"""On the GPU: bench/cluster.py's kernels — each row split across a thread-block cluster of 4 or 8
CTAs, the partial statistics exchanged through distributed shared memory, each CTA's slice of the
row in its registers or in its shared memory — equal an fp32 reference over every element
(RMSNorm, softmax, LayerNorm; rows of 65536 to 262144 bf16 elements, clusters of 4 to 16): a CTA that combined other statistics
than its peers would normalize its slice of the row wrongly, one that read a chunk of shared memory
before its copy landed would too."""

from __future__ import annotations

import pytest
from bench_scripts import load

pytestmark = [pytest.mark.gpu]


@pytest.fixture(scope="module")
def cluster():
    return load("cluster")


IN_REGISTERS = [(131072, 4, 16, False), (131072, 8, 16, False), (262144, 8, 16, False)]
IN_SHARED = [(65536, 4, 8, True), (131072, 8, 4, True), (262144, 8, 8, True), (262144, 16, 8, True)]


@pytest.mark.parametrize(
    ("op", "n", "ctas", "warps", "shared"),
    [(op, *case) for op in ("rmsnorm", "softmax") for case in IN_REGISTERS + IN_SHARED]
    + [("layernorm", *case) for case in IN_SHARED],
)
def test_a_row_split_across_a_cluster_equals_the_reference(
    cluster, op: str, n: int, ctas: int, warps: int, shared: bool
) -> None:
    from gpu_support import hopper

    if not hopper():
        pytest.skip("thread-block clusters need Hopper or newer")
    cluster.checked(op, 37, n, ctas, warps, shared)
