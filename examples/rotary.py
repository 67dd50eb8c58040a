"""Rotary position embeddings as Llama applies them to queries and keys: `q * cos +
rotate_half(q) * sin`, where `rotate_half` concatenates the negated second half of each head
with the first.

    tilec dump --ir examples/rotary.py [--shape 4,16,1024,128] [--dtype bf16]

Inductor writes the concatenation as two masked loads of the halves, selected by the column:
one pointwise kernel that reads q, cos and sin once. The shape is (batch, heads, tokens,
head_dim); cos and sin are shared by the heads.
"""

from __future__ import annotations

import torch


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x.narrow(-1, half, half), x.narrow(-1, 0, half)), dim=-1)


def forward(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return q * cos + rotate_half(q) * sin


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A shape of fewer than four sizes gets leading 1s (the default 4096,8192: one head of 8192
    over 4096 tokens)."""
    batch, heads, tokens, dim = (1,) * (4 - len(shape)) + tuple(shape)
    angles = torch.randn(batch, 1, tokens, dim)
    return torch.randn(batch, heads, tokens, dim, dtype=dtype), angles.cos().to(dtype), angles.sin().to(dtype)


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
