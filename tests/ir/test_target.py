"""The target description: the figures each layer reads from it, and a device's description."""

from __future__ import annotations

import dataclasses

import pytest

from tilec.ir.target import B200, DEFAULT, H100, H200, Target, target_for


def test_the_h100_figures() -> None:
    assert (H100.arch, H100.sm_count, H100.smem_per_block, H100.registers_per_sm) == ("sm_90", 132, 232_448, 65_536)
    assert H100.tma and H100.clusters and H100.gluon
    assert DEFAULT is H100  # the chooser's rules were measured there


def test_the_h200_has_the_h100s_sms() -> None:
    assert dataclasses.replace(H200, name=H100.name, hbm_bytes_per_s=H100.hbm_bytes_per_s) == H100
    assert H200.hbm_bytes_per_s / H100.hbm_bytes_per_s == pytest.approx(1.43, abs=0.01)


def test_bytes_in_flight_per_sm() -> None:
    """Little's law, per SM (docs/performance.md): 3.35 TB/s x 600 ns over 132 SMs on the H100,
    4.8 TB/s on the H200; nothing where the memory is not described."""
    assert H100.bytes_in_flight_per_sm == round(3.35e12 * 600e-9 / 132) == 15227
    assert H200.bytes_in_flight_per_sm == 21818
    assert B200.bytes_in_flight_per_sm == 0


def test_the_clusters_a_gpu_runs_at_once() -> None:
    """Clusters of 4 and 8 on the H100 fill 120 of its 132 SMs (a cluster's CTAs share a GPC): 30
    and 15 run at once, one CTA an SM, where 132 / C would be 33 and 16; an undescribed GPU (or an
    H100 of another SM count) is taken at its SMs / C."""
    assert [H100.clusters_at_once(c) for c in (2, 4, 8)] == [66, 30, 15]
    assert H100.clusters_at_once(16) == 8  # (not measured)
    assert [B200.clusters_at_once(c) for c in (2, 8)] == [74, 18]
    assert target_for((9, 0), "NVIDIA H100 80GB HBM3", sm_count=114).clusters_at_once(4) == 28
    assert target_for((9, 0), "NVIDIA H100 PCIe").cluster_slots == ()


def test_target_for_a_device_name() -> None:
    """A known name gives that target; another device of a known capability keeps its own name and
    no memory figures (an H100 PCIe's bandwidth is not the SXM part's)."""
    assert target_for((9, 0), "NVIDIA H200") == H200
    assert target_for((9, 0), "NVIDIA H100 80GB HBM3", sm_count=132) == H100
    pcie = target_for((9, 0), "NVIDIA H100 PCIe", sm_count=114)
    assert (pcie.name, pcie.sm_count, pcie.hbm_bytes_per_s, pcie.smem_per_block) == (
        "NVIDIA H100 PCIe",
        114,
        0.0,
        H100.smem_per_block,
    )
    assert target_for((8, 0), "NVIDIA A100-SXM4-80GB").name == "NVIDIA A100-SXM4-80GB"


@pytest.mark.parametrize(
    ("capability", "arch", "gluon"), [((9, 0), "sm_90", True), ((10, 0), "sm_100", True), ((8, 0), "sm_80", False)]
)
def test_target_for_a_capability(capability: tuple[int, int], arch: str, gluon: bool) -> None:
    t = target_for(capability, sm_count=7)
    assert (t.arch, t.gluon, t.sm_count) == (arch, gluon, 7)
    assert t.tma == gluon and t.clusters == gluon


def test_target_for_a_known_capability_keeps_its_figures() -> None:
    assert target_for((10, 0)) == B200
    assert target_for((9, 0), smem_per_block=1) == dataclasses.replace(H100, smem_per_block=1)


def test_the_layers_read_the_default_target() -> None:
    """The verifier's and the passes' shared-memory limits come from the target (the same figures as
    before there was one: 232448 per block, 192 KiB for the pipelining rings on the H100)."""
    from tilec.emit.gluon import GluonEmitter
    from tilec.frontend.capture import H100 as FAKE
    from tilec.ir.verify import verify
    from tilec.passes.manager import PassManager
    from tilec.passes.pipeline import RING_HEADROOM, Pipeline
    from tilec.passes.reuse import Reuse

    budget = DEFAULT.smem_per_block
    assert verify.__defaults__ == (budget,)
    assert PassManager([]).smem_budget == Reuse().smem_budget == budget
    assert GluonEmitter.__init__.__defaults__ == (budget,)
    assert Pipeline().smem_budget == budget - RING_HEADROOM == 192 * 1024
    assert (FAKE.multi_processor_count, FAKE.shared_memory_per_block_optin) == (H100.sm_count, H100.smem_per_block)


def test_a_target_is_a_value() -> None:
    t = Target("x", (9, 0), 1, 2, 3, 4)
    assert t == Target("x", (9, 0), 1, 2, 3, 4) and hash(t) == hash(Target("x", (9, 0), 1, 2, 3, 4))
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.sm_count = 2  # type: ignore[misc]


def test_a_device_is_described_by_its_name_and_properties(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook describes the device it compiles for from the driver's properties: an H200 is the
    H200 (whose bandwidth the H100's rules were not measured at), an unreadable device no GPU."""
    from types import SimpleNamespace

    import torch

    from tilec.inductor.policy import device_target

    def props(name: str, sms: int) -> SimpleNamespace:
        return SimpleNamespace(
            name=name, major=9, minor=0, multi_processor_count=sms, shared_memory_per_block_optin=232_448
        )

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: props("NVIDIA H200", 132))
    assert device_target(torch.device("cuda", 0)) == H200
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: props("NVIDIA H100 PCIe", 114))
    pcie = device_target(torch.device("cuda", 0))
    assert (pcie.name, pcie.sm_count, pcie.bytes_in_flight_per_sm, pcie.gluon) == ("NVIDIA H100 PCIe", 114, 0, True)

    def unreadable(d: object) -> None:
        raise RuntimeError("no GPU")

    monkeypatch.setattr(torch.cuda, "get_device_properties", unreadable)
    assert not device_target(torch.device("cuda", 0)).gluon
