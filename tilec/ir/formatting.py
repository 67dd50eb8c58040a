"""The text form of attribute values, layouts and types: what the printer writes, and what
messages (the verifier's, ops' own checks) quote. Knows no ops, so the IR core can use it.
"""

from __future__ import annotations

import math
from typing import Any

from tilec.ir.dtypes import DType, Type
from tilec.ir.expr import Expr, IntExpr, format_expr
from tilec.ir.layouts import (
    BlockedLayout,
    Layout,
    NVMMASharedLayout,
    SliceLayout,
    SwizzledSharedLayout,
)
from tilec.ir.types import MBarrierType, PointerType, SharedBufferType, TensorDescType, TileType


def format_float(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def format_attr(v: Any, aliases: dict[Layout, str] | None = None) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, (int, Expr)):
        return format_expr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, DType):
        return v.name
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_attr(x, aliases) for x in v) + "]"
    if isinstance(v, Layout):
        return format_layout(v, aliases)
    if isinstance(v, Type):
        return format_type(v, aliases)
    raise TypeError(f"cannot print attribute value {v!r}")


def layout_fields(layout: Layout) -> list[tuple[str, Any]]:
    """The fields printed for a layout literal (defaults of optional fields left out)."""
    if isinstance(layout, BlockedLayout):
        return [
            ("size_per_thread", list(layout.size_per_thread)),
            ("threads_per_warp", list(layout.threads_per_warp)),
            ("warps_per_cta", list(layout.warps_per_cta)),
            ("order", list(layout.order)),
        ] + _cga(layout.cga_layout)
    if isinstance(layout, SliceLayout):
        return [("dim", layout.dim), ("parent", layout.parent)]
    if isinstance(layout, NVMMASharedLayout):
        out: list[tuple[str, Any]] = [
            ("swizzle_byte_width", layout.swizzle_byte_width),
            ("element_bitwidth", layout.element_bitwidth),
            ("rank", layout.rank),
        ]
        if layout.transposed:
            out.append(("transposed", True))
        if layout.fp4_padded:
            out.append(("fp4_padded", True))
        return out
    if isinstance(layout, SwizzledSharedLayout):
        return [
            ("vec", layout.vec),
            ("per_phase", layout.per_phase),
            ("max_phase", layout.max_phase),
            ("order", list(layout.order)),
        ] + _cga(layout.cga_layout)
    raise TypeError(f"unknown layout {layout!r}")


def _cga(bases: tuple[tuple[int, ...], ...]) -> list[tuple[str, Any]]:
    """A cluster's CTA tiling, printed only where there is one."""
    return [("cga_layout", [list(b) for b in bases])] if bases else []


def format_layout(layout: Layout, aliases: dict[Layout, str] | None = None) -> str:
    if aliases and layout in aliases:
        return aliases[layout]
    body = ", ".join(f"{k} = {format_attr(v, aliases)}" for k, v in layout_fields(layout))
    return f"#{layout.kind}<{body}>"


def _shape(shape: tuple[IntExpr, ...]) -> str:
    return "[" + ", ".join(format_expr(d) for d in shape) + "]"


def format_type(t: Type, aliases: dict[Layout, str] | None = None) -> str:
    if isinstance(t, DType):
        return t.name
    if isinstance(t, PointerType):
        return f"ptr<{t.pointee}>"
    if isinstance(t, TileType):
        layout = f", {format_layout(t.layout, aliases)}" if t.layout is not None else ""
        return f"tile<{_shape(t.shape)}, {t.dtype}{layout}>"
    if isinstance(t, SharedBufferType):
        slots = f", slots = {t.slots}" if t.slots is not None else ""
        return f"smem<{_shape(t.shape)}, {t.dtype}, {format_layout(t.layout, aliases)}{slots}>"
    if isinstance(t, MBarrierType):
        return f"mbarrier<{t.count}>"
    if isinstance(t, TensorDescType):
        return f"tensordesc<{_shape(t.block_shape)}, {t.dtype}, {format_layout(t.layout, aliases)}>"
    raise TypeError(f"cannot print type {t!r}")
