"""The fallback audit: a corpus of varied PyTorch functions — norms and softmaxes, pointwise chains,
reductions over other axes than the last, indexing, scans, sorts, arg-reductions, masks, random
numbers — compiled with tilec installed.

On the CPU (tilec's kernels in Triton's interpreter, the rest in Inductor's C++): every output
equals stock torch.compile's (the hook installed, tilec disabled) and eager's, and `tilec.report()`
lists every kernel Inductor generated as taken, or declined with one of the stable reasons of
`tilec.frontend.reasons`; what each function gets is stated below, so a kernel tilec starts or
stops taking shows up here. The same corpus is traced for a fake H100 (nothing runs), where
Inductor generates scans and sorts as kernels too: each is taken or declined with its reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import tilec
from tilec.frontend import Lowered, Unsupported, reasons
from tilec.frontend.capture import capture
from tilec.runtime import loaded_kernels
from tilec.testing import assert_close

TAKEN = "taken"  # every kernel taken
UNTRACEABLE = "untraceable"  # the fake H100 cannot trace it (its fake kernels need a CUDA build of torch)

M, N = 8, 48


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., Any]
    inputs: Callable[[], list[Any]]
    cpu: str = TAKEN  # TAKEN, or the reason of the kernels tilec declines (at least one) on the CPU
    cuda: str = TAKEN  # the same for the fake H100
    stock: dict[str, Any] = field(default_factory=dict)  # Inductor settings for the stock compile
    emulate: bool = False  # Inductor's emulate_precision_casts, for both compiles
    like_eager: bool = True  # False: compiled code computes otherwise than eager (random numbers, roundings)


def randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed * 1000 + sum(shape))
    return torch.randn(shape, generator=gen).to(dtype)


def randint(high: int, *shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed))


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def causal_softmax(x: torch.Tensor) -> torch.Tensor:
    mask = torch.ones(x.shape[-2], x.shape[-1], dtype=torch.bool, device=x.device).triu(1)
    return torch.softmax((x * 0.125).masked_fill(mask, float("-inf")), -1)


def bf16_round_trip(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x > 0, x, 0.1 * x).to(torch.bfloat16).float() * 2


bf16, f16 = torch.bfloat16, torch.float16

CORPUS = [
    # norms and softmaxes: tilec's workloads
    Case("rmsnorm", rmsnorm, lambda: [randn(M, N), randn(N, seed=1)]),
    Case("rmsnorm_bf16", rmsnorm, lambda: [randn(M, N, dtype=bf16), randn(N, dtype=bf16, seed=1)]),
    Case("layer_norm", lambda x, w, b: F.layer_norm(x, (N,), w, b), lambda: [randn(M, N), randn(N), randn(N, seed=1)]),
    Case("layer_norm_3d_f16", lambda x: F.layer_norm(x, (N,)), lambda: [randn(2, M, N, dtype=f16)]),
    Case("softmax", lambda x: torch.softmax(x, -1), lambda: [randn(M, N)]),
    Case("softmax_bf16", lambda x: torch.softmax(x, -1), lambda: [randn(M, N, dtype=bf16)]),
    Case("log_softmax", lambda x: torch.log_softmax(x, -1), lambda: [randn(M, N)]),
    Case("causal_softmax", causal_softmax, lambda: [randn(M, M)]),
    Case("softmax_dim0", lambda x: torch.softmax(x, 0), lambda: [randn(M, N)]),
    Case("l2_normalize", lambda x: F.normalize(x, dim=-1), lambda: [randn(M, N)]),
    Case(
        "group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), lambda: [randn(2, 4, 6, 5), randn(4), randn(4, seed=1)]
    ),
    Case(
        "batch_norm_train",
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        lambda: [randn(6, 4, 5), randn(4), randn(4, seed=1)],
    ),
    # pointwise chains
    Case("gelu_bias", lambda x, b: F.gelu(x + b), lambda: [randn(M, N), randn(N)]),
    Case("swiglu", lambda a, b: F.silu(a) * b, lambda: [randn(M, N), randn(M, N, seed=1)]),
    Case(
        "sigmoid_tanh_clamp",
        lambda x: torch.tanh(torch.sigmoid(x) * 3).clamp(-0.5, 0.5) + x.abs(),
        lambda: [randn(M, N)],
    ),
    # a bf16 round trip (x.to(bf16).float()) inside a kernel: stock Inductor computes it in f32 (no
    # rounding) unless emulate_precision_casts is set, and tilec computes as stock does
    Case("bf16_round_trip", bf16_round_trip, lambda: [randn(M, N)], like_eager=False),
    # with emulate_precision_casts, stock rounds as eager does, and so does tilec
    Case("bf16_round_trip_emulated", bf16_round_trip, lambda: [randn(M, N)], emulate=True),
    Case("flip", lambda x: x.flip(-1) + x, lambda: [randn(M, N)]),
    Case("pad", lambda x: F.pad(x, (2, 3)) * 2, lambda: [randn(M, N)]),  # range masks: `and_`
    Case("strided_slices", lambda x: x[:, ::2] * 2 + x[:, 1::2], lambda: [randn(M, 2 * N)], cuda=UNTRACEABLE),
    Case("masked_fill", lambda x, m: x.masked_fill(m, 0.0) * 3, lambda: [randn(M, N), randn(M, N, seed=1) > 0]),
    # reductions: other axes, other kinds
    Case("sum_dim0", lambda x: x.sum(0), lambda: [randn(M, N)]),
    Case("amax_dim0", lambda x: x.amax(0), lambda: [randn(M, N)]),
    Case("mean_middle_axis", lambda x: x.mean(1), lambda: [randn(3, M, N)]),
    Case("var_dim0", lambda x: x.var(0), lambda: [randn(M, N)]),
    Case("full_sum", lambda x: x.sum(), lambda: [randn(M, N)]),
    Case("vector_norm", lambda x: torch.linalg.vector_norm(x, dim=-1), lambda: [randn(M, N)]),
    Case("logsumexp", lambda x: torch.logsumexp(x, -1), lambda: [randn(M, N)]),
    Case("prod", lambda x: x.prod(-1), lambda: [randn(M, 6)]),
    Case("masked_sum", lambda x, m: torch.where(m, x, 0).sum(-1), lambda: [randn(M, N), randn(M, N, seed=1) > 0]),
    Case("argmax", lambda x: torch.argmax(x * 2, -1), lambda: [randn(M, N)]),
    Case("argmin_dim0", lambda x: torch.argmin(x + 1, 0), lambda: [randn(M, N)]),
    Case(
        "max_with_indices",
        lambda x: torch.max(x, -1),
        lambda: [randn(M, N)],
        cuda=reasons.unsupported_reduction("argmax_with_value"),
    ),
    # indexing: gathers are loads at loaded offsets, checked against the bounds as stock checks them
    Case("gather", lambda x, i: torch.gather(x * 2, 1, i), lambda: [randn(M, N), randint(N, M, 5)]),
    Case("embedding", lambda w, i: F.embedding(i, w) * 2, lambda: [randn(20, N), randint(20, M)]),
    Case(
        "embedding_rmsnorm",
        lambda w, i, g: rmsnorm(F.embedding(i, w), g),
        lambda: [randn(20, N, dtype=bf16), randint(20, M), randn(N, dtype=bf16, seed=1)],
    ),
    Case(
        "negative_index",
        lambda x, i: torch.ops.aten.index.Tensor(x, [i]) * 2,
        lambda: [randn(M, N), torch.tensor([-1, 0, 3, -8, 7])],
    ),
    # a scatter that accumulates: the copy is taken, the accumulation is an atomic add
    Case(
        "index_add",
        lambda x, s, i: x.index_add(0, i, s),
        lambda: [randn(M, N), randn(4, N), torch.tensor([0, 2, 2, 5])],  # a repeated index: atomic adds
    ),
    Case("roll", lambda x: torch.roll(x, 3, -1) * x, lambda: [randn(M, N)], cuda=UNTRACEABLE),
    # scans and sorts: Inductor's C++ backend calls ATen for them (no kernel); on CUDA they are kernels
    Case("cumsum", lambda x: torch.cumsum(x * 2, -1), lambda: [randn(M, N)], cuda=reasons.SCAN),
    Case("sort", lambda x: torch.sort(x * 2, -1).values, lambda: [randn(M, N)], cuda=reasons.SORT),
    # random numbers
    Case(
        "dropout",
        lambda x: F.dropout(x, 0.5, training=True),
        lambda: [randn(M, N)],
        reasons.RANDOM_ON_CPU,
        like_eager=False,
    ),
]
NORMS_AND_SOFTMAXES = {
    "rmsnorm",
    "rmsnorm_bf16",
    "layer_norm",
    "layer_norm_3d_f16",
    "softmax",
    "softmax_bf16",
    "log_softmax",
    "causal_softmax",
    "softmax_dim0",
    "l2_normalize",
    "group_norm",
    "batch_norm_train",
}


def stable_reason(reason: str | None) -> bool:
    """One of tilec.frontend.reasons: a constant, or one of the parametrized forms."""
    if reason is None:
        return False
    constants = {v for k, v in vars(reasons).items() if k.isupper() and isinstance(v, str)}
    if reason in constants:
        return True
    forms = (reasons.unsupported_op, reasons.unsupported_reduction, reasons.unsupported_dtype, reasons.unsupported_node)
    for form in forms:
        head, tail = form("\0").split("\0")
        if re.fullmatch(re.escape(head) + r".+" + re.escape(tail), reason):
            return True
    return False


def outputs(out: Any) -> tuple[Any, ...]:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def check_expectation(name: str, kernels: list[tuple[str, bool, str | None]], expect: str) -> None:
    """kernels: (name, taken, reason) per kernel generated."""
    assert kernels, f"{name}: no kernel generated"
    for kernel, taken, reason in kernels:
        assert taken or stable_reason(reason), f"{name}: {kernel} declined without a stable reason: {reason!r}"
    declined = {reason for _, taken, reason in kernels if not taken}
    if expect == TAKEN:
        assert not declined, f"{name}: {kernels}"
    else:
        assert declined == {expect}, f"{name}: {kernels}"


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.name)
def test_cpu_outputs_equal_stock_and_every_kernel_is_accounted_for(case: Case) -> None:
    inputs = case.inputs()
    torch.manual_seed(0)  # the same random numbers for every run (dropout)
    eager = outputs(case.fn(*inputs))
    both = {"emulate_precision_casts": case.emulate}
    with tilec.config.patch(enabled=False), torch._inductor.config.patch({**both, **case.stock}):
        torch.manual_seed(0)
        stock = outputs(torch.compile(case.fn, dynamic=False, fullgraph=True)(*inputs))
    torch._dynamo.reset()
    tilec.reset_report()
    torch.manual_seed(0)
    with torch._inductor.config.patch(both):
        outs = outputs(torch.compile(case.fn, backend="tilec", dynamic=False, fullgraph=True)(*inputs))
    records = tilec.report()

    assert len(outs) == len(stock) == len(eager)
    for i, (o, s, e) in enumerate(zip(outs, stock, eager)):
        assert o.dtype == s.dtype == e.dtype and o.shape == s.shape, (case.name, i)
        assert_close(o, s, what=f"{case.name} output {i} (against stock torch.compile)")
        if case.like_eager:
            assert_close(o, e, what=f"{case.name} output {i} (against eager)")

    check_expectation(case.name, [(r.kernel, r.taken, r.reason) for r in records], case.cpu)
    for rec in records:
        if rec.taken:  # taken means tilec's launcher ran it
            assert (rec.emitter, rec.device) == ("triton", "cpu"), rec
            assert sum(k.launches["primary"] for k in loaded_kernels(rec.kernel)) >= 1, rec
        else:  # and declined means Inductor's C++ code generation made it
            assert rec.kernel.startswith("cpp_"), rec
    if case.name in NORMS_AND_SOFTMAXES:
        assert all(r.taken for r in records)


@pytest.mark.parametrize("case", [c for c in CORPUS if c.cuda != UNTRACEABLE], ids=lambda c: c.name)
def test_fake_h100_kernels_are_taken_or_declined_with_a_reason(case: Case) -> None:
    kernels = capture(case.fn, case.inputs())
    found = [
        (k.name, isinstance(k.result, Lowered), k.result.reason if isinstance(k.result, Unsupported) else None)
        for k in kernels
    ]
    check_expectation(case.name, found, case.cuda)


def test_the_corpus() -> None:
    assert len(CORPUS) >= 30 and len({c.name for c in CORPUS}) == len(CORPUS)
    assert {c.name for c in CORPUS} >= NORMS_AND_SOFTMAXES
    assert all(stable_reason(c.cpu) for c in CORPUS if c.cpu != TAKEN)
    assert not stable_reason("tilec failed: RuntimeError: boom") and stable_reason(reasons.unsupported_op("sin"))
