"""Hypothesis strategies for random, well-typed tile IR kernels (built with the Builder, so every
program is valid by construction — a verifier failure on one is a bug)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tilec.ir import Builder, DType, Kernel, Module, PointerType, TileType, Value, bf16, f32, i1, i32
from tilec.ir.expr import Sym
from tilec.ir.layouts import BlockedLayout, SliceLayout
from tilec.ir.ops import ELEMENTWISE_TABLE

PARENT = BlockedLayout((1, 2), (4, 8), (2, 2), (1, 0))
UNARY_FLOAT = [n for n, arity, cls, _ in ELEMENTWISE_TABLE if arity == 1 and cls == "float"]
BINARY_NUMERIC = [n for n, arity, cls, _ in ELEMENTWISE_TABLE if arity == 2 and cls == "numeric"]


class _Gen:
    def __init__(self, draw: Any, planned: bool, symbolic: bool) -> None:
        self.draw = draw
        self.planned = planned
        self.rows: Any = 4
        self.cols: Any = Sym("BLOCK") if symbolic else 16

    def layout(self, rank: int, axis_kept: int = 1) -> Any:
        if not self.planned:
            return None
        return PARENT if rank == 2 else SliceLayout(1 - axis_kept, PARENT)

    def vec(self, dtype: DType) -> TileType:
        return TileType((self.cols,), dtype, self.layout(1))

    def mat(self, dtype: DType) -> TileType:
        return TileType((self.rows, self.cols), dtype, self.layout(2))

    def pick(self, pool: list[Value], pred: Any) -> Value | None:
        cands = [v for v in pool if pred(v.type)]
        return self.draw(st.sampled_from(cands)) if cands else None

    def ops(self, b: Builder, pool: list[Value], params: dict[str, Value], budget: int, depth: int) -> None:
        for _ in range(budget):
            kind = self.draw(
                st.sampled_from(
                    [
                        "const",
                        "arange",
                        "full",
                        "binary",
                        "unary",
                        "cmp",
                        "where",
                        "cast",
                        "expand",
                        "reduce",
                        "load",
                        "store",
                        "for",
                        "if",
                    ]
                )
            )
            v = self.step(kind, b, pool, params, depth)
            if v is not None:
                pool.extend(v)

    def step(
        self, kind: str, b: Builder, pool: list[Value], params: dict[str, Value], depth: int
    ) -> list[Value] | None:
        draw = self.draw
        if kind == "const":
            dt = draw(st.sampled_from([f32, i32]))
            val = draw(st.floats(-4, 4, allow_nan=False)) if dt == f32 else draw(st.integers(-8, 8))
            return [b.constant(val, dt)]
        if kind == "arange":
            return [b.op("tile.arange", type=self.vec(i32), end=self.cols)]
        if kind == "full":
            dt = draw(st.sampled_from([f32, i32]))
            t = draw(st.sampled_from([self.vec(dt), self.mat(dt)]))
            return [b.op("tile.full", type=t, value=1.5 if dt == f32 else 3)]
        if kind == "binary":
            a = self.pick(pool, lambda t: getattr(t, "dtype", t) in (f32, i32))
            if a is None:
                return None
            other = self.pick(pool, lambda t: t == a.type or t == getattr(a.type, "dtype", None))
            assert other is not None
            return [b.op(draw(st.sampled_from(BINARY_NUMERIC)), a, other)]
        if kind == "unary":
            a = self.pick(pool, lambda t: getattr(t, "dtype", t) == f32)
            return [b.op(draw(st.sampled_from(UNARY_FLOAT)), a)] if a is not None else None
        if kind == "cmp":
            a = self.pick(pool, lambda t: getattr(t, "dtype", t) in (f32, i32))
            if a is None:
                return None
            return [b.op("tile.cmp", a, a, predicate=draw(st.sampled_from(["lt", "le", "eq", "ne"])))]
        if kind == "where":
            c = self.pick(pool, lambda t: isinstance(t, TileType) and t.dtype == i1)
            if c is None:
                return None
            x = self.pick(
                pool,
                lambda t: (
                    isinstance(t, TileType) and t.shape == c.type.shape and t.layout == c.type.layout and t.dtype != i1
                ),
            )  # type: ignore[attr-defined]
            return [b.op("tile.where", c, x, x)] if x is not None else None
        if kind == "cast":
            a = self.pick(pool, lambda t: getattr(t, "dtype", t) in (f32, i32))
            if a is None:
                return None
            to = bf16 if getattr(a.type, "dtype", a.type) == f32 else f32
            t = a.type.with_(dtype=to) if isinstance(a.type, TileType) else to
            return [b.op("tile.cast", a, type=t)]
        if kind == "expand":
            a = self.pick(
                pool, lambda t: isinstance(t, TileType) and t.shape == (self.cols,) and t.layout == self.layout(1)
            )
            if a is None:
                return None
            row = b.op("tile.expand_dims", a, axis=0)
            return [row, b.op("tile.broadcast", row, type=self.mat(row.type.dtype))]  # type: ignore[attr-defined]
        if kind == "reduce":
            a = self.pick(pool, lambda t: isinstance(t, TileType) and t.rank == 2 and t.dtype == f32)
            if a is None:
                return None
            return [b.op("tile.reduce", a, kind=draw(st.sampled_from(["sum", "max", "min", "prod"])), axis=1)]
        if kind == "load":
            offs = self.pick(pool, lambda t: isinstance(t, TileType) and t.dtype == i32)
            return [b.op("tile.load", params["x"], offs)] if offs is not None else None
        if kind == "store":
            v = self.pick(pool, lambda t: isinstance(t, TileType) and t.dtype == f32)
            offs = self.pick(pool, lambda t: isinstance(t, TileType) and t.dtype == i32)
            if v is None or offs is None or v.type.shape != offs.type.shape or v.type.layout != offs.type.layout:  # type: ignore[attr-defined]
                return None
            b.create("tile.store", params["y"], offs, v)
            return []
        if kind == "for" and depth < 2:
            init = self.pick(pool, lambda t: getattr(t, "dtype", t) == f32)
            if init is None:
                return None
            lo, hi, st_ = b.constant(0, i32), b.constant(draw(st.integers(0, 4)), i32), b.constant(1, i32)
            loop = b.for_(lo, hi, st_, [init])
            with b.inside(loop.body):
                inner = pool + list(loop.body.args)
                self.ops(b, inner, params, draw(st.integers(0, 4)), depth + 1)
                out = self.pick(inner, lambda t: t == init.type)
                b.yield_(out)  # type: ignore[arg-type]
            return list(loop.results)
        if kind == "if" and depth < 2:
            cond = self.pick(pool, lambda t: t == i1)
            val = self.pick(pool, lambda t: getattr(t, "dtype", t) == f32)
            if cond is None or val is None:
                return None
            op = b.if_(cond, [val.type])
            for region in op.regions:
                with b.inside(region):
                    inner = list(pool)
                    self.ops(b, inner, params, draw(st.integers(0, 3)), depth + 1)
                    b.yield_(self.pick(inner, lambda t: t == val.type))  # type: ignore[arg-type]
            return list(op.results)
        return None


@st.composite
def kernels(draw: Any, planned: bool | None = None) -> Module:
    planned = draw(st.booleans()) if planned is None else planned
    symbolic = draw(st.booleans())
    g = _Gen(draw, planned, symbolic)
    kernel = Kernel(
        "k",
        [("x", PointerType(f32)), ("y", PointerType(f32)), ("n", i32)],
        constexprs={"BLOCK": None if symbolic else 16} if symbolic else {},
    )
    if planned:
        kernel.launch.num_warps = 4
    b = Builder.at_end(kernel.body)
    params = {p.name_hint: p for p in kernel.params}
    pool: list[Value] = [params["n"]]
    pool.append(b.op("tile.program_id"))
    g.ops(b, pool, params, draw(st.integers(1, 25)), 0)  # type: ignore[arg-type]
    return Module([kernel])
