"""The example models as kernels: captured once per shape and dtype, run on real tensors by
tilec's interpreter or by emitted Triton, and checked against eager PyTorch."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tilec import interp
from tilec.frontend import Lowered
from tilec.frontend.capture import capture
from tilec.frontend.entry import load_entry
from tilec.interp.dtypes import TORCH_DTYPES
from tilec.ir import Kernel, parse, print_kernel
from tilec.passes import run_pipeline
from tilec.testing import assert_close, tolerance

ROOT = Path(__file__).resolve().parents[2]

# The row-wise examples and, per kernel parameter that holds a result, which output of the
# function it is (the function's outputs in order).
OUTPUTS: dict[str, dict[str, int]] = {
    "rmsnorm": {"out_ptr1": 0},
    "layernorm": {"out_ptr1": 0, "out_ptr0": 1, "in_out_ptr0": 2},
    "softmax": {"out_ptr2": 0},
    "log_softmax": {"out_ptr2": 0},
    "gelu_mlp": {"out_ptr0": 0},
}


@dataclass
class Example:
    name: str
    lowered: Lowered
    inputs: list[torch.Tensor]
    reference: tuple[torch.Tensor, ...]
    special_rows: tuple[int, ...] = ()  # rows holding NaN or ±Inf

    @property
    def kernel_text(self) -> str:
        return print_kernel(self.lowered.kernel)

    def kernel(self, pipeline: str = "") -> Kernel:
        """A fresh copy of the logical kernel, with `pipeline` run on it."""
        module = parse(self.kernel_text)
        if pipeline:
            run_pipeline(module, pipeline)
        return module.kernels[0]

    def with_specials(self) -> Example:
        """The same example with NaN, +Inf and -Inf in its first input (in different rows)."""
        x = torch.empty_strided(self.inputs[0].shape, self.inputs[0].stride(), dtype=self.inputs[0].dtype)
        x.copy_(self.inputs[0])  # same strides: the kernel was compiled for them
        rows = x.shape[0]
        x[0, 0] = float("nan")
        x[min(1, rows - 1), -1] = float("inf")
        x[rows - 1, x.shape[1] // 2] = -float("inf")
        inputs = [x, *self.inputs[1:]]
        target = load_entry(str(ROOT / "examples" / f"{self.name}.py"))
        # in float64: torch's float32 CPU kernels differ with the CPU's vector width at ±Inf (with
        # AVX-512, float32 GELU of +Inf is NaN; with AVX2 it is +Inf, as in float64 on both)
        ref = target.func(*[t.double() for t in inputs])
        ref = tuple(r.float() for r in ref) if isinstance(ref, tuple) else ref.float()
        special = tuple(sorted({0, min(1, rows - 1), rows - 1}))
        return Example(self.name, self.lowered, inputs, ref if isinstance(ref, tuple) else (ref,), special)

    def arguments(self, device: str = "cpu") -> tuple[list[Any], dict[str, torch.Tensor]]:
        """Tensors for the kernel's pointer parameters (outputs poisoned with NaN), in order."""
        args: list[Any] = []
        outputs: dict[str, torch.Tensor] = {}
        for a in self.lowered.args:
            if a.buffer.startswith("arg"):  # graph input i is Inductor's arg{i}_1
                x = self.inputs[int(a.buffer[3:].split("_")[0])]
                # with its strides: the kernel was compiled for them (`.to` makes a strided view dense)
                moved = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=device)
                args.append(moved.copy_(x))
                continue
            assert a.shape is not None and a.strides is not None
            buf = torch.empty_strided(a.shape, a.strides, dtype=TORCH_DTYPES[a.dtype], device=device)
            buf.fill_(float("nan") if buf.is_floating_point() else 0)
            outputs[a.param] = buf
            args.append(buf)
        return args, outputs

    def check(self, outputs: dict[str, torch.Tensor], what: str, rows: Sequence[int] | None = None) -> None:
        """Outputs equal the reference (`rows`: those rows alone, each output's first dimension).
        With NaN or ±Inf in the input, a side output (LayerNorm's saved mean and rstd) is compared
        on the other rows only: eager's own Welford order decides whether such a row's mean is NaN
        or infinite."""
        for param, index in OUTPUTS[self.name].items():
            got = outputs[param].cpu()
            want = self.reference[index].reshape(got.shape)
            keep = list(range(got.shape[0])) if rows is None else list(rows)
            if index > 0 and self.special_rows:
                keep = [r for r in keep if r not in self.special_rows]
            if len(keep) < got.shape[0]:
                got, want = got[keep], want[keep]
            if index > 0 and self.name == "layernorm" and got.numel() and bool(torch.isfinite(want).all()):
                # a row's mean is a sum that cancels: its error is relative to the row's magnitude,
                # not to the mean (a row of 4096 N(0,1) values has |mean| ~ 0.016, fifty times
                # smaller than the mean |x| its f32 rounding errors scale with)
                x = self.inputs[0].float()
                finite = x[torch.isfinite(x)]  # the special rows are not compared
                scale = float(finite.abs().mean()) if finite.numel() else 0.0
                err = float((got.double() - want.double()).abs().max()) / (float(want.abs().max()) + scale)
                assert err <= tolerance(got.dtype), f"{self.name} {what} {param}: error {err:.3g} of the row scale"
                continue
            assert_close(got, want, got.dtype, what=f"{self.name} {what} {param}")


def kernel_count(name: str, rows: int, cols: int) -> int:
    """How many kernels Inductor makes of an example at this shape (long rows over few rows split)."""
    return len(_captured(name, rows, cols, "bf16", 0, False)[0])


@functools.cache
def _captured(
    name: str, rows: int, cols: int, dtype: str, seed: int, strided: bool
) -> tuple[list[Any], list[torch.Tensor]]:
    torch.manual_seed(seed)
    target = load_entry(str(ROOT / "examples" / f"{name}.py"))
    tdt = TORCH_DTYPES[dtype]
    if target.example_inputs:
        inputs = list(target.example_inputs((rows, cols), tdt))
    else:
        inputs = [torch.randn(rows, cols, dtype=tdt)]
    if strided:  # the input is a view into wider rows: its row stride is larger than its row
        inputs[0] = torch.randn(rows, cols + 24, dtype=tdt)[:, 5 : cols + 5]
    return capture(target.func, inputs, strict=True), inputs


@functools.cache
def example(name: str, rows: int, cols: int, dtype: str = "bf16", seed: int = 0, strided: bool = False) -> Example:
    target = load_entry(str(ROOT / "examples" / f"{name}.py"))
    kernels, inputs = _captured(name, rows, cols, dtype, seed, strided)
    (captured,) = kernels
    assert isinstance(captured.result, Lowered), captured.result
    ref = target.func(*[x.float() for x in inputs])
    return Example(name, captured.result, inputs, ref if isinstance(ref, tuple) else (ref,))


def run_interp(
    ex: Example, kernel: Kernel, programs: Sequence[int] | None = None, **constexprs: int
) -> dict[str, torch.Tensor]:
    """The kernel's outputs in the interpreter (`programs`: those programs alone, `interp.run`)."""
    args, outputs = ex.arguments()
    unbound = {k: v for k, v in constexprs.items() if kernel.constexprs.get(k) is None}
    interp.run(kernel, *args, programs=programs, **unbound)
    return outputs


def assert_forms_agree(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> None:
    """Two forms of a kernel (a pass on and off) give the same outputs within bf16's rounding, NaN
    where NaN: the rewrites that regroup a row's sums."""
    for name in got:
        torch.testing.assert_close(got[name].float(), want[name].float(), rtol=1.6e-2, atol=1e-6, equal_nan=True)


def run_triton(ex: Example, kernel: Kernel, device: str = "cpu") -> dict[str, torch.Tensor]:
    from tilec.emit.triton import emit_triton
    from tilec.runtime import load_source

    args, outputs = ex.arguments(device)
    load_source(emit_triton(kernel).source, interpret=device == "cpu").launch(*args)
    return outputs


def run_gluon(ex: Example, kernel: Kernel) -> dict[str, torch.Tensor]:
    """On a GPU (Gluon does not run in Triton's interpreter)."""
    from tilec.emit.gluon import emit_gluon
    from tilec.runtime import load_source

    args, outputs = ex.arguments("cuda")
    load_source(emit_gluon(kernel).source).launch(*args)
    torch.cuda.synchronize()
    return outputs


def run_chain(
    fn: Any, inputs: list[torch.Tensor], *, dynamic: bool = False, pipeline: str = "", triton: bool = False
) -> tuple[torch.Tensor, list[Lowered], list[Kernel]]:
    """Every kernel of `fn` (traced with symbolic leading dimensions if `dynamic`), each run in
    order in tilec's interpreter after `pipeline` (without one: the logical kernel at XBLOCK 8,
    RBLOCK 64, or XBLOCK 256), at the traced sizes (the size arguments evaluated for them).
    `triton`: each kernel emitted as Triton and run in Triton's interpreter instead (needs a
    pipeline). Returns the last buffer written, the lowered kernels and the kernels run."""
    import sympy

    buffers: dict[str, torch.Tensor] = {}
    tensors = iter(inputs)
    last, lowereds, ran = "", [], []
    for k in capture(fn, inputs, dynamic=dynamic, strict=True):
        lowered = k.result
        assert isinstance(lowered, Lowered), k.summary()
        lowereds.append(lowered)
        args = []
        for a in sorted(lowered.args, key=lambda a: a.buffer):  # the graph's inputs in order
            if a.buffer.startswith("arg") and a.buffer not in buffers:
                buffers[a.buffer] = next(tensors)
        for a in lowered.args:
            if a.buffer not in buffers:
                shape, strides, offset = k.layouts[a.buffer]
                base = torch.full((offset + sum((n - 1) * st for n, st in zip(shape, strides)) + 1,), float("nan"))
                buffers[a.buffer] = base.to(TORCH_DTYPES[a.dtype]).as_strided(shape, strides, offset)
            # a 0-d CPU tensor the wrapper passes by value (`.item()`)
            args.append(buffers[a.buffer].item() if a.access == "value" else buffers[a.buffer])
            last = a.buffer if a.is_written else last
        values = {sympy.Symbol(n, integer=True, positive=True): v for n, v in k.symbols.items()}
        sizes = [int(sympy.sympify(e).xreplace(values)) for e in lowered.sizes.values()]
        module = parse(print_kernel(lowered.kernel))
        if pipeline:
            run_pipeline(module, pipeline)
            blocks = {}
        else:
            blocks = {"XBLOCK": 8, "RBLOCK": 64} if "RBLOCK" in lowered.kernel.constexprs else {"XBLOCK": 256}
        ran.append(module.kernels[0])
        if triton:
            from tilec.emit.triton import emit_triton
            from tilec.runtime import load_source

            load_source(emit_triton(module.kernels[0]).source, interpret=True).launch(*args, *sizes, num_sms=4)
        else:
            interp.run(module.kernels[0], *args, *sizes, **blocks)
    return buffers[last], lowereds, ran
