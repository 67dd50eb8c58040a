"""Inductor's sympy index expressions → integer tile arithmetic.

An index must be affine in the kernel's index variables (the range-tree variables `x0`, `x1`,
`r0_1`, ..., themselves `(xindex // d) % n` or `(rindex // d) % n`) with integer coefficients:

    r0_1 + 8192*x0        →  x0 * 8192, broadcast to [XBLOCK, RBLOCK], + r0_1 broadcast

Floor division and modulo of a non-negative affine sub-expression by a positive constant are
also accepted (C and floor semantics agree there), and so are gathered indices (the symbols
`indirect_indexing` returns, looked up like variables); `Identity(e)`, which Inductor wraps around
sub-expressions it wants kept apart (the offset of a `cat` input), is `e`. Anything else —
products of variables, symbolic sizes — is `Unsupported`. Terms that depend only on x are
summed first, so the row part of an offset is computed once outside the reduction loops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from tilec.frontend.logical import TV, LogicalBuilder
from tilec.frontend.reasons import (
    DYNAMIC_SHAPE,
    INDIRECT_INDEXING,
    NON_AFFINE_INDEX,
    UnsupportedError,
)
from tilec.ir.dtypes import DType

# A kernel variable: (tile value, "x" or "r").
VarLookup = Callable[[sympy.Symbol], TV | None]


@dataclass(frozen=True)
class AffineForm:
    """index = constant + sum(coefficient * term); a term is a variable or a div/mod of a sub-form."""

    constant: int
    terms: tuple[tuple[int, sympy.Expr], ...]

    @property
    def is_affine(self) -> bool:
        return all(isinstance(t, sympy.Symbol) for _, t in self.terms)

    def strides(self) -> tuple[tuple[str, int], ...]:
        return tuple((str(t), c) for c, t in self.terms if isinstance(t, sympy.Symbol))


def _classify_symbol(sym: sympy.Symbol) -> str:
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    if symbol_is_type(sym, (SymT.TMP, SymT.INDIRECT)):
        return INDIRECT_INDEXING
    if symbol_is_type(sym, (SymT.SIZE, SymT.PRECOMPUTED_SIZE, SymT.UNBACKED_INT, SymT.FLOAT, SymT.UNBACKED_FLOAT)):
        return DYNAMIC_SHAPE
    return NON_AFFINE_INDEX


def _int(e: sympy.Expr) -> int | None:
    if isinstance(e, sympy.Integer):
        return int(e)
    return None


def affine_form(expr: sympy.Expr, is_var: Callable[[sympy.Symbol], bool]) -> AffineForm:
    """Splits `expr` into a constant and integer multiples of terms; raises UnsupportedError."""
    from torch.utils._sympy.functions import FloorDiv, Identity, ModularIndexing

    if expr.has(Identity):
        expr = expr.replace(Identity, lambda e: e)
    for sym in sorted(expr.free_symbols, key=str):
        if not is_var(sym):  # type: ignore[arg-type]
            raise UnsupportedError(_classify_symbol(sym))  # type: ignore[arg-type]
    constant = 0
    terms: list[tuple[int, sympy.Expr]] = []
    for term, coeff in expr.as_coefficients_dict().items():
        c = _int(coeff)
        if c is None:
            raise UnsupportedError(NON_AFFINE_INDEX)
        if term == 1:
            constant += c
        elif isinstance(term, sympy.Symbol):
            terms.append((c, term))
        elif isinstance(term, FloorDiv):
            inner, div = term.args
            _check_nonnegative(affine_form(inner, is_var))
            if _int(div) is None or _int(div) <= 0:  # type: ignore[operator]
                raise UnsupportedError(NON_AFFINE_INDEX)
            terms.append((c, term))
        elif isinstance(term, ModularIndexing):
            inner, div, mod = term.args
            _check_nonnegative(affine_form(inner, is_var))
            if any(_int(a) is None or _int(a) <= 0 for a in (div, mod)):  # type: ignore[operator]
                raise UnsupportedError(NON_AFFINE_INDEX)
            terms.append((c, term))
        else:
            raise UnsupportedError(NON_AFFINE_INDEX)
    return AffineForm(constant, tuple(sorted(terms, key=lambda ct: str(ct[1]))))


def _check_nonnegative(form: AffineForm) -> None:
    if form.constant < 0 or any(c < 0 for c, _ in form.terms):
        raise UnsupportedError(NON_AFFINE_INDEX)


class IndexTranslator:
    """Emits the integer tile of an index expression, in the kernel's index dtype."""

    def __init__(self, lb: LogicalBuilder, lookup: VarLookup) -> None:
        self.lb = lb
        self.lookup = lookup

    def is_var(self, sym: sympy.Symbol) -> bool:
        return self.lookup(sym) is not None

    def form(self, expr: sympy.Expr) -> AffineForm:
        return affine_form(sympy.sympify(expr), self.is_var)

    def __call__(self, expr: sympy.Expr, dtype: DType | None = None) -> TV:
        out = self.emit_form(self.form(expr))
        return self.lb.cast(out, dtype) if dtype is not None else out

    def emit_form(self, form: AffineForm) -> TV:
        lb = self.lb
        idt = lb.index_dtype
        # x-only terms first, then the constant, then the terms that vary along r
        parts: list[tuple[int, TV | None]] = [(c, self.term(t)) for c, t in form.terms]
        parts.sort(key=lambda p: p[1] is not None and "r" in p[1].dims)
        if form.constant:
            at = next((i for i, (_, t) in enumerate(parts) if t is not None and "r" in t.dims), len(parts))
            parts.insert(at, (form.constant, None))
        acc: TV | None = None
        for c, t in parts:
            if t is None:  # the constant
                term = lb.const(c if acc is None else abs(c), idt)
            elif acc is None:
                term = t if c == 1 else lb.elementwise("tile.mul", [t, lb.const(c, idt)], hint="idx")
            else:
                term = t if abs(c) == 1 else lb.elementwise("tile.mul", [t, lb.const(abs(c), idt)], hint="idx")
            if acc is None:
                acc = term
            else:
                acc = lb.elementwise("tile.add" if c > 0 else "tile.sub", [acc, term], hint="offs")
        return acc if acc is not None else lb.const(0, idt)

    def term(self, t: sympy.Expr) -> TV:
        from torch.utils._sympy.functions import FloorDiv, ModularIndexing

        lb = self.lb
        if isinstance(t, sympy.Symbol):
            v = self.lookup(t)
            assert v is not None
            return v
        inner = self.emit_form(self.form(t.args[0]))
        if isinstance(t, FloorDiv):
            return lb.elementwise("tile.div", [inner, lb.const(int(t.args[1]), lb.index_dtype)], hint="idx")
        assert isinstance(t, ModularIndexing)
        div, mod = int(t.args[1]), int(t.args[2])
        if div != 1:
            inner = lb.elementwise("tile.div", [inner, lb.const(div, lb.index_dtype)], hint="idx")
        return lb.elementwise("tile.rem", [inner, lb.const(mod, lb.index_dtype)], hint="idx")
