"""Taking over a kernel in Inductor's code generation, or leaving it to stock Inductor: the
TritonScheduling subclass the hook registers (CUDA, inside CUDACombinedScheduling, and the CPU
with `cpu_backend="triton"`).

For each fused kernel, `tilec.inductor.policy.attempt` decides everything before anything in
Inductor changes: it lowers the kernel (`tilec.lower`), chooses, and builds the variants
(`tilec.inductor.build`). If any step declines or fails, stock code generation runs untouched
(`super()`); strict mode raises on failures instead. Only then does
`tilec.inductor.wrapper.commit` reproduce the stock bookkeeping around the kernel. The CPU's C++
scheduling is `tilec.inductor.cpu`.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from tilec import config as cfg
from tilec.inductor.build import Declined, KernelBuild
from tilec.inductor.cpu import CpuFallbackError, triton_cpu_driver
from tilec.inductor.policy import INTERNAL_ERROR, attempt, attempt_mix_order, fuses_mix_order
from tilec.inductor.wrapper import WorkspaceSums, commit, current_device, define_mix_order, free_buffers, note

log = logging.getLogger(__name__)


@functools.cache
def triton_scheduling_class() -> type:
    """TritonScheduling whose codegen_node_schedule tries tilec first."""
    from torch._inductor.codegen.triton import TritonScheduling

    class TilecTritonScheduling(TritonScheduling):
        _stock_names: list[str] | None = None
        _mix_order: KernelBuild | None = None  # a mix-order kernel taken, until define_kernel defines it
        _mix_order_name: str | None = None

        def codegen_node_schedule(self, kernel_features: Any) -> Any:
            device = current_device()
            built = attempt(self, kernel_features, device)
            if isinstance(built, KernelBuild):
                name = commit(self, kernel_features, built)
                note(name, built, device)
                free_buffers(self)
                return None
            if device.type == "cpu" and cfg.enabled and not triton_cpu_driver():
                raise CpuFallbackError(
                    f"tilec did not take a CPU kernel ({built.reason}), and Inductor's Triton backend for the CPU "
                    "(cpu_backend='triton') needs a Triton CPU driver, which this Triton does not have. Keep "
                    "Inductor's default C++ backend for the CPU (torch._inductor.config.cpu_backend = 'cpp'): with "
                    "tilec.install(cpu=True), tilec then takes what it can and C++ code generation the rest."
                )
            return self._stock(lambda: super(TilecTritonScheduling, self).codegen_node_schedule(kernel_features), built)

        def mix_order_fusion(
            self, device: Any, rows: int, row: int, elem_bytes: int, sums: int, row_inputs: int
        ) -> bool:
            """Whether a norm's backward stock would leave unfused is fused (`tilec.frontend.fusion`)."""
            return fuses_mix_order(device, rows, row, elem_bytes, sums, row_inputs)

        def codegen_mix_order_reduction(self, node: Any) -> Any:
            """Inductor's fused norm backward (not through codegen_node_schedule). Decided first,
            on copies of its nodes (`attempt_mix_order`); taken, stock code generation runs with
            tilec's band (the split size, so the wrapper's workspace and sums match it),
            `define_kernel` defines tilec's kernel in place of stock's, and the wrapper's sums of
            the workspace's rows become one launch (`WorkspaceSums`)."""
            from torch._inductor import config as ic

            device = current_device()
            built = attempt_mix_order(self, node, device)
            if not isinstance(built, KernelBuild):
                return self._stock(lambda: super(TilecTritonScheduling, self).codegen_mix_order_reduction(node), built)
            self._mix_order, self._mix_order_name, self._stock_names = built, None, []
            try:
                with (
                    ic.patch({"triton.mix_order_reduction_split_size": built.primary.constexprs["RSPLIT"]}),
                    WorkspaceSums(len(built.lowered.column_sums), device.type),
                ):
                    result = super().codegen_mix_order_reduction(node)
            finally:
                self._mix_order, name, stock = None, self._mix_order_name, self._stock_names
                self._stock_names = None
            if name is None:  # defining tilec's kernel failed (logged): stock's runs, with tilec's band
                failed = built.declined(f"{INTERNAL_ERROR}: the mix-order kernel's definition")
                note(stock[0] if stock else "?", failed, device)
            else:
                note(name, built, device)
            return result

        def _stock(self, generate: Any, declined: Declined) -> Any:
            """Stock code generation (`generate`), the kernel it defines recorded as not taken."""
            self._stock_names = []
            try:
                result = generate()
            finally:
                names, self._stock_names = self._stock_names, None
            note(names[0] if names else "?", declined, current_device())
            return result

        def define_kernel(self, src_code: str, node_schedule: Any, kernel: Any) -> str:
            built = self._mix_order
            if built is not None and getattr(kernel, "mix_order_reduction", False):
                self._mix_order = None
                try:
                    self._mix_order_name = define_mix_order(kernel, node_schedule, built)
                    return self._mix_order_name
                except Exception:
                    if cfg.strict:
                        raise
                    log.warning("tilec: a mix-order kernel falls back to Inductor's", exc_info=True)
            name = super().define_kernel(src_code, node_schedule, kernel)
            if self._stock_names is not None:
                self._stock_names.append(name)
            return name

    return TilecTritonScheduling
