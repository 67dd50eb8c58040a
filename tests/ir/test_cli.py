"""The CLI's contract for bad input: one located message on stderr, status 2, no traceback,
no output file written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tilec.cli import main

GOOD = "tile.kernel @k(%x: ptr<f32>) attributes {grid = [1]} {\n  %a = tile.constant {value = 1.0} : f32\n  %z = tile.constant {value = 0} : i32\n  tile.store %x, %z, %a\n}\n"


def test_opt_writes_output(tmp_path: Path) -> None:
    src = tmp_path / "k.tile"
    src.write_text(GOOD)
    out = tmp_path / "out.tile"
    assert main(["opt", str(src), "-p", "canonicalize,cse,dce", "-o", str(out)]) == 0
    assert "tile.store %x, %z, %a" in out.read_text()


@pytest.mark.parametrize(
    "text,fragment",
    [
        (
            "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.nope : i32\n}\n",
            ":2:8: error: unknown op 'tile.nope'",
        ),
        (
            "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.exp %a : f32\n}\n",
            ":2:17: error: use of undefined value %a",
        ),
        (
            "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.constant {value = 1} : i32\n  %b = tile.exp %a : i32\n}\n",
            ":3:3: error: in kernel @k: 'tile.exp' takes floats, got i32",
        ),
    ],
)
def test_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, fragment: str) -> None:
    src = tmp_path / "bad.tile"
    src.write_text(text)
    out = tmp_path / "out.tile"
    assert main(["opt", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert fragment in err, err
    assert "Traceback" not in err
    assert err.count("\n") == 1
    assert not out.exists()


def test_traceback_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "bad.tile"
    src.write_text("tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.nope : i32\n}\n")
    assert main(["--traceback", "opt", str(src)]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_unknown_pass_and_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "k.tile"
    src.write_text(GOOD)
    assert main(["opt", str(src), "-p", "frobnicate"]) == 2
    assert "unknown pass 'frobnicate'" in capsys.readouterr().err
    assert main(["opt", str(src), "-p", "canonicalize{max_iterations=x}"]) == 2
    assert "option 'max_iterations' must be an integer, got 'x'" in capsys.readouterr().err
    assert main(["opt", str(src), "-p", "cse{depth=3}"]) == 2
    assert "pass 'cse' has no option 'depth'" in capsys.readouterr().err


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["opt", "/nonexistent/x.tile"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_print_ir_after_all_and_timing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "k.tile"
    src.write_text(GOOD)
    assert main(["opt", str(src), "-p", "canonicalize,dce", "--print-ir-after-all", "--timing"]) == 0
    err = capsys.readouterr().err
    assert "// -----// IR after canonicalize //----- //" in err
    assert "// -----// IR after dce //----- //" in err
    assert "ms  total" in err


def test_console_script_runs() -> None:
    r = subprocess.run([sys.executable, "-m", "tilec.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "opt" in r.stdout


def test_opt_does_not_import_torch(tmp_path: Path) -> None:
    src = tmp_path / "k.tile"
    src.write_text(GOOD)
    code = f"import sys; from tilec.cli import main; main(['opt', {str(src)!r}]); assert 'torch' not in sys.modules"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "tile.kernel @rmsnorm" in out and "RBLOCK = 1024" in out
