"""On the GPU: one kernel serving several sizes. With the rows symbolic (Dynamo's dynamic leading
dimensions, the row length static), each kernel tilec takes is compiled once and launched for
every batch size with its size as an argument, through the launcher's bound path (the grid
recomputed from the size), and equals eager each time. So are kernels with other symbolic sizes:
sums over a symbolic dimension (the weight gradient's sum over tokens), rotary embeddings over a
symbolic sequence, gathers from a table of symbolic length."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from gpu_support import skip_unless_runs

import tilec
from tilec.runtime import loaded_kernels
from tilec.testing import assert_close

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]

EMITTERS = ["gluon", "triton"]
N = 2048
ROWS = (7, 300, 4096, 33, 300)
bf16 = torch.bfloat16


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def layernorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w)


def softmax(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x * w, -1)


def gelu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(x + b, approximate="tanh")


@pytest.mark.parametrize("fn", [rmsnorm, layernorm, softmax, gelu], ids=lambda f: f.__name__)
@pytest.mark.parametrize("emitter", EMITTERS)
def test_one_compile_serves_every_batch(emitter: str, fn) -> None:
    skip_unless_runs(emitter)
    w = torch.randn(N, device="cuda", dtype=bf16)
    with tilec.config.patch(emitter=emitter):
        compiled = torch.compile(fn, dynamic=False, fullgraph=True)
        for rows in ROWS:
            x = torch.randn(rows, N, device="cuda", dtype=bf16)
            torch._dynamo.mark_dynamic(x, 0)
            y = compiled(x, w)
            assert_close(y.float(), fn(x.float(), w.float()), bf16, what=f"{fn.__name__} {rows} rows")
    torch.cuda.synchronize()
    records = tilec.report()
    assert len(records) == 1 and records[0].taken, [(r.kernel, r.reason) for r in records]  # compiled once
    kernel = loaded_kernels(records[0].kernel)[-1]  # this test's (earlier tests may reuse the name)
    assert sum(kernel.launches.values()) == len(ROWS)
    bound = kernel._bound
    assert bound is not None and bound.size_args, "the bound launch path takes the size as an argument"


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return torch.cat((-x.narrow(-1, h, h), x.narrow(-1, 0, h)), dim=-1)


def rope(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return q * cos + rotate_half(q) * sin


def weight_grad(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """RMSNorm's weight gradient: a sum over every token of dy * x-hat."""
    xf = x.float()
    xhat = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (dy.float() * xhat).sum((0, 1))


def middle_sum(x: torch.Tensor) -> torch.Tensor:
    return x.float().sum(1)


def embedding_rmsnorm(ids: torch.Tensor, table: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return rmsnorm(F.embedding(ids, table), w)


def _cuda(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device="cuda", dtype=bf16)


# name: (function, inputs for dimensions (a, b), tolerance dtype); a and b are symbolic
SIZED = {
    "rope": (rope, lambda a, b: [_cuda(a, 16, b, 128), _cuda(a, 1, b, 128), _cuda(a, 1, b, 128)], bf16),
    "weight-grad": (weight_grad, lambda a, b: [_cuda(a, b, N), _cuda(a, b, N)], bf16),
    "middle-sum": (middle_sum, lambda a, b: [_cuda(a, b, 96)], bf16),
    "embedding-rmsnorm": (
        embedding_rmsnorm,
        lambda a, b: [torch.randint(0, 1000 + b, (a, b, 1), device="cuda"), _cuda(1000 + b, N), _cuda(N)],
        bf16,
    ),
}
DIMS = ((2, 1024), (3, 77), (4, 4096), (5, 300))  # no dimension of 1: Dynamo specializes those


@pytest.mark.parametrize("name", list(SIZED))
@pytest.mark.parametrize("emitter", EMITTERS)
def test_one_compile_serves_every_symbolic_size(emitter: str, name: str) -> None:
    skip_unless_runs(emitter)
    fn, make, dtype = SIZED[name]
    with tilec.config.patch(emitter=emitter):
        compiled = torch.compile(fn, dynamic=False, fullgraph=True)
        for dims in DIMS:
            torch.manual_seed(sum(dims))
            inputs = make(*dims)
            for x in inputs:
                for d in range(x.dim() - 1):
                    torch._dynamo.mark_dynamic(x, d)
            y = compiled(*inputs)
            want = fn(*(x.float() if x.is_floating_point() else x for x in inputs))
            assert_close(y.float(), want.float(), dtype, what=f"{name} {dims}")
    torch.cuda.synchronize()
    records = tilec.report()
    assert records and all(r.taken for r in records), [(r.kernel, r.reason) for r in records]
    assert len({r.kernel for r in records}) == len(records)  # compiled once
    sized = [loaded_kernels(r.kernel)[-1] for r in records]
    assert all(sum(k.launches.values()) == len(DIMS) for k in sized)


def scaled_softmax(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float() / s, -1).to(x.dtype)


@pytest.mark.parametrize("emitter", EMITTERS)
def test_a_number_passed_by_value_changes_per_call(emitter: str) -> None:
    """A 0-d CPU tensor a GPU kernel reads (a loss's divisor) is passed as a number (`s.item()`):
    one compiled kernel, launched through the bound path with each call's value."""
    skip_unless_runs(emitter)
    x = torch.randn(300, N, device="cuda", dtype=bf16)
    scales = (3.0, 0.5, -7.25, 0.5)
    with tilec.config.patch(emitter=emitter):
        compiled = torch.compile(scaled_softmax, dynamic=False, fullgraph=True)
        for s in scales:
            y = compiled(x, torch.tensor(s))
            assert_close(y.float(), scaled_softmax(x.float(), torch.tensor(s)), bf16, what=f"s={s}")
    torch.cuda.synchronize()
    records = tilec.report()
    assert len(records) == 1 and records[0].taken, [(r.kernel, r.reason) for r in records]
    kernel = loaded_kernels(records[0].kernel)[-1]
    assert sum(kernel.launches.values()) == len(scales)
    bound = kernel._bound
    assert bound is not None and bound.size_args, "the bound launch path takes the value as an argument"


def plain_softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)


def plain_layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b)


# rows of symbolic length in each range of the H200 table's plans by length (softmax: below 1000,
# 4096 and 16384, from 16384; LayerNorm: below 1000, 16384 and 32768, from 32768), at their
# bounds and past them
LENGTHS = (
    (4096, 256),
    (700, 999),
    (700, 1000),
    (64, 2048),
    (33, 3001),
    (300, 4096),
    (16, 8192),
    (8, 16384),
    (8, 32768),
)


@pytest.mark.parametrize("fn", [plain_softmax, plain_layernorm], ids=lambda f: f.__name__)
def test_rows_of_symbolic_length_take_the_plan_of_their_length(fn) -> None:
    """With every size symbolic (`dynamic=True`: a varying row length) the kernel is compiled once;
    where the GPU's table gives its shorter rows plans of their own (the H200's), each launch takes
    the variant of its row length, and every length, aligned or not, equals eager."""
    skip_unless_runs("triton")
    with tilec.config.patch(emitter="auto"):
        compiled = torch.compile(fn, dynamic=True, fullgraph=True)
        for rows, n in LENGTHS:
            x = torch.randn(rows, n, device="cuda", dtype=bf16) * 3
            extra = [torch.randn(n, device="cuda", dtype=bf16) for _ in range(2)] if fn is plain_layernorm else []
            y = compiled(x, *extra)
            want = fn(x.float(), *[t.float() for t in extra]).to(bf16)
            assert_close(y.float(), want.float(), bf16, what=f"{fn.__name__} {rows}x{n}")
    torch.cuda.synchronize()
    records = tilec.report()
    assert len(records) == 1, [(r.kernel, r.reason) for r in records]
    (record,) = records
    if "H200" not in torch.cuda.get_device_name():
        return  # (the H100's table has no rule for rows of symbolic length: stock keeps them)
    assert record.taken and record.emitter == "triton", record.reason
    kernel = loaded_kernels(record.kernel)[-1]
    assert kernel.split is not None and len(kernel.shorter) >= 1
    expected = {"primary": 0, "fallback": 0} | {f"below {b}": 0 for b in kernel.split[1]}
    for _, n in LENGTHS:
        expected[next((f"below {b}" for b in kernel.split[1] if n < b), "primary")] += 1
    assert kernel.launches == expected, kernel.launches


def test_causal_attention_scores_over_a_varying_sequence_equal_eager() -> None:
    """examples/attention_softmax.py (scores scaled, causally masked, softmaxed in place on the
    matmul's output) with its sequence symbolic: the softmax kernel is one of rows of symbolic
    length (the H200's rule takes it, short and long rows each by their plan), and every sequence,
    aligned or not, equals eager."""
    import sys
    from pathlib import Path

    skip_unless_runs("triton")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import attention_softmax

    compiled = torch.compile(attention_softmax.forward, dynamic=True, fullgraph=True)
    for s in (300, 700, 256, 1001, 4096):
        q, k = (t.cuda() for t in attention_softmax.example_inputs((2, 3, s, s), bf16))
        got = compiled(q, k)
        want = attention_softmax.forward(q.float(), k.float())
        assert_close(got.float(), want, bf16, what=f"attention over {s} keys")
    records = [r for r in tilec.report() if r.signature is not None and r.signature[0] == "softmax"]
    assert len(records) == 1, [(r.kernel, r.reason) for r in tilec.report()]
    if "H200" in torch.cuda.get_device_name():
        assert records[0].taken, records[0].reason
