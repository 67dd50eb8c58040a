"""The GPU a kernel is built for: the facts the frontend, the verifier, the passes and the chooser
use, in one place.

    from tilec.ir.target import H100, target_for
    H100.smem_per_block                 # 232448: the opt-in maximum of shared memory per CTA
    target_for((9, 0), sm_count=132)    # the description of a device from its properties

A `Target` holds what the hardware fixes (compute capability, SMs, shared memory, registers, TMA
and cluster support); how a pass spends it (the pipelining pass's share of shared memory, say) is
the pass's option, computed from these. `DEFAULT` is what code with no device in hand builds for
(`tilec opt`, `tilec dump` without a GPU, the passes' defaults): the H100, on which the chooser's
rules were measured.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["B200", "DEFAULT", "H100", "H200", "Target", "target_for"]


@dataclass(frozen=True)
class Target:
    name: str
    capability: tuple[int, int]  # (major, minor): sm_90 is (9, 0)
    sm_count: int
    smem_per_block: int  # bytes of shared memory one CTA may use (the opt-in maximum)
    smem_per_sm: int  # bytes of shared memory per SM
    registers_per_sm: int  # 32-bit registers
    max_registers_per_thread: int = 255
    max_threads_per_block: int = 1024
    warp_size: int = 32
    l2_bytes: int = 0  # 0: not described

    @property
    def arch(self) -> str:
        """Triton's name for the target: "sm_90"."""
        return f"sm_{self.capability[0]}{self.capability[1]}"

    @property
    def tma(self) -> bool:
        """The Tensor Memory Accelerator (bulk copies between global and shared memory): Hopper on."""
        return self.capability >= (9, 0)

    @property
    def clusters(self) -> bool:
        """Thread-block clusters (distributed shared memory): Hopper on."""
        return self.capability >= (9, 0)

    @property
    def gluon(self) -> bool:
        """Whether tilec's Gluon emitter builds for it (TMA, mbarriers, warp specialization)."""
        return self.tma


H100 = Target(
    name="NVIDIA H100 80GB HBM3",
    capability=(9, 0),
    sm_count=132,
    smem_per_block=232_448,
    smem_per_sm=233_472,
    registers_per_sm=65_536,
    l2_bytes=50 * 1024 * 1024,
)
H200 = dataclasses.replace(H100, name="NVIDIA H200")  # the H100's SMs, more and faster memory
# shared memory and registers per SM and per block as on Hopper; its L2 is not described
B200 = dataclasses.replace(H100, name="NVIDIA B200", capability=(10, 0), sm_count=148, l2_bytes=0)
DEFAULT = H100


def target_for(capability: tuple[int, int], **facts: object) -> Target:
    """The description of a device of `capability`: the known target of that capability, with the
    facts given (a device's own `sm_count`, `smem_per_block`, ...) in place of its figures; a
    capability tilec has no description of gets the H100's figures under its own capability."""
    base = next((t for t in (H100, B200) if t.capability == capability), None)
    if base is None:
        base = dataclasses.replace(H100, name=f"sm_{capability[0]}{capability[1]}", capability=capability)
    return dataclasses.replace(base, **facts)  # type: ignore[arg-type]
