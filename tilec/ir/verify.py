"""The module verifier: the rules that span ops (each op checks its own in `verify_`).

Runs after parsing and between passes. Rules:
- kernel: parameter and constexpr names, parameter types, descriptor parameters, launch metadata;
- every symbol in a type is a declared constexpr;
- SSA dominance: operands are defined earlier in the same block or an enclosing one; isolated
  regions (warp-specialize partitions) see only their own arguments;
- terminators: `tile.yield` only ends the region of a loop, conditional or partition;
- layouts: a kernel is logical (no tile has a layout) or planned (every tile has one), and a
  tile's layout spans the warps of the partition it lives in;
- mbarriers are initialized before any other use;
- ring indices: a slot or barrier index that is a constant, `x % c` or `x & c` stays below the
  number of slots or barriers; a wait's parity that is a constant, `x & c`, `x % c` or an xor of
  such stays 0 or 1 (other forms are left to the interpreter);
- shared memory (buffers and barriers) fits the per-CTA budget.
"""

from __future__ import annotations

import functools
import keyword
import re
from typing import Any

from tilec.ir.core import Block, BlockArg, Kernel, Module, Operation, OpResult, Value
from tilec.ir.dtypes import DType, Type
from tilec.ir.errors import TilecError, VerifyError
from tilec.ir.expr import Expr, IntExpr, evaluate, free_symbols
from tilec.ir.formatting import format_type
from tilec.ir.ops import (
    BinaryOp,
    ForOp,
    IfOp,
    MBarrierAllocOp,
    MBarrierInitOp,
    MBarrierOp,
    MBarrierWaitOp,
    SmemAllocOp,
    SmemIndexOp,
    TmaLoadOp,
    WarpSpecializeOp,
    YieldOp,
)
from tilec.ir.target import DEFAULT
from tilec.ir.types import MBarrierType, PointerType, SharedBufferType, TensorDescType, TileType

MBARRIER_BYTES = 8
# the largest `multiple_of` an integer parameter may carry: Triton's divisibility specialization
# stops at 16 (a 16-byte vector of bytes), and the launcher recognises sizes divided by up to it
MAX_MULTIPLE_OF = 16
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED = frozenset({"inf", "nan", "true", "false", "num_sms"})


def verify(target: Module | Kernel, smem_budget: int = DEFAULT.smem_per_block) -> None:
    """Raises VerifyError (located at the offending op where there is one) on the first broken rule."""
    kernels = target.kernels if isinstance(target, Module) else [target]
    for kernel in kernels:
        _KernelVerifier(kernel, smem_budget).run()


def _ident_ok(name: str) -> bool:
    return bool(_IDENT.match(name)) and not keyword.iskeyword(name) and name not in RESERVED


@functools.lru_cache(maxsize=4096)
def _shape_symbols(shape: tuple[IntExpr, ...]) -> frozenset[str]:
    """The names a type's shape uses (the same shapes recur in every op of a kernel: once each)."""
    return frozenset().union(*(free_symbols(d) for d in shape))


class _KernelVerifier:
    def __init__(self, kernel: Kernel, smem_budget: int) -> None:
        self.k = kernel
        self.smem_budget = smem_budget
        self.planned: bool | None = None

    def fail(self, message: str, op: Operation | None = None) -> VerifyError:
        return VerifyError(f"in kernel @{self.k.name}: {message}", op.loc if op is not None else self.k.loc)

    def run(self) -> None:
        self.signature()
        self.block(self.k.body, set(), warps=self.k.launch.num_warps, top=True)
        self.mbarriers()
        self.ring_indices()
        self.shared_memory()

    # -- signature

    def signature(self) -> None:
        k = self.k
        if not _ident_ok(k.name):
            raise self.fail(f"'{k.name}' is not a valid kernel name")
        names: set[str] = set()
        for p in k.params:
            name = p.name_hint or ""
            if not _ident_ok(name):
                raise self.fail(f"parameter %{name} needs a name that is a valid identifier")
            if name in names:
                raise self.fail(f"parameter %{name} is declared twice")
            names.add(name)
            if not isinstance(p.type, (PointerType, DType, TensorDescType)):
                raise self.fail(
                    f"parameter %{name} has type {format_type(p.type)}; parameters are pointers, scalars or TMA descriptors"
                )
        for c in k.constexprs:
            if not _ident_ok(c):
                raise self.fail(f"constexpr '{c}' is not a valid identifier")
            if c in names:
                raise self.fail(f"'{c}' names both a parameter and a constexpr")
        scalars = {p.name_hint for p in k.params if isinstance(p.type, DType) and p.name_hint}
        for p, attrs in zip(k.params, k.param_attrs):
            if isinstance(p.type, TensorDescType):
                self.descriptor(p, attrs, scalars)
            elif isinstance(p.type, DType) and p.type.is_int and set(attrs) <= {"multiple_of"}:
                m = attrs.get("multiple_of", 2)
                if not (
                    isinstance(m, int) and not isinstance(m, bool) and 2 <= m <= MAX_MULTIPLE_OF and m & (m - 1) == 0
                ):
                    raise self.fail(
                        f"parameter %{p.name_hint}: multiple_of must be a power of two from 2 to "
                        f"{MAX_MULTIPLE_OF}, got {m!r}"
                    )
            elif attrs:
                raise self.fail(
                    f"parameter %{p.name_hint} takes no attributes (descriptors take theirs, integers multiple_of)"
                )
        known = set(k.constexprs) | scalars | {"num_sms"}
        for g in k.launch.grid:
            self.symbols_known(g, known, "the grid")
        nw = k.launch.num_warps
        if nw is not None and nw not in (1, 2, 4, 8, 16, 32):
            raise self.fail(f"num_warps must be a power of two from 1 to 32, got {nw}")
        if k.launch.maxnreg is not None and not 24 <= k.launch.maxnreg <= 256:
            raise self.fail(f"maxnreg must be in 24..256, got {k.launch.maxnreg}")
        if k.launch.num_ctas not in (1, 2, 4, 8, 16):
            raise self.fail(f"num_ctas must be a power of two from 1 to 16, got {k.launch.num_ctas}")

    def descriptor(self, p: BlockArg, attrs: dict[str, Any], scalars: set[str]) -> None:
        t = p.type
        assert isinstance(t, TensorDescType)
        rank = len(t.block_shape)
        src = attrs.get("source")
        if not isinstance(src, str):
            raise self.fail(f'descriptor %{p.name_hint} needs source = "<pointer parameter>"')
        try:
            sp = self.k.param(src)
        except KeyError:
            raise self.fail(f"descriptor %{p.name_hint}: no parameter named '{src}'") from None
        if not isinstance(sp.type, PointerType) or sp.type.pointee != t.dtype:
            raise self.fail(f"descriptor %{p.name_hint}: source '{src}' must be a pointer to {t.dtype}")
        known = set(self.k.constexprs) | scalars
        for key in ("shape", "strides"):
            v = attrs.get(key)
            if not isinstance(v, list) or len(v) != rank:
                raise self.fail(f"descriptor %{p.name_hint} needs {key} = [{rank} integer expressions]")
            for e in v:
                self.symbols_known(e, known, f"descriptor %{p.name_hint}")
        if attrs["strides"][-1] != 1:
            raise self.fail(f"descriptor %{p.name_hint}: the last stride must be 1 (TMA needs contiguous rows)")
        extra = set(attrs) - {"source", "shape", "strides"}
        if extra:
            raise self.fail(f"descriptor %{p.name_hint} has unknown attributes {sorted(extra)}")

    def symbols_known(self, e: IntExpr, known: set[str], where: str) -> None:
        if isinstance(e, bool) or not isinstance(e, (int, Expr)):
            raise self.fail(f"{where} must be integer expressions")
        unknown = free_symbols(e) - known
        if unknown:
            raise self.fail(f"{where} uses undeclared names {sorted(unknown)}")

    # -- ops, dominance, terminators, layouts

    def check_type(self, t: Type, op: Operation, warps: int | None) -> None:
        shape = getattr(t, "shape", None) or getattr(t, "block_shape", None)
        if shape:
            unknown = _shape_symbols(tuple(shape)).difference(self.k.constexprs)
            if unknown:
                raise self.fail(f"type {format_type(t)} uses undeclared constexprs {sorted(unknown)}", op)
        if isinstance(t, TileType):
            has = t.layout is not None
            if self.planned is None:
                self.planned = has
            elif self.planned != has:
                raise self.fail(
                    "mixes tiles with and without layouts: a kernel is either logical (no layouts) or planned (all)",
                    op,
                )
            if t.layout is not None and warps is not None and t.layout.num_warps != warps:
                raise self.fail(f"tile layout spans {t.layout.num_warps} warps, but this code runs on {warps}", op)
        ctas = getattr(getattr(t, "layout", None), "num_ctas", None)
        if ctas is not None and ctas != self.k.launch.num_ctas:
            raise self.fail(
                f"layout of {format_type(t)} spans {ctas} CTAs, but the kernel launches "
                f"{self.k.launch.num_ctas} a program (num_ctas)",
                op,
            )

    def block(self, block: Block, visible: set[int], warps: int | None, top: bool = False) -> None:
        scope = set(visible)
        scope.update(id(a) for a in block.args)
        for a in block.args:
            if block.parent_op is not None:
                self.check_type(a.type, block.parent_op, warps)
        for i, op in enumerate(block.ops):
            self.op(op, scope, warps)
            if isinstance(op, YieldOp):
                if top:
                    raise self.fail("'tile.yield' outside a loop, conditional or partition", op)
                if i != len(block.ops) - 1:
                    raise self.fail("'tile.yield' must be the last op of its region", op)
            scope.update(id(r) for r in op.results)

    def op(self, op: Operation, scope: set[int], warps: int | None) -> None:
        for idx, v in enumerate(op.operands):
            if id(v) not in scope:
                raise self.fail(f"'{op.name}' operand {idx} ({_vname(v)}) is not defined before this use", op)
        try:
            op.verify_attrs()
            op.verify_operands()
            if op.num_results is not None and len(op.results) != op.num_results:
                raise op.error(f"has {op.num_results} results, got {len(op.results)}")
            if op.num_regions >= 0 and len(op.regions) != op.num_regions:
                raise op.error(f"has {op.num_regions} regions, got {len(op.regions)}")
            op.verify_()
        except VerifyError as e:
            raise self.fail(e.message, op) from None
        except TilecError as e:
            raise self.fail(e.message, op) from None
        for r in op.results:
            self.check_type(r.type, op, warps)
        isolated = "isolated" in op.traits
        for i, region in enumerate(op.regions):
            inner_warps = warps
            if isinstance(op, WarpSpecializeOp) and i > 0:
                inner_warps = op.attr("worker_warps")[i - 1]
            if region.terminator is None and isinstance(op, (ForOp, IfOp, WarpSpecializeOp)):
                raise self.fail(f"region of '{op.name}' must end with 'tile.yield'", op)
            self.block(region, set() if isolated else scope, inner_warps)

    # -- mbarriers

    def mbarriers(self) -> None:
        initialized: set[int] = set()
        for op in self.k.walk():
            if isinstance(op, MBarrierInitOp):
                initialized.add(id(_root(op.bars)))
            elif isinstance(op, (MBarrierOp, TmaLoadOp)):
                bars = op.bars
                if id(_root(bars)) not in initialized:
                    raise self.fail(f"mbarrier {_vname(bars)} is used before 'tile.mbarrier_init'", op)

    # -- ring indices and parities

    def ring_indices(self) -> None:
        for op in self.k.walk():
            checks: list[tuple[Value, int, str]] = []
            if isinstance(op, SmemIndexOp):
                t = op.buf.type
                if isinstance(t, SharedBufferType) and t.slots is not None:
                    checks.append((op.slot, t.slots, "slots"))
            elif isinstance(op, (MBarrierOp, TmaLoadOp)) and isinstance(op.bars.type, MBarrierType):
                checks.append((op.index, op.bars.type.count, "barriers"))
            for v, n, what in checks:
                top = _index_bound(v)
                if top is not None and top > n:
                    raise self.fail(f"index {_vname(v)} can reach {top - 1}, but there are {n} {what}", op)
            if isinstance(op, MBarrierWaitOp) and _parity(op.phase) is False:
                raise self.fail(f"parity {_vname(op.phase)} is not always 0 or 1", op)

    # -- shared memory

    def shared_memory(self) -> None:
        env = self.k.bound_constexprs()
        total = 0
        for op in self.k.walk():
            t = op.results[0].type if op.results else None
            if isinstance(op, SmemAllocOp) and isinstance(t, SharedBufferType):
                n = t.nbytes()
                # a buffer split across a cluster's CTAs: each holds its part
                split = 1 << sum(any(b) for b in getattr(t.layout, "cga_layout", ()))
                try:
                    total += evaluate(n, env) // split
                except KeyError:
                    return  # sizes still symbolic: checked once the plan binds them
            elif isinstance(op, MBarrierAllocOp) and isinstance(t, MBarrierType):
                total += MBARRIER_BYTES * t.count
        if total > self.smem_budget:
            raise self.fail(f"uses {total} bytes of shared memory; the budget is {self.smem_budget} per CTA")


def _const(v: Value) -> Any:
    op = v.op if isinstance(v, OpResult) else None
    if op is not None and op.name == "tile.constant" and isinstance(op.attr("value"), int):
        return op.attr("value")
    return None


def _index_bound(v: Value) -> int | None:
    """An exclusive upper bound on a slot index of an obvious form (None: not obvious)."""
    c = _const(v)
    if c is not None:
        return c + 1
    op = v.op if isinstance(v, OpResult) else None
    if isinstance(op, BinaryOp) and op.name in ("tile.rem", "tile.and"):
        m = _const(op.rhs)
        if isinstance(m, int) and m > 0:
            return m if op.name == "tile.rem" else m + 1
    return None


def _parity(v: Value) -> bool | None:
    """Whether a parity of an obvious form is always 0 or 1 (None: not obvious)."""
    c = _const(v)
    if c is not None:
        return c in (0, 1)
    op = v.op if isinstance(v, OpResult) else None
    if not isinstance(op, BinaryOp):
        return None
    if op.name in ("tile.and", "tile.rem"):
        m = _const(op.rhs)
        if isinstance(m, int):
            return m in (0, 1) if op.name == "tile.and" else m in (1, 2)
    if op.name == "tile.xor":
        sides = [_parity(op.lhs), _parity(op.rhs)]
        if False in sides:
            return False
        return True if sides == [True, True] else None
    return None


def _vname(v: Value) -> str:
    return f"%{v.name_hint}" if v.name_hint else "a value"


def _root(v: Value) -> Value:
    """The value a partition argument captures, followed out to the kernel level."""
    while isinstance(v, BlockArg):
        owner = v.block.parent_op
        if not isinstance(owner, WarpSpecializeOp):
            break
        idx = owner.regions.index(v.block)
        v = owner.partition_captures(idx)[v.index]
    return v
