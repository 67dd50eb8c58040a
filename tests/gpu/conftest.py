"""Fixtures of the GPU tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gpu_support import hooked as _hooked


@pytest.fixture
def hooked() -> Iterator[None]:
    """tests/gpu_support.py: hooked()."""
    with _hooked():
        yield
