"""specialize: binds constexprs to values, e.g. `specialize{XBLOCK=1,RBLOCK=1024}`.

Every symbolic shape, attribute and grid size that names a bound constexpr folds to a number.
The plan pass does the same with the values it chooses.

Before:
    tile.kernel @k(...) constexprs(RBLOCK) attributes {grid = [64]} {
      %r = tile.arange {end = RBLOCK} : tile<[RBLOCK], i32>
After (RBLOCK=1024):
    tile.kernel @k(...) constexprs(RBLOCK = 1024) attributes {grid = [64]} {
      %r = tile.arange {end = 1024} : tile<[1024], i32>
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, ClassVar

from tilec.ir.core import Kernel, Module
from tilec.ir.errors import TilecError
from tilec.ir.expr import Expr, substitute
from tilec.ir.types import substitute_type
from tilec.passes.base import Pass, register


def _subst_attr(v: Any, env: dict[str, int]) -> Any:
    if isinstance(v, Expr):
        return substitute(v, env)
    if isinstance(v, list):
        return [_subst_attr(x, env) for x in v]
    return v


def bind_constexprs(kernel: Kernel, values: dict[str, int]) -> None:
    """Binds `values` (a subset of the kernel's constexprs) everywhere in the kernel."""
    for name, value in values.items():
        if name not in kernel.constexprs:
            raise TilecError(f"kernel @{kernel.name} has no constexpr '{name}'")
        bound = kernel.constexprs[name]
        if bound is not None and bound != value:
            raise TilecError(f"kernel @{kernel.name}: constexpr '{name}' is already bound to {bound}")
        kernel.constexprs[name] = value
    env = kernel.bound_constexprs()
    for p in kernel.params:
        p.type = substitute_type(p.type, env)
    for attrs in kernel.param_attrs:
        for k, v in attrs.items():
            attrs[k] = _subst_attr(v, env)
    kernel.launch.grid = tuple(substitute(g, env) for g in kernel.launch.grid)
    for op in kernel.walk():
        for r in op.results:
            r.type = substitute_type(r.type, env)
        for block in op.regions:
            for a in block.args:
                a.type = substitute_type(a.type, env)
        for k, v in op.attributes.items():
            op.attributes[k] = _subst_attr(v, env)


@register
class Specialize(Pass):
    """Binds constexprs: `specialize{NAME=value,...}`; kernels without a named constexpr are left alone."""

    name = "specialize"
    unchanged = "no unbound constexpr of the names given"
    accepts_any_options: ClassVar[bool] = True
    values: dict[str, int] = field(default_factory=dict)

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            bind_constexprs(kernel, {k: v for k, v in self.values.items() if k in kernel.constexprs})

    def describe(self) -> str:
        return self.name + "{" + ",".join(f"{k}={v}" for k, v in self.values.items()) + "}"
