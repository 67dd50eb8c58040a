"""On the GPU: column reductions (weight and bias gradients: sums over tokens, Inductor's partial
sums and their total), planned along x, compiled by each emitter, equal a float64 reference; and
a real backward (autograd of a compiled RMSNorm and LayerNorm) with every kernel tilec's gives dx
and the weight gradients within tolerance, bit-identical from one run to the next."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from gpu_support import skip_unless_runs

import tilec
from tilec.testing import assert_close

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]

EMITTERS = ["gluon", "triton"]
SHAPES = [(4096, 2048), (300, 96), (8192, 768), (1000, 1000)]
bf16 = torch.bfloat16


def bias_grad(dy: torch.Tensor) -> torch.Tensor:
    return dy.sum(0)


def product_grad(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    return (x.float() * dy.float()).sum(0)


def rmsnorm_weight_grad(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    xhat = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (dy.float() * xhat).sum(0).to(x.dtype)


def _taken_all() -> None:
    records = tilec.report()
    assert records and all(r.taken for r in records), [(r.kernel, r.reason) for r in records if not r.taken]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("fn", [bias_grad, product_grad, rmsnorm_weight_grad], ids=lambda f: f.__name__)
@pytest.mark.parametrize("emitter", EMITTERS)
def test_column_sums(emitter: str, fn, shape: tuple[int, int]) -> None:
    skip_unless_runs(emitter)
    torch.manual_seed(0)
    inputs = [torch.randn(*shape, device="cuda", dtype=bf16) for _ in range(1 if fn is bias_grad else 2)]
    with tilec.config.patch(emitter=emitter):
        got = torch.compile(fn, dynamic=False)(*inputs)
    torch.cuda.synchronize()
    _taken_all()
    want = fn(*[t.double() for t in inputs])
    assert_close(got.double(), want, got.dtype, what=f"{fn.__name__} {shape}")


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def layernorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, None, 1e-6)


# shapes whose backward Inductor leaves as a dx kernel and column sums (tests/gpu/test_mix_order_gpu.py
# has one it fuses into a mix-order reduction, which stays stock's)
@pytest.mark.parametrize("shape", [(2048, 2048), (512, 4096)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("fn", [rmsnorm, layernorm], ids=lambda f: f.__name__)
@pytest.mark.parametrize("emitter", EMITTERS)
def test_norm_backward_gradients(emitter: str, fn, shape: tuple[int, int]) -> None:
    skip_unless_runs(emitter)
    torch.manual_seed(1)
    m, n = shape
    x = torch.randn(m, n, device="cuda", dtype=bf16, requires_grad=True)
    w = torch.randn(n, device="cuda", dtype=bf16, requires_grad=True)
    dy = torch.randn(m, n, device="cuda", dtype=bf16)
    with tilec.config.patch(emitter=emitter):
        out = torch.compile(fn, dynamic=False)(x, w)
        first = torch.autograd.grad(out, (x, w), dy, retain_graph=True)
    second = torch.autograd.grad(out, (x, w), dy)
    torch.cuda.synchronize()
    _taken_all()
    xd, wd = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    want = torch.autograd.grad(fn(xd, wd), (xd, wd), dy.double())
    for name, g, r, again in zip(("dx", "dw"), first, want, second):
        assert_close(g.double(), r, bf16, what=f"{fn.__name__} {shape} {name}")
        assert torch.equal(g, again), f"{fn.__name__} {shape} {name} differs between two runs"


# rows past the 16384 Inductor fuses: dx and the weights' column sums apart, each kernel taken by
# the rule measured for it on the GPU (the H100's: bench/results/2026-11-26-h100-long-bwd-kernels)
@pytest.mark.parametrize("fn", [rmsnorm, layernorm], ids=lambda f: f.__name__)
def test_long_rows_backward_takes_the_measured_kernels(fn) -> None:
    from tilec.passes.chooser import has_table

    if not has_table(torch.cuda.get_device_name()):
        pytest.skip("no rules measured on this GPU")
    torch.manual_seed(2)
    m, n = 2048, 65536
    x = torch.randn(m, n, device="cuda", dtype=bf16, requires_grad=True)
    w = torch.randn(n, device="cuda", dtype=bf16, requires_grad=True)
    dy = torch.randn(m, n, device="cuda", dtype=bf16)
    with tilec.config.patch(decline=True, autotune=False):
        out = torch.compile(fn, dynamic=False)(x, w)
        first = torch.autograd.grad(out, (x, w), dy, retain_graph=True)
    second = torch.autograd.grad(out, (x, w), dy)
    torch.cuda.synchronize()
    records = tilec.report()
    taken = [r for r in records if r.taken]
    if "H100" in torch.cuda.get_device_name():
        # the dx kernel and the column sums of the weight's gradient: tilec's, by measurement
        assert any(r.signature and r.signature[0] == "sum-of-products" for r in taken), records
        assert any(r.signature and r.signature[0] == "column-sum" for r in taken), records
    xd, wd = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    want = torch.autograd.grad(fn(xd, wd), (xd, wd), dy.double())
    for name, g, r, again in zip(("dx", "dw"), first, want, second):
        assert_close(g.double(), r, bf16, what=f"{fn.__name__} {m}x{n} {name}")
        assert torch.equal(g, again), f"{fn.__name__} {m}x{n} {name} differs between two runs"
