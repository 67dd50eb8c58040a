"""On the GPU: rows whose length is no multiple of 16 bytes (GPT-2's vocabulary, 50257 bf16
logits), one per program, read in chunks from the aligned address below each row's start
(`align-rows`): softmax, and cross-entropy's forward and its backward of the logits, equal eager
with each emitter."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from gpu_support import check_taken

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]

V = 50257


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), labels)


def cross_entropy_grad(logits: torch.Tensor, labels: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The backward of the logits as AOT autograd writes it: softmax minus one-hot, scaled."""
    lsm = torch.log_softmax(logits.float(), -1)
    grad = torch.ops.aten.nll_loss_backward(scale, lsm, labels, None, 1, -100, scale * 300)
    return torch.ops.aten._log_softmax_backward_data(grad, lsm, -1, torch.float32).to(logits.dtype)


def cases() -> dict[str, tuple]:
    g = torch.Generator(device="cuda").manual_seed(0)
    logits = torch.randn(333, V, device="cuda", dtype=torch.bfloat16, generator=g)
    labels = torch.randint(0, V, (333,), device="cuda", generator=g)
    labels[::5] = -100
    return {
        "softmax": (softmax, [logits]),
        "cross-entropy": (cross_entropy, [logits, labels]),
        "cross-entropy-grad": (cross_entropy_grad, [logits, labels, torch.tensor(1.0, device="cuda")]),
    }


@pytest.mark.parametrize("name", ["softmax", "cross-entropy", "cross-entropy-grad"])
@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_misaligned_rows_equal_eager(emitter: str, name: str) -> None:
    fn, inputs = cases()[name]
    result = check_taken(fn, inputs, name, emitter)
    rows = [r for r in result.records if r.kernel.startswith("triton_red")]
    # align-rows took every row loop. Only the Triton pipeline narrows its pieces, and there a piece
    # whose running sum `accumulate` carries as a whole chunk keeps the chunk's width (the
    # cross-entropy backward's first loop), which it says; nothing else is remarked
    said = [m for r in rows for m in r.remarks if m.startswith("align-rows:")]
    kept = [m for m in said if m.endswith("keeps the chunk's width: it carries a tile of the chunk's width")]
    assert rows and said == (kept if emitter == "triton" else []), [(r.kernel, r.remarks) for r in rows]
