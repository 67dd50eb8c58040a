"""The kernels Inductor would build for a function, each lowered by `tilec.lower` — on any machine.

    kernels = capture(fn, [x, w])          # x, w: tensors (real or fake, any device)
    for k in kernels:
        print(k.name, k.result)            # Inductor's kernel name, Lowered | Unsupported

Three modes:
- `device="cuda"` with a GPU: the real device, real properties.
- `device="cuda"` without one: a fake H100 (132 SMs, sm_90, 227 KiB shared memory per block).
  The `torch.cuda` device queries (and their copies in Dynamo's `CudaInterface`), Triton's
  backend hash, and two graph passes that run tensors on the input device are patched for the
  duration of the call; Inductor then schedules and code-generates the same kernels as on an H100
  (checked against a real H100 with torch 2.11: same partition and launch arguments).
- `device="cpu"`: Inductor's Triton backend for CPU (`cpu_backend="triton"`), a plain fallback
  whose kernels differ from CUDA's (no online softmax, other split sizes).

Inputs become FakeTensors of the same shapes, strides and dtypes; nothing runs on a device and
no kernel is compiled: compilation stops right after Inductor's code generation. Every patch is
undone when `capture` returns or raises, and device-dependent caches are cleared on the way in
and out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import sympy
import torch

from tilec.frontend.lower import lower, mix_order_features, traced_layouts, traced_values
from tilec.frontend.result import Lowered, Unsupported
from tilec.ir.target import H100 as TARGET

# the device properties of the GPU faked without one (figures the target does not hold: an H100's)
H100 = types.SimpleNamespace(
    name=TARGET.name,
    major=TARGET.capability[0],
    minor=TARGET.capability[1],
    multi_processor_count=TARGET.sm_count,
    total_memory=85045395456,
    is_integrated=0,
    is_multi_gpu_board=0,
    max_threads_per_multi_processor=2048,
    max_threads_per_block=TARGET.max_threads_per_block,
    regs_per_multiprocessor=TARGET.registers_per_sm,
    gcnArchName=TARGET.name,
    warp_size=TARGET.warp_size,
    uuid="00000000-0000-0000-0000-000000000000",
    L2_cache_size=TARGET.l2_bytes,
    clock_rate=1980000,
    memory_clock_rate=2619000,
    memory_bus_width=5120,
    shared_memory_per_block=49152,
    shared_memory_per_block_optin=TARGET.smem_per_block,
    shared_memory_per_multiprocessor=TARGET.smem_per_sm,
)
FAKE_BACKEND_HASH = "TILEC_FAKE_H100_BACKEND_HASH"


class CaptureError(Exception):
    """Tracing or compiling the function failed (a graph break, an error in the function)."""


@dataclass
class CapturedKernel:
    """One fused kernel Inductor generated, and what tilec made of it."""

    name: str  # Inductor's kernel name
    result: Lowered | Unsupported
    numel: str
    rnumel: str
    reductions: list[str] = field(default_factory=list)  # reduction types of the scheduled nodes
    source: str | None = None  # Inductor's own Triton source for it
    # the value each size symbol of the kernel's sizes (`Lowered.sizes`) had for the traced inputs
    symbols: dict[str, int] = field(default_factory=dict)
    # each argument buffer's (shape, strides, offset) for the traced inputs (the kernel's
    # `Lowered.args` leave out what is symbolic)
    layouts: dict[str, tuple[tuple[int, ...], tuple[int, ...], int]] = field(default_factory=dict)

    @property
    def taken(self) -> bool:
        return isinstance(self.result, Lowered)

    def summary(self) -> str:
        reductions = ", ".join(self.reductions) or "none"
        verdict = "taken" if isinstance(self.result, Lowered) else f"not taken: {self.result.reason}"
        return f"numel={self.numel} rnumel={self.rnumel} reductions=[{reductions}]: {verdict}"


# ---------------------------------------------------------------------------------------------
# Patching, undone in reverse order


class _Patcher:
    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        missing = object()
        old = obj.__dict__.get(name, missing) if isinstance(obj, type) else getattr(obj, name, missing)
        setattr(obj, name, value)

        def undo() -> None:
            if old is missing:
                delattr(obj, name)
            else:
                setattr(obj, name, old)

        self._undo.append(undo)

    def setitem(self, d: dict[Any, Any], key: Any, value: Any) -> None:
        missing = object()
        old = d.get(key, missing)
        d[key] = value
        self._undo.append(lambda: d.__setitem__(key, old) if old is not missing else d.pop(key, None))

    def call_on_exit(self, fn: Callable[[], None]) -> None:
        self._undo.append(fn)

    def restore(self) -> None:
        errors: list[BaseException] = []
        while self._undo:
            try:
                self._undo.pop()()
            except BaseException as e:  # restore the rest before reporting
                errors.append(e)
        if errors:
            raise errors[0]


def _device_caches() -> list[Any]:
    """functools caches whose values depend on the device queries the fake H100 answers."""
    import torch._dynamo.debug_utils as debug_utils
    import torch._subclasses.fake_tensor as fake_tensor
    import torch.utils._triton as triton_utils
    from torch._inductor import utils as inductor_utils
    from torch._inductor.runtime import hints

    fns: list[Any] = []
    for mod in (inductor_utils, triton_utils):
        for v in vars(mod).values():
            if callable(v) and hasattr(v, "cache_clear") and getattr(v, "__module__", "") == mod.__name__:
                fns.append(v)
    for owner, name in (
        (hints.DeviceProperties, "create"),
        (debug_utils, "_cuda_system_info_comment"),
        (fake_tensor, "init_gpu_context"),
    ):
        fn = getattr(owner, name, None)
        if fn is not None and hasattr(fn, "cache_clear"):
            fns.append(fn)
    return fns


def _clear_device_caches() -> None:
    import torch._dynamo.device_interface as device_interface

    for fn in _device_caches():
        with contextlib.suppress(Exception):
            fn.cache_clear()
    for cache in ("caching_worker_device_properties", "caching_worker_current_devices"):
        getattr(device_interface, cache, {}).pop("cuda", None)


def _cuda_functions() -> dict[str, Any]:
    props = H100

    def properties(device: Any = None) -> Any:
        return props

    return {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "get_device_properties": properties,
        "get_device_capability": lambda device=None: (props.major, props.minor),
        "get_device_name": lambda device=None: props.name,
        "is_bf16_supported": lambda including_emulation=True: True,
        "synchronize": lambda device=None: None,
        "get_arch_list": lambda: [TARGET.arch],
        "_is_compiled": lambda: True,
        "_lazy_init": lambda: None,
        "_exchange_device": lambda device: 0,
        "_maybe_exchange_device": lambda device: 0,
        # Dynamo saves and restores the CUDA RNG state when CUDA is available.
        "get_rng_state": lambda device="cuda": torch.zeros(16, dtype=torch.uint8),
        "set_rng_state": lambda new_state, device="cuda": None,
        "get_rng_state_all": lambda: [torch.zeros(16, dtype=torch.uint8)],
        "set_rng_state_all": lambda new_states: None,
    }


_INTERFACE = {  # CudaInterface method → the torch.cuda function it binds at import
    "current_device": "current_device",
    "set_device": "set_device",
    "device_count": "device_count",
    "get_device_properties": "get_device_properties",
    "synchronize": "synchronize",
    "exchange_device": "_exchange_device",
    "maybe_exchange_device": "_maybe_exchange_device",
    "is_bf16_supported": "is_bf16_supported",
}


def patch_targets() -> list[tuple[Any, str]]:
    """Every (object, attribute) the fake H100 and the capture hooks patch (tests compare them)."""
    import torch._dynamo.device_interface as device_interface
    import torch._inductor.fx_passes.joint_graph as joint_graph
    import torch.utils._triton as triton_utils
    from torch._inductor import graph as graph_mod
    from torch._inductor import utils as inductor_utils
    from torch._subclasses.fake_tensor import FakeTensorMode

    ci = device_interface.CudaInterface
    targets: list[tuple[Any, str]] = [(torch.cuda, k) for k in _cuda_functions()]
    targets += [(ci, k) for k in (*_INTERFACE, "get_raw_stream", "memory_allocated")]
    targets += [(ci.Worker, "current_device"), (ci.Worker, "get_device_properties")]
    targets += [(triton_utils, "triton_hash_with_backend"), (triton_utils, "triton_backend")]
    targets += [(inductor_utils, "get_gpu_shared_memory"), (joint_graph, "lazy_init")]
    targets += [(FakeTensorMode, "avoid_device_init"), (torch.Tensor, "contiguous")]
    targets += [
        (joint_graph.UniformValueConstantFolder, "_deduce_value"),
        (graph_mod.GraphLowering, "_compile_to_module"),
    ]
    return targets


def patched_state() -> list[tuple[str, Any]]:
    """The current values of every patch target and the registered schedulings, for comparison."""
    from torch._inductor.codegen import common

    out: list[tuple[str, Any]] = []
    for obj, name in patch_targets():
        value = obj.__dict__.get(name) if isinstance(obj, type) else getattr(obj, name, None)
        out.append((f"{getattr(obj, '__name__', obj)}.{name}", value))
    for device in ("cuda", "cpu"):
        dc = common.device_codegens.get(device)
        out.append((f"device_codegens[{device}]", dc.scheduling if dc is not None else None))
    return out


def _fake_triton_backend() -> Any:
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    return make_backend(GPUTarget("cuda", 90, 32))


@contextlib.contextmanager
def fake_h100() -> Iterator[None]:
    """Makes Inductor see one H100 on a machine without a GPU; everything is restored on exit."""
    import torch._dynamo.device_interface as device_interface
    import torch._inductor.fx_passes.joint_graph as joint_graph
    import torch.utils._triton as triton_utils
    from torch._inductor import utils as inductor_utils
    from torch._subclasses.fake_tensor import FakeTensorMode

    p = _Patcher()
    try:
        fns = _cuda_functions()
        for k, v in fns.items():
            p.setattr(torch.cuda, k, v)
        ci = device_interface.CudaInterface
        for k, src in _INTERFACE.items():
            p.setattr(ci, k, staticmethod(fns[src]))
        p.setattr(ci, "get_raw_stream", staticmethod(lambda device=None: 0))
        p.setattr(ci, "memory_allocated", staticmethod(lambda device=None: 0))
        p.setattr(ci.Worker, "current_device", staticmethod(lambda: 0))
        p.setattr(ci.Worker, "get_device_properties", staticmethod(fns["get_device_properties"]))
        # Triton's active driver needs libcuda; the backend hash only labels the kernel metadata.
        p.setattr(triton_utils, "triton_hash_with_backend", lambda: FAKE_BACKEND_HASH)
        p.setattr(triton_utils, "triton_backend", _fake_triton_backend)
        p.setattr(inductor_utils, "get_gpu_shared_memory", lambda: H100.shared_memory_per_block_optin)
        # FakeTensorMode must still know that no device exists (it then keeps torch.tensor(...)
        # constants on the CPU instead of moving real data to "cuda").
        p.setattr(FakeTensorMode, "avoid_device_init", property(lambda self: True))
        # Tensor.contiguous's Python binding opens a real CUDA device guard for a non-contiguous
        # input; the aten op does not.
        p.setattr(torch.Tensor, "contiguous", _contiguous)
        # Joint-graph pattern registration traces example tensors on the input device
        # (torch.randperm on "cuda" fails here); the patterns do not depend on the device.
        lazy_init = joint_graph.lazy_init
        p.setattr(joint_graph, "lazy_init", lambda input_device=None: lazy_init(torch.device("cpu")))
        # Constant folding runs size-1 constructors on the node's device; only the value is used.
        deduce = joint_graph.UniformValueConstantFolder._deduce_value

        def deduce_on_cpu(self: Any, node: Any) -> Any:
            with _CudaToCpu():
                return deduce(self, node)

        p.setattr(joint_graph.UniformValueConstantFolder, "_deduce_value", deduce_on_cpu)
        # Inductor's seed lookup (dropout) indexes its seeds through `Tensor.__getitem__`, whose
        # binding opens a device guard too; the aten ops compute the same metadata.
        lookup = torch.ops.prims.inductor_lookup_seed.default
        p.setattr(lookup, "prim_meta_impl", _lookup_seed_meta)
        _clear_device_caches()
        p.call_on_exit(_clear_device_caches)
        yield
    finally:
        p.restore()


def _lookup_seed_meta(seeds: torch.Tensor, index: int) -> torch.Tensor:
    from torch._prims import TensorMeta

    return TensorMeta(torch.ops.aten.clone.default(torch.ops.aten.select.int(seeds, 0, index)))


def _contiguous(self: torch.Tensor, memory_format: torch.memory_format = torch.contiguous_format) -> torch.Tensor:
    return torch.ops.aten.contiguous.default(self, memory_format=memory_format)


class _CudaToCpu(torch.utils._python_dispatch.TorchDispatchMode):
    """Runs ops asked to run on "cuda" on the CPU instead."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        import torch.utils._pytree as pytree

        def to_cpu(a: Any) -> Any:
            if isinstance(a, torch.device) and a.type == "cuda":
                return torch.device("cpu")
            if isinstance(a, str) and a.startswith("cuda"):
                return "cpu"
            return a

        args, kwargs = pytree.tree_map(to_cpu, (args, kwargs or {}))
        return func(*args, **kwargs)


# ---------------------------------------------------------------------------------------------
# The hook: a TritonScheduling that lowers each kernel, then lets stock codegen run


class _CodegenFinishedError(Exception):
    pass


@functools.cache
def _scheduling_class() -> type:
    from torch._inductor.codegen.triton import TritonScheduling
    from torch._inductor.utils import Placeholder

    class CaptureScheduling(TritonScheduling):
        records: list[CapturedKernel]
        strict: bool = False
        # capture's `fuse`: whether a norm's backward stock leaves unfused is fused (tilec.frontend.fusion)
        mix_order_fusion: Callable[[Any, int, int, int, int, int], bool] | None = None

        def codegen_node_schedule(self, kernel_features: Any) -> Any:
            record = _record(kernel_features, lower(kernel_features, self, strict=self.strict))
            return self._recording(
                record, lambda: super(CaptureScheduling, self).codegen_node_schedule(kernel_features)
            )

        def codegen_mix_order_reduction(self, node: Any) -> Any:
            """Inductor's fused norm backward (not through codegen_node_schedule): lowered as a
            banded kernel (from copies of its nodes), then stock's kernel generated."""
            features = mix_order_features(self, node)
            record = _record(features, lower(features, self, strict=self.strict, mix_order=True))
            return self._recording(record, lambda: super(CaptureScheduling, self).codegen_mix_order_reduction(node))

        def _recording(self, record: CapturedKernel, generate: Callable[[], Any]) -> Any:
            """Stock code generation (`generate`), its kernel's name and source kept in `record`."""
            self.records.append(record)
            self._current: CapturedKernel | None = record
            try:
                return generate()
            finally:
                self._current = None

        def define_kernel(self, src_code: str, node_schedule: Any, kernel: Any) -> str:
            name = super().define_kernel(src_code, node_schedule, kernel)
            record = getattr(self, "_current", None)
            if record is not None and not record.name:
                record.name = name
                for placeholder in (Placeholder.DESCRIPTIVE_NAME, Placeholder.KERNEL_NAME):
                    src_code = src_code.replace(str(placeholder), name)
                record.source = src_code
            return name

    return CaptureScheduling


def _symbol_values(result: Lowered | Unsupported) -> dict[str, int]:
    if not isinstance(result, Lowered):
        return {}
    symbols = {s for e in result.sizes.values() for s in sympy.sympify(e).free_symbols}
    values = traced_values()
    return {str(s): int(values[s]) for s in sorted(symbols, key=str)}


def _traced_layouts(result: Lowered | Unsupported) -> dict[str, tuple[tuple[int, ...], tuple[int, ...], int]]:
    return traced_layouts(result) if isinstance(result, Lowered) else {}


def _record(features: Any, result: Lowered | Unsupported) -> CapturedKernel:
    """A kernel's record, named once stock's code generation defines it."""
    return CapturedKernel(
        name="",
        result=result,
        numel=str(features.numel),
        rnumel=str(features.reduction_numel),
        reductions=_reduction_types(features),
        symbols=_symbol_values(result),
        layouts=_traced_layouts(result),
    )


def _reduction_types(features: Any) -> list[str]:
    out: dict[str, None] = {}
    for node in features.scheduler_nodes():
        try:
            rt = node.node.get_reduction_type()
        except Exception:
            rt = None
        if rt:
            out[str(rt)] = None
    return list(out)


@contextlib.contextmanager
def _hooked(
    device: str,
    records: list[CapturedKernel],
    strict: bool,
    fake_gpu: bool,
    fuse: Callable[[Any, int, int, int, int, int], bool] | None = None,
) -> Iterator[None]:
    """Installs the capturing scheduling for `device` and stops compilation after codegen."""
    from torch._inductor import config as inductor_config
    from torch._inductor import graph as graph_mod
    from torch._inductor.codegen import common

    cls = _scheduling_class()

    def make_triton(scheduler: Any) -> Any:
        s = cls(scheduler)
        s.records, s.strict, s.mix_order_fusion = records, strict, fuse
        return s

    def make_cuda(scheduler: Any) -> Any:
        from torch._inductor.codegen.cuda_combined_scheduling import CUDACombinedScheduling

        combined = CUDACombinedScheduling(scheduler)
        combined._triton_scheduling = make_triton(scheduler)
        return combined

    def compile_to_module(self: Any) -> Any:
        self.codegen_with_cpp_wrapper() if self.cpp_wrapper else self.codegen()
        raise _CodegenFinishedError

    p = _Patcher()
    try:
        common.init_backend_registration()
        stock = common.device_codegens[device]
        p.setitem(
            common.device_codegens,
            device,
            dataclasses.replace(stock, scheduling=make_cuda if device == "cuda" else make_triton),
        )
        p.setattr(graph_mod.GraphLowering, "_compile_to_module", compile_to_module)
        patches: dict[str, Any] = {
            "fx_graph_cache": False,
            "fx_graph_remote_cache": False,
            "autotune_local_cache": False,
            "compile_threads": 1,
        }
        if device == "cpu":
            patches["cpu_backend"] = "triton"
        if fake_gpu:
            # padding matmul operands is decided by timing them on the device: there is none
            patches["shape_padding"] = False
        from tilec.frontend.fusion import patched

        with inductor_config.patch(patches), patched():
            yield
    finally:
        p.restore()


def _find(e: BaseException | None, cls: type) -> BaseException | None:
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, cls):
            return e
        seen.add(id(e))
        e = getattr(e, "inner_exception", None) or e.__cause__ or e.__context__
    return None


def _fake_inputs(inputs: Sequence[Any], device: str, mode: Any) -> list[Any]:
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            # a 0-d CPU tensor stays on the CPU, as where a GPU program passes one (a scalar the
            # wrapper passes to GPU kernels by value)
            where = "cpu" if x.dim() == 0 and x.device.type == "cpu" else device
            with mode:
                t = torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device=where)
            out.append(t.requires_grad_(x.requires_grad) if x.is_floating_point() else t)
        else:
            out.append(x)
    return out


def capture(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    device: str = "cuda",
    dynamic: bool | Literal["all"] = False,
    strict: bool = False,
    fuse: Callable[[Any, int, int, int, int, int], bool] | None = None,
) -> list[CapturedKernel]:
    """Traces `fn(*inputs)` with torch.compile and returns the fused Triton kernels Inductor
    generates for `device` ("cuda": the GPU, or a fake H100 without one; "cpu"), each with its
    tile IR or the reason tilec does not take it. Raises CaptureError if tracing fails.

    `dynamic`: every input's leading dimensions are symbolic (batch and sequence, as Dynamo makes
    them after a model meets a second sequence length), its last dimension static; "all": every
    dimension of every input symbolic, the last too (`torch.compile(dynamic=True)`: a row length
    that varies, as an attention softmax's over a varying sequence).

    `fuse(device, rows, row, elem_bytes, sums, row_inputs)`: whether a norm's backward of `rows`
    rows of `row` elements (`sums` column sums, `row_inputs` whole rows read) that stock Inductor
    leaves unfused is fused into a mix-order reduction, as the hook has it
    (`tilec.frontend.fusion`; the hook asks the GPU's table); None: as stock fuses."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    if device not in ("cuda", "cpu"):
        raise ValueError(f"device must be 'cuda' or 'cpu', not {device!r}")
    records: list[CapturedKernel] = []
    fake_gpu = device == "cuda" and not torch.cuda.is_available()
    with contextlib.ExitStack() as stack:
        if fake_gpu:
            stack.enter_context(fake_h100())
        elif device == "cpu":
            import torch.utils._triton as triton_utils

            p = _Patcher()
            stack.callback(p.restore)
            p.setattr(triton_utils, "triton_hash_with_backend", lambda: FAKE_BACKEND_HASH)
        stack.enter_context(_hooked(device, records, strict, fake_gpu, fuse))
        args = _fake_inputs(inputs, device, FakeTensorMode())
        if dynamic:
            for t in args:
                if isinstance(t, torch.Tensor):
                    # the leading dimensions; the last stays static unless every one is symbolic
                    for dim in range(t.dim() if dynamic == "all" else t.dim() - 1):
                        torch._dynamo.mark_dynamic(t, dim)
        compiled = torch.compile(fn, dynamic=False, fullgraph=True)
        try:
            compiled(*args)
        except Exception as e:
            if _find(e, _CodegenFinishedError) is None:
                raise CaptureError(_first_line(e)) from e
    for record in records:
        if isinstance(record.result, Lowered) and record.name:
            from tilec.frontend.lower import sanitize_name

            record.result.kernel.name = sanitize_name(record.name)
    return records


def backward_graph(fn: Callable[..., Any], inputs: Sequence[torch.Tensor]) -> Any:
    """The backward graph AOT autograd partitions for Inductor from `fn(*inputs)` (inputs on the
    meta device that require grad, so decompositions take their GPU branches; each output's
    gradient all ones), as `capture` takes a graph: what a training step's backward compiles."""
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.decomposition import select_decomp_table

    graphs: dict[str, Any] = {}

    def backend(gm: Any, example_inputs: Any) -> Any:
        def keep(g: Any, _: Any) -> Any:
            graphs["backward"] = g
            return g

        return aot_module_simplified(
            gm,
            example_inputs,
            fw_compiler=lambda g, _: g,
            bw_compiler=keep,  # type: ignore[arg-type]
            partition_fn=min_cut_rematerialization_partition,
            decompositions=select_decomp_table(),
        )

    torch._dynamo.reset()
    outs = torch.compile(fn, backend=backend, fullgraph=True)(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
    torch._dynamo.reset()
    return graphs["backward"]


def input_order(gm: Any) -> list[int]:
    """The placeholders of `gm` (their indices) in the order Inductor numbers its inputs
    (`arg{i}_1`): `capture`'s Dynamo traces gm's code, which makes each argument a graph input
    where it is first used."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    order: list[int] = []
    for node in gm.graph.nodes:
        for arg in node.all_input_nodes:
            if arg.op == "placeholder" and placeholders.index(arg) not in order:
                order.append(placeholders.index(arg))
    return order


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".strip()
