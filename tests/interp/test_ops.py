"""Every op of the IR run by the interpreter on hand-written kernels, checked against expectations
computed independently (Python integer and float arithmetic, loops over rows)."""

from __future__ import annotations

import math
import re
import struct

import pytest
import torch

from tilec import interp
from tilec.ir import parse, verify
from tilec.ir.ops import ELEMENTWISE_TABLE

N = 64


def kernel(body: str, params: str, header: str = "") -> object:
    text = f"{header}tile.kernel @k({params}) attributes {{grid = [1]}} {{\n  %i = tile.arange {{end = {N}}} : tile<[{N}], i32>\n{body}\n}}\n"
    m = parse(text)
    verify(m)
    return m.kernels[0]


def f32(v: float) -> float:
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_rem(a: int, b: int) -> int:
    return a - b * c_div(a, b)


SPECIAL = [0.0, -0.0, 1.0, -1.5, 2.5, 1e-3, 1e30, -1e30, math.inf, -math.inf, math.nan, 3.0, 0.5, -7.25]


def float_inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(N, generator=g) * 3
    b = torch.randn(N, generator=g) * 3
    a[: len(SPECIAL)] = torch.tensor(SPECIAL)
    b[: len(SPECIAL)] = torch.tensor(SPECIAL[::-1])
    return a, b


def run_binary(
    name: str, a: torch.Tensor, b: torch.Tensor, dt: str, out_dt: str | None = None, attrs: str = ""
) -> torch.Tensor:
    out_dt = out_dt or dt
    k = kernel(
        f"  %x = tile.load %a, %i : tile<[{N}], {dt}>\n  %y = tile.load %b, %i : tile<[{N}], {dt}>\n"
        f"  %r = {name} %x, %y{attrs} : tile<[{N}], {out_dt}>\n  tile.store %o, %i, %r",
        f"%a: ptr<{dt}>, %b: ptr<{dt}>, %o: ptr<{out_dt}>",
    )
    out = torch.empty(N, dtype=a.dtype if out_dt == dt else torch.bool)
    interp.run(k, a, b, out)
    return out


FLOAT_BINARY = {
    "tile.add": lambda a, b: a + b,
    "tile.sub": lambda a, b: a - b,
    "tile.mul": lambda a, b: a * b,
    "tile.div": lambda a, b: (
        a / b if b else (math.nan if a == 0 or a != a else math.copysign(math.inf, a) * math.copysign(1, b))
    ),
    "tile.maximum": lambda a, b: math.nan if a != a or b != b else max(a, b),
    "tile.minimum": lambda a, b: math.nan if a != a or b != b else min(a, b),
}


def same(x: float, y: float, rel: float = 0.0) -> bool:
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= rel * max(abs(x), abs(y)) + (0 if rel == 0 else 1e-30)


@pytest.mark.parametrize("name", sorted(FLOAT_BINARY))
def test_float_binary_f32(name: str) -> None:
    a, b = float_inputs(1)
    out = run_binary(name, a, b, "f32")
    for i in range(N):
        want = f32(FLOAT_BINARY[name](float(a[i]), float(b[i])))
        assert same(float(out[i]), want), (name, float(a[i]), float(b[i]), float(out[i]), want)


def test_bf16_rounds_after_every_op() -> None:
    a = torch.tensor([1.0] * N, dtype=torch.bfloat16)
    b = torch.tensor([2.0**-9] * N, dtype=torch.bfloat16)  # below half an ulp of 1.0 in bf16
    out = run_binary("tile.add", a, b, "bf16")
    assert float(out[0]) == 1.0
    wide = run_binary("tile.add", a.float(), b.float(), "f32")
    assert float(wide[0]) == 1.0 + 2.0**-9


INT_BINARY = {
    "tile.add": lambda a, b: wrap32(a + b),
    "tile.sub": lambda a, b: wrap32(a - b),
    "tile.mul": lambda a, b: wrap32(a * b),
    "tile.div": c_div,
    "tile.rem": c_rem,
    "tile.maximum": max,
    "tile.minimum": min,
    "tile.and": lambda a, b: a & b,
    "tile.or": lambda a, b: a | b,
    "tile.xor": lambda a, b: a ^ b,
}


@pytest.mark.parametrize("name", sorted(INT_BINARY))
def test_int_binary_i32(name: str) -> None:
    g = torch.Generator().manual_seed(2)
    a = torch.randint(-(2**31), 2**31 - 1, (N,), generator=g, dtype=torch.int64).to(torch.int32)
    b = torch.randint(-1000, 1000, (N,), generator=g, dtype=torch.int32)
    b[b == 0] = 7
    a[:4] = torch.tensor([7, -7, 7, -7], dtype=torch.int32)
    b[:4] = torch.tensor([2, 2, -2, -2], dtype=torch.int32)
    out = run_binary(name, a, b, "i32")
    for i in range(N):
        assert int(out[i]) == INT_BINARY[name](int(a[i]), int(b[i])), (name, int(a[i]), int(b[i]))


def test_shifts_are_arithmetic_for_signed() -> None:
    a = torch.tensor([-16, 16, -1, 5] * (N // 4), dtype=torch.int32)
    b = torch.tensor([2, 2, 3, 1] * (N // 4), dtype=torch.int32)
    assert run_binary("tile.shr", a, b, "i32")[:4].tolist() == [-4, 4, -1, 2]
    assert run_binary("tile.shl", a, b, "i32")[:4].tolist() == [-64, 64, -8, 10]


def test_integer_division_by_zero_is_reported() -> None:
    a = torch.ones(N, dtype=torch.int32)
    b = torch.zeros(N, dtype=torch.int32)
    with pytest.raises(interp.ExecutionError, match=re.escape("'tile.div' divides an integer by zero")):
        run_binary("tile.div", a, b, "i32")


@pytest.mark.parametrize("pred", ["lt", "le", "gt", "ge", "eq", "ne"])
def test_cmp_with_nan(pred: str) -> None:
    a, b = float_inputs(3)
    out = run_binary("tile.cmp", a, b, "f32", "i1", f' {{predicate = "{pred}"}}')
    ops = {
        "lt": float.__lt__,
        "le": float.__le__,
        "gt": float.__gt__,
        "ge": float.__ge__,
        "eq": float.__eq__,
        "ne": float.__ne__,
    }
    for i in range(N):
        assert bool(out[i]) == ops[pred](float(a[i]), float(b[i]))


UNARY_REF = {
    "tile.neg": lambda x: -x,
    "tile.abs": abs,
    "tile.exp": lambda x: math.exp(x) if x < 700 else math.inf,
    "tile.exp2": lambda x: 2.0**x if x < 1000 else math.inf,
    "tile.log": lambda x: math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan),
    "tile.log2": lambda x: math.log2(x) if x > 0 else (-math.inf if x == 0 else math.nan),
    "tile.sqrt": lambda x: math.sqrt(x) if x >= 0 else math.nan,
    "tile.rsqrt": lambda x: 1 / math.sqrt(x) if x > 0 else (math.inf if x == 0 else math.nan),
    "tile.sin": math.sin,
    "tile.cos": math.cos,
    "tile.tanh": math.tanh,
    "tile.erf": math.erf,
    "tile.sigmoid": lambda x: 1 / (1 + math.exp(-x)) if x > -700 else 0.0,
    "tile.floor": math.floor,
    "tile.ceil": math.ceil,
}


@pytest.mark.parametrize("name", sorted(UNARY_REF))
def test_unary_f32(name: str) -> None:
    g = torch.Generator().manual_seed(4)
    a = torch.randn(N, generator=g) * 4
    a[:6] = torch.tensor([0.0, 1.0, -2.0, 0.25, 10.0, -0.5])
    k = kernel(
        f"  %x = tile.load %a, %i : tile<[{N}], f32>\n  %r = {name} %x : tile<[{N}], f32>\n  tile.store %o, %i, %r",
        "%a: ptr<f32>, %o: ptr<f32>",
    )
    out = torch.empty(N)
    interp.run(k, a, out)
    for i in range(N):
        x = float(a[i])
        if name in ("tile.sin", "tile.cos") or abs(x) < 1e30:
            want = float(UNARY_REF[name](x))
            assert same(float(out[i]), f32(want), rel=2e-6), (name, x, float(out[i]), want)


def test_nan_and_inf_propagate_through_unary() -> None:
    a = torch.tensor([math.nan, math.inf, -math.inf] * (N // 3) + [0.0] * (N % 3))
    k = kernel(
        f"  %x = tile.load %a, %i : tile<[{N}], f32>\n  %r = tile.exp %x : tile<[{N}], f32>\n  tile.store %o, %i, %r",
        "%a: ptr<f32>, %o: ptr<f32>",
    )
    out = torch.empty(N)
    interp.run(k, a, out)
    assert math.isnan(float(out[0])) and float(out[1]) == math.inf and float(out[2]) == 0.0


def test_every_elementwise_op_has_a_test() -> None:
    tested = (
        set(FLOAT_BINARY)
        | set(INT_BINARY)
        | set(UNARY_REF)
        | {"tile.shl", "tile.shr", "tile.not", "tile.pow", "tile.fma"}
    )
    assert {n for n, *_ in ELEMENTWISE_TABLE} <= tested


def test_not_pow_fma_where_cast_bitcast() -> None:
    k = kernel(
        f"""  %x = tile.load %a, %i : tile<[{N}], f32>
  %n = tile.load %b, %i : tile<[{N}], i32>
  %nn = tile.not %n : tile<[{N}], i32>
  %two = tile.constant {{value = 2.0}} : f32
  %p = tile.pow %x, %two : tile<[{N}], f32>
  %f = tile.fma %x, %x, %p : tile<[{N}], f32>
  %z = tile.constant {{value = 0.0}} : f32
  %neg = tile.cmp %x, %z {{predicate = "lt"}} : tile<[{N}], i1>
  %w = tile.where %neg, %z, %f : tile<[{N}], f32>
  %t = tile.cast %x : tile<[{N}], i32>
  %h = tile.cast %x : tile<[{N}], bf16>
  %bits = tile.bitcast %x : tile<[{N}], i32>
  tile.store %o1, %i, %nn
  tile.store %o2, %i, %w
  tile.store %o3, %i, %t
  tile.store %o4, %i, %h
  tile.store %o5, %i, %bits""",
        "%a: ptr<f32>, %b: ptr<i32>, %o1: ptr<i32>, %o2: ptr<f32>, %o3: ptr<i32>, %o4: ptr<bf16>, %o5: ptr<i32>",
    )
    a = torch.linspace(-3.7, 3.7, N)
    b = torch.arange(N, dtype=torch.int32) - 5
    o1, o2, o3 = torch.empty(N, dtype=torch.int32), torch.empty(N), torch.empty(N, dtype=torch.int32)
    o4, o5 = torch.empty(N, dtype=torch.bfloat16), torch.empty(N, dtype=torch.int32)
    interp.run(k, a, b, o1, o2, o3, o4, o5)
    for i in range(N):
        x = float(a[i])
        assert int(o1[i]) == ~int(b[i])
        assert same(float(o2[i]), 0.0 if x < 0 else f32(x * x + f32(x * x)), rel=1e-6)
        assert int(o3[i]) == int(x)  # truncation toward zero
        assert int(o5[i]) == struct.unpack("i", struct.pack("f", x))[0]
    assert torch.equal(o4, a.to(torch.bfloat16))


# ---------------------------------------------------------------------------------------------
# Reductions

ROWS, COLS = 4, 16
TORCH = {"f32": torch.float32, "i32": torch.int32}


def run_reduction(
    op: str, attrs: str, results: list[str], x: torch.Tensor, mask: torch.Tensor | None
) -> list[torch.Tensor]:
    """Runs `%r0, ... = op %x[, %m] {attrs}` over a ROWS x COLS f32 input, one result per row."""
    masked = ", %m" if mask is not None else ""
    names = ", ".join(f"%r{j}" for j in range(len(results)))
    types = ", ".join(f"tile<[{ROWS}], {dt}>" for dt in results)
    params = ", ".join(f"%o{j}: ptr<{dt}>" for j, dt in enumerate(results))
    stores = "\n".join(f"  tile.store %o{j}, %rows, %r{j}" for j in range(len(results)))
    text = f"""tile.kernel @k(%a: ptr<f32>, %mk: ptr<i8>, {params}) attributes {{grid = [1]}} {{
  %rows = tile.arange {{end = {ROWS}}} : tile<[{ROWS}], i32>
  %ci = tile.arange {{end = {COLS}}} : tile<[{COLS}], i32>
  %rx = tile.expand_dims %rows {{axis = 1}} : tile<[{ROWS}, 1], i32>
  %c2 = tile.expand_dims %ci {{axis = 0}} : tile<[1, {COLS}], i32>
  %n = tile.constant {{value = {COLS}}} : i32
  %ro = tile.mul %rx, %n : tile<[{ROWS}, 1], i32>
  %rb = tile.broadcast %ro : tile<[{ROWS}, {COLS}], i32>
  %cb = tile.broadcast %c2 : tile<[{ROWS}, {COLS}], i32>
  %offs = tile.add %rb, %cb : tile<[{ROWS}, {COLS}], i32>
  %x = tile.load %a, %offs : tile<[{ROWS}, {COLS}], f32>
  %mraw = tile.load %mk, %offs : tile<[{ROWS}, {COLS}], i8>
  %m = tile.cast %mraw : tile<[{ROWS}, {COLS}], i1>
  {names} = {op} %x{masked} {attrs} : {types}
{stores}
}}
"""
    module = parse(text)
    verify(module)
    mk = (mask if mask is not None else torch.ones(ROWS, COLS, dtype=torch.bool)).to(torch.int8)
    outs = [torch.empty(ROWS, dtype=TORCH[dt]) for dt in results]
    interp.run(module.kernels[0], x, mk, *outs)
    return outs


def reduction_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    x = torch.randn(ROWS, COLS, generator=g)
    x[1, 3] = math.nan
    x[2, 5] = x[2, 9] = 10.0  # a tie for the maximum
    mask = torch.rand(ROWS, COLS, generator=g) > 0.3
    mask[3] = False  # a fully masked row
    mask[1, 3] = mask[2, 5] = mask[2, 9] = True
    return x, mask


def row_values(x: torch.Tensor, mask: torch.Tensor, r: int) -> list[tuple[int, float]]:
    return [(c, float(x[r, c])) for c in range(COLS) if mask[r, c]]


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
def test_reduce(kind: str) -> None:
    x, mask = reduction_inputs()
    (out,) = run_reduction("tile.reduce", f'{{kind = "{kind}", axis = 1}}', ["f32"], x, mask)
    identity = {"sum": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}[kind]
    for r in range(ROWS):
        vals = [v for _, v in row_values(x, mask, r)]
        if any(math.isnan(v) for v in vals):
            want = math.nan
        elif not vals:
            want = identity
        elif kind == "sum":
            want = math.fsum(vals)
        elif kind == "prod":
            want = math.prod(vals)
        else:
            want = max(vals) if kind == "max" else min(vals)
        assert same(float(out[r]), f32(want), rel=1e-6), (kind, r, float(out[r]), want)


@pytest.mark.parametrize("kind", ["max", "min"])
def test_argreduce(kind: str) -> None:
    x, mask = reduction_inputs()
    val, idx = run_reduction("tile.argreduce", f'{{kind = "{kind}", axis = 1}}', ["f32", "i32"], x, mask)
    for r in range(ROWS):
        vals = row_values(x, mask, r)
        nans = [c for c, v in vals if math.isnan(v)]
        if nans:
            assert math.isnan(float(val[r])) and int(idx[r]) == nans[0]
        elif not vals:
            assert int(idx[r]) == 0
        else:
            best = max(v for _, v in vals) if kind == "max" else min(v for _, v in vals)
            first = next(c for c, v in vals if v == best)  # ties: the first index
            assert float(val[r]) == best and int(idx[r]) == first, (r, float(val[r]), int(idx[r]), best, first)
    assert int(idx[2]) == 5 if kind == "max" else True


def test_welford() -> None:
    x, mask = reduction_inputs()
    x[1, 3] = 0.5  # no NaN here
    mean, m2, n = run_reduction("tile.welford", "{axis = 1}", ["f32", "f32", "f32"], x, mask)
    for r in range(ROWS):
        vals = [v for _, v in row_values(x, mask, r)]
        if not vals:
            assert (float(mean[r]), float(m2[r]), float(n[r])) == (0.0, 0.0, 0.0)
            continue
        mu = math.fsum(vals) / len(vals)
        assert same(float(mean[r]), f32(mu), rel=1e-6)
        assert same(float(m2[r]), f32(math.fsum((v - mu) ** 2 for v in vals)), rel=1e-5)
        assert float(n[r]) == len(vals)


def test_softmax_reduce() -> None:
    x, mask = reduction_inputs()
    x[1, 3] = 0.5
    m, s = run_reduction("tile.softmax_reduce", "{axis = 1}", ["f32", "f32"], x, mask)
    for r in range(ROWS):
        vals = [v for _, v in row_values(x, mask, r)]
        if not vals:
            assert float(m[r]) == -math.inf and float(s[r]) == 0.0
            continue
        mx = max(vals)
        assert float(m[r]) == mx
        assert same(float(s[r]), f32(math.fsum(math.exp(v - mx) for v in vals)), rel=1e-6)


def test_reduce_without_mask() -> None:
    x, _ = reduction_inputs()
    (out,) = run_reduction("tile.reduce", '{kind = "max", axis = 1}', ["f32"], x, None)
    assert math.isnan(float(out[1])) and float(out[2]) == 10.0


def combine(op: str, attrs: str, parts: list[list[float]], result_dtypes: list[str]) -> list[list[float]]:
    """Runs a combine op on scalars given as lists (one per operand)."""
    n = len(parts[0])
    k = len(parts)
    loads = "\n".join(f"  %p{j} = tile.load %a{j}, %i : tile<[{n}], {dt}>" for j, dt in enumerate(result_dtypes * 2))
    params = ", ".join(f"%a{j}: ptr<{dt}>" for j, dt in enumerate(result_dtypes * 2))
    outs = ", ".join(f"%o{j}: ptr<{dt}>" for j, dt in enumerate(result_dtypes))
    names = ", ".join(f"%r{j}" for j in range(len(result_dtypes)))
    types = ", ".join(f"tile<[{n}], {dt}>" for dt in result_dtypes)
    operands = ", ".join(f"%p{j}" for j in range(k))
    stores = "\n".join(f"  tile.store %o{j}, %i, %r{j}" for j in range(len(result_dtypes)))
    text = (
        f"tile.kernel @k({params}, {outs}) attributes {{grid = [1]}} {{\n  %i = tile.arange {{end = {n}}} : tile<[{n}], i32>\n"
        f"{loads}\n  {names} = {op} {operands}{attrs} : {types}\n{stores}\n}}\n"
    )
    module = parse(text)
    verify(module)
    ins = [torch.tensor(p, dtype=TORCH[dt]) for p, dt in zip(parts, result_dtypes * 2)]
    res = [torch.empty(n, dtype=TORCH[dt]) for dt in result_dtypes]
    interp.run(module.kernels[0], *ins, *res)
    return [r.tolist() for r in res]


def test_welford_combine_matches_one_pass() -> None:
    data = [[1.0, 2.0, 4.0], [8.0, -1.0], [], [3.0]]
    halves = [(d[: len(d) // 2], d[len(d) // 2 :]) for d in data]

    def stats(v: list[float]) -> tuple[float, float, float]:
        if not v:
            return (0.0, 0.0, 0.0)
        mu = sum(v) / len(v)
        return (mu, sum((t - mu) ** 2 for t in v), float(len(v)))

    a = [stats(h[0]) for h in halves]
    b = [stats(h[1]) for h in halves]
    parts = [[s[j] for s in a] for j in range(3)] + [[s[j] for s in b] for j in range(3)]
    mean, m2, n = combine("tile.welford_combine", "", parts, ["f32", "f32", "f32"])
    for i, d in enumerate(data):
        want = stats(d)
        assert same(mean[i], f32(want[0]), rel=1e-6) and same(m2[i], f32(want[1]), rel=1e-6) and n[i] == want[2]


def test_softmax_combine() -> None:
    ma, sa = [1.0, -math.inf, 2.0, -math.inf], [2.0, 0.0, 1.0, 0.0]
    mb, sb = [3.0, 0.5, -math.inf, -math.inf], [1.0, 4.0, 0.0, 0.0]
    m, s = combine("tile.softmax_combine", "", [ma, sa, mb, sb], ["f32", "f32"])
    assert m == [3.0, 0.5, 2.0, -math.inf]
    assert same(s[0], f32(2.0 * math.exp(1.0 - 3.0) + 1.0), rel=1e-6)
    assert s[1:] == [4.0, 1.0, 0.0]


def test_arg_combine() -> None:
    va, ia = [1.0, 5.0, 2.0, math.nan], [4.0, 9.0, 7.0, 8.0]
    vb, ib = [3.0, 5.0, math.nan, 1.0], [1.0, 2.0, 6.0, 0.0]
    v, i = combine("tile.arg_combine", ' {kind = "max"}', [va, ia, vb, ib], ["f32", "f32"])
    assert v[:2] == [3.0, 5.0] and math.isnan(v[2]) and math.isnan(v[3])
    assert i == [1.0, 2.0, 6.0, 8.0]  # ties take the smaller index; NaN wins
