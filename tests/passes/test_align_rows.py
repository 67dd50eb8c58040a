"""align-rows: rows whose length is no multiple of the 16-byte vector (a vocabulary of 50257),
one per program, read in chunks that start on aligned addresses. Every kernel of the chain
computes what eager PyTorch computes (tilec's interpreter checks the alignment promises too), in
the interpreter and as emitted Triton; rows of aligned length and several rows per program are
left as they were."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from examples import run_chain
from tilec.ir.ops import AssumeMultipleOp, ForOp
from tilec.testing import assert_close


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)


def rmsnorm(x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)


def cross_entropy_grad(logits: torch.Tensor, scale: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy's backward of the logits, as AOT autograd writes it (one kernel reading the
    logits for their statistics, then again for softmax minus one-hot, scaled). The arguments in
    the order the function first uses them: the graph's inputs' order, run_chain's."""
    lsm = torch.log_softmax(logits.float(), -1)
    grad = torch.ops.aten.nll_loss_backward(scale, lsm, labels, None, 1, -100, scale * 3)
    return torch.ops.aten._log_softmax_backward_data(grad, lsm, -1, torch.float32).to(logits.dtype)


FUNCTIONS = {"softmax": softmax, "rmsnorm": rmsnorm, "cross_entropy_grad": cross_entropy_grad}


def _inputs(name: str, rows: int, cols: int) -> list[torch.Tensor]:
    torch.manual_seed(rows * 1000 + cols)
    x = torch.randn(rows, cols).bfloat16()
    if name != "cross_entropy_grad":
        return [x]
    labels = torch.randint(0, cols, (rows,))
    labels[::3] = -100
    return [x, torch.tensor(1.0), labels]


def _pipeline(chunk: int, xblock: int = 1) -> str:
    return f"plan{{xblock={xblock},max_rblock={chunk},chunk={chunk}}},align-rows,canonicalize,peel,canonicalize,cse,dce"


@settings(max_examples=examples(6), deadline=None)
@given(
    name=st.sampled_from(sorted(FUNCTIONS)),
    rows=st.integers(2, 5),  # (a single row is a kernel without rows)
    cols=st.sampled_from([257, 1001, 1536, 3001]),
    chunk=st.sampled_from([64, 256]),
)
def test_aligned_chunks_equal_eager(name: str, rows: int, cols: int, chunk: int) -> None:
    inputs = _inputs(name, rows, cols)
    got, _, kernels = run_chain(FUNCTIONS[name], inputs, pipeline=_pipeline(chunk))
    hinted = [op for k in kernels for op in k.walk() if isinstance(op, AssumeMultipleOp)]
    assert bool(hinted) == (cols % 8 != 0), (name, cols)  # 1536 bf16 rows start aligned already
    want = FUNCTIONS[name](*[t.float() if t.is_floating_point() else t for t in inputs])
    assert_close(got.float().reshape(want.shape), want, torch.bfloat16, what=f"{name} {rows}x{cols} chunk {chunk}")


def test_the_chunks_between_head_and_rest_are_unmasked() -> None:
    """Three loops per row loop: the first chunk (one step: canonicalize inlines it) and the rest
    masked, the chunks between them not."""
    _, _, (kernel,) = run_chain(softmax, _inputs("softmax", 3, 3001), pipeline=_pipeline(256))
    loops = [op for op in kernel.body.ops if isinstance(op, ForOp)]
    loads = [[op for op in loop.body.walk() if op.name == "tile.load"] for loop in loops]
    assert len(loops) == 4  # two row loops (the max and sum, then the output), two loops left each
    assert [all(op.mask is None for op in ld) for ld in loads] == [True, False] * 2


@pytest.mark.parametrize("dynamic", [False, True])
def test_emitted_triton_reads_aligned_chunks(dynamic: bool) -> None:
    inputs = _inputs("cross_entropy_grad", 4, 1001)
    got, _, _ = run_chain(cross_entropy_grad, inputs, dynamic=dynamic, pipeline=_pipeline(256), triton=True)
    want = cross_entropy_grad(*[t.float() if t.is_floating_point() else t for t in inputs])
    assert_close(got.float().reshape(want.shape), want, torch.bfloat16)


def test_rows_of_several_per_program_are_left() -> None:
    _, _, (kernel,) = run_chain(softmax, _inputs("softmax", 8, 1001), pipeline=_pipeline(256, xblock=2))
    assert not any(isinstance(op, AssumeMultipleOp) for op in kernel.walk())
