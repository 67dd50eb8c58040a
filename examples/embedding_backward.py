"""A language model's embedding in training: the gradient of the table, a scatter that adds.

    tilec dump --ir examples/embedding_backward.py [--shape 4096,2048] [--dtype bf16]

Each token's row of the incoming gradient is added to the table row its id names, in f32;
tokens that share an id add to the same row, so the adds are atomic (`tile.atomic_add`), as in
the kernel autograd's `embedding_dense_backward` decomposes into. Two kernels: the zeroed f32
gradient, then the scatter. The shape is (tokens, hidden); the vocabulary has 32000 rows.
"""

from __future__ import annotations

import torch

VOCAB = 32000


def forward(ids: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    table_grad = torch.zeros(VOCAB, grad.shape[-1], dtype=torch.float32, device=grad.device)
    return table_grad.index_put_((ids,), grad.float(), accumulate=True)


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    tokens, hidden = shape
    ids = torch.randint(0, VOCAB, (tokens,))
    return ids, torch.randn(tokens, hidden, dtype=dtype)


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
