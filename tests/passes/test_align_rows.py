"""align-rows: rows whose length is no multiple of the 16-byte vector (a vocabulary of 50257),
one per program, read in chunks that start on aligned addresses. Every kernel of the chain
computes what eager PyTorch computes (tilec's interpreter checks the alignment promises too), in
the interpreter and as emitted Triton; rows of aligned length and several rows per program are
left as they were."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from profiles import examples

from examples import run_chain
from tilec import interp
from tilec.ir.core import defining_op
from tilec.ir.ops import AssumeMultipleOp, ForOp
from tilec.testing import assert_close

ROOT = Path(__file__).resolve().parents[2]


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)


def rmsnorm(x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)


def cross_entropy_grad(logits: torch.Tensor, scale: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy's backward of the logits, as AOT autograd writes it (one kernel reading the
    logits for their statistics, then again for softmax minus one-hot, scaled). The arguments in
    the order the function first uses them: the graph's inputs' order, run_chain's."""
    lsm = torch.log_softmax(logits.float(), -1)
    grad = torch.ops.aten.nll_loss_backward(scale, lsm, labels, None, 1, -100, scale * 3)
    return torch.ops.aten._log_softmax_backward_data(grad, lsm, -1, torch.float32).to(logits.dtype)


FUNCTIONS = {"softmax": softmax, "rmsnorm": rmsnorm, "cross_entropy_grad": cross_entropy_grad}


def _inputs(name: str, rows: int, cols: int) -> list[torch.Tensor]:
    torch.manual_seed(rows * 1000 + cols)
    x = torch.randn(rows, cols).bfloat16()
    if name != "cross_entropy_grad":
        return [x]
    labels = torch.randint(0, cols, (rows,))
    labels[::3] = -100
    return [x, torch.tensor(1.0), labels]


def _pipeline(chunk: int, xblock: int = 1, accumulate: bool = False, line: int = 16) -> str:
    # accumulate first, as the pipelines run it: a piece whose running sum it carries as a whole
    # chunk keeps the chunk's width
    first = "accumulate{where=all}," if accumulate else ""
    plan = f"plan{{xblock={xblock},max_rblock={chunk},chunk={chunk}}}"
    rows = ",vector_rows=true" if line == 128 else ""  # rows on 16 bytes off a line split too
    return f"{plan},{first}align-rows{{narrow=true,line={line}{rows}}},canonicalize,peel,canonicalize,cse,dce"


@settings(max_examples=examples(6), deadline=None)
@given(
    name=st.sampled_from(sorted(FUNCTIONS)),
    rows=st.integers(2, 5),  # (a single row is a kernel without rows)
    cols=st.sampled_from([257, 1000, 1001, 1100, 1536, 3001]),
    chunk=st.sampled_from([64, 256]),
    accumulate=st.booleans(),
    line=st.sampled_from([16, 128]),
)
# eight rows: every misalignment 0-7 once. Rows of 257 in chunks of 64 with a head of 7 leave no
# rest at all (the rest's vectors and the last partial vector are empty loops); rows of 1001
# with a head of 7 end on a vector boundary (no partial vector); the rest of rows of 1100 spans
# at most 72 columns (a tile of 128 for chunks of 256) or 8 (a tile of one vector for chunks of 64)
@example(name="softmax", rows=8, cols=257, chunk=64, accumulate=False, line=16)
@example(name="cross_entropy_grad", rows=8, cols=1001, chunk=64, accumulate=False, line=16)
@example(name="rmsnorm", rows=8, cols=3001, chunk=256, accumulate=False, line=16)
@example(name="rmsnorm", rows=8, cols=1100, chunk=256, accumulate=True, line=16)
@example(name="cross_entropy_grad", rows=8, cols=1100, chunk=64, accumulate=True, line=16)
# on 128-byte lines (64 bf16 elements): rows of 1001 take every head 0-63 over 64 rows, rows of
# 1000 (on 16 bytes, off a line) heads 0, 40, 16, 56, ..., rows of 257 in chunks of 64 a first
# piece that can hold the whole row but for its last partial vector
@example(name="softmax", rows=64, cols=1001, chunk=64, accumulate=False, line=128)
@example(name="cross_entropy_grad", rows=8, cols=1000, chunk=256, accumulate=True, line=128)
@example(name="rmsnorm", rows=8, cols=1000, chunk=64, accumulate=False, line=128)
@example(name="softmax", rows=5, cols=257, chunk=64, accumulate=True, line=128)
@example(name="cross_entropy_grad", rows=2, cols=1536, chunk=64, accumulate=False, line=128)  # chunks of a line
def test_aligned_chunks_equal_eager(name: str, rows: int, cols: int, chunk: int, accumulate: bool, line: int) -> None:
    inputs = _inputs(name, rows, cols)
    pipeline = _pipeline(chunk, accumulate=accumulate, line=line)
    got, _, kernels = run_chain(FUNCTIONS[name], inputs, pipeline=pipeline)
    split = cols % (8 if line == 16 else 64) != 0  # 1536 bf16 rows start on lines already
    hinted = [op for k in kernels for op in k.walk() if isinstance(op, AssumeMultipleOp)]
    assert bool(hinted) == split, (name, cols)
    widths = {op.attr("end") for k in kernels for op in k.walk() if op.name == "tile.arange"}
    assert (8 in widths) == split, (name, cols)  # the last partial vector (and first): tiles of 8
    if line == 128 and chunk != 64:
        assert (64 in widths) == split, (name, cols)  # the first piece: a tile of a line
    want = FUNCTIONS[name](*[t.float() if t.is_floating_point() else t for t in inputs])
    assert_close(got.float().reshape(want.shape), want, torch.bfloat16, what=f"{name} {rows}x{cols} chunk {chunk}")


def test_the_chunks_between_head_and_rest_are_unmasked() -> None:
    """Four loops per row loop: the first chunk (one step: canonicalize inlines it), the chunks
    between it and the rest unmasked, the rest's whole vectors masked at the last aligned column
    (a bound the code generator is told is a multiple of the vector), the last partial vector
    masked at the row's end."""
    _, _, (kernel,) = run_chain(softmax, _inputs("softmax", 3, 3001), pipeline=_pipeline(256))
    loops = [op for op in kernel.body.ops if isinstance(op, ForOp)]
    loads = [[op for op in loop.body.walk() if op.name == "tile.load"] for loop in loops]
    assert len(loops) == 6  # two row loops (the max and sum, then the output), three loops left each
    assert [all(op.mask is None for op in ld) for ld in loads] == [True, False, False] * 2

    def vector_bound(loop: ForOp) -> bool:
        cmps = [op for op in loop.body.walk() if op.name == "tile.cmp"]
        return any(isinstance(defining_op(op.operands[1]), AssumeMultipleOp) for op in cmps)

    assert [vector_bound(loop) for loop in loops] == [False, True, False] * 2
    assert [loop.lower for loop in loops[1:3]] == [loops[0].upper, loops[1].upper]  # one after another


def test_the_rest_of_a_row_is_read_in_vectors(tmp_path) -> None:
    """Compiled for sm_90 (pointers 16-byte aligned, as Triton specializes them at launch), the
    softmax of rows of 50257 reads and writes the chunks between the first piece and the rest in
    16-byte vectors, and the rest's whole vectors (a tile of 2048: the rest spans at most 1096
    columns) in vectors of what a thread holds of it. Only the first piece (up to the first
    128-byte line: a tile of 64) and the last partial vector (a tile of 8) are read and written
    an element at a time."""
    import collections
    import re

    from triton_ptx import triton_ptx

    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline

    # enough rows that Inductor keeps one kernel (compiled only: nothing runs)
    (k,) = capture(softmax, [torch.randn(4096, 50257).bfloat16()], strict=True)
    assert isinstance(k.result, Lowered)
    module = parse(print_kernel(k.result.kernel))
    run_pipeline(module, "triton-default")
    kernel = module.kernels[0]
    ranges = sorted({op.attr("end") for op in kernel.walk() if op.name == "tile.arange"})
    assert ranges == [1, 8, 64, 2048, kernel.constexprs["RBLOCK"]], ranges
    counts = collections.Counter(re.findall(r"(?:ld|st)\.global[.:\w]*", triton_ptx(kernel, tmp_path)))

    def count(kind: str, width: str) -> int:
        return sum(n for ins, n in counts.items() if ins.startswith(kind) and width in ins)

    threads = 32 * kernel.launch.num_warps
    per_chunk = kernel.constexprs["RBLOCK"] * 2 // (16 * threads)  # 16-byte vectors a thread
    assert per_chunk >= 1
    # the middle chunks: once per row loop (loads), once in the output loop (stores)
    assert count("ld.global", ".v4.") == 2 * per_chunk and count("st.global", ".v4.") == per_chunk, counts
    # the rest: 2048 bf16 over the threads, 4 a thread here, so 8-byte vectors
    assert 2048 // threads == 4
    assert count("ld.global", ".v2.") == 2 and count("st.global", ".v2.") == 1, counts
    # one element a thread for each of the first piece and the last vector: their stores
    assert count("st.global", ".b16") == 2, counts


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("cols", [1001, 1100])  # 1100: the rest a tile of 128, not a chunk
def test_emitted_triton_reads_aligned_chunks(dynamic: bool, cols: int) -> None:
    inputs = _inputs("cross_entropy_grad", 4, cols)
    got, _, _ = run_chain(cross_entropy_grad, inputs, dynamic=dynamic, pipeline=_pipeline(256), triton=True)
    want = cross_entropy_grad(*[t.float() if t.is_floating_point() else t for t in inputs])
    assert_close(got.float().reshape(want.shape), want, torch.bfloat16)


def test_rows_of_several_per_program_are_left() -> None:
    _, _, (kernel,) = run_chain(softmax, _inputs("softmax", 8, 1001), pipeline=_pipeline(256, xblock=2))
    assert not any(isinstance(op, AssumeMultipleOp) for op in kernel.walk())


def test_a_piece_whose_running_sum_accumulate_carries_keeps_the_chunk_width() -> None:
    """RMSNorm's sum of squares, carried by `accumulate` as a whole chunk from one piece to the
    next, leaves the first pass's pieces chunk-wide (the remark says so); its output loop, which
    carries nothing, is narrowed."""
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.passes.base import collecting_remarks

    (k,) = capture(rmsnorm, [torch.randn(8, 1100).bfloat16()], strict=True)
    assert isinstance(k.result, Lowered)
    module = parse(print_kernel(k.result.kernel))
    with collecting_remarks() as remarks:
        run_pipeline(module, "plan{xblock=1,max_rblock=256,chunk=256},accumulate{where=all},align-rows{narrow=true}")
    kept = [r.message for r in remarks if r.pass_name == "align-rows"]
    assert kept == [
        "the first vector of a row loop keeps the chunk's width: it carries a tile of the chunk's width",
        "the rest of a row loop keeps the chunk's width: it carries a tile of the chunk's width",
        "the last vector of a row loop keeps the chunk's width: it carries a tile of the chunk's width",
    ], kept
    loops = [op for op in module.kernels[0].body.ops if isinstance(op, ForOp)]
    steps = [defining_op(loop.step).attr("value") for loop in loops]  # type: ignore[union-attr]
    assert steps == [256] * 4 + [8, 256, 128, 8], steps  # the output loop's pieces: 8, chunks, 128, 8


@settings(max_examples=examples(200), deadline=None)
@given(
    rnumel=st.integers(9, 300000),
    vec=st.sampled_from([2, 4, 8, 16]),
    doublings=st.integers(0, 12),
    lines=st.sampled_from([1, 8]),
)
@example(rnumel=50257, vec=8, doublings=10, lines=1)  # chunks of 8192: the rest spans at most 1096 columns
@example(rnumel=1100, vec=8, doublings=6, lines=1)  # the golden test's: chunks of 512, a rest of 72 at most
@example(rnumel=1100, vec=8, doublings=6, lines=8)  # align_rows_lines.tile's: heads 0, 4, ..., 60; 72 at most
@example(rnumel=1000, vec=8, doublings=6, lines=8)  # on 16 bytes, off a line: up to 480, the chunk of 512
def test_the_rest_tile_covers_the_rest_at_every_misalignment(rnumel: int, vec: int, doublings: int, lines: int) -> None:
    """The rest's tile is a power of two, at least a vector, no narrower than what the rest spans
    at any misalignment a row can have (its loop then takes one step), and never wider than a
    chunk; the whole chunks starting on a vector or on a line of `lines` vectors."""
    from tilec.passes.align_rows import _rest_width

    line = vec * lines
    chunk = max(vec << doublings, line)
    assume(rnumel > chunk)  # align-rows takes loops of more than one chunk only
    width = _rest_width(rnumel, vec, chunk, line)
    assert width >= vec and width & (width - 1) == 0
    spans = []
    for row in range(line):  # row r is shifted to [head, rnumel + head), head = r * rnumel % line
        head = row * rnumel % line
        end = rnumel + head
        done = line  # past the first piece, whole chunks while they fit inside the row
        while done + chunk <= end:
            done += chunk
        spans.append(end // vec * vec - done)  # the rest: up to the last whole vector
    assert max(spans) <= width
    assert width < 2 * max(max(spans), vec)  # no wider than the rounding up needs
    assert max(spans) < chunk and width <= chunk  # the rest is less than a chunk: never a wider tile


def test_a_kernel_whose_row_loop_reads_nothing_keeps_chunk_wide_pieces() -> None:
    """examples/cross_entropy_backward.py at GPT-2's vocabulary (8192x50257) in chunks of 32768
    over 32 warps, one of the autotuner's plans: its first loop reads none of the row, and with
    narrow end pieces beside it Triton laid that loop out a whole chunk a thread (a compile that
    had not ended after five minutes). The rows are aligned all the same, every piece keeps the
    chunk's width, and the remark says why. The Triton pipeline computes that loop's sum from the
    label first (`onehot-sums`): then the loop is gone and the pieces are narrow, with no remark.
    (tests/inductor/test_candidates_compile.py compiles the kernel at every plan the autotuner
    times.)"""
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.frontend.entry import load_entry, make_inputs
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.passes.align_rows import READLESS
    from tilec.passes.base import collecting_remarks
    from tilec.passes.pipelines import with_plan

    target = load_entry(str(ROOT / "examples" / "cross_entropy_backward.py"))
    (k,) = capture(target.func, make_inputs(target, (8192, 50257), torch.bfloat16), strict=True)
    assert isinstance(k.result, Lowered)
    pipeline = with_plan("triton-default", "xblock=1,chunk=32768,num_warps=32")
    assert "onehot-sums," in pipeline
    module = parse(print_kernel(k.result.kernel))
    with collecting_remarks() as remarks:
        run_pipeline(module, pipeline.replace("onehot-sums,", ""))
    assert [r.message for r in remarks if r.pass_name == "align-rows"] == [READLESS]
    kernel = module.kernels[0]
    assert {op.attr("end") for op in kernel.walk() if op.name == "tile.arange"} == {1, 32768}
    assert any(isinstance(op, AssumeMultipleOp) for op in kernel.walk())  # aligned all the same
    module = parse(print_kernel(k.result.kernel))
    with collecting_remarks() as remarks:
        run_pipeline(module, pipeline)
    assert not [r.message for r in remarks if r.pass_name in ("align-rows", "onehot-sums")]
    kernel = module.kernels[0]
    # the first piece a line wide (64), the last vector 8 (the rest may span up to a chunk: 32768 wide)
    assert {op.attr("end") for op in kernel.walk() if op.name == "tile.arange"} == {1, 8, 64, 32768}


# -- rows of symbolic length (`torch.compile(dynamic=True)`): one kernel for every length


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float()).to(x.dtype)


SYMBOLIC = {"softmax": softmax, "rmsnorm": rmsnorm, "layernorm": layernorm}
# a survey plan (bench/symbolic_survey.py), and plans of small chunks the interpreter runs quickly
SURVEYED = "xblock=1,rblock=1024,num_warps=4,lanes_reread=true"


@functools.cache
def _symbolic(name: str, pipeline: str) -> tuple[Any, Any]:
    """`name`'s kernel traced with every size symbolic (its rows and row length the kernel's
    `xnumel` and `rnumel`), after `pipeline`."""
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline

    (k,) = capture(SYMBOLIC[name], _symbolic_inputs(name, 4, 1001), dynamic="all", strict=True)
    assert isinstance(k.result, Lowered) and k.result.rnumel is None
    assert set(k.result.sizes) == {"xnumel", "rnumel"}
    module = parse(print_kernel(k.result.kernel))
    run_pipeline(module, pipeline)
    return k.result, module.kernels[0]


def _symbolic_inputs(name: str, rows: int, cols: int) -> list[torch.Tensor]:
    torch.manual_seed(rows * 1000 + cols)
    x = (torch.randn(rows, cols) * 3).bfloat16()
    if name != "layernorm":
        return [x]
    return [x + 1, torch.randn(cols).bfloat16(), torch.randn(cols).bfloat16()]


def _run_symbolic(name: str, pipeline: str, rows: int, cols: int, triton: bool = False) -> None:
    lowered, kernel = _symbolic(name, pipeline)
    inputs = _symbolic_inputs(name, rows, cols)
    tensors = iter(inputs)
    out = torch.full((rows, cols), float("nan")).bfloat16()
    args = [out if a.is_written else next(tensors) for a in lowered.args]
    sizes = [{"xnumel": rows, "rnumel": cols}[s] for s in lowered.sizes]
    if triton:
        from tilec.emit.triton import emit_triton
        from tilec.runtime import load_source

        load_source(emit_triton(kernel).source, interpret=True).launch(*args, *sizes, num_sms=4)
    else:
        interp.run(kernel, *args, *sizes)
    want = SYMBOLIC[name](*[t.float() for t in inputs])
    assert_close(out.float(), want, torch.bfloat16, what=f"{name} {rows}x{cols} after {pipeline}")


@settings(max_examples=examples(12), deadline=None)
@given(
    name=st.sampled_from(sorted(SYMBOLIC)),
    rows=st.integers(1, 5),
    cols=st.integers(1, 700),
    chunk=st.sampled_from([64, 256]),
    accumulate=st.booleans(),
)
# rows shorter than a vector, than the first vector plus a chunk, exactly a chunk, aligned, and
# eight rows of a length whose misalignments take every value 0-7
@example(name="softmax", rows=3, cols=5, chunk=64, accumulate=True)
@example(name="rmsnorm", rows=2, cols=70, chunk=64, accumulate=False)
@example(name="layernorm", rows=2, cols=256, chunk=256, accumulate=True)
@example(name="softmax", rows=4, cols=512, chunk=64, accumulate=False)
@example(name="layernorm", rows=8, cols=697, chunk=64, accumulate=False)
def test_rows_of_symbolic_length_equal_eager_at_every_length(
    name: str, rows: int, cols: int, chunk: int, accumulate: bool
) -> None:
    """One kernel, traced at 4x1001, split by align-rows whatever the length: at lengths shorter
    than a vector, with no whole chunk, aligned or not, it computes what eager PyTorch computes
    (tilec's interpreter checks the alignment promises the pieces make)."""
    _run_symbolic(name, _pipeline(chunk, accumulate=accumulate), rows, cols)


@pytest.mark.parametrize("name", sorted(SYMBOLIC))
def test_the_surveyed_plan_of_rows_of_symbolic_length_equals_eager(name: str) -> None:
    """The Triton pipeline with a plan bench/symbolic_survey.py times (chunks of 1024 over 4 warps,
    the statistics per lane), in tilec's interpreter and as emitted Triton in Triton's, at lengths
    below a chunk, of one chunk and of several, aligned and not."""
    from tilec.passes.pipelines import with_plan

    pipeline = with_plan("triton-default", SURVEYED)
    for rows, cols in ((3, 7), (2, 1024), (5, 1000), (2, 3001)):
        _run_symbolic(name, pipeline, rows, cols)
    for rows, cols in ((3, 1001), (2, 2048)):
        _run_symbolic(name, pipeline, rows, cols, triton=True)


def test_rows_of_symbolic_length_are_read_in_vectors(tmp_path) -> None:
    """Compiled for sm_90, softmax over rows of symbolic length reads and writes the chunks past
    the first vector in 16-byte vectors (before align-rows took symbolic lengths, every access
    of it was a 2-byte one), and keeps each lane's maximum over the chunks (`accumulate`): no
    reduction across the warps inside a loop."""
    import collections
    import re

    from triton_ptx import triton_ptx

    from tilec.ir.ops import ReduceOp
    from tilec.passes.pipelines import with_plan

    _, kernel = _symbolic("softmax", with_plan("triton-default", SURVEYED))
    for loop in (op for op in kernel.walk() if isinstance(op, ForOp)):
        assert not any(isinstance(op, ReduceOp) for op in loop.body.walk()), loop
    counts = collections.Counter(re.findall(r"(?:ld|st)\.global[.:\w]*", triton_ptx(kernel, tmp_path)))
    vectors = {ins: n for ins, n in counts.items() if ".v4." in ins}
    assert sum(n for ins, n in vectors.items() if ins.startswith("ld")) >= 3, counts  # the max, sum, output loops
    assert sum(n for ins, n in vectors.items() if ins.startswith("st")) >= 1, counts


def test_a_build_with_plans_for_shorter_rows_launches_each_in_its_range() -> None:
    """The hook's build of a kernel over rows of symbolic length whose rule gives its shorter rows
    plans of their own: a variant of the Triton pipeline with each plan, and the wrapper's
    definition passes the row length's argument, the lengths and the variants (`split`,
    `shorter`), which the launcher reads; on the CPU every variant runs in Triton's interpreter,
    each on the rows of its range, and equals eager."""
    from tilec.inductor.build import build
    from tilec.inductor.wrapper import definition
    from tilec.passes.pipelines import with_plan
    from tilec.runtime.launch import load_kernel

    lowered, _ = _symbolic("softmax", "triton-default")
    tiny, short = (
        "xblock=1,rblock=128,num_warps=1,lanes_reread=true",
        "xblock=1,rblock=256,num_warps=1,lanes_reread=true",
    )
    built = build(lowered, "triton", "cpu", SURVEYED, shorter=((tiny, 512), (short, 2048)))
    names = [a.param for a in lowered.args] + list(lowered.sizes)
    assert built.split == (names.index("rnumel"), (512, 2048))
    assert built.primary.pipeline == with_plan("triton-default", SURVEYED)
    assert [v.pipeline for v in built.shorter] == [with_plan("triton-default", p) for p in (tiny, short)]
    assert built.fallback is None
    with pytest.raises(ValueError, match="ascend"):
        build(lowered, "triton", "cpu", SURVEYED, shorter=((short, 2048), (tiny, 512)))
    text = definition("k", built)
    scope: dict[str, Any] = {}
    exec(compile(f"kernel = {text}", "<wrapper>", "exec"), scope)  # the wrapper's line, as written
    kernel = scope["kernel"]
    assert kernel.split == built.split and len(kernel.shorter) == 2
    with pytest.raises(ValueError, match="one variant per length"):
        load_kernel("k", built.primary.source, "triton", built.primary.order, device="cpu", split=(0, (512, 2048)))
    runs = {}
    for rows, cols in ((3, 300), (2, 1001), (2, 2048), (2, 2500)):
        x = _symbolic_inputs("softmax", rows, cols)[0]
        out = torch.full((rows, cols), float("nan")).bfloat16()
        sizes = {"xnumel": rows, "rnumel": cols}
        before = dict(kernel.launches)
        kernel.run(*[out if a.is_written else x for a in lowered.args], *[sizes[s] for s in lowered.sizes])
        (runs[cols],) = [role for role, n in kernel.launches.items() if n > before[role]]
        assert_close(out.float(), softmax(x.float()), torch.bfloat16, what=f"{rows}x{cols}")
    assert runs == {300: "below 512", 1001: "below 2048", 2048: "primary", 2500: "primary"}
