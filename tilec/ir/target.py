"""The GPU a kernel is built for: the facts the frontend, the verifier, the passes and the chooser
use, in one place.

    from tilec.ir.target import H100, target_for
    H100.smem_per_block                 # 232448: the opt-in maximum of shared memory per CTA
    target_for((9, 0), "NVIDIA H200", sm_count=132)  # a device, from its properties
    H200.bytes_in_flight_per_sm         # 21818: what each SM must keep requested to fill HBM
    H100.clusters_at_once(4)            # 30: clusters of 4 CTAs that run at once (not 132 / 4)

A `Target` holds what the hardware fixes (compute capability, SMs, shared memory, registers, TMA
and cluster support); how a pass spends it (the pipelining pass's share of shared memory, say) is
the pass's option, computed from these. `DEFAULT` is what code with no device in hand builds for
(`tilec opt`, `tilec dump` without a GPU, the passes' defaults): the H100, on which the chooser's
rules were measured.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["B200", "DEFAULT", "H100", "H200", "KNOWN", "Target", "target_for"]


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
    # memory: the datasheet's HBM bandwidth (bytes per second; 0: not described) and the round
    # trip of a load from HBM under load, assumed (docs/performance.md, "Bytes in flight")
    hbm_bytes_per_s: float = 0.0
    memory_latency_s: float = 600e-9
    # the clusters of C CTAs that run at once at one CTA an SM, as ((C, clusters), ...): a cluster
    # takes SMs of one GPC, so a GPU whose GPCs have SMs left over runs fewer than sm_count / C
    # (cuOccupancyMaxActiveClusters, measured); () where not measured
    cluster_slots: tuple[tuple[int, int], ...] = ()

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
    def bytes_in_flight_per_sm(self) -> int:
        """The bytes each SM must have requested and not yet received for loads to keep HBM busy
        (Little's law: bandwidth x latency, over the SMs); 0 where the bandwidth is not described."""
        return round(self.hbm_bytes_per_s * self.memory_latency_s / self.sm_count)

    def clusters_at_once(self, ctas: int) -> int:
        """The clusters of `ctas` CTAs that run at once, one CTA an SM: measured where described,
        else the SMs / ctas (more than a GPU may run: a grid of as many then runs in two waves)."""
        return dict(self.cluster_slots).get(ctas, max(1, self.sm_count // ctas))

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
    hbm_bytes_per_s=3.35e12,
    # bench/results/2026-11-28-h100-cluster-bands (cluster-slots.jsonl): 66, 30, 15 (SMs / C: 66, 33, 16)
    cluster_slots=((2, 66), (4, 30), (8, 15)),
)
# the H100's SMs, more and faster memory (4.8 TB/s of HBM3e); its clusters that run at once
# measured the same as the H100's (bench/results/2026-11-28-h200-cluster-slots)
H200 = dataclasses.replace(H100, name="NVIDIA H200", hbm_bytes_per_s=4.8e12)
# shared memory and registers per SM and per block as on Hopper; its L2 and memory not described
B200 = dataclasses.replace(
    H100, name="NVIDIA B200", capability=(10, 0), sm_count=148, l2_bytes=0, hbm_bytes_per_s=0.0, cluster_slots=()
)
DEFAULT = H100
KNOWN = (H100, H200, B200)


def target_for(capability: tuple[int, int], name: str | None = None, **facts: object) -> Target:
    """The description of a device of `capability` named `name` (what the driver calls it:
    "NVIDIA H200"): the known target of that name, else of that capability under the device's own
    name, with the facts given (a device's own `sm_count`, `smem_per_block`, ...) in place of its
    figures; a capability tilec has no description of gets the H100's figures under its own
    capability. A device of another name than a known target's keeps no memory figures: its
    bandwidth is not the one of the target it shares a capability with."""
    base = next((t for t in KNOWN if name is not None and t.name == name and t.capability == capability), None)
    if base is None:
        base = next((t for t in KNOWN if t.capability == capability), None)
        if base is None:
            base = dataclasses.replace(H100, name=f"sm_{capability[0]}{capability[1]}", capability=capability)
        if name is not None and name != base.name:
            base = dataclasses.replace(base, name=name, hbm_bytes_per_s=0.0, cluster_slots=())
    if facts.get("sm_count", base.sm_count) != base.sm_count:
        base = dataclasses.replace(base, cluster_slots=())  # (another count of SMs: other GPCs)
    return dataclasses.replace(base, **facts)  # type: ignore[arg-type]
