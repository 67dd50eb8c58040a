"""softmax-groups: a loop's softmax statistics kept for each group of a thread's consecutive
elements compute what the per-chunk statistics computed and what torch computes, in tilec's
interpreter and as emitted Triton in Triton's interpreter: rows aligned and misaligned (align-rows'
pieces), NaN, +inf and -inf included; and the loops it leaves say why."""

from __future__ import annotations

import hypothesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

from examples import Example, assert_forms_agree, example, run_interp, run_triton
from tilec.ir import Kernel, parse
from tilec.ir.ops import ForOp, ReshapeOp, SoftmaxReduceOp
from tilec.passes import Remark, run_pipeline
from tilec.passes.pipelines import with_plan


@settings(max_examples=examples(16), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.sampled_from(["softmax", "log_softmax"]),
    rows=st.sampled_from([1, 3]),
    cols=st.sampled_from([2048, 3001, 4104, 8192]),
    dtype=st.sampled_from(["bf16", "f32"]),
    chunk=st.sampled_from([1024, 2048]),
    warps=st.sampled_from([1, 2, 4]),
    group=st.sampled_from([2, 4, 8]),
    specials=st.booleans(),
)
@hypothesis.example(
    name="softmax", rows=3, cols=3001, dtype="bf16", chunk=1024, warps=4, group=8, specials=True
)  # misaligned: align-rows' pieces, the whole chunks' and the rest's loops grouped
@hypothesis.example(name="log_softmax", rows=3, cols=8192, dtype="f32", chunk=2048, warps=2, group=4, specials=True)
def test_groups_equal_the_chunks_statistics_and_eager(
    name: str, rows: int, cols: int, dtype: str, chunk: int, warps: int, group: int, specials: bool
) -> None:
    """The Triton pipeline with a plan's `groups` over a row in chunks (`chunk`, a loop) equals
    eager in the interpreter, and what the pipeline computes without it within rounding; where the
    chunk holds a group per thread the loops carry the groups' statistics (no reduction of a
    chunk across the row left in them)."""
    ex = example(name, rows, cols, dtype)
    if specials:
        ex = ex.with_specials()
    plan = f"xblock=1,chunk={chunk},num_warps={warps},max_rblock=1024"
    kernel = ex.kernel(with_plan("triton-default", f"{plan},groups={group}"))
    got = run_interp(ex, kernel)
    ex.check(got, f"triton-default with {plan},groups={group}")
    assert_forms_agree(got, run_interp(ex, ex.kernel(with_plan("triton-default", plan))))
    # the pass acts wherever a loop of two chunks or more (one of one chunk is inlined) has a
    # thread's vector (8 bf16, 4 f32 elements: every chunk and warps here give a thread one at
    # least) split into whole groups, and nowhere else
    vector = 8 if dtype == "bf16" else 4
    grouped = [op for op in kernel.walk() if isinstance(op, ReshapeOp)]
    if vector % group:
        assert not grouped, "a thread's vector does not split into groups"
    elif cols >= 2 * chunk + 16:
        assert grouped, "no loop's statistics are kept per group"
    for loop in (op for op in kernel.body.ops if isinstance(op, ForOp)):
        if any(isinstance(op, ReshapeOp) for op in loop.walk()):  # grouped: no chunk reduced across the row
            assert not [op for op in loop.walk() if isinstance(op, SoftmaxReduceOp)]
            assert all(op.attr("axis") == 2 for op in loop.walk() if op.name == "tile.reduce")


def test_the_emitted_triton_kernel_equals_eager() -> None:
    """A misaligned row (8191 columns: align-rows' pieces), its whole chunks' loop grouped by
    eights: the emitted Triton kernel (the chunk reshaped to [1, C / 8, 8]) equals eager in
    Triton's interpreter."""
    ex = example("log_softmax", 3, 8191).with_specials()
    kernel = ex.kernel(with_plan("triton-default", "xblock=1,chunk=2048,num_warps=4,max_rblock=1024,groups=8"))
    assert [op for op in kernel.walk() if isinstance(op, ReshapeOp)]
    ex.check(run_triton(ex, kernel), "the emitted Triton kernel")


def _remarks(ex: Example, plan: str) -> tuple[Kernel, list[str]]:
    """The kernel through the Triton pipeline with `plan`, and softmax-groups' remarks."""
    module = parse(ex.kernel_text)
    remarks: list[Remark] = []
    run_pipeline(module, with_plan("triton-default", plan), remarks=remarks)
    return module.kernels[0], [r.message for r in remarks if r.pass_name == "softmax-groups"]


def test_the_loops_left_say_why() -> None:
    """Without the plan's `groups` nothing changes and the remark says so; a chunk with fewer
    groups than the program has threads, or whose thread holds fewer consecutive elements than a
    group, stays as it was, with the reason."""
    ex = example("softmax", 2, 4096)
    for plan, said in (
        ("xblock=1,chunk=1024,num_warps=4,max_rblock=1024", "the plan does not ask for it (its `groups`)"),
        (  # 16 elements a thread, two vectors of 8 apart
            "xblock=1,chunk=2048,num_warps=4,max_rblock=1024,groups=16",
            "a thread holds 8 consecutive elements of the chunk, no multiple of the group's 16",
        ),
        (
            "xblock=1,chunk=1024,num_warps=16,max_rblock=1024,groups=8",
            "holds fewer groups of 8 than the program has threads",
        ),
    ):
        kernel, mine = _remarks(ex, plan)
        assert any(said in m for m in mine), mine
        assert not [op for op in kernel.walk() if isinstance(op, ReshapeOp)]
