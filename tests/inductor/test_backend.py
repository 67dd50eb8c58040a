"""`torch.compile(backend="tilec")` applies tilec to the graphs compiled through it, the backward
graph AOT autograd compiles at the first backward call included; another torch.compile in the same
process stays stock Inductor, in its code, its records and its FX-graph cache entries, while
`tilec.install()` applies tilec to every graph."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code

import tilec
from tilec.inductor.registry import is_registered

pytestmark = pytest.mark.usefixtures("uninstalled")


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x * 2, -1)


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def test_a_default_compile_beside_the_backend_stays_stock() -> None:
    x, w = torch.randn(8, 100), torch.randn(100)
    y = torch.compile(softmax, backend="tilec", dynamic=False)(x)
    torch.testing.assert_close(y, softmax(x))
    assert [(r.taken, r.device) for r in tilec.report()] == [(True, "cpu")]
    # registered for the CPU (Triton's interpreter is active), applied to no graph by itself
    assert is_registered("cpu") and not tilec.is_installed("cpu")
    tilec.reset_report()
    y, (code,) = run_and_get_code(torch.compile(rmsnorm, dynamic=False), x, w)
    torch.testing.assert_close(y, rmsnorm(x, w))
    assert tilec.report() == []
    assert "cpp_fused" in code and "tilec" not in code  # C++ code generation, no launcher, no records


def test_the_backend_covers_the_backward_graph() -> None:
    x = torch.randn(8, 100, requires_grad=True)
    grad = torch.randn(8, 100)
    y = torch.compile(softmax, backend="tilec", dynamic=False)(x)
    (forward,) = tilec.report()
    assert forward.taken
    y.backward(grad)  # AOT autograd compiles the backward graph now, after the backend returned
    backward = tilec.report()[1:]
    assert backward and all(r.taken for r in backward), backward
    assert {r.graph for r in backward} == {forward.graph + 1}
    assert any("softmax_backward" in r.kernel for r in backward), backward  # its reduction
    expected = x.detach().requires_grad_()
    softmax(expected).backward(grad)
    torch.testing.assert_close(x.grad, expected.grad)


def test_install_applies_tilec_to_every_graph() -> None:
    x = torch.randn(8, 100, requires_grad=True)
    with tilec.installed(cpu=True):
        y = torch.compile(softmax, dynamic=False)(x)  # the default backend
        y.sum().backward()
        records = tilec.report()
        assert len({r.graph for r in records}) == 2 and all(r.taken for r in records), records
    torch._dynamo.reset()
    tilec.reset_report()
    torch.compile(softmax, dynamic=False)(x)
    assert tilec.report() == []  # out of the block: stock again


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Inductor's FX-graph cache on, in a fresh folder."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    with torch._inductor.config.patch(fx_graph_cache=True, force_disable_caches=False):
        yield


def compile_softmax(backend: str) -> tuple[list[tilec.KernelRecord], int, str]:
    """softmax compiled anew with `backend`: the records, the FX-graph cache hits, the wrapper's code."""
    torch._dynamo.reset()
    tilec.reset_report()
    counters.clear()
    x = torch.randn(8, 100)
    y, (code,) = run_and_get_code(torch.compile(softmax, backend=backend, dynamic=False), x)
    torch.testing.assert_close(y, softmax(x))
    return tilec.report(), int(counters["inductor"]["fxgraph_cache_hit"]), code


def test_the_backend_and_stock_never_share_a_cache_entry(cache: None) -> None:
    records, hits, code = compile_softmax("tilec")
    assert [r.taken for r in records] == [True] and hits == 0
    records, hits, code = compile_softmax("inductor")  # registered, not applied: not tilec's entry
    assert records == [] and hits == 0 and "tilec" not in code
    tilec.uninstall()
    records, hits, code = compile_softmax("inductor")  # stock Inductor's own key: the same entry
    assert records == [] and hits == 1 and "tilec" not in code
    records, hits, code = compile_softmax("tilec")  # registered again: tilec's entry, its records
    assert [r.taken for r in records] == [True] and hits == 1 and "load_kernel" in code
