"""Log-softmax over the last dimension: x - max - log(sum(exp(x - max))).

    tilec dump --ir examples/log_softmax.py [--shape 4096,8192]

The same online softmax reduction as softmax, with a different epilogue.
"""

from __future__ import annotations

import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(x, dim=-1)


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
