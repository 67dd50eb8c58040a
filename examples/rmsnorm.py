"""RMSNorm as Llama writes it: normalize in fp32, scale by the weight in the input dtype.

    tilec dump --ir examples/rmsnorm.py [--shape 4096,8192] [--dtype bf16]
    python examples/rmsnorm.py [--shape 64,1000]      # the same

Inductor fuses it into one reduction kernel: a sum of squares over each row, then the row
again, scaled.
"""

from __future__ import annotations

import torch


def forward(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(shape, dtype=dtype), torch.randn(shape[-1], dtype=dtype)


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
