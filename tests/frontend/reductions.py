"""Row reductions for the golden test reductions.tile (`tilec dump --ir reductions.py:FUNC`)."""

from __future__ import annotations

import torch


def amax(x: torch.Tensor) -> torch.Tensor:
    return x.amax(-1)


def amin(x: torch.Tensor) -> torch.Tensor:
    return x.amin(-1)


def prod(x: torch.Tensor) -> torch.Tensor:
    return x.float().prod(-1)


def mean(x: torch.Tensor) -> torch.Tensor:
    return x.float().mean(-1)


def argmax(x: torch.Tensor) -> torch.Tensor:
    return x.argmax(-1)


def argmin(x: torch.Tensor) -> torch.Tensor:
    return x.argmin(-1)


def var_mean(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.var_mean(x, -1)
