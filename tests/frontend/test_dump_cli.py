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


def test_dynamic_shows_the_row_count_as_a_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "dump", "--ir", "--dynamic", RMSNORM, "--shape", "64,1000")
    assert code == 0, err
    assert "taken" in out and "%xnumel: i32" in out
    assert "grid = [cdiv(xnumel, XBLOCK)]" in out


def test_dynamic_all_shows_the_row_length_as_a_parameter_too(capsys: pytest.CaptureFixture[str]) -> None:
    """`--dynamic-length`: every dimension symbolic (torch.compile(dynamic=True)); the loops run to the
    kernel's `%rnumel`, and the Triton pipeline splits them into aligned chunks (align-rows)."""
    softmax = str(ROOT / "examples" / "softmax.py")
    code, out, err = run(capsys, "dump", "--ir", "--dynamic-length", softmax, "--shape", "64,1000")
    assert code == 0, err
    assert "%rnumel: i32" in out and "%xnumel: i32" in out
    assert "to %rnumel step %rblock" in out
    code, out, err = run(capsys, "dump", "--dynamic-length", softmax, "--shape", "64,1000", "-p", "triton-default")
    assert code == 0, err
    assert "%rowstart = tile.mul %pid, %rnumel" in out and "tile.assume_multiple" in out


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


def test_the_one_function_of_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "import torch\nfrom torch.nn import Linear\nfrom torch.nn.functional import gelu\n\n"
        "def _half(x):\n    return x / 2\n\n"
        "def double(x):\n    return x * 2\n\n"
        "def main():\n    print(double(torch.ones(2)))\n"
    )
    code, out, err = run(capsys, "dump", str(src), "--shape", "8,128")
    assert code == 0, err
    assert out.startswith("// m.py:double, shape 8,128, bf16")
    assert "// triton_poi_fused_mul_0\n// numel=1024 rnumel=1 reductions=[none]: taken" in out


RMSNORM_MODULE = """
import torch

HIDDEN = 1000


class RMSNorm(torch.nn.Module):
    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(HIDDEN))  # fp32 here: --dtype converts it
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def example_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(*shape[:-1], HIDDEN, dtype=dtype)
"""


def test_the_one_module_of_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Module's weight reaches Inductor as the function's weight argument does: examples/rmsnorm.py
    computes the same with the weight as its second input, and gets the same kernel."""
    src = tmp_path / "rms.py"
    src.write_text(RMSNORM_MODULE)
    code, out, err = run(capsys, "dump", "--ir", str(src), "--shape", "64,1000")
    assert code == 0, err
    header, _, kernels = out.partition("\n")
    assert header.startswith("// rms.py:RMSNorm, shape 64,1000, bf16, cuda") and header.endswith(": 1 Triton kernel")
    assert "// numel=64 rnumel=1000 reductions=[sum]: taken" in kernels
    code, expected, err = run(capsys, "dump", "--ir", RMSNORM, "--shape", "64,1000")
    assert code == 0, err
    assert kernels == expected.partition("\n")[2]


def test_module_weights_are_graph_inputs_as_under_torch_compile(tmp_path: Path) -> None:
    """The meta Module, its weights passed as arguments, makes what compiling the Module itself
    (real weights, no gradients) makes; on the CPU, where the real Module can be compiled."""
    import torch

    from tilec.frontend.capture import capture
    from tilec.frontend.entry import load_entry, make_call, make_inputs
    from tilec.frontend.result import Lowered
    from tilec.ir import Module, print_module

    src = tmp_path / "rms.py"
    src.write_text(RMSNORM_MODULE)
    target = load_entry(str(src))
    assert target.is_module and target.func_name == "RMSNorm"
    fn, args = make_call(target, make_inputs(target, (64, 1000), torch.bfloat16), torch.bfloat16)
    assert [a.device.type for a in args] == ["meta", "meta"] and args[1].dtype == torch.bfloat16
    ours = capture(fn, args, device="cpu", strict=True)
    module = target.func().eval().to(torch.bfloat16).requires_grad_(False)
    stock = capture(module, [torch.randn(64, 1000, dtype=torch.bfloat16)], device="cpu", strict=True)
    assert [k.source for k in ours] == [k.source for k in stock] and len(ours) == 1
    (a,), (b,) = ([k.result for k in kernels] for kernels in (ours, stock))
    assert isinstance(a, Lowered) and isinstance(b, Lowered)
    assert print_module(Module([a.kernel])) == print_module(Module([b.kernel]))
    # the same pointer parameters, each over a buffer of the same shape (graph inputs are numbered
    # in another order: Dynamo lifts the Module's weight before the call's argument)
    assert [(x.param, x.dtype, x.shape) for x in a.args] == [(x.param, x.dtype, x.shape) for x in b.args]
    assert [x.shape for x in a.args] == [(64, 1000), (1000,), (64, 1000)]


SEVERAL = """
import torch


class Shift(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("shift", torch.ones(16))

    def forward(self, x):
        return x + self.shift


def scale(x):
    return x * 3


def forward(x):
    return torch.sigmoid(scale(x))
"""


@pytest.mark.parametrize(
    "name,header,kernel",
    [
        ("", "model.py:forward", "// triton_poi_fused_mul_sigmoid_0"),
        (":Shift", "model.py:Shift", "// triton_poi_fused_add_0"),
        (":scale", "model.py:scale", "// triton_poi_fused_mul_0"),
    ],
    ids=["forward-among-several", "module-by-name", "function-by-name"],
)
def test_named_or_forward(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, header: str, kernel: str
) -> None:
    src = tmp_path / "model.py"
    src.write_text(SEVERAL)
    code, out, err = run(capsys, "dump", f"{src}{name}", "--shape", "8,16")
    assert code == 0, err
    assert out.startswith(f"// {header}, shape 8,16")
    assert f"{kernel}\n// numel=128 rnumel=1 reductions=[none]: taken" in out


@pytest.mark.parametrize(
    "text,args,message",
    [
        ("def forward(x):\n    return x +\n", [], ":2:15: syntax error: invalid syntax"),
        (
            "def forward(x):\n    return x\n",
            [":nope"],
            "defines no function or torch.nn.Module subclass 'nope': function forward",
        ),
        (
            "import torch\nclass Block(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
            "def double(x):\n    return x * 2\ndef triple(x):\n    return x * 3\n",
            [],
            "defines 3 things to trace: module Block, function double, function triple; name one as ",
        ),
        (
            "from torch.nn import Linear\nfrom torch import relu\nN = 3\ndef _helper(x):\n    return x\n"
            "def main():\n    pass\ndef example_inputs(shape, dtype):\n    return []\n",
            [],
            "defines nothing to trace: no public function (other than example_inputs and main) "
            "and no torch.nn.Module subclass of its own",
        ),
        (
            "import torch\nclass Block(torch.nn.Module):\n    def __init__(self, n):\n        super().__init__()\n",
            [],
            "Block() failed: TypeError: Block.__init__() missing 1 required positional argument: 'n' "
            "(a Module subclass is built with no arguments)",
        ),
        ("raise ValueError('bad module')\n", [], "importing it failed: ValueError: bad module"),
        ("def forward(x):\n    return x\n", ["--shape", "4,a"], "--shape: expected"),
        ("def forward(x):\n    return x\n", ["--dtype", "int3"], "--dtype: expected one of"),
        (
            "def forward(x):\n    return x\n",
            ["--check", "sm_90"],
            "--check compiles the emitted source; add --emit gluon or --emit triton",
        ),
        ("import torch\ndef forward(x):\n    return x @ torch.ones(3, 3)\n", [], "tracing forward failed"),
    ],
    ids=[
        "syntax",
        "missing-name",
        "several-without-forward",
        "nothing-to-trace",
        "module-init-fails",
        "import-error",
        "shape",
        "dtype",
        "check-without-emit",
        "trace-error",
    ],
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


def test_remarks_say_why_each_pass_left_a_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    """`--remarks` prints, under each kernel, what the passes of the pipeline left and why (here
    a row of 1000 elements fits one tile: nothing to peel or to align)."""
    code, out, err = run(capsys, "dump", RMSNORM, "--shape", "64,1000", "-p", "triton-default", "--remarks")
    assert code == 0, err
    kernel = "triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0"
    assert f"// remark: @{kernel}: peel: no loop" in out
    assert f"// remark: @{kernel}: align-rows: " in out
    assert out.index(f"// {kernel}") < out.index("// remark:") < out.index("tile.kernel")
    code, out, err = run(capsys, "dump", RMSNORM, "--shape", "64,1000", "--remarks")
    assert code == 2 and "--remarks prints what the passes say; add -p PIPELINE" in err


def test_gluon_dumps_a_banded_kernel_through_the_hooks_pipeline(capsys: pytest.CaptureFixture[str]) -> None:
    """`--emit gluon` on RMSNorm's backward at 4096x32768 (fused on the fake H100: its table's ring
    range): the banded kernel runs `gluon-ring`, as the hook builds it (the header says so), its
    row's chunks copied into rings by cp.async, refilled behind CTA barriers; at rows of 2048 no
    kernel is banded and the header does not say it."""
    backward = str(ROOT / "examples" / "rmsnorm_backward.py")
    code, out, err = run(capsys, "dump", "--emit", "gluon", backward, "--shape", "4096,32768")
    assert code == 0, err
    assert "// -p gluon-ring for a banded kernel (a norm's fused backward), as the hook builds it" in out
    assert "async_copy_global_to_shared" in out and "gl.thread_barrier()" in out, out[-2000:]
    code, out, err = run(capsys, "dump", "--emit", "gluon", RMSNORM, "--shape", "64,1000")
    assert code == 0 and "for a banded kernel" not in out, err
