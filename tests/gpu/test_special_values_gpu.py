"""On the GPU: the special-value cases of tests/emit/test_special_values.py, emitted as Triton and
run on the device, against tilec's interpreter (the IR's meaning). What the GPU does differently is
stated in docs/numerics.md ("Special values"): NaN, ±Inf and signed zeros agree everywhere; finite
results of the functions and of division are within a few ulp (the GPU's approximations); f32
subnormal inputs and results may be flushed to zero by the approximate functions; the remainder
is exact only while |x / y| < 2^24."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "emit"))

from harness import planned, run_interp
from test_special_values import APPROX_UNARY, DTYPES, EXACT_BINARY, EXACT_UNARY, N, Run, kernel, pairs

from tilec.emit.triton import emit_triton
from tilec.interp.dtypes import TORCH_DTYPES
from tilec.runtime import load_source

pytestmark = pytest.mark.gpu


def run_gpu(text: str, dt: str, out_dt: str | None = None) -> Run:
    k = planned(text)
    a, b = pairs(dt)
    out = torch.zeros(N, dtype=TORCH_DTYPES[out_dt or dt])
    from_interp = run_interp(k, [a, b, out])[2]
    args = [a.cuda(), b.cuda(), out.cuda()]
    load_source(emit_triton(k).source).launch(*args)
    torch.cuda.synchronize()
    assert isinstance(from_interp, torch.Tensor)
    return Run(a, b, from_interp, args[2].cpu())


def check(run: Run, ulps: int, signed_zero: bool = True, where: torch.Tensor | None = None) -> float:
    """NaN, ±Inf and zeros (with their signs) agree; finite results within `ulps` ulp of the result's
    dtype, except where an input or the exact result is an f32 subnormal (the GPU may flush those).
    Without `signed_zero`, a zero may have either sign. Returns the largest error seen, in ulp."""
    t, i = run.triton.double(), run.interp.double()
    tiny = torch.finfo(torch.float32).tiny
    sub = lambda v: (v != 0) & (v.abs() < tiny)  # noqa: E731
    keep = ~(sub(run.x.double()) | sub(run.y.double()) | sub(i))
    if where is not None:
        keep &= where
    nan_t, nan_i = torch.isnan(t), torch.isnan(i)
    assert torch.equal(nan_t & keep, nan_i & keep), run.describe(keep & (nan_t != nan_i))
    special = keep & ~nan_i & (torch.isinf(i) | (i == 0))
    differs = special & (t != i)
    if signed_zero:
        differs |= special & (torch.signbit(t) != torch.signbit(i))
    assert not bool(differs.any()), run.describe(differs)
    info = torch.finfo(run.triton.dtype)
    finite = keep & torch.isfinite(i) & (i != 0) & ~sub(t)
    err = (t - i).abs() / (info.eps * torch.clamp(i.abs(), min=info.tiny))
    worst = float(err[finite].max()) if bool(finite.any()) else 0.0
    assert worst <= ulps, run.describe(finite & (err > ulps))
    return worst


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", [*EXACT_BINARY, "maximum", "minimum", "pow"])
def test_binary_ops_on_the_gpu(op: str, dt: str) -> None:
    run = run_gpu(kernel(f"  %r = tile.{op} %x, %y : {{T}}", dt), dt)
    where = None
    if op == "rem":  # the GPU's x % y goes through x / y: exact only while the quotient is
        q = (run.x.double() / run.y.double()).abs()
        where = ~(q >= 2.0**24) | ~torch.isfinite(run.x.double()) | torch.isinf(run.y.double())
    signed_zero = op not in ("maximum", "minimum")  # max(+0, -0): either zero
    worst = check(run, 64 if op == "pow" else 4, signed_zero=signed_zero, where=where)
    print(f"special-values gpu {op} {dt}: max {worst:.2f} ulp")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", [*EXACT_UNARY, *APPROX_UNARY])
def test_unary_ops_on_the_gpu(op: str, dt: str) -> None:
    worst = check(run_gpu(kernel(f"  %r = tile.{op} %x : {{T}}", dt), dt), 4)
    print(f"special-values gpu {op} {dt}: max {worst:.2f} ulp")


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", [*DTYPES, "f64"])
def test_casts_on_the_gpu(src: str, dst: str) -> None:
    assert check(run_gpu(kernel("  %r = tile.cast %x : {O}", src, dst), src, dst), 0) == 0
