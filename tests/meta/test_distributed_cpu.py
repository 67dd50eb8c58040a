"""`tilec bench --distributed --device cpu`: Llama trained data-parallel on two processes over gloo,
DDP (its graph split at the gradient buckets) and FSDP2, tilec's CPU hook against stock Inductor —
the same losses, and the same kernels taken on both ranks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("transformers")


def test_two_ranks_train_alike_with_tilec_and_stock(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILEC_")}
    env["TRITON_INTERPRET"] = "1"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    cmd += ["-m", "tilec.cli", "bench", "--distributed", "--device", "cpu", "--size", "tiny", "--steps", "2"]
    r = subprocess.run([*cmd, "--out", str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    rows = [json.loads(line) for line in (tmp_path / "distributed.jsonl").read_text().splitlines()]
    assert [row["wrap"] for row in rows] == ["ddp", "fsdp2"]
    for row in rows:
        assert row["world"] == 2 and row["steps"] == 2, row["wrap"]
        assert row["losses_agree"] and row["max_relative_loss_difference"] <= 1e-4, row["wrap"]
        assert row["reports_identical"], row["wrap"]
        assert row["taken"] >= row["kernels"] // 2, row["wrap"]  # tilec took most of each graph
    assert rows[0]["graphs"] > 2  # DDP's graph split at its buckets: each piece compiled
    assert "| ddp | tiny | 2 |" in (tmp_path / "distributed.md").read_text()


def test_the_distributed_bench_needs_torchrun(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    r = subprocess.run(
        [sys.executable, "-m", "tilec.cli", "bench", "--distributed", "--device", "cpu", "--size", "tiny"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2 and "torchrun" in r.stdout + r.stderr
