"""The fake-H100 capture leaves no trace: every patched function, registration and cache is
restored when it returns, and when it fails half-way."""

from __future__ import annotations

import importlib

import pytest
import torch

from tilec.frontend.capture import CaptureError, capture, patched_state
from tilec.frontend.result import Lowered


@pytest.fixture
def state() -> list[tuple[str, object]]:
    from torch._inductor.codegen import common

    common.init_backend_registration()  # as any first compile would
    return patched_state()


def softmax(x):
    return torch.softmax(x, -1)


def test_capture_restores_everything(state: list[tuple[str, object]]) -> None:
    available = torch.cuda.is_available()
    kernels = capture(softmax, [torch.randn(64, 1000)])
    assert kernels and kernels[0].taken
    assert torch.cuda.is_available() == available
    assert patched_state() == state
    if not available:
        assert torch.cuda.device_count() == 0
        from torch._inductor.runtime import hints

        assert hints.DeviceProperties.create.cache_info().currsize == 0  # no H100 values cached


def test_capture_restores_after_an_error_in_the_function(state: list[tuple[str, object]]) -> None:
    def broken(x):
        return torch.softmax(x, -1) @ torch.ones(3, 3)  # shapes do not match

    available = torch.cuda.is_available()
    with pytest.raises(CaptureError):
        capture(broken, [torch.randn(64, 1000)])
    assert patched_state() == state
    assert torch.cuda.is_available() == available


def test_capture_restores_after_an_error_in_codegen(
    state: list[tuple[str, object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    capture_module = importlib.import_module("tilec.frontend.capture")

    def explode(*args, **kwargs):
        raise RuntimeError("boom inside Inductor's codegen")

    monkeypatch.setattr(capture_module, "lower", explode)
    with pytest.raises(CaptureError, match="boom"):
        capture(softmax, [torch.randn(64, 1000)])
    monkeypatch.undo()
    assert patched_state() == state


def test_a_cpu_compile_still_runs_afterwards() -> None:
    capture(softmax, [torch.randn(64, 1000)])
    x = torch.randn(8, 16)
    torch.testing.assert_close(torch.compile(softmax, dynamic=False)(x), torch.softmax(x, -1))


def test_cpu_device_fallback(state: list[tuple[str, object]]) -> None:
    kernels = capture(softmax, [torch.randn(64, 1000)], device="cpu")
    assert len(kernels) == 1 and isinstance(kernels[0].result, Lowered)
    # no online softmax on the CPU path: a max, then a sum
    assert kernels[0].result.reductions == ["max", "sum"]
    assert patched_state() == state


def test_repeated_captures_agree() -> None:
    a = capture(softmax, [torch.randn(64, 1000)])
    b = capture(softmax, [torch.randn(64, 1000)])
    assert [k.name for k in a] == [k.name for k in b]
    assert [k.source for k in a] == [k.source for k in b]
