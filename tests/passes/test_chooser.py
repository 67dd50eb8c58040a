"""The chooser: kernel signatures of the examples, and the measured rules (which emitter, or stock)."""

from __future__ import annotations

import itertools

import pytest
import torch

from examples import example
from tilec.passes.chooser import RULES, UNMEASURED, Choice, Decline, choose, signature


@pytest.mark.parametrize(
    ("name", "family"),
    [("rmsnorm", "sum"), ("layernorm", "mean-var"), ("softmax", "softmax"), ("log_softmax", "softmax")],
)
def test_signature_family(name: str, family: str) -> None:
    ex = example(name, 64, 2048)
    sig = signature(ex.kernel())
    assert (sig.family, sig.rows, sig.n, sig.row_bytes, sig.row_inputs, sig.elem_bytes) == (
        family,
        64,
        2048,
        4096,
        1,
        2,
    )


def test_signature_of_fp32_rows_counts_bytes() -> None:
    sig = signature(example("rmsnorm", 8, 4096, "f32").kernel())
    assert (sig.row_bytes, sig.elem_bytes) == (16384, 4)


def test_signature_counts_inputs_read_as_rows() -> None:
    """A weight ([1, RBLOCK]) is no row input; a residual added before the norm is one."""
    from tilec.frontend.capture import capture

    def add_rmsnorm(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = (x + r).float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w

    x, r, w = (
        torch.randn(64, 2048, dtype=torch.bfloat16),
        torch.randn(64, 2048, dtype=torch.bfloat16),
        torch.randn(2048),
    )
    (k,) = capture(add_rmsnorm, [x, r, w.bfloat16()])
    sig = signature(k.result.kernel)
    assert (sig.family, sig.row_inputs) == ("sum", 2)
    choice = choose(k.result.kernel, hopper=True)  # measured: stock is at the ceiling already
    assert isinstance(choice, Decline) and "add+rmsnorm" in choice.reason, choice
    three = signature(k.result.kernel).__class__("sum", 64, 2048, 4096, row_inputs=3)  # never measured
    assert three.describe() == "sum kernels with 3 row inputs of 2-byte elements, rows of 4096 bytes"


@pytest.mark.parametrize(
    ("name", "cols", "expected"),
    [
        ("rmsnorm", 1024, "stock"),  # 2 KiB rows: stock measured faster
        ("rmsnorm", 4096, "gluon"),
        ("rmsnorm", 8192, "stock"),  # 16 KiB rows: a tie, which goes to stock
        ("rmsnorm", 16384, "stock"),  # 32 KiB rows: stock measured faster
        ("layernorm", 1024, "stock"),
        ("layernorm", 2048, "gluon"),
        ("layernorm", 8192, "stock"),
        ("softmax", 512, "stock"),
        ("softmax", 1024, "triton"),
        ("softmax", 4096, "gluon"),
        ("softmax", 16384, "triton"),
    ],
)
def test_rules_on_hopper(name: str, cols: int, expected: str) -> None:
    rows = 16 if cols < 8192 else 4096  # few long rows: Inductor splits the reduction into two kernels
    choice = choose(example(name, rows, cols).kernel(), hopper=True)
    got = "stock" if isinstance(choice, Decline) else choice.emitter
    assert got == expected, choice
    if isinstance(choice, Decline):
        assert choice.reason.startswith("stock Inductor measured faster for ") and "vs" in choice.reason


@pytest.mark.parametrize("name", ["gelu_mlp"])
def test_unmeasured_kernels_stay_stock(name: str) -> None:
    """Pointwise kernels were never measured faster than stock: declined, saying so; with
    decline off, tilec takes them with the default emitter."""
    k = example(name, 16, 1024).kernel()
    choice = choose(k, hopper=True)
    assert isinstance(choice, Decline) and choice.reason.startswith(UNMEASURED), choice
    assert "pointwise kernels" in choice.reason
    assert isinstance(choose(k, hopper=True, decline=False), Choice)


def test_fp32_rows_stay_stock_where_stock_keeps_up() -> None:
    choice = choose(example("softmax", 16, 2048, "f32").kernel(), hopper=True)
    assert isinstance(choice, Decline) and "fp32" in choice.reason, choice


def test_without_hopper_gluon_rules_fall_back_to_triton() -> None:
    choice = choose(example("layernorm", 16, 2048).kernel(), hopper=False)
    assert choice == Choice("triton", choice.reason)  # type: ignore[union-attr]


def test_forced_emitter_and_decline_off() -> None:
    k = example("layernorm", 16, 1024).kernel()
    assert isinstance(choose(k, hopper=True, forced="gluon"), Decline)  # a measured loss still declines
    forced = choose(k, hopper=True, forced="gluon", decline=False)
    assert isinstance(forced, Choice) and forced.emitter == "gluon"
    softmax = choose(example("softmax", 16, 1024).kernel(), hopper=True, forced="gluon")
    assert isinstance(softmax, Choice) and softmax.emitter == "gluon"  # forced wins over a rule's emitter


def test_rules_do_not_overlap() -> None:
    for a in RULES:
        assert a.lo < a.hi and a.action in ("gluon", "triton", "stock") and a.evidence
        for b in RULES:
            if a is not b and (a.family, a.elem_bytes, a.row_inputs) == (b.family, b.elem_bytes, b.row_inputs):
                assert a.hi <= b.lo or b.hi <= a.lo, (a, b)


def test_measured_families_are_covered_at_every_row_size() -> None:
    """For what was measured (the forward norms and softmax over bf16/fp16 rows), every row size
    has a rule: no measured family falls through to the unmeasured decline."""
    for family in ("sum", "mean-var", "softmax"):
        ranges = sorted((r.lo, r.hi) for r in RULES if (r.family, r.elem_bytes, r.row_inputs) == (family, 2, 1))
        assert ranges[0][0] == 0 and ranges[-1][1] == 2**62, (family, ranges)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges)), (family, ranges)


@pytest.mark.parametrize(
    ("name", "cols", "plan"),
    [("layernorm", 2048, "xblock=1,num_warps=4"), ("rmsnorm", 4096, "xblock=1,num_warps=4"), ("softmax", 4096, "")],
)
def test_rules_set_plan_variants_for_their_emitter(name: str, cols: int, plan: str) -> None:
    k = example(name, 16, cols).kernel()
    choice = choose(k, hopper=True)
    assert isinstance(choice, Choice) and (choice.emitter, choice.plan) == ("gluon", plan)
    forced = choose(k, hopper=True, forced="triton", decline=False)
    assert isinstance(forced, Choice) and forced.plan == ""  # another emitter: its own heuristic plan


def test_with_plan_sets_options_on_the_plan_pass() -> None:
    from tilec.passes.manager import PipelineError
    from tilec.passes.pipelines import with_plan

    text = with_plan("gluon-default", "xblock=1,num_warps=4")
    assert text.startswith("plan{xblock=1,num_warps=4,row_block_bytes=131072},canonicalize,")
    assert with_plan("plan{xblock=2},cse", "xblock=1") == "plan{xblock=1},cse"
    with pytest.raises(PipelineError, match="no plan pass"):
        with_plan("canonicalize,cse", "xblock=1")
    with pytest.raises(PipelineError, match="has no option 'bogus'"):
        with_plan("gluon-default", "bogus=1")


def test_gluon_default_is_the_auto_cache_form_of_the_gluon_pipeline() -> None:
    from tilec.passes.manager import NAMED_PIPELINES
    from tilec.passes.pipelines import gluon_form

    assert gluon_form(cache="auto") == NAMED_PIPELINES["gluon-default"]
    assert gluon_form("xblock=1", persistent=True, stages=3, specialize=True) == (
        "plan{xblock=1},canonicalize,peel,canonicalize,cse,reuse{cache=smem},cse,persistent,pipeline{stages=3},"
        "warp-specialize,canonicalize,cse,fp32-at-use,dce"
    )
    assert gluon_form(pipelined=False).endswith("reuse{cache=smem},cse,fp32-at-use,dce")
