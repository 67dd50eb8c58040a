"""Softmax over the last dimension.

    tilec dump --ir examples/softmax.py [--shape 4096,8192]

On CUDA, Inductor computes the row maximum and the sum of exponentials in one pass (an online
softmax reduction), then normalizes the row in a second pass.
"""

from __future__ import annotations

import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
