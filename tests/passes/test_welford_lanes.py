"""welford-lanes: LayerNorm's statistics kept per lane in its main loop of full chunks. Every
kernel of the chain computes what eager PyTorch computes (the interpreter, and the emitted
Triton in Triton's interpreter), rows far from zero and misaligned rows included; a row holding
an infinity gives NaN statistics as the per-chunk form does."""

from __future__ import annotations

import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

from examples import run_chain
from tilec.ir.ops import ForOp, WelfordOp
from tilec.ir.types import TileType
from tilec.testing import assert_close

EPS = 1e-5


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)


def statistics(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Each row's biased variance (Inductor's Welford reduction, its mean and m2)."""
    return torch.var(x.float(), -1, correction=0)


FUNCTIONS = {"layer_norm": (layer_norm, torch.bfloat16), "statistics": (statistics, torch.float32)}


def _pipeline(chunk: int, warps: int, lanes: bool = True, reread: bool = False) -> str:
    """`reread`: the plan's `lanes_reread` (the main loop's statistics in two passes)."""
    extra = ",lanes_reread=true" if reread else ""
    plan = f"plan{{xblock=1,max_rblock={chunk},chunk={chunk},num_warps={warps}{extra}}}"
    return f"{plan},align-rows{{narrow=true}},canonicalize,peel,canonicalize{',welford-lanes' if lanes else ''},cse,dce"


def _inputs(rows: int, cols: int, offset: float) -> list[torch.Tensor]:
    torch.manual_seed(rows * 1000 + cols)
    x = (torch.randn(rows, cols) * 3 + offset).bfloat16()
    return [x, torch.randn(cols).bfloat16(), torch.randn(cols).bfloat16()]


def _carried_lanes(kernels: list) -> bool:
    return any(
        isinstance(r.type, TileType) and r.type.rank == 2
        for k in kernels
        for op in k.walk()
        if isinstance(op, ForOp)
        for r in op.results
    )


@settings(max_examples=examples(8), deadline=None)
@given(
    name=st.sampled_from(sorted(FUNCTIONS)),
    rows=st.integers(2, 5),
    cols=st.sampled_from([1024, 1100, 2048, 3001]),
    chunk=st.sampled_from([64, 256]),
    warps=st.sampled_from([2, 4]),
    offset=st.sampled_from([0.0, 100.0, 1e4]),
    reread=st.booleans(),
)
# rows of 3001 starting off their 16-byte boundaries: a head, the main loop, a masked rest
@example(name="layer_norm", rows=8, cols=3001, chunk=256, warps=4, offset=100.0, reread=False)
@example(name="layer_norm", rows=8, cols=3001, chunk=256, warps=4, offset=100.0, reread=True)
# rows of 1100 in chunks of 64: 17 full chunks, then a partial one (peeled)
@example(name="statistics", rows=2, cols=1100, chunk=64, warps=2, offset=0.0, reread=False)
# a mean far from zero with a small spread, in two passes
@example(name="statistics", rows=3, cols=2048, chunk=256, warps=4, offset=1e4, reread=True)
def test_lanes_equal_eager(
    name: str, rows: int, cols: int, chunk: int, warps: int, offset: float, reread: bool
) -> None:
    """Per lane (or, with the plan's `lanes_reread`, in two loops over the chunks, each reading them
    again: each lane's sum, the row's mean; each lane's squared deviations from it): eager's."""
    fn, dtype = FUNCTIONS[name]
    inputs = _inputs(rows, cols, offset)
    got, _, kernels = run_chain(fn, inputs, pipeline=_pipeline(chunk, warps, reread=reread))
    assert _carried_lanes(kernels)
    want = fn(*[t.double() for t in inputs])
    assert_close(
        got.double().reshape(want.shape),
        want.double(),
        dtype,
        what=f"{name} {rows}x{cols} chunk {chunk}, {warps} warps, offset {offset}, reread {reread}",
    )


def test_the_emitted_triton_equals_eager() -> None:
    """Emitted and run in Triton's interpreter: rows of 3001 (a head, the main loop, the rest)."""
    inputs = _inputs(3, 3001, 10.0)
    got, _, kernels = run_chain(statistics, inputs, pipeline=_pipeline(256, 4), triton=True)
    assert _carried_lanes(kernels)
    want = statistics(*[t.double() for t in inputs])
    assert_close(got.double().reshape(want.shape), want.double(), torch.float32, what="statistics 3x3001")


def test_a_row_holding_an_infinity_has_nan_statistics() -> None:
    """As the per-chunk form gives (and eager's Welford): a NaN variance for such a row, the
    other rows' finite."""
    inputs = _inputs(4, 2048, 0.0)
    inputs[0][1, 700] = float("inf")
    inputs[0][2, 5] = float("-inf")
    got, _, kernels = run_chain(statistics, inputs, pipeline=_pipeline(256, 4))
    assert _carried_lanes(kernels)
    before, _, _ = run_chain(statistics, inputs, pipeline=_pipeline(256, 4, lanes=False))
    got = got.reshape(4)
    assert torch.equal(got.isnan(), before.reshape(4).isnan())
    assert got[1:3].isnan().all() and not got[[0, 3]].isnan().any()


@settings(max_examples=examples(4), deadline=None)
@given(ctas=st.sampled_from([2, 4, 8]), rows=st.integers(1, 2), seed=st.integers(0, 2**16), push=st.booleans())
def test_a_cluster_ctas_unrolled_chunks_keep_lanes(ctas: int, rows: int, seed: int, push: bool) -> None:
    """The cluster form (a row split across `ctas` CTAs, each CTA's slice in 8 chunks unrolled)
    through the Gluon pipeline: each CTA's chunks' statistics kept per lane, none reduced per chunk;
    the CTAs' statistics gathered and folded as before; LayerNorm equal to eager's."""
    from bench_scripts import meta_kernel

    from tilec import interp
    from tilec.ir import Module, parse, print_module
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan

    cols = 4096 * ctas
    module = parse(print_module(Module([meta_kernel("layernorm", 4096, cols).kernel])))
    plan = f"xblock=1,chunk=512,num_warps=4,cluster={ctas}" + (",exchange=push" if push else "")
    run_pipeline(module, with_plan("gluon-default", plan))
    kernel = module.kernels[0]
    assert kernel.launch.num_ctas == ctas
    assert not [op for op in kernel.walk() if isinstance(op, WelfordOp)]
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(rows, cols, generator=g) + 50).bfloat16()
    w, b = torch.randn(cols, generator=g).bfloat16(), torch.randn(cols, generator=g).bfloat16()
    y = torch.full((rows, cols), float("nan")).bfloat16()
    interp.run(kernel, x, w, b, y, grid=(rows,))
    want = torch.nn.functional.layer_norm(x.double(), (cols,), w.double(), b.double(), EPS)
    assert_close(y.double(), want, torch.bfloat16, what=f"layernorm {rows}x{cols} over {ctas} CTAs")


def test_a_chunk_of_more_than_8_elements_a_thread_keeps_its_per_chunk_statistics() -> None:
    """Chunks of 16384 over 16 warps (32 elements a thread): lanes would take 64 more registers a
    thread, which on the H100 cost the program its second CTA an SM (96.8 -> 66.2% of a copy); the
    loop stays as it was and the remark says why. Chunks of 8192 over 32 warps (8) take lanes."""
    from bench_scripts import meta_kernel

    from tilec.ir import Module, parse, print_module
    from tilec.passes import run_pipeline
    from tilec.passes.base import collecting_remarks
    from tilec.passes.pipelines import with_plan

    for plan, lanes in (("xblock=1,chunk=16384,num_warps=16", False), ("xblock=1,chunk=8192,num_warps=32", True)):
        module = parse(print_module(Module([meta_kernel("layernorm", 4096, 65536).kernel])))
        with collecting_remarks() as remarks:
            run_pipeline(module, with_plan("triton-default", plan))
        assert _carried_lanes(module.kernels) == lanes, plan
        said = [str(r) for r in remarks if "welford-lanes" in str(r)]
        assert any("more than 8 elements of the chunk a thread" in r for r in said) == (not lanes), said


def _welford_loops(kernels: list) -> int:
    """Loops that still fold Welford statistics."""
    return sum(
        1
        for k in kernels
        for op in k.walk()
        if isinstance(op, ForOp) and any(isinstance(o, WelfordOp) for o in op.walk())
    )


def test_two_passes_read_each_chunk_three_times_and_emit() -> None:
    """The main loop of full chunks becomes a loop of lane sums and one of lane squared deviations
    (no Welford statistics left in a loop over 2048 columns in chunks of 256 over 4 warps), and
    the emitted Triton equals eager in Triton's interpreter; a row holding an infinity gives NaN
    statistics as the per-chunk form does."""
    inputs = _inputs(4, 2048, 10.0)
    inputs[0][1, 700] = float("inf")
    got, _, kernels = run_chain(statistics, inputs, pipeline=_pipeline(256, 4, reread=True), triton=True)
    assert _welford_loops(kernels) == 0
    loops = [op for k in kernels for op in k.body.ops if isinstance(op, ForOp)]
    assert [r.name_hint for loop in loops for r in loop.results] == ["lane_sum", "lane_m2"]
    want = statistics(*[t.double() for t in inputs])
    got = got.double().reshape(want.shape)
    assert got[1].isnan() and not got[[0, 2, 3]].isnan().any()
    assert_close(got[[0, 2, 3]], want[[0, 2, 3]], torch.float32, what="statistics 4x2048, two passes")
