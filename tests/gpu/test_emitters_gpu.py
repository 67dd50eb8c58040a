"""On the GPU: emitted Gluon and Triton equal eager PyTorch, and each other.

The examples run through gluon-default (Gluon) and triton-default (Triton) at shapes drawn by
hypothesis — tail row blocks, rows not a multiple of the chunk, a single row — in bf16, fp16 and
fp32; the hand-written physical kernels (TMA box, ring, warp-specialized) run at several row counts."""

from __future__ import annotations

import sys
from pathlib import Path

import hypothesis
import pytest
import torch
from gpu_support import hopper
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from profiles import examples

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))

from examples import OUTPUTS, example, kernel_count, run_gluon, run_triton
from tilec.ir import parse
from tilec.testing import assert_close

pytestmark = pytest.mark.gpu

KERNELS = Path(__file__).resolve().parents[1] / "kernels"


@settings(
    max_examples=examples(30),
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
# one row's LayerNorm mean: a sum that cancels, compared against the row's scale (examples.py)
@hypothesis.example(name="layernorm", rows=1, cols=4096, dtype="bf16", strided=True)
@given(
    name=st.sampled_from(sorted(OUTPUTS)),
    rows=st.sampled_from([1, 3, 7, 64, 130, 1027]),
    cols=st.sampled_from([17, 100, 257, 1000, 1024, 3001, 4096, 8192, 12000]),
    dtype=st.sampled_from(["bf16", "f16", "f32"]),
    strided=st.booleans(),
)
def test_examples_gluon_and_triton_equal_eager(name: str, rows: int, cols: int, dtype: str, strided: bool) -> None:
    assume(kernel_count(name, rows, cols) == 1)
    ex = example(name, rows, cols, dtype, strided=strided)
    assume(set(OUTPUTS[name]) <= {a.param for a in ex.lowered.args})
    triton_out = run_triton(ex, ex.kernel("triton-default"), device="cuda")
    ex.check(triton_out, "Triton on the GPU")
    if hopper():
        gluon_out = run_gluon(ex, ex.kernel("gluon-default"))
        ex.check(gluon_out, "Gluon on the GPU")
        for param in OUTPUTS[name]:
            assert_close(
                gluon_out[param].float().cpu(),
                triton_out[param].float().cpu(),
                torch.float32 if dtype == "f32" else torch.bfloat16,
            )


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()


@pytest.mark.skipif(not hopper(), reason="thread-block clusters need Hopper or newer")
@pytest.mark.parametrize(
    ("form", "param", "unit", "per"),
    [
        ("rmsnorm_cluster", "W", 1024, 4),
        ("rmsnorm_cluster", "W", 8192, 4),
        ("rmsnorm_cluster_smem", "CH", 1024, 32),
        ("rmsnorm_cluster_smem", "CH", 8192, 32),
    ],
)
@pytest.mark.parametrize("rows", [1, 5, 131, 4099])
@pytest.mark.parametrize("exchange", ["barriers", "push"])
def test_a_row_split_over_a_cluster_equals_eager(
    form: str, param: str, unit: int, per: int, rows: int, exchange: str
) -> None:
    """rmsnorm_cluster.tile (each row over a cluster of 4 CTAs) and rmsnorm_cluster_smem.tile (over
    8, each slice copied into shared memory by cp.async): launched as clusters (the grid counts
    them), the partial sums exchanged by `tile.cluster_gather` (either exchange). Launched as the
    hook launches a kernel it took, three times: through Triton (compiling it), then the compiled
    kernel directly, then its bound C launcher — each path must launch clusters."""
    from tilec.emit.gluon import emit_gluon
    from tilec.runtime.launch import load_kernel

    kernel = parse((KERNELS / f"{form}.tile").read_text()).kernels[0]
    kernel.constexprs[param] = unit
    for op in kernel.walk():
        if op.name == "tile.cluster_gather":
            op.attributes["exchange"] = exchange
    taken = load_kernel(form, emit_gluon(kernel).source, "gluon", order=[0, 1, 2, 3])
    cols = per * unit
    x = torch.randn(rows, cols, device="cuda").to(torch.bfloat16)
    w = torch.randn(cols, device="cuda").to(torch.bfloat16)
    expected = (rmsnorm(x, torch.ones_like(w)).to(torch.bfloat16).float() * w.float()).cpu()
    for _ in range(3):
        y = torch.full_like(x, float("nan"))
        taken.run(x, w, y, rows, stream=torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        assert_close(y.float().cpu(), expected, torch.bfloat16, what=f"{form} {rows}x{cols}")
    assert taken.launches["primary"] == 3


@pytest.mark.skipif(not hopper(), reason="Gluon with TMA needs Hopper or newer")
@pytest.mark.parametrize("name,cols", [("rmsnorm_tma", 256), ("rmsnorm_ring", 1024), ("rmsnorm_ws", 1024)])
@pytest.mark.parametrize("rows", [1, 2, 5, 131, 4099])
def test_physical_kernels_equal_eager(name: str, cols: int, rows: int) -> None:
    from tilec.emit.gluon import emit_gluon
    from tilec.runtime import load_source

    module = load_source(emit_gluon(parse((KERNELS / f"{name}.tile").read_text()).kernels[0]).source)
    x = torch.randn(rows, cols, device="cuda").to(torch.bfloat16)
    w = torch.randn(cols, device="cuda").to(torch.bfloat16)
    y = torch.full_like(x, float("nan"))
    module.launch(x, w, y, rows)
    torch.cuda.synchronize()
    assert_close(y.float().cpu(), rmsnorm(x, w).cpu(), torch.bfloat16, what=f"{name} {rows}x{cols}")


@pytest.mark.parametrize(
    ("cols", "plan"),
    [
        (20000, "xblock=1,chunk=2048,num_warps=8"),
        (50257, "xblock=1,chunk=4096,num_warps=32"),
        (65536, "xblock=1,chunk=8192,num_warps=32"),
        (65536, "xblock=1,chunk=4096,num_warps=16,reverse=true,stream=true"),
    ],
)
@pytest.mark.parametrize("rows", [512, 1027])  # fewer rows: Inductor splits each row's reduction
def test_layernorm_statistics_kept_per_lane_equal_eager(cols: int, plan: str, rows: int) -> None:
    """LayerNorm's long rows through the Triton pipeline with a plan whose main loop keeps the
    statistics per lane (`welford-lanes`): its outputs (y, mean, rstd) equal eager's."""
    from tilec.ir.ops import ForOp
    from tilec.ir.types import TileType
    from tilec.passes.pipelines import with_plan

    ex = example("layernorm", rows, cols, "bf16")
    kernel = ex.kernel(with_plan("triton-default", plan))
    carried = [r.type for op in kernel.walk() if isinstance(op, ForOp) for r in op.results]
    assert any(isinstance(t, TileType) and t.rank == 2 for t in carried), plan
    ex.check(run_triton(ex, kernel, device="cuda"), f"Triton on the GPU, {plan}")


@pytest.mark.parametrize(
    ("name", "cols", "plan"),
    [
        ("softmax", 50257, "xblock=1,chunk=4096,num_warps=8,groups=8"),
        ("softmax", 65536, "xblock=1,chunk=2048,num_warps=4,groups=8"),
        ("log_softmax", 50257, "xblock=1,chunk=8192,num_warps=8,groups=8"),
    ],
)
def test_softmax_statistics_kept_per_group_equal_eager(name: str, cols: int, plan: str) -> None:
    """Long rows (misaligned ones too) through the Triton pipeline with a plan's `groups`: each
    loop's softmax statistics kept per group of a thread's consecutive elements
    (`softmax-groups`), the outputs equal eager's on the GPU, NaN and infinities included."""
    from tilec.ir.ops import ReshapeOp
    from tilec.passes.pipelines import with_plan

    ex = example(name, 512, cols, "bf16").with_specials()
    kernel = ex.kernel(with_plan("triton-default", plan))
    assert any(isinstance(op, ReshapeOp) for op in kernel.walk()), plan
    ex.check(run_triton(ex, kernel, device="cuda"), f"Triton on the GPU, {plan}")


LANES_PLANS = [
    "xblock=1,rblock=2048,num_warps=16,lanes_reread=true",
    "xblock=1,rblock=4096,num_warps=8,lanes_reread=true",
    "xblock=1,rblock=8192,num_warps=16,lanes_reread=true",
]


@pytest.mark.parametrize(
    ("name", "cols", "plan"),
    [
        (name, cols, plan)
        for name, cols in (("softmax", 8192), ("softmax", 16384), ("layernorm", 16384))
        for plan in LANES_PLANS
    ]
    # rows of 4096 (one tile otherwise) and of 32768 (a loop over chunks of `chunk` otherwise)
    + [(name, 4096, "xblock=1,rblock=1024,num_warps=8,lanes_reread=true") for name in ("softmax", "layernorm")]
    + [(name, 32768, "xblock=1,chunk=4096,num_warps=32,lanes_reread=true") for name in ("softmax", "layernorm")],
)
@pytest.mark.parametrize("rows", [512, 1027])  # fewer rows: Inductor splits each row's reduction
@pytest.mark.parametrize("specials", [False, True])
def test_statistics_read_again_per_lane_equal_eager(name: str, cols: int, plan: str, rows: int, specials: bool) -> None:
    """A plan's `lanes_reread` through the Triton pipeline (softmax's maximum, then its sum of exp;
    LayerNorm's sum, then its squared deviations: each loop reading the row's chunks again, no
    reduction across warps inside): the outputs equal eager's, NaN and infinities included."""
    from tilec.ir.ops import ForOp, SoftmaxReduceOp, WelfordOp
    from tilec.passes.pipelines import with_plan

    assert kernel_count(name, rows, cols) == 1  # one kernel a row, not split by Inductor
    ex = example(name, rows, cols, "bf16")
    if specials:
        ex = ex.with_specials()
    kernel = ex.kernel(with_plan("triton-default", plan))
    in_loops = [o for op in kernel.body.ops if isinstance(op, ForOp) for o in op.walk()]
    assert not [o for o in in_loops if isinstance(o, (SoftmaxReduceOp, WelfordOp))], plan
    ex.check(run_triton(ex, kernel, device="cuda"), f"Triton on the GPU, {plan}")
