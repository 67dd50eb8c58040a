"""What the GPU tests (tests/gpu/) share: whether Gluon can run here, and the hook installed with
a clean slate (the `hooked` fixture in tests/gpu/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

import tilec


def hopper() -> bool:
    """A GPU of sm_90 or newer: Gluon with TMA runs."""
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9


def skip_unless_runs(emitter: str) -> None:
    """Skips the calling test where `emitter` cannot run on this GPU (Gluon needs Hopper or newer)."""
    import pytest

    if emitter == "gluon" and not hopper():
        pytest.skip("Gluon needs Hopper or newer")


@contextmanager
def hooked() -> Iterator[None]:
    """tilec installed, no compiled frames, no records, no FX-graph cache (a cache hit generates no
    kernels), the chooser's measured declines off: the tests are about tilec's kernels."""
    torch._dynamo.reset()
    tilec.reset_report()
    with tilec.installed(), tilec.config.patch(decline=False), torch._inductor.config.patch(fx_graph_cache=False):
        yield
    torch._dynamo.reset()
