"""The CPU path: a CppScheduling subclass for Inductor's default C++ backend that gives each
fused kernel to tilec first (its Triton output, run by Triton's interpreter), C++ code generation
doing the rest.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tilec import config as cfg
from tilec.inductor.build import Declined, KernelBuild
from tilec.inductor.policy import INTERNAL_ERROR, attempt
from tilec.inductor.wrapper import commit, current_device, free_buffers, note
from tilec.ir.errors import error_line


class CpuFallbackError(RuntimeError):
    """A CPU kernel tilec does not take would go to Inductor's Triton backend, which needs a Triton
    CPU driver this Triton lacks."""


def triton_cpu_driver() -> bool:
    try:
        import triton.backends

        return "cpu" in triton.backends.backends
    except Exception:
        return False


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
            self._pending: list[tuple[set[str], Declined, Any]] = []  # declined kernels waiting for a C++ name

        def codegen_node(self, node: Any) -> Any:
            device = current_device()
            removed = getattr(self.scheduler, "removed_ops", ())
            nodes = [n for n in node.get_nodes() if n.get_name() not in removed]
            declined: Declined | None = None
            # (C++ fuses a reduction and its epilogue as an OuterLoopFusedSchedulerNode; Triton
            # would fuse the same nodes into one kernel, so its node schedule takes them as they are)
            if not isinstance(node, (FusedSchedulerNode, SchedulerNode)) or node.is_foreach() or not nodes:
                declined = Declined(f"scheduler node of type {type(node).__name__} is not supported")
            elif any(type(n) is not SchedulerNode for n in nodes):
                declined = next(
                    Declined(f"scheduler node of type {type(n).__name__} is not supported")
                    for n in nodes
                    if type(n) is not SchedulerNode
                )
            if declined is None:
                committing = False
                try:
                    with simd_view(nodes, device) as features:
                        built = attempt(self, features, device)
                        if isinstance(built, KernelBuild):
                            committing = True  # from here on Inductor's state changes: no falling back
                            self.flush()  # C++ kernels scheduled before this one are called first
                            name = commit(self, features, built)
                            note(name, built, device)
                            free_buffers(self)
                            return None
                        declined = built
                except Exception as e:  # building the SIMD view of C++-fused nodes
                    if committing or cfg.strict:
                        raise
                    declined = Declined(f"{INTERNAL_ERROR}: {error_line(e)}")
            assert declined is not None
            self._pending.append(({n.get_name() for n in nodes}, declined, device))
            return super().codegen_node(node)

        def define_kernel(self, src_code: str, nodes: Any, kernel_args: Any = None) -> str:
            name = super().define_kernel(src_code, nodes, kernel_args)
            names = {n.get_name() for n in nodes if hasattr(n, "get_name")}
            for entry in list(self._pending):
                if entry[0] & names:
                    self._pending.remove(entry)
                    note(name, entry[1], entry[2])
            return name

    return TilecCppScheduling
