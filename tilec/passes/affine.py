"""Affine analysis of integer tiles: offsets as `c_0 * i_0 + c_1 * i_1 + sum(c_s * s) + c`, where
i_d is the position along dimension d of the tile and s are scalars (program ids, loop induction
variables, parameters). Enough to turn a 2-D load into a TMA box: its row stride, which program
id and loop variable move it, and where it starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilec.ir.core import BlockArg, Value, defining_op
from tilec.ir.dtypes import DType
from tilec.ir.ops import (
    ArangeOp,
    BinaryOp,
    BroadcastOp,
    ConvertLayoutOp,
    ExpandDimsOp,
    ForOp,
    ProgramIdOp,
)
from tilec.ir.types import TileType
from tilec.passes.rewrite import const_value

# A term is ("dim", d) for the position along tile dimension d, or ("val", id) for a scalar value.
Term = tuple[str, int]


@dataclass
class Affine:
    coeffs: dict[Term, int] = field(default_factory=dict)
    const: int = 0
    scalars: dict[int, Value] = field(default_factory=dict)  # id -> the scalar value of a ("val", id) term

    def coeff(self, term: Term) -> int:
        return self.coeffs.get(term, 0)

    def scaled(self, k: int) -> Affine:
        return Affine({t: c * k for t, c in self.coeffs.items() if c * k}, self.const * k, dict(self.scalars))

    def plus(self, other: Affine, sign: int = 1) -> Affine:
        coeffs = dict(self.coeffs)
        for t, c in other.coeffs.items():
            coeffs[t] = coeffs.get(t, 0) + sign * c
            if coeffs[t] == 0:
                del coeffs[t]
        return Affine(coeffs, self.const + sign * other.const, {**self.scalars, **other.scalars})

    def scalar_terms(self) -> dict[int, int]:
        return {t[1]: c for t, c in self.coeffs.items() if t[0] == "val"}

    def dims(self) -> dict[int, int]:
        return {t[1]: c for t, c in self.coeffs.items() if t[0] == "dim"}


def _scalar(v: Value) -> Affine:
    return Affine({("val", id(v)): 1}, 0, {id(v): v})


def affine(v: Value) -> Affine | None:
    """The affine form of an integer scalar or tile, or None when it is not affine."""
    c = const_value(v)
    if isinstance(c, int) and not isinstance(c, bool):
        return Affine({}, c)
    if isinstance(v, BlockArg):
        loop = v.block.parent_op
        if isinstance(loop, ForOp) and v.index == 0 and isinstance(v.type, DType):
            return _scalar(v)
        return _scalar(v) if isinstance(v.type, DType) and loop is None else None
    op = defining_op(v)
    if op is None:
        return None
    if isinstance(op, ProgramIdOp):
        return _scalar(v)
    if isinstance(op, ArangeOp):
        return Affine({("dim", 0): 1}, op.attr("start"))
    if isinstance(op, (BroadcastOp, ConvertLayoutOp)):
        return affine(op.src)
    if isinstance(op, ExpandDimsOp):
        src = affine(op.src)
        if src is None:
            return None
        axis = op.attr("axis")
        shifted = {}
        for t, k in src.coeffs.items():
            if t[0] == "dim" and t[1] >= axis:
                shifted[("dim", t[1] + 1)] = k
            else:
                shifted[t] = k
        return Affine(shifted, src.const, src.scalars)
    if isinstance(op, BinaryOp) and op.name in ("tile.add", "tile.sub", "tile.mul"):
        a, b = affine(op.lhs), affine(op.rhs)
        if a is None or b is None:
            return None
        if op.name == "tile.add":
            return a.plus(b)
        if op.name == "tile.sub":
            return a.plus(b, -1)
        if not b.coeffs:
            return a.scaled(b.const)
        if not a.coeffs:
            return b.scaled(a.const)
        return None
    if isinstance(v.type, DType) and v.type.is_int:
        return _scalar(v)  # another loop-invariant scalar (the analysis treats it as a symbol)
    if isinstance(v.type, TileType):
        return None
    return None


def local_stride(v: Value, dim: int) -> int | None:
    """How much an integer tile changes between neighbouring positions along tile dimension `dim`,
    within blocks aligned to the divisors it uses (constants, or scalar size parameters): `x % 2048`
    moves like `x`, `x // 2048` not at all. None where that is not known (a loaded or selected index). A heuristic for which
    dimension a load reads contiguously, not a proof: `x % c` wraps every c positions."""
    c = const_value(v)
    if isinstance(c, (int, float)) or isinstance(v.type, DType):
        return 0
    op = defining_op(v)
    if op is None:
        return None
    if isinstance(op, ArangeOp):
        return 1 if dim == 0 else 0
    if isinstance(op, (BroadcastOp, ConvertLayoutOp)) or op.name == "tile.cast":
        return local_stride(op.operands[0], dim)
    if isinstance(op, ExpandDimsOp):
        axis = op.attr("axis")
        if dim == axis:
            return 0
        return local_stride(op.src, dim - 1 if dim > axis else dim)
    if isinstance(op, BinaryOp) and op.name in ("tile.add", "tile.sub", "tile.mul", "tile.rem", "tile.div"):
        a = local_stride(op.lhs, dim)
        if op.name in ("tile.rem", "tile.div"):
            k = const_value(op.rhs)
            # a positive constant, or a scalar parameter (a size: positive)
            positive = (isinstance(k, int) and k >= 1) or (k is None and isinstance(op.rhs.type, DType))
            if not positive or a is None:
                return None
            return a if op.name == "tile.rem" or k == 1 else 0
        b = local_stride(op.rhs, dim)
        if a is None or b is None:
            return None
        if op.name == "tile.add":
            return a + b
        if op.name == "tile.sub":
            return a - b
        ka, kb = const_value(op.lhs), const_value(op.rhs)
        if isinstance(kb, int):
            return a * kb
        if isinstance(ka, int):
            return b * ka
        return 0 if a == 0 and b == 0 else None
    return None
