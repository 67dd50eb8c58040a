"""Helpers shared by the op definitions: reading value types and checking them."""

from __future__ import annotations

from collections.abc import Sequence

from tilec.ir.core import Operation, Value
from tilec.ir.dtypes import DType, Type, i1
from tilec.ir.formatting import format_type
from tilec.ir.layouts import DistributedLayout, SliceLayout
from tilec.ir.types import Shape, TileType


def elem_dtype(t: Type) -> DType | None:
    """The element dtype of a scalar or tile type; None for other types."""
    if isinstance(t, DType):
        return t
    if isinstance(t, TileType):
        return t.dtype
    return None


def tile_or_scalar(t: Type, dtype: DType) -> Type:
    """A type shaped like `t` (tile or scalar) with element dtype `dtype`."""
    return t.with_(dtype=dtype) if isinstance(t, TileType) else dtype


def reduced_type(t: TileType, axis: int, dtype: DType | None = None) -> Type:
    """The type of reducing `t` along `axis`: the axis goes, the layout becomes a slice."""
    dt = dtype or t.dtype
    if t.rank == 1:
        return dt
    layout: DistributedLayout | None = SliceLayout(axis, t.layout) if t.layout is not None else None
    shape: Shape = t.shape[:axis] + t.shape[axis + 1 :]
    return TileType(shape, dt, layout)


def common_tile(op: Operation, values: Sequence[Value]) -> TileType | None:
    """The tile type all tile operands share (shape and layout), or None if all are scalars.

    Scalars mixed with tiles are splatted; tiles must agree exactly (broadcasts are explicit)."""
    tile: TileType | None = None
    for v in values:
        t = v.type
        if isinstance(t, TileType):
            if tile is None:
                tile = t
            elif t.shape != tile.shape:
                raise op.error(f"operands have different shapes {_shape(tile.shape)} and {_shape(t.shape)}")
            elif t.layout != tile.layout:
                raise op.error("operands have different layouts")
        elif not isinstance(t, DType):
            raise op.error(f"takes scalars or tiles, got {t}")
    return tile


def _shape(shape: Shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def check_dtypes_equal(op: Operation, values: Sequence[Value]) -> DType:
    dts = [elem_dtype(v.type) for v in values]
    first = dts[0]
    assert first is not None
    for d in dts[1:]:
        if d != first:
            raise op.error(f"operands have different dtypes {first} and {d}")
    return first


def check_dtype_class(op: Operation, dtype: DType, cls: str) -> None:
    ok = {
        "any": True,
        "float": dtype.is_float,
        "int": dtype.is_int and not dtype.is_bool,
        "intbool": dtype.is_int,
        "numeric": not dtype.is_bool,
    }[cls]
    if not ok:
        names = {"float": "floats", "int": "integers", "intbool": "integers or i1", "numeric": "numbers"}
        raise op.error(f"takes {names[cls]}, got {dtype}")


def check_results(op: Operation, expected: Sequence[Type]) -> None:
    got = [r.type for r in op.results]
    if len(got) != len(expected):
        raise op.error(f"has {len(got)} results, expected {len(expected)}")
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            raise op.error(f"result {i} has type {format_type(g)}, expected {format_type(e)}")


def check_int_scalar(op: Operation, v: Value, what: str) -> None:
    if not (isinstance(v.type, DType) and v.type.is_int and not v.type.is_bool):
        raise op.error(f"{what} must be an integer scalar, got {_fmt(v.type)}")


def check_mask(op: Operation, mask: Value, shape_of: Type) -> None:
    mt = mask.type
    if elem_dtype(mt) != i1:
        raise op.error(f"mask must have dtype i1, got {_fmt(mt)}")
    if isinstance(shape_of, TileType):
        if isinstance(mt, TileType) and (mt.shape != shape_of.shape or mt.layout != shape_of.layout):
            raise op.error("mask must have the shape and layout of the value it masks")
    elif isinstance(mt, TileType):
        raise op.error("a scalar access takes a scalar mask")


def _fmt(t: Type) -> str:
    return format_type(t)
