"""Writing a taken kernel into Inductor's wrapper as stock code generation writes its own
(SIMDScheduling.codegen_node_schedule), and recording what was taken or declined:

    define the kernel (wrapper.define_kernel: a tilec TilecKernel built from the embedded sources)
    node.mark_run() for each node      → the wrapper allocates the outputs, or reuses an input in place
    comment + the call line            → `name.run(buf0, arg1_1, ..., stream=stream0)`
    V.graph.removed_buffers / inplaced_to_remove |= what the kernel does not write
    free the buffers whose last use this was

The kernel is named as stock Triton names it (`triton_per_fused__softmax_0`: category, fused
origins, the wrapper's counter); identical kernels in one graph are defined once.
"""

from __future__ import annotations

import re
from typing import Any

from tilec.inductor.build import Declined, KernelBuild
from tilec.inductor.report import KernelRecord, record


def _literal(source: str) -> str:
    if "'''" in source or source.endswith("\\") or "\r" in source:
        return repr(source)
    return "r'''\n" + source + "'''"


def definition(name: str, built: KernelBuild) -> str:
    """The wrapper's definition of the kernel: tilec's launcher, loaded from the embedded sources."""

    from tilec.inductor.build import PLACEHOLDER

    def named(src: str) -> str:
        return re.sub(rf"\b{PLACEHOLDER}", name, src)

    lines = [
        '__import__("tilec.runtime.launch", fromlist=["load_kernel"]).load_kernel(',
        f"    {name!r},",
        f"    {_literal(named(built.primary.source))},",
        f"    {built.primary.kind!r},",
        f"    order={built.primary.order!r},",
    ]
    if built.fallback is not None:
        lines += [
            f"    fallback={_literal(named(built.fallback.source))},",
            f"    fallback_kind={built.fallback.kind!r},",
            f"    fallback_order={built.fallback.order!r},",
        ]
    if built.tma:
        lines.append(f"    tma={built.tma!r},")
    lines += [f"    device={built.device!r},", ")"]
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


def commit(scheduling: Any, features: Any, built: KernelBuild) -> str:
    """Writes the kernel into the wrapper as stock codegen would; returns its name."""
    from torch._inductor.scheduler import BaseSchedulerNode
    from torch._inductor.utils import get_kernel_metadata
    from torch._inductor.virtualized import V

    wrapper = V.graph.wrapper_code
    node_schedule = list(features.node_schedule)
    key = "\0".join(["tilec", built.primary.source, built.fallback.source if built.fallback else "", repr(built.tma)])
    name = wrapper.src_to_kernel.get(key)
    if name is None:
        name = f"{built.stem}_{wrapper.next_kernel_suffix()}"
        wrapper.src_to_kernel[key] = name
        origins, detailed = get_kernel_metadata(node_schedule, wrapper)
        wrapper.define_kernel(name, definition(name, built), f"{origins}\n{detailed}")
    lowered = built.lowered
    with V.set_kernel_handler(lowered.inductor_kernel):
        for node in features.scheduler_nodes():
            node.mark_run()
    nodes = [n for n in node_schedule if isinstance(n, BaseSchedulerNode)]
    try:
        scheduling.codegen_comment(nodes, name)
    except TypeError:  # older signature
        scheduling.codegen_comment(nodes)
    buffers = [a.buffer for a in lowered.args]
    sizes = list(lowered.sizes.values())  # symbolic sizes: expressions of the graph's size symbols
    wrapper.generate_kernel_call(
        name,
        [*buffers, *sizes],
        triton=True,
        arg_types=[*(V.graph.get_dtype(b) for b in buffers), *(int for _ in sizes)],
    )
    V.graph.removed_buffers |= lowered.removed_buffers
    V.graph.inplaced_to_remove |= lowered.inplaced_to_remove
    return name


def define_mix_order(kernel: Any, node_schedule: Any, built: KernelBuild) -> str:
    """Defines a taken mix-order kernel where stock codegen defines its own
    (`_codegen_mix_order_reduction`, whose bookkeeping runs around it: the workspace, the call
    through `kernel.call_kernel`, the sums of the workspace's rows). The call passes stock's
    arguments — its buffers, the workspace, then each size (`xnumel`, `r0_numel`) — so the
    launcher's order maps tilec's parameters onto them, by buffer. Returns the kernel's name."""
    from dataclasses import replace

    from torch._inductor.utils import get_kernel_metadata
    from torch._inductor.virtualized import V

    from tilec.frontend.logical import WORKSPACE

    args = kernel.args
    defs = args.python_argdefs()[0]
    stock = [getattr(d, "name", d) for d in defs]
    stock += [f"{t.prefix}numel" for t in kernel.range_trees if not t.is_reduction or kernel.inside_reduction]
    by_buffer = {**args.input_buffers, **args.output_buffers}
    for buf, inplaced in args.inplace_buffers.items():
        by_buffer.setdefault(buf, getattr(inplaced, "inner_name", inplaced))
    lowered = built.lowered
    tilec_names = [a.param for a in lowered.args] + list(lowered.sizes)
    mapped = []
    for name in tilec_names:
        arg = next((a for a in lowered.args if a.param == name), None)
        if arg is None or arg.buffer == WORKSPACE:
            stock_name = name  # the workspace and the sizes are named alike
        else:
            stock_name = by_buffer.get(arg.buffer)
        if stock_name not in stock:
            raise RuntimeError(f"tilec's parameter {name} has no argument in stock's mix-order call ({stock})")
        mapped.append(stock.index(stock_name))
    primary = replace(built.primary, order=[mapped[i] for i in built.primary.order])
    built = replace(built, primary=primary, fallback=None)
    wrapper = V.graph.wrapper_code
    name = f"{built.stem}_{wrapper.next_kernel_suffix()}"
    origins, detailed = get_kernel_metadata(node_schedule, wrapper)
    wrapper.define_kernel(name, definition(name, built), f"{origins}\n{detailed}")
    return name


def note(name: str, outcome: KernelBuild | Declined, device: Any) -> None:
    """Records the kernel, taken (`outcome` its build) or not (why), and has the wrapper module
    record it again wherever it is loaded from Inductor's caches."""
    from torch._inductor.virtualized import V

    built = outcome if isinstance(outcome, KernelBuild) else None
    line = record(
        KernelRecord(
            kernel=name,
            taken=built is not None,
            emitter=built.emitter if built is not None else None,
            pipeline=built.pipeline if built is not None else None,
            reason=outcome.reason if isinstance(outcome, Declined) else None,
            device=device.type,
            autotune=built.tuning if built is not None else None,
            remarks=built.remarks if built is not None else (),
            signature=outcome.signature,
            timings=outcome.timings,
            traced=outcome.traced,
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


def free_buffers(scheduling: Any) -> None:
    free = getattr(scheduling, "free_buffers_in_scheduler", None)
    if free is not None:
        free()
    elif scheduling.scheduler is not None:
        scheduling.scheduler.free_buffers()


def current_device() -> Any:
    from torch._inductor.virtualized import V

    return V.graph.get_current_device_or_throw()
