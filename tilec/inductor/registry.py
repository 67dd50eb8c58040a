"""Registering tilec's hook with Inductor, per device, and whether it applies to the graph being
compiled.

For each device, Inductor's registered `DeviceCodegen` gets a scheduling constructor that builds
the stock scheduling and, where tilec applies to the graph, swaps in tilec's: on CUDA,
`CUDACombinedScheduling` keeps routing templates to CUTLASS and friends, and its Triton part
becomes tilec's TritonScheduling; on the CPU, the C++ scheduling becomes tilec's CppScheduling
(or, with `cpu_backend="triton"`, the Triton one). Wrappers stay stock.

Registered does not mean applied: tilec applies to a graph on a device where `install()` applied
it to every graph (`apply_everywhere`), or inside `scope()`, which the `tilec` backend wraps
around Inductor's compiles of its graphs. Elsewhere the constructor returns the stock
scheduling, untouched.

Inductor's FX-graph cache key does not cover the scheduling, so registering also registers a
device custom pass (it changes nothing in the graph) whose `uuid()` is `tilec.config.fingerprint()`
(with the decompositions the backend replaces, `tilec.inductor.decompositions.active()`) where
tilec applies, and what it would be without tilec elsewhere: a graph compiled with tilec on, off,
not applied or under other settings never reuses another's code.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import logging
import sys
import threading
from collections.abc import Iterator
from typing import Any

from tilec import config as cfg
from tilec.inductor import decompositions

log = logging.getLogger("tilec")

_lock = threading.RLock()
# device -> (the DeviceCodegen and custom pass registered before tilec's)
_saved: dict[str, tuple[Any, Any]] = {}
# devices where tilec applies to every graph (install()); elsewhere only inside scope()
_everywhere: set[str] = set()
_scoped: contextvars.ContextVar[bool] = contextvars.ContextVar("tilec_scoped", default=False)
_callback_registered = False


def applies(device: str) -> bool:
    """Whether tilec generates the kernels of the graph being compiled for `device`."""
    return device in _saved and (device in _everywhere or _scoped.get())


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """tilec for the graphs compiled inside the block, on each device it is registered for."""
    token = _scoped.set(True)
    try:
        yield
    finally:
        _scoped.reset(token)


@functools.cache
def _custom_pass_class() -> type:
    try:
        from torch._inductor.custom_graph_pass import CustomGraphModulePass as Base
    except ImportError:  # an older torch: the graph-level interface (the pass changes nothing anyway)
        from torch._inductor.custom_graph_pass import CustomGraphPass as Base  # type: ignore[assignment]

    class TilecCachePass(Base):  # type: ignore[valid-type,misc]
        """Changes nothing; its uuid puts tilec's version and settings into the FX-graph cache key of
        the graphs tilec applies to, and leaves the others' key as stock Inductor makes it."""

        def __init__(self, previous: Any = None, device: str = "cuda") -> None:
            self.previous = previous
            self.device = device

        def __call__(self, gm: Any) -> None:
            if self.previous is not None:
                self.previous(gm)

        def uuid(self) -> Any:
            if not applies(self.device):  # the key stock Inductor computes
                return None if self.previous is None else self.previous.uuid()
            rewrites = decompositions.active()  # the backend's decompositions, during its compile
            ours = cfg.fingerprint() + (f" rewrites={','.join(rewrites)}" if rewrites else "")
            if self.previous is None:
                return ours
            theirs = self.previous.uuid()
            return None if theirs is None else f"{ours}; {theirs}"

    return TilecCachePass


def _tilec_scheduling(stock: Any, device: str) -> Any:
    """A scheduling constructor: the stock scheduling, with tilec's in place of its Triton (or C++) part."""
    from tilec.inductor.cpu import cpp_scheduling_class
    from tilec.inductor.hook import triton_scheduling_class

    def make(scheduler: Any) -> Any:
        from torch._inductor.codegen.cpp import CppScheduling
        from torch._inductor.codegen.triton import TritonScheduling

        scheduling = stock(scheduler)
        if not applies(device):
            return scheduling
        inner = getattr(scheduling, "_triton_scheduling", None)
        if inner is not None and type(inner) is TritonScheduling:
            scheduling._triton_scheduling = triton_scheduling_class()(scheduler)
            return scheduling
        if type(scheduling) is TritonScheduling:
            return triton_scheduling_class()(scheduler)
        if device == "cpu" and type(scheduling) is CppScheduling:
            return cpp_scheduling_class()(scheduler)
        return scheduling  # a backend tilec does not know (Halide, Pallas, ...): left alone

    make.tilec_stock = stock  # type: ignore[attr-defined]
    return make


def _on_compile_end(*args: Any, **kwargs: Any) -> None:
    from tilec.inductor.report import flush_summary

    flush_summary()


def _register_callback() -> None:
    global _callback_registered
    if _callback_registered:
        return
    try:
        from torch._dynamo.callback import callback_handler

        callback_handler.register_end_callback(_on_compile_end)
    except Exception:  # an older Dynamo: summaries come with the next graph or report()
        log.debug("tilec: no Dynamo end-of-compile callback", exc_info=True)
    _callback_registered = True


def _log_handler() -> None:
    """The summary lines are meant to be seen: without logging configured, print INFO to stderr."""
    if log.handlers or logging.getLogger().handlers or log.level != logging.NOTSET:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def _install_device(device: str) -> None:
    from torch._inductor.codegen import common

    if device in _saved:
        return
    stock = common.device_codegens.get(device)
    if stock is None:
        raise RuntimeError(f"Inductor has no backend registered for {device!r}")
    previous_pass = common.custom_backend_passes.get(device)
    _saved[device] = (stock, previous_pass)
    common.device_codegens[device] = dataclasses.replace(stock, scheduling=_tilec_scheduling(stock.scheduling, device))
    common.custom_backend_passes[device] = _custom_pass_class()(previous_pass, device)


def _uninstall_device(device: str) -> None:
    from torch._inductor.codegen import common

    saved = _saved.pop(device, None)
    if saved is None:
        return
    stock, previous_pass = saved
    common.device_codegens[device] = stock
    # assigned, not removed: the cache key lists the passes in the dict's order, which must not change
    common.custom_backend_passes[device] = previous_pass


def register(cpu: bool = False) -> None:
    """Registers tilec's hook with Inductor for CUDA (and, with `cpu=True`, for the CPU) without
    applying it to any graph: graphs compiled inside `scope()` get tilec, the others stay stock.
    Idempotent. The CPU needs Triton's interpreter (see `install`)."""
    from torch._inductor.codegen import common

    from tilec.frontend import fusion

    with _lock:
        common.init_backend_registration()
        fusion.patch()  # mix-order fusions tilec's schedulings ask for (inert under any other)
        _install_device("cuda")
        if cpu:
            _install_device("cpu")
        _register_callback()
        _log_handler()


def apply_everywhere(device: str) -> None:
    """tilec for every graph compiled for `device` (registered already)."""
    with _lock:
        _everywhere.add(device)


def applied_everywhere() -> set[str]:
    return set(_everywhere)


def registered() -> set[str]:
    return set(_saved)


def restore(devices: set[str] | None = None, everywhere: set[str] | None = None) -> None:
    """Takes tilec's hook away from every registered device not in `devices` (all of them: None)
    and applies it everywhere only on `everywhere` (none: None)."""
    with _lock:
        _everywhere.intersection_update(everywhere or set())
        for device in list(_saved):
            if devices is None or device not in devices:
                _uninstall_device(device)
        if not _saved:
            from tilec.frontend import fusion

            fusion.unpatch()


def is_registered(device: str = "cuda") -> bool:
    """Whether tilec's hook is registered for `device` (applied or not)."""
    return device in _saved
