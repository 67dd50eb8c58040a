"""The cross-entropy's backward over the logits, as a training step's graph has it: the forward's
log-sum-exp saved, the gradient softmax minus one-hot, scaled.

    tilec dump --ir examples/cross_entropy_backward.py [--shape 8192,50257]

One kernel: Inductor's first loop sums each row's one-hot gradient, made from the label alone, so
it reads none of the logits; the second reads them for the softmax and writes the gradient. The
pipelines compute that sum from the label once a row (`onehot-sums`), so the logits' loop is the
kernel's only one. Rows of 50257 (GPT-2's vocabulary) start off 16-byte boundaries: `align-rows`
splits that loop into its pieces, the first and last a vector wide (docs/passes.md).
"""

from __future__ import annotations

import torch


def forward(logits: torch.Tensor, lse: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    hit = torch.arange(logits.shape[1], device=logits.device).unsqueeze(0) == labels.unsqueeze(1)
    grad = hit.float() * -0.5
    return (grad - torch.exp(logits.float() - lse.unsqueeze(1)) * grad.sum(1, keepdim=True)).to(logits.dtype)


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    rows, vocab = shape
    return torch.randn(rows, vocab, dtype=dtype), torch.randn(rows), torch.randint(0, vocab, (rows,))


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
