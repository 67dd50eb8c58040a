"""Gathers and non-affine indexing: the kernels of embeddings, cross-entropy's target gather,
gathered rows and rotary embeddings are lowered (one kernel reading each input once, as stock
Inductor fuses them) and compute what PyTorch computes in tilec's interpreter, bounds checks
included."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples
from test_interp import run_chain, run_kernel

from tilec import interp
from tilec.frontend import Lowered
from tilec.frontend.capture import capture
from tilec.ir import Kernel, parse, print_kernel
from tilec.ir.ops import LoadOp
from tilec.passes import run_pipeline
from tilec.testing import assert_close


def _norm(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = h.float()
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(w.dtype)


def embedding_norm(ids: torch.Tensor, table: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return _norm(F.embedding(ids, table), w)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return torch.cat((-x.narrow(-1, h, h), x.narrow(-1, 0, h)), dim=-1)


def rope(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return q * cos + rotate_half(q) * sin


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), labels)


def take_rows(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    # `x[idx]` (negative indices count from the end); written as the aten op because the
    # Python binding of `Tensor.__getitem__` opens a CUDA device guard, which the fake H100 lacks
    return torch.ops.aten.index.Tensor(x, [idx]) * 2


def rows_softmax(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten.index.Tensor(x, [idx]).softmax(-1)


def _ids(n: int, high: int, *shape: int) -> torch.Tensor:
    return torch.randint(0, high, (n, *shape))


CASES = {
    "embedding-rmsnorm": (
        embedding_norm,
        lambda: [_ids(4, 500, 16), torch.randn(500, 256, dtype=torch.bfloat16), torch.randn(256, dtype=torch.bfloat16)],
    ),
    "rope": (
        rope,
        lambda: [torch.randn(2, 4, 16, 64, dtype=torch.bfloat16), *torch.randn(2, 2, 1, 16, 64, dtype=torch.bfloat16)],
    ),
    "cross-entropy": (
        cross_entropy,
        lambda: [
            torch.randn(64, 1000, dtype=torch.bfloat16),
            torch.where(_ids(64, 1000) % 7 == 0, -100, _ids(64, 1000)),
        ],
    ),
    "negative-index": (take_rows, lambda: [torch.randn(50, 33), torch.randint(-50, 50, (40,))]),
    "gathered-rows-softmax": (rows_softmax, lambda: [torch.randn(50, 300), _ids(20, 50)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_taken_and_matches_eager(name: str) -> None:
    fn, make = CASES[name]
    torch.manual_seed(0)
    inputs = make()
    kernels = capture(fn, inputs)
    assert kernels and all(k.taken for k in kernels), [k.summary() for k in kernels]
    got = run_chain(fn, inputs)
    want = fn(*inputs)
    assert_close(
        got.reshape(want.shape).float(), want.float(), want.dtype if want.dtype != torch.float32 else torch.float32
    )


def test_embedding_norm_is_one_kernel_with_one_check_per_row() -> None:
    (k,) = capture(embedding_norm, CASES["embedding-rmsnorm"][1]())
    assert isinstance(k.result, Lowered)
    text = print_kernel(k.result.kernel)
    # the index is checked once per row, before the loops, not once per chunk as stock does
    assert text.count("tile.assert") == 1
    assert 'message = "index out of bounds: 0 <= tmp0 < 500"' in text
    loads = [a for a in k.result.accesses if a.kind == "load"]
    assert [a.affine for a in loads].count(False) >= 1  # the gathered row is not an affine access
    # both phases gather the table row at the same offsets: the default pipelines read it once
    for pipeline in ("triton-default", "gluon-default"):
        module = parse(text)
        run_pipeline(module, pipeline)
        table = module.kernels[0].params[1]
        assert sum(isinstance(op, LoadOp) and op.ptr is table for op in module.kernels[0].walk()) == 1, pipeline


def test_out_of_bounds_index_stops_the_kernel() -> None:
    torch.manual_seed(0)
    inputs = CASES["embedding-rmsnorm"][1]()
    inputs[0][1, 3] = 500
    with pytest.raises(interp.DeviceAssertError, match=r"index out of bounds: 0 <= tmp0 < 500"):
        run_chain(embedding_norm, inputs)


def test_ignored_targets_pass_the_check() -> None:
    """Cross-entropy's ignore_index (-100) is replaced before the gather, so it never fails the
    check; a target of -5 (not ignored) does."""
    torch.manual_seed(0)
    logits, labels = CASES["cross-entropy"][1]()
    run_chain(cross_entropy, [logits, labels])
    labels[3] = -5
    with pytest.raises(interp.DeviceAssertError):
        run_chain(cross_entropy, [logits, labels])


@functools.cache
def _captured(name: str) -> tuple[Lowered, list[torch.Tensor]]:
    fn, make = CASES[name]
    torch.manual_seed(0)
    inputs = make()
    (k,) = capture(fn, inputs)
    assert isinstance(k.result, Lowered)
    return k.result, inputs


def _run(kernel: Kernel, lowered: Lowered, inputs: list[torch.Tensor]) -> torch.Tensor:
    (out,) = run_kernel(kernel, lowered, inputs, None).values()
    return out


@pytest.mark.parametrize("pipeline", ["triton-default", "gluon-default"])
@pytest.mark.parametrize("name,low,high", [("embedding-rmsnorm", 0, 500), ("negative-index", -50, 50)])
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_pipelines_keep_every_bit_of_a_gather(
    pipeline: str, name: str, low: int, high: int, data: st.DataObject
) -> None:
    """Under random indices (negative ones wrap), the default pipelines' kernels compute the
    logical kernel's bits, and an index out of range fails the check in both."""
    lowered, inputs = _captured(name)
    ids_pos = 1 if name == "negative-index" else 0  # the index tensor's argument position
    ids = inputs[ids_pos]
    values = data.draw(st.lists(st.integers(low, high - 1), min_size=ids.numel(), max_size=ids.numel()))
    inputs = list(inputs)
    inputs[ids_pos] = torch.tensor(values, dtype=ids.dtype).reshape(ids.shape)
    logical = parse(print_kernel(lowered.kernel)).kernels[0]
    module = parse(print_kernel(lowered.kernel))
    run_pipeline(module, pipeline)
    want = _run(logical, lowered, inputs)
    got = _run(module.kernels[0], lowered, inputs)
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
    bad = list(inputs)
    out_of_range = inputs[ids_pos].clone().view(-1)
    out_of_range[data.draw(st.integers(0, out_of_range.numel() - 1))] = data.draw(st.sampled_from([high, low - 1]))
    bad[ids_pos] = out_of_range.view(ids.shape)
    for kernel in (logical, module.kernels[0]):
        with pytest.raises(interp.DeviceAssertError):
            _run(kernel, lowered, bad)
