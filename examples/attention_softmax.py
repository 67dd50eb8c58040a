"""Attention scores: q @ k^T, scaled, causally masked, softmaxed.

    tilec dump --ir examples/attention_softmax.py [--shape QUERIES,KEYS | B,H,QUERIES,KEYS]

The matmul stays a library call (cuBLAS); Inductor fuses scale, mask and softmax into one
reduction kernel that works in place on the matmul's output (`in_out_ptr0`). The causal mask
never exists in memory: it becomes a comparison of the row and column indices.
"""

from __future__ import annotations

import torch

HEAD_DIM = 64


def forward(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    scores = (q @ k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    rows, cols = scores.shape[-2:]
    causal = torch.ones(rows, cols, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    *batch, rows, cols = shape if len(shape) >= 2 else (1, *shape)
    return torch.randn(*batch, rows, HEAD_DIM, dtype=dtype), torch.randn(*batch, cols, HEAD_DIM, dtype=dtype)


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
