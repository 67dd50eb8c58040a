"""On the GPU: the autotuner times tilec's candidates and stock Inductor's kernel, keeps the fastest,
and remembers it on disk.

Each case compiles an op with autotuning on and checks the result against eager; every kernel the
hook saw either runs tilec's winner (its record carries the timings of every candidate) or stays on
stock with a reason giving the timings. A second compile reads the choice from the cache and
times nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from gpu_support import hopper

import tilec
from tilec.inductor import autotune
from tilec.testing import assert_close

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-6)


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


OPS = {"rmsnorm": (rmsnorm, 1), "layernorm": (layernorm, 2), "softmax": (softmax, 0)}


def inputs(op: str, m: int, n: int) -> list[torch.Tensor]:
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    return [x] + [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(OPS[op][1])]


def compile_and_check(op: str, args: list[torch.Tensor], mode: str | None = None) -> list[tilec.KernelRecord]:
    fn = OPS[op][0]
    torch._dynamo.reset()
    tilec.reset_report()
    out = torch.compile(fn, dynamic=False, mode=mode)(*args)
    assert_close(out, fn(*[a.float() for a in args]), torch.bfloat16, what=op)
    return tilec.report()


def check_records(records: list[tilec.KernelRecord], cands: list[str]) -> None:
    assert records
    for r in records:
        print(f"  {r.kernel}: {r.emitter if r.taken else 'stock'}: {r.autotune or r.reason}")
        if r.taken:
            assert r.autotune is not None and r.emitter in cands, r
            timed = r.autotune
        else:
            assert r.reason is not None and r.reason.startswith("stock Inductor timed fastest when autotuned"), r
            timed = r.reason
        for c in cands:
            assert f"{c} " in timed, (c, timed)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(autotune, "_memo", {})
    return tmp_path / "autotune"


@pytest.mark.parametrize(
    "op,m,n",
    [
        ("rmsnorm", 4096, 4096),
        ("layernorm", 8192, 512),
        ("softmax", 4096, 8192),
        ("rmsnorm", 2048, 32768),  # a long row: the long-row candidates too
        ("softmax", 1024, 65536),
        ("layernorm", 1024, 131072),  # and from 131072 on Hopper the cluster plans
        ("softmax", 512, 262144),
    ],
)
def test_autotuned_kernels_are_right_and_cached(op: str, m: int, n: int, cache: Path) -> None:
    from tilec.inductor.policy import device_target

    cuda = device_target(torch.device("cuda"))
    cands = autotune.candidates(hopper(), None, decline=True, target=cuda, n=n, statistics=op == "softmax")
    assert (n > 16384) == any("num_warps=32" in c for c in cands)
    assert (n > 16384 and op == "softmax") == any("groups=" in c for c in cands)
    assert (n >= 131072 and hopper()) == any("cluster=" in c for c in cands)
    torch.manual_seed(0)
    args = inputs(op, m, n)
    with tilec.config.patch(autotune=True, decline=True):
        first = compile_and_check(op, args)
        check_records(first, cands)
        files = sorted(cache.glob("*.json"))
        assert len(files) == len(first), files
        for f in files:
            data = json.loads(f.read_text())
            assert data["winner"] in cands and set(data["ms"]) == set(cands), data
        again = compile_and_check(op, args)
    assert [(r.taken, r.emitter) for r in again] == [(r.taken, r.emitter) for r in first]
    for r in again:
        assert "(cached)" in (r.autotune if r.taken else r.reason), r  # type: ignore[operator]


def test_max_autotune_autotunes_tilec_too(cache: Path) -> None:
    torch.manual_seed(1)
    args = inputs("softmax", 2048, 4096)
    with tilec.config.patch(autotune=False, decline=True):
        records = compile_and_check("softmax", args, mode="max-autotune-no-cudagraphs")
    check_records(records, autotune.candidates(hopper(), None, decline=True))


def test_without_decline_stock_is_no_candidate(cache: Path) -> None:
    if len(autotune.candidates(hopper(), None, decline=False)) < 2:
        pytest.skip("one emitter and no stock: nothing to choose between")
    torch.manual_seed(2)
    args = inputs("rmsnorm", 1024, 2048)
    with tilec.config.patch(autotune=True, decline=False):
        records = compile_and_check("rmsnorm", args)
    assert all(r.taken for r in records), records
    check_records(records, autotune.candidates(hopper(), None, decline=False))
    assert all("stock" not in (r.autotune or "") for r in records)


def test_a_column_sum_is_timed_without_the_row_variants(cache: Path) -> None:
    """A weight gradient's sums over tokens are column reductions: the one-row-per-program plan
    variant is no plan for them, and is not timed."""
    torch.manual_seed(3)
    x, dy = (torch.randn(4096, 2048, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    fn = lambda x, dy: (x.float() * dy.float()).sum(0)  # noqa: E731
    torch._dynamo.reset()
    tilec.reset_report()
    with tilec.config.patch(autotune=True, decline=True):
        out = torch.compile(fn, dynamic=False)(x, dy)
    assert_close(out.double(), fn(x.double(), dy.double()), torch.float32, what="column sum")
    records = tilec.report()
    check_records(records, autotune.candidates(hopper(), None, decline=True, reduction=False))
    assert all("xblock=1" not in (r.autotune or r.reason or "") for r in records), records


def test_a_candidate_past_the_compile_time_limit_is_not_timed(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tilec candidate is compiled in a worker thread before it is timed; with a time limit
    none can meet, none is timed, the chooser's rules decide, and the result is still right."""
    monkeypatch.setattr(autotune, "COMPILE_TIMEOUT", 1e-4)
    torch.manual_seed(4)
    args = inputs("rmsnorm", 1024, 4096)
    with tilec.config.patch(autotune=True, decline=True):
        records = compile_and_check("rmsnorm", args)
    assert records and all(r.autotune is None for r in records), records
    assert not list(cache.glob("*.json"))  # nothing timed, nothing remembered


@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_compile_only_compiles_what_run_launches(emitter: str) -> None:
    """A kernel compiled by `compile_only` (the autotuner's compile in a worker thread) is not
    launched, and its first launch finds it compiled: Triton's cache holds one kernel after both."""
    from gpu_support import skip_unless_runs

    from tilec.emit.gluon import emit_gluon
    from tilec.emit.triton import emit_triton
    from tilec.frontend.capture import capture
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.runtime.launch import load_kernel

    skip_unless_runs(emitter)
    x, w = inputs("rmsnorm", 256, 2048)
    (k,) = capture(rmsnorm, [x, w])
    module = parse(print_kernel(k.result.kernel))
    run_pipeline(module, f"{emitter}-default")
    emitted = (emit_gluon if emitter == "gluon" else emit_triton)(module.kernels[0])
    kernel = load_kernel("compile_only", emitted.source, emitter, list(range(len(k.result.args))), device="cuda")
    out = torch.full_like(x, float("nan"))
    named = {"arg0_1": x, "arg1_1": w}
    args = [named.get(a.buffer, out) for a in k.result.args]
    kernel.compile_only(*args)
    torch.cuda.synchronize()
    jit = kernel.primary.module.KERNEL
    assert sum(len(c[0]) for c in jit.device_caches.values()) == 1
    assert kernel.launches["primary"] == 0 and bool(out.isnan().all())
    kernel.run(*args)
    assert sum(len(c[0]) for c in jit.device_caches.values()) == 1 and kernel.launches["primary"] == 1
    assert_close(out, rmsnorm(x.float(), w.float()), torch.bfloat16, what="rmsnorm")
