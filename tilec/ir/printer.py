"""Prints IR as text. `parse(print(x))` gives back the same IR, and printing is deterministic.

The default form is short: `%r = tile.add %a, %b : f32` (operand types are known from their
definitions). `generic=True` prints every op in the quoted MLIR-style generic form instead.
Blocked and shared layouts are printed once as aliases at the top (`#blocked`, `#shared1`, ...).
"""

from __future__ import annotations

import re
from typing import Any

from tilec.ir.core import Block, Kernel, Module, Operation, Value
from tilec.ir.dtypes import Type
from tilec.ir.formatting import format_attr, format_type, layout_fields
from tilec.ir.layouts import (
    Layout,
    SliceLayout,
)
from tilec.ir.ops import ForOp, IfOp, WarpSpecializeOp, YieldOp

_NAME_OK = re.compile(r"^[A-Za-z0-9_.$-]+$")
INDENT = "  "


# ---------------------------------------------------------------------------------------------
# Layout aliases


def _types_in(kernel: Kernel) -> list[Type]:
    out: list[Type] = [p.type for p in kernel.params]
    for op in kernel.walk():
        out.extend(r.type for r in op.results)
        for block in op.regions:
            out.extend(a.type for a in block.args)
    return out


def _collect(layout: Layout, seen: list[Layout]) -> None:
    if isinstance(layout, SliceLayout):
        _collect(layout.parent, seen)
    elif layout not in seen:
        seen.append(layout)


def layout_aliases(module: Module) -> dict[Layout, str]:
    """Alias names for the blocked and shared layouts of a module, in order of first use."""
    seen: list[Layout] = []
    for kernel in module.kernels:
        for t in _types_in(kernel):
            layout = getattr(t, "layout", None)
            if layout is not None:
                _collect(layout, seen)
    base = {"blocked": "#blocked", "nvmma_shared": "#shared", "swizzled_shared": "#swizzled"}
    counts: dict[str, int] = {}
    aliases: dict[Layout, str] = {}
    for layout in seen:
        stem = base[layout.kind]
        n = counts.get(stem, 0)
        counts[stem] = n + 1
        aliases[layout] = stem if n == 0 else f"{stem}{n}"
    return aliases


# ---------------------------------------------------------------------------------------------
# Value names


class Namer:
    """Stable names for a kernel's values: their hints where valid and unique, else numbers."""

    def __init__(self, kernel: Kernel) -> None:
        self.names: dict[int, str] = {}
        values: list[Value] = list(kernel.params)
        for op in kernel.walk():
            for block in op.regions:
                values.extend(block.args)
            values.extend(op.results)
        used: set[str] = set()
        pending: list[Value] = []
        for v in values:
            hint = v.name_hint
            if hint and _NAME_OK.match(hint) and hint not in used and not hint.isdigit():
                self.names[id(v)] = hint
                used.add(hint)
            else:
                pending.append(v)
        counter = 0
        for v in pending:
            base = v.name_hint if v.name_hint and _NAME_OK.match(v.name_hint) and not v.name_hint.isdigit() else None
            if base:
                k = 1
                while f"{base}_{k}" in used:
                    k += 1
                name = f"{base}_{k}"
            else:
                while str(counter) in used:
                    counter += 1
                name = str(counter)
            used.add(name)
            self.names[id(v)] = name

    def __call__(self, v: Value) -> str:
        name = self.names.get(id(v))
        return f"%{name}" if name is not None else f"%<unknown {v!r}>"


# ---------------------------------------------------------------------------------------------
# Ops and kernels


class Printer:
    def __init__(self, aliases: dict[Layout, str], generic: bool = False) -> None:
        self.aliases = aliases
        self.generic = generic
        self.lines: list[str] = []

    def type(self, t: Type) -> str:
        return format_type(t, self.aliases)

    def attrs(self, op_or_dict: Operation | dict[str, Any]) -> str:
        if isinstance(op_or_dict, Operation):
            op = op_or_dict
            items = []
            for key, value in op.attributes.items():
                spec = op.attrs.get(key)
                if spec is not None and not spec.required and value == spec.default and not self.generic:
                    continue
                items.append((key, value))
        else:
            items = list(op_or_dict.items())
        if not items:
            return ""
        return " {" + ", ".join(f"{k} = {format_attr(v, self.aliases)}" for k, v in items) + "}"

    def kernel(self, kernel: Kernel) -> None:
        name = Namer(kernel)
        params = []
        for p, pattrs in zip(kernel.params, kernel.param_attrs):
            params.append(f"{name(p)}: {self.type(p.type)}{self.attrs(pattrs)}")
        header = f"tile.kernel @{kernel.name}({', '.join(params)})"
        if kernel.constexprs:
            cs = [k if v is None else f"{k} = {v}" for k, v in kernel.constexprs.items()]
            header += f" constexprs({', '.join(cs)})"
        attrs: dict[str, Any] = {"grid": list(kernel.launch.grid)}
        if kernel.launch.num_warps is not None:
            attrs["num_warps"] = kernel.launch.num_warps
        if kernel.launch.maxnreg is not None:
            attrs["maxnreg"] = kernel.launch.maxnreg
        if kernel.launch.persistent:
            attrs["persistent"] = True
        if kernel.launch.num_ctas != 1:
            attrs["num_ctas"] = kernel.launch.num_ctas
        attrs.update(sorted(kernel.attributes.items()))
        header += " attributes" + self.attrs(attrs)
        self.lines.append(header + " {")
        self.block(kernel.body, name, 1)
        self.lines.append("}")

    def block(self, block: Block, name: Namer, depth: int) -> None:
        for op in block.ops:
            self.op(op, name, depth)

    def op(self, op: Operation, name: Namer, depth: int) -> None:
        pad = INDENT * depth
        res = ", ".join(name(r) for r in op.results)
        lhs = f"{res} = " if res else ""
        if self.generic:
            self.generic_op(op, name, depth, lhs)
            return

        if isinstance(op, ForOp):
            body = op.body
            line = (
                f"{pad}{lhs}tile.for {name(body.args[0])} = {name(op.lower)} to {name(op.upper)} step {name(op.step)}"
            )
            if op.inits:
                pairs = ", ".join(f"{name(a)} = {name(v)}" for a, v in zip(op.iter_args, op.inits))
                line += f" iter_args({pairs})"
                line += f" -> ({', '.join(self.type(r.type) for r in op.results)})"
            self.lines.append(line + self.attrs(op) + " {")
            self.block(body, name, depth + 1)
            self.lines.append(pad + "}")
        elif isinstance(op, IfOp):
            arrow = f" -> ({', '.join(self.type(r.type) for r in op.results)})" if op.results else ""
            self.lines.append(f"{pad}{lhs}tile.if {name(op.cond)}{arrow} {{")
            self.block(op.regions[0], name, depth + 1)
            if op.regions[1].ops:
                self.lines.append(pad + "} else {")
                self.block(op.regions[1], name, depth + 1)
            self.lines.append(pad + "}")
        elif isinstance(op, WarpSpecializeOp):
            arrow = f" -> ({', '.join(self.type(r.type) for r in op.results)})" if op.results else ""
            opener = f"{pad}{lhs}tile.warp_specialize{arrow} "
            warps, regs = op.attr("worker_warps"), op.attr("worker_regs")
            for i, block in enumerate(op.regions):
                caps = ", ".join(f"{name(a)} = {name(v)}" for a, v in zip(block.args, op.partition_captures(i)))
                head = "default" if i == 0 else f"worker(warps = {warps[i - 1]}, regs = {regs[i - 1]})"
                self.lines.append(f"{opener}{head}({caps}) {{")
                self.block(block, name, depth + 1)
                opener = pad + "} "
            self.lines.append(pad + "}")
        elif isinstance(op, YieldOp) and not op.operands:
            return  # implied
        else:
            line = f"{pad}{lhs}{op.name}"
            if op.operands:
                line += " " + ", ".join(name(v) for v in op.operands)
            line += self.attrs(op)
            tail = " : " + ", ".join(self.type(r.type) for r in op.results) if op.results else ""
            if op.regions:
                self.regions(op, name, depth, line, tail)
            else:
                self.lines.append(line + tail)

    def regions(self, op: Operation, name: Namer, depth: int, head: str, tail: str) -> None:
        """`head ({ ^(args):` ... `}, { ^(args):` ... `})tail`, one region after another."""
        pad = INDENT * depth
        for i, block in enumerate(op.regions):
            opener = head + " ({" if i == 0 else pad + "}, {"
            if block.args:
                opener += " ^(" + ", ".join(f"{name(a)}: {self.type(a.type)}" for a in block.args) + "):"
            self.lines.append(opener)
            self.block(block, name, depth + 1)
        self.lines.append(pad + "})" + tail)

    def generic_op(self, op: Operation, name: Namer, depth: int, lhs: str) -> None:
        pad = INDENT * depth
        line = f'{pad}{lhs}"{op.name}"({", ".join(name(v) for v in op.operands)})' + self.attrs(op)
        operand_types = ", ".join(self.type(v.type) for v in op.operands)
        result_types = ", ".join(self.type(r.type) for r in op.results)
        tail = f" : ({operand_types}) -> ({result_types})"
        if op.regions:
            self.regions(op, name, depth, line, tail)
        else:
            self.lines.append(line + tail)


def print_module(module: Module, generic: bool = False) -> str:
    aliases = layout_aliases(module)
    p = Printer(aliases, generic)
    for layout, alias in aliases.items():
        body = ", ".join(f"{k} = {format_attr(v, aliases)}" for k, v in layout_fields(layout))
        p.lines.append(f"{alias} = #{layout.kind}<{body}>")
    for kernel in module.kernels:
        if p.lines:
            p.lines.append("")
        p.kernel(kernel)
    return "\n".join(p.lines) + "\n"


def print_kernel(kernel: Kernel, generic: bool = False) -> str:
    return print_module(Module([kernel]), generic)
