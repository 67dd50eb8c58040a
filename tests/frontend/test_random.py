"""Random numbers: the kernels Inductor makes for dropout and `randn` are lowered with the Philox
stream stock's kernel draws from — `tl.rand` per element, or `rand4x`'s four lanes in a 1-D
kernel where this torch's Inductor uses it — so in tilec's interpreter, for any seed, a dropout
mask equals the one stock's generators give (reference: tests/random_streams.py), and the
default pipelines keep every bit of it. On the CPU stock draws from its C++ generator: declined.
"""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples
from random_streams import HAS_RAND4X, stock_stream

from tilec import interp
from tilec.frontend import Lowered, reasons
from tilec.frontend.capture import capture
from tilec.interp.dtypes import TORCH_DTYPES
from tilec.ir import Kernel, parse, print_kernel
from tilec.passes import run_pipeline
from tilec.passes.chooser import Decline, choose
from tilec.testing import assert_close

M, N = 16, 1000
SEEDS = st.lists(st.integers(0, 2**63 - 2), min_size=2, max_size=2)


def dropout_scaled(x: torch.Tensor) -> torch.Tensor:
    return F.dropout(x, 0.2, training=True) * 3


def two_dropouts(x: torch.Tensor) -> torch.Tensor:
    return F.dropout(F.dropout(x, 0.3, training=True) * 2, 0.1, training=True)


def dropout_layernorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = F.dropout(x, 0.1, training=True) + x
    return F.layer_norm(h, (h.shape[-1],), w)


def noise(x: torch.Tensor) -> torch.Tensor:
    return torch.randn_like(x) * 0.5 + x


def _bf16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape))).to(torch.bfloat16)


# name: (function, inputs, the lanes stock's kernel draws with)
POINTWISE_LANES = 4 if HAS_RAND4X else 1
CASES = {
    "dropout": (dropout_scaled, lambda: [_bf16(M, N)], POINTWISE_LANES),
    "two-dropouts": (two_dropouts, lambda: [_bf16(M, N)], POINTWISE_LANES),
    "dropout-layernorm": (dropout_layernorm, lambda: [_bf16(M, N), _bf16(N)], 1),
    "randn": (noise, lambda: [_bf16(M, N)], POINTWISE_LANES),
}


@functools.cache
def _captured(name: str) -> Lowered:
    fn, make, _ = CASES[name]
    (k,) = capture(fn, make())
    assert isinstance(k.result, Lowered), k.summary()
    return k.result


@functools.cache
def _kernels(name: str) -> dict[str, Kernel]:
    """The captured kernel as lowered and after each default pipeline."""
    text = print_kernel(_captured(name).kernel)
    out = {"logical": parse(text).kernels[0]}
    for pipeline in ("triton-default", "gluon-default"):
        module = parse(text)
        run_pipeline(module, pipeline)
        out[pipeline] = module.kernels[0]
    return out


def run(kernel: Kernel, lowered: Lowered, inputs: list[torch.Tensor], seeds: list[int]) -> torch.Tensor:
    """The kernel's output of the first input's shape and dtype, with `seeds` as the seeds
    Inductor drew for the graph."""
    args, outs = [], []
    for a in lowered.args:
        if a.buffer.startswith("arg"):  # graph input i is Inductor's arg{i}_1
            args.append(inputs[int(a.buffer[3:].split("_")[0])])
        elif not a.is_written:  # the seeds buffer
            args.append(torch.tensor(seeds))
        else:
            assert a.shape is not None and a.strides is not None
            outs.append(torch.empty_strided(a.shape, a.strides, dtype=TORCH_DTYPES[a.dtype]))
            args.append(outs[-1])
    blocks = {"XBLOCK": 4, "RBLOCK": 256} if "RBLOCK" in kernel.constexprs else {"XBLOCK": 1024}
    interp.run(kernel, *args, **{k: v for k, v in blocks.items() if kernel.constexprs.get(k) is None})
    (out,) = [o for o in outs if o.numel() == inputs[0].numel() and o.dtype == inputs[0].dtype]
    return out


def kept(seed: int, x: torch.Tensor, p: float, lanes: int) -> torch.Tensor:
    """Where stock's dropout keeps an element: its random number above p (in x's dtype, as the
    graph compares them)."""
    r = stock_stream(seed, 0, x.numel(), lanes).reshape(x.shape)
    return r > torch.tensor(p).to(x.dtype).float()


@pytest.mark.parametrize("name", list(CASES))
def test_taken_with_the_stream_stock_draws_from(name: str) -> None:
    text = print_kernel(_captured(name).kernel)
    lanes = CASES[name][2]
    assert "tile.rand" in text
    assert ("lanes = 4" in text) == (lanes == 4), text


@settings(max_examples=examples(4), deadline=None)
@given(seeds=SEEDS)
def test_dropout_mask_is_stocks_for_any_seed(seeds: list[int]) -> None:
    """`dropout(x) * 3` as Inductor computes it (mask * x * 1/(1-p) * 3 in f32, one rounding)
    from stock's mask, bit for bit, as lowered and after both default pipelines."""
    lowered = _captured("dropout")
    (x,) = CASES["dropout"][1]()
    m = kept(seeds[0], x, 0.2, POINTWISE_LANES)
    want = ((m.float() * x.float() * 1.25) * 3.0).to(x.dtype)
    for pipeline, kernel in _kernels("dropout").items():
        got = run(kernel, lowered, [x], seeds).reshape(x.shape)
        assert torch.equal(got.view(torch.int16), want.view(torch.int16)), pipeline


def test_each_dropout_takes_its_own_seed() -> None:
    """Two dropouts in one kernel: the first draws with seed 0 of the graph, the second seed 1."""
    lowered = _captured("two-dropouts")
    (x,) = CASES["two-dropouts"][1]()
    seeds = [1234567, 7654321]
    first = kept(seeds[0], x, 0.3, POINTWISE_LANES).float() * x.float() * (1 / 0.7) * 2
    want = kept(seeds[1], x, 0.1, POINTWISE_LANES).float() * first * (1 / 0.9)
    got = run(lowered.kernel, lowered, [x], seeds).reshape(x.shape)
    assert_close(got.float(), want, torch.bfloat16)
    assert torch.equal(got != 0, want != 0)


def test_dropout_fused_into_layernorm_matches_eager_with_stocks_mask() -> None:
    lowered = _captured("dropout-layernorm")
    x, w = CASES["dropout-layernorm"][1]()
    seeds = [42, 43]
    h = kept(seeds[0], x, 0.1, 1).float() * x.float() * (1 / 0.9) + x.float()
    want = F.layer_norm(h, (N,), w.float())
    for pipeline, kernel in _kernels("dropout-layernorm").items():
        got = run(kernel, lowered, [x, w], seeds).reshape(x.shape)
        assert_close(got.float(), want, torch.bfloat16, what=pipeline)


def test_randn_is_stocks_normal_stream() -> None:
    lowered = _captured("randn")
    (x,) = CASES["randn"][1]()
    want = stock_stream(99, 0, x.numel(), POINTWISE_LANES, "normal").reshape(x.shape) * 0.5 + x.float()
    got = run(lowered.kernel, lowered, [x], [99, 0]).reshape(x.shape)
    assert_close(got.float(), want, torch.bfloat16)


def test_random_kernels_are_unmeasured_for_the_chooser() -> None:
    """No measurement covers kernels drawing random numbers: the rules keep them stock."""
    choice = choose(_captured("dropout-layernorm").kernel, hopper=True)
    assert isinstance(choice, Decline) and "drawing random numbers" in choice.reason


def test_cpu_random_numbers_stay_stock() -> None:
    (k,) = capture(dropout_scaled, [torch.randn(8, 64)], device="cpu")
    assert not k.taken and k.result.reason == reasons.RANDOM_ON_CPU  # type: ignore[union-attr]


def test_random_integers_are_declined_with_their_reason() -> None:
    def draw(x: torch.Tensor) -> torch.Tensor:
        return torch.randint(0, 10, x.shape, device=x.device) + x

    kernels = capture(draw, [torch.randn(8, 64)])
    assert [k.result.reason for k in kernels if not k.taken] == [reasons.RANDOM_INTEGERS]  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["dropout-layernorm", "dropout"])
def test_gluon_output_compiles_for_hopper(name: str) -> None:
    """Gluon kernels call Triton's generators too: a dropout fused into a LayerNorm (one lane) and
    a pointwise dropout (this torch's lanes: four where Inductor has rand4x) compile."""
    from tilec.emit.check import check_compile
    from tilec.emit.gluon import emit_gluon

    report = check_compile(emit_gluon(_kernels(name)["gluon-default"]), "sm_90")
    assert report.ok, report.error + "\n" + report.detail
    assert report.spills == 0, report.summary()
