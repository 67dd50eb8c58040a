"""The codebase passes its linters: ruff (lint and format) and mypy, as configured in pyproject.toml."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DIRS = [d for d in ("tilec", "tests", "bench", "examples", "scripts") if (ROOT / d).is_dir()]


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff(command: list[str]) -> None:
    ruff = shutil.which("ruff")
    assert ruff is not None, "ruff is not installed (pip install -e '.[test]')"
    r = _run([ruff, *command, *PYTHON_DIRS])
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy() -> None:
    r = _run([sys.executable, "-m", "mypy"])
    assert r.returncode == 0, r.stdout + r.stderr
