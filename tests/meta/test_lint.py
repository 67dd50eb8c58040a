"""The codebase passes its linters: ruff (lint and format), mypy and import-linter, as configured in
pyproject.toml."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterator
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


def test_import_layers() -> None:
    """The layers of docs/architecture.md, as import-linter contracts in pyproject.toml."""
    lint_imports = shutil.which("lint-imports")
    assert lint_imports is not None, "import-linter is not installed (pip install -e '.[test]')"
    r = _run([lint_imports, "--no-cache"])
    assert r.returncode == 0, r.stdout + r.stderr


# Only these folders may import Inductor's internals (import-linter names external packages by their
# top level alone, so this is checked here).
KNOW_INDUCTOR = ("tilec/frontend/", "tilec/inductor/")


def _imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module


def test_only_the_frontend_and_the_hook_import_inductor() -> None:
    found = [
        f"{rel}:{line}: {module}"
        for path in sorted((ROOT / "tilec").rglob("*.py"))
        if not (rel := path.relative_to(ROOT).as_posix()).startswith(KNOW_INDUCTOR)
        for line, module in _imported_modules(path)
        if module == "torch._inductor" or module.startswith("torch._inductor.")
    ]
    assert not found, "\n".join(found)
