"""Inductor's sympy index expressions → integer tile arithmetic.

An index must be affine in the kernel's index variables (the range-tree variables `x0`, `x1`,
`r0_1`, ..., themselves `(xindex // d) % n` or `(rindex // d) % n`), its coefficients integers or
expressions of the graph's size symbols (a dimension Dynamo made dynamic):

    r0_1 + 8192*x0        →  x0 * 8192, broadcast to [XBLOCK, RBLOCK], + r0_1 broadcast
    r0_1 + 64*s0*x0       →  x0 * ks0 (a scalar size parameter the launch passes: 64*s0) + r0_1

Floor division and modulo of a non-negative affine sub-expression by a positive integer or size
are also accepted (C and floor semantics agree there), and so are gathered indices (the symbols
`indirect_indexing` returns, looked up like variables); `Identity(e)`, which Inductor wraps around
sub-expressions it wants kept apart (the offset of a `cat` input), is `e`. Anything else —
products of variables, unbacked or float symbols — is `Unsupported`. Terms that depend only on x
are summed first, so the row part of an offset is computed once outside the reduction loops.
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
# A scalar of the kernel's index dtype holding a size expression (a constant or a size parameter).
SizeValue = Callable[[sympy.Expr], TV]


@dataclass(frozen=True)
class AffineForm:
    """index = constant + sum(coefficient * term); a term is a variable or a div/mod of a
    sub-form; the constant and the coefficients are integers or expressions of size symbols."""

    constant: sympy.Expr
    terms: tuple[tuple[sympy.Expr, sympy.Expr], ...]

    @property
    def is_affine(self) -> bool:
        return all(isinstance(t, sympy.Symbol) for _, t in self.terms)

    def strides(self) -> tuple[tuple[str, int], ...]:
        """The integer coefficients of the variables (a symbolic one is no stride known when compiling)."""
        return tuple((str(t), int(c)) for c, t in self.terms if isinstance(t, sympy.Symbol) and c.is_Integer)


def is_size_symbol(sym: sympy.Symbol) -> bool:
    """A size symbol of the graph (a backed dynamic dimension, or one Inductor precomputed)."""
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    return symbol_is_type(sym, (SymT.SIZE, SymT.PRECOMPUTED_SIZE))


def _classify_symbol(sym: sympy.Symbol) -> str:
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    if symbol_is_type(sym, (SymT.TMP, SymT.INDIRECT)):
        return INDIRECT_INDEXING
    if symbol_is_type(sym, (SymT.UNBACKED_INT, SymT.FLOAT, SymT.UNBACKED_FLOAT)):
        return DYNAMIC_SHAPE
    return NON_AFFINE_INDEX


def _is_size(e: sympy.Expr) -> bool:
    """An integer, or an expression of size symbols only."""
    return all(is_size_symbol(s) for s in e.free_symbols)  # type: ignore[arg-type]


def affine_form(expr: sympy.Expr, is_var: Callable[[sympy.Symbol], bool]) -> AffineForm:
    """Splits `expr` into a constant and multiples of terms; raises UnsupportedError."""
    from torch.utils._sympy.functions import FloorDiv, Identity, ModularIndexing

    if expr.has(Identity):
        expr = expr.replace(Identity, lambda e: e)
    for sym in sorted(expr.free_symbols, key=str):
        if not is_var(sym) and not is_size_symbol(sym):  # type: ignore[arg-type]
            raise UnsupportedError(_classify_symbol(sym))  # type: ignore[arg-type]
    constant: sympy.Expr = sympy.Integer(0)
    coeffs: dict[sympy.Expr, sympy.Expr] = {}
    for part in sympy.Add.make_args(sympy.expand(expr, deep=False)):
        sizes: list[sympy.Expr] = []
        rest: list[sympy.Expr] = []
        for f in sympy.Mul.make_args(part):
            (sizes if _is_size(f) else rest).append(f)
        coeff = sympy.Mul(*sizes)
        if not coeff.is_Integer and not coeff.is_integer:
            raise UnsupportedError(NON_AFFINE_INDEX)  # a rational coefficient
        if not rest:
            constant += coeff
            continue
        if len(rest) != 1:
            raise UnsupportedError(NON_AFFINE_INDEX)  # a product of variables
        (term,) = rest
        if isinstance(term, sympy.Symbol):
            pass
        elif isinstance(term, FloorDiv):
            inner, div = term.args
            _check_nonnegative(affine_form(inner, is_var))
            _check_positive(div)
        elif isinstance(term, ModularIndexing):
            inner, div, mod = term.args
            _check_nonnegative(affine_form(inner, is_var))
            _check_positive(div)
            _check_positive(mod)
        else:
            raise UnsupportedError(NON_AFFINE_INDEX)
        coeffs[term] = coeffs.get(term, sympy.Integer(0)) + coeff
    terms = tuple(sorted(((c, t) for t, c in coeffs.items() if c != 0), key=lambda ct: str(ct[1])))
    return AffineForm(constant, terms)


def _check_positive(e: sympy.Expr) -> None:
    if not (_is_size(e) and e.is_positive):
        raise UnsupportedError(NON_AFFINE_INDEX)


def _check_nonnegative(form: AffineForm) -> None:
    if not form.constant.is_nonnegative or not all(c.is_nonnegative for c, _ in form.terms):
        raise UnsupportedError(NON_AFFINE_INDEX)


class IndexTranslator:
    """Emits the integer tile of an index expression, in the kernel's index dtype; `size` gives
    the scalar holding a size expression (a constant, or a parameter the launch passes)."""

    def __init__(self, lb: LogicalBuilder, lookup: VarLookup, size: SizeValue) -> None:
        self.lb = lb
        self.lookup = lookup
        self.size = size

    def is_var(self, sym: sympy.Symbol) -> bool:
        return self.lookup(sym) is not None

    def form(self, expr: sympy.Expr) -> AffineForm:
        return affine_form(sympy.sympify(expr), self.is_var)

    def __call__(self, expr: sympy.Expr, dtype: DType | None = None) -> TV:
        out = self.emit_form(self.form(expr))
        return self.lb.cast(out, dtype) if dtype is not None else out

    def emit_form(self, form: AffineForm) -> TV:
        lb = self.lb
        # x-only terms first, then the constant, then the terms that vary along r
        parts: list[tuple[sympy.Expr, TV | None]] = [(c, self.term(t)) for c, t in form.terms]
        parts.sort(key=lambda p: p[1] is not None and "r" in p[1].dims)
        if form.constant != 0:
            at = next((i for i, (_, t) in enumerate(parts) if t is not None and "r" in t.dims), len(parts))
            parts.insert(at, (form.constant, None))
        acc: TV | None = None
        for c, t in parts:
            negative = acc is not None and c.could_extract_minus_sign()
            scale = -c if negative else c
            if t is None:  # the constant
                term = self.size(scale)
            elif scale == 1:
                term = t
            else:
                term = lb.elementwise("tile.mul", [t, self.size(scale)], hint="idx")
            if acc is None:
                acc = term
            else:
                acc = lb.elementwise("tile.sub" if negative else "tile.add", [acc, term], hint="offs")
        return acc if acc is not None else lb.const(0, lb.index_dtype)

    def term(self, t: sympy.Expr) -> TV:
        from torch.utils._sympy.functions import FloorDiv, ModularIndexing

        lb = self.lb
        if isinstance(t, sympy.Symbol):
            v = self.lookup(t)
            assert v is not None
            return v
        inner = self.emit_form(self.form(t.args[0]))
        if isinstance(t, FloorDiv):
            return lb.elementwise("tile.div", [inner, self.size(t.args[1])], hint="idx")
        assert isinstance(t, ModularIndexing)
        div, mod = t.args[1], t.args[2]
        if div != 1:
            inner = lb.elementwise("tile.div", [inner, self.size(div)], hint="idx")
        return lb.elementwise("tile.rem", [inner, self.size(mod)], hint="idx")
