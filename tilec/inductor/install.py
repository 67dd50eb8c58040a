"""Turning tilec on for every graph, and taking it away again: the public functions.

    tilec.install()              # every graph: CUDA; tilec.install(cpu=True) also the CPU (Triton's interpreter)
    tilec.uninstall()
    with tilec.installed(): ...
    torch.compile(model, backend="tilec")    # only the graphs compiled through it (tilec/inductor/backend.py)

How the hook is registered with Inductor, and when it applies: `tilec.inductor.registry`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from tilec.inductor import registry

log = logging.getLogger("tilec")


def install(cpu: bool = False) -> None:
    """Registers tilec's hook with Inductor for CUDA (and, with `cpu=True`, for the CPU) and applies
    it to every graph Inductor compiles.

    Idempotent. `cpu=True` runs the kernels tilec takes on the CPU in Triton's interpreter, which
    this turns on for the whole process (Triton must not have been imported yet, unless
    TRITON_INTERPRET=1 was set before Python started); Inductor's C++ backend keeps the rest. Use it
    for testing, never on a machine that runs CUDA models in the same process."""
    if cpu:
        from tilec.runtime import enable_interpreter

        enable_interpreter()  # before torch._inductor imports triton
    registry.register(cpu=cpu)
    _register_backend_name()
    registry.apply_everywhere("cuda")
    if cpu:
        registry.apply_everywhere("cpu")


def uninstall() -> None:
    """Restores Inductor's own registrations for every device tilec hooked (installed, or
    registered by the backend)."""
    registry.restore()


def is_installed(device: str = "cuda") -> bool:
    """Whether tilec applies to every graph Inductor compiles for `device`."""
    return device in registry.applied_everywhere()


@contextlib.contextmanager
def installed(cpu: bool = False) -> Iterator[None]:
    """`install(cpu)` for a `with` block; on exit, removes what the block installed."""
    devices, everywhere = registry.registered(), registry.applied_everywhere()
    install(cpu=cpu)
    try:
        yield
    finally:
        registry.restore(devices, everywhere)


def _register_backend_name() -> None:
    """`backend="tilec"` also where the entry point is not visible (tilec on PYTHONPATH, not installed)."""
    try:
        from torch._dynamo.backends import registry

        from tilec.inductor.backend import tilec_backend

        if "tilec" not in registry._COMPILER_FNS:
            registry.register_backend(tilec_backend, name="tilec")
    except Exception:  # the entry point still works
        log.debug("tilec: could not register the Dynamo backend name", exc_info=True)
