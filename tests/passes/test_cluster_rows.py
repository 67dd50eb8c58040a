"""cluster-rows (and the plan's `cluster` option, which runs it): the frontend's long-row kernels
split across a thread-block cluster compute what the ops compute, in the interpreter (which
checks every read of the shared-memory copies against its wait), and compile for Hopper."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
import torch
from bench_scripts import meta_kernel
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

from tilec import interp
from tilec.emit.check import check_compile
from tilec.emit.gluon import emit_gluon
from tilec.inductor.autotune import CLUSTER_PLANS, partly_cached_plan
from tilec.ir import Module, parse, print_module
from tilec.passes import run_pipeline
from tilec.passes.base import collecting_remarks
from tilec.passes.chooser import TABLES
from tilec.passes.pipelines import with_plan

OPS = ("rmsnorm", "layernorm", "softmax")


@cache
def logical(op: str, cols: int) -> str:
    """The frontend's kernel for `op` over bf16 rows of `cols` (Inductor's loop over the row), as text."""
    return print_module(Module([meta_kernel(op, 4096, cols).kernel]))


def reference(op: str, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The op in float64."""
    xd, wd, bd = x.double(), w.double(), b.double()
    if op == "softmax":
        return torch.softmax(xd, -1)
    if op == "rmsnorm":
        return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * wd
    return torch.nn.functional.layer_norm(xd, xd.shape[-1:], wd, bd, 1e-5)


def assert_op_close(op: str, y: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> None:
    """`y` (bf16) equals the op (in float64, rounded to bf16) within bf16's rounding (rtol 1.6e-2)
    and f32 arithmetic's error, 1e-5 of the largest term summed: LayerNorm's bias can cancel the
    normalized value (of scale up to 5 and more) to near 0, where the f32 statistics' error, a few
    millionths of that value, is all that is left."""
    expected = reference(op, x, w, b)
    scale = torch.ones_like(expected)
    if op == "layernorm":  # the normalized value, the bias
        scale = torch.maximum(scale, (expected - b.double()).abs() + b.double().abs())
    got, want = y.double(), expected.bfloat16().double()
    assert torch.isfinite(got).all(), "an element is not finite (or was never written)"
    off = (got - want).abs() > 1e-5 * scale + 1.6e-2 * want.abs()
    assert not off.any(), f"{int(off.sum())} elements off, the first at {off.nonzero()[0].tolist()}"


def clustered(op: str, cols: int, pipeline: str) -> Any:
    module = parse(logical(op, cols))
    with collecting_remarks() as remarks:
        run_pipeline(module, pipeline)
    assert not [r for r in remarks if "cluster" in str(r)], remarks
    return module.kernels[0]


@settings(max_examples=examples(12), deadline=None)
@given(
    op=st.sampled_from(OPS),
    cols=st.sampled_from([65536, 131072]),
    ctas=st.sampled_from([2, 4, 8]),
    chunks=st.sampled_from([2, 4]),
    rows=st.integers(1, 3),
    seed=st.integers(0, 2**16),
    through_plan=st.booleans(),
    exchange=st.sampled_from(["barriers", "push"]),
    prefetch=st.integers(0, 3),
    cached_quarters=st.sampled_from([4, 3, 2]),
)
# LayerNorm's bias cancelling a normalized value of 5.4 to 1.1e-4: the f32 statistics of 65536
# values put it 1.2e-5 off, within 1e-5 of the terms' scale but not of 1
@example(
    op="layernorm",
    cols=65536,
    ctas=2,
    chunks=2,
    rows=3,
    seed=65535,
    through_plan=False,
    exchange="barriers",
    prefetch=0,
    cached_quarters=4,
)
def test_a_row_split_across_a_cluster_computes_the_op(
    op: str,
    cols: int,
    ctas: int,
    chunks: int,
    rows: int,
    seed: int,
    through_plan: bool,
    exchange: str,
    prefetch: int,
    cached_quarters: int,
) -> None:
    """Each CTA's statistics over its slice, gathered and folded in CTA order: the row's, in every
    CTA; the slice read from shared memory after its group's wait (the interpreter would report a
    read before it). Equal to the op within bf16 rounding (the sums' order differs from torch's).
    `through_plan`: the Gluon pipeline with the plan's `cluster` option, every later pass on it.
    `exchange`: the gather's (how the GPU exchanges the values; the interpreter gathers alike).
    `prefetch` (through the plan): the weights' reads after the gather moved that many chunks
    ahead (early-loads), the first before the gather. `cached_quarters`: the quarters of the row
    cached (`row_cache`; at least a chunk a CTA), the rest read from global memory by each loop."""
    chunk = cols // (ctas * chunks)
    row_cache = cols * 2 * cached_quarters // 4 if cached_quarters < 4 and chunks > 2 else 0
    if through_plan:
        plan = f"xblock=1,chunk={chunk},num_warps=4,cluster={ctas},exchange={exchange},prefetch={prefetch}"
        pipeline = with_plan("gluon-default", plan + f",row_cache={row_cache}")
    else:
        options = f"ctas={ctas},chunks={chunks},warps=4,exchange={exchange},row_cache={row_cache}"
        pipeline = f"cluster-rows{{{options}}},canonicalize,cse,dce"
    kernel = clustered(op, cols, pipeline)
    slices = [o for o in kernel.walk() if o.name == "tile.smem_alloc"]
    assert len(slices) == (chunks * cached_quarters // 4 if row_cache else chunks)
    assert kernel.launch.num_ctas == ctas and kernel.attributes["cluster"] == ctas
    assert {o.attr("exchange") for o in kernel.walk() if o.name == "tile.cluster_gather"} == {exchange}
    if through_plan and op != "softmax":  # the weight's first read: ahead of the gather with prefetch
        ops, weight = kernel.body.ops, kernel.param("in_ptr1")
        first_weight = next(i for i, o in enumerate(ops) if o.name == "tile.load" and o.operands[0] is weight)
        gather = next(i for i, o in enumerate(ops) if o.name == "tile.cluster_gather")
        assert (first_weight < gather) == bool(prefetch)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g).bfloat16()
    w, b = torch.randn(cols, generator=g).bfloat16(), torch.randn(cols, generator=g).bfloat16()
    y = torch.full((rows, cols), float("nan")).bfloat16()
    args = {"rmsnorm": (x, w, y), "softmax": (x, y), "layernorm": (x, w, b, y)}[op]
    interp.run(kernel, *args, grid=(rows,))  # the kernel's grid is 4096 clusters: run the first rows
    assert_op_close(op, y, x, w, b)


def test_a_row_that_does_not_split_is_planned_as_usual_with_a_remark() -> None:
    """Rows of 50257 split into no power-of-two chunks: the plan plans the kernel one CTA a row."""
    module = parse(logical("softmax", 50257))
    with collecting_remarks() as remarks:
        run_pipeline(module, with_plan("gluon-default", "xblock=1,chunk=2048,num_warps=4,cluster=8"))
    assert module.kernels[0].launch.num_ctas == 1
    assert any("cluster=8: a row of 50257 does not split" in str(r) for r in remarks), remarks


@pytest.mark.parametrize("exchange", ["barriers", "push"])
@pytest.mark.parametrize("op", OPS)
def test_the_clustered_kernels_compile_for_hopper(op: str, exchange: str) -> None:
    """Through the Gluon pipeline with the plan's `cluster` option (the survey's and the rules'
    form): clusters of 8, the exchange in the PTX (the peers' slots read, or written by st.async
    onto their mbarriers), each CTA's slice its shared memory (4 chunks of 4096 bf16: 32 KiB),
    nothing spilled."""
    plan = f"xblock=1,chunk=4096,num_warps=4,cluster=8,exchange={exchange}"
    kernel = clustered(op, 131072, with_plan("gluon-default", plan))
    source = emit_gluon(kernel)
    report = check_compile(source, "sm_90")
    assert report.ok, report.error + "\n" + report.detail
    assert report.num_ctas == 8 and report.cluster_exchange and report.spills == 0, report.summary()
    assert 32768 <= report.shared_bytes < 32768 + 1024, report.summary()
    assert ("st.async.shared::cluster" in source.source) == (exchange == "push")


def test_a_partly_cached_slice_leaves_room_for_two_ctas_an_sm() -> None:
    """The H100's RMSNorm plan at rows of 262144 (clusters of 4, three quarters of each 128 KiB
    slice cached, 16 warps capped at 64 registers, the weight read a chunk ahead) compiled for
    sm_90: 96 KiB of shared memory and at most 64 registers a thread, so two CTAs share an SM
    (what its measurement, bench/results/2026-11-27-h100-slice-cache, rests on), nothing spilled;
    the weight's first read before the exchange."""
    plan = "xblock=1,chunk=8192,num_warps=16,cluster=4,row_cache=393216,exchange=push,maxnreg=64,prefetch=1"
    kernel = clustered("rmsnorm", 262144, with_plan("gluon-default", plan))
    assert kernel.launch.maxnreg == 64 and kernel.attributes["prefetch"] == 1
    names = [o.name for o in kernel.body.ops]
    assert names.index("tile.load") < names.index("tile.cluster_gather")
    report = check_compile(emit_gluon(kernel), "sm_90")
    assert report.ok, report.error + "\n" + report.detail
    assert report.num_ctas == 4 and report.registers <= 64 and report.spills == 0, report.summary()
    # an SM holds 228 KiB, of which each CTA also reserves 1 KiB
    assert 6 * 16384 <= report.shared_bytes <= 233472 // 2 - 1024, report.summary()


# every cluster plan the GPUs' tables take: (op, the row length its rule starts at, the plan),
# and the autotuner's (at rows of 131072)
FAMILIES = {"sum": "rmsnorm", "mean-var": "layernorm", "softmax": "softmax"}
TABLE_PLANS = sorted(
    {(FAMILIES[r.family], r.lo // 2, r.plan) for t in TABLES.values() for r in t if "cluster=" in (r.plan or "")}
    | {(op, 131072, plan) for op in OPS for plan in [*CLUSTER_PLANS, partly_cached_plan(131072)]}
)


@pytest.mark.parametrize(("op", "cols", "plan"), TABLE_PLANS)
def test_each_cluster_rule_of_the_tables_computes_the_op(op: str, cols: int, plan: str) -> None:
    """The tables' cluster plans at the first row length of their rules (and the autotuner's
    cluster candidates), through the Gluon pipeline as the hook runs them: split across the
    cluster they name, equal to the op."""
    kernel = clustered(op, cols, with_plan("gluon-default", plan))
    assert f"cluster={kernel.launch.num_ctas}" in plan
    x = torch.randn(1, cols).bfloat16()
    w, b = torch.randn(cols).bfloat16(), torch.randn(cols).bfloat16()
    y = torch.full((1, cols), float("nan")).bfloat16()
    args = {"rmsnorm": (x, w, y), "softmax": (x, y), "layernorm": (x, w, b, y)}[op]
    interp.run(kernel, *args, grid=(1,))
    assert_op_close(op, y, x, w, b)


def test_options_out_of_range_are_the_pipelines_errors() -> None:
    from tilec.passes import PipelineError, parse_pipeline

    for bad in ("ctas=3", "ctas=32", "chunks=0", "warps=3"):
        with pytest.raises(PipelineError, match="pass 'cluster-rows': ctas must be 2, 4, 8 or 16"):
            parse_pipeline(f"cluster-rows{{{bad}}}")
    with pytest.raises(PipelineError, match="row_cache must be 0"):
        parse_pipeline("cluster-rows{row_cache=-1}")


def test_a_plans_prefetch_is_for_cluster_plans() -> None:
    """`prefetch` below 0 is the pipeline's error; on a plan without a cluster it changes nothing
    and the remark says why."""
    from tilec.passes import PipelineError, parse_pipeline

    with pytest.raises(PipelineError, match="prefetch must be 0"):
        parse_pipeline("plan{prefetch=-1}")
    module = parse(logical("rmsnorm", 65536))
    with collecting_remarks() as remarks:
        run_pipeline(module, with_plan("gluon-default", "xblock=1,chunk=8192,num_warps=8,prefetch=1"))
    assert "prefetch" not in module.kernels[0].attributes
    assert any("prefetch=1: only a cluster plan's chunks read ahead" in str(r) for r in remarks), remarks


def test_an_argmax_over_a_long_row_is_left_with_the_remark_why() -> None:
    """An index within a CTA's chunk is not the row's: `torch.argmax` over rows of 131072 stays
    one CTA a row."""
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture

    x = torch.empty(4096, 131072, dtype=torch.bfloat16, device="meta")
    (k,) = capture(lambda t: torch.argmax(t, -1), [x], strict=True)
    assert isinstance(k.result, Lowered)
    module = Module([k.result.kernel])
    with collecting_remarks() as remarks:
        run_pipeline(module, "cluster-rows{ctas=8,chunks=4,warps=4}")
    assert module.kernels[0].launch.num_ctas == 1
    assert ["'tile.argreduce' reduces other than along the row, or gives an index" in str(r) for r in remarks] == [True]
