"""Rotary position embeddings as Llama's model computes and applies them to the queries: the
angles `inv_freq[d % (head_dim / 2)] * position` from the positions, their cos and sin, then
`q * cos + rotate_half(q) * sin`, with q as the projection writes it (batch, tokens, heads,
head_dim).

    tilec dump --ir examples/llama_rotary.py [--shape 4,1024,16,128] [--dtype bf16]
    tilec dump --ir examples/llama_rotary.py:heads_first --shape 4,16,1024,128    # q as (batch, heads, tokens, head_dim)

Inductor fuses it all into one pointwise kernel that computes the angle, its cos and its sin for
every element of q: the same values for each head of a token. `repeats` (docs/passes.md)
computes them once per token and column and broadcasts them over the heads.
"""

from __future__ import annotations

import torch


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x.narrow(-1, half, half), x.narrow(-1, 0, half)), dim=-1)


def forward(q: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    tokens = q.shape[1]
    positions = torch.arange(tokens, device=q.device).float()
    angles = positions.unsqueeze(-1) * inv_freq.float().unsqueeze(0)  # tokens x dim/2
    emb = torch.cat((angles, angles), dim=-1).unsqueeze(1)  # tokens x 1 x dim
    cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)
    return q * cos + rotate_half(q) * sin


def heads_first(q: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """The same of q laid out (batch, heads, tokens, head_dim), as attention's backward gives the
    gradient of q: the repeated cos and sin are a token's, and the heads are the outer digit of
    the flat index (`repeats` then steps each program's rows over the heads)."""
    tokens = q.shape[2]
    positions = torch.arange(tokens, device=q.device).float()
    angles = positions.unsqueeze(-1) * inv_freq.float().unsqueeze(0)
    emb = torch.cat((angles, angles), dim=-1)
    return q * emb.cos().to(q.dtype) + rotate_half(q) * emb.sin().to(q.dtype)


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """A shape of fewer than four sizes gets leading 1s (the default 4096,8192: 4096 tokens of
    64 heads of 128)."""
    if len(shape) == 2:
        shape = (1, shape[0], shape[1] // 128, 128)
    batch, tokens, heads, dim = (1,) * (4 - len(shape)) + tuple(shape)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    return torch.randn(batch, tokens, heads, dim, dtype=dtype), inv_freq


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
