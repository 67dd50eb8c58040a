"""Symbolic integer expressions: block sizes in shapes, grid sizes, descriptor shapes.

An `IntExpr` is a plain `int` or an `Expr` tree over names. Names refer to a kernel's constexprs,
its scalar parameters (in launch metadata) or `num_sms`. Expressions fold as soon as their names are
bound, so a planned kernel's shapes are plain ints again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

BINARY_OPS = ("+", "-", "*", "//", "%")
FUNCTIONS = ("cdiv", "min", "max")


def next_pow2(v: int) -> int:
    """The smallest power of two at least `v` (1 for v <= 1)."""
    return 1 << (max(1, v) - 1).bit_length()


def pow2_floor(v: int) -> int:
    """The largest power of two at most `v` (1 for v <= 1)."""
    return 1 << (max(1, v).bit_length() - 1)


class Expr:
    """Base of symbolic integer expressions."""

    def __str__(self) -> str:
        return format_expr(self)


@dataclass(frozen=True)
class Sym(Expr):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class BinExpr(Expr):
    op: str
    lhs: IntExpr
    rhs: IntExpr

    def __post_init__(self) -> None:
        if self.op not in BINARY_OPS:
            raise ValueError(f"unknown operator '{self.op}' in an integer expression")

    def __str__(self) -> str:
        return format_expr(self)


@dataclass(frozen=True)
class CallExpr(Expr):
    fn: str
    args: tuple[IntExpr, ...]

    def __post_init__(self) -> None:
        if self.fn not in FUNCTIONS:
            raise ValueError(f"unknown function '{self.fn}' in an integer expression")
        if len(self.args) != 2:
            raise ValueError(f"'{self.fn}' takes two arguments, got {len(self.args)}")

    def __str__(self) -> str:
        return format_expr(self)


IntExpr = int | Expr


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _apply(op: str, a: int, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "//":
        return a // b
    if op == "%":
        return a % b
    if op == "cdiv":
        return cdiv(a, b)
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    raise ValueError(op)


def substitute(e: IntExpr, env: Mapping[str, int]) -> IntExpr:
    """Replace bound names by their values and fold what becomes constant."""
    if isinstance(e, int):
        return e
    if isinstance(e, Sym):
        return env.get(e.name, e)
    if isinstance(e, BinExpr):
        a, b = substitute(e.lhs, env), substitute(e.rhs, env)
        if isinstance(a, int) and isinstance(b, int):
            return _apply(e.op, a, b)
        return BinExpr(e.op, a, b)
    if isinstance(e, CallExpr):
        args = tuple(substitute(x, env) for x in e.args)
        if all(isinstance(x, int) for x in args):
            return _apply(e.fn, *args)  # type: ignore[arg-type]
        return CallExpr(e.fn, args)
    raise TypeError(f"not an integer expression: {e!r}")


def evaluate(e: IntExpr, env: Mapping[str, int]) -> int:
    """The value of `e`; every name must be bound."""
    v = substitute(e, env)
    if not isinstance(v, int):
        raise KeyError(f"unbound names in '{format_expr(v)}': {', '.join(sorted(free_symbols(v)))}")
    return v


def free_symbols(e: IntExpr) -> set[str]:
    if isinstance(e, int):
        return set()
    if isinstance(e, Sym):
        return {e.name}
    if isinstance(e, BinExpr):
        return free_symbols(e.lhs) | free_symbols(e.rhs)
    if isinstance(e, CallExpr):
        return set().union(*(free_symbols(a) for a in e.args))
    raise TypeError(f"not an integer expression: {e!r}")


_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "//": 2, "%": 2}


def format_expr(e: IntExpr, parent_prec: int = 0, right: bool = False) -> str:
    if isinstance(e, int):
        return str(e) if e >= 0 or parent_prec == 0 else f"({e})"
    if isinstance(e, Sym):
        return e.name
    if isinstance(e, CallExpr):
        return f"{e.fn}({', '.join(format_expr(a) for a in e.args)})"
    if isinstance(e, BinExpr):
        prec = _PRECEDENCE[e.op]
        text = f"{format_expr(e.lhs, prec)} {e.op} {format_expr(e.rhs, prec, right=True)}"
        if prec < parent_prec or (right and prec == parent_prec):
            return f"({text})"
        return text
    raise TypeError(f"not an integer expression: {e!r}")
