"""Special values through every elementwise op that tilec's interpreter and the Triton emitter both
implement: ±0, ±Inf, NaN, subnormals, the largest finite values, and values that overflow fp16 or
bf16 when an f32 result is rounded. Each op runs on every pair of them (so every special meets
every other), in f32, bf16 and fp16, in tilec's interpreter and, emitted as Triton, in Triton's
interpreter.

What must agree, and where the IR leaves a result undefined, is `docs/numerics.md`'s "Special
values": NaN in the same places; every non-NaN result equal bit for bit (the sign of zero
included) for the exactly rounded ops; for transcendental functions, specials exact and finite
results within a few units in the last place; the sign of a zero returned by `maximum`/`minimum`
of +0 and -0 is not defined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
from harness import planned, run_interp, run_triton

from tilec.interp.dtypes import TORCH_DTYPES

DTYPES = ["f32", "bf16", "f16"]
N = 512  # elements per kernel: every ordered pair of VALUES, padded with ones


def values(dt: str) -> list[float]:
    t = TORCH_DTYPES[dt]
    info = torch.finfo(t)
    return [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.0,
        3.0,
        -3.5,
        100.0,
        math.inf,
        -math.inf,
        math.nan,
        info.max,
        -info.max,
        info.tiny,  # the smallest normal
        info.tiny * 2.0**-3,  # subnormal (flushed to zero nowhere in the IR's meaning)
        -(info.tiny * 2.0**-3),
        60000.0,  # x + x and x * 2 overflow fp16 when rounded
        1e30,  # overflows fp16 outright; finite in bf16 and f32
    ]


def pairs(dt: str) -> tuple[torch.Tensor, torch.Tensor]:
    vs = values(dt)
    a = [x for x in vs for _ in vs]
    b = [y for _ in vs for y in vs]
    assert len(a) <= N
    pad = [1.0] * (N - len(a))
    t = TORCH_DTYPES[dt]
    # built in f32: torch.tensor would round the subnormals of half precision through f64 the same
    return torch.tensor(a + pad, dtype=torch.float32).to(t), torch.tensor(b + pad, dtype=torch.float32).to(t)


def kernel(body: str, dt: str, out_dt: str | None = None) -> str:
    out_dt = out_dt or dt
    return f"""tile.kernel @special(%a: ptr<{dt}>, %b: ptr<{dt}>, %o: ptr<{out_dt}>) attributes {{grid = [1]}} {{
  %i = tile.arange {{end = {N}}} : tile<[{N}], i32>
  %x = tile.load %a, %i : tile<[{N}], {dt}>
  %y = tile.load %b, %i : tile<[{N}], {dt}>
{body.format(T=f"tile<[{N}], {dt}>", O=f"tile<[{N}], {out_dt}>")}
  tile.store %o, %i, %r
}}
"""


def bf16_subnormal(t: torch.Tensor) -> torch.Tensor:
    if t.dtype != torch.bfloat16:
        return torch.zeros(t.shape, dtype=torch.bool)
    f = t.float()
    return (f != 0) & (f.abs() < torch.finfo(torch.bfloat16).tiny)


@dataclass
class Run:
    x: torch.Tensor
    y: torch.Tensor
    interp: torch.Tensor
    triton: torch.Tensor

    @property
    def comparable(self) -> torch.Tensor:
        """Elements both interpreters define alike. Triton's interpreter flushes bf16 subnormals to
        zero when it widens bf16 to f32 (the GPU's conversion is exact): where one is an input or
        the result, Triton's interpreter is not a reference."""
        return ~(bf16_subnormal(self.x) | bf16_subnormal(self.y) | bf16_subnormal(self.interp))

    def describe(self, bad: torch.Tensor) -> str:
        i = int(bad.nonzero()[0])
        return (
            f"{int(bad.sum())} elements differ; first at x={self.x[i].item()!r}, y={self.y[i].item()!r}: "
            f"Triton {self.triton[i].item()!r}, interpreter {self.interp[i].item()!r}"
        )


def run_both(text: str, dt: str, out_dt: str | None = None) -> Run:
    k = planned(text)
    a, b = pairs(dt)
    out = torch.zeros(N, dtype=TORCH_DTYPES[out_dt or dt])
    from_interp = run_interp(k, [a, b, out])[2]
    from_triton = run_triton(k, [a, b, out])[2]
    assert isinstance(from_interp, torch.Tensor) and isinstance(from_triton, torch.Tensor)
    return Run(a, b, from_interp, from_triton)


def assert_exact(run: Run, signed_zero: bool = True, where: torch.Tensor | None = None) -> None:
    """NaN in the same places; every other element equal bit for bit (or, without `signed_zero`,
    equal as numbers)."""
    keep = run.comparable if where is None else run.comparable & where
    t, i = run.triton.double(), run.interp.double()
    nan_t, nan_i = torch.isnan(t), torch.isnan(i)
    assert torch.equal(nan_t & keep, nan_i & keep), run.describe(keep & (nan_t != nan_i))
    both = keep & ~nan_t & ~nan_i
    differs = both & (t != i)
    if signed_zero:
        differs |= both & (torch.signbit(t) != torch.signbit(i))
    assert not bool(differs.any()), run.describe(differs)


def assert_close_ulp(run: Run, ulps: int) -> None:
    """NaN and ±Inf in the same places with the same signs, zeros with the same sign, and finite
    results within `ulps` units in the last place of the result's dtype."""
    keep = run.comparable
    t, i = run.triton.double(), run.interp.double()
    nan_t, nan_i = torch.isnan(t), torch.isnan(i)
    assert torch.equal(nan_t & keep, nan_i & keep), run.describe(keep & (nan_t != nan_i))
    special = keep & ~nan_i & (torch.isinf(i) | (i == 0))
    differs = special & ((t != i) | (torch.signbit(t) != torch.signbit(i)))
    assert not bool(differs.any()), run.describe(differs)
    info = torch.finfo(run.triton.dtype)
    finite = keep & torch.isfinite(i) & (i != 0)
    allowed = ulps * info.eps * torch.clamp(i.abs(), min=info.tiny)
    differs = finite & ~((t - i).abs() <= allowed)
    assert not bool(differs.any()), run.describe(differs)


# Ops whose result IEEE 754 rounds exactly: bit-for-bit equal.
EXACT_BINARY = ["add", "sub", "mul", "div", "rem"]
EXACT_UNARY = ["neg", "abs", "sqrt", "floor", "ceil"]
# Transcendental functions: specials exact, finite results within ULPS.
APPROX_UNARY = ["exp", "exp2", "log", "log2", "rsqrt", "sin", "cos", "tanh", "erf", "sigmoid"]
ULPS = 4


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", EXACT_BINARY)
def test_exactly_rounded_binary_ops(op: str, dt: str) -> None:
    assert_exact(run_both(kernel(f"  %r = tile.{op} %x, %y : {{T}}", dt), dt))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_and_minimum_propagate_nan(op: str, dt: str) -> None:
    assert_exact(run_both(kernel(f"  %r = tile.{op} %x, %y : {{T}}", dt), dt), signed_zero=False)  # max(+0, -0): either


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", EXACT_UNARY)
def test_exactly_rounded_unary_ops(op: str, dt: str) -> None:
    assert_exact(run_both(kernel(f"  %r = tile.{op} %x : {{T}}", dt), dt))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", APPROX_UNARY)
def test_transcendental_functions(op: str, dt: str) -> None:
    assert_close_ulp(run_both(kernel(f"  %r = tile.{op} %x : {{T}}", dt), dt), ULPS)


@pytest.mark.parametrize("dt", DTYPES)
def test_pow(dt: str) -> None:
    assert_close_ulp(
        run_both(kernel("  %r = tile.pow %x, %y : {T}", dt), dt), 64
    )  # exp2(y·log2|x|): the error grows with |y·log2|x||


@pytest.mark.parametrize("dt", DTYPES)
def test_fma(dt: str) -> None:
    body = "  %r = tile.fma %x, %y, %x : {T}"
    run = run_both(kernel(body, dt), dt)
    # Triton's interpreter rounds x·y before adding (the GPU fuses): compared where x·y is exact in f32
    product = run.x.double() * run.y.double()
    exact = torch.isnan(product) | (product.float().double() == product)
    assert_exact(run, where=exact)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("pred", ["lt", "le", "gt", "ge", "eq", "ne"])
def test_comparisons_and_where(pred: str, dt: str) -> None:
    body = (
        f'  %c = tile.cmp %x, %y {{{{predicate = "{pred}"}}}} : tile<[{N}], i1>\n  %r = tile.where %c, %x, %y : {{T}}'
    )
    assert_exact(run_both(kernel(body, dt), dt))


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", [*DTYPES, "f64"])
def test_casts_round_to_nearest_even(src: str, dst: str) -> None:
    assert_exact(run_both(kernel("  %r = tile.cast %x : {O}", src, dst), src, dst))


@pytest.mark.parametrize("dst", ["f16", "bf16"])
def test_rounding_an_f32_sum_overflows_to_inf(dst: str) -> None:
    """x + y computed in f32 and rounded once to the narrow dtype: 60000 + 60000 is +Inf in fp16,
    1e30 + 1e30 finite in bf16; rounding to nearest even at the halfway points."""
    body = f"  %s = tile.add %x, %y : {{T}}\n  %r = tile.cast %s : tile<[{N}], {dst}>"
    run = run_both(kernel(body, "f32", dst), "f32", dst)
    assert_exact(run)
    vs = values("f32")
    k = vs.index(60000.0) * len(vs) + vs.index(60000.0)
    assert (run.interp[k].item() == math.inf) == (dst == "f16")
