"""LayerNorm, as the training forward computes it: the output plus each row's mean and rstd
(saved for the backward), three outputs of one kernel.

    tilec dump --ir examples/layernorm.py              # forward: y, mean, rstd
    tilec dump --ir examples/layernorm.py:inference    # F.layer_norm: y only

Inductor computes mean and variance with Welford's algorithm over each row, then normalizes
the row in a second pass.
"""

from __future__ import annotations

import torch

EPS = 1e-5


def forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.ops.aten.native_layer_norm(x, [x.shape[-1]], weight, bias, EPS)


def inference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, EPS)


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    n = shape[-1]
    return torch.randn(shape, dtype=dtype), torch.randn(n, dtype=dtype), torch.randn(n, dtype=dtype)


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
