"""What both emitters share: Python names from IR names, literals, source checking, the launcher's
reserved names and Triton's type strings."""

from __future__ import annotations

import ast
import builtins
import keyword
import math
import re

from tilec.ir.core import Kernel, Module, Value
from tilec.ir.dtypes import DType
from tilec.ir.errors import TilecError
from tilec.ir.expr import BinExpr, CallExpr, IntExpr, Sym
from tilec.ir.printer import Namer
from tilec.ir.types import PointerType


class EmitError(TilecError):
    """IR an emitter cannot print (unplanned, or ops its target lacks)."""


RESERVED = frozenset(
    set(keyword.kwlist) | set(dir(builtins)) | {"tl", "gl", "triton", "gluon", "torch", "tma", "mbarrier"}
)


class PyNames:
    """Python identifiers for a kernel's values: derived from the IR's names, unique, never a
    keyword, builtin or module alias. Only these (validated) names reach emitted source."""

    def __init__(self, kernel: Kernel, taken: set[str] | None = None) -> None:
        namer = Namer(kernel)
        self.used: set[str] = set(RESERVED) | (taken or set())
        self.names: dict[int, str] = {}
        values: list[Value] = list(kernel.params)
        for op in kernel.walk():
            for r in op.regions:
                values.extend(r.args)
            values.extend(op.results)
        for v in values:
            self.names[id(v)] = self.fresh(namer(v)[1:])

    def fresh(self, base: str) -> str:
        name = re.sub(r"[^A-Za-z0-9_]", "_", base)
        if not name or name[0].isdigit():
            name = "v" + name
        candidate, k = name, 1
        while candidate in self.used:
            candidate = f"{name}_{k}"
            k += 1
        self.used.add(candidate)
        return candidate

    def __call__(self, v: Value) -> str:
        return self.names[id(v)]


def py_float(v: float) -> str:
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else 'float("-inf")'
    return repr(float(v))


def py_expr(e: IntExpr, names: dict[str, str]) -> str:
    """An integer expression as Python source; `names` maps IR names to Python expressions."""
    if isinstance(e, bool):
        raise EmitError(f"not an integer expression: {e!r}")
    if isinstance(e, int):
        return str(e)
    if isinstance(e, Sym):
        if e.name not in names:
            raise EmitError(f"unknown name '{e.name}' in a launch expression")
        return names[e.name]
    if isinstance(e, BinExpr):
        return f"({py_expr(e.lhs, names)} {e.op} {py_expr(e.rhs, names)})"
    if isinstance(e, CallExpr):
        a, b = (py_expr(x, names) for x in e.args)
        return {"cdiv": f"(-(-{a} // {b}))", "min": f"min({a}, {b})", "max": f"max({a}, {b})"}[e.fn]
    raise EmitError(f"not an integer expression: {e!r}")


def check_source(source: str, what: str) -> str:
    """Emitted source must parse as Python; anything else is a bug in the emitter."""
    try:
        ast.parse(source)
    except SyntaxError as e:
        raise AssertionError(f"{what} emitted invalid Python at line {e.lineno}: {e.msg}\n{source}") from None
    return source


def require_planned(kernel: Kernel, target: str) -> None:
    from tilec.ir.types import TileType

    unbound = [k for k, v in kernel.constexprs.items() if v is None]
    if kernel.launch.num_warps is None or unbound:
        raise EmitError(
            f"the {target} emitter needs planned IR: kernel @{kernel.name} "
            + (f"has unbound constexprs {unbound}" if unbound else "has no num_warps")
            + " (run the 'plan' pass first, e.g. -p plan,canonicalize)",
            kernel.loc,
        )
    for op in kernel.walk():
        for r in op.results:
            if isinstance(r.type, TileType) and r.type.layout is None:
                raise EmitError(f"the {target} emitter needs planned IR: a tile has no layout (run 'plan')", op.loc)


def single_kernel(target: Kernel | Module) -> Kernel:
    """The kernel to emit: `target` itself, or the one kernel of a module (emitters take one)."""
    if isinstance(target, Module):
        if len(target.kernels) != 1:
            raise EmitError(f"emit one kernel at a time; this module has {len(target.kernels)}")
        return target.kernels[0]
    return target


# Triton's type strings, by tilec dtype name (the signatures of ahead-of-time compiles)
TRITON_TYPES = {
    "i1": "i1",
    "i8": "i8",
    "i16": "i16",
    "i32": "i32",
    "i64": "i64",
    "u8": "u8",
    "u16": "u16",
    "u32": "u32",
    "u64": "u64",
    "f8e4m3": "fp8e4nv",
    "f8e5m2": "fp8e5",
    "f16": "fp16",
    "bf16": "bf16",
    "f32": "fp32",
    "f64": "fp64",
}


# Names the emitted module's launcher defines or uses (both emitters'), which no kernel name takes
LAUNCHER_NAMES = frozenset(
    {
        "launch",
        "launch_args",
        "compile_only",
        "args",
        "grid",
        "GRID",
        "KERNEL",
        "SIGNATURE",
        "CONSTEXPRS",
        "DIVISIBLE",
        "NUM_WARPS",
        "num_sms",
    }
)


def signature_type(t: object) -> str | None:
    """Triton's type string of a pointer or scalar parameter's type, as a module's `SIGNATURE`
    gives it ("*bf16", "i32"); None for any other (a tensor descriptor: the Gluon emitter's own)."""
    if isinstance(t, PointerType):
        return f"*{TRITON_TYPES[t.pointee.name]}"
    if isinstance(t, DType):
        return TRITON_TYPES[t.name]
    return None
