"""RMSNorm's backward as a training step's graph has it: the forward's per-row rstd saved, dx
and the weight's gradient (a sum over the rows) from x and dy.

    tilec dump --ir examples/rmsnorm_backward.py [--shape 4096,32768]
    tilec dump --emit gluon examples/rmsnorm_backward.py --shape 4096,32768

Inductor fuses the two reductions — each row's sum of dy·w·x for dx, each column's sum of dy·x·rstd
for the weight — into one mix-order reduction where its size checks allow, and where tilec's
table has a measured range past them (the H100's and the H200's: rows of 16384-32768 with one column sum): one
banded kernel, each program a band of rows, its column sums a row of the workspace. With
`--emit gluon` it runs the hook's pipeline for such a kernel (`gluon-ring`).
"""

from __future__ import annotations

import torch


def forward(x: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, ...]:
    xf, g = x.float(), dy.float() * w.float()
    r = rstd.unsqueeze(1)
    dot = (g * xf).sum(1, keepdim=True) / x.shape[1]
    dx = (r * (g - xf * r * r * dot)).to(x.dtype)
    dw = (dy.float() * xf * r).sum(0).to(w.dtype)
    return dx, dw


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    rows, n = shape
    return (
        torch.randn(rows, n, dtype=dtype),
        torch.randn(n, dtype=dtype),
        torch.rand(rows) + 0.5,
        torch.randn(rows, n, dtype=dtype),
    )


if __name__ == "__main__":
    import sys

    from tilec.cli import main

    sys.exit(main(["dump", "--ir", __file__, *sys.argv[1:]]))
