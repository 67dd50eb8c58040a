"""Inductor's FX-graph cache and tilec: toggling tilec or its settings never reuses a kernel compiled
under others (the hook's custom pass puts `tilec.config.fingerprint()` into the cache key), the
same settings do reuse it, and a graph loaded from the FX-graph or AOT-autograd cache, in this
process or a new one, runs tilec's kernels and reports the records its compile made."""

from __future__ import annotations

import dataclasses
import json
import logging
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
from tilec.frontend import reasons
from tilec.inductor import policy

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
    """Compiles softmax under `settings`; returns the records (of the kernels generated, or of a
    graph loaded from the cache) and the FX-graph cache hits."""
    torch._dynamo.reset()
    tilec.reset_report()
    counters.clear()
    x = torch.randn(8, 100)
    with cfg.patch(**settings):
        y = torch.compile(softmax, backend="tilec", dynamic=False)(x)
    torch.testing.assert_close(y, softmax(x))
    return tilec.report(), int(counters["inductor"]["fxgraph_cache_hit"])


def ungraphed(records: list[tilec.KernelRecord]) -> list[tilec.KernelRecord]:
    """The records less their graph numbers, which count this process's graphs."""
    return [dataclasses.replace(r, graph=0) for r in records]


def test_toggling_tilec_never_reuses_a_stale_kernel(cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    records, hits = compile_once(enabled=False)
    assert [(r.taken, r.reason) for r in records] == [(False, policy.DISABLED)] and hits == 0
    records, hits = compile_once(enabled=True)  # not the stock kernel from the cache
    assert [r.taken for r in records] == [True] and hits == 0
    taken = ungraphed(records)
    # the same settings: a cache hit, nothing generated; Inductor executes the cached module
    # again (PyCodeCache loads a graph with its constants, so never from its table of loaded
    # modules), and the module's lines record the kernel again, as this process forgot it
    with caplog.at_level(logging.INFO, logger="tilec"):
        records, hits = compile_once(enabled=True)
    assert ungraphed(records) == taken and hits == 1
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("tilec: ")]
    assert lines == [f"tilec: 1 of 1 kernels taken (triton), loaded from Inductor's cache; taken: {taken[0].kernel}"]
    torch._dynamo.reset()
    torch.compile(softmax, backend="tilec", dynamic=False)(torch.randn(8, 100))  # a hit, no reset_report
    assert ungraphed(tilec.report()) == taken and int(counters["inductor"]["fxgraph_cache_hit"]) == 2
    pipeline = "plan{xblock=1},canonicalize,cse,dce"
    records, hits = compile_once(pipelines={"gluon": "gluon-default", "triton": pipeline})
    assert [(r.taken, r.pipeline) for r in records] == [(True, pipeline)] and hits == 0
    records, hits = compile_once(enabled=False)  # back to the first settings: their entry
    assert [(r.taken, r.reason) for r in records] == [(False, policy.DISABLED)] and hits == 1


def test_without_the_fingerprint_the_cache_would_be_stale(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The control: were the key blind to tilec's settings, the second compile would silently run
    # the first one's stock kernel (its records, loaded with it, say so). This is what the custom
    # pass prevents.
    monkeypatch.setattr(cfg, "fingerprint", lambda: "constant")
    compile_once(enabled=False)
    records, hits = compile_once(enabled=True)
    assert [(r.taken, r.reason) for r in records] == [(False, policy.DISABLED)] and hits == 1


CACHED_MODEL = textwrap.dedent(
    """
    import dataclasses, json, sys
    import torch, tilec
    from torch._dynamo.utils import counters
    tilec.install(cpu=True)
    torch._inductor.config.fx_graph_cache = True
    torch._inductor.config.force_disable_caches = False

    def model(x, w, idx):
        # random numbers on the CPU: tilec declines the kernel they are in, C++ has it (scaled by
        # 1e-30, far below an ulp of the softmax: the results and the gradients stay eager's)
        y = torch.softmax(x * 2, -1) + 1e-30 * torch.rand_like(x)
        z = y.index_add(0, idx, x) + 1  # an accumulating scatter (atomic adds)
        return z * torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    torch.manual_seed(0)
    x, w = torch.randn(8, 100, requires_grad=True), torch.randn(100, requires_grad=True)
    idx = torch.randint(0, 8, (8,))
    y = torch.compile(model, dynamic=False)(x, w, idx)
    y.sum().backward()  # the backward graph: compiled, or loaded with the forward from the AOT-autograd cache
    gx, gw = x.grad, w.grad
    x.grad = w.grad = None
    model(x, w, idx).sum().backward()
    torch.testing.assert_close((gx, gw), (x.grad, w.grad))
    print(json.dumps({
        "hits": counters["inductor"]["fxgraph_cache_hit"],
        "aot_hits": counters["aot_autograd"]["autograd_cache_hit"],
        "launched": any(m.startswith("tilec_generated_") for m in sys.modules),  # tilec's launcher loaded a kernel
        "report": [dataclasses.asdict(r) for r in tilec.report()],
    }))
    """
)


def test_records_survive_the_caches_in_a_new_process(tmp_path: Path) -> None:
    """One process compiles a forward and backward (cold caches); another loads both graphs from
    the AOT-autograd and FX-graph caches, runs tilec's kernels from the cached wrappers and reports
    the same records, the kernels tilec declined too, with the same graph numbers (both processes
    compile and load in the same order). (Two fresh processes: a long test process carries state,
    such as patched device queries, that changes its cache keys.)"""
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
        "TILEC_CACHE_DIR": str(tmp_path / "tilec"),
    }
    env.pop("TILEC_DISABLE", None)
    runs = []
    for _ in range(2):
        r = subprocess.run(
            [sys.executable, "-c", CACHED_MODEL], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        assert r.returncode == 0, r.stderr[-3000:]
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert (cold["hits"], cold["aot_hits"]) == (0, 0) and cold["launched"]
    assert warm["hits"] > 0 and warm["aot_hits"] > 0 and warm["launched"]
    assert warm["report"] == cold["report"]
    records = cold["report"]
    assert {r["graph"] for r in records} == {1, 2}  # the forward and the backward
    assert {r["taken"] for r in records} == {True, False}
    assert all(r["taken"] or r["reason"] == reasons.RANDOM_ON_CPU for r in records)
