"""Asynchronous copies into shared memory (`tile.async_copy`, `tile.async_commit`,
`tile.async_wait`, `tile.async_copy_arrive`): the data lands at once in the interpreter, but
reading it, or overwriting its buffer, before a wait that leaves its group no longer pending (or a
wait on a barrier an arrive after it completes) is a race, and a copy nobody waited for when the
program ends is reported."""

from __future__ import annotations

import re

import pytest
import torch

from tilec import interp
from tilec.interp import ProtocolError, RaceError
from tilec.ir import parse, verify

HEADER = (
    "#b = #blocked<size_per_thread = [1], threads_per_warp = [32], warps_per_cta = [1], order = [0]>\n"
    "#sh = #swizzled_shared<vec = 1, per_phase = 1, max_phase = 1, order = [0]>\n"
)


def kernel(body: str) -> object:
    """Two 32-element buffers %s0, %s1 and offsets %i (0..31) and %j (32..63) into %x; %y takes results."""
    text = HEADER + (
        "tile.kernel @k(%x: ptr<f32>, %y: ptr<f32>) attributes {grid = [1], num_warps = 1} {\n"
        "  %i = tile.arange {end = 32} : tile<[32], i32, #b>\n"
        "  %c32 = tile.constant {value = 32} : i32\n"
        "  %j = tile.add %i, %c32 : tile<[32], i32, #b>\n"
        "  %s0 = tile.smem_alloc : smem<[32], f32, #sh>\n"
        "  %s1 = tile.smem_alloc : smem<[32], f32, #sh>\n" + body + "\n}\n"
    )
    module = parse(text)
    verify(module)
    return module.kernels[0]


def run(body: str) -> torch.Tensor:
    x = torch.arange(64, dtype=torch.float32)
    y = torch.full((64,), float("nan"))
    interp.run(kernel(body), x, y)  # type: ignore[arg-type]
    return y


LOAD_BOTH = (
    "  %a = tile.smem_load %s0 : tile<[32], f32, #b>\n"
    "  %b = tile.smem_load %s1 : tile<[32], f32, #b>\n"
    "  tile.store %y, %i, %a\n  tile.store %y, %j, %b"
)


def test_groups_land_in_order_and_a_wait_releases_the_older_ones() -> None:
    y = run(
        "  tile.async_copy %s0, %x, %j\n  tile.async_commit\n"
        "  tile.async_copy %s1, %x, %i\n  tile.async_commit\n"
        "  tile.async_wait {pending = 1}\n"
        "  %a = tile.smem_load %s0 : tile<[32], f32, #b>\n  tile.store %y, %i, %a\n"
        "  tile.async_wait\n"
        "  %b = tile.smem_load %s1 : tile<[32], f32, #b>\n  tile.store %y, %j, %b"
    )
    assert torch.equal(y, torch.cat([torch.arange(32, 64), torch.arange(32)]).float())


def test_masked_off_elements_become_zero() -> None:
    y = run(
        "  %c8 = tile.constant {value = 8} : i32\n"
        '  %m = tile.cmp %i, %c8 {predicate = "lt"} : tile<[32], i1, #b>\n'
        "  tile.async_copy %s0, %x, %j, %m\n  tile.async_commit\n  tile.async_wait\n"
        "  %a = tile.smem_load %s0 : tile<[32], f32, #b>\n  tile.store %y, %i, %a"
    )
    assert torch.equal(y[:32], torch.cat([torch.arange(32, 40).float(), torch.zeros(24)]))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (  # the newest group is still pending
            "  tile.async_copy %s0, %x, %i\n  tile.async_commit\n"
            "  tile.async_copy %s1, %x, %j\n  tile.async_commit\n  tile.async_wait {pending = 1}\n" + LOAD_BOTH,
            "reads %s1 copied by 'tile.async_copy'",
        ),
        (  # a wait covers committed groups only
            "  tile.async_copy %s0, %x, %i\n  tile.async_commit\n  tile.async_copy %s1, %x, %j\n"
            "  tile.async_wait\n" + LOAD_BOTH,
            "before partition",
        ),
        (  # no wait at all
            "  tile.async_copy %s0, %x, %i\n  tile.async_commit\n"
            "  %a = tile.smem_load %s0 : tile<[32], f32, #b>\n  tile.store %y, %i, %a",
            "waited for that copy",
        ),
        (  # the buffer overwritten under the copy
            "  tile.async_copy %s0, %x, %i\n  tile.async_commit\n"
            "  %z = tile.full {value = 0.0} : tile<[32], f32, #b>\n  tile.smem_store %s0, %z\n"
            "  tile.async_wait",
            "overwrites %s0 while an asynchronous copy into it has not been waited for",
        ),
    ],
)
def test_reading_or_overwriting_a_copy_before_its_wait_is_a_race(body: str, message: str) -> None:
    with pytest.raises(RaceError, match=re.escape(message)):
        run(body)


def test_a_copy_nobody_waited_for_is_reported_at_the_end() -> None:
    with pytest.raises(ProtocolError, match=re.escape("but nothing waited for the copy")):
        run("  tile.async_copy %s0, %x, %i\n  tile.async_commit")


def test_an_empty_commit_counts_as_a_group() -> None:
    """cp.async's wait counts groups, empty ones too: with an empty group committed after the copy's,
    waiting with one pending completes the copy's group."""
    y = run(
        "  tile.async_copy %s0, %x, %j\n  tile.async_commit\n  tile.async_commit\n  tile.async_wait {pending = 1}\n"
        "  %a = tile.smem_load %s0 : tile<[32], f32, #b>\n  tile.store %y, %i, %a"
    )
    assert torch.equal(y[:32], torch.arange(32, 64).float())


BARS = "  %bars = tile.mbarrier_alloc : mbarrier<2>\n  %k0 = tile.constant {value = 0} : i32\n  %k1 = tile.constant {value = 1} : i32\n"


def test_a_wait_on_the_barrier_an_arrive_completes_releases_the_copies_before_it() -> None:
    """Each chunk's copies, then an arrive of every thread (32: one warp) on its barrier: a wait on
    barrier k makes chunk k readable, in any order, with no group counting."""
    y = run(
        BARS + "  tile.mbarrier_init %bars, %k0 {count = 32}\n  tile.mbarrier_init %bars, %k1 {count = 32}\n"
        "  tile.async_copy %s0, %x, %j\n  tile.async_copy_arrive %bars, %k0\n"
        "  tile.async_copy %s1, %x, %i\n  tile.async_copy_arrive %bars, %k1\n"
        "  tile.mbarrier_wait %bars, %k1, %k0\n"
        "  %b = tile.smem_load %s1 : tile<[32], f32, #b>\n  tile.store %y, %j, %b\n"
        "  tile.mbarrier_wait %bars, %k0, %k0\n"
        "  %a = tile.smem_load %s0 : tile<[32], f32, #b>\n  tile.store %y, %i, %a"
    )
    assert torch.equal(y, torch.cat([torch.arange(32, 64), torch.arange(32)]).float())


def test_an_arrive_does_not_release_copies_started_after_it() -> None:
    with pytest.raises(RaceError, match=re.escape("reads %s1 copied by 'tile.async_copy'")):
        run(
            BARS + "  tile.mbarrier_init %bars, %k0 {count = 32}\n"
            "  tile.async_copy %s0, %x, %i\n  tile.async_copy_arrive %bars, %k0\n"
            "  tile.async_copy %s1, %x, %j\n"
            "  tile.mbarrier_wait %bars, %k0, %k0\n" + LOAD_BOTH
        )


def test_an_arrive_is_one_arrival_a_thread() -> None:
    """A barrier counting fewer arrivals than the CTA's threads is a protocol error; one counting
    more never completes (a deadlock)."""
    with pytest.raises(ProtocolError, match=re.escape("more often than its count (1)")):
        run(
            BARS + "  tile.mbarrier_init %bars, %k0\n"
            "  tile.async_copy %s0, %x, %i\n  tile.async_copy_arrive %bars, %k0\n"
        )
    with pytest.raises(interp.DeadlockError):
        run(
            BARS + "  tile.mbarrier_init %bars, %k0 {count = 64}\n"
            "  tile.async_copy %s0, %x, %i\n  tile.async_copy_arrive %bars, %k0\n"
            "  tile.mbarrier_wait %bars, %k0, %k0\n"
        )
