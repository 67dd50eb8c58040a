"""Scatters that accumulate (the embedding's weight gradient, `index_add`): lowered to
`tile.atomic_add`, they compute what PyTorch computes with repeated indices (tokens sharing an
id), in tilec's interpreter as lowered, after both default pipelines and as emitted Triton, with
static and symbolic token counts; an index out of range fails the kernel's check."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from examples import run_chain
from tilec import interp
from tilec.ir.ops import AtomicAddOp, StoreOp
from tilec.testing import assert_close

VOCAB = 50


# The parameters are in the order the functions first use them: the order of the graph's inputs,
# which `run_chain` passes them in.


def embedding_grad(grad: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The table gradient autograd's `embedding_dense_backward` decomposes into (f32)."""
    table = torch.zeros(VOCAB, grad.shape[-1], dtype=torch.float32, device=grad.device)
    return table.index_put_((ids,), grad.float(), accumulate=True)


def index_add(x: torch.Tensor, idx: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    return x.index_add(0, idx, src)


def _inputs(name: str, tokens: int, hidden: int, ids: list[int]) -> list[torch.Tensor]:
    torch.manual_seed(tokens * 31 + hidden)
    index = torch.tensor(ids if name == "embedding_grad" else [i % VOCAB for i in ids], dtype=torch.int64)
    if name == "embedding_grad":
        return [torch.randn(tokens, hidden, dtype=torch.bfloat16), index]
    return [torch.randn(VOCAB, hidden), index, torch.randn(tokens, hidden)]


FUNCTIONS = {"embedding_grad": embedding_grad, "index_add": index_add}


@settings(max_examples=examples(8), deadline=None)
@given(
    name=st.sampled_from(sorted(FUNCTIONS)),
    shape=st.sampled_from([(5, 64), (40, 96), (130, 32)]),
    ids=st.data(),
    how=st.sampled_from(["logical", "gluon-default", "triton-default", "triton"]),
    dynamic=st.booleans(),
)
def test_scatter_adds_equal_eager(
    name: str, shape: tuple[int, int], ids: st.DataObject, how: str, dynamic: bool
) -> None:
    tokens, hidden = shape
    # few distinct ids, so that many tokens add to the same row; negative ids count from the end
    # (index_add takes none: they become the rows they name)
    drawn = ids.draw(st.lists(st.integers(-3, 5), min_size=tokens, max_size=tokens))
    inputs = _inputs(name, tokens, hidden, drawn)
    pipeline = "" if how == "logical" else ("triton-default" if how == "triton" else how)
    got, _, ran = run_chain(FUNCTIONS[name], inputs, dynamic=dynamic, pipeline=pipeline, triton=how == "triton")
    assert any(isinstance(op, AtomicAddOp) for k in ran for op in k.walk())
    want = FUNCTIONS[name](*[t.double() if t.is_floating_point() else t for t in inputs])
    assert_close(got.double(), want, torch.float32, what=f"{name} {shape} {how} dynamic={dynamic}")


def test_the_scatter_is_the_only_atomic() -> None:
    """The zeroed table is a plain store; only the scatter adds."""
    _, _, ran = run_chain(embedding_grad, _inputs("embedding_grad", 8, 64, [1, 1, 2, 3, 1, 0, 4, 4]))
    zeros, scatter = ran
    assert [type(op) for op in zeros.walk() if isinstance(op, StoreOp)] == [StoreOp]
    assert [type(op) for op in scatter.walk() if isinstance(op, StoreOp)] == [AtomicAddOp]


@pytest.mark.parametrize("bad", [VOCAB, -VOCAB - 1])
def test_out_of_range_id_fails_the_check(bad: int) -> None:
    ids = [0, 1, bad, 2]
    with pytest.raises(interp.DeviceAssertError, match="index out of bounds"):
        run_chain(embedding_grad, _inputs("embedding_grad", 4, 32, ids))
