"""Planned tile IR → Gluon source (`@gluon.jit`, Hopper and newer) plus a host launcher.

Every buffer, barrier and layout the passes chose becomes one line of Gluon: layouts are module
constants (wrapped in `gl.constexpr`, so they are part of Triton's cache key), shared memory is
allocated with the IR's shapes and layouts, TMA copies and mbarrier waits use the IR's phases,
fences sit where the IR has them, and each warp-specialized partition becomes a function.

The emitter prints what the IR says and decides nothing a pass could: the CTA barrier that keeps
two shared-memory reads of one buffer two reads (Triton's CSE would merge them) is a
`tile.cta_barrier` the `separate-reads` pass placed, printed like any other. It refuses IR that
would fail at launch: a TMA box whose inner dimension is under 16 bytes or not a power of
two, shared memory over the budget, invalid swizzles (the layouts reject those themselves).

The emitted module defines `KERNEL`, `SIGNATURE` (Triton's type string per parameter, for
ahead-of-time compilation), `CONSTEXPRS`, `DIVISIBLE` (the pointer parameters), `NUM_WARPS`,
`MAXNREG`, `GRID(*args, num_sms)`, `descriptors(*args)`, `launch_args(*args, num_sms, descs=None)`
(the grid and the kernel's whole positional argument list, constexprs included) and
`launch(*args, num_sms=None, descs=None)`, which returns Triton's compiled kernel (`descs`: the dict
`descriptors` returns, when the caller keeps it between launches), and `compile_only` (the same
arguments: compiles what `launch` would launch, without launching it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilec.emit.common import (
    LAUNCHER_NAMES,
    TRITON_TYPES,
    EmitError,
    check_source,
    py_expr,
    require_planned,
    signature_type,
    single_kernel,
)
from tilec.emit.gluon_api import gluon_api
from tilec.emit.python import HELPERS, PythonEmitter
from tilec.ir.core import Kernel, Module, Operation, Value, enclosing_ops
from tilec.ir.dtypes import DType
from tilec.ir.expr import evaluate
from tilec.ir.layouts import BlockedLayout, Layout, NVMMASharedLayout, SliceLayout, SwizzledSharedLayout
from tilec.ir.ops import (
    AsyncCopyOp,
    ClusterGatherOp,
    ForOp,
    MBarrierOp,
    MBarrierWaitOp,
    SmemIndexOp,
    SmemLoadOp,
    SmemSliceOp,
    SmemStoreOp,
    TmaLoadOp,
    TmaStoreOp,
    WarpSpecializeOp,
    yielded_values,
)
from tilec.ir.printer import layout_aliases
from tilec.ir.target import DEFAULT
from tilec.ir.types import MBarrierType, PointerType, SharedBufferType, TensorDescType, TileType
from tilec.ir.verify import verify

RESERVED = set(LAUNCHER_NAMES) | {
    "descriptors",
    "MAXNREG",
    "NUM_CTAS",
    "async_copy",
    "TensorDescriptor",
    "fence_async_shared",
    "descs",
}


@dataclass
class GluonModule:
    """The emitted source of one kernel, with what an ahead-of-time compile needs."""

    kernel_name: str
    source: str
    params: list[str] = field(default_factory=list)
    num_warps: int = 4
    maxnreg: int | None = None


def _cga(bases: tuple[tuple[int, ...], ...]) -> str:
    return f", cga_layout={[list(b) for b in bases]}" if bases else ""


def layout_constructor(layout: Layout, names: dict[Layout, str]) -> str:
    if isinstance(layout, BlockedLayout):
        return (
            f"gl.BlockedLayout({list(layout.size_per_thread)}, {list(layout.threads_per_warp)}, "
            f"{list(layout.warps_per_cta)}, {list(layout.order)}{_cga(layout.cga_layout)})"
        )
    if isinstance(layout, SliceLayout):
        return f"gl.SliceLayout({layout.dim}, {names.get(layout.parent) or layout_constructor(layout.parent, names)})"
    if isinstance(layout, NVMMASharedLayout):
        extra = (", transposed=True" if layout.transposed else "") + (", fp4_padded=True" if layout.fp4_padded else "")
        return (
            f"gl.NVMMASharedLayout(swizzle_byte_width={layout.swizzle_byte_width}, "
            f"element_bitwidth={layout.element_bitwidth}, rank={layout.rank}{extra})"
        )
    if isinstance(layout, SwizzledSharedLayout):
        return (
            f"gl.SwizzledSharedLayout({layout.vec}, {layout.per_phase}, {layout.max_phase}, {list(layout.order)}"
            f"{_cga(layout.cga_layout)})"
        )
    raise EmitError(f"no Gluon form for layout {layout!r}")


class GluonEmitter(PythonEmitter):
    L = "gl"
    target = "Gluon"

    def __init__(self, kernel: Kernel, smem_budget: int = DEFAULT.smem_per_block) -> None:
        require_planned(kernel, "Gluon")
        verify(kernel, smem_budget)
        super().__init__(kernel, RESERVED)
        aliases = layout_aliases(Module([kernel]))
        self.layout_names: dict[Layout, str] = {}
        for layout, alias in aliases.items():
            self.layout_names[layout] = self.names.fresh(alias[1:].upper())
        self.api = gluon_api()
        self.partitions: list[str] = []  # emitted partition functions
        self.constants: dict[str, str] = {}  # module-level constexprs (name -> value source)
        self.check_launchable()

    # -- layouts

    def layout(self, layout: Layout | None) -> str | None:
        if layout is None:
            return None
        if layout in self.layout_names:
            return self.layout_names[layout]
        return layout_constructor(layout, self.layout_names)

    def constant(self, base: str, value: str) -> str:
        """The name of a module-level constexpr holding `value` (Python source), one per value."""
        for name, known in self.constants.items():
            if known == value:
                return name
        name = self.fresh(base)
        self.constants[name] = value
        return name

    def arange_layout(self, t: TileType, axis: int) -> str:
        assert t.layout is not None and t.rank == 2, "positions are computed for 2-D tiles"
        return f", layout={self.layout(SliceLayout(1 - axis, t.layout))}"

    # -- checks the hardware would otherwise fail at launch

    def check_launchable(self) -> None:
        for p in self.k.params:
            t = p.type
            if not isinstance(t, TensorDescType):
                continue
            block = [evaluate(d, self.k.bound_constexprs()) for d in t.block_shape]
            inner_bytes = block[-1] * t.dtype.bytes
            if inner_bytes < 16:
                raise EmitError(
                    f"TMA descriptor %{p.name_hint}: the inner box dimension is {inner_bytes} bytes; TMA needs at least 16",
                    self.k.loc,
                )
            for d in block:  # (boxes wider than 256 are split into several TMA messages by Triton)
                if d & (d - 1):
                    raise EmitError(
                        f"TMA descriptor %{p.name_hint}: box dimensions must be powers of two, got {block}", self.k.loc
                    )

    # -- the kernel

    def params(self) -> list[str]:
        return [self.n(p) for p in self.k.params]

    def emit_kernel(self) -> GluonModule:
        k = self.k
        params = self.params()
        sig = ", ".join([self.kernel_param(n) for n in params] + [f"{c}: gl.constexpr" for c in k.constexprs])
        self.lines += [f"@gluon.jit{self.jit_options(kernel=True)}", f"def {self.kname}({sig}):"]
        self.scaled_prologue()
        self.body(k.body, 1)
        kernel_src = "\n".join(self.lines)

        header = [
            f"# Generated by tilec from kernel @{k.name}.",
            "import torch",
            "import triton",
            "import triton.language as tl",
            "from triton.experimental import gluon",
            "from triton.experimental.gluon import language as gl",
            "from triton.experimental.gluon.language.nvidia.ampere import async_copy",
            "from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma",
            "from triton.experimental.gluon.nvidia.hopper import TensorDescriptor",
        ]
        layouts = [
            f"{name} = gl.constexpr({layout_constructor(layout, self.layout_names)})"
            for layout, name in self.layout_names.items()
        ]
        layouts += [f"{name} = gl.constexpr({value})" for name, value in self.constants.items()]
        parts = [
            "\n".join(header),
            "\n".join(layouts),
            *[HELPERS[h] for h in sorted(self.helpers)],
            *self.partitions,
            kernel_src,
            self.host(params),
        ]
        source = "\n\n\n".join(p.rstrip("\n") for p in parts if p) + "\n"
        return GluonModule(
            k.name, check_source(source, "the Gluon emitter"), params, k.launch.num_warps or 4, k.launch.maxnreg
        )

    def host(self, params: list[str]) -> str:
        k = self.k
        names = {p.name_hint or "": self.n(p) for p in k.params}
        names.update({c: str(v) for c, v in k.constexprs.items()})
        names["num_sms"] = "num_sms"
        plain = [p for p in k.params if not isinstance(p.type, TensorDescType)]
        args = ", ".join(self.n(p) for p in plain)
        lead = f"{args}, " if args else ""
        sig: list[str] = []
        descs: list[str] = []
        for p in k.params:
            t = p.type
            scalar_or_pointer = signature_type(t)
            if scalar_or_pointer is not None:
                sig.append(f'"{self.kernel_param(self.n(p))}": "{scalar_or_pointer}"')
            elif isinstance(t, TensorDescType):
                block = [evaluate(d, k.bound_constexprs()) for d in t.block_shape]
                layout = self.layout_names[t.layout]
                sig.append(
                    f'"{self.n(p)}": "tensordesc<{TRITON_TYPES[t.dtype.name]}{block}," + repr({layout}.value) + ">"'
                )
                attrs = k.param_attrs[k.params.index(p)]
                src = names[attrs["source"]]
                shape = "[" + ", ".join(py_expr(e, names) for e in attrs["shape"]) + "]"
                strides = "[" + ", ".join(py_expr(e, names) for e in attrs["strides"]) + "]"
                descs.append(f'"{self.n(p)}": TensorDescriptor({src}, {shape}, {strides}, {block}, {layout}.value)')
        sig += [f'"{c}": "constexpr"' for c in k.constexprs]
        divisible = [self.n(p) for p in k.params if isinstance(p.type, PointerType)]
        grid = ", ".join(py_expr(g, names) for g in k.launch.grid)
        call = [
            self.host_arg(self.n(p)) if not isinstance(p.type, TensorDescType) else f'descs["{self.n(p)}"]'
            for p in k.params
        ]
        call += [str(v) for v in k.constexprs.values()]
        options = [f"num_warps={k.launch.num_warps}"]
        if k.launch.maxnreg is not None:
            options.append(f"maxnreg={k.launch.maxnreg}")
        if k.launch.num_ctas != 1:  # the grid counts clusters
            options.append(f"num_ctas={k.launch.num_ctas}")
        return "\n".join(
            [
                f"KERNEL = {self.kname}",
                "SIGNATURE = {" + ", ".join(sig) + "}",
                f"CONSTEXPRS = {dict(k.constexprs)!r}",
                f"DIVISIBLE = {divisible!r}",
                f"NUM_WARPS = {k.launch.num_warps}",
                f"MAXNREG = {k.launch.maxnreg}",
                f"NUM_CTAS = {k.launch.num_ctas}",
                "",
                "",
                f"def GRID({lead}num_sms=1):  # noqa: N802",
                f"    return ({grid},)",
                "",
                "",
                f"def descriptors({args}):",
                "    return {" + ", ".join(descs) + "}",
                "",
                "",
                f"def launch_args({lead}num_sms=1, descs=None):",
                "    if descs is None:",
                f"        descs = descriptors({args})",
                f"    return GRID({lead}num_sms=num_sms), ({', '.join(call)},)",
                "",
                "",
                f"def launch({lead}num_sms=None, descs=None):",
                "    if num_sms is None:",
                "        num_sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count",
                f"    grid, args = launch_args({lead}num_sms=num_sms, descs=descs)",
                f"    return {self.kname}[grid](*args, {', '.join(options)})",
                "",
                "",
                f"def compile_only({lead}num_sms=None, descs=None):",
                "    if num_sms is None:",
                "        num_sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count",
                f"    grid, args = launch_args({lead}num_sms=num_sms, descs=descs)",
                f"    return {self.kname}.warmup(*args, grid=grid, {', '.join(options)})",
            ]
        )


# ---------------------------------------------------------------------------------------------
# Gluon-only ops


def _bar(e: GluonEmitter, o: Operation) -> str:
    assert isinstance(o, MBarrierOp)
    return f"{e.n(o.bars)}.index({e.n(o.index)})"


def _smem_alloc(e: GluonEmitter, o: Operation, d: int) -> None:
    t = o.result.type
    assert isinstance(t, SharedBufferType)
    shape = ([t.slots] if t.slots is not None else []) + list(t.shape)
    dims = "[" + ", ".join(str(s) for s in shape) + "]"  # a dimension may name a constexpr
    e.assign(o, f"gl.allocate_shared_memory({e.dtype(t.dtype)}, {dims}, {e.layout(t.layout)})", d)


def _smem_index(e: GluonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, SmemIndexOp)
    e.assign(o, f"{e.n(o.buf)}.index({e.n(o.slot)})", d)


def _smem_slice(e: GluonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, SmemSliceOp)
    e.assign(o, f"{e.n(o.buf)}.slice({o.attr('start')}, {o.attr('length')}, {o.attr('dim')})", d)


def _smem_load(e: GluonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, SmemLoadOp)
    t = o.result.type
    assert isinstance(t, TileType)
    e.assign(o, f"{e.n(o.buf)}.load({e.layout(t.layout)})", d)


def _smem_store(e: GluonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, SmemStoreOp)
    e.emit(d, f"{e.n(o.buf)}.store({e.n(o.value)})", o)


def _async_copy(e: GluonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, AsyncCopyOp)
    mask = f", mask={e.n(o.mask)}" if o.mask is not None else ""
    e.emit(d, f"{e.api.cp_async}({e.n(o.dst)}, {e.n(o.ptr)} + {e.n(o.offsets)}{mask})", o)


def _async_commit(e: GluonEmitter, o: Operation, d: int) -> None:
    e.emit(d, "async_copy.commit_group()", o)


def _async_wait(e: GluonEmitter, o: Operation, d: int) -> None:
    e.emit(d, f"async_copy.wait_group({o.attr('pending')})", o)


def _async_copy_arrive(e: GluonEmitter, o: Operation, d: int) -> None:
    # each thread arrives once its own copies land (.noinc: the arrival is the count's)
    e.emit(d, f"async_copy.mbarrier_arrive({_bar(e, o)}, increment_count=False)", o)


def _coords(e: GluonEmitter, coords: list[Value]) -> str:
    return "[" + ", ".join(e.n(v) for v in coords) + "]"


def _tma_load(e: GluonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, TmaLoadOp)
    pred = f", pred={e.n(o.pred)}" if o.pred is not None else ""
    e.emit(
        d,
        f"{e.api.tma_load}({e.n(o.desc)}, {_coords(e, o.coords)}, {e.n(o.bars)}.index({e.n(o.index)}), {e.n(o.dst)}{pred})",
        o,
    )


def _tma_store(e: GluonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, TmaStoreOp)
    e.emit(d, f"{e.api.tma_store}({e.n(o.desc)}, {_coords(e, o.coords)}, {e.n(o.src)})", o)


def _tma_store_wait(e: GluonEmitter, o: Operation, d: int) -> None:
    e.emit(d, f"tma.store_wait({o.attr('pendings')})", o)


def _mbarrier_alloc(e: GluonEmitter, o: Operation, d: int) -> None:
    t = o.result.type
    assert isinstance(t, MBarrierType)
    e.assign(o, f"gl.allocate_shared_memory(gl.int64, [{t.count}, 1], mbarrier.MBarrierLayout())", d)


def _mbarrier_init(e: GluonEmitter, o: Operation, d: int) -> None:
    e.emit(d, f"mbarrier.init({_bar(e, o)}, {o.attr('count')})", o)


def _mbarrier_expect(e: GluonEmitter, o: Operation, d: int) -> None:
    nbytes = evaluate(o.attr("bytes"), e.k.bound_constexprs())
    e.emit(d, f"mbarrier.expect({_bar(e, o)}, {nbytes})", o)


def _mbarrier_wait(e: GluonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, MBarrierWaitOp)
    e.emit(d, f"mbarrier.wait({_bar(e, o)}, {e.n(o.phase)})", o)


def _mbarrier_arrive(e: GluonEmitter, o: Operation, d: int) -> None:
    e.emit(d, f"mbarrier.arrive({_bar(e, o)}, count={o.attr('count')})", o)


def _mbarrier_invalidate(e: GluonEmitter, o: Operation, d: int) -> None:
    e.emit(d, f"mbarrier.invalidate({_bar(e, o)})", o)


def _fence(e: GluonEmitter, o: Operation, d: int) -> None:
    e.emit(d, "fence_async_shared()", o)


def _cta_barrier(e: GluonEmitter, o: Operation, d: int) -> None:
    e.emit(d, f"{e.api.cta_barrier}()", o)


def push_per_use_asm(ctas: int, dtypes: list[DType]) -> tuple[str, str]:
    """Inline PTX for `push` inside a loop (`tile.cluster_gather`'s docstring), and its
    constraints: outputs as `cluster_gather_asm`'s; inputs: whether this is the site's first use
    (nonzero: thread 0 initializes both mbarriers, each expecting the cluster's bytes, then a
    cluster barrier), the use's parity p (its slots and mbarrier), its mbarrier's phase, then this
    CTA's k values. Thread r < ctas writes them into CTA r's slots of parity p (`st.async`, bytes
    completing on CTA r's mbarrier p); every thread waits on its own mbarrier p and reads every
    CTA's values; thread 0 then re-arms mbarrier p for the parity's next use."""
    k = len(dtypes)
    n = k * ctas
    code = ["f" if dt.is_float else "r" for dt in dtypes]
    constraints = ",".join([f"={c}" for c in code for _ in range(ctas)] + ["r", "r", "r"] + code)
    first, parity, phase = f"${n}", f"${n + 1}", f"${n + 2}"
    nbytes = 4 * n
    lines = [
        "{",
        ".reg .b32 %tilec_t, %tilec_me, %tilec_rs, %tilec_rb, %tilec_bar, %tilec_slots;",
        ".reg .b64 %tilec_state;",
        ".reg .pred %tilec_first, %tilec_use0, %tilec_sender, %tilec_done;",
        ".shared .align 8 .b64 tilec_push_bars[2];",
        f".shared .align 16 .b32 tilec_push_slots[{2 * n}];",
        "mov.u32 %tilec_t, %tid.x;",
        "mov.u32 %tilec_me, %cluster_ctarank;",
        "setp.eq.u32 %tilec_first, %tilec_t, 0;",
        f"setp.ne.u32 %tilec_use0, {first}, 0;",
        "@!%tilec_use0 bra tilec_push_ready_${:uid};",
        "@%tilec_first mbarrier.init.shared::cta.b64 [tilec_push_bars], 1;",
        "@%tilec_first mbarrier.init.shared::cta.b64 [tilec_push_bars+8], 1;",
        f"@%tilec_first mbarrier.arrive.expect_tx.shared::cta.b64 %tilec_state, [tilec_push_bars], {nbytes};",
        f"@%tilec_first mbarrier.arrive.expect_tx.shared::cta.b64 %tilec_state, [tilec_push_bars+8], {nbytes};",
        "fence.mbarrier_init.release.cluster;",
        "barrier.cluster.arrive.relaxed.aligned;",
        "barrier.cluster.wait.aligned;",
        "tilec_push_ready_${:uid}:",
        "mov.u32 %tilec_bar, tilec_push_bars;",
        f"mad.lo.u32 %tilec_bar, {parity}, 8, %tilec_bar;",
        "mov.u32 %tilec_slots, tilec_push_slots;",
        f"mad.lo.u32 %tilec_slots, {parity}, {4 * n}, %tilec_slots;",
        f"setp.lt.u32 %tilec_sender, %tilec_t, {ctas};",
        "@%tilec_sender mapa.shared::cluster.u32 %tilec_rs, %tilec_slots, %tilec_t;",
        "@%tilec_sender mapa.shared::cluster.u32 %tilec_rb, %tilec_bar, %tilec_t;",
        "@%tilec_sender mad.lo.u32 %tilec_rs, %tilec_me, 4, %tilec_rs;",
    ]
    lines += [
        f"@%tilec_sender st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 "
        f"[%tilec_rs+{4 * i * ctas}], ${n + 3 + i}, [%tilec_rb];"
        for i in range(k)
    ]
    lines += [
        "tilec_push_wait_${:uid}:",
        f"mbarrier.try_wait.parity.shared::cta.b64 %tilec_done, [%tilec_bar], {phase};",
        "@!%tilec_done bra tilec_push_wait_${:uid};",
    ]
    lines += [f"ld.shared.b32 ${j}, [%tilec_slots+{4 * j}];" for j in range(n)]
    lines += [f"@%tilec_first mbarrier.arrive.expect_tx.shared::cta.b64 %tilec_state, [%tilec_bar], {nbytes};", "}"]
    return "\n".join(lines), constraints


def cluster_gather_asm(ctas: int, dtypes: list[DType], exchange: str = "barriers") -> tuple[str, str]:
    """Inline PTX giving every CTA of a cluster every CTA's value of each operand (one 32-bit
    value a thread each; all of a CTA's threads hold the same ones), and its constraints. Outputs
    $0..$(k*ctas-1), value i of CTA r at $(i*ctas + r); inputs: this CTA's k values.

    `barriers`: each CTA stores its values to a shared-memory slot; a cluster barrier (release,
    acquire) makes them visible; `mapa` + `ld.shared::cluster` read every peer's slot; a second
    release/acquire barrier keeps every slot alive until all peers have read it — release, so
    that a CTA's reads are done before it arrives (a peer that leaves while a read of its slot is
    in flight faults).

    `push`: thread 0 initializes an mbarrier expecting the cluster's k*ctas*4 bytes; a cluster
    barrier (after `fence.mbarrier_init`) makes every CTA's mbarrier ready before any peer writes;
    thread r < ctas writes this CTA's values into CTA r's slots with `st.async`, each completing
    its bytes on CTA r's mbarrier; every thread waits on its own mbarrier (phase 0) and reads its
    slots. No CTA reads another's shared memory, and none leaves before its own slots are full, so
    no second barrier is needed. The mbarrier is used once: the asm runs once a kernel."""
    k = len(dtypes)
    code = ["f" if dt.is_float else "r" for dt in dtypes]
    constraints = ",".join([f"={c}" for c in code for _ in range(ctas)] + code)
    if exchange == "push":
        slot, bar = "tilec_push_slot", "tilec_push_bar"
        lines = [
            "{",
            ".reg .b32 %tilec_t, %tilec_me, %tilec_slot, %tilec_bar;",
            ".reg .b64 %tilec_state;",
            ".reg .pred %tilec_first, %tilec_sender, %tilec_done;",
            f".shared .align 8 .b64 {bar};",
            f".shared .align 16 .b32 {slot}[{ctas * k}];",
            "mov.u32 %tilec_t, %tid.x;",
            "mov.u32 %tilec_me, %cluster_ctarank;",
            "setp.eq.u32 %tilec_first, %tilec_t, 0;",
            f"@%tilec_first mbarrier.init.shared::cta.b64 [{bar}], 1;",
            f"@%tilec_first mbarrier.arrive.expect_tx.shared::cta.b64 %tilec_state, [{bar}], {4 * ctas * k};",
            "fence.mbarrier_init.release.cluster;",
            "barrier.cluster.arrive.relaxed.aligned;",
            "barrier.cluster.wait.aligned;",
            f"setp.lt.u32 %tilec_sender, %tilec_t, {ctas};",
            f"@%tilec_sender mapa.shared::cluster.u32 %tilec_slot, {slot}, %tilec_t;",
            f"@%tilec_sender mapa.shared::cluster.u32 %tilec_bar, {bar}, %tilec_t;",
            "@%tilec_sender mad.lo.u32 %tilec_slot, %tilec_me, 4, %tilec_slot;",
        ]
        lines += [
            f"@%tilec_sender st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 "
            f"[%tilec_slot+{4 * i * ctas}], ${ctas * k + i}, [%tilec_bar];"
            for i in range(k)
        ]
        lines += [
            "tilec_push_wait_${:uid}:",
            f"mbarrier.try_wait.parity.shared::cta.b64 %tilec_done, [{bar}], 0;",
            "@!%tilec_done bra tilec_push_wait_${:uid};",
        ]
        lines += [f"ld.shared.b32 ${j}, [{slot}+{4 * j}];" for j in range(k * ctas)]
        return "\n".join(lines + ["}"]), constraints
    assert exchange == "barriers", exchange
    slot = "tilec_cluster_slot"
    lines = ["{", ".reg .b32 %tilec_addr;", f".shared .align 16 .b32 {slot}[{k}];"]
    lines += [f"st.shared.b32 [{slot}+{4 * i}], ${ctas * k + i};" for i in range(k)]
    lines += ["barrier.cluster.arrive.release.aligned;", "barrier.cluster.wait.acquire.aligned;"]
    for r in range(ctas):
        lines.append(f"mapa.shared::cluster.u32 %tilec_addr, {slot}, {r};")
        lines += [f"ld.shared::cluster.b32 ${i * ctas + r}, [%tilec_addr+{4 * i}];" for i in range(k)]
    lines += ["barrier.cluster.arrive.release.aligned;", "barrier.cluster.wait.acquire.aligned;", "}"]
    return "\n".join(lines), constraints


def _cluster_gather(e: GluonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, ClusterGatherOp)
    ctas = e.k.launch.num_ctas
    dtypes = [v.type.dtype for v in o.values]  # type: ignore[attr-defined]
    loop = next(enclosing_ops(o), None)
    operands = [e.n(v) for v in o.values]
    if o.attr("exchange") == "push" and isinstance(loop, ForOp) and not loop.attr("unroll"):
        # its use: the loop's iteration; its flags, tiles like its values
        asm, constraints = push_per_use_asm(ctas, dtypes)
        t = o.values[0].type
        assert isinstance(t, TileType)
        use = f"(({e.n(loop.induction_var)} - {e.bound(loop.lower)}) // {e.bound(loop.step)})"
        flags = [f"{use} == 0", f"{use} % 2", f"({use} // 2) % 2"]
        tiles = [f"gl.full([{ctas}], ({f}).to(gl.int32), gl.int32, layout={e.layout(t.layout)})" for f in flags]
        operands = tiles + operands
        name = "CLUSTER_PUSH"
    else:  # at the top level (or unrolled: each copy a site of its own, used once)
        asm, constraints = cluster_gather_asm(ctas, dtypes, o.attr("exchange"))
        name = "CLUSTER_GATHER"
    code, codes = e.constant(name, repr(asm)), e.constant(f"{name}_C", repr(constraints))
    out = ", ".join(e.dtype(dt) for dt in dtypes for _ in range(ctas))
    call = f"gl.inline_asm_elementwise({code}, {codes}, [{', '.join(operands)}], dtype=[{out}], is_pure=False, pack=1)"
    e.emit(d, f"{', '.join(e.n(r) for r in o.results)} = {call}", o)


def _warp_specialize(e: GluonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, WarpSpecializeOp)
    entries = []
    for i, region in enumerate(o.regions):
        fn = e.fresh(f"{e.k.name}_{'default' if i == 0 else f'worker{i}'}")
        saved, e.lines = e.lines, []
        e.lines += [f"@gluon.jit{e.jit_options()}", f"def {fn}({', '.join(e.n(a) for a in region.args)}):"]
        e.body(region, 1)
        returned = yielded_values(region)
        if returned:
            e.emit(1, f"return {', '.join(e.n(v) for v in returned)}")
        e.partitions.append("\n".join(e.lines))
        e.lines = saved
        captures = [e.n(v) for v in o.partition_captures(i)]
        entries.append(f"({fn}, ({', '.join(captures)}{',' if len(captures) == 1 else ''}))")
    call = f"gl.warp_specialize([{', '.join(entries)}], {o.attr('worker_warps')}, {o.attr('worker_regs')})"
    if o.results:
        e.emit(d, f"{', '.join(e.n(r) for r in o.results)} = {call}", o)
    else:
        e.emit(d, call, o)


GluonEmitter.handlers = {
    "tile.smem_alloc": _smem_alloc,
    "tile.smem_index": _smem_index,
    "tile.smem_slice": _smem_slice,
    "tile.smem_load": _smem_load,
    "tile.smem_store": _smem_store,
    "tile.async_copy": _async_copy,
    "tile.async_commit": _async_commit,
    "tile.async_wait": _async_wait,
    "tile.async_copy_arrive": _async_copy_arrive,
    "tile.tma_load": _tma_load,
    "tile.tma_store": _tma_store,
    "tile.tma_store_wait": _tma_store_wait,
    "tile.mbarrier_alloc": _mbarrier_alloc,
    "tile.mbarrier_init": _mbarrier_init,
    "tile.mbarrier_expect": _mbarrier_expect,
    "tile.mbarrier_wait": _mbarrier_wait,
    "tile.mbarrier_arrive": _mbarrier_arrive,
    "tile.mbarrier_invalidate": _mbarrier_invalidate,
    "tile.fence_async_shared": _fence,
    "tile.cta_barrier": _cta_barrier,
    "tile.cluster_gather": _cluster_gather,
    "tile.warp_specialize": _warp_specialize,
}


def emit_gluon(target: Kernel | Module) -> GluonModule:
    """Emits one planned kernel (a module must hold exactly one)."""
    return GluonEmitter(single_kernel(target)).emit_kernel()
