"""reuse, fp32-at-use and peel: what they change in the IR, that each input row is read from global
memory once after the default pipelines, and that no pass changes a single output bit."""

from __future__ import annotations

import hypothesis
import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from profiles import examples

from examples import OUTPUTS, example, run_interp
from tilec.ir import Kernel
from tilec.ir.ops import ForOp, LoadOp, SmemLoadOp, TmaLoadOp
from tilec.ir.types import PointerType, TileType
from tilec.passes.chooser import TABLES
from tilec.passes.pipelines import GLUON_DEFAULT
from tilec.passes.ranges import trip_count


def global_row_loads(kernel: Kernel) -> dict[str, int]:
    """How many ops read 2-D tiles of each pointer parameter from global memory, counting a load
    in a loop once per trip (a TMA copy counts as one read of its box)."""
    counts: dict[str, int] = {}
    params = {id(p): p.name_hint for p in kernel.params if isinstance(p.type, PointerType)}
    descs = {id(p): a.get("source") for p, a in zip(kernel.params, kernel.param_attrs) if a}
    for op in kernel.walk():
        trips = 1
        block = op.parent
        while block is not None and block.parent_op is not None:
            if isinstance(block.parent_op, ForOp):
                trips *= trip_count(block.parent_op) or 1
            block = block.parent_op.parent
        if isinstance(op, LoadOp) and isinstance(op.result.type, TileType) and op.result.type.rank == 2:
            name = params.get(id(op.operands[0]))
        elif isinstance(op, TmaLoadOp):
            name = descs.get(id(op.operands[0]))
        else:
            continue
        if name:
            counts[name] = counts.get(name, 0) + trips
    return counts


def chunks(kernel: Kernel, rnumel: int) -> int:
    """Chunks per row block: rnumel over the planned RBLOCK."""
    rb = kernel.constexprs.get("RBLOCK") or 1
    return -(-rnumel // rb)


# (rows, cols): Inductor splits long rows across kernels when there are few rows
SHAPES = [(8, 1000), (8, 4096), (512, 12288)]


@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
@pytest.mark.parametrize("rows,cols", SHAPES)
def test_gluon_default_reads_each_row_once(name: str, rows: int, cols: int) -> None:
    ex = example(name, rows, cols)
    before = global_row_loads(ex.kernel("plan,canonicalize"))
    n = ex.lowered.rnumel
    assert before["in_ptr0"] >= 2 * chunks(ex.kernel("plan,canonicalize"), n)  # Inductor's form: once per phase
    # gluon-default up to its pipeline pass (after it the copies are counted by a loop
    # variable: test_pipeline_ws checks that a resident ring copies each chunk once per row block)
    k = ex.kernel(",".join(GLUON_DEFAULT[: GLUON_DEFAULT.index("pipeline")]))
    after = global_row_loads(k)
    assert after["in_ptr0"] == chunks(k, n), (before, after)  # one TMA box per chunk of the row block
    assert not any(isinstance(op, LoadOp) and op.operands[0].name_hint == "in_ptr0" for op in k.walk())
    assert sum(isinstance(op, SmemLoadOp) for op in k.walk()) >= 2  # every phase reads the cache


@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
def test_triton_default_keeps_a_row_that_fits_in_registers(name: str) -> None:
    ex = example(name, 8, 1000)
    before = global_row_loads(ex.kernel("plan{max_rblock=16384},canonicalize"))
    assert before["in_ptr0"] >= 2  # Inductor's form reads x once per phase
    after = global_row_loads(ex.kernel("triton-default"))
    assert after["in_ptr0"] == 1


def test_triton_default_leaves_the_reload_visible_when_the_row_does_not_fit() -> None:
    ex = example("rmsnorm", 512, 40000)
    k = ex.kernel("triton-default")
    assert any(isinstance(op, ForOp) for op in k.walk())
    c = chunks(k, ex.lowered.rnumel)  # 40000 / 2048: 19 full chunks and a tail
    # the main loops read every chunk twice; the peeled tails are straight-line code and merge
    assert global_row_loads(k)["in_ptr0"] == 2 * (c - 1) + 1


# ---------------------------------------------------------------------------------------------
# Nothing changes a bit


def same_bits(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return all(
        torch.equal(
            a[k].view(torch.uint8) if a[k].dtype != torch.bool else a[k],
            b[k].view(torch.uint8) if b[k].dtype != torch.bool else b[k],
        )
        for k in a
    )


PASS_SEQUENCES = [
    "peel,canonicalize",
    "cse,reuse{cache=registers}",
    "cse,reuse{cache=smem},cse",
    "cse,reuse{cache=auto},cse,fp32-at-use",
    "peel,canonicalize,cse,reuse{cache=smem},cse,fp32-at-use,dce",
    "fp32-at-use",
]


@settings(
    max_examples=examples(25),
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(
    name=st.sampled_from(sorted(OUTPUTS)),
    rows=st.sampled_from([1, 2, 7]),
    cols=st.sampled_from([61, 64, 257, 997, 1000, 1024, 3001]),
    dtype=st.sampled_from(["bf16", "f16", "f32"]),
    rblock=st.sampled_from([128, 256, 1024, 4096]),
    xblock=st.sampled_from([1, 2, 4]),
    passes=st.sampled_from(PASS_SEQUENCES),
)
def test_passes_do_not_change_results(
    name: str, rows: int, cols: int, dtype: str, rblock: int, xblock: int, passes: str
) -> None:
    ex = example(name, rows, cols, dtype)
    plan = f"plan{{xblock={xblock},rblock={rblock}}},canonicalize"
    before = run_interp(ex, ex.kernel(plan))
    after = run_interp(ex, ex.kernel(f"{plan},{passes}"))
    assert same_bits(before, after), (name, rows, cols, dtype, rblock, xblock, passes)
    ex.check(after, f"after {passes}")


@pytest.mark.parametrize("pipeline", ["gluon-default", "triton-default"])
@pytest.mark.parametrize("name", sorted(OUTPUTS))
@pytest.mark.parametrize("rows,cols", [(1, 997), (5, 4096), (64, 1000)])
def test_default_pipelines_equal_eager(pipeline: str, name: str, rows: int, cols: int) -> None:
    ex = example(name, rows, cols)
    ex.check(run_interp(ex, ex.kernel(pipeline)), pipeline)


@settings(max_examples=examples(12), deadline=None)
@given(
    name=st.sampled_from(sorted(OUTPUTS)),
    rows=st.integers(1, 9),
    cols=st.sampled_from([1000, 2048, 4096]),
    pipeline=st.sampled_from(["gluon-default", "triton-default"]),
    xblock=st.sampled_from([1, 2, 4]),
    warps=st.sampled_from([2, 4, 8]),
)
def test_plan_variants_of_the_default_pipelines_equal_eager(
    name: str, rows: int, cols: int, pipeline: str, xblock: int, warps: int
) -> None:
    """The chooser's and the autotuner's plan variants (tilec.passes.pipelines.with_plan)."""
    from tilec.passes.pipelines import with_plan

    ex = example(name, rows, cols)
    kernel = ex.kernel(with_plan(pipeline, f"xblock={xblock},num_warps={warps}"))
    assert (kernel.constexprs.get("XBLOCK"), kernel.launch.num_warps) == (xblock, warps)
    ex.check(run_interp(ex, kernel), f"{pipeline} with xblock={xblock}, num_warps={warps}")


# every plan a GPU's table of rules sets for rows that fit one tile or loop over chunks of such a
# row (the long-row plans, `chunk=`: tests/inductor/test_autotune.py), by the example of its family;
# a family no example has (the models' cross-entropy: sums of products) on RMSNorm's, a row
# reduction too
FAMILY_EXAMPLES = {"sum": "rmsnorm", "mean-var": "layernorm", "softmax": "softmax"}
TABLE_PLANS = sorted(
    {
        (FAMILY_EXAMPLES.get(r.family, "rmsnorm"), r.action, r.plan, "f32" if r.elem_bytes == 4 else "bf16")
        for table in TABLES.values()
        for r in table
        if r.plan and "chunk=" not in r.plan and r.row_inputs == 1
    }
)


@pytest.mark.parametrize(("name", "emitter", "plan", "dtype"), TABLE_PLANS)
def test_every_plan_of_the_rules_equals_eager(name: str, emitter: str, plan: str, dtype: str) -> None:
    """Each such plan, in the pipeline of the emitter its rule names, computes what eager does in
    the interpreter: three rows of 3000 (rows a program past the last row masked; with `rblock=`,
    a loop over chunks with a masked tail)."""
    from tilec.passes.pipelines import with_plan

    ex = example(name, 3, 3000, dtype)
    kernel = ex.kernel(with_plan(f"{emitter}-default", plan))
    ex.check(run_interp(ex, kernel), f"{emitter} with {plan}")


# a row in chunks, for the interpreter tests of the passes that rewrite a row's loops (split-rows,
# reread): the op, rows, row length (3001: misaligned, a partial last chunk), dtype and chunk
ROW_LOOPS = settings(
    max_examples=examples(20),
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
ROW_LOOP_CASES = {
    "name": st.sampled_from(["rmsnorm", "layernorm", "softmax"]),
    "rows": st.sampled_from([1, 3]),
    "cols": st.sampled_from([1000, 2048, 3001, 4096]),
    "dtype": st.sampled_from(["bf16", "f32"]),
    "rblock": st.sampled_from([256, 512, 1024]),
}


@ROW_LOOPS
@given(
    **ROW_LOOP_CASES,
    cached=st.sampled_from([512, 1024, 2048, 4096, 65536]),
)
@hypothesis.example(name="softmax", rows=3, cols=4096, dtype="bf16", rblock=512, cached=2048)  # 1024 of 4096 columns
@hypothesis.example(name="layernorm", rows=3, cols=2048, dtype="bf16", rblock=1024, cached=2048)  # one chunk each
# a misaligned f32 row that split-rows cuts into one-chunk pieces read from global memory:
# softmax-lanes must not carry them through loops (it would read each chunk a third time)
@hypothesis.example(name="softmax", rows=1, cols=3001, dtype="f32", rblock=1024, cached=4096)
def test_a_row_cached_in_part_computes_what_it_did(
    name: str, rows: int, cols: int, dtype: str, rblock: int, cached: int
) -> None:
    """`split-rows` (a plan's `row_cache`): the Gluon pipeline with part of each row cached in shared
    memory and the rest read again computes every output bit the pipeline computes with the row
    cached whole (or read twice), and equals eager; where the cache holds a chunk but not the
    row, the first part is TMA copies and the rest's loops are marked `reread`."""
    from tilec.passes.pipelines import with_plan

    ex = example(name, rows, cols, dtype)
    plan = f"xblock=1,rblock={rblock}"
    whole_kernel = ex.kernel(with_plan("gluon-default", plan))
    whole = run_interp(ex, whole_kernel)
    kernel = ex.kernel(with_plan("gluon-default", f"{plan},row_cache={cached}"))
    part = run_interp(ex, kernel)
    assert same_bits(whole, part), (name, rows, cols, dtype, rblock, cached)
    ex.check(part, f"gluon-default with {plan}, row_cache={cached}")
    elem = 4 if dtype == "f32" else 2
    columns = cached // elem // rblock * rblock  # the input read again: x
    loads = [global_row_loads(k).get("in_ptr0", 0) for k in (whole_kernel, kernel)]
    tma = [any(isinstance(op, TmaLoadOp) for op in k.walk()) for k in (whole_kernel, kernel)]
    # a chunk or more cached, not the whole loop; a row off 16-byte boundaries is split by
    # align-rows first (its loops do not start at 0: no TMA box describes its chunks either)
    if 0 < columns < cols // rblock * rblock and cols * elem % 16 == 0 and tma[0]:
        # the first part copied by TMA, the rest (its loops, or their one chunk inlined) read again
        assert tma[1] and loads[1] > loads[0], loads
    else:
        assert loads[1] == loads[0] and tma[1] == tma[0], (loads, tma)


@ROW_LOOPS
@given(
    **ROW_LOOP_CASES,
    emitter=st.sampled_from(["triton", "gluon"]),
    options=st.sampled_from(["reverse=true", "stream=true", "reverse=true,stream=true"]),
)
@hypothesis.example(
    name="layernorm", rows=3, cols=4096, dtype="bf16", rblock=1024, emitter="triton", options="reverse=true"
)
@hypothesis.example(
    name="softmax", rows=3, cols=3001, dtype="bf16", rblock=512, emitter="triton", options="reverse=true,stream=true"
)  # a tail
def test_a_row_read_again_in_reverse_computes_what_it_did(
    name: str, rows: int, cols: int, dtype: str, rblock: int, emitter: str, options: str
) -> None:
    """`reread` (a plan's `reverse` and `stream`): each emitter's pipeline computes every output
    bit it computes without them, and equals eager; in the Triton pipeline, which reads a row of
    several chunks twice, `reverse` turns the second loop around (its chunks at a constant less
    the loop's index) and `stream` marks the rows written evict-first."""
    from tilec.passes.pipelines import with_plan

    ex = example(name, rows, cols, dtype)
    plan = f"xblock=1,rblock={rblock}"
    plain = run_interp(ex, ex.kernel(with_plan(f"{emitter}-default", plan)))
    kernel = ex.kernel(with_plan(f"{emitter}-default", f"{plan},{options}"))
    hinted = run_interp(ex, kernel)
    assert same_bits(plain, hinted), (name, rows, cols, dtype, rblock, emitter, options)
    ex.check(hinted, f"{emitter}-default with {plan},{options}")
    reversed_loops = [
        op for op in kernel.walk() if op.name == "tile.sub" and (op.result.name_hint or "").endswith("_rev")
    ]
    evict_first = [op for op in kernel.walk() if op.name == "tile.store" and op.attr("eviction") == "evict_first"]
    if emitter == "triton" and cols // rblock >= 2:  # a loop of two or more whole chunks read twice
        assert bool(reversed_loops) == ("reverse" in options)
    assert bool(evict_first) == ("stream" in options)
    if "reverse" not in options:
        assert not reversed_loops
