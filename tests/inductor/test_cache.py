"""Inductor's FX-graph cache and tilec: toggling tilec or its settings never reuses a kernel compiled
under others (the hook's custom pass puts `tilec.config.fingerprint()` into the cache key), the
same settings do reuse it, and a cached wrapper loads in a new process by itself."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters

import tilec
from tilec import config as cfg

ROOT = Path(__file__).resolve().parents[2]


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


@pytest.fixture
def cache(hook: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Inductor's FX-graph cache on, in a fresh folder."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    with torch._inductor.config.patch(fx_graph_cache=True, force_disable_caches=False), cfg.patch():
        yield tmp_path / "inductor"
    torch._dynamo.reset()


def compile_once(**settings: object) -> tuple[list[tilec.KernelRecord], int]:
    """Compiles softmax under `settings`; returns the kernels generated and the FX-graph cache hits."""
    torch._dynamo.reset()
    tilec.reset_report()
    counters.clear()
    x = torch.randn(8, 100)
    with cfg.patch(**settings):
        y = torch.compile(softmax, backend="tilec", dynamic=False)(x)
    torch.testing.assert_close(y, softmax(x))
    return tilec.report(), int(counters["inductor"]["fxgraph_cache_hit"])


def test_toggling_tilec_never_reuses_a_stale_kernel(cache: Path) -> None:
    records, hits = compile_once(enabled=False)
    assert [r.taken for r in records] == [False] and hits == 0
    records, hits = compile_once(enabled=True)  # not the stock kernel from the cache
    assert [r.taken for r in records] == [True] and hits == 0
    records, hits = compile_once(enabled=True)  # the same settings: a cache hit, nothing generated
    assert records == [] and hits == 1
    pipeline = "plan{xblock=1},canonicalize,cse,dce"
    records, hits = compile_once(pipelines={"gluon": "gluon-default", "triton": pipeline})
    assert [(r.taken, r.pipeline) for r in records] == [(True, pipeline)] and hits == 0
    records, hits = compile_once(enabled=False)  # back to the first settings: their entry
    assert records == [] and hits == 1


def test_without_the_fingerprint_the_cache_would_be_stale(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The control: were the key blind to tilec's settings, the second compile would silently run
    # the first one's stock kernel. This is what the custom pass prevents.
    monkeypatch.setattr(cfg, "fingerprint", lambda: "constant")
    compile_once(enabled=False)
    records, hits = compile_once(enabled=True)
    assert records == [] and hits == 1


def test_a_cached_wrapper_loads_in_a_new_process(tmp_path: Path) -> None:
    """One process compiles (the wrapper embeds tilec's sources); another loads it from the cache
    and runs it, generating nothing. (Two fresh processes: a long test process carries state, such
    as patched device queries, that changes its cache keys.)"""
    script = textwrap.dedent(
        """
        import sys, torch, tilec
        from torch._dynamo.utils import counters
        tilec.install(cpu=True)
        torch._inductor.config.fx_graph_cache = True
        x = torch.randn(8, 100)
        y = torch.compile(lambda x: torch.softmax(x, -1), backend="tilec", dynamic=False)(x)
        torch.testing.assert_close(y, torch.softmax(x, -1))
        loaded = any(m.startswith("tilec_generated_") for m in sys.modules)  # tilec's launcher loaded a kernel
        print("hits", counters["inductor"]["fxgraph_cache_hit"], "taken", sum(r.taken for r in tilec.report()), loaded)
        """
    )
    env = {**os.environ, "TRITON_INTERPRET": "1", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    env.pop("TILEC_DISABLE", None)
    outputs = []
    for _ in range(2):
        r = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert r.returncode == 0, r.stderr[-3000:]
        outputs.append(r.stdout.strip())
    assert outputs == ["hits 0 taken 1 True", "hits 1 taken 0 True"], outputs
