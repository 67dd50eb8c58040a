"""The lowered examples compute what PyTorch computes: each kernel runs in tilec's interpreter on
random inputs and matches eager PyTorch (in float32), as it comes out of `lower` and after the
canonicalizing pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tilec import interp
from tilec.frontend import Lowered
from tilec.frontend.capture import capture
from tilec.frontend.entry import load_entry
from tilec.interp.dtypes import TORCH_DTYPES
from tilec.ir import Kernel, parse, print_kernel
from tilec.passes import run_pipeline
from tilec.testing import assert_close

ROOT = Path(__file__).resolve().parents[2]

# example: (shape, {output parameter: index of the function's output it holds})
CASES = {
    "rmsnorm": ((64, 1000), {"out_ptr1": 0}),
    "layernorm": ((64, 1000), {"out_ptr1": 0, "out_ptr0": 1, "in_out_ptr0": 2}),
    "softmax": ((64, 1000), {"out_ptr2": 0}),
    "log_softmax": ((64, 1000), {"out_ptr2": 0}),
    "attention_softmax": ((2, 3, 40, 300), {"in_out_ptr0": 0}),
    "gelu_mlp": ((64, 1000), {"out_ptr0": 0}),
}


def run_kernel(kernel: Kernel, lowered: Lowered, inputs: list[torch.Tensor], inplace: torch.Tensor | None) -> dict:
    args, outputs = [], {}
    for a in lowered.args:
        if a.buffer.startswith("arg"):  # graph input i is Inductor's arg{i}_1
            args.append(inputs[int(a.buffer[3:].split("_")[0])])
            continue
        assert a.shape is not None and a.strides is not None
        buf = torch.empty_strided(a.shape, a.strides, dtype=TORCH_DTYPES[a.dtype])
        if a.is_read:  # in place on a matmul's output
            assert inplace is not None
            buf.copy_(inplace.reshape(a.shape))
        else:
            buf.fill_(float("nan"))
        outputs[a.param] = buf
        args.append(buf)
    blocks = {"XBLOCK": 4, "RBLOCK": 256} if "RBLOCK" in kernel.constexprs else {"XBLOCK": 1024}
    interp.run(kernel, *args, **{k: v for k, v in blocks.items() if kernel.constexprs.get(k) is None})
    return outputs


@pytest.mark.parametrize("name", list(CASES))
def test_example_matches_eager(name: str) -> None:
    shape, outs = CASES[name]
    torch.manual_seed(0)
    target = load_entry(str(ROOT / "examples" / f"{name}.py"))
    inputs = list(target.example_inputs(shape, torch.bfloat16)) if target.example_inputs else [torch.randn(shape)]
    (captured,) = capture(target.func, inputs, strict=True)
    lowered = captured.result
    assert isinstance(lowered, Lowered)
    reference = target.func(*[x.float() for x in inputs])
    reference = reference if isinstance(reference, tuple) else (reference,)
    inplace = inputs[0] @ inputs[1].transpose(-1, -2) if name == "attention_softmax" else None

    logical = parse(print_kernel(lowered.kernel)).kernels[0]
    planned = parse(print_kernel(lowered.kernel))
    blocks = "XBLOCK=2,RBLOCK=512" if lowered.rnumel > 1 else "XBLOCK=1024"
    run_pipeline(planned, f"specialize{{{blocks}}},canonicalize,cse,dce")
    for kernel in (logical, planned.kernels[0]):
        got = run_kernel(kernel, lowered, inputs, inplace)
        for param, index in outs.items():
            want = reference[index].reshape(got[param].shape)
            assert_close(got[param], want, got[param].dtype, what=f"{name} {param} (@{kernel.constexprs})")


def run_chain(fn, inputs: list[torch.Tensor]) -> torch.Tensor:
    """Runs every kernel Inductor made for `fn` in order; returns the last buffer written."""
    buffers: dict[str, torch.Tensor] = {}
    last = ""
    for captured in capture(fn, inputs, strict=True):
        lowered = captured.result
        assert isinstance(lowered, Lowered), (captured.name, lowered)
        args = []
        for a in lowered.args:
            if a.buffer.startswith("arg"):
                args.append(inputs[int(a.buffer[3:].split("_")[0])])
                continue
            assert a.shape is not None and a.strides is not None
            if a.buffer not in buffers:
                buffers[a.buffer] = torch.zeros(a.shape, dtype=TORCH_DTYPES[a.dtype]).as_strided(a.shape, a.strides)
            args.append(buffers[a.buffer])
            last = a.buffer if a.is_written else last
        kernel = parse(print_kernel(lowered.kernel)).kernels[0]
        blocks = {"XBLOCK": 4, "RBLOCK": 256} if "RBLOCK" in kernel.constexprs else {"XBLOCK": 1024}
        interp.run(kernel, *args, **blocks)
    return buffers[last]


def _bf16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.bfloat16)


@pytest.mark.parametrize(
    "fn,make",
    [
        (lambda x: x.argmax(-1), lambda: [_bf16(64, 1000)]),
        (lambda x: x.argmin(-1), lambda: [_bf16(64, 1000)]),
        (lambda x: (x * 0.01 + 1).prod(-1), lambda: [torch.randn(64, 1000)]),
        (lambda x: (x > 3.0).any(-1), lambda: [torch.randn(64, 1000)]),
        (lambda a: a // 7 + a % 5, lambda: [torch.randint(-50, 50, (64, 1000), dtype=torch.int32)]),
        (lambda x: torch.var_mean(x, -1)[0], lambda: [_bf16(256, 2048)]),  # two-pass on 2.13
        (lambda x: x.float().sum(), lambda: [_bf16(1000, 999)]),  # split, ragged: masked loads
        (lambda x: (x * 2) / (x * 2).sum(-1, keepdim=True), lambda: [torch.randn(64, 1000)]),
        (lambda x: x.t().contiguous().softmax(-1), lambda: [torch.randn(64, 1000)]),
    ],
    ids=["argmax", "argmin", "prod", "any", "int-floordiv", "var", "split-sum", "reload", "transpose-softmax"],
)
def test_reductions_match_eager(fn, make) -> None:
    torch.manual_seed(0)
    inputs = make()
    got = run_chain(fn, inputs)
    want = fn(*inputs)
    got = got.reshape(want.shape)
    if got.is_floating_point():
        assert_close(got.float(), want.float(), torch.float32 if want.dtype == torch.float32 else got.dtype)
    else:
        assert torch.equal(got.to(want.dtype), want)
