"""onehot-sums: the cross-entropy backward's sum of its one-hot gradient over each row, computed
from the label once a row, gives what the loop over the row gave (bit for bit: the loop adds
zeros to the one value; with label smoothing, equal up to rounding) and what torch computes —
labels ignored (-100) and out of the row included, the scale finite, infinite or NaN, rows aligned and not (align-rows' pieces), in tilec's
interpreter and as emitted Triton in Triton's interpreter; the load-free loop is gone, so the
logits' loop gets align-rows' narrow first and last pieces."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from profiles import examples

from examples import assert_forms_agree, run_chain
from tilec.ir.ops import ForOp
from tilec.testing import assert_close


def ce_grad(logits: torch.Tensor, scale: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The loss's backward as AOT autograd writes it when the forward saved nothing: one kernel
    whose first loop carries the one-hot sum beside the logits' softmax statistics."""
    lsm = torch.log_softmax(logits.float(), -1)
    grad = torch.ops.aten.nll_loss_backward(scale, lsm, labels, None, 1, -100, scale * 3)
    return torch.ops.aten._log_softmax_backward_data(grad, lsm, -1, torch.float32).to(logits.dtype)


def ce_saved(logits: torch.Tensor, labels: torch.Tensor, lse: torch.Tensor) -> torch.Tensor:
    """The backward with the forward's log-sum-exp saved (examples/cross_entropy_backward.py): the
    one-hot sum's loop reads nothing of the row."""
    x = logits.float()  # the arguments used in their order: the graph's inputs' (run_chain's)
    hit = torch.arange(x.shape[1], device=x.device).unsqueeze(0) == labels.unsqueeze(1)
    grad = hit.float() * -0.5
    return (grad - torch.exp(x - lse.unsqueeze(1)) * grad.sum(1, keepdim=True)).to(logits.dtype)


def ce_smoothed(logits: torch.Tensor, scale: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """With label smoothing (0.1 of the target spread over the row, as `F.cross_entropy`'s
    `label_smoothing` has it): the one-hot's gradient scaled by 0.9 plus one value a column for
    every row not ignored, so f(false) is not 0 and the closed form's n·f(false) rounds otherwise
    than the loop's sum."""
    lsm = torch.log_softmax(logits.float(), -1)
    grad = torch.ops.aten.nll_loss_backward(scale, lsm, labels, None, 1, -100, scale * 3) * 0.9
    kept = (labels != -100).float().unsqueeze(1)  # (after the arguments' first uses, in their order)
    grad = grad - kept * (0.1 / logits.shape[1]) * scale / 3
    return torch.ops.aten._log_softmax_backward_data(grad, lsm, -1, torch.float32).to(logits.dtype)


FUNCTIONS = {"ce_grad": ce_grad, "ce_saved": ce_saved, "ce_smoothed": ce_smoothed}


def _inputs(name: str, rows: int, cols: int, scale: float, outside: bool) -> list[torch.Tensor]:
    torch.manual_seed(rows * 1000 + cols)
    x = torch.randn(rows, cols).bfloat16()
    labels = torch.randint(0, cols, (rows,))
    labels[::3] = -100
    if outside:  # labels no column matches (the loss rejects them; the kernel must not count them)
        labels[1] = cols
        labels[-1] = -7
    if name in ("ce_grad", "ce_smoothed"):
        return [x, torch.tensor(scale), labels]
    return [x, labels, torch.randn(rows) + 3.0]


def _pipeline(chunk: int, xblock: int, onehot: bool) -> str:
    first = "onehot-sums," if onehot else ""
    plan = f"plan{{xblock={xblock},max_rblock={chunk},chunk={chunk}}}"
    return f"{first}{plan},align-rows{{narrow=true}},canonicalize,peel,canonicalize,cse,dce"


@settings(max_examples=examples(8), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.sampled_from(sorted(FUNCTIONS)),
    rows=st.integers(3, 9),
    cols=st.sampled_from([257, 1000, 1001, 3001]),
    chunk=st.sampled_from([64, 256]),
    xblock=st.sampled_from([1, 2]),
    scale=st.sampled_from([1.0, 0.25, float("inf"), float("nan")]),
    outside=st.booleans(),
)
@example(name="ce_saved", rows=8, cols=1001, chunk=64, xblock=1, scale=1.0, outside=True)  # every misalignment
@example(name="ce_grad", rows=8, cols=3001, chunk=256, xblock=1, scale=float("inf"), outside=False)
@example(name="ce_grad", rows=5, cols=1000, chunk=64, xblock=2, scale=0.25, outside=True)
@example(name="ce_smoothed", rows=6, cols=1001, chunk=256, xblock=1, scale=1.0, outside=False)
def test_the_sums_equal_the_loops_and_eager(
    name: str, rows: int, cols: int, chunk: int, xblock: int, scale: float, outside: bool
) -> None:
    inputs = _inputs(name, rows, cols, scale, outside)
    fn = FUNCTIONS[name]
    got, _, (kernel,) = run_chain(fn, inputs, pipeline=_pipeline(chunk, xblock, onehot=True))
    loop_form, _, (looped,) = run_chain(fn, inputs, pipeline=_pipeline(chunk, xblock, onehot=False))
    if name == "ce_smoothed":  # n·f(false) against n additions of it: equal up to rounding
        assert_forms_agree({"out": got}, {"out": loop_form})
    else:  # bit for bit: the loop added zeros (or NaN) to the one value the closed form takes
        torch.testing.assert_close(got, loop_form, rtol=0, atol=0, equal_nan=True)
    loops = [op for op in kernel.walk() if isinstance(op, ForOp)]
    # the one-hot sum is carried by no loop (each of align-rows' pieces carried one), where the
    # row is a loop (rows of 257 are one tile: Inductor's persistent reduction, nothing to take)
    carried = sum(len(op.inits) for op in looped.walk() if isinstance(op, ForOp))
    assert sum(len(loop.inits) for loop in loops) < carried or (cols == 257 and carried == 0)
    # no loop over the row is left that loads none of it
    assert all(any(op.name == "tile.load" for op in loop.body.walk()) for loop in loops)
    if not outside and scale == scale and abs(scale) != float("inf"):
        want = fn(*[t.float() if t.is_floating_point() else t for t in inputs])
        assert_close(got.float(), want, torch.bfloat16, what=f"{name} {rows}x{cols} chunk {chunk}")


def test_the_emitted_triton_kernel_equals_eager() -> None:
    """Rows of 1001 (misaligned: align-rows' pieces, now narrow), the Triton pipeline's passes:
    the emitted kernel equals eager in Triton's interpreter, and the kernel has one loop left (the
    logits') with a first and last piece a vector wide."""
    inputs = _inputs("ce_saved", 4, 1001, 1.0, outside=False)
    pipeline = _pipeline(256, 1, onehot=True)
    got, _, (kernel,) = run_chain(ce_saved, inputs, pipeline=pipeline, triton=True)
    want = ce_saved(*[t.float() if t.is_floating_point() else t for t in inputs])
    assert_close(got.float(), want, torch.bfloat16, what="emitted Triton")
    widths = sorted({op.attr("end") for op in kernel.walk() if op.name == "tile.arange"})
    assert 8 in widths, widths  # the first and last vectors as tiles of 8


@pytest.mark.parametrize("dynamic", [True, "all"])
@pytest.mark.parametrize("name", ["ce_saved", "ce_grad"])
def test_symbolic_sizes_too(name: str, dynamic: bool | str) -> None:
    """Traced with a symbolic row count (`True`) and a symbolic row length as well (`"all"`: the
    loop's bound and the column mask's a parameter): the one-hot sum still leaves every loop, and
    the kernel gives what the loop gave, bit for bit."""
    inputs = _inputs(name, 5, 1001, 1.0, outside=True)
    fn = FUNCTIONS[name]
    got, _, (kernel,) = run_chain(fn, inputs, dynamic=dynamic, pipeline=_pipeline(256, 1, onehot=True))
    loop_form, _, (looped,) = run_chain(fn, inputs, dynamic=dynamic, pipeline=_pipeline(256, 1, onehot=False))
    torch.testing.assert_close(got, loop_form, rtol=0, atol=0, equal_nan=True)
    carried = sum(len(op.inits) for op in looped.walk() if isinstance(op, ForOp))
    assert sum(len(op.inits) for op in kernel.walk() if isinstance(op, ForOp)) < carried


def test_the_backward_reads_and_writes_the_logits_in_vectors(tmp_path: Path) -> None:
    """examples/cross_entropy_backward.py at GPT-2's vocabulary (4096x50257) through the Triton
    pipeline, compiled for sm_90: with the one-hot sum from the label, the logits' loop is the
    kernel's only one and align-rows narrows its pieces — the whole chunks read and written in
    16-byte vectors, the rest (a tile of 2048) in vectors of what a thread holds of it, and only
    the first piece (up to a 128-byte line: a tile of 64) and the last partial vector (a tile of
    8) an element at a time. Without the pass the
    load-free loop kept every piece a chunk wide: 32 two-byte reads and writes a thread there."""
    import collections
    import re

    from triton_ptx import triton_ptx

    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.frontend.entry import load_entry, make_inputs
    from tilec.ir import parse, print_kernel
    from tilec.passes import NAMED_PIPELINES, run_pipeline

    target = load_entry(str(Path(__file__).resolve().parents[2] / "examples" / "cross_entropy_backward.py"))
    (k,) = capture(target.func, make_inputs(target, (4096, 50257), torch.bfloat16), strict=True)
    assert isinstance(k.result, Lowered)
    pipeline = NAMED_PIPELINES["triton-default"]
    assert "onehot-sums," in pipeline

    def accesses(pipeline: str, workdir: Path) -> tuple[list[int], int, collections.Counter[str]]:
        module = parse(print_kernel(k.result.kernel))
        run_pipeline(module, pipeline)
        kernel = module.kernels[0]
        ranges = sorted({op.attr("end") for op in kernel.walk() if op.name == "tile.arange"})
        workdir.mkdir()
        ptx = triton_ptx(kernel, workdir)
        per_chunk = kernel.constexprs["RBLOCK"] * 2 // (16 * 32 * kernel.launch.num_warps)
        return ranges, per_chunk, collections.Counter(re.findall(r"(?:ld|st)\.global[.:\w]*", ptx))

    def count(counts: collections.Counter[str], kind: str, width: str) -> int:
        return sum(n for ins, n in counts.items() if ins.startswith(kind) and width in ins)

    ranges, per_chunk, counts = accesses(pipeline, tmp_path / "with")
    assert ranges == [1, 8, 64, 2048, 8192], ranges
    assert count(counts, "ld.global", ".v4.") == count(counts, "st.global", ".v4.") == per_chunk >= 1, counts
    assert count(counts, "ld.global", ".v2.") == count(counts, "st.global", ".v2.") == 1, counts
    assert count(counts, "ld.global", ".b16") == count(counts, "st.global", ".b16") == 2, counts
    ranges, _, counts = accesses(pipeline.replace("onehot-sums,", ""), tmp_path / "without")
    assert ranges == [1, 8192], ranges
    assert count(counts, "st.global", ".b16") == 32, counts


@pytest.mark.parametrize("label", [5, 999, 0, -100, 1000, -7])
@pytest.mark.parametrize("name", ["onehot", "onehot_scalar", "onehot_beside"])
def test_the_golden_kernels_give_what_their_loops_gave(name: str, label: int) -> None:
    """Each kernel tests/passes/onehot_sums.tile rewrites, in tilec's interpreter at a block of 8
    rows and chunks of 64, with the pass and without it, bit for bit: labels inside the row of
    1000, at its ends, ignored and outside it (every row's label where the kernel loads them, one
    for every row where it takes one scalar)."""
    from tilec import interp
    from tilec.ir import parse
    from tilec.passes import run_pipeline

    text = (Path(__file__).resolve().parent / "onehot_sums.tile").read_text()

    def outputs(pipeline: str) -> torch.Tensor:
        module = parse(text)
        if pipeline:
            run_pipeline(module, pipeline)
        (kernel,) = [k for k in module.kernels if k.name == name]
        torch.manual_seed(0)
        labels = torch.full((64,), label, dtype=torch.int64)
        labels[::5] = torch.randint(0, 1000, (13,))
        out = torch.full((64,), float("nan"))
        args: list[object] = [label if name == "onehot_scalar" else labels, 0.75]
        if name == "onehot_beside":
            args.append(torch.randn(64, 1000).bfloat16())
        interp.run(kernel, *args, out, XBLOCK=8, RBLOCK=64)
        return out

    got, want = outputs("onehot-sums"), outputs("")
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert not torch.isnan(got).any()


@pytest.mark.parametrize("label", [5, -100, 1000])
def test_a_label_for_every_row_as_emitted_triton(label: int) -> None:
    """@onehot_scalar (one label for every row, broadcast to the rows' tile) through the Triton
    pipeline, emitted and run in Triton's interpreter: what tilec's interpreter gives for the
    kernel as written."""
    from tilec import interp
    from tilec.emit.triton import emit_triton
    from tilec.ir import parse
    from tilec.passes import run_pipeline
    from tilec.runtime import load_source

    text = (Path(__file__).resolve().parent / "onehot_sums.tile").read_text()
    module = parse(text)
    run_pipeline(module, "triton-default")
    (kernel,) = [k for k in module.kernels if k.name == "onehot_scalar"]
    assert not [op for op in kernel.walk() if isinstance(op, ForOp)]
    got = torch.full((64,), float("nan"))
    load_source(emit_triton(kernel).source, interpret=True).launch(label, 0.75, got)
    (written,) = [k for k in parse(text).kernels if k.name == "onehot_scalar"]
    want = torch.full((64,), float("nan"))
    interp.run(written, label, 0.75, want, XBLOCK=8, RBLOCK=64)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
