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
from collections.abc import Callable
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
    if built.split is not None:
        lines.append(f"    split={built.split!r},")
        lines.append("    shorter=[")
        for v in built.shorter:
            lines.append(f"        ({_literal(named(v.source))}, {v.kind!r}, {v.order!r}),")
        lines.append("    ],")
    lines += [f"    device={built.device!r},", ")"]
    return "\n".join(lines)


def define_once(wrapper: Any, built: KernelBuild, metadata: Callable[[], str]) -> str:
    """Defines the kernel in the wrapper, named `built.stem` and the wrapper's counter, unless an
    identical kernel is defined already; returns its name."""
    key = "\0".join(
        [
            "tilec",
            built.primary.source,
            built.fallback.source if built.fallback else "",
            repr(built.tma),
            repr(built.split),
            *(v.source for v in built.shorter),
        ]
    )
    name = wrapper.src_to_kernel.get(key)
    if name is None:
        name = f"{built.stem}_{wrapper.next_kernel_suffix()}"
        wrapper.src_to_kernel[key] = name
        wrapper.define_kernel(name, definition(name, built), metadata())
    return name


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
    name = define_once(wrapper, built, lambda: "\n".join(get_kernel_metadata(node_schedule, wrapper)))
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


# One column sum's rows of a mix-order kernel's workspace added up, as Inductor's
# `_codegen_mix_order_reduction` writes it in the wrapper: `buf3 = workspace_0[0 * (131) * (8192) :
# (0 + 1) * (131) * (8192)].view(131, 8192).sum(dim=0)` (torch 2.13; 2.11 writes the slice's sizes
# without parentheses), then a `.view([...])` and a `.to(dtype)` where the buffer needs them.
_WORKSPACE_SUM = re.compile(
    r"^(?P<buf>\w+) = (?P<ws>\w+)\[(?P<idx>\d+) \* (?P<slice>.+)\]\.view\((?P<rows>.+), (?P<cols>[^,]+)\)"
    r"\.sum\(dim=0\)(?P<rest>.*)$"
)


def _workspace_sum(line: Any) -> re.Match[str] | None:
    """The line's parts where it is one column sum's rows added up (`_WORKSPACE_SUM`), its slice
    the rows of that column sum."""
    match = _WORKSPACE_SUM.match(line) if isinstance(line, str) else None
    if match is None:
        return None
    idx, rows, cols = match["idx"], match["rows"], match["cols"]
    slices = (
        f"({rows}) * ({cols}) : ({idx} + 1) * ({rows}) * ({cols})",
        f"{rows} * {cols} : ({idx} + 1) * {rows} * {cols}",
    )
    return match if match["slice"] in slices else None


# what may follow a workspace sum: a view to the buffer's shape, then a conversion to its dtype
_SUM_REST = re.compile(r"^(?P<view>(\.view\(\[[^\]]*\]\))?)(\.to\(torch\.(?P<dtype>bfloat16|float16)\))?$")
_TORCH_TO_IR = {None: "f32", "bfloat16": "bf16", "float16": "f16"}
_IR_TO_TORCH = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}

_sums_builds: dict[str, KernelBuild] = {}


def _workspace_sums_build(device: str, out: str = "f32") -> KernelBuild:
    """`tilec.frontend.workspace`'s kernel writing `out`, through its pipeline and the Triton
    emitter (once a process)."""
    from dataclasses import replace

    if out not in _sums_builds:
        from tilec.emit.triton import emit_triton
        from tilec.frontend.workspace import PARAMS, PIPELINE, workspace_sums
        from tilec.inductor.build import PLACEHOLDER, Emitted, launch_order, through_pipeline

        kernel, remarks = through_pipeline(workspace_sums(PLACEHOLDER, out), PIPELINE)
        emitted = Emitted(
            "triton", PIPELINE, emit_triton(kernel).source, launch_order(kernel, PARAMS, "workspace sums"), remarks
        )
        _sums_builds[out] = KernelBuild(None, emitted, stem="tilec_workspace_sums")
    return replace(_sums_builds[out], device=device)


def workspace_sums_module(device: str, out: str = "f32") -> Any:
    """The workspace sums' kernel loaded as a module (`launch(ws, out, rows, cols, sums)`), as the
    autotuner times it."""
    from tilec.inductor.build import PLACEHOLDER
    from tilec.runtime import load_source

    source = _workspace_sums_build(device, out).primary.source
    return load_source(source.replace(PLACEHOLDER, "tilec_workspace_sums"), interpret=device == "cpu")


class WorkspaceSums:
    """While stock writes the wrapper code around a mix-order kernel tilec took, its sums of the
    workspace's rows — one ATen sum over the non-contiguous axis per column sum — become one
    launch of `tilec.frontend.workspace`'s kernel, each column sum's buffer a slice of what it
    writes (in the buffers' dtype where the wrapper converts every sum to one). Any other line
    passes through; sums written other than as expected stay stock's."""

    def __init__(self, sums: int, device: str) -> None:
        self.sums = sums
        self.device = device
        self.held: list[tuple[str, re.Match[str]]] = []
        self.wrapper: Any = None

    def __enter__(self) -> WorkspaceSums:
        from torch._inductor.virtualized import V

        self.wrapper = V.graph.wrapper_code
        self.wrapper.writeline = self.writeline
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()
        del self.wrapper.writeline  # the class's again

    def original(self, line: Any) -> None:
        type(self.wrapper).writeline(self.wrapper, line)

    def flush(self) -> None:
        held, self.held = self.held, []
        for line, _ in held:
            self.original(line)

    def extends(self, match: re.Match[str] | None) -> bool:
        """Whether `match` is the next column sum of those held: the first, or the same
        workspace's next."""
        if match is None or int(match["idx"]) != len(self.held):
            return False
        return not self.held or all(match[k] == self.held[0][1][k] for k in ("ws", "rows", "cols"))

    def writeline(self, line: Any) -> None:
        match = _workspace_sum(line)
        if match is None or not self.extends(match):
            self.flush()
            self.original(line)
            return
        self.held.append((line, match))
        if len(self.held) == self.sums:
            held, self.held = self.held, []
            self.launch([m for _, m in held])

    def launch(self, sums: list[re.Match[str]]) -> None:
        import torch

        wrapper, first = self.wrapper, sums[0]
        # every sum converted to one dtype: the kernel writes it (no conversion launched after)
        rests = [_SUM_REST.match(m["rest"]) for m in sums]
        dtypes = {r["dtype"] for r in rests if r is not None}
        out_dtype = _TORCH_TO_IR[dtypes.pop()] if all(rests) and len(dtypes) == 1 else "f32"
        tails = [r["view"] if out_dtype != "f32" and r is not None else m["rest"] for m, r in zip(sums, rests)]
        built = _workspace_sums_build(self.device, out_dtype)
        name = define_once(wrapper, built, lambda: "# the sums of a mix-order kernel's workspace rows")
        ws, rows, cols = first["ws"], first["rows"], first["cols"]
        out = f"{ws}_sums"
        torch_dtype = _IR_TO_TORCH[out_dtype]
        self.original(f"{out} = empty_strided_{self.device}(({len(sums)} * ({cols}),), (1,), torch.{torch_dtype})")
        wrapper.generate_kernel_call(
            name,
            [ws, out, rows, cols, str(len(sums))],
            triton=True,
            arg_types=[torch.float32, getattr(torch, torch_dtype), int, int, int],
        )
        for j, (m, tail) in enumerate(zip(sums, tails)):
            self.original(f"{m['buf']} = {out}[{j} * ({cols}) : {j + 1} * ({cols})]{tail}")
        self.original(f"del {out}")
