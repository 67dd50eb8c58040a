"""A language model's first layer: the token embedding, then RMSNorm of the gathered rows.

    tilec dump --ir examples/embedding_rmsnorm.py [--shape 4096,2048] [--dtype bf16]

Inductor fuses the gather into the norm: one reduction kernel that loads each row's token id,
checks it against the vocabulary (a `tile.assert`), and reads the embedding row it names. The
shape is (tokens, hidden); the vocabulary has 32000 rows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812

VOCAB = 32000


def forward(ids: torch.Tensor, table: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    h = F.embedding(ids, table).float()
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(table.dtype) * weight


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    tokens, hidden = shape
    ids = torch.randint(0, VOCAB, (tokens,))
    return ids, torch.randn(VOCAB, hidden, dtype=dtype), torch.randn(hidden, dtype=dtype)


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
