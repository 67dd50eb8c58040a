"""`tilec dump` on the command line: output, options, and one clear message for every user error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tilec.cli import main

ROOT = Path(__file__).resolve().parents[2]
RMSNORM = str(ROOT / "examples" / "rmsnorm.py")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_summary_without_ir(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "dump", RMSNORM, "--shape", "64,1000")
    assert code == 0, err
    assert "// triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0" in out
    assert "// numel=64 rnumel=1000 reductions=[sum]: taken" in out
    assert "tile.kernel" not in out


def test_pipeline(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        "dump",
        "--ir",
        RMSNORM,
        "--shape",
        "64,1000",
        "-p",
        "specialize{XBLOCK=1,RBLOCK=1024},canonicalize,cse,dce",
    )
    assert code == 0, err
    assert "constexprs(XBLOCK = 1, RBLOCK = 1024)" in out
    assert "tile.for" not in out  # one chunk covers the row
    assert "tile.load %in_ptr0" in out


def test_source_and_function(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "dump", f"{ROOT / 'examples' / 'layernorm.py'}:inference", "--shape", "64,1000", "--source"
    )
    assert code == 0, err
    assert "layernorm.py:inference" in out
    assert "//   def triton_per_fused_native_layer_norm_0(" in out


def test_function_without_example_inputs_gets_one_tensor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "m.py"
    src.write_text("import torch\n\ndef double(x):\n    return x * 2\n")
    code, out, err = run(capsys, "dump", "--ir", f"{src}:double", "--shape", "8,128", "--dtype", "fp16")
    assert code == 0, err
    assert "// numel=1024 rnumel=1 reductions=[none]: taken" in out
    assert "tile.load %in_ptr0, %xindex, %xmask : tile<[XBLOCK], f16>" in out


@pytest.mark.parametrize(
    "text,args,message",
    [
        ("def forward(x):\n    return x +\n", [], ":2:15: syntax error: invalid syntax"),
        ("def forward(x):\n    return x\n", [":nope"], "defines no function 'nope'"),
        ("raise ValueError('bad module')\n", [], "importing it failed: ValueError: bad module"),
        ("def forward(x):\n    return x\n", ["--shape", "4,a"], "--shape: expected"),
        ("def forward(x):\n    return x\n", ["--dtype", "int3"], "--dtype: expected one of"),
        ("def forward(x):\n    return x\n", ["--check", "sm_90"], "--check compiles Gluon output; add --emit gluon"),
        ("import torch\ndef forward(x):\n    return x @ torch.ones(3, 3)\n", [], "tracing forward failed"),
    ],
    ids=["syntax", "missing-func", "import-error", "shape", "dtype", "check-without-gluon", "trace-error"],
)
def test_user_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, args: list[str], message: str
) -> None:
    src = tmp_path / "model.py"
    src.write_text(text)
    target = str(src)
    if args and args[0].startswith(":"):
        target += args.pop(0)
    code, out, err = run(capsys, "dump", "--ir", target, "--shape", "8,16", *args)
    assert code == 2
    assert message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "dump", "/nonexistent/model.py")
    assert code == 2 and "no such file" in err
