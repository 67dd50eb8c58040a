"""Taking over a kernel in Inductor's code generation, or leaving it to stock Inductor.

For each fused kernel, `attempt` decides everything before anything in Inductor changes: it lowers
the kernel (`tilec.lower`), runs the configured pipeline on a copy per emitter and emits the
source. If any step declines or fails, stock code generation runs untouched (`super()`); strict
mode raises on failures instead. Only then does `commit` reproduce the stock bookkeeping around a
kernel (SIMDScheduling.codegen_node_schedule):

    define the kernel (wrapper.define_kernel: a tilec TilecKernel built from the embedded sources)
    node.mark_run() for each node      → the wrapper allocates the outputs, or reuses an input in place
    comment + the call line            → `name.run(buf0, arg1_1, ..., stream=stream0)`
    V.graph.removed_buffers / inplaced_to_remove |= what the kernel does not write
    free the buffers whose last use this was

The kernel is named as stock Triton names it (`triton_per_fused__softmax_0`: category, fused
origins, the wrapper's counter); identical kernels in one graph are defined once.

Two schedulings carry it: a TritonScheduling subclass (CUDA, inside CUDACombinedScheduling, and the
CPU with `cpu_backend="triton"`), and a CppScheduling subclass for the CPU (the default C++ backend:
tilec takes what it can, through Triton's interpreter, and C++ code generation does the rest).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tilec import config as cfg
from tilec.inductor.report import KernelRecord, record
from tilec.ir.errors import error_line

log = logging.getLogger("tilec")

# the IR kernel's name until the wrapper names it (replaced in the emitted source)
PLACEHOLDER = "tilec_kernel_name_placeholder"

# Why a kernel stays with Inductor before tilec looks at it (tests assert these).
DISABLED = "tilec is disabled (tilec.config.enabled is False, or TILEC_DISABLE=1)"
CPP_WRAPPER = (
    "Inductor's C++ wrapper (cpp_wrapper, AOTInductor) calls kernels itself: tilec's launcher needs the Python wrapper"
)
FX_WRAPPER = "Inductor's FX wrapper (fx_wrapper) is not supported"
AUTOTUNE_AT_COMPILE_TIME = "triton.autotune_at_compile_time replays kernel launches tilec does not describe"
DEBUG_OPTIONS = (
    "an Inductor debugging option is on (nan_asserts, generate_intermediate_hooks, cpp.enable_kernel_profile)"
)
NO_INTERPRETER = "on the CPU tilec runs Triton in its interpreter, which is not active (set TRITON_INTERPRET=1 before Python starts, or call tilec.install(cpu=True) before anything imports triton)"
GLUON_ON_CPU = (
    "the Gluon emitter needs a Hopper GPU; on the CPU tilec emits Triton (tilec.config.emitter = 'auto' or 'triton')"
)
INTERNAL_ERROR = "tilec failed"


class CpuFallbackError(RuntimeError):
    """A CPU kernel tilec does not take would go to Inductor's Triton backend, which needs a Triton
    CPU driver this Triton lacks."""


# ---------------------------------------------------------------------------------------------
# Deciding


@dataclass
class Emitted:
    """One variant of a taken kernel: its source (named PLACEHOLDER) and launch arguments."""

    kind: str  # "gluon" or "triton"
    pipeline: str
    source: str
    order: list[int]  # run() argument index per parameter of the emitted launch()


@dataclass
class Plan:
    """Everything commit writes, decided before Inductor's state changes."""

    lowered: Any  # tilec.frontend.Lowered
    primary: Emitted
    fallback: Emitted | None = None
    tma: list[tuple[int, tuple[int, ...], int]] = field(default_factory=list)
    device: str = "cuda"
    stem: str = "triton"  # the kernel's name, less the wrapper's counter
    tuning: str | None = None  # the autotuner's timings, when it chose

    @property
    def emitter(self) -> str:
        return self.primary.kind

    @property
    def pipeline(self) -> str:
        return self.primary.pipeline


def decline_reason(device: Any) -> str | None:
    """Why no kernel of this graph can be taken, or None."""
    from torch._inductor import config as ic
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen
    from torch._inductor.virtualized import V

    if not cfg.enabled:
        return DISABLED
    try:
        cfg.check()
    except cfg.ConfigError as e:
        return str(e)
    if V.graph.cpp_wrapper or getattr(V.graph, "aot_mode", False):
        return CPP_WRAPPER
    if getattr(ic, "fx_wrapper", False) or not isinstance(V.graph.wrapper_code, PythonWrapperCodegen):
        return FX_WRAPPER
    if getattr(ic.triton, "autotune_at_compile_time", False):
        return AUTOTUNE_AT_COMPILE_TIME
    if ic.nan_asserts or getattr(ic, "generate_intermediate_hooks", False) or ic.cpp.enable_kernel_profile:
        return DEBUG_OPTIONS
    if device.type == "cpu":
        from tilec.runtime import interpreter_active

        if not interpreter_active():
            return NO_INTERPRETER
        if cfg.emitter == "gluon":
            return GLUON_ON_CPU
    return None


@functools.cache
def _gluon_available() -> bool:
    try:
        import triton.experimental.gluon  # noqa: F401

        from tilec.emit.gluon_api import gluon_api

        gluon_api()
        return True
    except Exception:
        return False


def choose_emitter(device: Any) -> tuple[str | None, str | None]:
    """(emitter, None), or (None, why not) when the configured emitter cannot run here."""
    if device.type != "cuda":
        return "triton", None
    if cfg.emitter == "triton":
        return "triton", None
    import torch

    try:
        major, minor = torch.cuda.get_device_capability(device)
    except Exception:
        major, minor = 0, 0
    hopper = major >= 9 and _gluon_available()
    if cfg.emitter == "gluon" and not hopper:
        return None, f"the Gluon emitter needs sm_90 or newer and Triton's Gluon; this GPU is sm_{major}{minor}"
    return ("gluon" if hopper else "triton"), None


def _pipeline(text: str, pipeline: str) -> Any:
    from tilec.ir import parse
    from tilec.passes import run_pipeline

    module = parse(text, "<tilec.inductor>")
    run_pipeline(module, pipeline)
    (kernel,) = module.kernels
    return kernel


def _order(kernel: Any, names: list[str], what: str) -> list[int]:
    from tilec.ir.types import TensorDescType

    order = []
    for p in kernel.params:
        if isinstance(p.type, TensorDescType):
            continue
        if p.name_hint not in names:
            raise RuntimeError(f"the {what} kernel has a parameter %{p.name_hint} the wrapper does not pass")
        order.append(names.index(p.name_hint))
    return order


def _tma_operands(kernel: Any, names: list[str]) -> list[tuple[int, tuple[int, ...], int]]:
    from tilec.ir.types import TensorDescType

    out = []
    for p, attrs in zip(kernel.params, kernel.param_attrs):
        if not isinstance(p.type, TensorDescType):
            continue
        strides = tuple(int(s) for s in attrs["strides"])  # static: tilec compiles static shapes
        out.append((names.index(attrs["source"]), strides, p.type.dtype.bytes))
    return out


def build(lowered: Any, emitter: str, device: str, plan: str = "") -> Plan:
    """Runs the pipelines on copies of the logical kernel and emits each variant. `plan`: options
    set on the primary emitter's plan pass (the chooser's or the autotuner's plan variant)."""
    from tilec.emit.triton import emit_triton
    from tilec.ir import print_kernel
    from tilec.passes.pipelines import with_plan

    text = print_kernel(lowered.kernel)
    names = [a.param for a in lowered.args]
    if any(a.buffer == "?" for a in lowered.args):
        raise RuntimeError("a kernel parameter has no buffer in the wrapper")
    key = (text, tuple(names), emitter, plan, cfg.pipelines["triton"], cfg.pipelines["gluon"])
    built = _built.get(key)
    if built is None:

        def pipeline_of(kind: str) -> str:  # the plan options apply to the primary emitter only
            return with_plan(cfg.pipelines[kind], plan) if plan and kind == emitter else cfg.pipelines[kind]

        triton_pipeline = pipeline_of("triton")
        tk = _pipeline(text, triton_pipeline)
        triton = Emitted("triton", triton_pipeline, emit_triton(tk).source, _order(tk, names, "Triton"))
        if emitter == "triton":
            built = (triton, None, [])
        else:
            from tilec.emit.gluon import emit_gluon

            gluon_pipeline = pipeline_of("gluon")
            gk = _pipeline(text, gluon_pipeline)
            gluon = Emitted("gluon", gluon_pipeline, emit_gluon(gk).source, _order(gk, names, "Gluon"))
            built = (gluon, triton, _tma_operands(gk, names))
        if len(_built) >= 256:
            _built.clear()
        _built[key] = built
    primary, fallback, tma = built
    return Plan(lowered, primary, fallback, list(tma), device)


# logical kernel text and settings -> what build made of it: a model's repeated layers (the same
# norm in every block) run the pipelines once
_built: dict[tuple[Any, ...], tuple[Emitted, Emitted | None, list[tuple[int, tuple[int, ...], int]]]] = {}


def attempt(scheduling: Any, features: Any, device: Any) -> Plan | str:
    """A Plan for the kernel, or the reason stock Inductor keeps it. Changes nothing in Inductor."""
    from tilec.frontend import Unsupported, lower

    reason = decline_reason(device)
    if reason is not None:
        return reason
    emitter, reason = choose_emitter(device)
    if emitter is None:
        assert reason is not None
        return reason
    try:
        lowered = lower(features, scheduling, name=PLACEHOLDER, strict=cfg.strict)
        if isinstance(lowered, Unsupported):
            return lowered.reason
        tuning, plan_options = None, ""
        if device.type == "cuda":  # the chooser's rules and the autotuner's timings are GPU measurements
            from tilec.inductor import autotune
            from tilec.passes.chooser import Decline, choose

            hopper, forced = emitter == "gluon", (cfg.emitter if cfg.emitter != "auto" else None)
            cands = autotune.candidates(hopper, forced, cfg.decline)
            tuned = None
            if len(cands) > 1 and autotune.wanted(device):

                def plan_for(candidate: str) -> Plan:
                    candidate_emitter, options = autotune.split(candidate)
                    return build(lowered, candidate_emitter, device.type, options)

                tuned = autotune.tune(scheduling, features, lowered, device, cands, plan_for)
            if tuned is not None:
                if tuned.winner == autotune.STOCK:
                    return f"stock Inductor timed fastest when autotuned: {tuned.describe()}"
                (emitter, plan_options), tuning = autotune.split(tuned.winner), tuned.describe()
            else:
                choice = choose(lowered.kernel, hopper=hopper, forced=forced, decline=cfg.decline)
                if isinstance(choice, Decline):
                    return choice.reason
                emitter, plan_options = choice.emitter, choice.plan
        plan = build(lowered, emitter, device.type, plan_options)
        plan.stem = name_stem(lowered, list(features.node_schedule))
        plan.tuning = tuning
        return plan
    except Exception as e:
        if cfg.strict:
            raise
        log.warning(
            "tilec: a kernel falls back to Inductor: %s", error_line(e), exc_info=log.isEnabledFor(logging.DEBUG)
        )
        return f"{INTERNAL_ERROR}: {error_line(e)}"


# ---------------------------------------------------------------------------------------------
# Committing: the stock bookkeeping around a kernel


def _literal(source: str) -> str:
    if "'''" in source or source.endswith("\\") or "\r" in source:
        return repr(source)
    return "r'''\n" + source + "'''"


def definition(name: str, plan: Plan) -> str:
    """The wrapper's definition of the kernel: tilec's launcher, loaded from the embedded sources."""

    def named(src: str) -> str:
        return re.sub(rf"\b{PLACEHOLDER}", name, src)

    lines = [
        '__import__("tilec.runtime.launch", fromlist=["load_kernel"]).load_kernel(',
        f"    {name!r},",
        f"    {_literal(named(plan.primary.source))},",
        f"    {plan.primary.kind!r},",
        f"    order={plan.primary.order!r},",
    ]
    if plan.fallback is not None:
        lines += [
            f"    fallback={_literal(named(plan.fallback.source))},",
            f"    fallback_kind={plan.fallback.kind!r},",
            f"    fallback_order={plan.fallback.order!r},",
        ]
    if plan.tma:
        lines.append(f"    tma={plan.tma!r},")
    lines += [f"    device={plan.device!r},", ")"]
    return "\n".join(lines)


def name_stem(lowered: Any, node_schedule: list[Any]) -> str:
    """Stock Triton's name for the kernel, less the wrapper's counter: triton_{poi,red,per}_{fused origins}."""
    from torch._inductor import config as ic
    from torch._inductor.utils import get_fused_kernel_name

    category = "poi"
    if lowered.is_reduction:
        category = "red"
        helper = lowered.inductor_kernel
        try:
            saved = helper.inside_reduction
            helper.inside_reduction = True
            try:
                if helper.should_use_persistent_reduction():
                    category = "per"
            finally:
                helper.inside_reduction = saved
        except Exception:
            pass
    fused = ""
    if ic.triton.descriptive_names:
        fused = get_fused_kernel_name(node_schedule, ic.triton.descriptive_names)
    return re.sub(r"\W", "_", "_".join(p for p in ("triton", category, fused) if p))


def commit(scheduling: Any, features: Any, plan: Plan) -> str:
    """Writes the kernel into the wrapper as stock codegen would; returns its name."""
    from torch._inductor.scheduler import BaseSchedulerNode
    from torch._inductor.utils import get_kernel_metadata
    from torch._inductor.virtualized import V

    wrapper = V.graph.wrapper_code
    node_schedule = list(features.node_schedule)
    key = "\0".join(["tilec", plan.primary.source, plan.fallback.source if plan.fallback else "", repr(plan.tma)])
    name = wrapper.src_to_kernel.get(key)
    if name is None:
        name = f"{plan.stem}_{wrapper.next_kernel_suffix()}"
        wrapper.src_to_kernel[key] = name
        origins, detailed = get_kernel_metadata(node_schedule, wrapper)
        wrapper.define_kernel(name, definition(name, plan), f"{origins}\n{detailed}")
    lowered = plan.lowered
    with V.set_kernel_handler(lowered.inductor_kernel):
        for node in features.scheduler_nodes():
            node.mark_run()
    nodes = [n for n in node_schedule if isinstance(n, BaseSchedulerNode)]
    try:
        scheduling.codegen_comment(nodes, name)
    except TypeError:  # older signature
        scheduling.codegen_comment(nodes)
    buffers = [a.buffer for a in lowered.args]
    wrapper.generate_kernel_call(name, buffers, triton=True, arg_types=[V.graph.get_dtype(b) for b in buffers])
    V.graph.removed_buffers |= lowered.removed_buffers
    V.graph.inplaced_to_remove |= lowered.inplaced_to_remove
    return name


def note(name: str, plan: Plan | None, reason: str | None, device: Any) -> None:
    """Records the kernel, and has the wrapper module record it again wherever it is loaded from
    Inductor's caches."""
    from torch._inductor.virtualized import V

    line = record(
        KernelRecord(
            kernel=name,
            taken=plan is not None,
            emitter=plan.emitter if plan is not None else None,
            pipeline=plan.pipeline if plan is not None else None,
            reason=reason,
            device=device.type,
            autotune=plan.tuning if plan is not None else None,
        ),
        V.graph,
    )
    wrapper = _python_wrapper()
    if wrapper is not None:
        wrapper.header.writeline(line)


def _python_wrapper() -> Any:
    """The graph's Python wrapper (a partition's or subgraph's parent), or None where the wrapper
    is C++ (cpp_wrapper, AOTInductor) or an FX graph."""
    from torch._inductor import config as ic
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen
    from torch._inductor.virtualized import V

    graph = V.graph
    if graph.cpp_wrapper or getattr(graph, "aot_mode", False):
        return None
    if getattr(graph, "fx_wrapper", False) or getattr(ic, "fx_wrapper", False):
        return None
    wrapper: Any = graph.wrapper_code
    while getattr(wrapper, "parent_wrapper", None) is not None:
        wrapper = wrapper.parent_wrapper
    return wrapper if isinstance(wrapper, PythonWrapperCodegen) else None


def _free(scheduling: Any) -> None:
    free = getattr(scheduling, "free_buffers_in_scheduler", None)
    if free is not None:
        free()
    elif scheduling.scheduler is not None:
        scheduling.scheduler.free_buffers()


def _current_device() -> Any:
    from torch._inductor.virtualized import V

    return V.graph.get_current_device_or_throw()


def _triton_cpu_driver() -> bool:
    try:
        import triton.backends

        return "cpu" in triton.backends.backends
    except Exception:
        return False


# ---------------------------------------------------------------------------------------------
# The schedulings


@functools.cache
def triton_scheduling_class() -> type:
    """TritonScheduling whose codegen_node_schedule tries tilec first."""
    from torch._inductor.codegen.triton import TritonScheduling

    class TilecTritonScheduling(TritonScheduling):
        _stock_names: list[str] | None = None

        def codegen_node_schedule(self, kernel_features: Any) -> Any:
            device = _current_device()
            plan = attempt(self, kernel_features, device)
            if isinstance(plan, Plan):
                name = commit(self, kernel_features, plan)
                note(name, plan, None, device)
                _free(self)
                return None
            if device.type == "cpu" and cfg.enabled and not _triton_cpu_driver():
                raise CpuFallbackError(
                    f"tilec did not take a CPU kernel ({plan}), and Inductor's Triton backend for the CPU "
                    "(cpu_backend='triton') needs a Triton CPU driver, which this Triton does not have. Keep "
                    "Inductor's default C++ backend for the CPU (torch._inductor.config.cpu_backend = 'cpp'): with "
                    "tilec.install(cpu=True), tilec then takes what it can and C++ code generation the rest."
                )
            self._stock_names = []
            try:
                result = super().codegen_node_schedule(kernel_features)
            finally:
                names, self._stock_names = self._stock_names, None
            note(names[0] if names else "?", None, plan, device)
            return result

        def define_kernel(self, src_code: str, node_schedule: Any, kernel: Any) -> str:
            name = super().define_kernel(src_code, node_schedule, kernel)
            if self._stock_names is not None:
                self._stock_names.append(name)
            return name

    return TilecTritonScheduling


@contextmanager
def simd_view(nodes: list[Any], device: Any) -> Iterator[Any]:
    """C++-scheduled nodes as a SIMD kernel's features: node groups become (numel, rnumel) for the
    duration (C++ groups them by loop sizes), and Triton's node schedule is built from them."""
    from torch._inductor.codegen.simd import SIMDScheduling
    from torch._inductor.codegen.simd_kernel_features import SIMDKernelFeatures
    from torch._inductor.codegen.triton import TritonScheduling
    from torch._inductor.utils import sympy_product
    from torch._inductor.virtualized import V

    saved = [(n, n.group) for n in nodes]
    try:
        for n in nodes:
            sizes = n.get_ranges()
            n.group = (device, tuple(V.graph.sizevars.simplify(sympy_product(s)) for s in sizes))
        _, (numel, rnumel) = max(nodes, key=lambda n: int(n.is_reduction())).group
        schedule = SIMDScheduling.generate_node_schedule(TritonScheduling(None), nodes, numel, rnumel)
        yield SIMDKernelFeatures(schedule, numel, rnumel)
    finally:
        for n, group in saved:
            n.group = group


@functools.cache
def cpp_scheduling_class() -> type:
    """CppScheduling that gives each fused kernel to tilec first (Triton, run by the interpreter)."""
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.scheduler import FusedSchedulerNode, SchedulerNode

    class TilecCppScheduling(CppScheduling):
        def __init__(self, scheduler: Any) -> None:
            super().__init__(scheduler)
            self._pending: list[tuple[set[str], str, Any]] = []  # declined kernels waiting for a C++ name

        def codegen_node(self, node: Any) -> Any:
            device = _current_device()
            removed = getattr(self.scheduler, "removed_ops", ())
            nodes = [n for n in node.get_nodes() if n.get_name() not in removed]
            reason: str | None = None
            # (C++ fuses a reduction and its epilogue as an OuterLoopFusedSchedulerNode; Triton
            # would fuse the same nodes into one kernel, so its node schedule takes them as they are)
            if not isinstance(node, (FusedSchedulerNode, SchedulerNode)) or node.is_foreach() or not nodes:
                reason = f"scheduler node of type {type(node).__name__} is not supported"
            elif any(type(n) is not SchedulerNode for n in nodes):
                reason = next(
                    f"scheduler node of type {type(n).__name__} is not supported"
                    for n in nodes
                    if type(n) is not SchedulerNode
                )
            if reason is None:
                committing = False
                try:
                    with simd_view(nodes, device) as features:
                        plan = attempt(self, features, device)
                        if isinstance(plan, Plan):
                            committing = True  # from here on Inductor's state changes: no falling back
                            self.flush()  # C++ kernels scheduled before this one are called first
                            name = commit(self, features, plan)
                            note(name, plan, None, device)
                            _free(self)
                            return None
                        reason = plan
                except Exception as e:  # building the SIMD view of C++-fused nodes
                    if committing or cfg.strict:
                        raise
                    reason = f"{INTERNAL_ERROR}: {error_line(e)}"
            self._pending.append(({n.get_name() for n in nodes}, reason, device))
            return super().codegen_node(node)

        def define_kernel(self, src_code: str, nodes: Any, kernel_args: Any = None) -> str:
            name = super().define_kernel(src_code, nodes, kernel_args)
            names = {n.get_name() for n in nodes if hasattr(n, "get_name")}
            for entry in list(self._pending):
                if entry[0] & names:
                    self._pending.remove(entry)
                    note(name, None, entry[1], entry[2])
            return name

    return TilecCppScheduling
