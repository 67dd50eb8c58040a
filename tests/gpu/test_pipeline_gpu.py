"""On the GPU: every combination of pipeline (resident or ring), persistent and warp-specialize
equals eager PyTorch for RMSNorm, LayerNorm and softmax, rows of 512 to 65536 elements; and a row
cached in part (`split-rows`) at rows of 65536 to 262144; and a row read again from its last chunk
back with the rows written evict-first (`reread`), in both emitters' pipelines."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from gpu_support import hopper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))

from examples import example, kernel_count, run_gluon, run_triton
from tilec.ir.ops import TmaLoadOp, WarpSpecializeOp
from tilec.passes.pipelines import gluon_form

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not hopper(), reason="Gluon with TMA needs Hopper or newer"),
]

W4 = "num_warps=4,row_block_bytes=131072"
VARIANTS = {
    "default": "gluon-default",
    "ring": gluon_form(stages=2),
    "ring-persistent": gluon_form(persistent=True, stages=3),
    "ring-persistent-ws": gluon_form(W4, persistent=True, stages=2, specialize=True),
    "resident-ws": gluon_form(W4, specialize=True),
    "resident-persistent": gluon_form(persistent=True),
}
# warp-specialize on the canonicalized ring (folded prologue guards and slot indices): the pass
# finds the ring from the TMA copies and barrier waits, not from the pipeline pass's printed form
for _name, _form in [
    ("ring-ws-folded", gluon_form(W4, stages=2, specialize=True)),
    ("ring-persistent-ws-folded", gluon_form(W4, persistent=True, stages=2, specialize=True)),
    ("resident-ws-folded", gluon_form(W4, specialize=True)),
]:
    assert ",warp-specialize," in _form
    VARIANTS[_name] = _form.replace(",warp-specialize,", ",canonicalize,warp-specialize,")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("cols", [512, 2048, 8192, 16384, 65536])
@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
def test_pipelined_kernels_equal_eager(name: str, cols: int, variant: str) -> None:
    rows = 1030 if cols == 65536 else 300  # row blocks that do not divide evenly among the SMs
    assert kernel_count(name, rows, cols) == 1
    ex = example(name, rows, cols)
    kernel = ex.kernel(VARIANTS[variant])
    if "-ws" in variant:
        assert any(isinstance(op, TmaLoadOp) for op in kernel.walk())
        assert any(isinstance(op, WarpSpecializeOp) for op in kernel.walk())
    ex.check(run_gluon(ex, kernel), f"{variant} on the GPU")


@pytest.mark.parametrize(("cols", "cached"), [(65536, 65536), (131072, 131072), (262144, 131072)])
@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
def test_a_row_cached_in_part_equals_eager(name: str, cols: int, cached: int) -> None:
    """`split-rows` (the plan's `row_cache`): the first `cached` bytes of each row through shared
    memory (TMA), the rest read twice from global memory, one row a program, equal to eager."""
    from tilec.passes.pipelines import with_plan

    rows = 264  # two programs an SM and more
    assert kernel_count(name, rows, cols) == 1
    ex = example(name, rows, cols)
    kernel = ex.kernel(with_plan("gluon-default", f"xblock=1,chunk=16384,num_warps=16,row_cache={cached}"))
    assert any(isinstance(op, TmaLoadOp) for op in kernel.walk())
    ex.check(run_gluon(ex, kernel), f"row_cache={cached} on the GPU")


@pytest.mark.parametrize(
    ("cols", "emitter"), [(50257, "triton"), (131072, "triton"), (262144, "triton"), (262144, "gluon")]
)
@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
def test_a_row_read_again_in_reverse_equals_eager(name: str, cols: int, emitter: str) -> None:
    """`reread` (the plan's `reverse` and `stream`): one row a program in chunks of 16384, the
    second read from the row's last chunk back (a misaligned row's pieces each turned around), the
    rows written evict-first; in the Gluon pipeline past a 128 KiB cache (`row_cache`), equal to
    eager."""
    from tilec.passes.pipelines import with_plan

    rows = 264
    assert kernel_count(name, rows, cols) == 1
    ex = example(name, rows, cols)
    cache = ",row_cache=131072" if emitter == "gluon" else ""
    kernel = ex.kernel(
        with_plan(f"{emitter}-default", f"xblock=1,chunk=16384,num_warps=16,reverse=true,stream=true{cache}")
    )
    assert any(op.name == "tile.sub" and (op.result.name_hint or "").endswith("_rev") for op in kernel.walk())
    run = run_gluon(ex, kernel) if emitter == "gluon" else run_triton(ex, kernel, "cuda")
    ex.check(run, f"{emitter} with reverse, stream on the GPU")
