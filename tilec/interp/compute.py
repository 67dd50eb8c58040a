"""The meaning of the ops that compute in registers: each is a function of torch tensors.

Scalars are 0-d tensors and tiles n-d tensors of the op's dtype, so integer arithmetic wraps at
its width and bf16/f16 results round after every op. Floating-point results are the correctly
rounded IEEE-754 ones: +, -, *, / and casts round once (the hardware does), fmod is exact, and
the functions (sqrt, exp, erf, ...) run in f64 and round once to the op's dtype, whatever the
CPU. docs/numerics.md says where the GPUs and Triton's interpreter differ from this.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np
import torch

from tilec.interp.dtypes import to_torch
from tilec.interp.errors import ExecutionError
from tilec.ir.core import OperandDef, Operation
from tilec.ir.dtypes import DType, Type
from tilec.ir.expr import Expr, IntExpr
from tilec.ir.ops.common import elem_dtype

Tensor = torch.Tensor


class Context(Protocol):
    """What an op's semantics may ask of the launch: concrete shapes and constexpr values."""

    def shape(self, t: Type) -> tuple[int, ...]: ...

    def value(self, e: IntExpr) -> int: ...


class Operands:
    """An op's evaluated operands: by their declared names (`args.src`; a Variadic reads as a list,
    an absent Optional as None) or in order (iterating, `len`)."""

    __slots__ = ("_op", "_values")

    def __init__(self, op: Operation, values: Sequence[Any]) -> None:
        self._op = op
        self._values = list(values)

    def __getattr__(self, name: str) -> Any:
        decl = getattr(type(self._op), name, None)
        if not isinstance(decl, OperandDef):
            raise AttributeError(f"'{self._op.name}' has no operand '{name}'")
        return decl.pick(self._values, decl.segment(self._op))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


Impl = Callable[[Operation, Operands, Context], list[Any]]

IMPLS: dict[str, Impl] = {}


def impl(*names: str) -> Callable[[Impl], Impl]:
    def register(fn: Impl) -> Impl:
        for n in names:
            IMPLS[n] = fn
        return fn

    return register


def result_dtype(op: Operation, i: int = 0) -> DType:
    dt = elem_dtype(op.results[i].type)
    assert dt is not None
    return dt


def scalar(value: Any, dt: DType) -> Tensor:
    return torch.tensor(value, dtype=to_torch(dt))


# ---------------------------------------------------------------------------------------------
# Constants and shapes


@impl("tile.constant")
def _constant(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    value = op.attr("value")
    return [scalar(ctx.value(value) if isinstance(value, Expr) else value, result_dtype(op))]


@impl("tile.full")
def _full(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    return [torch.full(ctx.shape(op.result.type), op.attr("value"), dtype=to_torch(result_dtype(op)))]


@impl("tile.arange")
def _arange(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    (n,) = ctx.shape(op.result.type)
    start = op.attr("start")
    return [torch.arange(start, start + n, dtype=torch.int32)]


@impl("tile.broadcast")
def _broadcast(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    return [args.src.expand(ctx.shape(op.result.type))]


@impl("tile.expand_dims")
def _expand_dims(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    return [args.src.unsqueeze(op.attr("axis"))]


@impl("tile.reshape")
def _reshape(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    return [args.src.reshape(ctx.shape(op.result.type))]


@impl("tile.convert_layout")
def _convert_layout(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    return [args.src]


# ---------------------------------------------------------------------------------------------
# Elementwise math


def _check_divisor(op: Operation, b: Tensor) -> None:
    if not b.is_floating_point() and bool((b == 0).any()):
        raise ExecutionError("divides an integer by zero", op)


def _div(op: Operation, a: Tensor, b: Tensor) -> Tensor:
    if a.is_floating_point():
        return torch.div(a, b)
    _check_divisor(op, b)
    return torch.div(a, b, rounding_mode="trunc")


def _rem(op: Operation, a: Tensor, b: Tensor) -> Tensor:
    if not a.is_floating_point():
        _check_divisor(op, b)
        return torch.fmod(a, b)
    # C's fmod, which is exact: torch's (a - trunc(a / b) * b) is not when a / b overflows, and
    # gives fmod(inf, tiny) = inf
    wide = torch.promote_types(a.dtype, torch.float32)
    x, y = torch.broadcast_tensors(a.to(wide), b.to(wide))
    return torch.from_numpy(np.fmod(x.numpy(), y.numpy())).to(a.dtype)


BINARY: dict[str, Callable[[Operation, Tensor, Tensor], Tensor]] = {
    "tile.add": lambda op, a, b: torch.add(a, b),
    "tile.sub": lambda op, a, b: torch.sub(a, b),
    "tile.mul": lambda op, a, b: torch.mul(a, b),
    "tile.div": _div,
    "tile.rem": _rem,
    "tile.maximum": lambda op, a, b: torch.maximum(a, b),
    "tile.minimum": lambda op, a, b: torch.minimum(a, b),
    "tile.pow": lambda op, a, b: torch.pow(a, b),
    "tile.and": lambda op, a, b: torch.bitwise_and(a, b),
    "tile.or": lambda op, a, b: torch.bitwise_or(a, b),
    "tile.xor": lambda op, a, b: torch.bitwise_xor(a, b),
    "tile.shl": lambda op, a, b: torch.bitwise_left_shift(a, b),
    "tile.shr": lambda op, a, b: torch.bitwise_right_shift(a, b),
}

UNARY: dict[str, Callable[[Tensor], Tensor]] = {
    "tile.neg": torch.neg,
    "tile.abs": torch.abs,
    "tile.not": torch.bitwise_not,
    "tile.exp": torch.exp,
    "tile.exp2": torch.exp2,
    "tile.log": torch.log,
    "tile.log2": torch.log2,
    "tile.sqrt": torch.sqrt,
    "tile.rsqrt": torch.rsqrt,
    "tile.sin": torch.sin,
    "tile.cos": torch.cos,
    "tile.tanh": torch.tanh,
    "tile.erf": torch.erf,
    "tile.sigmoid": torch.sigmoid,
    "tile.floor": torch.floor,
    "tile.ceil": torch.ceil,
}


def _elementwise(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    dt = result_dtype(op)
    out_t = to_torch(dt)
    if op.name in BINARY:
        a, b = args
        return [BINARY[op.name](op, a, b).to(out_t)]
    if op.name in UNARY:
        (a,) = args
        if dt.is_float:
            # in f64, then rounded once to the result's dtype: the correctly rounded result (torch's
            # f32 kernels are not: sqrt(65504) is off by one ulp, and vectorized paths vary by CPU)
            return [UNARY[op.name](a.to(torch.float64)).to(out_t)]
        return [UNARY[op.name](a)]
    if op.name == "tile.fma":
        a, b, c = (x.double() for x in args)
        return [(a * b + c).to(out_t)]
    raise AssertionError(op.name)


for _name in [*BINARY, *UNARY, "tile.fma"]:
    IMPLS[_name] = _elementwise

_CMP: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "eq": torch.eq,
    "ne": torch.ne,
}


@impl("tile.cmp")
def _cmp(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    return [_CMP[op.attr("predicate")](args.lhs, args.rhs)]


@impl("tile.where")
def _where(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    return [torch.where(args.cond, args.true_value, args.false_value)]


@impl("tile.cast")
def _cast(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    dt = result_dtype(op)
    x = args.src
    if dt.is_bool:
        return [x != 0]
    return [x.to(to_torch(dt))]


@impl("tile.assume_multiple")
def _assume_multiple(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    x = torch.as_tensor(args.src)
    for d, k in enumerate(op.attr("divisors")):
        if k == 1:
            continue
        heads = x.reshape(1) if x.dim() == 0 else x.index_select(d, torch.arange(0, x.shape[d], k))
        bad = heads.remainder(k) != 0
        if bool(bad.any()):
            first = int(heads[bad].reshape(-1)[0])
            raise ExecutionError(f"along dimension {d}, {first} starts a group of {k} but is no multiple of {k}", op)
    return [args.src]


@impl("tile.bitcast")
def _bitcast(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    return [args.src.contiguous().view(to_torch(result_dtype(op)))]


# ---------------------------------------------------------------------------------------------
# Random numbers: Triton's Philox-4x32-10 (triton/language/random.py), in uint64 numpy arithmetic

_PHILOX_KEY = (0x9E3779B9, 0xBB67AE85)
_PHILOX_ROUND = (0xD2511F53, 0xCD9E8D57)
_U32 = np.uint64(0xFFFFFFFF)


def philox(seed: np.ndarray, counter: np.ndarray, rounds: int = 10) -> list[np.ndarray]:
    """The four u32 outputs of Philox-4x32 at counters (counter, 0, 0, 0), keyed by the low and
    high words of the 64-bit `seed` (as uint64 arrays)."""
    k0, k1 = seed & _U32, (seed >> np.uint64(32)) & _U32
    c0, c1, c2, c3 = counter & _U32, *(np.zeros_like(counter),) * 3
    a, b = (np.uint64(r) for r in _PHILOX_ROUND)
    for _ in range(rounds):
        hi_b, hi_a = (b * c2) >> np.uint64(32), (a * c0) >> np.uint64(32)  # products fit in 64 bits
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, (b * c2) & _U32, hi_a ^ c3 ^ k1, (a * c0) & _U32
        k0, k1 = (k0 + np.uint64(_PHILOX_KEY[0])) & _U32, (k1 + np.uint64(_PHILOX_KEY[1])) & _U32
    return [c0, c1, c2, c3]


def uniform(word: np.ndarray) -> np.ndarray:
    """Triton's `uint_to_uniform_float`: the word as i32, folded to [0, 2^31), times 2^-31 in f32."""
    x = word.astype(np.uint32).view(np.int32)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def box_muller(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Triton's `pair_uniform_to_normal`, in f32 with the functions rounded once from f64."""
    u1 = np.maximum(np.float32(1.0e-7), u1)
    th = np.float32(6.283185307179586) * u2
    r = np.sqrt(np.float32(-2.0) * np.log(u1.astype(np.float64)).astype(np.float32)).astype(np.float32)
    return r * np.cos(th.astype(np.float64)).astype(np.float32), r * np.sin(th.astype(np.float64)).astype(np.float32)


@impl("tile.rand")
def _rand(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    offset = args.offset.to(torch.int64).numpy().astype(np.uint64)
    seed = np.broadcast_to(args.seed.to(torch.int64).numpy().astype(np.uint64), offset.shape)
    lanes = op.attr("lanes")
    words = philox(seed, offset // np.uint64(lanes))
    if op.attr("dist") == "uniform":
        values = [uniform(w) for w in words]
    else:
        n0, n1 = box_muller(uniform(words[0]), uniform(words[1]))
        n2, n3 = box_muller(uniform(words[2]), uniform(words[3]))
        values = [n0, n1, n2, n3]
    if lanes == 1:
        out = values[0]
    else:
        lane = offset % np.uint64(4)
        out = np.select([lane == i for i in range(3)], values[:3], values[3])
    return [torch.from_numpy(np.array(out, dtype=np.float32))]


# ---------------------------------------------------------------------------------------------
# Reductions


def _identity(kind: str, t: torch.dtype) -> float | int | bool:
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if t.is_floating_point:
        return -math.inf if kind == "max" else math.inf
    if t == torch.bool:
        return kind == "min"
    info = torch.iinfo(t)
    return info.min if kind == "max" else info.max


def _masked(args: Operands) -> tuple[Tensor, Tensor]:
    x = args.src
    mask = args.mask if args.mask is not None else torch.ones_like(x, dtype=torch.bool)
    return x, mask.expand(x.shape)


@impl("tile.reduce")
def _reduce(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    x, mask = _masked(args)
    kind, axis = op.attr("kind"), op.attr("axis")
    filled = torch.where(mask, x, torch.tensor(_identity(kind, x.dtype), dtype=x.dtype))
    if kind == "sum":
        acc = filled.double() if x.is_floating_point() else filled.long()
        out = acc.sum(axis)
    elif kind == "prod":
        acc = filled.double() if x.is_floating_point() else filled.long()
        out = acc.prod(axis)
    elif kind == "max":
        out = filled.amax(axis)
    else:
        out = filled.amin(axis)
    return [out.to(x.dtype)]


@impl("tile.argreduce")
def _argreduce(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    x, mask = _masked(args)
    kind, axis = op.attr("kind"), op.attr("axis")
    n = x.shape[axis]
    positions = torch.arange(n).reshape([n if d == axis else 1 for d in range(x.dim())]).expand(x.shape)
    if x.is_floating_point():
        nan = torch.isnan(x) & mask
        has_nan = nan.any(axis, keepdim=True)
    else:
        nan = torch.zeros_like(mask)
        has_nan = torch.zeros_like(mask.any(axis, keepdim=True))
    filled = torch.where(mask & ~nan, x, torch.tensor(_identity(kind, x.dtype), dtype=x.dtype))
    best = filled.amax(axis, keepdim=True) if kind == "max" else filled.amin(axis, keepdim=True)
    hit = torch.where(has_nan, nan, mask & (filled == best))
    big = torch.full_like(positions, n)
    index = torch.where(hit, positions, big).amin(axis)
    index = torch.where(index == n, torch.zeros_like(index), index)  # a fully masked row: index 0
    value = best.squeeze(axis)
    if x.is_floating_point():
        value = torch.where(has_nan.squeeze(axis), torch.tensor(math.nan, dtype=x.dtype), value)
    return [value, index.to(to_torch(result_dtype(op, 1)))]


@impl("tile.welford")
def _welford(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    x, mask = _masked(args)
    axis = op.attr("axis")
    xd = torch.where(mask, x.double(), torch.zeros((), dtype=torch.float64))  # masked-off elements take no part
    n = mask.double().sum(axis)
    mean = torch.where(n > 0, xd.sum(axis) / n.clamp(min=1), torch.zeros_like(n))
    dev = torch.where(mask, xd - mean.unsqueeze(axis), torch.zeros_like(xd))
    m2 = (dev * dev).sum(axis)
    # a row holding ±inf has no finite mean or spread: NaN for both, as Welford's updates give
    infinite = (torch.isinf(xd) & mask).any(axis)
    nan = torch.full_like(mean, math.nan)
    return [torch.where(infinite, nan, mean).float(), torch.where(infinite, nan, m2).float(), n.float()]


@impl("tile.welford_combine")
def _welford_combine(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    ma, m2a, na, mb, m2b, nb = (a.double() for a in args)
    n = na + nb
    frac = torch.where(n > 0, nb / torch.where(n > 0, n, torch.ones_like(n)), torch.zeros_like(n))
    delta = mb - ma
    mean = ma + delta * frac
    m2 = m2a + m2b + delta * delta * na * frac
    # a side with no elements contributes nothing; an infinite mean makes both NaN
    mean = torch.where(na == 0, mb, torch.where(nb == 0, ma, mean))
    m2 = torch.where(na == 0, m2b, torch.where(nb == 0, m2a, m2))
    infinite = torch.isinf(ma) | torch.isinf(mb)
    nan = torch.full_like(mean, math.nan)
    return [torch.where(infinite, nan, mean).float(), torch.where(infinite, nan, m2).float(), n.float()]


@impl("tile.softmax_reduce")
def _softmax_reduce(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    x, mask = _masked(args)
    axis = op.attr("axis")
    filled = torch.where(mask, x, torch.tensor(-math.inf, dtype=x.dtype))
    m = filled.amax(axis)
    shifted = filled.double() - m.double().unsqueeze(axis)
    e = torch.where(mask, torch.exp(shifted), torch.zeros_like(shifted))
    s = e.sum(axis)
    s = torch.where(torch.isneginf(m), torch.zeros_like(s), s)
    return [m.float(), s.float()]


def _scale(s: Tensor, m_from: Tensor, m_to: Tensor) -> Tensor:
    """s * exp(m_from - m_to), with a part whose maximum is -inf contributing 0."""
    factor = torch.exp(m_from.double() - m_to.double())
    return torch.where(torch.isneginf(m_from), torch.zeros_like(factor), s.double() * factor)


@impl("tile.softmax_combine")
def _softmax_combine(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    ma, sa, mb, sb = args
    m = torch.maximum(ma, mb)
    s = _scale(sa, ma, m) + _scale(sb, mb, m)
    return [m, s.float()]


@impl("tile.arg_combine")
def _arg_combine(op: Operation, args: Operands, ctx: Context) -> list[Any]:
    va, ia, vb, ib = args
    better = torch.gt if op.attr("kind") == "max" else torch.lt
    if va.is_floating_point():
        na, nb = torch.isnan(va), torch.isnan(vb)
    else:
        na = nb = torch.zeros_like(va, dtype=torch.bool)
    b_wins = (nb & ~na) | (~na & ~nb & better(vb, va)) | (((va == vb) | (na & nb)) & (ib < ia))
    return [torch.where(b_wins, vb, va), torch.where(b_wins, ib, ia)]


def run_pure(op: Operation, args: Operands | Sequence[Any], ctx: Context) -> list[Any]:
    fn = IMPLS.get(op.name)
    if fn is None:
        raise ExecutionError("has no interpreter semantics", op)
    try:
        return fn(op, args if isinstance(args, Operands) else Operands(op, args), ctx)
    except ExecutionError:
        raise
    except RuntimeError as e:  # torch refused (e.g. an op on a dtype it lacks)
        raise ExecutionError(f"failed: {e}", op) from None
