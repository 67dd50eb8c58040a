"""Ops that compute in registers: program ids, constants, shapes, elementwise math, reductions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from tilec.ir.core import Attr, Operand, Operation, Optional, Value, Variadic
from tilec.ir.dtypes import DType, Type, f32, i1, i32, u32
from tilec.ir.expr import BinExpr, Expr
from tilec.ir.layouts import SliceLayout
from tilec.ir.ops.common import (
    check_dtype_class,
    check_dtypes_equal,
    check_mask,
    check_results,
    common_tile,
    elem_dtype,
    reduced_type,
    tile_or_scalar,
)
from tilec.ir.types import TileType, numel

PURE = frozenset({"pure"})

# ---------------------------------------------------------------------------------------------
# Program ids and constants


class ProgramIdOp(Operation):
    """The index of this program along a grid axis."""

    name = "tile.program_id"
    attrs = {"axis": Attr("int", required=False, default=0)}
    num_results = 1
    traits = PURE

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type]:
        return [i32]

    def verify_(self) -> None:
        if self.attr("axis") not in (0, 1, 2):
            raise self.error("axis must be 0, 1 or 2")
        check_results(self, [i32])


class NumProgramsOp(ProgramIdOp):
    """The number of programs along a grid axis."""

    name = "tile.num_programs"


class ConstantOp(Operation):
    """A scalar constant. Integer constants may name a constexpr (`value = RBLOCK`)."""

    name = "tile.constant"
    attrs = {"value": Attr("symnumber")}
    num_results = 1
    traits = PURE

    def verify_(self) -> None:
        if len(self.results) != 1 or not isinstance(self.result.type, DType):
            raise self.error("must have one scalar result")
        v = self.attributes["value"]
        dt = self.result.type
        if isinstance(v, Expr) and not dt.is_int:
            raise self.error("a symbolic value needs an integer result type")
        if isinstance(v, float) and not dt.is_float:
            raise self.error(f"a float value needs a float result type, got {dt}")
        if dt.is_float and isinstance(v, int):
            self.attributes["value"] = float(v)
        if dt.is_bool and v not in (0, 1):
            raise self.error("an i1 constant must be 0 or 1")


# ---------------------------------------------------------------------------------------------
# Shapes and layouts


class ArangeOp(Operation):
    """The integers start, start+1, ..., end-1 as a 1-D i32 tile."""

    name = "tile.arange"
    attrs = {"start": Attr("symint", required=False, default=0), "end": Attr("symint")}
    num_results = 1
    traits = PURE

    def verify_(self) -> None:
        t = self.result.type
        if not isinstance(t, TileType) or t.rank != 1 or t.dtype != i32:
            raise self.error("result must be a 1-D i32 tile")
        start, end = self.attr("start"), self.attr("end")
        if not isinstance(start, int):
            raise self.error("start must be an integer")
        length = end if start == 0 else (end - start if isinstance(end, int) else BinExpr("-", end, start))
        if isinstance(length, int) and length < 1:
            raise self.error("end must be greater than start")
        if t.shape[0] != length:
            raise self.error(f"result has {t.shape[0]} elements, the range has {length}")


class FullOp(Operation):
    """A tile with every element equal to `value`."""

    name = "tile.full"
    attrs = {"value": Attr("number")}
    num_results = 1
    traits = PURE

    def verify_(self) -> None:
        t = self.result.type
        if not isinstance(t, TileType):
            raise self.error("result must be a tile")
        v = self.attributes["value"]
        if isinstance(v, float) and not t.dtype.is_float:
            raise self.error(f"a float value needs a float dtype, got {t.dtype}")
        if t.dtype.is_float and isinstance(v, int):
            self.attributes["value"] = float(v)


class BroadcastOp(Operation):
    """Broadcasts a scalar, or a tile's size-1 dimensions, to the result shape."""

    name = "tile.broadcast"
    src = Operand()
    num_results = 1
    traits = PURE

    def verify_(self) -> None:
        src, dst = self.src.type, self.result.type
        if not isinstance(dst, TileType):
            raise self.error("result must be a tile")
        if elem_dtype(src) != dst.dtype:
            raise self.error("result dtype must match the operand")
        if isinstance(src, TileType):
            if src.rank != dst.rank:
                raise self.error(f"cannot broadcast rank {src.rank} to rank {dst.rank}")
            for a, b in zip(src.shape, dst.shape):
                if a != b and a != 1:
                    raise self.error(f"cannot broadcast dimension {a} to {b}")
            if src.layout != dst.layout:
                raise self.error("keeps the layout of its operand")


class ExpandDimsOp(Operation):
    """Inserts a size-1 dimension at `axis`; a slice layout along `axis` becomes its parent."""

    name = "tile.expand_dims"
    src = Operand()
    attrs = {"axis": Attr("int")}
    num_results = 1
    traits = PURE

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        t = operands[0].type
        axis = attributes["axis"]
        if isinstance(t, DType):
            return [TileType((1,), t)]
        if not isinstance(t, TileType):
            return None
        layout = t.layout
        if isinstance(layout, SliceLayout):
            layout = layout.parent
        return [TileType(t.shape[:axis] + (1,) + t.shape[axis:], t.dtype, layout)]

    def verify_(self) -> None:
        t = self.src.type
        axis = self.attr("axis")
        if isinstance(t, TileType):
            if not 0 <= axis <= t.rank:
                raise self.error(f"axis {axis} out of range for rank {t.rank}")
            if t.layout is not None and not (isinstance(t.layout, SliceLayout) and t.layout.dim == axis):
                raise self.error(f"operand layout must be a slice along axis {axis}")
        elif not isinstance(t, DType) or axis != 0:
            raise self.error("takes a tile, or a scalar with axis 0")
        if isinstance(t, DType):
            res = self.result.type
            if not (isinstance(res, TileType) and res.shape == (1,) and res.dtype == t):
                raise self.error("of a scalar gives a tile of shape [1]")
            return
        inferred = self.infer(self.operands, self.attributes)
        assert inferred is not None
        check_results(self, inferred)


class ReshapeOp(Operation):
    """Same elements, another shape (row-major order)."""

    name = "tile.reshape"
    src = Operand()
    num_results = 1
    traits = PURE

    def verify_(self) -> None:
        src, dst = self.src.type, self.result.type
        if not isinstance(src, TileType) or not isinstance(dst, TileType):
            raise self.error("takes and returns tiles")
        if src.dtype != dst.dtype:
            raise self.error("keeps the dtype")
        a, b = numel(src.shape), numel(dst.shape)
        if isinstance(a, int) and isinstance(b, int) and a != b:
            raise self.error(f"cannot reshape {a} elements into {b}")


class ConvertLayoutOp(Operation):
    """Same tile in another distributed layout."""

    name = "tile.convert_layout"
    src = Operand()
    num_results = 1
    traits = PURE

    def verify_(self) -> None:
        src, dst = self.src.type, self.result.type
        if not isinstance(src, TileType) or not isinstance(dst, TileType):
            raise self.error("takes and returns tiles")
        if src.shape != dst.shape or src.dtype != dst.dtype:
            raise self.error("keeps shape and dtype")


# ---------------------------------------------------------------------------------------------
# Elementwise math


class ElementwiseOp(Operation):
    """Elementwise over scalars and tiles of one shape and layout; scalars are splatted."""

    arity: ClassVar[int] = 1
    operand_class: ClassVar[str] = "numeric"  # see check_dtype_class
    num_results = 1
    traits = PURE

    @classmethod
    def result_dtype(cls, dtype: DType, attributes: dict[str, Any]) -> DType:
        return dtype

    @property
    def operand_dtype(self) -> DType:
        """The element dtype all operands share (the verifier checks that they do)."""
        dt = elem_dtype(self.operands[0].type)
        assert dt is not None
        return dt

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        shaped = next((v.type for v in operands if isinstance(v.type, TileType)), None)
        dt = elem_dtype(operands[-1].type)
        if dt is None:
            return None
        out = cls.result_dtype(dt, attributes)
        return [tile_or_scalar(shaped, out) if shaped is not None else out]

    def verify_(self) -> None:
        common_tile(self, self.operands)
        dt = check_dtypes_equal(self, self.operands)
        check_dtype_class(self, dt, self.operand_class)
        inferred = self.infer(self.operands, self.attributes)
        assert inferred is not None
        check_results(self, inferred)


class UnaryOp(ElementwiseOp):
    """An elementwise op of one operand."""

    arity = 1
    x = Operand()


class BinaryOp(ElementwiseOp):
    """An elementwise op of two operands."""

    arity = 2
    lhs = Operand()
    rhs = Operand()


class TernaryOp(ElementwiseOp):
    """An elementwise op of three operands (fma: a * b + c)."""

    arity = 3
    a = Operand()
    b = Operand()
    c = Operand()


ARITY_BASES: dict[int, type[ElementwiseOp]] = {1: UnaryOp, 2: BinaryOp, 3: TernaryOp}


def _elementwise(op_name: str, arity: int, operand_class: str, doc: str) -> type[ElementwiseOp]:
    cls_name = "".join(p.capitalize() for p in op_name.split(".")[1].split("_")) + "Op"
    namespace = {"name": op_name, "operand_class": operand_class, "__doc__": doc}
    return type(cls_name, (ARITY_BASES[arity],), namespace)


# (name, arity, operands, meaning) — the interpreter and docs/ir.md give the exact semantics.
ELEMENTWISE_TABLE: tuple[tuple[str, int, str, str], ...] = (
    ("tile.add", 2, "numeric", "a + b"),
    ("tile.sub", 2, "numeric", "a - b"),
    ("tile.mul", 2, "numeric", "a * b"),
    ("tile.div", 2, "numeric", "a / b (integers: truncating)"),
    ("tile.rem", 2, "numeric", "remainder with the sign of a (floats: fmod)"),
    ("tile.maximum", 2, "numeric", "larger of a and b; NaN if either is NaN"),
    ("tile.minimum", 2, "numeric", "smaller of a and b; NaN if either is NaN"),
    ("tile.pow", 2, "float", "a ** b"),
    ("tile.and", 2, "intbool", "bitwise and"),
    ("tile.or", 2, "intbool", "bitwise or"),
    ("tile.xor", 2, "intbool", "bitwise xor"),
    ("tile.shl", 2, "int", "a << b"),
    ("tile.shr", 2, "int", "a >> b (arithmetic for signed)"),
    ("tile.neg", 1, "numeric", "-a"),
    ("tile.abs", 1, "numeric", "|a|"),
    ("tile.not", 1, "intbool", "bitwise not"),
    ("tile.exp", 1, "float", "e ** a"),
    ("tile.exp2", 1, "float", "2 ** a"),
    ("tile.log", 1, "float", "natural logarithm"),
    ("tile.log2", 1, "float", "base-2 logarithm"),
    ("tile.sqrt", 1, "float", "square root"),
    ("tile.rsqrt", 1, "float", "1 / sqrt(a)"),
    ("tile.sin", 1, "float", "sine"),
    ("tile.cos", 1, "float", "cosine"),
    ("tile.tanh", 1, "float", "hyperbolic tangent"),
    ("tile.erf", 1, "float", "error function"),
    ("tile.sigmoid", 1, "float", "1 / (1 + e ** -a)"),
    ("tile.floor", 1, "float", "round down"),
    ("tile.ceil", 1, "float", "round up"),
    ("tile.fma", 3, "float", "a * b + c"),
)

ELEMENTWISE_OPS: dict[str, type[ElementwiseOp]] = {
    name: _elementwise(name, arity, cls, doc) for name, arity, cls, doc in ELEMENTWISE_TABLE
}

CMP_PREDICATES = ("lt", "le", "gt", "ge", "eq", "ne")


class CmpOp(BinaryOp):
    """Compares a and b elementwise; i1 results. Any comparison with NaN is false except `ne`."""

    name = "tile.cmp"
    operand_class = "any"
    attrs = {"predicate": Attr("choice", choices=CMP_PREDICATES)}

    @classmethod
    def result_dtype(cls, dtype: DType, attributes: dict[str, Any]) -> DType:
        return i1


class WhereOp(Operation):
    """cond ? a : b, elementwise."""

    name = "tile.where"
    cond = Operand()
    true_value = Operand()
    false_value = Operand()
    num_results = 1
    traits = PURE

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        shaped = next((v.type for v in operands if isinstance(v.type, TileType)), None)
        dt = elem_dtype(operands[1].type)
        if dt is None:
            return None
        return [tile_or_scalar(shaped, dt) if shaped is not None else dt]

    def verify_(self) -> None:
        common_tile(self, self.operands)
        if elem_dtype(self.cond.type) != i1:
            raise self.error("condition must have dtype i1")
        check_dtypes_equal(self, [self.true_value, self.false_value])
        inferred = self.infer(self.operands, self.attributes)
        assert inferred is not None
        check_results(self, inferred)


class AssumeMultipleOp(Operation):
    """`src` unchanged, with a promise for the code generator: along each dimension d, the
    elements at positions that are multiples of `divisors[d]` are multiples of it (offsets that
    step by 1 from an aligned start: each group of `divisors[d]` neighbours is one aligned vector
    access). The interpreter checks the promise."""

    name = "tile.assume_multiple"
    src = Operand()
    attrs = {"divisors": Attr("ints")}
    num_results = 1
    traits = PURE

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        return [operands[0].type]

    def verify_(self) -> None:
        t = self.src.type
        dt = elem_dtype(t)
        if dt is None or not dt.is_int or dt.is_bool:
            raise self.error("takes integers")
        divisors = self.attr("divisors")
        rank = t.rank if isinstance(t, TileType) else 1
        if len(divisors) != rank or any(d < 1 for d in divisors):
            raise self.error(f"needs one positive divisor per dimension ({rank})")
        check_results(self, [t])


class CastOp(Operation):
    """Converts to the result dtype: floats round to nearest even, float to int truncates."""

    name = "tile.cast"
    src = Operand()
    num_results = 1
    traits = PURE

    def verify_(self) -> None:
        src, dst = self.src.type, self.result.type
        if elem_dtype(src) is None or elem_dtype(dst) is None:
            raise self.error("takes and returns scalars or tiles")
        if isinstance(src, TileType) != isinstance(dst, TileType):
            raise self.error("keeps scalars scalar and tiles tiles")
        if (
            isinstance(src, TileType)
            and isinstance(dst, TileType)
            and (src.shape != dst.shape or src.layout != dst.layout)
        ):
            raise self.error("keeps shape and layout")


class BitcastOp(CastOp):
    """Reinterprets the bits as the result dtype (same width)."""

    name = "tile.bitcast"

    def verify_(self) -> None:
        super().verify_()
        a, b = elem_dtype(self.src.type), elem_dtype(self.result.type)
        assert a is not None and b is not None
        if a.bits != b.bits:
            raise self.error(f"needs dtypes of one width, got {a} and {b}")


RAND_DISTS = ("uniform", "normal")


class RandOp(Operation):
    """Philox-4x32-10 random numbers keyed by `seed` (an integer: its low and high 32 bits) at
    u32 counters `offset`, f32: Triton's `tl.rand` (uniform in [0, 1)) and `tl.randn` (normal,
    Box-Muller), the stream Inductor's `rand`/`randn` draw from. `lanes = 1`: the first of
    Philox's four outputs at counter `offset` (Box-Muller of the first two). `lanes = 4`: output
    `offset % 4` at counter `offset // 4` (Box-Muller of outputs 0, 1 and of 2, 3): the stream of
    Inductor's `rand4x`, which spends every output of one counter on four consecutive offsets."""

    name = "tile.rand"
    seed = Operand()
    offset = Operand()
    attrs = {
        "dist": Attr("choice", choices=RAND_DISTS),
        "lanes": Attr("int", required=False, default=1),
    }
    num_results = 1
    traits = PURE

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        return [tile_or_scalar(operands[1].type, f32)] if elem_dtype(operands[1].type) is not None else None

    def verify_(self) -> None:
        common_tile(self, self.operands)
        seed = elem_dtype(self.seed.type)
        if seed is None or not seed.is_int or seed.is_bool:
            raise self.error(f"seed must be an integer, got {seed}")
        if elem_dtype(self.offset.type) != u32:
            raise self.error(f"offset must have dtype u32, got {elem_dtype(self.offset.type)}")
        if self.attr("lanes") not in (1, 4):
            raise self.error("lanes must be 1 or 4")
        inferred = self.infer(self.operands, self.attributes)
        assert inferred is not None
        check_results(self, inferred)


# ---------------------------------------------------------------------------------------------
# Reductions

REDUCE_KINDS = ("sum", "max", "min", "prod")


class ReductionOp(Operation):
    """Base: reduces `src` along `axis`; an optional i1 `mask` leaves elements out."""

    src = Operand()
    mask = Optional()
    traits = PURE
    result_count: ClassVar[int] = 1

    def reduced(self) -> Type:
        t = self.src.type
        assert isinstance(t, TileType)
        return reduced_type(t, self.attr("axis"))

    def verify_reduction(self) -> TileType:
        t = self.src.type
        if not isinstance(t, TileType):
            raise self.error("takes a tile")
        axis = self.attr("axis")
        if not 0 <= axis < t.rank:
            raise self.error(f"axis {axis} out of range for rank {t.rank}")
        if self.mask is not None:
            check_mask(self, self.mask, t)
        if len(self.results) != self.result_count:
            raise self.error(f"has {self.result_count} results")
        return t


class ReduceOp(ReductionOp):
    """sum, max, min or prod along `axis`. max and min propagate NaN. A fully masked row gives
    the identity (0, -inf, +inf, 1)."""

    name = "tile.reduce"
    attrs = {"kind": Attr("choice", choices=REDUCE_KINDS), "axis": Attr("int")}
    num_results = 1

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        t = operands[0].type
        return [reduced_type(t, attributes["axis"])] if isinstance(t, TileType) else None

    def verify_(self) -> None:
        t = self.verify_reduction()
        check_dtype_class(self, t.dtype, "numeric")
        check_results(self, [self.reduced()])


class ArgReduceOp(ReductionOp):
    """The largest (kind max) or smallest (kind min) value along `axis` and its first index.
    NaN counts as larger than everything for max and smaller than everything for min (as torch)."""

    name = "tile.argreduce"
    attrs = {"kind": Attr("choice", choices=("max", "min")), "axis": Attr("int")}
    num_results = 2
    result_count = 2

    def verify_(self) -> None:
        t = self.verify_reduction()
        check_dtype_class(self, t.dtype, "numeric")
        idx = elem_dtype(self.results[1].type)
        if idx is None or not idx.is_int or idx.is_bool:
            raise self.error("index result must be an integer")
        check_results(self, [self.reduced(), reduced_type(t, self.attr("axis"), idx)])


class WelfordOp(ReductionOp):
    """Mean, sum of squared deviations (m2) and count along `axis`, all f32."""

    name = "tile.welford"
    attrs = {"axis": Attr("int")}
    num_results = 3
    result_count = 3

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        t = operands[0].type
        return [reduced_type(t, attributes["axis"], f32)] * 3 if isinstance(t, TileType) else None

    def verify_(self) -> None:
        t = self.verify_reduction()
        if t.dtype != f32:
            raise self.error(f"takes f32, got {t.dtype}")
        check_results(self, [reduced_type(t, self.attr("axis"), f32)] * 3)


class SoftmaxReduceOp(ReductionOp):
    """The maximum m along `axis` and sum(exp(x - m)), f32. A fully masked row gives (-inf, 0)."""

    name = "tile.softmax_reduce"
    attrs = {"axis": Attr("int")}
    num_results = 2
    result_count = 2

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        t = operands[0].type
        return [reduced_type(t, attributes["axis"], f32)] * 2 if isinstance(t, TileType) else None

    def verify_(self) -> None:
        t = self.verify_reduction()
        if t.dtype != f32:
            raise self.error(f"takes f32, got {t.dtype}")
        check_results(self, [reduced_type(t, self.attr("axis"), f32)] * 2)


class CombineOp(Operation):
    """Base of the elementwise combines of two partial reductions (`partials`: a's parts, then b's)."""

    partials = Variadic()
    parts: ClassVar[int] = 2
    traits = PURE

    def verify_(self) -> None:
        if len(self.operands) != 2 * self.parts:
            raise self.error(f"takes two partials of {self.parts} values, got {len(self.operands)} values")
        common_tile(self, self.operands)
        types = [v.type for v in self.operands]
        if types[: self.parts] != types[self.parts :]:
            raise self.error("combines two partials of the same types")
        check_results(self, types[: self.parts])


class WelfordCombineOp(CombineOp):
    """Chan's parallel combination of (mean, m2, count) partials."""

    name = "tile.welford_combine"
    num_results = 3
    parts = 3


class SoftmaxCombineOp(CombineOp):
    """m = max(m_a, m_b); s = s_a * exp(m_a - m) + s_b * exp(m_b - m), a part with m = -inf adds 0."""

    name = "tile.softmax_combine"
    num_results = 2
    parts = 2


class ArgCombineOp(CombineOp):
    """Picks (value, index) from a or b as argreduce would; ties take the smaller index."""

    name = "tile.arg_combine"
    attrs = {"kind": Attr("choice", choices=("max", "min"))}
    num_results = 2
    parts = 2
