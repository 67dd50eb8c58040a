"""On the GPU: rows whose length is no multiple of 16 bytes (GPT-2's vocabulary, 50257 bf16
logits), one per program, read in chunks from the aligned address below each row's start
(`align-rows`): softmax, and cross-entropy's forward and its backward of the logits (its one-hot
sum from the label: `onehot-sums`), equal eager with each emitter."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from gpu_support import check_taken

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]

V = 50257


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), labels)


def cross_entropy_grad(logits: torch.Tensor, labels: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The backward of the logits as AOT autograd writes it: softmax minus one-hot, scaled."""
    lsm = torch.log_softmax(logits.float(), -1)
    grad = torch.ops.aten.nll_loss_backward(scale, lsm, labels, None, 1, -100, scale * 300)
    return torch.ops.aten._log_softmax_backward_data(grad, lsm, -1, torch.float32).to(logits.dtype)


def cases() -> dict[str, tuple]:
    g = torch.Generator(device="cuda").manual_seed(0)
    logits = torch.randn(333, V, device="cuda", dtype=torch.bfloat16, generator=g)
    labels = torch.randint(0, V, (333,), device="cuda", generator=g)
    labels[::5] = -100
    return {
        "softmax": (softmax, [logits]),
        "cross-entropy": (cross_entropy, [logits, labels]),
        "cross-entropy-grad": (cross_entropy_grad, [logits, labels, torch.tensor(1.0, device="cuda")]),
    }


@pytest.mark.parametrize("name", ["softmax", "cross-entropy", "cross-entropy-grad"])
@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_misaligned_rows_equal_eager(emitter: str, name: str) -> None:
    fn, inputs = cases()[name]
    result = check_taken(fn, inputs, name, emitter)
    rows = [r for r in result.records if r.kernel.startswith("triton_red")]
    # align-rows took every row loop, and said nothing: the cross-entropy backward's one-hot sum,
    # whose running chunk-wide sum (`accumulate`) kept the pieces of its first loop a chunk wide,
    # is computed from the label (`onehot-sums`)
    said = [m for r in rows for m in r.remarks if m.startswith("align-rows:")]
    assert rows and said == [], [(r.kernel, r.remarks) for r in rows]


@pytest.mark.parametrize("op", ["softmax", "rmsnorm", "layernorm"])
@pytest.mark.parametrize(("cols", "chunk", "warps"), [(V, 4096, 8), (V, 2048, 8), (V, 4096, 16), (32001, 2048, 8)])
def test_a_row_cached_by_cp_async_equals_the_op(op: str, cols: int, chunk: int, warps: int) -> None:
    """The frontend's kernel through the Gluon pipeline with a plan of one row a program: the
    misaligned row's aligned chunks cached by cp.async (`reuse`), each chunk's copies waited for
    on its own barrier, softmax's statistics kept per lane through the loops (`softmax-lanes`),
    loaded as the hook loads a kernel it took and run twice: equal to the op, with -inf logits and
    a row of -inf only for softmax."""
    from bench_scripts import meta_kernel

    from tilec.emit.gluon import emit_gluon
    from tilec.ir import Module, parse, print_module
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan
    from tilec.runtime.launch import load_kernel
    from tilec.testing import assert_close

    rows = 333
    module = parse(print_module(Module([meta_kernel(op, rows, cols).kernel])))
    plan = f"xblock=1,chunk={chunk},num_warps={warps}"
    run_pipeline(module, with_plan("gluon-default", plan))
    kernel = module.kernels[0]
    assert any(o.name == "tile.async_copy_arrive" for o in kernel.walk()), plan
    if op == "softmax":  # two reductions across the warps a row
        assert not any(o.name == "tile.softmax_reduce" for o in kernel.walk()), plan
    taken = load_kernel(kernel.name, emit_gluon(kernel).source, "gluon", order=list(range(len(kernel.params))))
    g = torch.Generator(device="cuda").manual_seed(cols)
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16, generator=g) * 3
    w, b = (torch.randn(cols, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    xf = x.float()
    if op == "softmax":
        x[:, ::997] = float("-inf")
        x[3] = float("-inf")
        xf = x.float()
        expected, inputs = torch.softmax(xf, -1), (x,)
    elif op == "rmsnorm":
        normed = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16)
        expected, inputs = (normed * w).float(), (x, w)
    else:
        expected, inputs = F.layer_norm(xf, (cols,), w.float(), b.float(), 1e-6), (x, w, b)
    for _ in range(2):
        y = torch.full_like(x, float("nan"))
        taken.run(*inputs, y, stream=torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        assert_close(y.float(), expected.to(torch.bfloat16).float(), torch.bfloat16, what=f"{op} {cols} {plan}")


def test_a_symbolic_row_count_keeps_the_cp_async_cache() -> None:
    """Softmax over rows of 50257 traced with the row count symbolic (the row's length static),
    through the hook with the chooser's plan (the H100's and H200's tables: the Gluon loop, the
    row cached by cp.async): the kernel taken, the chunks cached (no remark that the loop's trip
    count has no bound: a symbolic grid's program ids are bounded by an i32, so a row's
    misalignment is still known to be less than a vector), and equal to eager at two row counts."""
    import tilec
    from tilec.testing import assert_close

    compiled = torch.compile(softmax, fullgraph=True)
    g = torch.Generator(device="cuda").manual_seed(1)
    for rows in (333, 257):
        x = torch.randn(rows, V, device="cuda", dtype=torch.bfloat16, generator=g)
        x[:, ::997] = float("-inf")
        torch._dynamo.mark_dynamic(x, 0)  # the rows symbolic, the row's length not
        assert_close(compiled(x).float(), softmax(x.float()).float(), torch.bfloat16, what=f"softmax {rows}x{V}")
    records = [r for r in tilec.report() if r.kernel.startswith("triton_red")]
    assert records and all(r.taken and r.emitter == "gluon" for r in records), [(r.kernel, r.reason) for r in records]
    said = [m for r in records for m in r.remarks if "nor by cp.async" in m]
    # only the last partial vector's loop stays uncached: its mask ends at the row's end
    assert said and all("its mask does not keep each 16-byte vector whole" in m for m in said), [
        (r.pipeline, r.signature, r.remarks) for r in records
    ]
