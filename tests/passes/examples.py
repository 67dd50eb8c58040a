"""The example models as kernels: captured once per shape and dtype, run on real tensors by
tilec's interpreter or by emitted Triton, and checked against eager PyTorch."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tilec import interp
from tilec.frontend import Lowered
from tilec.frontend.capture import capture
from tilec.frontend.dump import load_target
from tilec.ir import Kernel, parse, print_kernel
from tilec.passes import run_pipeline
from tilec.testing import assert_close

ROOT = Path(__file__).resolve().parents[2]
TORCH_DTYPES = {
    "bf16": torch.bfloat16,
    "f16": torch.float16,
    "f32": torch.float32,
    "i64": torch.int64,
    "i32": torch.int32,
    "i1": torch.bool,
}

# The row-wise examples and, per kernel parameter that holds a result, which output of the
# function it is (the function's outputs in order).
OUTPUTS: dict[str, dict[str, int]] = {
    "rmsnorm": {"out_ptr1": 0},
    "layernorm": {"out_ptr1": 0, "out_ptr0": 1, "in_out_ptr0": 2},
    "softmax": {"out_ptr2": 0},
    "log_softmax": {"out_ptr2": 0},
}


@dataclass
class Example:
    name: str
    lowered: Lowered
    inputs: list[torch.Tensor]
    reference: tuple[torch.Tensor, ...]

    @property
    def kernel_text(self) -> str:
        return print_kernel(self.lowered.kernel)

    def kernel(self, pipeline: str = "") -> Kernel:
        """A fresh copy of the logical kernel, with `pipeline` run on it."""
        module = parse(self.kernel_text)
        if pipeline:
            run_pipeline(module, pipeline)
        return module.kernels[0]

    def arguments(self) -> tuple[list[Any], dict[str, torch.Tensor]]:
        """Tensors for the kernel's pointer parameters (outputs poisoned with NaN), in order."""
        args: list[Any] = []
        outputs: dict[str, torch.Tensor] = {}
        for a in self.lowered.args:
            if a.buffer.startswith("arg"):  # graph input i is Inductor's arg{i}_1
                args.append(self.inputs[int(a.buffer[3:].split("_")[0])])
                continue
            assert a.shape is not None and a.strides is not None
            buf = torch.empty_strided(a.shape, a.strides, dtype=TORCH_DTYPES[a.dtype])
            buf.fill_(float("nan") if buf.is_floating_point() else 0)
            outputs[a.param] = buf
            args.append(buf)
        return args, outputs

    def check(self, outputs: dict[str, torch.Tensor], what: str) -> None:
        for param, index in OUTPUTS[self.name].items():
            got = outputs[param]
            want = self.reference[index].reshape(got.shape)
            assert_close(got, want, got.dtype, what=f"{self.name} {what} {param}")


@functools.cache
def example(name: str, rows: int, cols: int, dtype: str = "bf16", seed: int = 0) -> Example:
    torch.manual_seed(seed)
    target = load_target(str(ROOT / "examples" / f"{name}.py"))
    tdt = TORCH_DTYPES[dtype]
    inputs = (
        list(target.example_inputs((rows, cols), tdt))
        if target.example_inputs
        else [torch.randn(rows, cols, dtype=tdt)]
    )
    (captured,) = capture(target.func, inputs, strict=True)
    assert isinstance(captured.result, Lowered), captured.result
    ref = target.func(*[x.float() for x in inputs])
    return Example(name, captured.result, inputs, ref if isinstance(ref, tuple) else (ref,))


def run_interp(ex: Example, kernel: Kernel, **constexprs: int) -> dict[str, torch.Tensor]:
    args, outputs = ex.arguments()
    unbound = {k: v for k, v in constexprs.items() if kernel.constexprs.get(k) is None}
    interp.run(kernel, *args, **unbound)
    return outputs


def run_triton(ex: Example, kernel: Kernel) -> dict[str, torch.Tensor]:
    from tilec.emit.triton import emit_triton
    from tilec.runtime import load_source

    args, outputs = ex.arguments()
    load_source(emit_triton(kernel).source, interpret=True).launch(*args)
    return outputs
