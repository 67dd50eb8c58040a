"""The hand-written physical kernels (one TMA box; a persistent 3-slot ring; a warp-specialized
producer/consumer) equal eager PyTorch, and their broken variants are caught with the right error."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from tilec import interp
from tilec.ir import parse, verify

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
COLS = {"rmsnorm_tma": 256, "rmsnorm_ring": 1024, "rmsnorm_ws": 1024}


def load(name: str, replacements: list[tuple[str, str]] = ()) -> object:  # type: ignore[assignment]
    text = (KERNELS / f"{name}.tile").read_text()
    for old, new in replacements:
        assert old in text, f"{old!r} not in {name}"
        text = text.replace(old, new, 1)
    module = parse(text, f"{name}.tile")
    verify(module)
    return module.kernels[0]


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def check(name: str, rows: int, seed: int = 0, num_sms: int = 3, kernel: object | None = None) -> None:
    g = torch.Generator().manual_seed(seed)
    n = COLS[name]
    x = torch.randn(rows, n, generator=g).to(torch.bfloat16)
    w = torch.randn(n, generator=g).to(torch.bfloat16)
    y = torch.full_like(x, float("nan"))
    interp.run(kernel or load(name), x, w, y, rows, seed=seed, num_sms=num_sms)  # type: ignore[arg-type]
    ref = rmsnorm(x, w)
    err = (y.float() - ref.float()).norm() / ref.float().norm()
    assert err < 1e-2, err
    assert not torch.isnan(y).any()


@pytest.mark.parametrize("name", sorted(COLS))
@pytest.mark.parametrize("rows", [1, 2, 5])
def test_physical_kernels_equal_eager(name: str, rows: int) -> None:
    check(name, rows)


@settings(max_examples=examples(25), deadline=None)
@given(rows=st.integers(1, 7), seed=st.integers(0, 2**20), num_sms=st.integers(1, 4), shuffle=st.booleans())
def test_ring_and_ws_under_random_schedules(rows: int, seed: int, num_sms: int, shuffle: bool) -> None:
    for name in ("rmsnorm_ring", "rmsnorm_ws"):
        check(name, rows, seed, num_sms)


def test_same_seed_same_interleaving() -> None:
    k = load("rmsnorm_ws")
    x = torch.randn(2, 1024).to(torch.bfloat16)
    w = torch.randn(1024).to(torch.bfloat16)

    def trace(seed: int) -> list[str]:
        t: list[str] = []
        interp.run(k, x, w, torch.empty_like(x), 2, seed=seed, trace=t)  # type: ignore[arg-type]
        return t

    assert trace(7) == trace(7)
    assert len({tuple(trace(s)) for s in range(6)}) > 1  # seeds change the interleaving
    assert {"default", "worker 1"} <= set(trace(7))


# ---------------------------------------------------------------------------------------------
# Broken variants: each is the correct kernel with one change.

BROKEN = {
    "ws-wrong-parity": (
        "rmsnorm_ws",
        [
            (
                "%par_a = tile.rem %round_a, %k2 : i32",
                "%par_x = tile.rem %round_a, %k2 : i32\n      %par_a = tile.xor %par_x, %k1 : i32",
            )
        ],
        (interp.RaceError, interp.ProtocolError),
        None,
    ),
    "ws-missing-empty-wait": (
        "rmsnorm_ws",
        [("      tile.mbarrier_wait %empty_w, %slot_p, %epar\n", "")],
        interp.RaceError,
        "TMA",
    ),
    "ws-release-before-read": (
        "rmsnorm_ws",
        [
            ("      %v_a = tile.smem_load %view_a : tile<[1, 128], bf16, #blocked>\n", ""),
            (
                "      tile.mbarrier_arrive %empty_d, %slot_a\n",
                "      tile.mbarrier_arrive %empty_d, %slot_a\n      %v_a = tile.smem_load %view_a : tile<[1, 128], bf16, #blocked>\n",
            ),
        ],
        interp.RaceError,
        None,
    ),
    "ws-missing-fence": (
        "rmsnorm_ws",
        [
            (
                "      tile.fence_async_shared\n      tile.mbarrier_arrive %empty_d, %slot_a\n",
                "      tile.mbarrier_arrive %empty_d, %slot_a\n",
            )
        ],
        interp.RaceError,
        "without 'tile.fence_async_shared'",
    ),
    "ws-producer-one-longer": (
        "rmsnorm_ws",
        [("%p16 = tile.constant {value = 16} : i32", "%p16 = tile.constant {value = 17} : i32")],
        interp.ProtocolError,
        "a producer issued more items than its consumer takes",
    ),
    "ws-consumer-one-longer": (
        "rmsnorm_ws",
        [("%p16 = tile.constant {value = 16} : i32", "%p16 = tile.constant {value = 15} : i32")],
        interp.DeadlockError,
        "partition 'default' waits",
    ),
    "ws-expect-too-small": (
        "rmsnorm_ws",
        [
            (
                "tile.mbarrier_expect %ready_w, %slot_p {bytes = 256}",
                "tile.mbarrier_expect %ready_w, %slot_p {bytes = 128}",
            )
        ],
        interp.ProtocolError,
        "deliver more bytes than 'tile.mbarrier_expect' announced",
    ),
    "ring-wrong-parity": (
        "rmsnorm_ring",
        [
            (
                "%par_a = tile.rem %round_a, %c2 : i32",
                "%par_x = tile.rem %round_a, %c2 : i32\n      %par_a = tile.xor %par_x, %c1 : i32",
            )
        ],
        (interp.RaceError, interp.ProtocolError),
        None,
    ),
    "tma-no-wait": (
        "rmsnorm_tma",
        [("  tile.mbarrier_wait %bar, %c0, %c0\n", "")],
        interp.RaceError,
        "before partition 'main' waited on %bar[0] for phase 0",
    ),
}


def run_broken(case: str, seed: int) -> None:
    name, edits, _, _ = BROKEN[case]
    check(name, 3, seed=seed, kernel=load(name, edits))


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_variant_is_caught(case: str) -> None:
    _, _, error, message = BROKEN[case]
    with pytest.raises(error) as info:  # type: ignore[call-overload]
        run_broken(case, seed=0)
    text = str(info.value)
    assert ".tile:" in text, f"no location: {text}"
    if message:
        assert message in text, text


@settings(max_examples=examples(30), deadline=None)
@given(case=st.sampled_from(sorted(BROKEN)), seed=st.integers(0, 2**30))
def test_every_seed_finds_the_bug(case: str, seed: int) -> None:
    _, _, error, _ = BROKEN[case]
    with pytest.raises(error):  # type: ignore[call-overload]
        run_broken(case, seed)
