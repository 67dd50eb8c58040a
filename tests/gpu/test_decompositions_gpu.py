"""On the GPU: the decompositions `backend="tilec"` takes (`tilec.inductor.decompositions`) run in
Inductor's CUDA code and give eager's gradients: an embedding whose table is also the output
projection's weight (GPT-2, Gemma) and one that is not (Llama), repeated ids and a padding id,
with the GPU's own rewrites (the H200's table takes the embedding's gradient at 4096 tokens) and
with every one (decline off), the same result twice."""

from __future__ import annotations

import pytest
import torch

import tilec
from tilec.passes.chooser import graph_rewrites

pytestmark = pytest.mark.gpu


class LM(torch.nn.Module):
    def __init__(self, vocab: int, hidden: int, tied: bool) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, hidden, padding_idx=0)
        self.head = None if tied else torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.rms_norm(self.emb(ids), (self.emb.weight.shape[1],))
        logits = h @ (self.emb.weight if self.head is None else self.head.weight).t()
        return torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), ids.flatten())


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
@pytest.mark.parametrize("decline", [True, False], ids=["the-gpus-table", "decline-off"])
def test_an_embeddings_gradient_through_the_backend_is_eagers(
    tied: bool, decline: bool, rewrite_calls: list[tuple[object, ...]]
) -> None:
    torch.manual_seed(0)
    model = LM(5000, 256, tied).cuda().bfloat16()
    ids = torch.randint(0, 5000, (4, 1024), device="cuda")  # 4096 tokens: the H200's measured range
    ids[0, :100] = 7  # repeated
    ids[1, :10] = 0  # the padding id
    model(ids).backward()
    expected = model.emb.weight.grad.float()
    grads = []
    with tilec.config.patch(decline=decline), torch._inductor.config.patch(fx_graph_cache=False):
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="tilec", dynamic=False)
        for _ in range(2):
            model.emb.weight.grad = None
            compiled(ids).backward()
            grads.append(model.emb.weight.grad.float())
    torch._dynamo.reset()
    taken = decline is False or any(
        r.name == "embedding_dense_backward" and r.tokens[0] <= ids.numel() < r.tokens[1]
        for r in graph_rewrites(torch.cuda.get_device_name())
    )
    assert rewrite_calls == ([(5000, 0, False)] if taken else []), rewrite_calls
    assert grads[0][0].abs().max() == 0  # the padding id's row
    torch.testing.assert_close(grads[0], expected, rtol=2e-2, atol=1e-4)
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-2, atol=1e-6)
