"""The pointwise chain of a gated GELU MLP: gelu(x * scale + bias) * gate.

    tilec dump --ir examples/gelu_mlp.py [--shape 4096,8192]

One pointwise kernel: `scale` and `bias` are per-column vectors, broadcast over the rows; GELU
is the exact (erf) form, computed in fp32.
"""

from __future__ import annotations

import torch


def forward(x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x * scale + bias) * gate


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    n = shape[-1]
    return (
        torch.randn(shape, dtype=dtype),
        torch.randn(n, dtype=dtype),
        torch.randn(n, dtype=dtype),
        torch.randn(shape, dtype=dtype),
    )


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
