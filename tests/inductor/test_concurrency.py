"""Concurrency: processes that share tilec's on-disk cache, and threads that share compiled models.

- Two processes started together compile the same models into one fresh cache folder
  (`TILEC_CACHE_DIR`), then load the same large modules at the same moment: both succeed, their
  results are right, and the folder holds exactly the complete files (no partial file, no
  temporary file left behind).
- Threads call compiled models at once, the same one and different ones, and compile models at
  once: results are bit for bit those of the same calls made one after another, and equal eager.
  (The CPU runs tilec's kernels in Triton's interpreter, which is not thread-safe: the loader
  serializes interpreted launches.)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import torch

import tilec
from tilec.testing import assert_close

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("fresh")

# ---------------------------------------------------------------------------------------------
# Processes

# Right after the start signal every worker loads the same large modules in the same order (a reader
# that could see a file half written would import a truncated one), then compiles the same models.
RACE_MODULES = 64
RACE_BYTES = 200_000

WORKER = textwrap.dedent(
    """
    import hashlib, json, sys, time
    from pathlib import Path

    import torch
    import tilec
    from tilec.runtime import load_source, loaded_kernels
    from tilec.testing import assert_close

    go, ready = Path(sys.argv[1]), Path(sys.argv[2])
    tilec.install(cpu=True)
    torch._inductor.config.fx_graph_cache = False

    def rmsnorm(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w

    def softmax(x, w):
        return torch.softmax(x * w, -1)

    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(16, 72, generator=gen), torch.randn(72, generator=gen)
    size, count = int(sys.argv[3]), int(sys.argv[4])
    sources = [f"# tilec concurrency test module {i}\\nPAYLOAD = {'x' * (size + i)!r}\\nSIZE = {size + i}\\n" for i in range(count)]

    ready.touch()
    deadline = time.monotonic() + 120
    while not go.exists():
        if time.monotonic() > deadline:
            sys.exit("no start signal")
        time.sleep(0.002)

    for i, source in enumerate(sources):
        module = load_source(source, interpret=True)
        assert module.SIZE == len(module.PAYLOAD) == size + i, i
    for fn in (rmsnorm, softmax):
        y = torch.compile(fn, backend="tilec", dynamic=False, fullgraph=True)(x, w)
        assert_close(y, fn(x, w), what=fn.__name__)

    files = {}
    for kernel in loaded_kernels():
        for variant in (kernel.primary, kernel.fallback):
            if variant is not None:
                files[Path(variant.module.__file__).name] = hashlib.sha256(variant.source.encode()).hexdigest()
    for source in sources:
        files[Path(load_source(source, interpret=True).__file__).name] = hashlib.sha256(source.encode()).hexdigest()
    print(json.dumps({"taken": [r.taken for r in tilec.report()], "files": files}))
    """
)


def test_two_processes_share_a_fresh_cache(tmp_path: Path) -> None:
    cache = tmp_path / "tilec-cache"
    go = tmp_path / "go"
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "TILEC_CACHE_DIR": str(cache),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
    }
    for name in ("TILEC_DISABLE", "TILEC_STRICT", "TILEC_EMITTER", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    readies = [tmp_path / f"ready{i}" for i in range(2)]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(go), str(ready), str(RACE_BYTES), str(RACE_MODULES)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for ready in readies
    ]
    try:
        deadline = time.monotonic() + 180
        while not all(r.exists() for r in readies):
            assert all(w.poll() is None for w in workers), [w.communicate() for w in workers]
            assert time.monotonic() < deadline, "the workers did not get ready"
            time.sleep(0.01)
        go.touch()  # both start loading and compiling now
        outputs = [w.communicate(timeout=300) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.communicate()
    results = []
    for w, (out, err) in zip(workers, outputs):
        assert w.returncode == 0, err[-4000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    first, second = results
    assert first["taken"] == second["taken"] == [True, True], results
    assert first["files"] == second["files"]  # the same modules, under the same names
    assert len(first["files"]) == RACE_MODULES + 2  # one Triton module per model, and the race's
    # the folder holds exactly those files, each complete: its content is the source it was written
    # for; beside them only Python's bytecode of the same modules
    on_disk = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in cache.iterdir() if p.name != "__pycache__"}
    assert on_disk == first["files"], sorted(set(on_disk) ^ set(first["files"]))
    bytecode = [p.name for p in (cache / "__pycache__").iterdir()] if (cache / "__pycache__").exists() else []
    assert all(name.endswith(".pyc") and name.split(".")[0] + ".py" in on_disk for name in bytecode), bytecode


# ---------------------------------------------------------------------------------------------
# Threads


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def softmax(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x * w, -1)


def layernorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w)


def scattered(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """tilec kernels and a C++ kernel in one graph (tilec declines random numbers on the CPU:
    scaled by 1e-30, far below an ulp of the softmax, they leave the result eager's)."""
    y = torch.softmax(x * 2, -1) + 1e-30 * torch.rand_like(x)
    idx = torch.arange(x.shape[0]).flip(0)
    return y.index_add(0, idx, x) * w


MODELS: list[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = [rmsnorm, softmax, layernorm, scattered]
THREADS = 4
CALLS = 6


def make_inputs(count: int, dtype: torch.dtype = torch.float32) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(1)
    return [
        (torch.randn(6, 40, generator=gen).to(dtype), torch.randn(40, generator=gen).to(dtype)) for _ in range(count)
    ]


def compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    return torch.compile(fn, backend="tilec", dynamic=False, fullgraph=True)


def run_threads(work: Callable[[int], list[torch.Tensor]]) -> list[list[torch.Tensor]]:
    """work(i) in THREADS threads at once; their results (an exception in a thread fails the test)."""
    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(work, i) for i in range(THREADS)]
        return [f.result(timeout=300) for f in futures]


def test_threads_call_one_compiled_model() -> None:
    model = compiled(rmsnorm)
    inputs = make_inputs(THREADS * CALLS, torch.bfloat16)
    expected = [model(*xs) for xs in inputs]  # one after another
    (rec,) = tilec.report()
    assert rec.taken, rec

    def work(i: int) -> list[torch.Tensor]:
        return [model(*inputs[i * CALLS + j]) for j in range(CALLS)]

    results = [y for ys in run_threads(work) for y in ys]
    for xs, want, got in zip(inputs, expected, results):
        assert torch.equal(got, want)
        assert_close(got, rmsnorm(*(t.float() for t in xs)), torch.bfloat16)
    assert len(tilec.report()) == 1  # no recompilation


def test_threads_call_different_models() -> None:
    models = [compiled(fn) for fn in MODELS]
    inputs = make_inputs(CALLS)
    expected = [[m(*xs) for xs in inputs] for m in models]
    records = tilec.report()
    # scattered: the scatter and the product taken, the softmax with random numbers declined
    assert sum(r.taken for r in records) == len(MODELS) + 1 and len(records) == len(MODELS) + 2, records

    def work(i: int) -> list[torch.Tensor]:
        # each thread walks the models in another order, so different kernels overlap
        out = []
        for j in range(CALLS):
            k = (i + j) % len(models)
            out.append(models[k](*inputs[j]))
        return out

    for i, ys in enumerate(run_threads(work)):
        for j, y in enumerate(ys):
            k = (i + j) % len(models)
            assert torch.equal(y, expected[k][j]), (MODELS[k].__name__, i, j)
            assert_close(y, MODELS[k](*inputs[j]), what=MODELS[k].__name__)


def test_threads_compile_models_at_once() -> None:
    inputs = make_inputs(1)[0]

    def work(i: int) -> list[torch.Tensor]:
        # Inductor's settings are per thread: the fixture's fx_graph_cache=False is not seen here
        with torch._inductor.config.patch(fx_graph_cache=False):
            model = compiled(MODELS[i % len(MODELS)])
            return [model(*inputs) for _ in range(2)]

    for i, ys in enumerate(run_threads(work)):
        fn = MODELS[i % len(MODELS)]
        for y in ys:
            assert_close(y, fn(*inputs), what=fn.__name__)
    records = tilec.report()
    # one graph per model, each with its own number; every kernel tilec takes is taken
    assert len({r.graph for r in records}) == len(MODELS), records
    assert sum(r.taken for r in records) == len(MODELS) + 1, records  # scattered: two kernels taken
    assert all(r.taken or r.reason for r in records), records
