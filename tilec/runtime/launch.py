"""The object Inductor's wrapper calls for a kernel tilec took: `kernel.run(*args, stream=...)`.

    kernel = load_kernel("triton_per_fused_softmax_0", gluon_source, "gluon", order=[0, 1],
                         fallback=triton_source, fallback_order=[0, 1], tma=[(0, (1000, 1), 2)])
    kernel.run(x, y, stream=stream0)        # the wrapper's line, as for a stock Triton kernel

`run` takes the kernel's buffers in the order of `Lowered.args`; each variant's `order` says which
of them its emitted `launch` takes, in its order. The primary variant (Gluon on Hopper) reads some
inputs through TMA descriptors (`tma`: the argument, the descriptor's element strides, the element
size). TMA needs a 16-byte-aligned base and 16-byte-aligned non-last strides: when an input breaks
that at run time (a view with an odd storage offset), that launch takes the fallback variant
(plain Triton, no TMA) instead — same result, no crash.

Descriptors are built once per tuple of base pointers and kept without their tensors (a cached
descriptor must not keep an activation alive): each launch rebinds a shallow copy to the tensor
passed. Their shapes and strides are the kernel's own constants (only kernels of static shapes
get TMA operands), so the pointers are the whole key. Triton 3.6 still encodes the CUDA tensor map on every launch
(`fill_tma_descriptor` in its launcher); the cache saves the Python-side construction and checks.

Once Triton has compiled a variant, later launches skip Triton's Python (`_Bound`): the kernel's
compiled C launcher is called directly with the grid and argument layout found at the first
launch, and the encoded TMA descriptors of each tuple of base pointers are reused — the per-call
work is gathering the arguments and checking device and pointer alignment. Anything else (another
alignment, a launch hook, no stream from the wrapper) takes the general path below.

A kernel over rows of symbolic length may carry plans of their own for its shorter rows (`split`:
the run() argument that is the row length and the lengths, ascending, that bound the `shorter`
variants): a launch on rows shorter than the i-th length (and no shorter than the one before)
takes the i-th of them, a launch on longer rows the primary (one plan cannot serve every length:
bench/results/2026-11-28-h200-symbolic-survey). Each variant counts its launches under its role:
"primary", "fallback", "below N" for the one serving rows shorter than N.

If the primary variant fails on its first launch (a compile error in Triton), the kernel logs it and
uses the fallback from then on (`tilec.config.strict` raises instead). `num_sms` for persistent grids
comes from the device's properties, once per device. A launch runs on the stream Inductor passes
(`get_raw_stream(i)`, normally the current one; another is made current for the launch).

On the CPU (`device="cpu"`) the variant is plain Triton run by Triton's interpreter.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tilec.ir.errors import error_line
from tilec.ir.verify import MAX_MULTIPLE_OF
from tilec.runtime.loader import load_source

log = logging.getLogger("tilec")

__all__ = ["TilecKernel", "TmaOperand", "load_kernel", "loaded_kernels"]

# descriptor-cache entries kept per kernel before the cache starts over
MAX_CACHED_POINTERS = 256
_MISALIGNED = object()
_loaded: list[weakref.ref[TilecKernel]] = []  # in load order


@dataclass(frozen=True)
class TmaOperand:
    """An input the primary variant reads through a TMA descriptor."""

    arg: int  # index into run()'s arguments
    strides: tuple[int, ...]  # the descriptor's strides, in elements
    elem_bytes: int

    def strides_ok(self) -> bool:
        return all((s * self.elem_bytes) % 16 == 0 for s in self.strides[:-1]) and (
            not self.strides or self.strides[-1] == 1
        )


class Variant:
    """One emitted module and the run() arguments its `launch` takes, in order."""

    def __init__(self, source: str, kind: str, order: tuple[int, ...], interpret: bool) -> None:
        self.source, self.kind, self.order, self.interpret = source, kind, order, interpret
        self._module: ModuleType | None = None
        # Triton's compiled kernel per (device, specialization of the arguments): see `_launch`
        self.compiled: dict[tuple[Any, ...], Any] = {}

    @property
    def module(self) -> ModuleType:
        if self._module is None:
            self._module = load_source(self.source, interpret=self.interpret)
        return self._module

    def args(self, args: tuple[Any, ...]) -> list[Any]:
        return [args[i] for i in self.order]


class TilecKernel:
    """A kernel tilec took, as the wrapper calls it: `.run(*args, stream=None)`."""

    def __init__(
        self,
        name: str,
        primary: Variant,
        fallback: Variant | None = None,
        tma: tuple[TmaOperand, ...] = (),
        device: str = "cuda",
        split: tuple[int, tuple[int, ...]] | None = None,
        shorter: tuple[Variant, ...] = (),
    ) -> None:
        self.name = name
        self.primary = primary
        self.fallback = fallback
        # (the run() argument holding the row length, the lengths bounding `shorter`, ascending):
        # a row shorter than the i-th length takes shorter[i], the first that fits
        if (split is None) != (not shorter) or (split is not None and len(split[1]) != len(shorter)):
            raise ValueError(f"tilec: {name}: a split needs one variant per length ({split}, {len(shorter)} variants)")
        self.split = split
        self.shorter = shorter
        self.tma = tma
        self.device = device
        self._roles = {id(primary): "primary"}
        if fallback is not None:
            self._roles[id(fallback)] = "fallback"
        for length, variant in zip(split[1] if split else (), shorter):
            self._roles[id(variant)] = f"below {length}"
        self.launches = dict.fromkeys(["primary", "fallback", *self._roles.values()], 0)  # per role (tests read them)
        self._descs: dict[tuple[int, ...], Any] = {}
        self._desc_args: dict[str, int] | None = None  # descriptor name -> run() argument
        self._num_sms: dict[int, int] = {}
        self._primary_failed = False
        self._primary_ran = False
        self._bound: _Bound | None = None  # the last variant launched, bound to its C launcher
        # a stride TMA cannot take can never change (shapes are static): decide once
        self._primary_possible = all(t.strides_ok() for t in tma) and (not tma or fallback is not None)
        if tma and fallback is not None and not self._primary_possible:
            log.debug("tilec: %s: descriptor strides are not 16-byte aligned; using %s", name, fallback.kind)

    def __repr__(self) -> str:
        kinds = self.primary.kind + (f"/{self.fallback.kind}" if self.fallback else "")
        kinds += f", {len(self.shorter)} more by row length" if self.shorter else ""
        return f"TilecKernel({self.name!r}, {kinds}, device={self.device!r})"

    # -- the launch

    def run(self, *args: Any, stream: Any = None) -> None:
        if self.device == "cpu":
            self._launch(self._by_length(args) or self.primary, args, None)
            return
        bound = self._bound
        if (
            bound is not None
            and stream is not None
            and (self.split is None or bound.variant is (self._by_length(args) or self.primary))
            and bound.launch(args, stream)
        ):
            self.launches[self._roles[id(bound.variant)]] += 1
            return
        variant, descs = self._variant_for(args)
        if variant is not self.primary:
            self._launch(variant, args, stream)
            return
        if self._primary_ran:
            self._launch(self.primary, args, stream, descs)
            return
        try:
            self._launch(self.primary, args, stream, descs)
            self._primary_ran = True
        except Exception as e:
            from tilec import config

            if config.strict or self.fallback is None:
                raise
            self._primary_failed = True
            self.launches["primary"] -= 1
            log.warning(
                "tilec: %s: the %s kernel failed on its first launch (%s); using %s from now on",
                self.name,
                self.primary.kind,
                error_line(e),
                self.fallback.kind,
            )
            self._launch_fallback(args, stream)

    def compile_only(self, *args: Any) -> None:
        """Compiles the variant `run(*args)` would launch for these arguments, without launching it
        (the module's `compile_only`: Triton's `warmup`); the launch that follows finds it compiled.
        Nothing to do on the CPU (the interpreter compiles nothing)."""
        if self.device == "cpu":
            return
        variant, descs = self._variant_for(args)
        kwargs: dict[str, Any] = {"num_sms": self._sms()}
        if descs is not None:
            kwargs["descs"] = descs
        compile_only = getattr(variant.module, "compile_only", None)
        if compile_only is not None:
            compile_only(*variant.args(args), **kwargs)

    def _variant_for(self, args: tuple[Any, ...]) -> tuple[Variant, Any]:
        """The variant a launch on `args` runs and its TMA descriptors (None without TMA): the
        shorter rows' variant for rows it serves; the fallback where the primary failed or cannot
        read these arguments through TMA (strides, a misaligned base)."""
        shorter = self._by_length(args)
        if shorter is not None:
            return shorter, None
        if self._primary_failed or (self.tma and not self._primary_possible):
            return self._fallback(), None
        descs = self._descriptors(args) if self.tma else None
        if descs is _MISALIGNED:
            return self._fallback(), None
        return self.primary, descs

    def _by_length(self, args: tuple[Any, ...]) -> Variant | None:
        """The variant of the shorter rows that serves the row length in `args` (`split`), or None
        where the primary's plan serves it."""
        if self.split is None:
            return None
        n = int(args[self.split[0]])
        for length, variant in zip(self.split[1], self.shorter):
            if n < length:
                return variant
        return None

    def _fallback(self) -> Variant:
        if self.fallback is None:  # pragma: no cover - a TMA kernel always has one
            raise RuntimeError(f"tilec: {self.name}: no fallback variant")
        return self.fallback

    def _launch_fallback(self, args: tuple[Any, ...], stream: Any) -> None:
        self._launch(self._fallback(), args, stream)

    def _launch(self, variant: Variant, args: tuple[Any, ...], stream: Any, descs: Any = None) -> None:
        self.launches[self._roles[id(variant)]] += 1
        module = variant.module
        kwargs: dict[str, Any] = {"num_sms": self._sms()}
        if descs is not None:
            kwargs["descs"] = descs
        if self.device == "cpu":
            module.launch(*variant.args(args), **kwargs)
            return
        # The fast path: Triton's `kernel[grid](...)` spends tens of microseconds of host time per
        # launch binding and specializing the arguments, which a small kernel cannot hide. After
        # the first launch, the compiled kernel it returned is called directly, as Inductor's
        # own launchers do, for arguments with the same specialization (what Triton's cache key
        # takes from run-time values: pointer alignment, integer divisibility); any other goes
        # through Triton again.
        prepare = getattr(module, "launch_args", None)
        if prepare is not None:
            index = _current_device()
            grid, kernel_args = prepare(*variant.args(args), **kwargs)
            key = (index, *map(_specialization, kernel_args))
            compiled = variant.compiled.get(key)
            if compiled is not None:
                _run_compiled(compiled, grid, _current_stream(index) if stream is None else stream, kernel_args)
                self._bind(variant, compiled, grid, kernel_args, args, index, prepare, kwargs)
                return
        if stream is None or stream == _current_stream(_current_device()):
            compiled = module.launch(*variant.args(args), **kwargs)
        else:
            import torch

            with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
                compiled = module.launch(*variant.args(args), **kwargs)
        if prepare is not None and _is_compiled(compiled):
            variant.compiled[key] = compiled
        if prepare is not None and compiled is not None:
            self._bind(variant, compiled, grid, kernel_args, args, index, prepare, kwargs)

    def _bind(
        self,
        variant: Variant,
        compiled: Any,
        grid: tuple[int, ...],
        kernel_args: tuple[Any, ...],
        args: tuple[Any, ...],
        index: int,
        prepare: Any,
        kwargs: dict[str, Any],
    ) -> None:
        """Binds the next launches of `variant` to the compiled kernel (`_Bound`)."""
        sizes = _sizes(prepare, variant, args, kwargs)
        self._bound = _Bound.make(
            compiled,
            grid,
            kernel_args,
            args,
            index,
            self.tma,
            variant,
            kwargs["num_sms"],
            sizes,
        )

    def _sms(self) -> int:
        if self.device == "cpu":
            return 1
        import torch

        index = torch.cuda.current_device()
        n = self._num_sms.get(index)
        if n is None:
            n = self._num_sms[index] = torch.cuda.get_device_properties(index).multi_processor_count
        return n

    # -- TMA descriptors

    def aligned(self, args: tuple[Any, ...]) -> bool:
        """Whether every TMA input can be read through its descriptor (16-byte aligned base)."""
        return all(args[t.arg].data_ptr() % 16 == 0 for t in self.tma)

    def _descriptors(self, args: tuple[Any, ...]) -> Any:
        """The TMA descriptors for `args` (the cached templates rebound to their tensors), or
        `_MISALIGNED` where a TMA input's base is not 16-byte aligned."""
        ptrs = tuple(args[t.arg].data_ptr() for t in self.tma)
        templates = self._descs.get(ptrs)
        if templates is None:
            templates = self._templates(args, ptrs)
        if templates is _MISALIGNED:
            return _MISALIGNED
        return {name: _rebind(t, args[self._desc_args[name]]) for name, t in templates.items()}  # type: ignore[index]

    def _templates(self, args: tuple[Any, ...], ptrs: tuple[int, ...]) -> Any:
        if len(self._descs) >= MAX_CACHED_POINTERS:
            self._descs.clear()
        if not self.aligned(args):
            log.debug("tilec: %s: a TMA input is not 16-byte aligned; this launch uses %s", self.name, "triton")
            self._descs[ptrs] = _MISALIGNED
            return _MISALIGNED
        built = self.primary.module.descriptors(*self.primary.args(args))
        if self._desc_args is None:
            self._desc_args = {}
            for name, d in built.items():
                index = next((i for i, a in enumerate(args) if a is d.base), None)
                if index is None:  # pragma: no cover - descriptors are built from run()'s tensors
                    raise RuntimeError(f"tilec: {self.name}: descriptor {name} is built from no argument")
                self._desc_args[name] = index
        templates = {name: _rebind(d, None) for name, d in built.items()}
        self._descs[ptrs] = templates
        return templates


class _Bound:
    """One compiled variant, launched with no Python of Triton's: its C launcher called with the
    grid and the argument layout found at the first launch.

    Inductor's wrapper passes the stream and the same buffers' kind at every call (static shapes),
    so a launch only gathers the run() arguments into the kernel's order (each buffer as its
    address: Triton's C launcher takes an integer as it is), checks that the device
    and the 16-byte alignment of each pointer are those it was bound for (else the general path,
    which may compile another specialization or take the fallback), and reuses the encoded TMA
    descriptor of each tuple of base pointers (`cuTensorMapEncodeTiled` runs once per tuple, not
    once per launch; the encoding holds no tensor). A kernel with a symbolic size takes it as a
    run() argument after the buffers: passed through (divided by the power of two the kernel
    knows divides it, `multiple_of`, as the emitted launcher divides it), the grid recomputed from
    it by the emitted `GRID` (the emitters compile size parameters unspecialized, so any size that fits 32 bits
    keeps the binding); a number the wrapper passes by value (`buf.item()`) is passed through
    too. Kernels that need Triton's scratch memory or launch hooks, and launchers of another
    shape than Triton 3.6's, keep the general path."""

    variant: Variant | None  # the variant it launches (TilecKernel counts its launches by it)
    c_launch: Any  # Triton's compiled C launcher
    function: Any  # the CUfunction
    head: tuple[Any, ...]  # the launcher's arguments between the function and the kernel's
    device: int
    grid: tuple[int, int, int]
    layout: tuple[tuple[str, Any], ...]
    desc_meta: list[Any] | None
    desc_source: tuple[int, ...]  # the run() argument each descriptor reads
    tensor_args: tuple[int, ...]
    encoded: dict[tuple[int, ...], list[list[Any]]]
    # per-call numbers (a symbolic xnumel, a value passed as `buf.item()`): the run() arguments,
    # the specialization Triton compiled them for, and the grid, recomputed from them at each launch
    size_args: tuple[int, ...]
    size_spec: tuple[Any, ...]
    grid_of: Callable[[tuple[Any, ...]], tuple[int, ...]] | None

    @classmethod
    def make(
        cls,
        compiled: Any,
        grid: tuple[int, ...],
        kernel_args: tuple[Any, ...],
        args: tuple[Any, ...],
        device: int,
        tma: tuple[TmaOperand, ...],
        variant: Variant | None = None,
        num_sms: int = 1,
        sizes: dict[int, tuple[int, int]] | None = None,
    ) -> _Bound | None:
        """`sizes`: kernel argument index -> (run() argument index, the divisor the emitted
        launcher applies to it), for per-call numbers."""
        sizes = sizes or {}
        try:
            launcher = compiled.run
            c_launch, desc_meta = _c_launcher(launcher.launch)
            if c_launch is None or launcher.global_scratch_size or launcher.profile_scratch_size:
                return None
            head = (launcher.launch_cooperative_grid, launcher.launch_pdl, None, None, compiled.packed_metadata)
            function = compiled.function
        except AttributeError:
            return None
        self = cls()
        self.variant = variant
        self.c_launch, self.function, self.head, self.device = c_launch, function, head, device
        self.grid = (grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1)
        # per kernel argument: ("arg", index into run()'s arguments), ("desc", index of the TMA
        # operand it reads), or ("const", value)
        layout: list[tuple[str, Any]] = []
        descs = 0
        for k, a in enumerate(kernel_args):
            if k in sizes:
                layout.append(("size", sizes[k]))  # (run() argument, what the launch divides it by)
                continue
            scalar = isinstance(a, (int, float, bool)) or a is None
            i = None if scalar else next((j for j, x in enumerate(args) if x is a), None)
            if i is not None:
                layout.append(("arg", i))
            elif hasattr(a, "block_shape") and hasattr(a, "base"):
                src = next((j for j, x in enumerate(args) if x is a.base), None)
                if src is None or desc_meta is None or descs >= len(desc_meta):
                    return None
                layout.append(("desc", (descs, src, _rebind(a, None))))  # no tensor kept alive
                descs += 1
            elif isinstance(a, (int, float, bool)) or a is None:
                layout.append(("const", a))
            else:
                return None
        self.layout = tuple(layout)
        self.desc_meta = desc_meta
        self.desc_source = tuple(src for kind, v in layout if kind == "desc" for _, src, _ in [v])
        self.tensor_args = tuple(v for kind, v in layout if kind == "arg")
        self.size_args = tuple(i for kind, v in layout if kind == "size" for i, _ in [v])
        self.size_spec = tuple(_size_spec(args[i]) for i in self.size_args)
        self.grid_of = None
        if self.size_args:
            grid_fn = getattr(variant.module, "GRID", None) if variant is not None else None
            if grid_fn is None or variant is None:
                return None
            order = variant.order
            self.grid_of = lambda a: grid_fn(*(a[i] for i in order), num_sms=num_sms)
        self.encoded = {}
        if any(args[i].data_ptr() & 15 for i in self.tensor_args + self.desc_source):
            return None  # bind the common case only: every pointer 16-byte aligned
        return self

    def launch(self, args: tuple[Any, ...], stream: int) -> bool:
        """Launches and returns True, or returns False for the general path to take the call."""
        if knobs_hooked() or _current_device() != self.device:
            return False
        kernel_args: list[Any] = []
        encoded = None
        if self.desc_source:
            ptrs = tuple(args[i].data_ptr() for i in self.desc_source)
            if any(p & 15 for p in ptrs):
                return False
            encoded = self.encoded.get(ptrs)
            if encoded is None:
                if len(self.encoded) >= MAX_CACHED_POINTERS:
                    self.encoded.clear()
                encoded = self.encoded[ptrs] = self._encode(args)
        if self.size_args and tuple(_size_spec(args[i]) for i in self.size_args) != self.size_spec:
            return False  # a size past 32 bits (Triton passes it as another type), or another type
        for kind, v in self.layout:
            if kind == "arg":
                # the address itself: Triton's C launcher takes an integer as it is, where of a
                # tensor it calls data_ptr() again and asks the driver whether the address is
                # device memory (cuPointerGetAttribute), once per pointer and launch. The tensor
                # is on the device the kernel was bound on: a tensor of this buffer's kind was
                # checked so at the first launch, and the wrapper allocates each call's alike.
                p = args[v].data_ptr()
                if p & 15:
                    return False
                kernel_args.append(p)
            elif kind == "size":
                i, m = v
                kernel_args.append(args[i] // m if m > 1 else args[i])
            elif kind == "desc":
                assert encoded is not None
                kernel_args.extend(encoded[v[0]])
            else:
                kernel_args.append(v)
        gx, gy, gz = self.grid
        if self.grid_of is not None:
            g = self.grid_of(args)
            gx, gy, gz = g[0], g[1] if len(g) > 1 else 1, g[2] if len(g) > 2 else 1
        self.c_launch(gx, gy, gz, stream, self.function, *self.head, None, None, None, *kernel_args)
        return True

    def _encode(self, args: tuple[Any, ...]) -> list[list[Any]]:
        from triton.backends.nvidia.driver import make_tensordesc_arg

        meta = self.desc_meta or []
        out = []
        for kind, v in self.layout:
            if kind == "desc":
                index, src, template = v
                out.append(make_tensordesc_arg(_rebind(template, args[src]), meta[index]))
        return out


def _number(a: Any) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool)


def _sizes(prepare: Any, variant: Variant, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[int, tuple[int, int]]:
    """Which kernel arguments are run() arguments that change from call to call: sizes (a
    symbolic xnumel) and values the wrapper passes as numbers (`buf.item()`): kernel argument
    index -> (run() argument index, m), the kernel taking the argument divided by m (a size said
    to be a multiple of m: the emitters pass `size // m`; else 1). Found by preparing the launch
    again with each numeric argument replaced by a value no constant takes (of the same type: an
    integer stays an integer), each a multiple of every power of two a `multiple_of` may be."""
    probe_base, step = 1 << 40, 1 << 20
    if not any(_number(a) for a in args):
        return {}
    probe = tuple(type(a)(probe_base + j * step) if _number(a) else a for j, a in enumerate(args))
    _, probe_args = prepare(*variant.args(probe), **kwargs)
    found = {}
    for k, a in enumerate(probe_args):
        if not _number(a) or a != int(a):
            continue
        m = 1
        while m <= MAX_MULTIPLE_OF:  # every power of two a `multiple_of` may be
            j, r = divmod(int(a) * m - probe_base, step)
            if r == 0 and 0 <= j < len(args) and (m == 1 or isinstance(args[j], int)):
                found[k] = (j, m)
                break
            m *= 2
    return found


def knobs_hooked() -> bool:
    """Whether a Triton launch hook is set (a profiler's): such launches keep Triton's path.
    (Triton 3.6 keeps its hooks as chains, empty unless something added a hook.) Called at every
    bound launch: Triton's runtime knobs (one object, which Triton changes in place) are looked up
    once, not imported every call."""
    runtime = _runtime_knobs()
    return _hook_active(runtime.launch_enter_hook) or _hook_active(runtime.launch_exit_hook)


@functools.cache
def _runtime_knobs() -> Any:
    from triton import knobs

    return knobs.runtime


def _hook_active(hook: Any) -> bool:
    return hook is not None and bool(getattr(hook, "calls", True))


def _c_launcher(launch: Any) -> tuple[Any, Any]:
    """Triton 3.6's compiled launcher under its Python wrapper for tensor descriptors: (the C
    function, the descriptors' metadata), or (None, None) when it is not that shape."""
    code = getattr(launch, "__code__", None)
    if code is None:  # the C function itself: no descriptors
        return launch, None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in launch.__closure__ or ())))
    inner, meta = cells.get("launcher"), cells.get("tensordesc_meta")
    if inner is None or getattr(inner, "__code__", None) is not None or not meta or None in meta:
        return None, None
    return inner, list(meta)


def _rebind(template: Any, tensor: Any) -> Any:
    """A shallow copy of a descriptor on `tensor` (None: a template, which the cache keeps without
    its tensor so that it never keeps an activation alive)."""
    d = object.__new__(type(template))
    d.__dict__.update(template.__dict__)
    d.base = tensor
    return d


def _current_device() -> int:
    """torch.cuda.current_device(), by the function it ends in (found once: called at every bound
    launch)."""
    return int(_device_getter()())


@functools.cache
def _device_getter() -> Callable[[], int]:
    import torch

    return getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def _current_stream(index: int) -> int:
    import torch

    return int(torch._C._cuda_getCurrentRawStream(index))


def _size_spec(arg: int | float) -> tuple[type, bool]:
    """What Triton's cache key takes from a per-call number: its type and, of an integer (a size,
    which the emitters mark `do_not_specialize`), whether it fits 32 bits (a float is fp32)."""
    return type(arg), isinstance(arg, float) or -(2**31) <= arg < 2**31


def _specialization(arg: Any) -> Any:
    """What Triton's cache key takes from an argument's run-time value (triton/runtime/jit.py):
    a tensor's dtype and whether its pointer is 16-byte aligned; an integer's 1-ness and
    16-divisibility; the type of anything else (descriptors: their block and layout are the
    kernel's constants)."""
    if hasattr(arg, "data_ptr"):
        return (arg.dtype, arg.data_ptr() % 16 == 0)
    if isinstance(arg, bool):
        return (bool, arg)
    if isinstance(arg, int):
        return (int, arg == 1, arg % 16 == 0, -(2**31) <= arg < 2**31)
    return type(arg)


def _is_compiled(kernel: Any) -> bool:
    return all(hasattr(kernel, a) for a in ("run", "function", "packed_metadata", "launch_metadata"))


def _run_compiled(kernel: Any, grid: tuple[int, ...], stream: int, args: tuple[Any, ...]) -> None:
    """Launches Triton's compiled kernel as `JITFunction.run` does once it has it."""
    from triton import knobs

    g1 = grid[1] if len(grid) > 1 else 1
    g2 = grid[2] if len(grid) > 2 else 1
    kernel.run(
        grid[0],
        g1,
        g2,
        stream,
        kernel.function,
        kernel.packed_metadata,
        kernel.launch_metadata(grid, stream, *args),
        knobs.runtime.launch_enter_hook,
        knobs.runtime.launch_exit_hook,
        *args,
    )


def load_kernel(
    name: str,
    source: str,
    kind: str,
    order: list[int] | tuple[int, ...],
    fallback: str | None = None,
    fallback_kind: str = "triton",
    fallback_order: list[int] | tuple[int, ...] = (),
    tma: list[tuple[int, tuple[int, ...], int]] | tuple[Any, ...] = (),
    device: str = "cuda",
    split: tuple[int, Sequence[int]] | None = None,
    shorter: Sequence[tuple[str, str, Sequence[int]]] = (),
) -> TilecKernel:
    """The kernel object a wrapper defines (the sources are embedded in the wrapper, so a wrapper
    Inductor's FX-graph cache reloads in another process needs nothing else). `split`: (the run()
    argument that is the row length, the lengths bounding `shorter`: (source, kind, order) of
    each shorter rows' variant)."""
    interpret = device == "cpu"
    primary = Variant(source, kind, tuple(order), interpret)
    primary.module  # noqa: B018 - import now: a broken module fails when the wrapper loads, not mid-run
    back = Variant(fallback, fallback_kind, tuple(fallback_order), interpret) if fallback is not None else None
    operands = tuple(TmaOperand(int(a), tuple(int(s) for s in strides), int(b)) for a, strides, b in tma)
    variants = tuple(Variant(src, k, tuple(o), interpret) for src, k, o in shorter)
    rows = (int(split[0]), tuple(int(n) for n in split[1])) if split is not None else None
    kernel = TilecKernel(name, primary, back, operands, device, rows, variants)
    _loaded[:] = [r for r in _loaded if r() is not None]
    _loaded.append(weakref.ref(kernel))
    return kernel


def loaded_kernels(name: str | None = None) -> list[TilecKernel]:
    """The kernels wrappers have loaded in this process and still hold, oldest first (`name`: only those)."""
    alive = [k for k in (r() for r in list(_loaded)) if k is not None]
    return [k for k in alive if name is None or k.name == name]
