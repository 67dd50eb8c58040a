"""On the GPU: the cross-entropy's training step through the hook, its backward's one-hot sum
computed from the label (`onehot-sums`), with each emitter: the logits' gradient equals float32
autograd of eager, ignored labels (-100) included, at GPT-2's vocabulary (rows off 16-byte
boundaries: align-rows' narrow pieces) and at Llama's."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from gpu_support import skip_unless_runs

import tilec
from tilec.testing import assert_close

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]


def loss_of(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), labels)


@pytest.mark.parametrize("vocab", [50257, 32000])
@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_the_cross_entropy_backward_equals_eager(emitter: str, vocab: int) -> None:
    skip_unless_runs(emitter)
    g = torch.Generator(device="cuda").manual_seed(vocab)
    logits = (torch.randn(512, vocab, device="cuda", generator=g) * 4).bfloat16()
    labels = torch.randint(0, vocab, (512,), device="cuda", generator=g)
    labels[::7] = -100
    before = len(tilec.report())
    with tilec.config.patch(emitter=emitter):
        x = logits.clone().requires_grad_()
        compiled = torch.compile(loss_of, backend="tilec", dynamic=False, fullgraph=True)
        (got,) = torch.autograd.grad(compiled(x, labels), x)
    ref_x = logits.float().requires_grad_()
    (want,) = torch.autograd.grad(loss_of(ref_x, labels), ref_x)
    assert_close(got, want, torch.bfloat16, what=f"cross-entropy backward {emitter} 512x{vocab}")
    records = tilec.report()[before:]
    backward = [r for r in records if "nll_loss_backward" in r.kernel]
    assert backward and all(r.taken for r in backward), [(r.kernel, r.reason) for r in records]
    # the pass took the one-hot sum: it says nothing of a kernel it changed
    assert not [m for r in backward for m in r.remarks if m.startswith("onehot-sums:")], backward
