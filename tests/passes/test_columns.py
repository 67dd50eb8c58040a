"""Column reductions (a weight gradient's sum over tokens, Inductor's partial sums and their
total): the plan tiles them along x with a layout contiguous along x; every kernel of the chain
still computes the gradient, in tilec's interpreter after both default pipelines and as emitted
Triton, with static and symbolic token counts; row kernels keep the row-major layout."""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

from examples import example as row_example
from examples import run_chain
from tilec.ir import Kernel, parse, print_kernel
from tilec.ir.layouts import BlockedLayout
from tilec.ir.ops import ForOp, ReduceOp
from tilec.ir.types import TileType
from tilec.passes import run_pipeline
from tilec.passes.plan import reads_columns
from tilec.testing import assert_close

EPS = 1e-6


def bias_grad(dy: torch.Tensor) -> torch.Tensor:
    """A bias gradient: dy summed over every token."""
    return dy.sum(0)


def product_grad(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """An elementwise scale's gradient: the sum over tokens of dy * x, in f32."""
    return (x.float() * dy.float()).sum(0)


def rmsnorm_weight_grad(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """RMSNorm's weight gradient: the sum over tokens of dy * x-hat (a row reduction for x-hat,
    then the column sums)."""
    xf = x.float()
    xhat = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
    return (dy.float() * xhat).sum(0).to(x.dtype)


FUNCTIONS = {"bias_grad": bias_grad, "product_grad": product_grad, "rmsnorm_weight_grad": rmsnorm_weight_grad}
ARITY = {"bias_grad": 1, "product_grad": 2, "rmsnorm_weight_grad": 2}


def _inputs(name: str, rows: int, cols: int, dtype: torch.dtype) -> list[torch.Tensor]:
    torch.manual_seed(rows * 7 + cols)
    return [torch.randn(rows, cols).to(dtype) for _ in range(ARITY[name])]


def parent(kernel: Kernel) -> BlockedLayout | None:
    """The layout of the kernel's 2-D tiles."""
    for op in kernel.walk():
        for r in op.results:
            if isinstance(r.type, TileType) and r.type.rank == 2 and isinstance(r.type.layout, BlockedLayout):
                return r.type.layout
    return None


@settings(max_examples=examples(10), deadline=None)
@given(
    name=st.sampled_from(sorted(FUNCTIONS)),
    rows=st.sampled_from([1, 3, 64, 300, 1100]),
    cols=st.sampled_from([8, 96, 200, 1024]),
    dtype=st.sampled_from([torch.bfloat16, torch.float32]),
    pipeline=st.sampled_from(["gluon-default", "triton-default"]),
    dynamic=st.booleans(),
)
@example(name="product_grad", rows=1100, cols=200, dtype=torch.bfloat16, pipeline="gluon-default", dynamic=False)
@example(name="rmsnorm_weight_grad", rows=300, cols=96, dtype=torch.bfloat16, pipeline="triton-default", dynamic=True)
def test_column_sums_equal_eager(
    name: str, rows: int, cols: int, dtype: torch.dtype, pipeline: str, dynamic: bool
) -> None:
    inputs = _inputs(name, rows, cols, dtype)
    got, _, _ = run_chain(FUNCTIONS[name], inputs, dynamic=dynamic, pipeline=pipeline)
    want = FUNCTIONS[name](*[t.double() for t in inputs])
    assert_close(got.double(), want, got.dtype, what=f"{name} {rows}x{cols} {dtype} {pipeline} dynamic={dynamic}")


@pytest.mark.parametrize("dynamic", [False, True])
def test_emitted_triton_sums_columns(dynamic: bool) -> None:
    inputs = _inputs("rmsnorm_weight_grad", 1100, 200, torch.bfloat16)
    got, _, _ = run_chain(rmsnorm_weight_grad, inputs, dynamic=dynamic, pipeline="triton-default", triton=True)
    assert_close(got.float(), rmsnorm_weight_grad(*[t.double() for t in inputs]).float(), torch.bfloat16)


def test_the_partial_sums_are_planned_along_columns() -> None:
    """4096 tokens x 2048 columns: Inductor sums the tokens in chunks (partial sums, contiguous
    along x), then sums the partials; both are column reductions, planned with order [0, 1] and
    16-byte runs along x. RMSNorm's rows stay row-major."""
    inputs = _inputs("product_grad", 4096, 2048, torch.bfloat16)
    _, lowered, kernels = run_chain(product_grad, inputs, pipeline="gluon-default")
    assert len(kernels) == 2, [lo.kernel.name for lo in lowered]
    for lo, kernel in zip(lowered, kernels):
        assert reads_columns(lo.kernel), lo.kernel.name
        layout = parent(kernel)
        assert layout is not None and layout.order == (0, 1), (kernel.name, layout)
    partials = parent(kernels[0])
    assert partials is not None and partials.size_per_thread == (8, 1)  # 16 bytes of bf16
    assert kernels[0].constexprs["XBLOCK"] == 128
    row = row_example("rmsnorm", 64, 1000)
    assert not reads_columns(row.lowered.kernel)
    row_layout = parent(row.kernel("gluon-default"))
    assert row_layout is not None and row_layout.order == (1, 0)


def test_the_partial_sums_accumulate_whole_tiles() -> None:
    """In the default pipelines the column partial sums are carried as [XBLOCK, RBLOCK] tiles and
    reduced once, after the loop; RMSNorm's row kernel keeps one reduction per chunk."""
    inputs = _inputs("product_grad", 4096, 2048, torch.bfloat16)
    for pipeline in ("gluon-default", "triton-default"):
        _, _, kernels = run_chain(product_grad, inputs, pipeline=pipeline)
        loops = [op for op in kernels[0].walk() if isinstance(op, ForOp)]
        assert loops and all(isinstance(r.type, TileType) and r.type.rank == 2 for op in loops for r in op.results)
        assert not any(isinstance(op, ReduceOp) for loop in loops for op in loop.body.walk()), pipeline
    row = row_example("rmsnorm", 64, 1000).kernel("plan{max_rblock=256,chunk=256},accumulate")
    assert any(isinstance(op, ReduceOp) for loop in row.walk() if isinstance(loop, ForOp) for op in loop.body.walk())


ROW_FUNCTIONS = {"rmsnorm_weight_grad": rmsnorm_weight_grad, "row_sum": lambda x, dy: (x.float() * dy.float()).sum(-1)}


@settings(max_examples=examples(6), deadline=None)
@given(
    name=st.sampled_from(sorted(ROW_FUNCTIONS)),
    rows=st.sampled_from([1, 5, 70]),
    cols=st.sampled_from([300, 1000, 1100]),
    chunk=st.sampled_from([64, 256]),
)
# two chunks a row: peel and canonicalize inline both, so the carried tile shows only right
# after accumulate
@example(name="rmsnorm_weight_grad", rows=1, cols=300, chunk=256)
def test_rows_accumulated_whole_equal_eager(name: str, rows: int, cols: int, chunk: int) -> None:
    """`accumulate{where=all}` on row kernels too (row sums in chunks, masked tails
    included): the same sums, regrouped."""
    inputs = _inputs("product_grad", rows, cols, torch.bfloat16)
    fn = ROW_FUNCTIONS[name]
    accumulated = f"plan{{max_rblock={chunk},chunk={chunk}}},accumulate{{where=all}}"
    got, lowered, _ = run_chain(fn, inputs, pipeline=f"{accumulated},canonicalize,peel,canonicalize,cse,dce")
    carried = []
    for low in lowered:
        module = parse(print_kernel(low.kernel))
        run_pipeline(module, accumulated)
        carried += [r for op in module.kernels[0].walk() if isinstance(op, ForOp) for r in op.results]
    assert any(isinstance(r.type, TileType) and r.type.rank == 2 for r in carried)
    want = fn(*[t.double() for t in inputs])
    assert_close(got.double().reshape(want.shape), want, got.dtype, what=f"{name} {rows}x{cols} chunk {chunk}")
