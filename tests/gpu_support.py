"""What the GPU tests (tests/gpu/) share: whether Gluon can run here, and the hook installed with
a clean slate (the `hooked` fixture in tests/gpu/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

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


def check_taken(fn: Any, inputs: list[Any], name: str, emitter: str) -> Any:
    """`check_function` of `fn` with `emitter`: equal to eager, and every kernel taken (the
    result, for further checks)."""
    from tilec.inductor.check import check_function

    skip_unless_runs(emitter)
    with tilec.config.patch(emitter=emitter):
        result = check_function(fn, inputs, name=name)
    print(result.line())
    assert result.ok, result.message
    assert result.records and all(r.taken for r in result.records), [(r.kernel, r.reason) for r in result.records]
    return result
