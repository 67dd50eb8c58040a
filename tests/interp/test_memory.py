"""Global memory, shared memory, TMA and mbarriers in the interpreter."""

from __future__ import annotations

import re

import pytest
import torch

from tilec import interp
from tilec.ir import parse, verify

SHARED = "#shared = #nvmma_shared<swizzle_byte_width = 0, element_bitwidth = 32, rank = 2>\n"
BLOCKED = (
    "#blocked = #blocked<size_per_thread = [1, 1], threads_per_warp = [4, 8], warps_per_cta = [1, 1], order = [1, 0]>\n"
)


def kernel(body: str, params: str, header: str = "", attrs: str = "grid = [1]") -> object:
    module = parse(f"{header}tile.kernel @k({params}) attributes {{{attrs}}} {{\n{body}\n}}\n", "t.tile")
    verify(module)
    return module.kernels[0]


def test_masked_load_takes_other_and_masked_store_skips() -> None:
    k = kernel(
        """  %i = tile.arange {end = 8} : tile<[8], i32>
  %c4 = tile.constant {value = 4} : i32
  %m = tile.cmp %i, %c4 {predicate = "lt"} : tile<[8], i1>
  %other = tile.constant {value = -1.0} : f32
  %v = tile.load %a, %i, %m, %other : tile<[8], f32>
  tile.store %o, %i, %v
  tile.store %p, %i, %v, %m""",
        "%a: ptr<f32>, %o: ptr<f32>, %p: ptr<f32>",
    )
    a = torch.arange(4, dtype=torch.float32)  # only 4 elements: the masked lanes must not be read
    o, p = torch.zeros(8), torch.full((8,), 9.0)
    interp.run(k, a, o, p)
    assert o.tolist() == [0, 1, 2, 3, -1, -1, -1, -1]
    assert p.tolist() == [0, 1, 2, 3, 9, 9, 9, 9]


def test_out_of_bounds_access_names_the_op() -> None:
    k = kernel(
        "  %i = tile.arange {end = 8} : tile<[8], i32>\n  %v = tile.load %a, %i : tile<[8], f32>", "%a: ptr<f32>"
    )
    with pytest.raises(interp.ExecutionError) as info:
        interp.run(k, torch.zeros(4))
    assert str(info.value).startswith("t.tile:3:3: error: 'tile.load' reads a[4] out of bounds (it has 4 elements)")


def test_strided_views_index_their_storage() -> None:
    k = kernel(
        "  %i = tile.arange {end = 4} : tile<[4], i32>\n  %v = tile.load %a, %i : tile<[4], f32>\n  tile.store %o, %i, %v",
        "%a: ptr<f32>, %o: ptr<f32>",
    )
    base = torch.arange(12, dtype=torch.float32)
    o = torch.zeros(4)
    interp.run(k, base[5:], o)  # a view with a storage offset: the pointer starts at element 5
    assert o.tolist() == [5, 6, 7, 8]


# o[i] = a[i] ** 2 for i < n, B elements a program over a grid of cdiv(n, B)
SQUARES = (
    "tile.kernel @k(%a: ptr<f32>, %o: ptr<f32>, %n: i32) constexprs(B) attributes {grid = [cdiv(n, B)]} {\n"
    "  %pid = tile.program_id : i32\n  %b = tile.constant {value = B} : i32\n  %start = tile.mul %pid, %b : i32\n"
    "  %i = tile.arange {end = B} : tile<[B], i32>\n  %idx = tile.add %i, %start : tile<[B], i32>\n"
    '  %m = tile.cmp %idx, %n {predicate = "lt"} : tile<[B], i1>\n  %v = tile.load %a, %idx, %m : tile<[B], f32>\n'
    "  %s = tile.mul %v, %v : tile<[B], f32>\n  tile.store %o, %idx, %s, %m\n}\n"
)


def test_scalar_params_constexprs_and_grid() -> None:
    module = parse(SQUARES)
    a = torch.randn(37)
    for block in (4, 16, 64):
        o = torch.full((37,), float("nan"))
        interp.run(module.kernels[0], a, o, 37, B=block)
        assert torch.equal(o, a * a)
    with pytest.raises(interp.ExecutionError, match="B"):
        interp.run(module.kernels[0], a, o, 37)


def test_a_subset_of_the_programs_runs_alone() -> None:
    """`programs` runs the programs of a 1-D grid it lists, in its order; what the others would
    write stays as it was; an id outside the grid is an error."""
    module = parse(SQUARES)
    a = torch.randn(37)
    o = torch.full((37,), float("nan"))
    interp.run(module.kernels[0], a, o, 37, B=4, programs=[9, 0, 3])  # 10 programs; the last partial
    ran = [*range(0, 4), *range(12, 16), *range(36, 37)]
    assert torch.equal(o[ran], a[ran] * a[ran])
    assert o[[i for i in range(37) if i not in ran]].isnan().all()
    with pytest.raises(interp.ExecutionError, match="not ids of the 1-D grid"):
        interp.run(module.kernels[0], a, o, 37, B=4, programs=[10])


def test_argument_checks() -> None:
    k = kernel("  %c = tile.constant {value = 0} : i32", "%a: ptr<f32>")
    with pytest.raises(interp.ExecutionError, match=re.escape("is a torch.float16 tensor; the kernel takes ptr<f32>")):
        interp.run(k, torch.zeros(2, dtype=torch.float16))
    with pytest.raises(interp.ExecutionError, match="takes 1 arguments"):
        interp.run(k)


SMEM = SHARED + BLOCKED


def test_shared_memory_round_trip_slots_and_slices() -> None:
    k = kernel(
        """  %c0 = tile.constant {value = 0} : i32
  %c1 = tile.constant {value = 1} : i32
  %r = tile.arange {end = 4} : tile<[4], i32, #slice<dim = 1, parent = #blocked>>
  %cidx = tile.arange {end = 8} : tile<[8], i32, #slice<dim = 0, parent = #blocked>>
  %r2 = tile.expand_dims %r {axis = 1} : tile<[4, 1], i32, #blocked>
  %c2 = tile.expand_dims %cidx {axis = 0} : tile<[1, 8], i32, #blocked>
  %c8 = tile.constant {value = 8} : i32
  %ro = tile.mul %r2, %c8 : tile<[4, 1], i32, #blocked>
  %rb = tile.broadcast %ro : tile<[4, 8], i32, #blocked>
  %cb = tile.broadcast %c2 : tile<[4, 8], i32, #blocked>
  %offs = tile.add %rb, %cb : tile<[4, 8], i32, #blocked>
  %v = tile.load %a, %offs : tile<[4, 8], f32, #blocked>
  %ring = tile.smem_alloc : smem<[4, 8], f32, #shared, slots = 2>
  %s1 = tile.smem_index %ring, %c1 : smem<[4, 8], f32, #shared>
  tile.smem_store %s1, %v
  %half = tile.smem_slice %s1 {dim = 1, start = 4, length = 4} : smem<[4, 4], f32, #shared>
  %h = tile.smem_load %half : tile<[4, 4], f32, #blocked>
  %hb = tile.reshape %h : tile<[16], f32, #slice<dim = 0, parent = #blocked>>
  %i16 = tile.arange {end = 16} : tile<[16], i32, #slice<dim = 0, parent = #blocked>>
  tile.store %o, %i16, %hb""",
        "%a: ptr<f32>, %o: ptr<f32>",
        header=SMEM,
        attrs="grid = [1], num_warps = 1",
    )
    a = torch.arange(32, dtype=torch.float32)
    o = torch.zeros(16)
    interp.run(k, a, o)
    assert o.tolist() == a.reshape(4, 8)[:, 4:].reshape(-1).tolist()


def test_reading_unwritten_shared_memory_is_a_race() -> None:
    k = kernel(
        "  %s = tile.smem_alloc : smem<[4, 8], f32, #shared>\n  %v = tile.smem_load %s : tile<[4, 8], f32, #blocked>",
        "",
        header=SMEM,
        attrs="grid = [1], num_warps = 1",
    )
    with pytest.raises(interp.RaceError, match=re.escape("'tile.smem_load' reads %s before anything wrote it")):
        interp.run(k)


TMA = (
    SMEM
    + """tile.kernel @k(%x: ptr<f32>, %y: ptr<f32>, %M: i32, %xd: tensordesc<[4, 8], f32, #shared> {source = "x", shape = [M, 6], strides = [6, 1]}, %yd: tensordesc<[4, 8], f32, #shared> {source = "y", shape = [M, 6], strides = [6, 1]}) attributes {grid = [1], num_warps = 1} {
  %c0 = tile.constant {value = 0} : i32
  %row = tile.constant {value = ROW} : i32
  %buf = tile.smem_alloc : smem<[4, 8], f32, #shared>
  %bar = tile.mbarrier_alloc : mbarrier<1>
  tile.mbarrier_init %bar, %c0
  tile.mbarrier_expect %bar, %c0 {bytes = EXPECT}
  tile.tma_load %xd, %row, %c0, %bar, %c0, %buf
  WAIT
  %v = tile.smem_load %buf : tile<[4, 8], f32, #blocked>
  %one = tile.constant {value = 1.0} : f32
  %w = tile.add %v, %one : tile<[4, 8], f32, #blocked>
  %out = tile.smem_alloc : smem<[4, 8], f32, #shared>
  tile.smem_store %out, %w
  FENCE
  tile.tma_store %yd, %row, %c0, %out
  tile.tma_store_wait
  tile.mbarrier_invalidate %bar, %c0
}
"""
)


def tma_kernel(row: int = 3, expect: int = 128, wait: bool = True, fence: bool = True) -> object:
    text = (
        TMA.replace("ROW", str(row))
        .replace("EXPECT", str(expect))
        .replace("WAIT", "tile.mbarrier_wait %bar, %c0, %c0" if wait else "")
        .replace("FENCE", "tile.fence_async_shared" if fence else "")
    )
    module = parse(text, "tma.tile")
    verify(module)
    return module.kernels[0]


def test_tma_zero_fills_loads_and_clips_stores() -> None:
    x = torch.arange(5 * 6, dtype=torch.float32).reshape(5, 6)
    y = torch.full((5, 6), -7.0)
    interp.run(tma_kernel(row=3), x, y, 5)
    # rows 3, 4 exist; columns 0..5 exist: the rest of the 4 x 8 box is zero-filled, then clipped
    want = torch.full((5, 6), -7.0)
    want[3:] = x[3:] + 1
    assert torch.equal(y, want)


def test_tma_read_before_the_wait_is_a_race() -> None:
    with pytest.raises(
        interp.RaceError,
        match=r"reads %buf written by 'tile.tma_load' at tma.tile:\d+:\d+ before partition 'main' waited on %bar\[0\] for phase 0",
    ):
        interp.run(tma_kernel(wait=False), torch.zeros(5, 6), torch.zeros(5, 6), 5)


def test_expect_too_small_is_reported_at_the_copy() -> None:
    with pytest.raises(
        interp.ProtocolError, match=re.escape("'tile.tma_load' brings %bar[0]'s transaction bytes below zero")
    ):
        interp.run(tma_kernel(expect=64), torch.zeros(5, 6), torch.zeros(5, 6), 5)


def test_expect_too_large_deadlocks_naming_the_barrier() -> None:
    with pytest.raises(
        interp.DeadlockError,
        match=r"waits at tma.tile:\d+:\d+ on %bar\[0\] for phase 0 .* missing 128 transaction bytes",
    ):
        interp.run(tma_kernel(expect=256), torch.zeros(5, 6), torch.zeros(5, 6), 5)


def test_tma_store_needs_a_fence() -> None:
    with pytest.raises(interp.RaceError, match=re.escape("not followed by 'tile.fence_async_shared'")):
        interp.run(tma_kernel(fence=False), torch.zeros(5, 6), torch.zeros(5, 6), 5)


BAR = """tile.kernel @k() attributes {grid = [1]} {
  %c0 = tile.constant {value = 0} : i32
  %c1 = tile.constant {value = 1} : i32
  %b = tile.mbarrier_alloc : mbarrier<2>
BODY
}
"""


def barrier_kernel(body: str) -> object:
    module = parse(BAR.replace("BODY", body), "bar.tile")
    return module.kernels[0]


def test_fresh_barrier_passes_parity_one_and_blocks_on_zero() -> None:
    interp.run(barrier_kernel("  tile.mbarrier_init %b, %c0\n  tile.mbarrier_wait %b, %c0, %c1"))
    with pytest.raises(
        interp.DeadlockError,
        match=r"on %b\[0\] for phase 0 \(parity 0\); %b\[0\] is in phase 0, missing 1 of 1 arrivals",
    ):
        interp.run(barrier_kernel("  tile.mbarrier_init %b, %c0\n  tile.mbarrier_wait %b, %c0, %c0"))


def test_arrivals_complete_phases() -> None:
    body = """  tile.mbarrier_init %b, %c0 {count = 2}
  tile.mbarrier_arrive %b, %c0
  tile.mbarrier_arrive %b, %c0
  tile.mbarrier_wait %b, %c0, %c0
  tile.mbarrier_arrive %b, %c0 {count = 2}
  tile.mbarrier_wait %b, %c0, %c1
  tile.mbarrier_invalidate %b, %c0"""
    interp.run(barrier_kernel(body))


@pytest.mark.parametrize(
    "body,error,message",
    [
        (
            "  tile.mbarrier_arrive %b, %c0",
            interp.ProtocolError,
            r"'tile.mbarrier_arrive' uses %b\[0\] before 'tile.mbarrier_init'",
        ),
        (
            "  tile.mbarrier_init %b, %c0\n  tile.mbarrier_invalidate %b, %c0\n  tile.mbarrier_arrive %b, %c0",
            interp.ProtocolError,
            r"uses %b\[0\] after 'tile.mbarrier_invalidate'",
        ),
        (
            "  tile.mbarrier_init %b, %c0\n  tile.mbarrier_arrive %b, %c0 {count = 2}",
            interp.ProtocolError,
            r"arrives on %b\[0\] more often than its count \(1\) in phase 0",
        ),
        (
            "  tile.mbarrier_init %b, %c0\n  tile.mbarrier_arrive %b, %c0\n  tile.mbarrier_wait %b, %c0, %c0\n"
            "  tile.mbarrier_wait %b, %c0, %c0",
            interp.ProtocolError,
            r"waits on %b\[0\] for phase 2, two phases ahead of phase 0",
        ),
        (
            "  tile.mbarrier_init %b, %c0\n  tile.mbarrier_arrive %b, %c0\n  tile.mbarrier_arrive %b, %c0\n"
            "  tile.mbarrier_arrive %b, %c0\n  tile.mbarrier_wait %b, %c0, %c0",
            interp.ProtocolError,
            r"waits on %b\[0\] for phase 0, but the barrier is already in phase 3",
        ),
        (
            "  %c5 = tile.constant {value = 5} : i32\n  tile.mbarrier_init %b, %c5",
            interp.ExecutionError,
            "barrier index 5 out of range",
        ),
    ],
    ids=["uninitialized", "invalidated", "over-arrival", "two-ahead", "lapped", "index"],
)
def test_barrier_misuse(body: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        interp.run(barrier_kernel(body))
