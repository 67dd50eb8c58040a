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
    generate no kernels and so record none); tilec's settings restored afterwards. The chooser's
    measured declines are off (tests/inductor/test_cuda_codegen.py checks them on their own)."""
    torch._dynamo.reset()
    tilec.reset_report()
    with tilec.config.patch(decline=False), torch._inductor.config.patch(fx_graph_cache=False):
        yield
    torch._dynamo.reset()
