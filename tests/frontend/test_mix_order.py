"""Inductor's mix-order reductions — a norm's backward with its row sums (dx) and its column sums
over the rows (the weights' gradients) fused into one kernel — lowered as banded kernels: each
program loops over a band of `RSPLIT` rows, carrying each column sum, and writes it to its row of
the workspace, whose rows the wrapper adds up. Which shapes Inductor fuses (docs/hook.md): at
least 4096 rows and twice as many rows as columns, rows of at most 16384 (`non_strict_mode`
drops the size checks, so small shapes fuse here too).

The lowered kernels compute what the backward graph computes: in tilec's interpreter as lowered
and after the Triton pipeline, and emitted as Triton under Triton's interpreter."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from profiles import examples

from tilec import interp
from tilec.frontend import Lowered
from tilec.frontend.capture import backward_graph as aot_backward_graph
from tilec.frontend.capture import capture, input_order
from tilec.frontend.logical import WORKSPACE
from tilec.interp.dtypes import TORCH_DTYPES
from tilec.ir import Kernel, parse, print_kernel
from tilec.ir.ops import LoadOp, ReduceOp
from tilec.passes import run_pipeline
from tilec.passes.chooser import signature
from tilec.passes.pipelines import with_options, with_plan
from tilec.passes.plan import band_loop
from tilec.runtime import load_source
from tilec.testing import assert_close


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-6)


def add_rmsnorm(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = x + r
    return h, rmsnorm(h, w)


def add_rmsnorm_mlp(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The residual-fused RMSNorm whose rows two projections read (gate and up): a gradient in for each."""
    h, y = add_rmsnorm(x, r, w)
    return h, y, y * 0.5


OPS: dict[str, Callable[..., Any]] = {"rmsnorm": rmsnorm, "layernorm": layernorm}


def backward_graph(m: int, n: int, op: str = "rmsnorm") -> tuple[Any, list[torch.Tensor]]:
    """The op's (`OPS`, "add_rmsnorm" or "add_rmsnorm_mlp") backward graph as AOT autograd partitions it for
    Inductor (traced on the meta device, so decompositions take their GPU branches), and CPU tensors of its inputs' layouts."""
    meta = {"dtype": torch.bfloat16, "device": "meta", "requires_grad": True}
    rows = [torch.empty(m, n, **meta) for _ in range(op.count("add") + 1)]  # x (and the residual)
    weights = [torch.empty(n, **meta) for _ in range(op.count("layer") + 1)]
    fn = {"add_rmsnorm": add_rmsnorm, "add_rmsnorm_mlp": add_rmsnorm_mlp}.get(op) or OPS[op]
    gm = aot_backward_graph(fn, [*rows, *weights])
    inputs = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            v = node.meta["val"]
            inputs.append(torch.empty_strided(v.shape, v.stride(), dtype=v.dtype))  # capture reads layouts only
    return gm, inputs


def banded(kernels: list[Any]) -> Any:
    """The graph's mix-order kernel, or None where Inductor did not fuse one."""
    found = [k for k in kernels if isinstance(k.result, Lowered) and k.result.column_sums]
    assert len(found) <= 1, [k.summary() for k in kernels]
    return found[0] if found else None


@pytest.mark.parametrize(("m", "n", "fused"), [(4096, 2048, True), (8192, 8192, False)])
def test_a_mix_order_reduction_is_lowered_as_a_banded_kernel(m: int, n: int, fused: bool) -> None:
    gm, inputs = backward_graph(m, n)
    kernels = capture(gm, inputs, strict=True)
    assert all(k.taken for k in kernels), [k.summary() for k in kernels]
    if not fused:  # fewer rows than twice the row length: dx and the column sums reach tilec apart
        assert len(kernels) >= 2 and not any(k.result.column_sums for k in kernels)
        return
    k = banded(kernels)
    lowered = k.result
    assert (k.numel, k.rnumel) == (str(m), str(n)) and "sum" in k.reductions
    assert k.name and k.source is not None and "RSPLIT_SIZE" in k.source  # stock's kernel, generated after
    assert len(lowered.column_sums) == 1  # the weight's gradient
    assert [a.param for a in lowered.args if a.buffer == WORKSPACE] == ["ws_ptr"]
    kernel = lowered.kernel
    assert kernel.constexprs == {"XBLOCK": None, "RBLOCK": 2048, "RSPLIT": None}
    assert str(kernel.launch.grid[0]) == "cdiv(4096, RSPLIT)"
    assert signature(kernel).family == "mix-order" and signature(kernel).row_inputs == 2
    text = print_kernel(kernel)
    # the band loop: its rows, and the column sum it carries
    assert "%band_end = tile.minimum %band_after, %xnumel : i32" in text, text
    assert "tile.for %xoffset = %band_start to %band_end step %xblock iter_args(%acc_column = %column_init)" in text
    assert '%xmask = tile.cmp %xindex, %band_end {predicate = "lt"}' in text
    assert "tile.reduce %mul_" in text and '{kind = "sum", axis = 0} : tile<[RBLOCK], f32>' in text
    assert "tile.store %ws_ptr, %ws_offsets, %column, %column_mask" in text


def test_each_gpu_takes_a_mix_order_kernel_where_it_measured_it_faster() -> None:
    """Each GPU's table has measured rules for mix-order kernels (tilec's banded kernel against
    stock's, bench/results/2026-11-26-h100-fanout, -h200-fanout, -h200-band-columns): both take the residual-fused
    RMSNorm's at rows of 2048, alone and read by two projections (four row inputs); at rows of
    8192 the H200 measured a tie (stock keeps it) where the H100 measured tilec faster; a GPU
    without a table leaves it to stock."""
    from tilec.ir.target import H100, H200
    from tilec.passes.chooser import NO_TABLE, Choice, Decline, choose

    with torch._inductor.config.patch({"triton.mix_order_reduction_non_strict_mode": True}):
        small = capture(*backward_graph(64, 2048, "add_rmsnorm"), strict=True)
        wide = capture(*backward_graph(64, 8192, "add_rmsnorm"), strict=True)
        read_twice = capture(*backward_graph(64, 2048, "add_rmsnorm_mlp"), strict=True)
    small_kernel, wide_kernel, mlp_kernel = (banded(k).result.kernel for k in (small, wide, read_twice))
    assert signature(small_kernel).row_inputs == 3 and signature(mlp_kernel).row_inputs == 4
    # (the H200's residual-fused RMSNorm at rows of 2048 timed again in place since: -h200-band-columns)
    runs = {
        (H100, "small"): "2026-11-26-h100-fanout",
        (H100, "mlp"): "2026-11-26-h100-fanout",
        (H200, "small"): "2026-11-29-h200-band-columns",
        (H200, "mlp"): "2026-11-26-h200-fanout",
    }
    for (gpu, which), run in runs.items():
        taken = choose(small_kernel if which == "small" else mlp_kernel, hopper=True, gpu=gpu.name)
        assert isinstance(taken, Choice) and taken.emitter == "triton" and run in taken.reason, (gpu.name, taken)
    assert isinstance(choose(wide_kernel, hopper=True, gpu=H100.name), Choice)
    kept = choose(wide_kernel, hopper=True, gpu=H200.name)
    assert isinstance(kept, Decline) and "2026-11-26-h200-fanout: 16384x8192 76.4 vs 75.8" in kept.reason, kept
    unknown = choose(small_kernel, hopper=True, gpu="NVIDIA Unknown")
    assert isinstance(unknown, Decline) and unknown.reason.startswith(NO_TABLE), unknown


def graph_inputs(gm: Any) -> list[int]:
    """The placeholders of `gm` in the order Inductor numbers its inputs (`arg{i}_1`)."""
    return input_order(gm)


def _random(t: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(t.shape, generator=gen).to(t.dtype).as_strided(t.shape, t.stride())


def run_chain(
    kernels: list[Any],
    inputs: list[torch.Tensor],
    blocks: dict[str, int],
    pipeline: str,
    triton: bool,
    ran: list[Kernel] | None = None,
) -> dict:
    """Runs the graph's kernels in order (each as lowered, after `pipeline`, in tilec's
    interpreter or, `triton`, emitted and run by Triton's interpreter), a banded kernel's workspace
    summed over its rows as the wrapper does; returns every buffer by name (and appends each
    kernel as it ran to `ran`)."""
    buffers: dict[str, torch.Tensor] = {}
    for captured in kernels:
        lowered = captured.result
        assert isinstance(lowered, Lowered), captured.summary()
        module = parse(print_kernel(lowered.kernel))
        kernel: Kernel = module.kernels[0]
        given = {k: v for k, v in blocks.items() if kernel.constexprs.get(k, 0) is None}
        if "RSPLIT" not in kernel.constexprs:
            given = {k: v for k, v in {"XBLOCK": 4, "RBLOCK": 64}.items() if kernel.constexprs.get(k, 0) is None}
        bound = ",".join(f"{k}={v}" for k, v in given.items())
        first, rest = "", pipeline
        if pipeline.startswith("band-chunks{"):  # before the bands are bound, as in the Triton pipeline
            end = pipeline.index("}") + 1
            first, rest = pipeline[:end], pipeline[end:].lstrip(",")
            run_pipeline(module, first)
        run_pipeline(module, ",".join(filter(None, [f"specialize{{{bound}}}" if bound else "", rest])))
        kernel = module.kernels[0]
        if ran is not None:
            ran.append(kernel)
        args: list[torch.Tensor] = []
        programs = 1
        if lowered.column_sums:
            programs = math.ceil(lowered.numel / kernel.constexprs["RSPLIT"])
        for a in lowered.args:
            if a.buffer.startswith("arg"):  # Inductor's graph input i: arg{i}_1
                args.append(inputs[int(a.buffer[3:].split("_")[0])])
            elif a.buffer == WORKSPACE:
                ws = torch.full((len(lowered.column_sums) * programs * lowered.rnumel,), float("nan"))
                args.append(ws)
            elif a.buffer in buffers:
                args.append(buffers[a.buffer])
            else:
                assert a.shape is not None and a.strides is not None
                buffers[a.buffer] = torch.full(a.shape, float("nan"), dtype=TORCH_DTYPES[a.dtype])
                args.append(buffers[a.buffer])
        if triton:
            load_source(emit_text(kernel), interpret=True).launch(*args, num_sms=4)
        else:
            interp.run(kernel, *args)
        for i, name in enumerate(lowered.column_sums):  # the wrapper's sums of the workspace's rows
            rows = ws[i * programs * lowered.rnumel : (i + 1) * programs * lowered.rnumel]
            buffers[name] = rows.view(programs, lowered.rnumel).sum(0)
    return buffers


def emit_text(kernel: Kernel) -> str:
    from tilec.emit.triton import emit_triton

    return emit_triton(kernel).source


def fused_backward(m: int, n: int, op: str) -> tuple[Any, list[torch.Tensor], list[Any], Any]:
    """The op's backward graph at m x n, its kernels as captured with every mix-order pair fused
    (square shapes too, as the hook fuses them; stock's size checks off), and the banded one."""
    with torch._inductor.config.patch({"triton.mix_order_reduction_non_strict_mode": True}):
        gm, shapes = backward_graph(m, n, op)
        kernels = capture(gm, shapes, strict=True, fuse=lambda *_: True)
    k = banded(kernels)
    assert k is not None, [c.summary() for c in kernels]
    return gm, shapes, kernels, k


def check_backward(
    op: str,
    m: int,
    n: int,
    xblock: int,
    rsplit: int,
    pipeline: str,
    triton: bool = False,
    ran: list[Kernel] | None = None,
) -> None:
    gm, shapes, kernels, k = fused_backward(m, n, op)
    gen = torch.Generator().manual_seed(m * 1000 + n)
    inputs = [_random(t, gen) for t in shapes]
    want = gm(*inputs)
    got = run_chain(
        kernels, [inputs[i] for i in graph_inputs(gm)], {"XBLOCK": xblock, "RSPLIT": rsplit}, pipeline, triton, ran
    )
    check_outputs(op, m, n, k, want, got, f"XBLOCK={xblock} RSPLIT={rsplit} {pipeline}")


def check_outputs(op: str, m: int, n: int, k: Any, want: Any, got: dict, how: str) -> None:
    """The graph's outputs `want` against the buffers the banded kernel `k` and the others wrote."""
    dx = [a.buffer for a in k.result.args if a.is_written and a.buffer != WORKSPACE]
    assert len(dx) == 1, k.result.args
    # the weights' gradients: the column sums, or what a later kernel made of them (bf16 copies);
    # each output of the graph is the buffer of its shape nearest to it (Inductor's buffer names
    # are not the graph's)
    vectors = {b: t.float() for b, t in got.items() if t.dim() == 1}
    # x's gradient (and, residual-fused, r's: the same rows), then a weight's per column sum
    assert [ref.dim() for ref in want] == [2] * (1 + op.count("add")) + [1] * len(k.result.column_sums), (
        [ref.dim() for ref in want],
        k.result.column_sums,
    )
    for i, ref in enumerate(want):
        what = f"{op} {m}x{n} {how}: output {i}"
        if ref.dim() == 2:
            assert_close(got[dx[0]].float(), ref.float(), torch.bfloat16, what=what + " (dx)")
            continue
        name = min(vectors, key=lambda b: float((vectors[b] - ref.float()).abs().max()))
        # a weight's gradient sums m products in fp32 and is rounded to bf16 once
        assert_close(vectors.pop(name), ref.float(), torch.bfloat16, what=f"{what} ({name})")


# `band-chunks{chunk=8,column_elems=0}`: the rows (16-128 elements here) in chunks, as LayerNorm's
# rows past 8192 are in the Triton pipeline, each chunk with its own column sums
CHUNKED = "band-chunks{chunk=8,column_elems=0},triton-default"
PIPELINES = ("canonicalize", "triton-default", "band-chunks{chunk=8,column_elems=0},canonicalize", CHUNKED)
# the norms, and the residual-fused RMSNorm alone and read by two projections (three and four row
# inputs: the sum, its gradient and one per reader of the normalized rows)
BACKWARDS = (*sorted(OPS), "add_rmsnorm", "add_rmsnorm_mlp")


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(BACKWARDS),
    m=st.integers(8, 80),
    n=st.sampled_from([16, 24, 32, 100]),
    xblock=st.sampled_from([1, 2, 4]),
    rsplit=st.integers(1, 12),
    pipeline=st.sampled_from(PIPELINES),
)
@example(op="rmsnorm", m=64, n=32, xblock=2, rsplit=6, pipeline="canonicalize")  # bands straddle row blocks
@example(op="layernorm", m=37, n=100, xblock=4, rsplit=8, pipeline="triton-default")  # ragged rows, two sums
@example(op="add_rmsnorm_mlp", m=40, n=24, xblock=2, rsplit=5, pipeline="triton-default")  # four row inputs
@example(op="layernorm", m=37, n=100, xblock=2, rsplit=7, pipeline=CHUNKED)  # 13 chunks, the last ragged
@example(op="add_rmsnorm", m=50, n=24, xblock=1, rsplit=9, pipeline="band-chunks{chunk=8,column_elems=0},canonicalize")
@example(op="layernorm", m=32, n=32, xblock=2, rsplit=5, pipeline="triton-default")  # square: told apart by its reads
@example(op="add_rmsnorm_mlp", m=24, n=24, xblock=1, rsplit=7, pipeline=CHUNKED)
def test_a_banded_kernel_computes_the_backward(
    op: str, m: int, n: int, xblock: int, rsplit: int, pipeline: str
) -> None:
    check_backward(op, m, n, xblock, rsplit, pipeline)


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(BACKWARDS),
    m=st.integers(8, 80),
    xblock=st.sampled_from([4, 8]),
    rsplit=st.integers(1, 12),
    warps=st.sampled_from([2, 4]),
)
@example(op="layernorm", m=37, xblock=4, rsplit=7, warps=4)  # ragged bands, the last row block part past the rows
@example(op="add_rmsnorm_mlp", m=24, xblock=8, rsplit=9, warps=2)  # four row inputs, a band of one row block
def test_column_sums_carried_across_the_band_compute_the_backward(
    op: str, m: int, xblock: int, rsplit: int, warps: int
) -> None:
    """The Triton pipeline's `accumulate{where=bands}`: rows of 100 (a block 128 wide, 16 lanes
    of 8 across it) four or eight a block over 2-4 warps stack the warps down the block's rows, so
    each column sum is carried across the band as the row block's tile (its rows past the band
    masked to 0) and reduced over them once after it; the interpreter computes dx and the weights'
    gradients as the graph does, the pass having carried every column sum so."""
    ran: list[Kernel] = []
    check_backward(op, m, 100, xblock, rsplit, with_plan("triton-default", f"num_warps={warps}"), ran=ran)
    (banded_kernel,) = [k for k in ran if "RSPLIT" in k.constexprs]
    band = band_loop(banded_kernel)
    assert band is not None and band.iter_args
    assert all(a.type.shape == (xblock, 128) for a in band.iter_args), [a.type for a in band.iter_args]
    assert not [o for o in band.walk() if isinstance(o, ReduceOp) and o.attr("axis") == 0]


@pytest.mark.parametrize("pipeline", ["triton-default", CHUNKED])
@pytest.mark.parametrize("op", BACKWARDS)
def test_the_emitted_banded_kernel_computes_the_backward_under_triton(op: str, pipeline: str) -> None:
    check_backward(op, 48, 24, 2, 10, pipeline, triton=True)


# the Gluon form of one program a band whose row cache is its prefetch (`band-ring`), in chunks of
# 8 over one warp (the rows here are 16-128 elements)
RING = with_plan(with_options("gluon-ring", "band-chunks", "chunk=8"), "num_warps=1")


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(BACKWARDS),
    m=st.integers(8, 80),
    n=st.sampled_from([16, 24, 32, 100]),
    rsplit=st.integers(1, 12),
    weights=st.booleans(),
)
@example(op="layernorm", m=37, n=100, rsplit=7, weights=True)  # ragged rows (13 chunks, the last partial), two sums
@example(op="rmsnorm", m=9, n=16, rsplit=12, weights=True)  # one band, shorter than its RSPLIT
@example(op="add_rmsnorm_mlp", m=24, n=24, rsplit=5, weights=True)  # four row inputs, the last band partial
@example(op="add_rmsnorm", m=30, n=24, rsplit=4, weights=False)  # the weight read from global memory
def test_the_ring_form_computes_the_backward(op: str, m: int, n: int, rsplit: int, weights: bool) -> None:
    """`band-ring` on the banded kernel in chunks, one row a step: each row input's chunks read
    from a ring of shared-memory slots (the band's first row copied ahead of the band, each chunk
    refilled with the next row's after its last read, behind a CTA barrier), the weights' chunks
    copied once (or, `weights=false`, as where they do not fit beside the rows, read from global
    memory); tilec's interpreter, which checks every slot read against the copies in flight and
    the barriers, computes dx and the weights' gradients as the graph does. The pass must have
    made the ring (a remark would have left the kernel as it was)."""
    ran: list[Kernel] = []
    check_backward(op, m, n, 1, rsplit, RING if weights else with_options(RING, "band-ring", "weights=false"), ran=ran)
    ringed = [k for k in ran if "RSPLIT" in k.constexprs]
    assert len(ringed) == 1
    ops = list(ringed[0].walk())
    assert {"tile.async_copy", "tile.async_wait", "tile.cta_barrier"} <= {o.name for o in ops}
    chunk_reads = [o for o in ops if isinstance(o, LoadOp) and o.result.type.shape[-1] == 8]
    assert bool(chunk_reads) != weights  # every chunk's read a slot, but the weights' where they are not cached


# the cluster form (`band-cluster`): clusters of 2 or 4, chunks of 32 over one warp (the rows here
# are 64-384 elements, each CTA's slice one to four chunks)
def cluster_pipeline(ctas: int) -> str:
    return with_options("gluon-cluster-ring", "band-cluster", f"ctas={ctas},chunk=32,warps=1")


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(BACKWARDS),
    m=st.integers(8, 40),
    chunks=st.integers(1, 3),
    ctas=st.sampled_from([2, 4]),
    rsplit=st.integers(1, 12),
    weights=st.booleans(),
    exchange=st.sampled_from(["push", "barriers"]),
)
@example(op="layernorm", m=37, chunks=4, ctas=2, rsplit=7, weights=True, exchange="push")  # 4 chunks a CTA, two sums
@example(op="rmsnorm", m=9, chunks=1, ctas=2, rsplit=12, weights=True, exchange="push")  # one band, shorter than RSPLIT
@example(op="add_rmsnorm_mlp", m=24, chunks=1, ctas=4, rsplit=5, weights=True, exchange="push")  # four row inputs
@example(op="add_rmsnorm", m=30, chunks=2, ctas=2, rsplit=4, weights=False, exchange="barriers")  # weight from global
def test_the_cluster_form_computes_the_backward(
    op: str, m: int, chunks: int, ctas: int, rsplit: int, weights: bool, exchange: str
) -> None:
    """`band-cluster` on the logical banded kernel: each row split across a cluster (CTA r its
    columns r·n/ctas on), each CTA's chunks of the row inputs in shared-memory buffers (the band's
    first row copied ahead of the band, each chunk refilled with the next row's after its last
    read, behind a CTA barrier), the weights' chunks copied once (or read from global memory), the
    row's statistics exchanged across the cluster in the band loop (either exchange); tilec's
    interpreter, which checks every buffer read against the copies in flight and the barriers and
    runs a cluster's CTAs together, computes dx and the weights' gradients as the graph does. The
    pass must have made the form (a remark would have left the kernel as it was)."""
    n = ctas * 32 * chunks
    bands = -(-m // rsplit)  # (the pass binds RSPLIT from its clusters: about m / bands rows each)
    options = f"weights={str(weights).lower()},exchange={exchange},bands={bands}"
    pipeline = with_options(cluster_pipeline(ctas), "band-cluster", options)
    ran: list[Kernel] = []
    gm, shapes, kernels, k = fused_backward(m, n, op)
    gen = torch.Generator().manual_seed(m * 1000 + n)
    inputs = [_random(t, gen) for t in shapes]
    want = gm(*inputs)
    got = run_chain(kernels, [inputs[i] for i in graph_inputs(gm)], {}, pipeline, False, ran)
    clustered = [kn for kn in ran if "RSPLIT" in kn.constexprs]
    assert len(clustered) == 1 and clustered[0].launch.num_ctas == ctas
    assert clustered[0].constexprs["RSPLIT"] == -(-m // bands)
    ops = list(clustered[0].walk())
    assert {"tile.async_copy", "tile.async_wait", "tile.cta_barrier", "tile.cluster_gather"} <= {o.name for o in ops}
    chunk_reads = [o for o in ops if isinstance(o, LoadOp) and o.result.type.shape[-1] == 32]
    assert bool(chunk_reads) != weights  # every chunk's read a buffer, but the weights' where they are not cached
    check_outputs(op, m, n, k, want, got, pipeline)


@pytest.mark.parametrize("op", ["rmsnorm", "add_rmsnorm"])
def test_the_ring_form_of_rows_of_32768_fits_one_program_an_sm(op: str) -> None:
    """The norm's backward at 4096x32768 fused (the H100's range at rows of 32768) through
    `gluon-ring`, compiled for sm_90 without a GPU: eight chunks of 4096 over 16 warps, three
    rings of eight 8 KiB slots (192 KiB and the compiler's own: one program an SM) — RMSNorm's x,
    dy and weight; the residual-fused form's three row inputs, its weight read from global memory
    (four rings would not fit) — 16-byte cp.async copies, the column sums in registers (at the
    128-register cap of 16 warps, at most 64 bytes of stack: the hand-written kernel of
    bench/results/2026-11-27-h100-ring-backward spills 16)."""
    from tilec.dump import table_fusion
    from tilec.emit.check import check_compile
    from tilec.emit.gluon import emit_gluon

    gm, inputs = backward_graph(4096, 32768, op)
    k = banded(capture(gm, inputs, strict=True, fuse=table_fusion))
    assert k is not None
    module = parse(print_kernel(k.result.kernel))
    remarks: list[Any] = []
    run_pipeline(module, "gluon-ring", remarks=remarks)
    assert not [r for r in remarks if r.pass_name == "band-ring"], remarks
    kernel = module.kernels[0]
    assert kernel.attributes["band_chunks"] == 8 and kernel.constexprs["XBLOCK"] == 1
    assert [o.name for o in kernel.walk()].count("tile.cta_barrier") == 8  # one a chunk's refill
    assert [o.name for o in kernel.walk()].count("tile.smem_alloc") == 3
    report = check_compile(emit_gluon(kernel), "sm_90")
    assert report.ok, report.error
    assert report.num_warps == 16 and report.registers <= 128 and report.stack_bytes <= 64, report.summary()
    assert 3 * 8 * 8192 <= report.shared_bytes <= 232448 and set(report.cp_async_bytes) == {16}, report.summary()


@pytest.mark.parametrize(
    ("op", "m", "n", "shared", "stack"), [("layernorm", 4096, 32768, 3, 16), ("rmsnorm", 2048, 65536, 3, 0)]
)
def test_the_cluster_form_compiles_for_sm_90(op: str, m: int, n: int, shared: int, stack: int) -> None:
    """The norm's fused backward through `gluon-cluster-ring` (the H100's rules' cluster form at
    these shapes), compiled for sm_90 without a GPU: clusters of 2 over 8 warps, each CTA's slice
    of x, dy and the weight in shared memory (8 or 16 buffers each, of 4 KiB a CTA), 16-byte cp.async
    copies, the column sums in registers with at most `stack` bytes spilled (LayerNorm's two sums
    of 16384 a CTA: 128 registers a thread of them; 2 words measured)."""
    from tilec.emit.check import check_compile
    from tilec.emit.gluon import emit_gluon

    k = fused_backward(m, n, op)[3]
    module = parse(print_kernel(k.result.kernel))
    remarks: list[Any] = []
    run_pipeline(module, "gluon-cluster-ring", remarks=remarks)
    assert not [r for r in remarks if r.pass_name == "band-cluster"], remarks
    kernel = module.kernels[0]
    chunks = n // (2 * 2048)
    assert [o.name for o in kernel.walk()].count("tile.smem_alloc") == shared * chunks
    report = check_compile(emit_gluon(kernel), "sm_90")
    assert report.ok, report.error
    assert report.num_warps == 8 and report.num_ctas == 2 and report.stack_bytes <= stack, report.summary()
    assert shared * chunks * 4096 <= report.shared_bytes <= 232448 and set(report.cp_async_bytes) == {16}, (
        report.summary()
    )


def test_a_symbolic_row_count_is_banded_for_the_rows_given() -> None:
    """A banded kernel over a symbolic row count is banded for `plan{rows=N}` (the hook gives the
    rows its graph was traced with) as a kernel of N rows is; a known row count ignores `rows`;
    without either the plan says what to give. `band-cluster` (which bands the rows itself, a
    cluster a band) leaves a symbolic row count as it is, with its remark."""
    from tilec.ir.errors import TilecError

    gm, inputs = backward_graph(4096, 2048)
    text = print_kernel(banded(capture(gm, inputs, strict=True)).result.kernel)
    # the same kernel as the frontend writes it for a symbolic row count: a scalar parameter
    assert text.count("%xnumel = tile.constant {value = 4096} : i32\n") == 1
    symbolic_text = (
        text.replace("%ws_ptr: ptr<f32>)", "%ws_ptr: ptr<f32>, %xnumel: i32)")
        .replace("  %xnumel = tile.constant {value = 4096} : i32\n", "")
        .replace("cdiv(4096, RSPLIT)", "cdiv(xnumel, RSPLIT)")
    )

    def planned(pipeline: str, symbolic: bool) -> dict[str, int | None]:
        module = parse(symbolic_text if symbolic else text)
        run_pipeline(module, pipeline)
        return module.kernels[0].constexprs

    static = planned("plan", False)
    assert static == {"XBLOCK": 2, "RBLOCK": 2048, "RSPLIT": 32}  # 128 programs: one a SM
    assert planned("plan{rows=4096}", True) == static
    assert planned("plan{rows=99}", False) == static
    assert planned("plan{rows=100000}", True)["RSPLIT"] == 758  # 132 programs, whole row blocks
    with pytest.raises(TilecError, match=r"give rows \(plan\{rows=\.\.\.\}\)"):
        planned("plan", True)
    # the cluster form binds RSPLIT itself: for a symbolic row count it leaves the kernel, saying so
    module = parse(symbolic_text)
    remarks: list[Any] = []
    run_pipeline(module, "band-cluster{chunk=256,warps=1}", remarks=remarks)
    assert [r.message for r in remarks] == ["its row count is symbolic (bind RSPLIT first)"]
    assert print_kernel(module.kernels[0]) == print_kernel(parse(symbolic_text).kernels[0])
    module = parse(text)
    run_pipeline(module, "band-cluster{chunk=256,warps=1}")
    assert module.kernels[0].constexprs == {"RSPLIT": 63} and module.kernels[0].launch.num_ctas == 2


@pytest.mark.parametrize(
    ("m", "n", "fused"),
    [
        (2048, 4096, True),
        (4096, 8192, True),
        (4096, 4096, True),
        (8192, 8192, True),
        (1024, 4096, False),
        (2048, 2048, False),
        (2048, 1024, False),
    ],
)
def test_tilec_fuses_a_norm_backward_where_its_banded_kernel_measured_faster(m: int, n: int, fused: bool) -> None:
    """Stock fuses a norm's backward only with twice as many rows as the row is long; where the
    GPU's table has a measured range (the H100's: at least 2048 rows of 4096-16384 elements,
    `chooser.MIX_ORDER_FUSIONS`), tilec's scheduling has it fused anyway — square shapes too,
    which stock cannot tell from their transpose by the sizes of the two reductions (tilec tells
    them apart by which reads its rows contiguously). Fewer rows and shorter rows stay as stock
    leaves them; so does every shape without tilec's fusion in place."""
    from tilec.dump import table_fusion
    from tilec.frontend import fusion
    from tilec.passes.chooser import mix_order_fusion

    gm, inputs = backward_graph(m, n)
    k = banded(capture(gm, inputs, strict=True, fuse=table_fusion))
    assert (k is not None) == fused, (m, n)
    assert (mix_order_fusion("NVIDIA H100 80GB HBM3", m, n, 2) is not None) == (m >= 2048 and n >= 4096)
    if fused:
        assert k.result.kernel.constexprs["RBLOCK"] == n and signature(k.result.kernel).row_inputs == 2
        original = torch._inductor.scheduler.MixOrderReduction.__dict__["can_fuse"]
        with fusion.patched():
            assert torch._inductor.scheduler.MixOrderReduction.__dict__["can_fuse"] is not original
        assert torch._inductor.scheduler.MixOrderReduction.__dict__["can_fuse"] is original
        assert banded(capture(gm, inputs, strict=True)) is None  # without tilec's answer: stock's


@pytest.mark.parametrize(
    ("op", "fused"),
    [("rmsnorm", True), ("add_rmsnorm", True), ("layernorm", True), ("add_rmsnorm_mlp", False)],
)
def test_a_range_past_rows_of_16384_has_them_fused(op: str, fused: bool) -> None:
    """Stock refuses a mix-order reduction over rows past 16384 whatever its size checks (its
    persistent row reduction); tilec's fusion answers that check yes and the GPU's range decides,
    as for every size. The H100's ranges at rows of 32768 hold for the kernel's Gluon forms with
    up to two column sums and two whole rows read where Inductor asks (x and dy): RMSNorm's
    backward at 4096x32768 is one banded kernel (the residual-fused one too, whose residual's
    gradient joins it after), and LayerNorm's (two column sums: the cluster form's range), whose
    column sums band-chunks takes in four chunks for Triton; the form read by two projections
    (three rows) stays apart, and so does every shape where the Gluon emitter cannot run. Every
    question about LayerNorm counts both its column sums, dB's too when asked about dW alone (it
    could be fused in after)."""
    from tilec.dump import table_fusion
    from tilec.passes.chooser import mix_order_fusion

    def without_gluon(device: Any, rows: int, row: int, elem: int, sums: int, row_inputs: int) -> bool:
        return mix_order_fusion("NVIDIA H100 80GB HBM3", rows, row, elem, sums, row_inputs, gluon=False) is not None

    asked: list[tuple[int, ...]] = []

    def recorded(*args: Any) -> bool:
        asked.append(args[1:])
        return table_fusion(*args)

    gm, inputs = backward_graph(4096, 32768, op)
    k = banded(capture(gm, inputs, strict=True, fuse=recorded))
    assert (k is not None) == fused
    assert asked and {a[3] for a in asked} == {2 if op == "layernorm" else 1}, asked
    assert banded(capture(gm, inputs, strict=True, fuse=without_gluon)) is None
    if fused:
        assert k.result.kernel.constexprs["RBLOCK"] == 32768
        module = parse(print_kernel(k.result.kernel))
        run_pipeline(module, "triton-default")
        assert module.kernels[0].attributes["band_chunks"] == 4


def test_the_ring_range_needs_the_gluon_emitter() -> None:
    """`mix_order_fusion` with the Gluon emitter unavailable leaves out the ranges measured with
    the kernel's Gluon forms (rows of 32768 and 65536), and keeps the others."""
    from tilec.passes.chooser import mix_order_fusion

    h100 = "NVIDIA H100 80GB HBM3"
    ring = mix_order_fusion(h100, 4096, 32768, 2, 1, 2)
    assert ring is not None and ring.ring
    assert mix_order_fusion(h100, 4096, 32768, 2, 1, 2, gluon=False) is None
    assert mix_order_fusion(h100, 4096, 32768, 2, 1, 3) is None  # three rows
    # two column sums (LayerNorm): the cluster form's range, from 4096 rows of 32768, 2048 of 65536
    cluster = mix_order_fusion(h100, 4096, 32768, 2, 2, 2)
    assert cluster is not None and cluster.ring and cluster.run == "2026-11-28-h100-cluster-bands"
    assert mix_order_fusion(h100, 4096, 32768, 2, 2, 2, gluon=False) is None
    assert mix_order_fusion(h100, 2048, 32768, 2, 2, 2) is None
    assert mix_order_fusion(h100, 2048, 65536, 2, 2, 2) is not None
    assert mix_order_fusion(h100, 2048, 65536, 2, 2, 2, gluon=False) is None
    # the H200 too (its rules by column sums: LayerNorm in clusters of 4, RMSNorm in the ring)
    h200 = mix_order_fusion("NVIDIA H200", 4096, 32768, 2, 2, 2)
    assert h200 is not None and h200.run == "2026-11-28-h200-cluster-bands"
    assert mix_order_fusion("NVIDIA H200", 2048, 32768, 2, 2, 2) is None
    assert mix_order_fusion("NVIDIA H200", 2048, 65536, 2, 1, 2) is not None
    assert mix_order_fusion("NVIDIA H200", 2048, 65536, 2, 2, 2) is not None
    assert mix_order_fusion("NVIDIA H200", 2048, 65536, 2, 2, 2, gluon=False) is None
    assert mix_order_fusion(h100, 4096, 8192, 2, 2, 3, gluon=False) is not None


@pytest.mark.parametrize(
    ("n", "chunked", "stack"),
    [(8192, False, (0, 0)), (16384, False, (256, 1024)), (16384, True, (0, 128))],
)
def test_a_banded_kernel_holds_its_column_sums_in_registers(n: int, chunked: bool, stack: tuple[int, int]) -> None:
    """Why LayerNorm's fused backward reached only about half a copy's bandwidth at rows of 16384
    as one tile (docs/performance.md): its two column sums, dW and dB, are carried across the band
    in registers, a row of fp32 each, beside the row's x, dy and w; at 16384 elements per row that
    is more than 255 registers a thread at 8 warps, and ptxas spills hundreds of bytes to local
    memory. In chunks of 8192 (`band-chunks`, the Triton pipeline's default), each chunk with its
    own column sums and read again for dx, the spill all but goes (28 words; 10 before the band's
    row mask folded, which made the kernel faster: bench/results/2026-11-26-h100-square-fusion); at rows of 8192
    nothing spills and the pass leaves the row whole. (Triton's output compiled for sm_90 without
    a GPU: `--check`.)"""
    from tilec.dump import table_fusion
    from tilec.emit.check import check_compile
    from tilec.emit.triton import TritonModule, emit_triton
    from tilec.inductor.build import PLACEHOLDER
    from tilec.passes.pipelines import with_options

    gm, inputs = backward_graph(4096, n, "layernorm")
    k = banded(capture(gm, inputs, strict=True, fuse=table_fusion))
    assert k is not None and len(k.result.column_sums) == 2  # dW and dB
    module = parse(print_kernel(k.result.kernel))
    run_pipeline(module, "triton-default" if chunked else with_options("triton-default", "band-chunks", "chunk=0"))
    kernel = module.kernels[0]
    assert kernel.constexprs["RBLOCK"] == (8192 if chunked else n)
    report = check_compile(TritonModule(PLACEHOLDER, emit_triton(kernel).source), "sm_90")
    assert report.ok, report.error
    low, high = stack
    assert report.num_warps == 8 and low <= report.stack_bytes <= high, report.summary()


def test_rmsnorm_keeps_its_row_whole_at_16384() -> None:
    """RMSNorm's one column sum of 16384 is no more than the Triton pipeline's `column_elems`:
    its banded kernel keeps the row one tile (measured as fast or faster there than in chunks),
    while LayerNorm's two are chunked (`test_a_banded_kernel_holds_its_column_sums_in_registers`)."""
    from tilec.dump import table_fusion

    gm, inputs = backward_graph(4096, 16384, "rmsnorm")
    k = banded(capture(gm, inputs, strict=True, fuse=table_fusion))
    assert k is not None and len(k.result.column_sums) == 1
    module = parse(print_kernel(k.result.kernel))
    run_pipeline(module, "triton-default")
    assert module.kernels[0].constexprs["RBLOCK"] == 16384 and "band_chunks" not in module.kernels[0].attributes


@pytest.mark.parametrize(("op", "n"), [("layernorm", 32768), ("rmsnorm", 65536)])
def test_a_banded_kernel_built_with_cluster_options_is_its_cluster_form(op: str, n: int) -> None:
    """A Gluon build of a mix-order kernel whose plan options are `band-cluster`'s (the autotuner's
    and the rules' `gluon{ctas=...}`) runs the banded cluster pipeline
    (`tilec.config.pipelines["gluon-banded-cluster"]`, `gluon-cluster-ring` by default) with them:
    a cluster a band, RSPLIT for as many clusters as run at once (the wrapper's split size: 66 of
    2, 30 of 4 on the H100), no Triton
    variant; where the form cannot be made, band-cluster's remark is a ring remark (the hook then
    declines or falls back as for the ring). The autotuner's candidates hold the cluster forms from
    rows of 32768, in Gluon only."""
    from tilec.dump import table_fusion
    from tilec.inductor import autotune
    from tilec.inductor.build import build
    from tilec.inductor.policy import ring_remarks
    from tilec.ir.target import H100

    rows = 4096 if n == 32768 else 2048
    gm, inputs = backward_graph(rows, n, op)
    lowered = banded(capture(gm, inputs, strict=True, fuse=table_fusion)).result
    made = build(lowered, "gluon", "cuda", "ctas=2,chunk=2048,warps=8")
    assert made.fallback is None and not ring_remarks(made), made.remarks
    assert made.pipeline.split(",")[0] == "band-cluster"  # (its options the defaults)
    assert made.primary.constexprs["RSPLIT"] == -(-rows // 66)  # 66 clusters of 2 on 132 SMs
    fours = build(lowered, "gluon", "cuda", "ctas=4,chunk=1024,warps=8")
    assert fours.primary.constexprs["RSPLIT"] == -(-rows // 30)  # the 30 clusters of 4 the H100 runs at once
    assert "CLUSTER_PUSH" in made.primary.source and "async_copy" in made.primary.source
    odd = build(lowered, "gluon", "cuda", "ctas=2,chunk=2048,warps=8,smem_budget=1024")
    assert ring_remarks(odd) and "shared memory" in ring_remarks(odd)[0], odd.remarks
    clusters = [c for c in autotune.mix_order_candidates(True, H100, gluon=True, row=n) if "ctas" in c]
    # (clusters of 4 and 8 as many as the H100 runs at once, two CTAs an SM: 30 and 15 of them
    # one CTA an SM, not 33 and 16)
    assert clusters == ["gluon{ctas=2,chunk=2048,warps=8}", "gluon{ctas=4,chunk=1024,warps=8,bands=60}"] + (
        ["gluon{ctas=8,chunk=1024,warps=8,bands=30}", "gluon{ctas=8,chunk=1024,warps=4,bands=30}"] if n > 32768 else []
    )
    assert not [c for c in autotune.mix_order_candidates(True, H100, gluon=False, row=n) if "ctas" in c]
    assert not [c for c in autotune.mix_order_candidates(True, H100, gluon=True, row=16384) if "ctas" in c]


def test_a_banded_kernel_built_for_gluon_is_its_ring_form() -> None:
    """The hook's build of a mix-order kernel for Gluon runs the banded Gluon pipeline
    (`tilec.config.pipelines["gluon-banded"]`, `gluon-ring` by default) with the chooser's or the
    autotuner's plan options on it, records its band (RSPLIT: the wrapper's split size) and has no
    Triton variant (its band would differ); where the ring cannot be made (a row of one chunk),
    band-ring's remark says why (`policy.ring_remarks`), which the hook declines on."""
    import tilec
    from tilec.dump import table_fusion
    from tilec.inductor.build import build
    from tilec.inductor.policy import ring_remarks

    gm, inputs = backward_graph(4096, 32768)
    lowered = banded(capture(gm, inputs, strict=True, fuse=table_fusion)).result
    made = build(lowered, "gluon", "cuda")
    assert (made.emitter, made.pipeline, made.fallback) == ("gluon", "gluon-ring", None)
    assert made.primary.constexprs["RSPLIT"] == 32 and not ring_remarks(made)  # 4096 rows over 132 SMs
    assert "async_copy" in made.primary.source
    planned = build(lowered, "gluon", "cuda", "num_warps=8")
    assert "num_warps=8" in planned.pipeline and "band-ring" in planned.pipeline
    with tilec.config.patch(pipelines={**tilec.config.pipelines, "gluon-banded": "gluon-default"}):
        assert build(lowered, "gluon", "cuda").pipeline == "gluon-default"
    gm, inputs = backward_graph(4096, 2048)
    short = build(banded(capture(gm, inputs, strict=True)).result, "gluon", "cuda")
    assert ring_remarks(short) == ("band-ring: its row is not in chunks (band-chunks)",)


def test_the_rules_tell_layernorm_from_rmsnorm_by_their_column_sums() -> None:
    """RMSNorm's fused backward and LayerNorm's read the same two whole rows (x, dy) and have one
    signature but for their column sums (dW; dW and dB), which a rule may name: on the H100 at
    rows of 32768 RMSNorm takes clusters of 2 (0.303 ms against 0.323 in clusters of 4) and
    LayerNorm clusters of 4, two an SM (0.323 against 0.350; bench/results/2026-11-28-h100-cluster-bands);
    the H200 fuses LayerNorm there in clusters of 4 too (0.272 ms against 0.317 in clusters of 2;
    bench/results/2026-11-28-h200-cluster-bands) and keeps RMSNorm's ring (0.234 against 0.257)."""
    from tilec.dump import table_fusion
    from tilec.ir.target import H100, H200
    from tilec.passes.chooser import choose, mix_order_fusion

    plans = {}
    for op in ("rmsnorm", "layernorm"):
        gm, inputs = backward_graph(4096, 32768, op)
        k = banded(capture(gm, inputs, strict=True, fuse=table_fusion))
        assert k is not None
        sig = signature(k.result.kernel)
        assert (sig.family, sig.row_inputs, sig.column_sums) == ("mix-order", 2, 1 if op == "rmsnorm" else 2)
        plans[op] = [choose(k.result.kernel, hopper=True, gpu=gpu) for gpu in (H100.name, H200.name)]
        reason = plans[op][0].reason  # (the rule's row size names LayerNorm's sums)
        if op == "layernorm":
            assert "2 column sums" in reason, reason
        else:
            assert "column sums" not in reason, reason
        assert mix_order_fusion(H200.name, 4096, 32768, 2, sums=sig.column_sums) is not None
    assert [(c.emitter, c.plan) for c in plans["rmsnorm"]] == [("gluon", "ctas=2,chunk=2048,warps=8"), ("gluon", "")]
    assert [(c.emitter, c.plan) for c in plans["layernorm"]] == [
        ("gluon", "ctas=4,chunk=1024,warps=8,bands=60"),
        ("gluon", "ctas=4,chunk=1024,warps=8,bands=60"),
    ]
