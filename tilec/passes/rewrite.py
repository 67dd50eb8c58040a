"""Greedy pattern rewriting and the constant facts patterns need.

A pattern is a function `(op, rewriter) -> bool` registered for op classes; `apply_patterns`
offers every op to its patterns until nothing changes (xDSL's greedy walker, tinygrad's
PatternMatcher).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

from tilec.ir.builder import Builder
from tilec.ir.clone import clone_op
from tilec.ir.core import Block, Kernel, Module, Operation, Value, defining_op, replace_uses
from tilec.ir.dtypes import DType
from tilec.ir.expr import Expr
from tilec.ir.ops import BroadcastOp, ConstantOp, ForOp, FullOp
from tilec.ir.types import TileType

Pattern = Callable[[Operation, "Rewriter"], bool]


class Rewriter:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.changed = False

    def replace(self, op: Operation, values: Sequence[Value]) -> None:
        """Replaces `op`'s results by `values` and erases it."""
        for r, v in zip(op.results, values, strict=True):
            if v.name_hint is None:
                v.name_hint = r.name_hint  # a folded value keeps the name it had
            replace_uses(self.kernel.body, r, v)
        op.erase()
        self.changed = True

    def replace_value(self, old: Value, new: Value) -> None:
        replace_uses(self.kernel.body, old, new)
        self.changed = True

    def erase(self, op: Operation) -> None:
        op.erase()
        self.changed = True

    def before(self, op: Operation) -> Builder:
        self.changed = True
        return Builder.before(op)

    def inline(self, op: Operation, block: Block, arg_values: Sequence[Value]) -> None:
        """Replaces `op` by the ops of `block` (its arguments bound to `arg_values`); the block's
        yield gives the values that replace `op`'s results."""
        self.replace(op, inline_block(op, block, arg_values))


def inline_block(op: Operation, block: Block, arg_values: Sequence[Value]) -> list[Value]:
    """Moves `block`'s ops in front of `op` with its arguments bound; returns what it yielded."""
    for a, v in zip(block.args, arg_values, strict=True):
        replace_uses(block, a, v)
    term = block.terminator
    results = list(term.operands) if term is not None else []
    if term is not None:
        block.ops.remove(term)
    parent = op.parent
    assert parent is not None
    idx = parent.ops.index(op)
    for inner in list(block.ops):
        block.ops.remove(inner)
        parent.insert(idx, inner)
        idx += 1
    return results


def apply_patterns(module: Module, patterns: dict[type[Operation], list[Pattern]], max_iterations: int = 32) -> bool:
    """Applies patterns to every op until a fixpoint (or `max_iterations` sweeps). True if anything changed."""
    any_change = False
    for kernel in module.kernels:
        for _ in range(max_iterations):
            rw = Rewriter(kernel)
            for op in list(kernel.walk()):
                if op.parent is None or not _attached(op, kernel.body):
                    continue
                for cls in type(op).__mro__:
                    for pattern in patterns.get(cls, ()):  # type: ignore[arg-type]
                        if op.parent is not None and pattern(op, rw):
                            break
                    else:
                        continue
                    break
            any_change |= rw.changed
            if not rw.changed:
                break
    return any_change


def _attached(op: Operation, root: Block) -> bool:
    block = op.parent
    while block is not None:
        if block is root:
            return True
        owner = block.parent_op
        if owner is None or owner.parent is None:
            return False
        block = owner.parent
    return False


# ---------------------------------------------------------------------------------------------
# Constants


def const_value(v: Value) -> int | float | None:
    """The concrete value of a scalar constant, or of a tile whose elements are all one constant."""
    op = defining_op(v)
    if isinstance(op, (ConstantOp, FullOp)):
        val = op.attr("value")
        return None if isinstance(val, Expr) else val
    if isinstance(op, BroadcastOp):
        return const_value(op.src)
    return None


def same_value(a: Value, b: Value) -> bool:
    """The same value: one SSA value, or two constants (or tiles of one constant) equal."""
    return a is b or (const_value(a) is not None and const_value(a) == const_value(b))


def make_const(b: Builder, value: int | float, like: Value | DType, dtype: DType | None = None) -> Value:
    """A constant shaped like `like` (a scalar or a tile) with the given value."""
    t = like if isinstance(like, DType) else like.type
    if isinstance(t, TileType):
        dt = dtype or t.dtype
        return b.op("tile.full", type=t.with_(dtype=dt), value=_normalize(value, dt))
    scalar = dtype or t
    assert isinstance(scalar, DType)
    return b.op("tile.constant", type=scalar, value=_normalize(value, scalar))


def _normalize(value: int | float, dt: DType) -> int | float:
    return float(value) if dt.is_float else int(value)


def wrap_int(v: int, dt: DType) -> int:
    """Two's-complement wrap to the dtype's width (i1 is 0 or 1)."""
    if dt.is_bool:
        return v & 1
    bits = dt.bits
    v &= (1 << bits) - 1
    if dt.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def round_float(v: float, dt: DType) -> float:
    """Rounds a Python float to the dtype's precision (nearest even), or None-like NaN passthrough."""
    if math.isnan(v) or math.isinf(v) or dt.name == "f64":
        return v
    if dt.name == "f32":
        try:
            return struct.unpack("f", struct.pack("f", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    if dt.name == "f16":
        try:
            return struct.unpack("e", struct.pack("e", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    if dt.name == "bf16":
        f32 = round_float(v, DType("f32"))
        if math.isinf(f32):
            return f32
        bits = struct.unpack("I", struct.pack("f", f32))[0]
        bits += 0x7FFF + ((bits >> 16) & 1)
        bits &= 0xFFFF0000
        return struct.unpack("f", struct.pack("I", bits & 0xFFFFFFFF))[0]
    raise ValueError(f"no rounding for {dt}")


_INT_BINARY: dict[str, Callable[[int, int], int | None]] = {
    "tile.add": lambda a, b: a + b,
    "tile.sub": lambda a, b: a - b,
    "tile.mul": lambda a, b: a * b,
    "tile.div": lambda a, b: None if b == 0 else int(a / b) if abs(a) < 2**52 and abs(b) < 2**52 else None,
    "tile.rem": lambda a, b: None if b == 0 else int(math.fmod(a, b)) if abs(a) < 2**52 else None,
    "tile.maximum": max,
    "tile.minimum": min,
    "tile.and": lambda a, b: a & b,
    "tile.or": lambda a, b: a | b,
    "tile.xor": lambda a, b: a ^ b,
    "tile.shl": lambda a, b: a << b if 0 <= b < 64 else None,
    "tile.shr": lambda a, b: a >> b if 0 <= b < 64 else None,
}

_FLOAT_BINARY: dict[str, Callable[[float, float], float | None]] = {
    "tile.add": lambda a, b: a + b,
    "tile.sub": lambda a, b: a - b,
    "tile.mul": lambda a, b: a * b,
    "tile.div": lambda a, b: a / b if b != 0 else None,
    "tile.maximum": lambda a, b: math.nan if math.isnan(a) or math.isnan(b) else max(a, b),
    "tile.minimum": lambda a, b: math.nan if math.isnan(a) or math.isnan(b) else min(a, b),
}

_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
}


def fold_binary(name: str, a: int | float, b: int | float, dt: DType) -> int | float | None:
    """Folds a binary elementwise op on constants of dtype `dt`; None if it does not fold exactly."""
    if dt.is_int:
        fn = _INT_BINARY.get(name)
        r = fn(int(a), int(b)) if fn else None
        return wrap_int(r, dt) if r is not None else None
    if dt.name not in ("f32", "f64"):
        return None  # half precision arithmetic rounds per op; leave it to run time
    ffn = _FLOAT_BINARY.get(name)
    fr = ffn(float(a), float(b)) if ffn else None
    return round_float(fr, dt) if fr is not None else None


def fold_cmp(predicate: str, a: int | float, b: int | float) -> bool:
    return _CMP[predicate](a, b)


def backward_slice(block: Block, values: Sequence[Value]) -> list[Operation]:
    """The ops of `block` that `values` depend on (through ops of `block` only), in program order."""
    index = {id(op): i for i, op in enumerate(block.ops)}
    found: dict[int, Operation] = {}
    work = list(values)
    while work:
        op = defining_op(work.pop())
        if op is None or id(op) not in index or id(op) in found:
            continue
        found[id(op)] = op
        work.extend(op.operands)
    return sorted(found.values(), key=lambda op: index[id(op)])


def depends_on(v: Value, target: Value, seen: set[int] | None = None) -> bool:
    """Whether `v` is `target` or computed from it."""
    if v is target:
        return True
    op = defining_op(v)
    seen = set() if seen is None else seen
    if op is None or id(op) in seen:
        return False
    seen.add(id(op))
    return any(depends_on(o, target, seen) for o in op.operands)


def split_loop(kernel: Kernel, loop: ForOp, at: Value) -> ForOp:
    """Splits `loop` at `at` (a value defined before it): `loop` runs to `at`, the loop returned
    (a copy, right after it) from `at` on, carrying on from `loop`'s results; later uses read its
    results."""
    rest = clone_op(loop, {})
    assert isinstance(rest, ForOp)
    loop.upper = at
    rest.lower = at
    parent = loop.parent
    assert parent is not None
    parent.insert(parent.ops.index(loop) + 1, rest)
    old_results = list(loop.results)
    for old, new in zip(old_results, rest.results):
        replace_uses(kernel.body, old, new)
    rest.inits = old_results
    return rest
