"""`tilec bench --models --size tiny --device cpu`: Llama, GPT-2 and Gemma built from configs,
inference and a training step, through tilec's CPU hook (Triton's interpreter) and through stock
Inductor (C++), each compared with an fp32 eager run — the whole path a model takes, in CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("transformers")


def test_tiny_models_on_the_cpu_match_eager_within_stocks_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILEC_")}
    env["TRITON_INTERPRET"] = "1"
    r = subprocess.run(
        [sys.executable, "-m", "tilec.cli", "bench", "--models", "--size", "tiny", "--device", "cpu"]
        + ["--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    rows = [json.loads(line) for line in (tmp_path / "models.jsonl").read_text().splitlines()]
    assert {(row["family"], row["mode"]) for row in rows} == {
        (f, m) for f in ("llama", "gpt2", "gemma") for m in ("infer", "train")
    }
    for row in rows:
        what = f"{row['family']} {row['mode']}"
        assert row["within_stock_error"] is True, what
        assert row["error_tilec"] < 1e-5, what  # fp32 throughout: the error is rounding
        # coverage: tilec takes most of each graph; what it declines, it declines for a reason
        assert row["taken"] >= row["kernels"] // 2, what
        assert sum(row["declined"].values()) == row["kernels"] - row["taken"], what
        report = row["report"]
        assert len(report) == row["kernels"] and sum(k["taken"] for k in report) == row["taken"], what
        assert all(k["taken"] or k["reason"] for k in report), what
    table = (tmp_path / "models.md").read_text()
    assert "| llama | train |" in table and "NO" not in table


def test_cpu_models_refuse_what_the_cpu_cannot_run(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "tilec.cli", "bench", "--models", "--device", "cpu", *args]
        return subprocess.run(cmd + ["--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)

    r = run("--size", "default")
    assert r.returncode == 2 and "--size tiny only" in r.stderr
    r = run("--size", "tiny", "--modes", "infer-ro")
    assert r.returncode == 2 and "CUDA graphs need a GPU: infer-ro" in r.stderr
    r = run("--size", "tiny", "--families", "bert")
    assert r.returncode == 2 and "unknown family or mode: bert" in r.stderr
    r = run("--size", "tiny", "--dropout", "0.1")
    assert r.returncode == 2 and "--dropout needs a GPU" in r.stderr
    r = run("--size", "tiny", "--dynamic")
    assert r.returncode == 2 and "--dynamic needs a GPU" in r.stderr
    r = run("--size", "tiny", "--control")
    assert r.returncode == 2 and "--control needs a GPU" in r.stderr
