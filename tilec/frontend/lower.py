"""`tilec.lower`: one fused kernel, as Inductor schedules it for a GPU, → logical-form tile IR.

Called from inside `TritonScheduling.codegen_node_schedule(kernel_features)` (V.graph set).
Every SchedulerNode's LoopBody is replayed under `TileOpsHandler`, with the node's index
variables mapped onto the kernel's one `(xindex, rindex)` space by a helper `TritonKernel`
(`split_and_set_ranges`, as stock codegen does; the helper is never entered or code-generated,
so nothing Inductor does afterwards changes). The schedule's `DisableReduction` /
`EnableReduction` markers close and reopen reduction loops:

    op0, op1, DisableReduction, EnableReduction, op3
    → loop 1 (op0, op1: reductions), loop 2 (op3: the epilogue over the row again)

Argument names and in-place buffers come from Inductor's own `KernelArgs` (`in_ptr0`,
`out_ptr2`, `in_out_ptr0`, numbered as stock Triton numbers them); buffers whose every user is
in this kernel are not written (`remove_kernel_local_buffers`, reproduced); a value stored and
read again in the same scope is reused as an SSA value.

`lower` never raises for a kernel it cannot take: it returns `Unsupported(reason)`.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import sympy

from tilec.frontend.handler import TileOpsHandler
from tilec.frontend.indexing import IndexTranslator
from tilec.frontend.logical import RNUMEL, TV, WORKSPACE, XNUMEL, LogicalBuilder, PendingReduction
from tilec.frontend.reasons import (
    BANDED_OUTSIDE_MIX_ORDER,
    BANDED_REDUCTION_TYPE,
    BANDED_SYMBOLIC_ROW,
    CANNOT_SPLIT_RANGES,
    DYNAMIC_SHAPE,
    INTERNAL_ERROR,
    RANDOM_ALIGNED_WITH_EAGER,
    RANDOM_BLOCK_DEPENDENT,
    RANDOM_ON_CPU,
    RELOAD_ATOMIC,
    RELOAD_OTHER_INDEX,
    SCALAR_ARGUMENT,
    UnsupportedError,
    unsupported_node,
)
from tilec.frontend.result import Access, KernelArg, Lowered, Unsupported
from tilec.ir.dtypes import DType, f32, i1, i32, i64, u32
from tilec.ir.errors import error_line
from tilec.ir.ops import LoadOp, StoreOp
from tilec.ir.types import PointerType
from tilec.ir.verify import MAX_MULTIPLE_OF

log = logging.getLogger(__name__)

__all__ = ["Lowered", "Unsupported", "lower"]


def lower(
    kernel_features: Any,
    scheduling: Any = None,
    name: str | None = None,
    strict: bool = False,
    mix_order: bool = False,
) -> Lowered | Unsupported:
    """The logical-form kernel for `kernel_features` (a `SIMDKernelFeatures`), or `Unsupported`.

    `name` names the IR kernel (default: derived from the fused nodes' origins). With
    `strict`, internal errors raise instead of becoming `Unsupported(INTERNAL_ERROR: ...)`.
    `mix_order`: the features are a mix-order reduction's (the node schedule Inductor builds in
    `_codegen_mix_order_reduction`: the row reduction's nodes, then the column reductions
    turned into `partial_accumulate` nodes); the kernel is banded (`tilec.frontend.logical`)."""
    try:
        return KernelBuilder(kernel_features, scheduling, name, mix_order).build()
    except UnsupportedError as e:
        return Unsupported(e.reason)
    except Exception as e:
        if strict:
            raise
        log.debug("tilec.lower failed", exc_info=True)
        return Unsupported(f"{INTERNAL_ERROR}: {error_line(e, 200)}")


def mix_order_features(scheduling: Any, node: Any) -> Any:
    """The `SIMDKernelFeatures` of a mix-order reduction (`node`: Inductor's fused norm backward),
    built as `_codegen_mix_order_reduction` builds them — the row reduction's nodes, then each
    column reduction turned into a `partial_accumulate` over (rows, columns) — but from copies of
    the column reductions' nodes: `node` is left as it was, for stock code generation."""
    import copy

    from torch._inductor.codegen.simd_kernel_features import SIMDKernelFeatures
    from torch._inductor.scheduler import MixOrderReduction

    numel, rnumel = MixOrderReduction.get_numel_rnumel(node.node1)
    reductions, _ = scheduling._split_mix_order_reduction_epilogue(node.node2)
    converted = []
    for sub in reductions:
        twin = copy.copy(sub)  # its loop body replaced below before anything changes one in place
        twin._loop_mutation_listener = None  # (torch 2.13: whatever tracks the original's loop changes)
        twin.cancel_reduction_split()  # a new body where the reduction was split
        twin._body = twin._body.reorder_iter_loops(list(range(len(twin._body.sizes[0]))))  # a body of its own
        twin = twin.extract_pw_from_reduction()  # (changes the body in place)
        twin.swap_pw_red_dimension()
        converted.append(twin)
    schedule = scheduling.generate_node_schedule(node.node1.get_nodes() + converted, numel, rnumel)
    return SIMDKernelFeatures(schedule, numel, rnumel)


def symbolic_size(e: Any) -> sympy.Expr:
    """A kernel size: an integer, or an expression of the graph's size symbols (a dimension Dynamo
    made dynamic); anything else (unbacked or float symbols) is unsupported."""
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    try:
        e = sympy.sympify(e)
    except (sympy.SympifyError, TypeError):
        raise UnsupportedError(DYNAMIC_SHAPE) from None
    if not all(symbol_is_type(s, (SymT.SIZE, SymT.PRECOMPUTED_SIZE)) for s in e.free_symbols):
        raise UnsupportedError(DYNAMIC_SHAPE)
    return e


def static_int(e: Any) -> int:
    e = symbolic_size(e)
    if not isinstance(e, sympy.Integer):
        raise UnsupportedError(DYNAMIC_SHAPE)
    return int(e)


def kernel_name_for(node_schedule: list[Any], reduction: bool) -> str:
    """A stable fallback name, in Inductor's style: `tilec_red_fused_<origins>`."""
    fused = ""
    try:
        from torch._inductor import config
        from torch._inductor.utils import get_fused_kernel_name

        fused = get_fused_kernel_name(node_schedule, config.triton.descriptive_names or "original_aten")
    except Exception:
        fused = ""
    name = "_".join(p for p in ("tilec", "red" if reduction else "poi", fused) if p)
    return sanitize_name(name)


def sanitize_name(name: str) -> str:
    name = re.sub(r"\W", "_", name)
    return name if re.match(r"[A-Za-z_]", name) else "k_" + name


class _Stored:
    __slots__ = ("index", "value")

    def __init__(self, index: sympy.Expr, value: TV | PendingReduction) -> None:
        self.index = index
        self.value = value


class KernelBuilder:
    """The state of one lowering: the helper Inductor kernel, the IR emitter, what was stored."""

    def __init__(self, features: Any, scheduling: Any, name: str | None, mix_order: bool = False) -> None:
        self.features = features
        self.mix_order = mix_order
        self.partials: list[str] = []  # a mix-order kernel's column sums, in workspace order
        self.scheduling = scheduling
        self.node_schedule = list(features.node_schedule)
        self.name = name
        self.stored: dict[str, _Stored] = {}
        self.atomic_names: set[str] = set()  # buffers added to atomically: never read back
        self.store_names: dict[str, None] = {}  # ordered set
        self.store_ops: list[tuple[str, Any]] = []
        self.must_keep: set[str] = set()
        self.reductions: dict[str, None] = {}
        self.accesses: list[Access] = []
        self.load_info: dict[int, tuple[bool, tuple[tuple[str, int], ...]]] = {}
        self.indirect_vars: dict[sympy.Symbol, TV] = {}  # gather indices, by the symbol Inductor indexes with
        self.indirect_keys: dict[tuple[int, int, bool, bool], sympy.Symbol] = {}
        self.index_exprs: dict[int, sympy.Expr] = {}  # index values built by `index`, by IR value
        self.random_lanes: int | None = None  # the Philox stream stock draws from, once decided

    # -- the driver

    def build(self) -> Lowered:
        from torch._inductor.codegen.simd import DisableReduction, EnableReduction
        from torch._inductor.scheduler import SchedulerNode
        from torch._inductor.virtualized import V

        numel_expr = symbolic_size(self.features.numel)
        rnumel_expr = symbolic_size(self.features.reduction_numel)
        numel = int(numel_expr) if numel_expr.is_Integer else None
        rnumel = int(rnumel_expr) if rnumel_expr.is_Integer else None
        self.reduction = reduction = bool(self.features.is_reduction()) and rnumel_expr != 1
        nodes = []
        for item in self.node_schedule:
            if item is DisableReduction or item is EnableReduction:
                continue
            if type(item) is not SchedulerNode:
                raise UnsupportedError(unsupported_node(type(item).__name__))
            nodes.append(item)
        self.nodes = nodes
        self.index_dtype = self._index_dtype(numel * rnumel if numel is not None and rnumel is not None else None)
        name = sanitize_name(self.name) if self.name else kernel_name_for(self.node_schedule, reduction)
        # the symbolic sizes the kernel takes as parameters, by name: its sizes first
        self.sizes: dict[str, sympy.Expr] = {}
        if numel is None:
            self.sizes[XNUMEL] = numel_expr
        if rnumel is None and reduction:
            self.sizes[RNUMEL] = rnumel_expr
        if self.mix_order and (rnumel is None or not reduction):
            raise UnsupportedError(BANDED_SYMBOLIC_ROW)
        self.lb = LogicalBuilder(name, numel, rnumel, reduction, self.index_dtype, banded=self.mix_order)
        self.ikernel = _helper_kernel(self.features, numel_expr, rnumel_expr)
        self.kargs = self.ikernel.args
        self.translate = IndexTranslator(self.lb, self._lookup, self.size)
        with V.set_kernel_handler(self.ikernel):
            self._decide_inplace()
            self._replay(DisableReduction, EnableReduction)
        if self.mix_order:
            self.lb.close_band()
        self._finish()
        return Lowered(
            kernel=self.lb.kernel,
            args=self._args(),
            numel=numel,
            rnumel=rnumel,
            sizes=self._sizes(),
            reductions=list(self.reductions),
            index_dtype=self.index_dtype.name,
            removed_buffers=frozenset(self.ikernel.removed_buffers),
            inplaced_to_remove=frozenset(self.ikernel.inplaced_to_remove),
            inplace_update_buffers=dict(self.ikernel.inplace_update_buffers),
            node_names=[n.get_name() for n in nodes],
            accesses=self.accesses,
            inductor_kernel=self.ikernel,
            column_sums=list(self.partials),
        )

    def _index_dtype(self, total: int | None) -> DType:
        try:
            import torch

            return i32 if self.features.select_index_dtype() == torch.int32 else i64
        except Exception:
            return i32 if total is not None and total <= 2**31 - 1 else i64

    def _decide_inplace(self) -> None:
        # Stock codegen's first pass: records `in_out_ptr` buffers in the helper kernel's args.
        for node in self.nodes:
            node.decide_inplace_update()

    def _replay(self, disable: Any, enable: Any) -> None:
        from torch._inductor.sizevars import SimplifyIndexing
        from torch._inductor.virtualized import V

        k, lb = self.ikernel, self.lb
        saved = k.inside_reduction
        inside = self.reduction
        try:
            for item in self.node_schedule:
                if item is disable:
                    if lb.loop is not None:
                        lb.close_loop()
                    inside = False
                    continue
                if item is enable:
                    inside = self.reduction
                    continue
                if inside and lb.loop is None:
                    lb.open_loop()
                k.inside_reduction = inside if self.reduction else saved
                try:
                    index_vars = k.split_and_set_ranges(item.get_ranges())
                except Exception as e:
                    if type(e).__name__ in ("CantSplit", "AssertionError"):
                        raise UnsupportedError(CANNOT_SPLIT_RANGES) from None
                    raise
                handler = TileOpsHandler(self)
                with V.set_ops_handler(SimplifyIndexing(handler, item.ranges_from_index_vars(index_vars))):
                    item._body(*index_vars)
            if lb.loop is not None:
                lb.close_loop()
        finally:
            k.inside_reduction = saved

    # -- index variables

    def _lookup(self, sym: sympy.Symbol) -> TV | None:
        if sym in self.indirect_vars:
            return self.indirect_vars[sym]
        entry = self.ikernel.range_tree_nodes.get(sym)
        if entry is None:
            return None
        prefix = "x" if entry.prefix == "x" else "r" if entry.prefix.startswith("r") else None
        if prefix is None:
            return None
        divisor, length = sympy.sympify(entry.divisor), sympy.sympify(entry.length)
        return self.lb.index_var(
            entry.name,
            prefix,
            None if divisor == 1 else self.size(divisor),
            None if _spans_root(entry) else self.size(length),
        )

    def size(self, expr: Any) -> TV:
        """A scalar of the index dtype holding `expr`, an integer or an expression of the graph's
        size symbols: a constant, or a size parameter the wrapper passes (one per expression)."""
        e = symbolic_size(expr)
        if e.is_Integer:
            return self.lb.const(int(e), self.index_dtype)
        e = _base_symbols(e)
        name = next((n for n, v in self.sizes.items() if v == e), None)
        if name is None:
            name = f"ks{sum(n.startswith('ks') for n in self.sizes)}"
            self.sizes[name] = e
        return self.lb.size_param(name)

    def _sizes(self) -> dict[str, sympy.Expr]:
        """The size parameters the kernel kept, in parameter order."""
        params = [p.name_hint for p in self.lb.kernel.params if not isinstance(p.type, PointerType)]
        return {n: self.sizes[n] for n in params if n in self.sizes}

    def _is_root(self, sym: str, prefix: str) -> bool:
        for s, entry in self.ikernel.range_tree_nodes.items():
            if str(s) == sym:
                return entry.prefix.startswith(prefix) and sympy.sympify(entry.divisor) == 1 and _spans_root(entry)
        return False

    def _note_access(self, param: str, kind: str, index: sympy.Expr) -> None:
        form = self.translate.form(index)
        fastest = "r" if self.reduction else "x"
        contiguous = any(c == 1 and self._is_root(s, fastest) for s, c in form.strides())
        gather = bool(sympy.sympify(index).free_symbols & set(self.indirect_vars))
        self.accesses.append(Access(param, kind, str(index), form.strides(), form.is_affine and not gather, contiguous))

    def simplify(self, index: Any) -> sympy.Expr:
        """The index as stock codegen writes it: var ranges applied and contiguous range-tree
        variables merged (`x0 + 1000*x1` → `x2`, a new variable equal to xindex)."""
        index = sympy.sympify(index)
        try:
            return self.ikernel.simplify_indexing(index)
        except Exception:
            return index

    def index(self, expr: Any, dtype: DType) -> TV:
        expr = self.simplify(expr)
        tv = self.translate(expr, dtype)
        self.index_exprs.setdefault(id(tv.value), expr)
        return tv

    # -- gathers: indices loaded from memory

    def indirect(self, value: TV, size: Any, check: bool, wrap_neg: bool) -> sympy.Symbol:
        """A symbol standing for the loaded index `value` in the index expressions that follow, as
        stock codegen's `indirect_indexing`: negative indices wrap (`i + size`), and the result is
        checked to lie in [0, size) where Inductor asks for the check. The index is computed in
        the kernel's index dtype, which Inductor chose for the sizes of the buffers indexed."""
        from torch._inductor.utils import sympy_index_symbol_with_prefix
        from torch.utils._sympy.symbol import SymT

        lb = self.lb
        n = symbolic_size(size)
        key = (id(value.value), n, check, wrap_neg)
        if key in self.indirect_keys:  # the same loaded index, met again in a later loop's body
            return self.indirect_keys[key]
        if wrap_neg:
            negative = lb.elementwise(
                "tile.cmp", [value, lb.const(0, value.dtype)], dtype=i1, hint="neg", predicate="lt"
            )
            wrapped = lb.elementwise("tile.add", [value, self._bound(n, value.dtype)], hint="wrap")
            value = lb.elementwise("tile.where", [negative, wrapped, value], hint="idx")
        sym = sympy_index_symbol_with_prefix(SymT.TMP, len(self.indirect_vars))
        if _asserts_enabled(check):
            self._assert_in_bounds(value, n, str(sym))
        self.indirect_vars[sym] = lb.cast(value, self.index_dtype, hint="idx")
        self.indirect_keys[key] = sym
        return sym

    def check_bounds(self, expr: Any, size: Any, lower: bool, upper: bool) -> None:
        """Inductor's bounds check of an index it computed itself (an indirect index whose value
        it could derive), when the check was asked for."""
        if not (lower or upper) or not _asserts_enabled(True):
            return
        expr = self.simplify(expr)
        self._assert_in_bounds(self.translate(expr, i64), symbolic_size(size), str(expr), lower, upper)

    def _bound(self, n: sympy.Expr, dtype: DType) -> TV:
        """The size `n` in `dtype` (a loaded index's)."""
        return self.lb.const(int(n), dtype) if n.is_Integer else self.lb.cast(self.size(n), dtype, hint="bound")

    def _assert_in_bounds(self, index: TV, n: sympy.Expr, text: str, lower: bool = True, upper: bool = True) -> None:
        lb = self.lb
        bounds = [("ge", lb.const(0, index.dtype), "lo")] * lower + [("lt", self._bound(n, index.dtype), "hi")] * upper
        conds = [
            lb.elementwise("tile.cmp", [index, b], dtype=i1, hint=hint, predicate=pred) for pred, b, hint in bounds
        ]
        ok = conds[0] if len(conds) == 1 else lb.elementwise("tile.and", conds, hint="inb")
        shown = " <= ".join(["0"] * lower + [text]) + (f" < {n}" if upper else "")
        lb.check(ok, f"index out of bounds: {shown}")

    # -- random numbers

    def load_seed(self, name: str, offset: Any) -> TV:
        """The seed at `offset` of the seeds Inductor draws once per graph run (one per random
        op); stock passes the offset as an argument, tilec writes it into the kernel."""
        self._check_random_device()
        return self.load(name, sympy.Integer(static_int(offset)))

    def rand(self, seed: TV, offset: TV, dist: str) -> TV:
        """Inductor's `rand`/`randn` at `offset` (the element's linear index in the random
        tensor), from the Philox stream stock's kernel would draw from (`_stock_lanes`)."""
        self._check_random_device()
        lanes = self._stock_lanes()
        if lanes == 4 and not self._linear_offset(offset):
            raise UnsupportedError(RANDOM_BLOCK_DEPENDENT)
        off = self.lb.cast(offset, u32, hint="off")
        return self.lb.elementwise("tile.rand", [seed, off], dtype=f32, hint="rand", dist=dist, lanes=lanes)

    def _check_random_device(self) -> None:
        from torch._inductor import config
        from torch._inductor.virtualized import V

        if V.graph.get_current_device_or_throw().type != "cuda":
            raise UnsupportedError(RANDOM_ON_CPU)
        if getattr(config, "align_random_eager", False):
            raise UnsupportedError(RANDOM_ALIGNED_WITH_EAGER)

    def _stock_lanes(self) -> int:
        """4 where stock's kernel calls `triton_helpers.rand4x` (Inductor versions that have it,
        for a kernel whose Triton tensors are 1-D: a pointwise kernel tiled along x alone), else 1
        (`tl.rand`, one Philox counter per element)."""
        if self.random_lanes is None:
            self.random_lanes = 1
            try:
                from torch._inductor.codegen.triton import TritonOverrides
            except ImportError:  # pragma: no cover - both torch versions tilec runs with have it
                return 1
            if hasattr(TritonOverrides, "_can_use_4x_random") and not self.reduction:
                self.random_lanes = 4 if len(self._stock_tiling()) == 1 else 1
        return self.random_lanes

    def _stock_tiling(self) -> dict[str, Any]:
        """The pointwise tiling stock code generation picks for this kernel ({"x": n} or
        {"y": m, "x": n}), without its reduction entry."""
        f = self.features
        tiling = self.scheduling.get_tiling_and_scores(
            f.node_schedule, f.numel, f.reduction_numel, getattr(f, "coalesce_analysis", None)
        )[0]
        return {k: v for k, v in tiling.items() if not k.startswith("r")}

    def _linear_offset(self, offset: TV) -> bool:
        """Whether `offset` is the kernel's x index plus a multiple of 4 in a kernel of at least 4
        elements (rand4x's lanes then follow the offsets, whatever its block size)."""
        expr = self.index_exprs.get(id(offset.value))
        if expr is None:
            return False
        root = [s for s in expr.free_symbols if self._is_root(str(s), "x")]
        if len(root) != 1:
            return False
        rest = sympy.expand(expr - root[0])
        numel = self.lb.numel  # a block of fewer than 4 (a symbolic size may be one) draws tl.rand's stream
        return bool(rest.is_Integer and int(rest) % 4 == 0 and numel is not None and numel >= 4)

    def note_reduction(self, rtype: str) -> None:
        self.reductions[rtype] = None

    # -- memory

    def _dtype(self, name: str) -> DType:
        from torch._inductor.virtualized import V

        from tilec.frontend.dtypes import to_tilec

        return to_tilec(V.graph.get_dtype(name))

    def _same_index(self, a: sympy.Expr, b: sympy.Expr) -> bool:
        if a == b:
            return True
        from torch._inductor.virtualized import V

        defs = {s: e.expr for s, e in self.ikernel.range_tree_nodes.items()}
        try:
            return bool(V.graph.sizevars.simplify(sympy.sympify(a).subs(defs) - sympy.sympify(b).subs(defs)) == 0)
        except Exception:
            return False

    def load(self, name: str, index: sympy.Expr) -> TV:
        index = self.simplify(index)
        if name in self.atomic_names:
            raise UnsupportedError(RELOAD_ATOMIC)
        rec = self.stored.get(name)
        if rec is not None:
            if not self._same_index(rec.index, index):
                raise UnsupportedError(RELOAD_OTHER_INDEX)
            if isinstance(rec.value, PendingReduction):
                return self.lb.resolve(rec.value)
            if rec.value.loop is None or rec.value.loop is self.lb.loop:
                return rec.value
            self.must_keep.add(name)  # written in an earlier loop: read it back from memory
        if _passed_by_value(name):
            return self._scalar_argument(name)
        param = self.kargs.input(name)
        self._note_access(param, "load", index)
        offsets = self.translate(index)
        read_only = name not in self.kargs.inplace_buffers and name not in self.store_names
        value = self.lb.load(param, self._dtype(name), offsets, read_only=read_only)
        self.load_info.setdefault(id(value.value), (self._broadcast(index, offsets), self.accesses[-1].strides))
        return value

    def _scalar_argument(self, name: str) -> TV:
        """A buffer the wrapper passes by value (`buf.item()`: a 0-d CPU tensor), read as the
        scalar parameter it is. The GPU launcher passes numbers through at every call, but a
        Python bool would be bound as a constant (Triton's launch has no per-call form for it
        the launcher can find), so a boolean one stays stock on the GPU."""
        from torch._inductor.virtualized import V

        dtype = self._dtype(name)
        if V.graph.get_current_device_or_throw().type != "cpu" and dtype == i1:
            raise UnsupportedError(SCALAR_ARGUMENT)
        return self.lb.scalar_param(self.kargs.input(name), dtype)

    def _broadcast(self, index: sympy.Expr, offsets: TV) -> bool:
        """Whether a load reads the same element for several iterations (stock codegen's
        `is_broadcasted`): a weight in a row loop, a per-row value, a bias in a pointwise kernel."""
        if self.lb.loop is not None:
            return offsets.dims != "xr"
        if self.reduction:
            return offsets.dims != "x"
        return not any(self._is_root(str(s), "x") for s in sympy.sympify(index).free_symbols)

    def _evictions(self) -> None:
        """Inductor's cache hints: evict_last for data read again (broadcast or non-coalesced
        loads, and a row read again by a later loop), evict_first for a row's last read."""
        loads = [op for op in self.lb.kernel.walk() if isinstance(op, LoadOp)]
        for i, op in enumerate(loads):
            broadcast, strides = self.load_info.get(id(op.result), (False, ()))
            if broadcast or not any(c == 1 for _, c in strides):
                op.attributes["eviction"] = "evict_last"
            elif self.reduction and op.parent is not self.lb.kernel.body:  # in a loop
                again = any(later.ptr is op.ptr for later in loads[i + 1 :])
                op.attributes["eviction"] = "evict_last" if again else "evict_first"

    def _begin_store(self, name: str, index: sympy.Expr, value: TV | PendingReduction) -> str | None:
        from torch._inductor.virtualized import V

        index = self.simplify(index)
        self.stored[name] = _Stored(index, value)
        self.store_names[name] = None
        if name in V.graph.removed_buffers:
            return None
        param = self.kargs.output(name)
        self._note_access(param, "store", index)
        return param

    def store(self, name: str, index: sympy.Expr, value: TV, atomic: bool = False) -> None:
        """`atomic`: `store(..., mode="atomic_add")`, a scatter that accumulates (the embedding's
        weight gradient, `index_add_`), each element added atomically."""
        param = self._begin_store(name, index, value)
        if atomic:
            self.atomic_names.add(name)
        if param is not None:
            op = self.lb.store(param, self._dtype(name), self.translate(self.simplify(index)), value, atomic)
            self.store_ops.append((name, op))

    def store_reduction(self, name: str, index: sympy.Expr, value: Any) -> None:
        if not isinstance(value, PendingReduction):
            self.store(name, index, value if isinstance(value, TV) else TileOpsHandler(self).tv(value))
            return
        param = self._begin_store(name, index, value)
        if param is None:
            return
        offsets, dtype, loop = self.translate(self.simplify(index)), self._dtype(name), value.loop

        def finish(final: TV) -> None:
            self.store_ops.append((name, self.lb.store(param, dtype, offsets, final)))

        loop.pending_stores.append((finish, value))

    def partial_accumulate(self, name: str, rtype: str, value: TV) -> None:
        """A mix-order kernel's column reduction of `name` over its band (Inductor numbers the
        workspace's sums in the order it meets them, as this does)."""
        if not self.mix_order:
            raise UnsupportedError(BANDED_OUTSIDE_MIX_ORDER)
        if rtype != "sum":
            raise UnsupportedError(BANDED_REDUCTION_TYPE)
        self.lb.column_sum(value)
        self.partials.append(name)
        self.note_reduction(rtype)

    # -- after the replay

    def _finish(self) -> None:
        """Stores to buffers every user of which is in this kernel go, as stock codegen drops them."""
        from torch._inductor.virtualized import V
        from torch.utils._ordered_set import OrderedSet

        k = self.ikernel
        scheduler = V.graph.scheduler
        if scheduler is not None:
            names = list(self.store_names)
            fused = OrderedSet(scheduler.name_to_buf[b].defining_op_name() for b in names if b in scheduler.name_to_buf)
            drop = [
                n
                for n in names
                if n not in self.must_keep
                and n not in self.kargs.input_buffers
                and scheduler.can_buffer_be_removed_through_fusion(n, fused)
            ]
            for n in drop:
                if n in self.kargs.inplace_buffers:
                    buf = self.kargs.inplace_buffers[n]
                    if not hasattr(buf, "other_names"):
                        continue
                    if all(o in drop for o in buf.other_names):
                        k.remove_inplace_buffer(n)
                    k.inplaced_to_remove.add(n)
                else:
                    k.remove_buffer(n)
        gone = set(k.removed_buffers) | set(k.inplaced_to_remove)
        erased = False
        for name, op in self.store_ops:
            if name in gone and op.parent is not None:
                op.erase()
                erased = True
        if erased:
            self.lb.erase_dead()
        self._evictions()
        self._order_params()

    def _param_order(self) -> list[tuple[str, str]]:
        """(param, buffer) in stock Triton's order: in-place, inputs, outputs."""
        out: list[tuple[str, str]] = []
        seen: set[str] = set()
        for buf in self.kargs.inplace_buffers.values():
            inner = getattr(buf, "inner_name", None)
            if inner is not None and inner not in seen:
                seen.add(inner)
                out.append((inner, buf.other_names[-1]))
        for outer, inner in [*self.kargs.input_buffers.items(), *self.kargs.output_buffers.items()]:
            if outer in self.kargs.inplace_buffers or not isinstance(inner, str) or inner in seen:
                continue
            seen.add(inner)
            out.append((inner, outer))
        return out

    def _order_params(self) -> None:
        kernel = self.lb.kernel
        used: set[int] = set()
        for op in kernel.walk():
            used.update(id(v) for v in op.operands)
        by_name = {p.name_hint: p for p in kernel.params if id(p) in used}
        order = [p for p, _ in self._param_order() if p in by_name]
        order += sorted(n for n in by_name if n not in order)  # type: ignore[misc]
        self.buffers = dict(self._param_order())
        kernel.body.args = [by_name[n] for n in order]
        for i, a in enumerate(kernel.body.args):
            a.index = i
        kernel.param_attrs = [{} for _ in kernel.body.args]
        # a size that is a multiple of 16 (or 8, 4, 2) for every value of the graph's symbols
        # says so: the emitters let Triton know, so a symbolic size still gets 16-byte accesses
        for a, attrs in zip(kernel.body.args, kernel.param_attrs):
            m = _power_of_two_factor(self.sizes[a.name_hint]) if a.name_hint in self.sizes else 1
            if m > 1:
                attrs["multiple_of"] = m

    def _args(self) -> list[KernelArg]:
        kernel = self.lb.kernel
        reads: set[int] = set()
        writes: set[int] = set()
        for op in kernel.walk():
            if isinstance(op, LoadOp):
                reads.add(id(op.ptr))
            elif isinstance(op, StoreOp):
                writes.add(id(op.ptr))
        args = []
        for p in kernel.params:
            assert p.name_hint is not None
            if p.name_hint == WORKSPACE and self.mix_order:  # allocated by the wrapper, its rows per program
                args.append(KernelArg(p.name_hint, WORKSPACE, "write", "f32"))
                continue
            if not isinstance(p.type, PointerType):  # a symbolic size (Lowered.sizes), or a value
                if p.name_hint in self.buffers and isinstance(p.type, DType):
                    args.append(KernelArg(p.name_hint, self.buffers[p.name_hint], "value", p.type.name, (), (), 0))
                continue
            access = "read_write" if id(p) in reads and id(p) in writes else "write" if id(p) in writes else "read"
            buffer = self.buffers.get(p.name_hint, "?")
            shape, strides, offset = _layout(buffer)
            args.append(KernelArg(p.name_hint, buffer, access, p.type.pointee.name, shape, strides, offset))
        return args


def traced_values() -> dict[Any, Any]:
    """The value every backed size symbol of the graph being compiled had when it was traced
    (Dynamo's hints). Inside Inductor's compile only."""
    from torch._inductor.virtualized import V

    env = V.graph.sizevars.shape_env
    return env.backed_var_to_val if hasattr(env, "backed_var_to_val") else env.var_to_val  # renamed in torch 2.13


def _at_traced(e: Any, values: dict[Any, Any]) -> int:
    return int(sympy.sympify(e).xreplace(values))


def traced_sizes(lowered: Lowered) -> list[int]:
    """The kernel's size arguments (`Lowered.sizes`) for the sizes the graph was traced with."""
    values = traced_values()
    return [_at_traced(e, values) for e in lowered.sizes.values()]


def banded_sizes(lowered: Lowered) -> tuple[int, int]:
    """A banded kernel's rows and row length: its own, or where symbolic the sizes the graph was
    traced with."""
    from tilec.frontend.logical import RNUMEL, XNUMEL

    sizes = dict(zip(lowered.sizes, traced_sizes(lowered))) if lowered.sizes else {}
    rows = lowered.numel if lowered.numel is not None else sizes[XNUMEL]
    n = lowered.rnumel if lowered.rnumel is not None else sizes[RNUMEL]
    return int(rows), int(n)


def traced_layouts(lowered: Lowered) -> dict[str, tuple[tuple[int, ...], tuple[int, ...], int]]:
    """Each argument buffer's (shape, strides, offset) for the sizes the graph was traced with."""
    from torch._inductor.virtualized import V

    values = traced_values()
    out = {}
    for a in lowered.args:
        if a.buffer == WORKSPACE:  # not a graph buffer: its size follows the plan's band (RSPLIT)
            continue
        layout = V.graph.get_buffer(a.buffer).get_layout()
        shape = tuple(_at_traced(n, values) for n in layout.size)
        out[a.buffer] = (shape, tuple(_at_traced(n, values) for n in layout.stride), _at_traced(layout.offset, values))
    return out


def _base_symbols(e: sympy.Expr) -> sympy.Expr:
    """`e` in the graph's own size symbols (Inductor's precomputed sizes replaced by what they
    stand for), as the wrapper can evaluate it."""
    from torch._inductor.virtualized import V

    try:
        inverse = V.graph.sizevars.inv_precomputed_replacements
    except Exception:
        return e
    return sympy.sympify(e).xreplace(inverse) if inverse else e


def _power_of_two_factor(expr: Any, cap: int = MAX_MULTIPLE_OF) -> int:
    """The largest power of two up to `cap` that divides `expr` (an expression of the graph's
    positive integer size symbols) whatever the symbols' values: that of its integer content
    (`5632*s0` -> 16, `2048*s0 + 4096` -> 16, `s0 + 1` -> 1); 1 where it is not a polynomial."""
    e = sympy.sympify(expr)
    try:
        coeff = sympy.Poly(e, *sorted(e.free_symbols, key=str)).content() if e.free_symbols else e
    except sympy.PolynomialError:  # FloorDiv, ModularIndexing, ...: no content claimed
        return 1
    if not coeff.is_Integer or coeff == 0:
        return 1
    c = abs(int(coeff))
    return min(c & -c, cap)


def _spans_root(entry: Any) -> bool:
    """Whether a range-tree variable runs over its whole root (divisor x length = the root's size)."""
    return bool(sympy.simplify(sympy.sympify(entry.divisor) * entry.length - entry.root.numel) == 0)


def _asserts_enabled(check: bool) -> bool:
    """Whether stock codegen writes a bounds check here (`assert_indirect_indexing`, on by default)."""
    try:
        from torch._inductor.codegen.common import generate_assert
    except ImportError:  # pragma: no cover - both torch versions tilec runs with have it
        return check
    return bool(generate_assert(check))


def _passed_by_value(name: str) -> bool:
    """Whether the wrapper passes buffer `name` as a scalar (`x.item()`), not a pointer: Inductor
    does so for a 0-d CPU tensor a GPU kernel reads (and on the CPU for one it does not mutate)."""
    try:
        from torch._inductor.codegen.triton_utils import should_unwrap_unspec_arg
    except ImportError:  # pragma: no cover - both torch versions tilec runs with have it
        return False
    return bool(should_unwrap_unspec_arg(name))


def _layout(buffer: str) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None, int | None]:
    """A buffer's static size, stride and offset, in elements (None where symbolic)."""
    from torch._inductor.virtualized import V

    def ints(xs: Any) -> tuple[int, ...] | None:
        try:
            return tuple(int(x) for x in xs)
        except (TypeError, ValueError):
            return None

    try:
        layout = V.graph.get_buffer(buffer).get_layout()
        offset = ints([layout.offset])
        return ints(layout.size), ints(layout.stride), offset[0] if offset else None
    except Exception:
        return None, None, None


def _helper_kernel(features: Any, numel: sympy.Expr, rnumel: sympy.Expr) -> Any:
    """A TritonKernel over {x: numel, r0_: rnumel}, used only to map ranges and name arguments."""
    from torch._inductor import metrics
    from torch._inductor.codegen.triton import TritonKernel

    tiling = {"x": numel, "r0_": rnumel}
    count = metrics.generated_kernel_count
    try:
        try:
            return TritonKernel(
                tiling, features=features, override_persistent_reduction=False, override_cooperative_reduction=False
            )
        except TypeError:
            return TritonKernel(tiling, features=features)
    finally:
        metrics.generated_kernel_count = count
