"""On the GPU: a norm's backward that Inductor fuses into a mix-order reduction (RMSNorm at 4096 x
2048: dx and the weight's gradient in one kernel) runs stock's kernel, and tilec's report lists
it as declined with its reason; the gradients equal eager's."""

from __future__ import annotations

import pytest
import torch
from torch._inductor import metrics

import tilec
from tilec.frontend.reasons import MIX_ORDER_REDUCTION
from tilec.testing import assert_close

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def test_a_mix_order_reduction_is_reported() -> None:
    x = torch.randn(4096, 2048, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(2048, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(4096, 2048, device="cuda", dtype=torch.bfloat16)
    metrics.reset()
    out = torch.compile(rmsnorm, dynamic=False)(x, w)
    dx, dw = torch.autograd.grad(out, (x, w), dy)
    fused = metrics.codegen_mix_order_reduction  # the mix-order kernels Inductor generated
    xd, wd = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    want = torch.autograd.grad(rmsnorm(xd, wd), (xd, wd), dy.double())
    assert_close(dx.float(), want[0].float(), torch.bfloat16, what="dx")
    assert_close(dw.float(), want[1].float(), torch.bfloat16, what="dw")
    mixed = [r for r in tilec.report() if r.reason == MIX_ORDER_REDUCTION]
    assert len(mixed) == fused, (fused, [(r.kernel, r.reason) for r in tilec.report()])  # each one reported
    # docs/hook.md: Inductor fuses this shape (read from the source of torch 2.11 and 2.13)
    assert fused == 1 and not mixed[0].taken and mixed[0].kernel.startswith("triton_"), fused
