"""Symbolic sizes: a kernel whose rows are symbolic (Dynamo's dynamic leading dimensions, the row
length static) is lowered once with its x size as the scalar parameter `xnumel`; the one kernel
computes every size in tilec's interpreter, after both default pipelines and as emitted Triton in
Triton's interpreter, and through the CPU hook one compiled kernel serves several batch sizes."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

import tilec
from tilec import interp
from tilec.emit.triton import emit_triton
from tilec.frontend import Lowered
from tilec.frontend.capture import capture
from tilec.ir import Kernel, parse, print_kernel
from tilec.passes import run_pipeline
from tilec.runtime import load_source
from tilec.testing import assert_close

N = 384


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def gelu_bias(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(x + b, approximate="tanh")


def softmax(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)


FUNCTIONS = {"rmsnorm": rmsnorm, "gelu": gelu_bias, "softmax": softmax}


@functools.cache
def _kernels(name: str) -> tuple[Lowered, dict[str, Kernel]]:
    (k,) = capture(FUNCTIONS[name], [torch.randn(2, 16, N, dtype=torch.bfloat16), torch.randn(N)], dynamic=True)
    assert isinstance(k.result, Lowered), k.summary()
    text = print_kernel(k.result.kernel)
    out = {"logical": parse(text).kernels[0]}
    for pipeline in ("triton-default", "gluon-default"):
        module = parse(text)
        run_pipeline(module, pipeline)
        out[pipeline] = module.kernels[0]
    return k.result, out


def _run(kernel: Kernel, lowered: Lowered, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The kernel on x (rows x N, bf16) and w; x's row count is the kernel's xnumel (its numel for
    a pointwise kernel)."""
    from tilec.interp.dtypes import TORCH_DTYPES

    inputs = iter([x, w])  # the graph's tensor inputs, in order (its size symbols come first)
    (written,) = [a for a in lowered.args if a.is_written]
    out = torch.empty(x.shape, dtype=TORCH_DTYPES[written.dtype])
    args: list[object] = [next(inputs).to(TORCH_DTYPES[a.dtype]) if a is not written else out for a in lowered.args]
    xnumel = x.numel() if lowered.rnumel == 1 else x.shape[0]
    blocks = {"XBLOCK": 4, "RBLOCK": 128} if "RBLOCK" in kernel.constexprs else {"XBLOCK": 256}
    interp.run(kernel, *args, xnumel, **{k: v for k, v in blocks.items() if kernel.constexprs.get(k) is None})
    return out


@pytest.mark.parametrize("name", list(FUNCTIONS))
@settings(max_examples=examples(3), deadline=None)
@given(rows=st.integers(1, 67))
@example(rows=1)
def test_one_kernel_computes_every_size(name: str, rows: int) -> None:
    lowered, kernels = _kernels(name)
    assert lowered.numel is None and list(lowered.sizes) == ["xnumel"]
    x = torch.randn(rows, N).to(torch.bfloat16)
    w = torch.randn(N).to(torch.bfloat16)
    want = FUNCTIONS[name](x.float(), w.float())
    for pipeline, kernel in kernels.items():
        assert_close(_run(kernel, lowered, x, w).float(), want, torch.bfloat16, what=f"{name} {pipeline} {rows} rows")


def test_emitted_triton_takes_the_size_at_launch() -> None:
    from tilec.interp.dtypes import TORCH_DTYPES

    lowered, kernels = _kernels("rmsnorm")
    module = load_source(emit_triton(kernels["triton-default"]).source, interpret=True)
    w = torch.randn(N).to(torch.bfloat16)
    for rows in (3, 40):
        x = torch.randn(rows, N).to(torch.bfloat16)
        (written,) = [a for a in lowered.args if a.is_written]
        out = torch.empty(x.shape, dtype=TORCH_DTYPES[written.dtype])
        inputs = iter([x, w.float()])
        args = [next(inputs) if a is not written else out for a in lowered.args]
        module.launch(*args, rows, num_sms=4)
        assert_close(out.float(), rmsnorm(x.float(), w.float()), torch.bfloat16)


def test_the_cpu_hook_compiles_once_for_every_batch_size() -> None:
    from tilec.runtime import interpreter_active

    if not interpreter_active():
        pytest.skip("the CPU hook runs Triton's interpreter")
    torch._dynamo.reset()
    tilec.reset_report()
    w = torch.randn(N)
    with tilec.installed(cpu=True), tilec.config.patch(decline=False):
        compiled = torch.compile(rmsnorm, dynamic=False, fullgraph=True)
        for rows in (5, 33, 70):
            x = torch.randn(rows, N)
            torch._dynamo.mark_dynamic(x, 0)
            assert_close(compiled(x, w), rmsnorm(x, w), torch.float32)
    records = tilec.report()
    torch._dynamo.reset()
    assert len(records) == 1 and records[0].taken, [(r.kernel, r.reason) for r in records]
