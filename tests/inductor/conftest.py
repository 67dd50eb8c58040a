"""The hook, installed for the CPU (tilec's kernels in Triton's interpreter, C++ for the rest)
for the tests of this folder, and removed afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

import tilec
from tilec.runtime import interpreter_active


@pytest.fixture(scope="module")
def hook() -> Iterator[None]:
    if not interpreter_active():
        pytest.skip("the CPU hook runs Triton in its interpreter (TRITON_INTERPRET=1, set by tests/conftest.py)")
    with tilec.installed(cpu=True):
        yield


@pytest.fixture
def fresh(hook: None) -> Iterator[None]:
    """A clean slate per test: no compiled frames, no records, no FX-graph cache (a cache hit would
    generate no kernels: its records would come from the cached module, not from this compile);
    tilec's settings restored afterwards. The chooser's measured declines are off
    (tests/inductor/test_cuda_codegen.py checks them on their own)."""
    torch._dynamo.reset()
    tilec.reset_report()
    with tilec.config.patch(decline=False), torch._inductor.config.patch(fx_graph_cache=False):
        yield
    torch._dynamo.reset()


@pytest.fixture
def uninstalled() -> Iterator[None]:
    """tilec applied to no graph by itself (what `hook` or a test installed is removed for the test
    and put back afterwards), so that only `backend="tilec"` applies it; a clean slate as `fresh`."""
    if not interpreter_active():
        pytest.skip("the CPU hook runs Triton in its interpreter (TRITON_INTERPRET=1, set by tests/conftest.py)")
    was = [device for device in ("cuda", "cpu") if tilec.is_installed(device)]
    tilec.uninstall()
    torch._dynamo.reset()
    tilec.reset_report()
    try:
        with tilec.config.patch(decline=False), torch._inductor.config.patch(fx_graph_cache=False):
            yield
    finally:
        torch._dynamo.reset()
        tilec.uninstall()
        if was:
            tilec.install(cpu="cpu" in was)
