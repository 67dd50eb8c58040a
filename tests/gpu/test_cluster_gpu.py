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


@pytest.mark.parametrize("exchange", ["deferred", "push"])
@pytest.mark.parametrize(
    ("op", "n", "ctas", "warps", "shared"),
    [
        ("rmsnorm", 131072, 8, 4, True),
        ("softmax", 262144, 8, 8, True),
        ("layernorm", 131072, 4, 8, True),
        ("rmsnorm", 131072, 4, 16, False),
    ],
)
def test_each_exchange_equals_the_reference(
    cluster, op: str, n: int, ctas: int, warps: int, shared: bool, exchange: str
) -> None:
    """The exchange with the second barrier's wait at the kernel's end, and the one pushing each
    CTA's partials into its peers' shared memory (st.async onto their mbarriers): every launch
    (of several: a race shows in one of a few) equals the reference."""
    from gpu_support import hopper

    if not hopper():
        pytest.skip("thread-block clusters need Hopper or newer")
    if exchange == "deferred" and not shared:
        pytest.skip("the deferred wait is the shared-memory kernels'")
    for _ in range(4):
        cluster.checked(op, 133, n, ctas, warps, shared, exchange)


@pytest.mark.parametrize("rows", [2, 8])
@pytest.mark.parametrize(
    ("op", "n", "ctas", "warps"),
    [("rmsnorm", 131072, 8, 4), ("softmax", 262144, 8, 8), ("layernorm", 131072, 4, 8), ("layernorm", 262144, 16, 8)],
)
def test_several_rows_a_cluster_equal_the_reference(cluster, op: str, n: int, ctas: int, warps: int, rows: int) -> None:
    """Rows taken in pairs by each cluster, the next row's copies issued before this row's exchange
    (two sets of buffers): a copy landing in the set still being read, or an exchange mixing two
    rows' partials, would change the output."""
    from gpu_support import hopper

    if not hopper():
        pytest.skip("thread-block clusters need Hopper or newer")
    for _ in range(3):
        cluster.checked(op, 5 * rows, n, ctas, warps, True, "gather", rows)


@pytest.mark.parametrize("exchange", ["barriers", "push"])
@pytest.mark.parametrize(
    ("op", "cols", "ctas", "chunk", "warps"),
    # the last: 8 elements of a chunk a thread, LayerNorm's statistics kept per lane (welford-lanes);
    # softmax's are kept per lane in every cluster form (softmax-lanes)
    [
        ("softmax", 262144, 16, 4096, 8),
        ("softmax", 65536, 2, 8192, 8),
        ("layernorm", 131072, 8, 4096, 4),
        ("layernorm", 65536, 8, 1024, 4),
    ],
)
def test_the_plans_cluster_form_launches_as_the_hook_launches_it(
    op: str, cols: int, ctas: int, chunk: int, warps: int, exchange: str
) -> None:
    """The frontend's kernel through the Gluon pipeline with the plan's `cluster` option (clusters
    of 16 CTAs included, a size Hopper allows only on request), loaded as the hook loads a kernel
    it took and run three times (Triton, the compiled kernel, its bound C launcher): equal to the
    op."""
    import torch
    from bench_scripts import meta_kernel
    from gpu_support import hopper

    from tilec.emit.gluon import emit_gluon
    from tilec.ir import Module, parse, print_module
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan
    from tilec.runtime.launch import load_kernel
    from tilec.testing import assert_close

    if not hopper():
        pytest.skip("thread-block clusters need Hopper or newer")
    module = parse(print_module(Module([meta_kernel(op, 512, cols).kernel])))  # a grid of 512 clusters
    plan = f"xblock=1,chunk={chunk},num_warps={warps},cluster={ctas},exchange={exchange}"
    run_pipeline(module, with_plan("gluon-default", plan))
    kernel = module.kernels[0]
    assert kernel.launch.num_ctas == ctas
    if op == "layernorm":  # per lane where a thread holds at most 8 elements of a chunk
        assert (chunk // (32 * warps) <= 8) == (not any(o.name == "tile.welford" for o in kernel.walk())), plan
    if op == "softmax":
        assert not any(o.name == "tile.softmax_reduce" for o in kernel.walk()), plan
    taken = load_kernel(kernel.name, emit_gluon(kernel).source, "gluon", order=list(range(len(kernel.params))))
    x = torch.randn(512, cols, device="cuda", dtype=torch.bfloat16)
    w, b = (torch.randn(cols, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    if op == "softmax":  # masked logits: a few -inf a row, one row of -inf only (NaN, as torch gives)
        x[:, ::997] = float("-inf")
        x[3] = float("-inf")
    xf = x.float()
    if op == "softmax":
        expected, inputs = torch.softmax(xf, -1), (x,)
    else:
        expected, inputs = torch.nn.functional.layer_norm(xf, (cols,), w.float(), b.float(), 1e-6), (x, w, b)
    for _ in range(3):
        y = torch.full_like(x, float("nan"))
        taken.run(*inputs, y, stream=torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        assert_close(y.float(), expected.to(torch.bfloat16).float(), torch.bfloat16, what=f"{op} {plan}")


@pytest.mark.parametrize(("rows", "programs"), [(37, 5), (8, 8), (3, 4)])
def test_a_pushed_exchange_in_a_loop_equals_rmsnorm(rows: int, programs: int) -> None:
    """tests/kernels/rmsnorm_cluster_rows.tile as tilec emits it: P clusters each taking rows pid,
    pid + P, ... in a loop, the partial sums pushed every row (two sets of slots and mbarriers by
    the iteration's parity, re-armed after each wait): every launch (of several) equals RMSNorm,
    with clusters taking several rows (parities and phases wrapping), one, or none."""
    from pathlib import Path

    import torch
    from gpu_support import hopper

    from tilec.emit.gluon import emit_gluon
    from tilec.ir import parse_file
    from tilec.runtime import load_source

    if not hopper():
        pytest.skip("thread-block clusters need Hopper or newer")
    kernel = parse_file(Path(__file__).resolve().parents[1] / "kernels" / "rmsnorm_cluster_rows.tile").kernels[0]
    launch = load_source(emit_gluon(kernel).source).launch
    cols = 4 * kernel.constexprs["W"]
    g = torch.Generator(device="cuda").manual_seed(rows)
    x = torch.randn(rows, cols, device="cuda", generator=g).bfloat16()
    w = torch.randn(cols, device="cuda", generator=g).bfloat16()
    xf = x.float()
    want = ((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).bfloat16().float() * w.float()).bfloat16()
    for _ in range(4):
        y = torch.full_like(x, float("nan"))
        launch(x, w, y, rows, programs)
        torch.testing.assert_close(y.float(), want.float(), rtol=1.6e-2, atol=1e-5)
