"""pipeline, persistent and warp-specialize: under the interpreter (which checks every barrier
phase, TMA transaction and shared-memory access for races) the kernels they make never deadlock or
race and write the same bits as the kernel before them; hand-broken variants are caught."""

from __future__ import annotations

from collections.abc import Callable

import hypothesis
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from profiles import examples
from test_reuse_peel_fp32 import same_bits

from examples import Example, example
from tilec import interp
from tilec.interp.errors import InterpError
from tilec.ir import Kernel, parse, print_kernel, verify
from tilec.ir.builder import Builder
from tilec.ir.core import Block, Module, ancestor_in, defining_op
from tilec.ir.dtypes import i1
from tilec.ir.errors import VerifyError
from tilec.ir.ops import (
    ForOp,
    IfOp,
    MBarrierArriveOp,
    MBarrierExpectOp,
    MBarrierWaitOp,
    SmemLoadOp,
    TmaLoadOp,
    WarpSpecializeOp,
)
from tilec.ir.types import SharedBufferType
from tilec.passes import run_pipeline
from tilec.passes.base import collecting_remarks
from tilec.passes.pipelines import gluon_form

CACHED = "canonicalize,peel,canonicalize,welford-lanes,softmax-lanes,cse,reuse{cache=smem},cse"  # for forms gluon_form does not write


def pipeline_text(xblock: int, rblock: int, stages: int, persistent: bool, specialized: bool) -> str:
    plan = f"xblock={xblock},rblock={rblock},num_warps=4"
    return gluon_form(plan, persistent=persistent, stages=stages, specialize=specialized)


def run(ex: Example, kernel: Kernel, num_sms: int = 132, seed: int = 0) -> dict:
    args, outputs = ex.arguments()
    interp.run(kernel, *args, num_sms=num_sms, seed=seed)
    return outputs


def has(kernel: Kernel, cls: type) -> bool:
    return any(isinstance(op, cls) for op in kernel.walk())


@settings(
    max_examples=examples(30),
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(
    name=st.sampled_from(["rmsnorm", "layernorm", "softmax"]),
    shape=st.sampled_from([(1, 512), (3, 1000), (8, 2048), (33, 1024), (5, 3001), (4, 4104)]),
    stages=st.integers(1, 4),
    rblock=st.sampled_from([64, 256, 1024]),
    xblock=st.sampled_from([1, 2]),
    persistent=st.booleans(),
    specialized=st.booleans(),
    num_sms=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
# rows of 3001 from the 128-byte line below their start (align-rows{line=128}) in chunks of 64: 45
# whole chunks in some rows, 46 in others, so the cp.async cache's barriers would not complete once
# a row block in a persistent loop (the interpreter caught the wait for a phase long past);
# `persistent` leaves such kernels
@hypothesis.example(
    name="rmsnorm",
    shape=(5, 3001),
    stages=2,
    rblock=64,
    xblock=1,
    persistent=True,
    specialized=True,
    num_sms=1,
    seed=53333,
)
def test_pipelined_kernels_equal_the_unpipelined_kernel(
    name: str,
    shape: tuple[int, int],
    stages: int,
    rblock: int,
    xblock: int,
    persistent: bool,
    specialized: bool,
    num_sms: int,
    seed: int,
) -> None:
    ex = example(name, *shape)
    before = ex.kernel(gluon_form(f"xblock={xblock},rblock={rblock},num_warps=4", pipelined=False))
    kernel = ex.kernel(pipeline_text(xblock, rblock, stages, persistent, specialized))
    tma = has(before, TmaLoadOp)
    assert has(kernel, WarpSpecializeOp) == (specialized and tma)
    got = run(ex, kernel, num_sms, seed)
    assert same_bits(run(ex, before), got), print_kernel(kernel)
    ex.check(got, pipeline_text(xblock, rblock, stages, persistent, specialized))


@pytest.mark.parametrize(("cols", "line", "taken"), [(3001, 128, False), (3001, 16, True), (3009, 16, False)])
def test_persistent_leaves_a_cache_whose_chunks_a_row_vary(cols: int, line: int, taken: bool) -> None:
    """A misaligned row's whole chunks start at the row's offset past a boundary: in chunks of 64,
    rows of 3001 hold 45 or 46 of them from a 128-byte line, 46 from every 16-byte vector, and rows
    of 3009 46 or 47 from a vector. Where the count varies, the cp.async cache's barriers would
    complete in some row blocks and not in others, and `persistent` (which waits on them with the
    parity of the row block's count) leaves the kernel, with a remark; where it does not, the
    persistent kernel equals the unpersistent one in the interpreter."""
    ex = example("rmsnorm", 5, cols)
    form = gluon_form("xblock=1,rblock=64,num_warps=4", persistent=True)
    form = form.replace("align-rows{line=128}", f"align-rows{{line={line}}}")
    with collecting_remarks() as remarks:
        kernel = ex.kernel(form)
    assert any(op.name == "tile.async_copy_arrive" for op in kernel.walk())  # the cp.async cache
    assert kernel.launch.persistent == taken
    why = [r.message for r in remarks if r.pass_name == "persistent"]
    assert why == (
        []
        if taken
        else [
            "a cp.async cache's chunks a row vary with the row (a misaligned row's): its barriers would not "
            "complete once per row block"
        ]
    ), why
    ex.check(run(ex, kernel, num_sms=2), form)


@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
def test_every_combination_on_one_shape(name: str) -> None:
    """The fixed corners: each stage count against the 4 chunks of a row, each pass on and off."""
    ex = example(name, 6, 1024)
    want = run(ex, ex.kernel(f"plan{{xblock=1,rblock=256,num_warps=4}},{CACHED},dce"))
    for stages in (1, 2, 3, 4, 5, 8, 0):  # 0: chosen (under persistent, several row blocks)
        for persistent in (False, True):
            for specialized in (False, True):
                kernel = ex.kernel(pipeline_text(1, 256, stages, persistent, specialized))
                assert has(kernel, WarpSpecializeOp) == specialized
                assert same_bits(want, run(ex, kernel, num_sms=4, seed=stages)), (stages, persistent, specialized)


# ---------------------------------------------------------------------------------------------
# What the passes make


def test_ring_smaller_than_a_row_streams_every_phase() -> None:
    """4 chunks through 2 slots: both phases read through the ring, 8 items per row block."""
    k = example("rmsnorm", 6, 1024).kernel(pipeline_text(1, 256, 2, False, False))
    text = print_kernel(k)
    assert "smem<[1, 256], bf16, #shared, slots = 2>" in text
    assert "%items = tile.constant {value = 8}" in text
    waits = [op for op in k.walk() if isinstance(op, MBarrierWaitOp)]
    assert len(waits) == 2  # one per phase, each in its loop


def test_resident_ring_waits_once_and_refills_after_the_last_phase() -> None:
    k = example("rmsnorm", 6, 1024).kernel(pipeline_text(1, 256, 4, True, False))
    text = print_kernel(k)
    assert "slots = 4>" in text and "persistent = true" in text
    assert len([op for op in k.walk() if isinstance(op, MBarrierWaitOp)]) == 1  # phase 2 reads without waiting
    loads = [op for op in k.walk() if isinstance(op, SmemLoadOp)]
    copies = [op for op in k.walk() if isinstance(op, TmaLoadOp)]
    assert len(loads) == 2 and len(copies) == 5  # 4 in the prologue, 1 refill after the last read


def test_warp_specialized_kernel_shape() -> None:
    k = example("softmax", 6, 1024).kernel(pipeline_text(1, 256, 3, True, True))
    (ws,) = [op for op in k.walk() if isinstance(op, WarpSpecializeOp)]
    assert ws.attr("worker_warps") == [1] and ws.attr("worker_regs") == [24]
    consumer, producer = ws.regions
    assert not has_in(consumer, TmaLoadOp) and has_in(consumer, MBarrierArriveOp)
    assert has_in(producer, TmaLoadOp) and not has_in(producer, SmemLoadOp)
    assert "tile.cta_barrier" not in print_kernel(k)


def has_in(block, cls: type) -> bool:  # type: ignore[no-untyped-def]
    return any(isinstance(op, cls) for op in block.walk())


def test_warp_specialize_leaves_kernels_it_cannot_split() -> None:
    ex = example("rmsnorm", 6, 1024)
    # one warp: Gluon specializes whole warp groups
    k = ex.kernel(f"plan{{xblock=1,rblock=256,num_warps=1}},{CACHED},pipeline{{stages=2}},warp-specialize")
    assert not has(k, WarpSpecializeOp)


def test_an_unpipelined_cache_is_a_resident_ring() -> None:
    """reuse{cache=smem}'s cache, not pipelined, is what the pass finds in a resident ring after
    canonicalize: K slots, each copied once (constant items 0..K-1, no refill). The producer issues
    the K copies; the kernel's warps wait for them as before."""
    ex = example("rmsnorm", 6, 1024)
    before = ex.kernel(f"plan{{xblock=1,rblock=256,num_warps=4}},{CACHED},dce")
    k = ex.kernel(f"plan{{xblock=1,rblock=256,num_warps=4}},{CACHED},warp-specialize,canonicalize,cse,dce")
    (ws,) = [op for op in k.walk() if isinstance(op, WarpSpecializeOp)]
    producer = ws.regions[1]
    assert len([op for op in producer.walk() if isinstance(op, TmaLoadOp)]) == 4
    assert not has_in(producer, MBarrierWaitOp) and not has_in(producer, ForOp)
    assert not has_in(ws.regions[0], MBarrierArriveOp)  # nothing is refilled: nothing to release
    for seed in range(3):
        assert same_bits(run(ex, before), run(ex, k, num_sms=2, seed=seed))


def test_bad_options_are_errors() -> None:
    ex = example("rmsnorm", 6, 1024)
    with pytest.raises(ValueError, match="stages"):
        ex.kernel("plan,pipeline{stages=-1}")
    with pytest.raises(ValueError, match="producer_regs"):
        ex.kernel("plan,warp-specialize{producer_regs=20}")


# ---------------------------------------------------------------------------------------------
# warp-specialize on rings other passes have folded: it reads the ring from the TMA copies and
# the barrier waits, so `canonicalize` between `pipeline` and `warp-specialize` changes nothing


def folded_text(xblock: int, rblock: int, stages: int | None, persistent: bool, cse: bool = False) -> str:
    """gluon_form with `canonicalize` (and `cse`) run on the ring before warp-specialize: prologue
    guards on a constant item count fold away, slot indices fold to constants, refills proved in
    range lose their guards."""
    text = pipeline_text(xblock, rblock, stages, persistent, True)  # type: ignore[arg-type]
    return text.replace(
        "warp-specialize", "canonicalize,cse,warp-specialize" if cse else "canonicalize,warp-specialize"
    )


def producer_of(kernel: Kernel) -> Block:
    (ws,) = [op for op in kernel.walk() if isinstance(op, WarpSpecializeOp)]
    return ws.regions[1]


@settings(
    max_examples=examples(20),
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(
    name=st.sampled_from(["rmsnorm", "layernorm", "softmax"]),
    shape=st.sampled_from([(1, 512), (3, 1000), (8, 2048), (33, 1024), (4, 4104)]),
    stages=st.sampled_from([1, 2, 3, 4, None]),
    rblock=st.sampled_from([64, 256, 1024]),
    persistent=st.booleans(),
    cse=st.booleans(),
    num_sms=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
# a constant item count: all chunks resident, no refill left (the producer issues the copies in
# order); a ring of 2 slots over 8 items (a loop over the items, its copy a refill's)
@hypothesis.example(
    name="rmsnorm", shape=(6, 1024), stages=None, rblock=256, persistent=False, cse=False, num_sms=2, seed=0
)
@hypothesis.example(
    name="layernorm", shape=(3, 1000), stages=2, rblock=256, persistent=False, cse=True, num_sms=2, seed=1
)
@hypothesis.example(
    name="softmax", shape=(8, 2048), stages=1, rblock=1024, persistent=False, cse=False, num_sms=3, seed=2
)
# a count known only at run time (persistent: the row blocks of the program)
@hypothesis.example(
    name="rmsnorm", shape=(33, 1024), stages=3, rblock=256, persistent=True, cse=False, num_sms=4, seed=3
)
@hypothesis.example(
    name="softmax", shape=(4, 4104), stages=None, rblock=1024, persistent=True, cse=True, num_sms=2, seed=4
)
def test_folded_rings_specialize_and_equal_the_unpipelined_kernel(
    name: str,
    shape: tuple[int, int],
    stages: int | None,
    rblock: int,
    persistent: bool,
    cse: bool,
    num_sms: int,
    seed: int,
) -> None:
    ex = example(name, *shape)
    before = ex.kernel(gluon_form(f"xblock=1,rblock={rblock},num_warps=4", pipelined=False))
    text = folded_text(1, rblock, stages, persistent, cse)
    with collecting_remarks() as remarks:
        kernel = ex.kernel(text)
    said = [r.message for r in remarks if r.pass_name == "warp-specialize"]
    assert has(kernel, WarpSpecializeOp) == has(before, TmaLoadOp), said
    got = run(ex, kernel, num_sms, seed)
    assert same_bits(run(ex, before), got), print_kernel(kernel)
    ex.check(got, text)


@pytest.mark.parametrize(
    "stages,persistent,loop",
    [
        (None, False, False),  # resident, a constant count: no refill, the copies one by one
        (2, False, True),  # 8 items through 2 slots, a constant count: the refills are templates
        (3, True, True),  # persistent: the count is computed at run time
    ],
)
def test_folded_ring_producers(stages: int | None, persistent: bool, loop: bool) -> None:
    ex = example("rmsnorm", 6, 1024)
    ring = ",".join(
        [
            f"plan{{xblock=1,rblock=256,num_warps=4}},{CACHED}",
            *(["persistent"] if persistent else []),
            "pipeline" if stages is None else f"pipeline{{stages={stages}}}",
        ]
    )
    pipelined = ex.kernel(ring)
    folded = ex.kernel(f"{ring},canonicalize,warp-specialize")
    producer = producer_of(folded)
    assert has_in(producer, ForOp) == loop
    assert has_in(producer, MBarrierWaitOp) == loop  # no refill: no slot to wait for
    assert len([op for op in producer.walk() if isinstance(op, TmaLoadOp)]) == (1 if loop else 4)
    # the prologue the producer took over is gone from the consumer; each refill became a release
    consumer = next(op for op in folded.walk() if isinstance(op, WarpSpecializeOp)).regions[0]
    assert not has_in(consumer, TmaLoadOp) and not has_in(consumer, MBarrierExpectOp)
    copies = [op for op in pipelined.walk() if isinstance(op, TmaLoadOp)]
    refills = len([op for op in copies if isinstance(ancestor_in(pipelined.body, op), ForOp)])  # in the work
    arrives = len([op for op in consumer.walk() if isinstance(op, MBarrierArriveOp)])
    assert arrives == (refills if loop else 0)
    assert "tile.cta_barrier" not in print_kernel(folded)


FOLDED_FORMS = {"resident": (None, False), "ring": (2, False), "persistent-ring": (3, True)}


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
@pytest.mark.parametrize("form", sorted(FOLDED_FORMS))
def test_folded_specialized_forms_compile(form: str, arch: str) -> None:
    from tilec.emit.check import check_compile
    from tilec.emit.gluon import emit_gluon

    stages, persistent = FOLDED_FORMS[form]
    k = example("layernorm", 6, 1000).kernel(folded_text(1, 256, stages, persistent, cse=True))
    assert has(k, WarpSpecializeOp)
    report = check_compile(emit_gluon(k), arch)
    assert report.ok, report.summary() + "\n" + report.detail


# What warp-specialize refuses, and the remark that says why. Each starts from a folded ring of 2
# slots over 8 items (rmsnorm, 4 chunks, 2 phases): an unguarded prologue, the first phase's
# refills unguarded, the second's guarded by `h < %items`.


def _folded_ring() -> Kernel:
    return example("rmsnorm", 6, 1024).kernel(
        f"plan{{xblock=1,rblock=256,num_warps=4}},{CACHED},pipeline{{stages=2}},canonicalize"
    )


def _copies(k: Kernel) -> list[TmaLoadOp]:
    return [op for op in k.walk() if isinstance(op, TmaLoadOp)]


def _other_barrier(k: Kernel) -> None:
    """One copy completes on a barrier of its own."""
    copy = _copies(k)[-1]
    alloc = defining_op(copy.bars)
    assert alloc is not None
    copy.bars = Builder.after(alloc).op("tile.mbarrier_alloc", type=copy.bars.type, name_hint="other")


def _no_guards(k: Kernel) -> None:
    """The second phase's refills lose their guards too: nothing says how many items there are."""
    for op in list(k.walk()):
        if isinstance(op, IfOp):
            op.cond = Builder.before(op).constant(1, i1)
    run_pipeline(Module([k]), "canonicalize")


def _not_into_a_slot(k: Kernel) -> None:
    """A copy into a buffer of its own, without slots."""
    copy = _copies(k)[0]
    t = copy.dst.type
    assert isinstance(t, SharedBufferType)
    alloc = defining_op(defining_op(copy.dst).buf)  # type: ignore[union-attr]
    assert alloc is not None
    copy.dst = Builder.after(alloc).op("tile.smem_alloc", type=t, name_hint="lone")


def _no_prologue(k: Kernel) -> None:
    """Item 1's first copy is gone (its expect too)."""
    copy = _copies(k)[1]
    block = copy.parent
    assert block is not None
    expect = [op for op in block.ops[: block.ops.index(copy)] if isinstance(op, MBarrierExpectOp)][-1]
    copy.erase()
    expect.erase()


def _other_condition(k: Kernel) -> None:
    """A refill under `h <= total`: not a count of items."""
    guard = next(op for op in k.walk() if isinstance(op, IfOp))
    cmp = defining_op(guard.cond)
    assert cmp is not None
    cmp.attributes["predicate"] = "le"


def _disagreeing_copy(k: Kernel) -> None:
    """Item 1 of the prologue copies the box of item 0: not what the refills compute for it."""
    first, second = _copies(k)[:2]
    second.coords = list(first.coords)


def _no_consumer(k: Kernel) -> None:
    for op in list(k.walk()):
        if isinstance(op, MBarrierWaitOp):
            op.erase()


REFUSED: list[tuple[Callable[[Kernel], None], str]] = [
    (_other_barrier, "the copies into %in_ptr0_cache complete on different barriers"),
    (_no_guards, "the refills of %in_ptr0_cache are not guarded by `item < count`: the number of items is unknown"),
    (_not_into_a_slot, "a TMA copy is not into a slot of a ring"),
    (_no_prologue, "the ring %in_ptr0_cache has no prologue (items 0 to 1 copied before the work)"),
    (_other_condition, "a copy into %in_ptr0_cache is under a `tile.if` other than `item < count`"),
    (_disagreeing_copy, "the copies into %in_ptr0_cache disagree: the copy of item 1 is not the one"),
    (_no_consumer, "nothing waits on %in_ptr0_ready: the copies into %in_ptr0_cache have no consumer"),
]


@pytest.mark.parametrize("breaks,why", REFUSED, ids=[b[0].__name__.strip("_") for b in REFUSED])
def test_warp_specialize_refuses_what_is_not_a_ring(breaks: Callable[[Kernel], None], why: str) -> None:
    k = _folded_ring()
    assert run_warp_specialize(_folded_ring()) == []  # as it is, the kernel is specialized
    breaks(k)
    said = run_warp_specialize(k)
    assert not has(k, WarpSpecializeOp)
    assert len(said) == 1 and said[0].startswith(why), said


def run_warp_specialize(k: Kernel) -> list[str]:
    from tilec.passes.warp_specialize import WarpSpecialize

    with collecting_remarks() as remarks:
        WarpSpecialize().run(Module([k]))
    return [r.message for r in remarks]


# ---------------------------------------------------------------------------------------------
# Broken variants: each must be caught


def _kernel(specialized: bool, persistent: bool = False, stages: int = 2) -> tuple[Example, Kernel]:
    ex = example("rmsnorm", 6, 1024)
    return ex, ex.kernel(pipeline_text(1, 256, stages, persistent, specialized))


def _flip_parity(k: Kernel) -> None:
    """Off by one phase: the consumer waits on the other parity (a fresh barrier passes it)."""
    wait = next(op for op in k.walk() if isinstance(op, MBarrierWaitOp) and "ready" in (op.operands[0].name_hint or ""))
    b = Builder.before(wait)
    wait.operands[2] = b.op("tile.xor", wait.operands[2], b.constant(1, wait.operands[2].type))  # type: ignore[arg-type]


def _release_early(k: Kernel) -> None:
    """The consumer hands a slot back before reading it."""
    arrive = next(op for op in k.walk() if isinstance(op, MBarrierArriveOp))
    block = arrive.parent
    assert block is not None
    load = next(op for op in block.ops if isinstance(op, SmemLoadOp))
    slot = arrive.operands[1]
    arrive.erase()
    block.insert_before(load, arrive)
    # its slot index is computed after the load: move that math too
    d = defining_op(slot)
    assert d is not None
    for op in [defining_op(v) for v in d.operands if defining_op(v) is not None and defining_op(v).parent is block] + [
        d
    ]:  # type: ignore[union-attr]
        if op is not None and block.ops.index(op) > block.ops.index(arrive):
            op.erase()
            block.insert_before(arrive, op)


def _producer_ahead(k: Kernel) -> None:
    """The producer waits for the slot of the next item instead of its own."""
    ws = next(op for op in k.walk() if isinstance(op, WarpSpecializeOp))
    producer = ws.regions[1]
    wait = next(op for op in producer.walk() if isinstance(op, MBarrierWaitOp))
    slot_op = defining_op(wait.operands[1])
    assert slot_op is not None
    g = slot_op.operands[0]
    b = Builder.before(slot_op)
    ahead = b.op("tile.add", g, b.constant(1, g.type))  # type: ignore[arg-type]
    slot_op.operands[0] = ahead
    round_op = defining_op(defining_op(defining_op(wait.operands[2]).operands[0]).operands[0])  # type: ignore[union-attr]
    assert round_op is not None and round_op.name == "tile.div"
    round_op.operands[0] = ahead


def _skip_fence(k: Kernel) -> None:
    """The consumer releases a slot without ordering its reads before the next TMA write."""
    for op in list(k.walk()):
        if op.name == "tile.fence_async_shared":
            op.erase()


BROKEN: list[tuple[str, bool, Callable[[Kernel], None]]] = [
    ("off-by-one parity (pipelined)", False, _flip_parity),
    ("off-by-one parity (specialized)", True, _flip_parity),
    ("release before the last read", True, _release_early),
    ("producer one item ahead of the ring", True, _producer_ahead),
    ("no fence before the release", True, _skip_fence),
    ("no fence before the refill", False, _skip_fence),
]


@pytest.mark.parametrize("what,specialized,breaks", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_variants_are_caught(what: str, specialized: bool, breaks: Callable[[Kernel], None]) -> None:
    ex, k = _kernel(specialized)
    breaks(k)
    k = parse(print_kernel(k)).kernels[0]  # still valid IR: only the interpreter can tell
    with pytest.raises(InterpError):
        for seed in range(4):
            run(ex, k, num_sms=2, seed=seed)


# ---------------------------------------------------------------------------------------------
# The verifier's static checks on rings

RING = """
#shared = #nvmma_shared<swizzle_byte_width = 0, element_bitwidth = 32, rank = 2>
tile.kernel @k(%x: ptr<f32>, %d: tensordesc<[1, 64], f32, #shared> {{source = "x", shape = [8, 64], strides = [64, 1]}}) attributes {{grid = [8], num_warps = 4}} {{
  %c0 = tile.constant {{value = 0}} : i32
  %c1 = tile.constant {{value = 1}} : i32
  %m = tile.constant {{value = {modulus}}} : i32
  %p = tile.constant {{value = {pmask}}} : i32
  %pid = tile.program_id : i32
  %buf = tile.smem_alloc : smem<[1, 64], f32, #shared, slots = 3>
  %bar = tile.mbarrier_alloc : mbarrier<3>
  tile.mbarrier_init %bar, %c0
  %slot = tile.rem %pid, %m : i32
  %par = tile.and %pid, %p : i32
  %view = tile.smem_index %buf, %slot : smem<[1, 64], f32, #shared>
  tile.mbarrier_wait %bar, %c0, %par
}}
"""


def test_verifier_checks_slot_indices_and_parities() -> None:
    verify(parse(RING.format(modulus=3, pmask=1)))
    with pytest.raises(VerifyError, match="can reach 3, but there are 3 slots"):
        verify(parse(RING.format(modulus=4, pmask=1)))
    with pytest.raises(VerifyError, match="is not always 0 or 1"):
        verify(parse(RING.format(modulus=3, pmask=3)))


def test_pass_output_verifies_between_passes() -> None:
    """Every pass's output is verified (the manager does it between passes); a ring from the pass
    passes the static checks."""
    ex = example("layernorm", 6, 1024)
    module = parse(ex.kernel_text)
    run_pipeline(module, pipeline_text(1, 256, 3, True, True), verify_each=True)


# ---------------------------------------------------------------------------------------------
# Every form compiles for Hopper and Blackwell (ahead of time, no GPU)

FORMS = {
    "resident": (0, False, False),
    "ring": (2, False, False),
    "persistent-ring": (3, True, False),
    "persistent-resident-specialized": (0, True, True),
    "ring-specialized": (2, False, True),
}


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_form_compiles(form: str, arch: str) -> None:
    from tilec.emit.check import check_compile
    from tilec.emit.gluon import emit_gluon

    stages, persistent, specialized = FORMS[form]
    name = "layernorm" if specialized else "softmax"
    k = example(name, 6, 1000).kernel(pipeline_text(1, 256, stages, persistent, specialized))
    assert has(k, WarpSpecializeOp) == specialized
    report = check_compile(emit_gluon(k), arch)
    assert report.ok, report.summary() + "\n" + report.detail
