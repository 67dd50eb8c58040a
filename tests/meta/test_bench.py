"""The benchmark's bookkeeping (no GPU): suite cases, model bytes, the report from results."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from bench_scripts import load, meta_kernel

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench.py"


@pytest.fixture(scope="module")
def bench():
    return load("bench")


def test_suite_cases(bench) -> None:
    cases = list(bench.cases(list(bench.DEFAULT_OPS), None, ["bf16", "fp16", "fp32"]))
    bf16 = [c for c in cases if c[3] == "bf16"]
    assert len(bf16) == 3 * 13 + 2  # every op on the suite, softmax also at 32768x50257 and 8192x131072
    assert ("softmax", 32768, 50257, "bf16") in bf16 and ("softmax", 8192, 131072, "bf16") in bf16
    for op in ("rmsnorm", "layernorm", "softmax"):
        assert {(op, 4096, 131072, "bf16"), (op, 2048, 262144, "bf16")} <= set(bf16)
    assert sum(c[3] == "fp16" for c in cases) == sum(c[3] == "fp32" for c in cases) == 3 * 2


def test_model_bytes(bench) -> None:
    assert bench.model_bytes("softmax", 4, 8, 2) == 2 * 4 * 8 * 2
    assert bench.model_bytes("rmsnorm", 4, 8, 2) == (2 * 4 * 8 + 8) * 2
    assert bench.model_bytes("layernorm", 4, 8, 4) == (2 * 4 * 8 + 16) * 4


def test_report_from_results(bench, tmp_path: Path) -> None:
    result = bench.Result
    env = {"gpu": "test GPU", "torch": "x", "triton": "y"}
    results = [
        result("softmax", 8, 512, "bf16", "copy", True, 1.0, 100.0, 100.0, meta=env),
        result("softmax", 8, 512, "bf16", "compile", True, 2.0, 50.0, 50.0, meta=env),
        result(
            "softmax", 8, 512, "bf16", "tilec-gluon", True, 1.25, 80.0, 80.0, meta=env, note="tilec took 1 of 1 kernels"
        ),
        result("softmax", 8, 512, "bf16", "liger", False, error="liger-kernel is not importable (x)", meta=env),
        result("softmax", 8, 512, "bf16", "tilec-triton", False, error="AssertionError: wrong", meta=env),
    ]
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("".join(json.dumps(asdict(r)) + "\n" for r in results))
    assert bench.main(["--report", str(jsonl), "--out", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "results.md").read_text()
    assert "test GPU" in md
    assert "| softmax | 8x512 | 100 |" in md
    assert "80 (80)" in md and "fail" in md
    assert "- tilec-gluon: 1.600x (1 shapes)" in md


def test_report_reads_device_time_first(bench, tmp_path: Path) -> None:
    result = bench.Result
    env = {"gpu": "test GPU"}
    common = {"meta": env, "compile_s": 2.0}
    results = [
        result(
            "rmsnorm",
            8,
            512,
            "bf16",
            "copy",
            True,
            1.0,
            100.0,
            100.0,
            meta=env,
            device_ms=0.5,
            device_gbps=200.0,
            device_pct=100.0,
            host_us=5.0,
        ),
        # host-bound end to end (4 ms), 0.8 ms on the device
        result(
            "rmsnorm",
            8,
            512,
            "bf16",
            "compile",
            True,
            4.0,
            25.0,
            25.0,
            device_ms=0.8,
            device_gbps=125.0,
            device_pct=62.5,
            host_us=90.0,
            **common,
        ),
        result(
            "rmsnorm",
            8,
            512,
            "bf16",
            "tilec-gluon",
            True,
            4.0,
            25.0,
            25.0,
            device_ms=0.5,
            device_gbps=200.0,
            device_pct=100.0,
            host_us=95.0,
            **common,
        ),
    ]
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("".join(json.dumps(asdict(r)) + "\n" for r in results))
    assert bench.main(["--report", str(jsonl), "--out", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "results.md").read_text()
    device = md[md.index("## device") : md.index("## end-to-end")]
    assert "| rmsnorm | 8x512 | 200 | 200 (100) | 125 (62) |" in device
    assert "| rmsnorm | 8x512 | 5 | 95 | 90 |" in md[md.index("## host") :]
    assert "- tilec-gluon: 1.600x (1 shapes)" in md  # device: 0.8 / 0.5
    assert "- tilec-gluon: 1.000x (1 shapes)" in md  # end to end
    assert "- tilec-gluon: 2.0 s (+0% over compile)" in md


def test_each_compiled_implementation_keeps_its_own_compiled_code(bench) -> None:
    """tilec and stock compile the same op through one backend (tilec's hook decides by its settings
    at compile time). Dynamo keeps compiled code on the function's code object: from one function
    the second compile would find the first's code, and, both held for `end_to_end`, run it for
    both. Each implementation is compiled from a function of its own (`own_code`)."""
    import torch

    settings = {"side": ""}
    calls: list[str] = []

    def backend(gm, example_inputs):
        side = settings["side"]

        def run(*args):
            calls.append(side)
            return gm(*args)

        return run

    x = torch.randn(4, 8)
    compiled = {}
    torch.compiler.reset()
    for side in ("tilec", "stock"):
        settings["side"] = side
        compiled[side] = torch.compile(bench.own_code(bench.FUNCTIONS["softmax"]), backend=backend, dynamic=False)
        compiled[side](x)
    calls.clear()
    for side in ("tilec", "stock", "tilec"):
        torch.testing.assert_close(compiled[side](x), torch.softmax(x, -1))
    assert calls == ["tilec", "stock", "tilec"]
    torch.compiler.reset()


def test_end_to_end_times_the_implementations_in_turn(bench, monkeypatch) -> None:
    """End-to-end timings of a case alternate between the implementations, in reverse every other
    round (ABBA); each gets the median of its rounds, and one failing is left out of the rest."""
    calls: list[str] = []
    times = {"copy": [4.0, 1.0, 2.0, 3.0], "compile": [9.0, 5.0, 6.0, 7.0], "tilec": [8.0, 6.0, 6.0, 6.0]}

    def fake_bench_ms(call) -> float:
        name = call()
        calls.append(name)
        if name == "liger":
            raise RuntimeError("out of resources")
        return times[name][sum(c == name for c in calls) - 1]

    monkeypatch.setattr(bench, "bench_ms", fake_bench_ms)
    rows = [bench.Result("rmsnorm", 8, 8, "bf16", impl, True) for impl in ("copy", "tilec", "compile", "liger")]
    failed = bench.Result("rmsnorm", 8, 8, "bf16", "eager", False)
    timed = [(r, lambda name=r.impl: name) for r in [*rows, failed]]
    logged: list[str] = []
    bench.end_to_end(timed, logged.append)
    assert calls[:4] == ["copy", "tilec", "compile", "liger"]  # the failed build is never timed
    assert calls[4:] == ["compile", "tilec", "copy", "copy", "tilec", "compile", "compile", "tilec", "copy"]
    assert [r.ms for r in rows] == [2.5, 6.0, 6.5, None]
    assert rows[2].end_to_end_rounds == [9.0, 5.0, 6.0, 7.0] and not rows[3].end_to_end_rounds
    assert not rows[3].ok and "out of resources" in rows[3].error and any("liger" in line for line in logged)


def test_bad_arguments(bench, capsys) -> None:
    assert bench.main(["--ops", "conv"]) == 2
    assert "unknown op" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--shapes", "8192"])


def test_warm_compile_time_is_reported_for_tilec_and_compile(bench) -> None:
    def result(impl: str, cold: float, warm: float):
        return bench.Result("softmax", 8, 512, "bf16", impl, True, 1.0, 1.0, 100.0, compile_s=cold, compile_warm_s=warm)

    md = bench.markdown([result("tilec", 3.0, 1.1), result("compile", 1.0, 1.0)], {}, ["tilec", "compile"])
    assert "- tilec: 3.0 s (+200% over compile)" in md
    assert "- tilec: 1.1 s (+10% over compile)" in md[md.index("Triton's caches warm") :]
    assert "tilec-autotune" not in bench.DEFAULT_IMPLS and "tilec-autotune" in bench.IMPLS


def test_residual_fused_norms_count_both_inputs_and_both_outputs(bench) -> None:
    assert bench.model_bytes("add_rmsnorm", 4096, 2048, 2) == (4 * 4096 * 2048 + 2048) * 2
    assert bench.model_bytes("add_layernorm", 4096, 2048, 2) == (4 * 4096 * 2048 + 2 * 2048) * 2
    assert set(bench.DEFAULT_OPS) < set(bench.OPS)


def test_backward_cases_and_bytes(bench) -> None:
    cases = list(bench.cases(list(bench.DEFAULT_BWD_OPS), None, ["bf16"]))
    assert ("rmsnorm_bwd", 2048, 65536, "bf16") in cases
    assert ("cross_entropy_train", 8192, 50257, "bf16") in cases  # a vocabulary not a multiple of 8
    backwards = [op for op in bench.DEFAULT_BWD_OPS if op in bench.BACKWARD]  # not those read by several projections
    assert len(cases) == len(backwards) * len(bench.BWD_SUITE) + len(bench.CROSS_ENTROPY_SUITE)
    assert bench.model_bytes("layernorm_bwd", 4, 8, 2) == 3 * 4 * 8 * 2  # x, dy read; dx written


def test_backward_reference_is_autograd_in_float64(bench) -> None:
    import torch

    x, w, dy = torch.randn(3, 8), torch.randn(8), torch.randn(3, 8)
    dx, dw = bench.reference("rmsnorm_bwd", [x, w, dy])
    xd, wd = x.double().requires_grad_(), w.double().requires_grad_()
    want = torch.autograd.grad(bench.rmsnorm(xd, wd), (xd, wd), dy.double())
    assert torch.allclose(dx.double(), want[0]) and torch.allclose(dw.double(), want[1])
    assert dx.dtype == dw.dtype == torch.float32
    call = bench.gradients(bench.softmax, [x, dy])
    assert torch.equal(call()[0], call()[0])  # the graph is kept: the backward runs again


def test_residual_fused_and_gemma_backwards(bench) -> None:
    """The residual-fused RMSNorm's backward takes a gradient for each output (the residual stream
    and the norm) and gives x and r the same gradient; Gemma's RMSNorm scales by 1 + w in fp32.
    Model bytes: the sum and both gradients read, one gradient written."""
    import torch

    x, r, w, dh, dy = torch.randn(3, 8), torch.randn(3, 8), torch.randn(8), torch.randn(3, 8), torch.randn(3, 8)
    dx, dr, dw = bench.reference("add_rmsnorm_bwd", [x, r, w, dh, dy])
    hd, wd = (x + r).double().requires_grad_(), w.double().requires_grad_()
    want = torch.autograd.grad(bench.rmsnorm(hd, wd), (hd, wd), dy.double())
    assert torch.allclose(dx.double(), want[0] + dh.double()) and torch.equal(dx, dr)
    assert torch.allclose(dw.double(), want[1])
    assert bench.model_bytes("add_rmsnorm_bwd", 4, 8, 2) == 4 * 4 * 8 * 2
    assert bench.model_bytes("gemma_rmsnorm_bwd", 4, 8, 2) == 3 * 4 * 8 * 2
    xf = x.double()
    want = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + bench.EPS) * (1 + w.double())
    assert torch.allclose(bench.gemma_rmsnorm(x.double(), w.double()), want)
    assert {"add_rmsnorm_bwd", "add_layernorm_bwd", "gemma_rmsnorm_bwd"} <= set(bench.DEFAULT_BWD_OPS)
    assert bench.model_bytes("add_layernorm_bwd", 4, 8, 2) == 4 * 4 * 8 * 2


def test_norms_read_by_several_projections(bench) -> None:
    """A residual-fused norm whose normalized rows k projections read returns the residual stream,
    the rows and k - 1 scaled copies: its backward sums a gradient per reader into the norm's (a
    dy for each: model bytes 3 + k row tensors); they are measured on request only."""
    import torch

    x, r, w, dh = torch.randn(3, 8), torch.randn(3, 8), torch.randn(8), torch.randn(3, 8)
    dys = [torch.randn(3, 8) for _ in range(3)]
    dx, dr, dw = bench.reference("add_rmsnorm_qkv_bwd", [x, r, w, dh, *dys])
    hd, wd = (x + r).double().requires_grad_(), w.double().requires_grad_()
    dy = dys[0].double() + 0.5 * dys[1].double() + 0.25 * dys[2].double()
    want = torch.autograd.grad(bench.rmsnorm(hd, wd), (hd, wd), dy)
    assert torch.allclose(dx.double(), want[0] + dh.double()) and torch.equal(dx, dr)
    assert torch.allclose(dw.double(), want[1])
    assert len(bench.FUNCTIONS["add_layernorm_mlp"](x, r, w, w)) == 3
    assert bench.model_bytes("add_rmsnorm_qkv_bwd", 4, 8, 2) == 6 * 4 * 8 * 2
    assert bench.model_bytes("add_gemma_rmsnorm_mlp_bwd", 4, 8, 2) == 5 * 4 * 8 * 2
    assert not {op for op in bench.BACKWARD if bench.BACKWARD[op] in bench.FANOUT} & set(bench.DEFAULT_BWD_OPS)


def test_cross_entropy_train_step_is_loss_and_logit_gradient(bench) -> None:
    """Forward and backward in one call; the reference in float32, ignored labels left out of the
    mean; model bytes: the logits read by each pass and their gradient written."""
    import torch

    logits = torch.randn(6, 11).bfloat16()
    labels = torch.tensor([1, -100, 10, 0, -100, 3])
    loss, grad = bench.reference("cross_entropy_train", [logits, labels])
    leaf = logits.double().requires_grad_()
    want = torch.nn.functional.cross_entropy(leaf, labels, ignore_index=-100)
    assert torch.allclose(loss.double(), want)
    (g,) = torch.autograd.grad(want, leaf)
    assert torch.allclose(grad.double(), g, atol=1e-6) and not grad[1].any() and not grad[4].any()
    step = bench.train_step(bench.cross_entropy, [logits, labels])
    assert torch.equal(step()[1], step()[1]) and step()[1].dtype == torch.bfloat16
    assert bench.model_bytes("cross_entropy_train", 8192, 32000, 2) == 3 * 8192 * 32000 * 2
    assert bench.model_bytes("cross_entropy", 8192, 32000, 2) == 8192 * 32000 * 2


def test_cluster_kernels_compile_for_hopper() -> None:
    """bench/cluster.py's kernels (a row split across a thread-block cluster, partial statistics
    exchanged through distributed shared memory in inline PTX) compile for sm_90 without a GPU: a
    cluster launch, `mapa` + `ld.shared::cluster` and the cluster barrier in the PTX, 16-byte
    loads (or 16-byte cp.async copies), no spills; a slice kept in shared memory takes its bytes
    there and few registers. (Run on a GPU: tests/gpu/test_cluster_gpu.py.)"""
    import os
    import subprocess

    script = BENCH.parent / "cluster.py"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiled, not interpreted
    done = subprocess.run([sys.executable, str(script), "--compile", "sm_90"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(reports) == len(load("cluster").CASES)
    for r in reports:
        assert r["cluster"] and r["dsmem"] and r["cluster_barrier"] and r["vector_loads"], r
        assert r["stack_bytes"] == 0 and r["registers"] <= 128, r
        if r["slice_in_shared"]:
            assert r["shared_bytes"] >= r["n"] // r["ctas"] * 2 and r["registers"] <= 64, r


def test_cluster_kernels_compile_with_each_exchange_and_several_rows() -> None:
    """bench/cluster.py's other exchanges (the second wait at the end; the partials pushed into
    the peers' shared memory: `st.async`, no remote reads) and its kernel of several rows a
    cluster (two sets of buffers: twice the shared memory) compile for sm_90, nothing spilled."""
    import os
    import subprocess

    script = BENCH.parent / "cluster.py"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    args = ["--compile", "sm_90", "--ops", "softmax", "--shapes", "4096x131072", "--shared-only"]
    runs = [args + ["--exchange", "deferred,push"], args + ["--rows", "2"]]
    reports = []
    for argv in runs:
        done = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        reports += [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert {(r["exchange"], r["rows"]) for r in reports} == {("deferred", 0), ("push", 0), ("gather", 2)}
    for r in reports:
        assert r["cluster"] and r["dsmem"] and r["cluster_barrier"] and r["stack_bytes"] == 0, r
        assert r["shared_bytes"] >= (2 if r["rows"] else 1) * r["n"] // r["ctas"] * 2, r


@pytest.mark.parametrize(
    ("op", "n", "ahead", "exchange"),
    [
        ("ln", 32768, False, "barriers"),
        ("rms", 32768, True, "barriers"),
        ("ln", 32768, False, "push"),
        ("rms", 32768, True, "push"),
    ],
)
def test_the_ring_probes_cluster_kernels_compile_for_hopper(
    tmp_path: Path, op: str, n: int, ahead: bool, exchange: str
) -> None:
    """bench/ring_bwd_probe.py's cluster form (the norms' one-pass backward with each row split
    across a cluster of 2, a band's rows in a loop, the partial statistics exchanged each row)
    compiles for sm_90 without a GPU, with one set of slots and with two, with either exchange: a
    cluster launch, the exchange in the PTX, 16-byte cp.async copies, each CTA's slice of the ring
    and the weight in its shared memory."""
    import os
    import subprocess

    probe = load("ring_bwd_probe")
    module = tmp_path / "ring_cluster.py"
    module.write_text(
        probe.cluster_source(n, 4096, 16, op, 2, ahead, exchange)
        + "KERNEL = ring_bwd\n"
        + "SIGNATURE = {'X': '*bf16', 'DY': '*bf16', 'W': '*bf16', 'RSTD': '*fp32', 'DX': '*bf16', "
        + "'WS': '*fp32', 'M': 'i32', 'P': 'i32', 'MEAN': '*fp32'}\n"
        + "CONSTEXPRS = {}\nDIVISIBLE = ['X', 'DY', 'W', 'DX', 'WS']\nNUM_WARPS = 16\nMAXNREG = None\nNUM_CTAS = 2\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiled, not interpreted
    done = subprocess.run(
        [sys.executable, "-m", "tilec.emit.aot", str(module), "sm_90"], capture_output=True, text=True, env=env
    )
    r = json.loads(done.stdout)
    assert r["ok"], r
    slots = (2 if ahead else 1) * 2 + 1  # x and dy a set, and the weight
    assert r["num_ctas"] == 2 and r["cluster_exchange"] and r["cp_async_bytes"] == [16], r
    assert r["shared_bytes"] >= slots * n // 2 * 2, r


# the survey's ops (bench/plans.py's OPS and RESIDUAL_OPS, checked below), a test each: the plans
# of one op take minutes to build, so the test command's processes share them
SURVEYED_OPS = ("rmsnorm", "layernorm", "softmax", "add_rmsnorm", "add_layernorm")


@pytest.mark.parametrize("op", SURVEYED_OPS)
def test_surveyed_plans_build_for_every_op(op: str) -> None:
    """bench/plans.py's plans (the evidence of the chooser's rules): each builds the pipeline it
    names and emits its emitter's code for the op (each op of the survey, the residual-fused norms
    too), at rows that fit one tile (1024, 16384) and rows that loop (32768, 50257, 65536, 131072),
    captured on meta tensors (nothing runs), with the rows a
    program, chunk and warps it names (a chunk shorter than a row that fits: the loop), and the
    second read reversed and the stores evict-first where it says so (`-rev`, `-st`), and each row
    split across a cluster of the CTAs it names (`-clC`: one row a cluster, each CTA's slice in
    shared memory in chunks of the chunk it names; `-push`: its gather pushing to the peers; `-pfD`:
    its other inputs read D chunks ahead), its registers capped where it says so (`-regR`), and
    softmax's statistics kept per group of G where it says so (`-gG`)."""
    from tilec.emit.gluon import emit_gluon
    from tilec.emit.triton import emit_triton
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline

    survey = load("plans")
    assert survey.main(["--list"]) == 0
    assert (*survey.OPS, *survey.RESIDUAL_OPS) == SURVEYED_OPS
    named = re.compile(
        r"(gluon|triton)-(?:cl(\d+)-)?(?:x(\d+)(?:-r(\d+))?|c(\d+))-w(\d+)(?:-k(\d+))?(?:-(rev|st|rev-st|push|lanes))?"
        r"(?:-reg(\d+))?(?:-pf(\d+))?(?:-g(\d+))?"
    )
    # one row that fits a tile, one that loops for the residual-fused norms
    ns = (1024, 16384, 32768, 50257, 65536, 131072) if op in survey.OPS else (2048, 50257)
    for n in ns:
        text = print_kernel(meta_kernel(op, 4096, n).kernel)
        surveyed = survey.plans(n)
        assert len(surveyed) > 2 and ("gluon" in surveyed) == (n <= survey.LONG_ROW), (n, list(surveyed))
        for name, (emitter, plan) in surveyed.items():
            module = parse(text)
            run_pipeline(module, survey.pipeline(emitter, plan))
            kernel = module.kernels[0]
            emit = emit_triton if emitter == "triton" else emit_gluon
            assert f"@{emitter}.jit" in emit(kernel).source, name
            if plan:
                found = named.fullmatch(name)
                assert found is not None and found[1] == emitter, name
                ctas, xblock, rblock, chunk, warps, cached = (found[i] for i in range(2, 8))
                assert kernel.launch.num_warps == int(warps), (op, n, name)
                # a register cap where it names one (`-regR`)
                assert kernel.launch.maxnreg == (int(found[9]) if found[9] else None), name
                if ctas:  # one row a cluster: each CTA's slice copied into shared memory in chunks
                    assert kernel.launch.num_ctas == int(ctas), name
                    buffers = [o.result.type for o in kernel.walk() if o.name == "tile.smem_alloc"]
                    assert buffers and all(t.shape == (int(ctas), int(chunk)) for t in buffers), name
                    # all the slice's chunks, or as many as a row cache's bytes hold (`-kB`)
                    slices = int(cached) // (2 * int(ctas) * int(chunk)) if cached else n // (int(ctas) * int(chunk))
                    assert len(buffers) == slices, name
                    exchanges = {o.attr("exchange") for o in kernel.walk() if o.name == "tile.cluster_gather"}
                    assert exchanges == {"push" if found[8] == "push" else "barriers"}, name
                    # the other inputs' reads a chunk ahead where it says so (`-pfD`)
                    assert kernel.attributes.get("prefetch") == (int(found[10]) if found[10] else None), name
                    continue
                # softmax's statistics kept per group of G where it says so (`-gG`)
                groups = int(found[11]) if found[11] else None
                assert kernel.attributes.get("softmax_groups") == groups, name
                if groups and op == "softmax":
                    assert any(o.name == "tile.reshape" for o in kernel.walk()), name
                # softmax's and LayerNorm's statistics per lane through the loops, each chunk
                # read again (`-lanes`): no per-chunk statistics left
                lanes = found[8] == "lanes"
                assert bool(kernel.attributes.get("lanes_reread")) == lanes, name
                if lanes and op in ("softmax", "layernorm"):
                    assert not [o for o in kernel.walk() if o.name in ("tile.softmax_reduce", "tile.welford")], name
                # the second read turned around (`reverse`), the rows written evict-first (`stream`)
                reread = "" if lanes else found[8] or ""
                turned = any((o.result.name_hint or "").endswith("_rev") for o in kernel.walk() if o.name == "tile.sub")
                streamed = any(o.name == "tile.store" and o.attr("eviction") == "evict_first" for o in kernel.walk())
                assert (turned, streamed) == ("rev" in reread, "st" in reread), name
                assert kernel.attributes.get("row_cache") == (int(cached) if cached else None), name
                if cached:  # the loops over the row split at the cached columns, the first part copied by TMA
                    assert any(op.name == "tile.tma_load" for op in kernel.walk()), name
                    assert (
                        sum(op.name == "tile.load" and op.operands[0].name_hint == "in_ptr0" for op in kernel.walk())
                        >= 2
                    )
                if xblock:
                    assert kernel.constexprs["XBLOCK"] == int(xblock), (op, n, name)
                    assert rblock is None or kernel.constexprs["RBLOCK"] == int(rblock) < n, (op, n, name)
                else:
                    assert (kernel.constexprs["XBLOCK"], kernel.constexprs["RBLOCK"]) == (1, int(chunk)), name


def test_a_survey_checks_every_output_a_kernel_writes() -> None:
    """A residual-fused norm writes two outputs (the residual stream and the norm), in whatever
    order its kernel's parameters come: the survey's check matches each to one of the op's
    outputs, and fails on an output that equals none, or on a missing one."""
    import torch

    survey = load("plans")
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    survey.check_written({"out0": b.clone(), "out1": a.clone()}, ["out0", "out1"], [a, b], torch.float32, "p")
    with pytest.raises(AssertionError, match="equals none"):
        survey.check_written({"out0": b.clone(), "out1": b + 1}, ["out0", "out1"], [a, b], torch.float32, "p")
    with pytest.raises(AssertionError, match="1 outputs written"):
        survey.check_written({"out0": a.clone()}, ["out0"], [a, b], torch.float32, "p")


MODEL_ENV = {"gpu": "Test GPU", "torch": "2", "triton": "3", "transformers": "5"}


def _model_row(
    family: str, tilec: float, stock: float, tilec_dev: float | None, stock_dev: float | None, stock_first: bool = False
) -> dict[str, object]:
    """A row of `tilec bench --models` (inference) with these times, as bench/models.py writes it."""
    return {
        "family": family,
        "mode": "infer",
        "stock_first": stock_first,
        "tilec_ms": tilec,
        "stock_ms": stock,
        "speedup": stock / tilec,
        "tilec_spread_ms": [tilec, tilec],
        "stock_spread_ms": [stock, stock],
        "tilec_device_ms": tilec_dev,
        "stock_device_ms": stock_dev,
        "taken": 1,
        "kernels": 2,
        "error_tilec": 1e-3,
        "error_stock": 1e-3,
        "declined": {},
    }


def test_the_model_table_gives_device_time_beside_wall_time() -> None:
    """`tilec bench --models`' table: each row's device-time ratio beside the wall-time one, the
    geomeans of both, and a control run said to be one."""
    models = load("models")
    rows = [_model_row("llama", 2.0, 2.0, 1.0, 1.1), _model_row("gpt2", 1.0, 1.1, None, 1.0)]
    text = models.markdown(rows, MODEL_ENV, "default", "cuda", 10)
    assert "| llama | infer | 2.000 | 2.000 | 1.000 | 2.000-2.000 | 2.000-2.000 | 1.000 | 1.100 | 1.100 | 1/2 |" in text
    # no device time for one side: that cell and the ratio's are empty
    assert "| gpt2 | infer | 1.000 | 1.100 | 1.100 | 1.000-1.000 | 1.100-1.100 |  | 1.000 |  | 1/2 |" in text
    assert "Geomean stock/tilec over the 2 rows: 1.049x." in text
    assert "Geomean of device time, stock/tilec: 1.100x." in text and "Control:" not in text
    assert "Control: the tilec column was compiled without tilec" in models.markdown(
        rows, MODEL_ENV, "default", "cuda", 10, control=True
    )
    assert "size default (batch x tokens 4x1024), vocabulary 128256, bf16" in models.markdown(
        rows, MODEL_ENV, "default", "cuda", 10, vocab=128256
    )


def test_the_model_table_says_where_cuda_graphs_were_not_captured() -> None:
    """`-ro` rows carry each side's count of graphs CUDA-graph trees declined while it compiled
    (Inductor's counter); the table names the rows with any, or says every graph was captured."""
    models = load("models")
    captured = {
        **_model_row("llama", 2.0, 2.0, 1.0, 1.0),
        "mode": "infer-ro",
        "cudagraph_skips": {"tilec": 0, "stock": 0},
    }
    skipped = {
        **_model_row("gpt2", 2.0, 2.0, 1.0, 1.0),
        "mode": "infer-ro",
        "cudagraph_skips": {"tilec": 1, "stock": 1},
    }
    plain = _model_row("gemma", 2.0, 2.0, 1.0, 1.0)  # no CUDA graphs asked for: no count
    text = models.markdown([captured, skipped, plain], MODEL_ENV, "default", "cuda", 10)
    (line,) = [line for line in text.splitlines() if line.startswith("CUDA graphs not captured")]
    assert line.endswith("run with TORCH_LOGS=cudagraphs for the reasons): gpt2 infer-ro: tilec 1, stock 1."), line
    assert "every graph of the `-ro` rows was captured" in models.markdown(
        [captured, plain], MODEL_ENV, "default", "cuda", 10
    )
    assert "CUDA graph" not in models.markdown([plain], MODEL_ENV, "default", "cuda", 10)
    before = models.cudagraph_skips()
    from torch._dynamo.utils import counters

    counters["inductor"]["cudagraph_skips"] += 2
    assert models.cudagraph_skips() == before + 2
    counters["inductor"]["cudagraph_skips"] -= 2


@pytest.mark.parametrize(
    ("family", "vocab", "expected"), [("llama", None, 512), ("gpt2", None, 512), ("gpt2", 300, 300)]
)
def test_models_vocabulary(family: str, vocab: int | None, expected: int) -> None:
    """`--vocab` sets every family's vocabulary; without it a size's own (GPT-2 50257 but at tiny)."""
    pytest.importorskip("transformers")
    model = load("models").build(family, "tiny", vocab=vocab)
    assert model.config.vocab_size == expected == model.get_output_embeddings().weight.shape[0]


def test_a_runs_kernels_reach_the_rules_tool(bench, tmp_path: Path) -> None:
    """A tilec column's results carry each kernel's record (`models.kernel_rows`: signature and the
    autotuner's timings), which `bench/rules.py --kernels` groups into rules as it does a models
    run's; bench/models.py is found beside bench/bench.py however that was loaded."""
    from tilec.inductor.report import KernelRecord

    timed = KernelRecord(
        "triton_red_fused_0",
        True,
        "triton",
        None,
        None,
        signature=("sum-of-products", 1, 2, 8192, 32000),
        timings=(("triton", 0.2), ("stock", 0.3)),
    )
    untimed = KernelRecord("triton_poi_fused_1", False, None, None, "stock measured faster")
    r = bench.Result("cross_entropy_train", 8192, 32000, "bf16", "tilec-autotune", True, meta={"gpu": "G"})
    r.report = bench._models_module().kernel_rows([timed, untimed])
    (tmp_path / "results.jsonl").write_text(json.dumps(asdict(r)) + "\n")
    rules = load("rules")
    (kernel,) = rules.model_kernels(rules.models_records(tmp_path))
    assert kernel[:2] == (("sum-of-products", 1, 2, 0), 64000)  # (no column sums: not a mix-order kernel)
    assert kernel[2].ms == {"tilec-triton": 200.0, "compile": 300.0}
    (derived,) = rules.derive_models(rules.models_records(tmp_path))
    assert (derived.lo, derived.hi, derived.action) == (32768, 65536, "triton")


def test_the_rules_tool_tells_kernels_apart_by_their_column_sums(bench, tmp_path: Path) -> None:
    """Mix-order kernels of one family, row inputs and element size but different column sums
    (RMSNorm's backward: dW; LayerNorm's: dW and dB) get rules of their own where the run measured
    both (each its winner: clusters of 2 for the one, of 4 for the other); a run that measured one
    number of sums gives a rule for any. Sums come from the signature or, in a record written before
    signatures carried them, from the op."""
    from tilec.inductor.report import KernelRecord

    def row(op: str, sig: tuple[Any, ...], fastest: str) -> str:
        timings = ((fastest, 0.30), ("gluon{ctas=2}" if fastest != "gluon{ctas=2}" else "gluon{ctas=4}", 0.32))
        rec = KernelRecord("k", True, "gluon", None, None, signature=sig, timings=(*timings, ("stock", 4.0)))
        r = bench.Result(op, 4096, 32768, "bf16", "tilec-autotune", True, meta={"gpu": "G"})
        r.report = bench._models_module().kernel_rows([rec])
        return json.dumps(asdict(r)) + "\n"

    rules = load("rules")
    both, one = tmp_path / "both", tmp_path / "one"
    both.mkdir(), one.mkdir()
    (both / "results.jsonl").write_text(
        row("rmsnorm_bwd", ("mix-order", 2, 2, 4096, 32768, 1), "gluon{ctas=2}")
        + row("layernorm_bwd", ("mix-order", 2, 2, 4096, 32768), "gluon{ctas=4}")  # (sums from the op)
    )
    derived = sorted(rules.derive_models(rules.models_records(both)), key=lambda d: d.column_sums)
    assert [(d.column_sums, d.action, d.lo, d.hi) for d in derived] == [
        (1, "gluon{ctas=2}", 65536, 131072),
        (2, "gluon{ctas=4}", 65536, 131072),
    ]
    assert "column_sums=2" in derived[1].source("r")
    (one / "results.jsonl").write_text(row("layernorm_bwd", ("mix-order", 2, 2, 4096, 32768, 2), "gluon{ctas=4}"))
    (anyhow,) = rules.derive_models(rules.models_records(one))
    assert (anyhow.column_sums, anyhow.action) == (0, "gluon{ctas=4}") and "column_sums" not in anyhow.source("r")


def test_the_model_table_reads_both_orders() -> None:
    """`--both-orders`: each model and mode with either side first, and the geometric mean of the
    two readings, which the order does not favour."""
    models = load("models")
    rows = [_model_row("llama", 1.02, 1.00, 1.0, 1.0), _model_row("llama", 1.00, 1.03, 1.0, 1.0, stock_first=True)]
    text = models.markdown(rows, MODEL_ENV, "default", "cuda", 10)
    assert "| llama | infer (stock first) | 1.000 | 1.030 |" in text
    assert "| llama | infer | 0.980 | 1.030 | 1.005 | 1.000 |" in text
    assert "Geomean over the 1 models and modes, both orders: 1.005x." in text
    assert "(`--stock-first`)" not in text
    assert "(`--stock-first`)" in models.markdown(rows[1:], MODEL_ENV, "default", "cuda", 10)


def test_the_kernel_rules_script_runs_valid_bench_commands(bench) -> None:
    """scripts/derive-kernel-rules: each `tilec bench` it runs parses, with ops and implementations
    the bench knows, and writes where `bench/rules.py --kernels` looks (under $OUT)."""
    import shlex

    text = (Path(__file__).resolve().parents[2] / "scripts" / "derive-kernel-rules").read_text()
    joined = text.replace("\\\n", " ")
    commands = [
        line.split("python3 -m tilec.cli bench", 1)[1] for line in joined.splitlines() if "tilec.cli bench" in line
    ]
    assert len(commands) == 3  # ce, long-bwd, short-bwd
    for command in commands:
        argv = shlex.split(command.split(">", 1)[0].replace('"$OUT', "OUT").replace('"', ""))
        args = bench.parser().parse_args(argv)
        assert args.bwd and args.out.startswith("OUT/")
        assert all(op in bench.OPS for op in args.ops.split(","))
        assert all(impl in bench.IMPLS for impl in args.impls.split(",")) and "tilec-autotune" in args.impls
    assert 'bench/rules.py --kernels "$OUT"' in text


def test_the_model_rules_script_runs_valid_bench_commands(bench) -> None:
    """scripts/derive-model-rules: each part's `tilec bench --models --autotune` parses, with the
    families the bench knows, and writes a folder under $OUT, where `bench/rules.py --kernels`
    looks."""
    import re
    import shlex

    text = (Path(__file__).resolve().parents[2] / "scripts" / "derive-model-rules").read_text()
    joined = text.replace("\\\n", " ")
    (base,) = [
        line.split("python3 -m tilec.cli bench", 1)[1] for line in joined.splitlines() if "tilec.cli bench" in line
    ]
    base = base.split(">", 1)[0]
    parts = re.findall(r"^\s*(\w+)\) args=\((.*)\) ;;$", text, re.M)
    assert [p for p, _ in parts] == ["default", "small", "dynamic"]
    for part, args in parts:
        command = base.replace('"${args[@]}"', args).replace('"$FAMILIES"', "llama,gpt2,gemma")
        argv = shlex.split(command.replace('"$OUT/$part"', f"OUT/{part}"))
        parsed = bench.parser().parse_args(argv)
        assert parsed.models and parsed.autotune and parsed.out == f"OUT/{part}"
        assert parsed.dynamic == (part == "dynamic") and parsed.size == ("small" if part == "small" else "default")
        assert set(parsed.families.split(",")) <= {"llama", "gpt2", "gemma"}
    assert 'bench/rules.py --kernels "$OUT"' in text


def test_the_rules_tool_takes_the_fastest_plan_no_slower_than_stock() -> None:
    """Where a candidate beats stock by the margin at every shape of a row size, tilec is taken
    and the plan is the fastest over the shapes of those no slower than stock at any: one that
    ties stock at a shape and wins by most at another beats one that clears the margin everywhere
    by less (the H200's RMSNorm rows of 16384, bench/results/2026-11-27-h200-chain-sums); one
    slower than stock at a shape is never taken; with no candidate clearing the margin
    everywhere, stock."""
    rules = load("rules")

    def shape(m: int, ms: dict[str, float]) -> Any:
        return rules.Shape(m, 16384, ms, {k: 100.0 for k in ms})

    margin, tie, wide, slower = "triton{num_warps=32}", "triton{rblock=4096}", "triton{num_warps=8}", "gluon"
    few = shape(4096, {"compile": 1.047, margin: 1.020, tie: 1.000, slower: 0.900})
    many = shape(16384, {"compile": 1.000, margin: 0.990, tie: 0.995, slower: 1.020, wide: 0.980})
    assert rules.chosen([few, many], 0.01) == tie  # `wide` was not measured at both
    assert rules.chosen([many], 0.01) == wide
    without = shape(16384, {"compile": 1.000, margin: 0.995, tie: 0.995, slower: 1.020})
    assert rules.chosen([few, without], 0.01) is None


def test_kernel_times_are_per_step_by_name_and_device_ms_sums_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench/models.py's per-kernel device times (what bench/step_kernels.py and
    bench/rewrite_probe.py write): each name's time and launches over the steps, per step; the
    step's total in ms, less the names holding `skip`."""
    import torch
    from torch.autograd import DeviceType

    models = load("models")
    launched: list[tuple[str, float]] = []

    class Event:
        def __init__(self, name: str, us: float) -> None:
            self.name, self.device_type = name, DeviceType.CUDA
            self.time_range = type("Range", (), {"elapsed_us": lambda _: us})()

    class Profile:
        def __init__(self, activities: object) -> None:
            pass

        def __enter__(self) -> Profile:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def events(self) -> list[Event]:
            return [Event(n, us) for n, us in launched]

    monkeypatch.setattr(torch.profiler, "profile", Profile)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    step = lambda: launched.extend([("gemm", 10.0), ("fill", 1.0), ("fill", 2.0)])  # noqa: E731
    assert models.kernel_times(step, steps=2) == {"gemm": (10.0, 1.0), "fill": (3.0, 2.0)}
    launched.clear()
    assert models.device_ms(step, steps=2) == pytest.approx(0.013)
    launched.clear()
    assert models.device_ms(step, steps=2, skip="fill") == pytest.approx(0.010)
    launched.clear()
    assert models.device_ms(lambda: None) is None


def test_the_host_bench_times_the_implementations_in_turn(tmp_path: Path, monkeypatch) -> None:
    """`tilec bench --host` compiles every implementation first, each from a code object of its
    own, then times them in turn, round after round (the order reversed every other round), so
    that the host's drift over a run falls on each alike; each implementation's graph keeps the
    kernels it compiled with (stock's none of tilec's, tilec's all). On the CPU hook here: the
    bookkeeping, not the times."""
    import torch

    from tilec.runtime import interpreter_active

    if not interpreter_active():
        pytest.skip("the CPU hook runs Triton in its interpreter (TRITON_INTERPRET=1, set by tests/conftest.py)")
    host = load("host")
    timed: list[str] = []
    real = torch.compile

    def compile_(fn: Any, **kw: Any) -> Any:  # each call of a compiled function, by its name
        compiled = real(fn, **kw)
        impl = fn.__name__.removeprefix("many_")

        def call(*a: Any) -> Any:
            timed.append(impl)
            return compiled(*a)

        return call

    monkeypatch.setattr(torch, "compile", compile_)
    assert host.main(tmp_path, k=2, calls=2, repeats=3, device="cpu") == 0
    rows = [json.loads(line) for line in (tmp_path / "host.jsonl").read_text().splitlines()]
    assert [r["impl"] for r in rows] == ["stock", "tilec-triton"]  # no Gluon without a GPU
    assert [(r["kernels"], r["taken"]) for r in rows] == [(2, 0), (2, 2)]
    assert all(len(r["rounds_us_per_call"]) == 3 for r in rows)
    # one compiling call each, then rounds of two calls: in turn, the order reversed every other round
    s, t = "stock", "tilec_triton"
    assert timed == [s, t] + [s, s, t, t] + [t, t, s, s] + [s, s, t, t]
    assert "| tilec-triton |" in (tmp_path / "host.md").read_text()
