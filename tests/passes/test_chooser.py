"""The chooser: kernel signatures of the examples, and the measured rules (which emitter, or stock)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import torch
from bench_scripts import load, meta_kernel

from examples import example
from tilec.passes.chooser import (
    GRAPH_REWRITES,
    MIX_ORDER_FUSIONS,
    NO_TABLE,
    RESULTS,
    RULES,
    TABLES,
    UNMEASURED,
    Choice,
    Decline,
    MixOrderFusion,
    Rewrite,
    Rule,
    Signature,
    choose,
    mix_order_fusion,
    signature,
)

ROOT = Path(__file__).resolve().parents[2]


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


def _rmsnorm_dx(x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """RMSNorm's input gradient, as its backward computes it: a sum of squares and a sum of dy * w
    times x-hat over each row."""
    xf = x.float()
    xhat = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    g = dy.float() * w.float()
    return ((g - xhat * (g * xhat).mean(-1, keepdim=True)) * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(
        x.dtype
    )


def _layernorm_two_sums(x: torch.Tensor) -> torch.Tensor:
    """LayerNorm written as a sum (the mean) and a sum of squares of the centred row."""
    xf = x.float()
    c = xf - xf.mean(-1, keepdim=True)
    return (c * torch.rsqrt((c * c).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)


@pytest.mark.parametrize(
    ("fn", "family"),
    [
        (_rmsnorm_dx, "sum-of-products"),  # two sums, one of them a product: a backward, not LayerNorm
        (_layernorm_two_sums, "mean-var"),
        (lambda x, w, dy: (dy.float() * x.float()).sum(0), "column-sum"),  # a weight gradient
        (lambda x, w, dy: x.float().abs().amax(-1), "reduce"),
    ],
    ids=["rmsnorm-dx", "layernorm-two-sums", "weight-grad", "amax"],
)
def test_the_family_is_what_the_reductions_compute(fn, family: str) -> None:
    """Families come from the IR: what each sum adds up (squares, loaded values, products) and
    along which axis the loads run, not from how many sums there are. The backward families stay
    stock at these sizes: measured slower in the models (a norm's dx over rows of 4 KiB), or never
    measured."""
    from tilec.frontend.capture import capture

    n = 2048
    args = [torch.randn(64, n, dtype=torch.bfloat16), torch.randn(n, dtype=torch.bfloat16)]
    args.append(torch.randn(64, n, dtype=torch.bfloat16))
    kernels = [
        k.result.kernel for k in capture(fn if fn is not _layernorm_two_sums else (lambda x, w, dy: fn(x)), args)
    ]
    assert signature(kernels[0]).family == family, [signature(k) for k in kernels]
    if family in ("sum-of-products", "column-sum", "reduce"):
        choice = choose(kernels[0], hopper=True)
        models = "stock Inductor measured faster for sum-of-products rows of 4096 bytes (2 row inputs) "
        models += f"({RESULTS}/2026-11-26-h100-model-kernels: "
        expected = models if family == "sum-of-products" else UNMEASURED
        assert isinstance(choice, Decline) and choice.reason.startswith(expected), choice


def test_signature_of_fp32_rows_counts_bytes() -> None:
    sig = signature(example("rmsnorm", 8, 4096, "f32").kernel())
    assert (sig.row_bytes, sig.elem_bytes) == (16384, 4)


def test_a_per_row_index_is_not_a_row_element() -> None:
    """An embedding fused with the first RMSNorm loads each row's int64 token id ([XBLOCK, 1]) to
    gather the row: the rows are bf16, 2-byte elements, whatever the index's width."""
    from torch.nn.functional import embedding

    from tilec.frontend.capture import capture

    def embed_norm(ids: torch.Tensor, table: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = embedding(ids, table).float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(table.dtype) * w

    ids = torch.randint(0, 512, (64,))
    (k,) = capture(embed_norm, [ids, torch.randn(512, 2048, dtype=torch.bfloat16), torch.randn(2048).bfloat16()])
    sig = signature(k.result.kernel)  # type: ignore[union-attr]
    assert (sig.family, sig.elem_bytes, sig.row_bytes) == ("sum", 2, 4096), sig


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
    assert isinstance(choice, Decline) and "2026-11-26-h100-residual" in choice.reason, choice
    three = signature(k.result.kernel).__class__("sum", 64, 2048, 4096, row_inputs=3)  # never measured
    assert three.describe() == "sum kernels with 3 row inputs of 2-byte elements, rows of 4096 bytes"


@pytest.mark.parametrize(
    ("name", "cols", "expected"),
    [
        ("rmsnorm", 1024, "stock"),  # 2 KiB rows: tilec not faster by the margin
        ("rmsnorm", 4096, "triton"),
        ("rmsnorm", 8192, "stock"),  # 16 KiB rows: a tie, which goes to stock
        ("rmsnorm", 16384, "stock"),
        ("layernorm", 512, "stock"),
        ("layernorm", 1024, "stock"),  # 2 KiB rows: a tie
        ("layernorm", 2048, "triton"),
        ("layernorm", 8192, "stock"),
        ("softmax", 512, "triton"),  # 1 KiB rows: eight rows a program, 1.5% faster
        ("softmax", 1024, "stock"),
        ("softmax", 2048, "triton"),
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
        assert f"({RESULTS}/" in choice.reason, choice


@pytest.mark.parametrize(
    ("shape", "expected", "run"),
    [
        ((4, 1024, 16, 128), "triton", "2026-11-26-h100-rotary-heads"),
        ((1, 4096, 8, 128), "triton", "2026-11-27-h100-dynamic-rotary"),
        ((1, 128, 16, 128), "stock", "2026-11-26-h100-rotary-heads: 262144x1"),
        ((1, 1024, 8, 128), "unmeasured", ""),
    ],
)
def test_rotary_embeddings_are_taken_where_measured_faster(shape: tuple[int, ...], expected: str, run: str) -> None:
    """Llama's rotary embedding (examples/llama_rotary.py) is a pointwise kernel whose cos and sin
    repeat across a token's heads (`repeats`): on the H100 tilec takes it at 4 x 1024 tokens of 16
    heads (32 MiB of elements of up to 4 bytes: the fp32 angles) and at 4096 tokens of 8 (16 MiB),
    stock keeps it over 128 tokens where the two tie, and a size never measured (4 MiB) stays
    stock."""
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.frontend.entry import load_entry

    target = load_entry(str(ROOT / "examples" / "llama_rotary.py"))
    assert target.example_inputs is not None
    inputs = [t.to("meta") for t in target.example_inputs(shape, torch.bfloat16)]
    (k,) = capture(target.func, inputs, strict=True)
    assert isinstance(k.result, Lowered)
    sig = signature(k.result.kernel)
    assert (sig.family, sig.elem_bytes, sig.row_bytes, sig.symbolic) == (
        "pointwise-repeats",
        4,
        4 * k.result.numel,
        False,
    )
    choice = choose(k.result.kernel, hopper=True)
    if expected == "triton":
        assert isinstance(choice, Choice) and choice.emitter == "triton", choice
        assert run in choice.reason
    elif expected == "stock":
        assert isinstance(choice, Decline) and run in choice.reason, choice
    else:
        assert isinstance(choice, Decline) and choice.reason.startswith("no measurement shows"), choice
        assert "pointwise kernels whose costly values repeat" in choice.reason


def test_a_rotary_over_symbolic_tokens_has_rules_of_its_own() -> None:
    """Llama's rotary on q as its projection writes it, (batch, tokens, 16 heads x 128), with the
    batch and tokens symbolic: `repeats` takes it (a `pointwise-repeats` kernel of symbolic size),
    and only a rule measured on such kernels covers it — the H100's and the H200's take Triton
    (`tilec bench --models --autotune --dynamic`); a static rule's range of bytes never does."""
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.frontend.entry import load_entry
    from tilec.ir.target import H100, H200
    from tilec.passes import repeats

    forward = load_entry(str(ROOT / "examples" / "llama_rotary.py")).func

    def projected(q: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
        return forward(q.view(q.shape[0], q.shape[1], 16, 128), inv_freq).view(q.shape)

    inv_freq = 1.0 / (10000 ** (torch.arange(0, 128, 2, dtype=torch.float32) / 128))
    (k,) = capture(projected, [torch.randn(2, 64, 2048, dtype=torch.bfloat16), inv_freq], dynamic=True, strict=True)
    assert isinstance(k.result, Lowered)
    sig = signature(k.result.kernel)
    assert (sig.family, sig.rows, sig.row_bytes, sig.symbolic) == ("pointwise-repeats", None, 0, True)
    assert "of symbolic size" in sig.describe()
    for gpu, run in ((H100.name, "2026-11-27-h100-dynamic-rotary"), (H200.name, "2026-11-27-h200-dynamic-rotary")):
        choice = choose(k.result.kernel, hopper=True, gpu=gpu)
        assert isinstance(choice, Choice) and choice.emitter == "triton" and run in choice.reason, (gpu, choice)
        static = [r for r in TABLES[gpu] if r.family == "pointwise-repeats" and not r.symbolic]
        assert static and not any(r.covers(sig) for r in static)
    # what the pass takes is what the rules cover: with its `symbolic` option off it leaves the kernel
    assert repeats.find(k.result.kernel, symbolic=False) == "its size is symbolic (the pass's `symbolic` option is off)"


@pytest.mark.parametrize("name", ["gelu_mlp"])
def test_pointwise_kernels_stay_stock(name: str) -> None:
    """Pointwise kernels measured slower than stock's in the models: declined, saying so and
    quoting the GPU's run; on a GPU with no table, declined as unmeasured there; with decline
    off, tilec takes them with the default emitter."""
    k = example(name, 16, 1024).kernel()
    choice = choose(k, hopper=True)
    assert isinstance(choice, Decline), choice
    assert choice.reason.startswith(
        f"stock Inductor measured faster for pointwise kernels ({RESULTS}/2026-11-26-h100-model-kernels: "
    )
    on_h200 = choose(k, hopper=True, gpu="NVIDIA H200")
    assert isinstance(on_h200, Decline) and "2026-11-26-h200-model-kernels" in on_h200.reason, on_h200
    elsewhere = choose(k, hopper=True, gpu="NVIDIA Unknown")
    assert isinstance(elsewhere, Decline) and elsewhere.reason.startswith(NO_TABLE), elsewhere
    assert isinstance(choose(k, hopper=True, decline=False), Choice)


def test_a_symbolic_row_length_takes_only_a_rule_measured_on_symbolic_rows() -> None:
    """A reduction of symbolic length falls in no row-size bucket: only a rule measured on rows of
    symbolic length (`symbolic=True`, from the models' kernels with a symbolic number of tokens)
    covers it, and such a rule covers no static row. A bf16 sum over a symbolic number of tokens (a
    column sum) was measured on both GPUs: stock, saying so, with each GPU's run."""
    import torch

    from tilec.frontend.capture import capture
    from tilec.ir.target import H200

    symbolic = Signature("sum", None, None, 0)
    assert not any(r.covers(symbolic) for r in RULES)  # no RMSNorm over symbolic rows was measured
    assert "rows of symbolic length" in symbolic.describe()
    (k,) = capture(lambda x: x.float().sum(0), [torch.randn(64, 256, dtype=torch.bfloat16)], dynamic=True)
    kernel = k.result.kernel  # type: ignore[union-attr]
    sig = signature(kernel)
    assert (sig.family, sig.n) == ("column-sum", None)
    (rule,) = [r for r in RULES if r.covers(sig)]
    assert rule.symbolic and (rule.lo, rule.hi) == (0, 2**62)
    assert not rule.covers(Signature("column-sum", 4096, 64, 128))  # a static column
    choice = choose(kernel, hopper=True)
    assert isinstance(choice, Decline), choice
    assert choice.reason.startswith("stock Inductor measured faster for column-sum columns of symbolic length (")
    on_h200 = choose(kernel, hopper=True, gpu=H200.name)  # measured there too, in its own survey
    assert isinstance(on_h200, Decline), on_h200
    assert on_h200.reason.startswith("stock Inductor measured faster for column-sum columns of symbolic length (")
    assert "2026-11-27-h200-model-survey" in on_h200.reason


def test_fp32_rows_stay_stock_where_stock_keeps_up() -> None:
    choice = choose(example("rmsnorm", 16, 2048, "f32").kernel(), hopper=True)
    assert isinstance(choice, Decline) and "sum rows of 8192 bytes (4-byte elements)" in choice.reason, choice


def test_without_hopper_gluon_rules_fall_back_to_triton() -> None:
    from tilec.ir.target import H200

    k = example("layernorm", 16, 8192).kernel()  # the H200's rule for rows of 16 KiB: Gluon
    assert choose(k, hopper=True, gpu=H200.name).emitter == "gluon"  # type: ignore[union-attr]
    choice = choose(k, hopper=False, gpu=H200.name)
    assert choice == Choice("triton", choice.reason)  # type: ignore[union-attr]


def test_forced_emitter_and_decline_off() -> None:
    k = example("layernorm", 16, 512).kernel()
    assert isinstance(choose(k, hopper=True, forced="gluon"), Decline)  # a measured loss still declines
    forced = choose(k, hopper=True, forced="gluon", decline=False)
    assert isinstance(forced, Choice) and forced.emitter == "gluon"
    softmax = choose(example("softmax", 16, 4096).kernel(), hopper=True, forced="gluon")
    assert isinstance(softmax, Choice) and softmax.emitter == "gluon"  # forced wins over a rule's emitter


def test_a_gpu_without_a_table_gets_no_other_gpus_rules() -> None:
    """Rules hold for the GPU they were measured on: on a GPU with no table (an H200-like one under
    another name) a kernel the H100's rules take is declined as unmeasured there, and the
    autotuner is asked for every kernel (it times the candidates, with plans sized for that GPU's
    bytes in flight); with decline off it is taken."""
    import dataclasses
    from types import SimpleNamespace

    from tilec.inductor import autotune
    from tilec.ir.target import H100, H200

    assert set(TABLES) == {H100.name, H200.name} and TABLES[H100.name] is RULES
    other = dataclasses.replace(H200, name="NVIDIA H200 NVL (no table)")
    k = example("softmax", 16, 4096).kernel()
    on_h100 = choose(k, hopper=True, gpu=H100.name)
    assert isinstance(on_h100, Choice) and on_h100.emitter == "triton"
    on_other = choose(k, hopper=True, gpu=other.name)
    assert isinstance(on_other, Decline) and on_other.reason.startswith(NO_TABLE) and other.name in on_other.reason
    assert isinstance(choose(k, hopper=True, gpu=other.name, forced="triton"), Decline)  # as an unmeasured kernel
    forced = choose(k, hopper=True, gpu=other.name, forced="triton", decline=False)
    assert forced == Choice("triton", "tilec.config.emitter = 'triton'")
    assert isinstance(choose(k, hopper=True, gpu=other.name, decline=False), Choice)
    cuda = SimpleNamespace(type="cuda")
    assert not autotune.wanted(cuda, H100) and not autotune.wanted(cuda, H200) and autotune.wanted(cuda, other)
    assert not autotune.wanted(SimpleNamespace(type="cpu"), other)
    sized = "gluon{target_elems=8192}"
    assert sized in autotune.candidates(True, None, True, True, other)
    assert sized not in autotune.candidates(True, None, True, True, H100)
    assert autotune.candidates(True, None, True, False, other) == ["gluon", "triton", "stock"]  # pointwise


@pytest.mark.parametrize(
    ("name", "cols", "h100", "h200"),
    [
        ("layernorm", 2048, ("triton", "xblock=2,num_warps=4"), ("triton", "xblock=1,num_warps=4")),
        ("layernorm", 8192, "stock", ("gluon", "xblock=1,num_warps=4")),
        ("layernorm", 512, "stock", "stock"),
        ("rmsnorm", 1024, "stock", ("triton", "xblock=2,rblock=512,num_warps=4")),
        ("rmsnorm", 2048, ("triton", "xblock=1,num_warps=8"), ("triton", "xblock=1,rblock=1024,num_warps=4")),
        ("softmax", 512, ("triton", "xblock=8,num_warps=8"), ("triton", "xblock=4,num_warps=4")),
        (
            "softmax",
            16384,
            ("triton", "xblock=1,num_warps=32"),
            ("triton", "xblock=1,rblock=2048,num_warps=16,lanes_reread=true"),
        ),
        ("layernorm", 16384, "stock", ("triton", "xblock=1,rblock=8192,num_warps=16,lanes_reread=true")),
    ],
)
def test_the_h100_and_the_h200_get_their_own_plans(name: str, cols: int, h100: Any, h200: Any) -> None:
    """Where the two GPUs' tables differ, so do the choices: each GPU's own measured plan (or
    stock), by the GPU's name."""
    from tilec.ir.target import H100, H200

    k = example(name, 16 if cols < 8192 else 4096, cols).kernel()  # few long rows: a split reduction
    for gpu, expected in ((H100.name, h100), (H200.name, h200)):
        choice = choose(k, hopper=True, gpu=gpu)
        got = "stock" if isinstance(choice, Decline) else (choice.emitter, choice.plan)
        assert got == expected, (gpu, choice)


def _overlapping(rules: tuple[Rule, ...]) -> list[tuple[Rule, Rule]]:
    """The pairs of rules for one family, element size, row inputs and column sums (static rows, or
    rows of symbolic length) whose row-byte ranges meet (a rule of any number of sums meets a rule
    of some)."""
    return [
        (a, b)
        for a, b in itertools.combinations(rules, 2)
        if (a.family, a.elem_bytes, a.row_inputs, a.symbolic) == (b.family, b.elem_bytes, b.row_inputs, b.symbolic)
        and (a.column_sums == b.column_sums or 0 in (a.column_sums, b.column_sums))
        and a.lo < b.hi
        and b.lo < a.hi
    ]


def test_rules_do_not_overlap() -> None:
    for table in TABLES.values():
        for a in table:
            assert a.lo < a.hi and a.action in ("gluon", "triton", "stock") and a.run and a.figures, a
        assert not _overlapping(table)
    # the check finds an overlap, and only within one family, element size and row inputs
    sums = (Rule("sum", 0, 4096, "stock", "r", "f"), Rule("sum", 2048, 8192, "gluon", "r", "f"))
    assert _overlapping(sums) == [sums]
    assert not _overlapping((sums[0], Rule("sum", 2048, 8192, "gluon", "r", "f", elem_bytes=4)))
    assert not _overlapping((sums[0], Rule("sum", 4096, 8192, "gluon", "r", "f")))
    rms, ln = (Rule("mix-order", 0, 4096, "triton", "r", "f", column_sums=k) for k in (1, 2))
    anyhow = dataclasses.replace(ln, column_sums=0)
    assert not _overlapping((rms, ln)) and _overlapping((rms, anyhow)) == [(rms, anyhow)]


# How the runs under bench/results/ name what a rule's family, element size and row inputs measured.
OPS = {"sum": "rmsnorm", "mean-var": "layernorm", "softmax": "softmax"}
BACKWARD_OPS = {
    "mix-order": (
        "rmsnorm_bwd",
        "layernorm_bwd",
        "gemma_rmsnorm_bwd",
        "add_rmsnorm_bwd",
        "add_layernorm_bwd",
        "add_rmsnorm_mlp_bwd",
        "add_gemma_rmsnorm_mlp_bwd",
        "add_layernorm_mlp_bwd",
        "add_rmsnorm_qkv_bwd",
        "add_gemma_rmsnorm_qkv_bwd",
    )
}
DTYPES = {2: "bf16", 4: "fp32"}
NUMBER = r"\d+(?:\.\d+)?"
# One shape's figures in a rule: "MxN 98.9 vs 101.3" or "MxN 99.4/98.9 vs 97.6".
FIGURE = re.compile(rf"\b(\d+)x(\d+) ({NUMBER}(?:/{NUMBER})*) vs ({NUMBER})\b")
# bench/variants.py's markdown: a section per shape ("## layernorm 32768x2048 (bf16)"), then
# "| variant | % of copy | ..." rows.
SECTION = re.compile(r"^## (\S+) (\d+)x(\d+) \((\w+)\)$")

Key = tuple[str, int, int, str]  # op, M, N, dtype


def _measured(run: Path) -> dict[Key, list[float]]:
    """The device-time figures (% of copy) in a run's files, by op, shape and dtype: from `tilec
    bench`'s results.jsonl (`device_pct`), bench/variants.py's JSON lines (`pct`, bf16) and its
    markdown tables."""
    found: dict[Key, list[float]] = defaultdict(list)
    for path in sorted(run.rglob("*")) if run.is_dir() else [run]:
        if path.suffix == ".jsonl":
            for line in path.read_text().splitlines():
                rec = json.loads(line) if line.strip() else {}
                for k in rec.get("report", []):  # `tilec bench --models --autotune`: kernels timed in place, us
                    if k.get("signature") and k.get("timings"):
                        family, inputs, elem, rows, n = k["signature"][:5]  # (then column sums, lately)
                        traced = k.get("traced") or (None, None)  # a symbolic size: the size timed at
                        rows, n = rows if rows is not None else traced[0], n if n is not None else traced[1]
                        key = (f"models:{family}:{inputs}", rows, n or 1, DTYPES.get(elem, f"{elem}B"))
                        found[key] += [ms * 1000 for _, ms in k["timings"]]
                pct = rec.get("device_pct", rec.get("pct"))
                if isinstance(pct, (int, float)) and {"op", "m", "n"} <= rec.keys():
                    found[(rec["op"], rec["m"], rec["n"], rec.get("dtype", "bf16"))].append(float(pct))
        elif path.suffix == ".md":
            key: Key | None = None
            for line in path.read_text().splitlines():
                if m := SECTION.match(line):
                    key = (m[1], int(m[2]), int(m[3]), m[4])
                elif key is not None and line.startswith("|"):
                    cells = [c.strip() for c in line.strip("|").split("|")]
                    if len(cells) > 1 and re.fullmatch(NUMBER, cells[1]):
                        found[key].append(float(cells[1]))
    return found


def _unmatched(rule: Rule, measured: dict[Key, list[float]]) -> list[str]:
    """The figures `rule` quotes that its run does not hold (each, rounded as quoted, must equal a
    figure the run measured for that op, shape and dtype)."""
    if rule.family in BACKWARD_OPS:  # a backward family's rule quotes each op's backward that measured it
        ops = BACKWARD_OPS[rule.family]
    elif rule.family in OPS and rule.row_inputs <= 2:
        ops = (OPS[rule.family] if rule.row_inputs == 1 else f"add_{OPS[rule.family]}",)
    else:
        ops = ()
    op = "/".join(ops) or f"models:{rule.family}:{rule.row_inputs}"
    ops += (f"models:{rule.family}:{rule.row_inputs}",)  # a run's kernels timed in place (bench/rules.py --kernels)
    missing = []
    for m, n, tilec, stock in FIGURE.findall(rule.figures):
        dtype = DTYPES.get(rule.elem_bytes, f"{rule.elem_bytes}B")
        pcts = [p for o in ops for p in measured.get((o, int(m), int(n), dtype), [])]
        for quoted in [*tilec.split("/"), stock]:
            places = len(quoted.partition(".")[2])
            if not any(round(p, places) == float(quoted) for p in pcts):
                missing.append(f"{op} {m}x{n} {dtype}: {quoted}")
    return missing


ALL_RULES = [(gpu, r) for gpu, table in TABLES.items() for r in table]


@pytest.mark.parametrize(
    "rule",
    [r for _, r in ALL_RULES],
    ids=[f"{g.split()[1]}-{r.family}-{r.elem_bytes}B-{r.row_inputs}in-{r.lo}" for g, r in ALL_RULES],
)
def test_rules_name_a_committed_run_that_holds_their_figures(rule: Rule) -> None:
    results = ROOT / RESULTS
    run = results / rule.run
    assert not Path(rule.run).is_absolute() and ".." not in Path(rule.run).parts, rule.run
    assert run.exists(), f"{rule.run} is not under {RESULTS}/"
    assert len(FIGURE.findall(rule.figures)) >= 1, f"no 'MxN a vs b' figures in {rule.figures!r}"
    assert not _unmatched(rule, _measured(run)), (rule.run, _unmatched(rule, _measured(run)))


@pytest.mark.parametrize(
    "rule",
    [r for _, r in ALL_RULES if r.plan],
    ids=[f"{g.split()[1]}-{r.family}-{r.elem_bytes}B-{r.row_inputs}in-{r.lo}" for g, r in ALL_RULES if r.plan],
)
def test_rules_plans_are_options_of_the_pipeline_they_run_in(rule: Rule) -> None:
    """A rule's plan sets the options of the pipeline the hook's build runs it in (`pipeline_for`):
    a banded kernel's cluster plan (`ctas=...`) those of the banded cluster pipeline's
    `band-cluster`, any other plan those of its emitter's pipeline's `plan` pass. Unknown options
    raise here, not at a kernel's build."""
    from tilec.inductor.build import pipeline_for
    from tilec.passes.manager import parse_pipeline

    written = pipeline_for(rule.action, rule.action, rule.plan, banded=rule.family == "mix-order")
    assert parse_pipeline(written), written


FUSIONS = [(gpu, f) for gpu, fusions in MIX_ORDER_FUSIONS.items() for f in fusions]


@pytest.mark.parametrize(("gpu", "fusion"), FUSIONS, ids=[f"{g.split()[1]}-{f.run}" for g, f in FUSIONS])
def test_mix_order_fusions_name_a_committed_run_that_holds_their_figures(gpu: str, fusion: MixOrderFusion) -> None:
    """A GPU's range of mix-order fusions quotes figures its run holds, as rules do, and its
    bounds are shapes the run measured: its smallest shape (fewest rows, shortest row) one of the
    run's, its longest row too (the H200's run measured rows of 16384 too, and they lost)."""
    as_rule = Rule("mix-order", 0, 1, "triton", fusion.run, fusion.figures, elem_bytes=fusion.elem_bytes)
    assert len(FIGURE.findall(fusion.figures)) >= 1 and (ROOT / RESULTS / fusion.run).is_dir()
    measured = _measured(ROOT / RESULTS / fusion.run)
    assert not _unmatched(as_rule, measured), _unmatched(as_rule, measured)
    shapes = {(m, n) for (op, m, n, dtype) in measured if op.endswith("_bwd")}
    # its smallest shape measured, none of its rows shorter or longer than the run's
    assert (fusion.min_rows, fusion.min_row) in shapes, sorted(shapes)
    assert min(n for _, n in shapes) <= fusion.min_row and fusion.max_row in {n for _, n in shapes}
    assert fusion.covers(fusion.min_rows, fusion.min_row, fusion.elem_bytes)
    assert fusion.covers(fusion.min_rows, fusion.max_row, fusion.elem_bytes)
    assert not fusion.covers(fusion.min_rows - 1, fusion.min_row, fusion.elem_bytes)
    assert not fusion.covers(fusion.min_rows, fusion.max_row * 2, fusion.elem_bytes)
    assert not fusion.covers(fusion.min_rows, fusion.min_row, 4)
    # ranges are tried in order: a shape of this one is fused by it or by one before it
    assert mix_order_fusion(gpu, fusion.min_rows, fusion.min_row, fusion.elem_bytes) is not None
    assert mix_order_fusion("NVIDIA Unknown", fusion.min_rows, fusion.min_row, fusion.elem_bytes) is None


REWRITES = [(gpu, r) for gpu, rewrites in GRAPH_REWRITES.items() for r in rewrites]
REWRITE_FIGURE = re.compile(r"(\w+) train ([\d.]+) vs ([\d.]+) us")


@pytest.mark.parametrize(("gpu", "rewrite"), REWRITES, ids=[f"{g.split()[1]}-{r.name}" for g, r in REWRITES])
def test_graph_rewrites_name_a_committed_run_that_holds_their_figures(gpu: str, rewrite: Rewrite) -> None:
    """A GPU's decomposition quotes, per model, the device time of a training step with it
    (`tilecfb`) against without it (`tilec`) from its run's `rewrite.jsonl` (bench/rewrite_probe.py),
    each faster with it; its range of tokens holds every size it quotes and no more than a
    power-of-two range (the models' batch x tokens, bench/models.py's SIZES, by the rows' `size`)."""
    rows = [json.loads(line) for line in (ROOT / RESULTS / rewrite.run / "rewrite.jsonl").open()]
    device = {(r["family"], r["side"]): r["device_us"] for r in rows if "device_us" in r}
    sizes = load("models").SIZES
    tokens = {r["family"]: math.prod(sizes[r.get("size", "default")]) for r in rows}
    figures = REWRITE_FIGURE.findall(rewrite.figures)
    assert len(figures) >= 1, rewrite.figures
    low, high = rewrite.tokens
    assert high <= 2 * low and low & (low - 1) == 0, rewrite.tokens
    for family, with_it, without in figures:
        assert round(device[(family, "tilecfb")], 1) == float(with_it), (family, device)
        assert round(device[(family, "tilec")], 1) == float(without), (family, device)
        assert float(with_it) < float(without)
        assert low <= tokens[family] < high, (family, tokens[family], rewrite.tokens)


RING_FUSIONS = [(gpu, f) for gpu, f in FUSIONS if f.ring]


@pytest.mark.parametrize(("gpu", "fusion"), RING_FUSIONS, ids=[f"{g.split()[1]}-{f.run}" for g, f in RING_FUSIONS])
@pytest.mark.parametrize("row_inputs", [2, 3])
def test_a_ring_range_is_one_its_gpus_rules_take_in_gluon(gpu: str, fusion: MixOrderFusion, row_inputs: int) -> None:
    """Where a GPU fuses a norm's backward for the ring form (rows of 32768: stock's own fused
    kernel there is a persistent reduction 8-9x slower than its unfused kernels), its rules take the
    fused kernel in Gluon: a rule saying stock (or Triton, which spills there) would leave the
    fusion without the kernel it was measured with. RMSNorm's kernel reads two whole rows, the
    residual-fused one three."""
    for row in (fusion.min_row, fusion.max_row):
        for sums in range(1, (fusion.max_sums or 1) + 1):  # (RMSNorm's dW; LayerNorm's dW and dB)
            sig = Signature(
                "mix-order",
                fusion.min_rows,
                row,
                row * fusion.elem_bytes,
                row_inputs,
                elem_bytes=fusion.elem_bytes,
                column_sums=sums,
            )
            rule = next((r for r in TABLES[gpu] if r.covers(sig)), None)
            assert rule is not None and rule.action == "gluon", (gpu, row, row_inputs, sums, rule)


def test_figure_check_fails_on_figures_from_another_run() -> None:
    """The check above can fail: the H100 survey's RMSNorm figures are not in the 2026-11-22 suite,
    and a figure changed by a tenth is not in its own run."""
    (rule,) = [r for r in RULES if (r.family, r.lo, r.elem_bytes, r.row_inputs) == ("sum", 0, 2, 1)]
    assert rule.run == "2026-11-26-h100-narrow-ends" and not _unmatched(rule, _measured(ROOT / RESULTS / rule.run))
    assert _unmatched(rule, _measured(ROOT / RESULTS / "2026-11-22-suite"))
    moved = Rule(rule.family, rule.lo, rule.hi, rule.action, rule.run, "32768x512 100.7 vs 100.2")
    assert _unmatched(moved, _measured(ROOT / RESULTS / rule.run)) == ["rmsnorm 32768x512 bf16: 100.7"]


def test_reasons_name_the_run_and_quote_its_figures() -> None:
    decline = choose(example("rmsnorm", 16, 1024).kernel(), hopper=True)
    assert decline == Decline(
        "stock Inductor measured faster for sum rows of 2048 bytes "
        "(bench/results/2026-11-26-h100-narrow-ends: 32768x512 100.6 vs 100.2; 65536x1024 99.9 vs 99.6)"
    )
    choice = choose(example("layernorm", 16, 2048).kernel(), hopper=True)
    assert isinstance(choice, Choice) and choice.reason == (
        "measured fastest for mean-var rows of 4096 bytes (bench/results/2026-11-26-h100-narrow-ends: "
        "32768x2048 99.7 vs 85.8)"
    )


def test_measured_families_are_covered_at_every_row_size() -> None:
    """For what was measured (the forward norms and softmax over bf16/fp16 rows), every row size
    has a rule: no measured family falls through to the unmeasured decline."""
    for gpu, table in TABLES.items():
        for family in ("sum", "mean-var", "softmax"):
            static = (r for r in table if not r.symbolic)  # (a rule of symbolic rows covers no static row)
            ranges = sorted((r.lo, r.hi) for r in static if (r.family, r.elem_bytes, r.row_inputs) == (family, 2, 1))
            assert ranges[0][0] == 0 and ranges[-1][1] == 2**62, (gpu, family, ranges)
            assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges)), (gpu, family, ranges)


@pytest.mark.parametrize(
    ("name", "cols", "plan"),
    [
        ("layernorm", 2048, "xblock=2,num_warps=4"),
        ("rmsnorm", 4096, "xblock=1,rblock=2048,num_warps=8"),
        ("softmax", 4096, "xblock=1,num_warps=4"),
    ],
)
def test_rules_set_plan_variants_for_their_emitter(name: str, cols: int, plan: str) -> None:
    k = example(name, 16, cols).kernel()
    choice = choose(k, hopper=True)
    assert isinstance(choice, Choice) and (choice.emitter, choice.plan) == ("triton", plan)
    forced = choose(k, hopper=True, forced="gluon", decline=False)
    assert isinstance(forced, Choice) and forced.plan == ""  # another emitter: its own heuristic plan


def test_with_plan_sets_options_on_the_plan_pass() -> None:
    from tilec.passes.manager import PipelineError
    from tilec.passes.pipelines import with_plan

    text = with_plan("gluon-default", "xblock=1,num_warps=4")
    assert text.startswith(
        "repeats,onehot-sums,plan{xblock=1,num_warps=4,row_block_bytes=131072},accumulate,align-rows{line=128},"
    )
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
        "repeats,onehot-sums,plan{xblock=1},accumulate,align-rows{line=128},canonicalize,peel,canonicalize,welford-lanes,cse,"
        "split-rows,"
        "reuse{cache=smem},cse,softmax-lanes,reread,persistent,"
        "pipeline{stages=3},"
        "warp-specialize,canonicalize,cse,fp32-at-use,dce,early-loads,separate-reads"
    )
    assert gluon_form(pipelined=False).endswith(
        "reuse{cache=smem},cse,softmax-lanes,reread,fp32-at-use,dce,early-loads,separate-reads"
    )


def test_a_table_derived_from_a_run_is_a_valid_table_for_its_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench/rules.py turns a `tilec bench` run into a GPU's table: rules that cover every row size
    of each family measured without overlapping, quote figures the run holds, take tilec only
    where it beat compile by the margin at every shape of a row size. Registered for a GPU, the
    chooser follows it there and the H100's table on the H100: where the two differ (softmax
    rows of 8 KiB: one row a program over 4 warps by the H100's survey, the heuristic plan by the 2026-11-22
    suite alone), so do the plans."""
    tool = load("rules")
    run = "2026-11-22-suite"
    records = [json.loads(line) for line in (ROOT / RESULTS / run / "results.jsonl").read_text().splitlines()]
    derived = tool.derive(records)
    rules = tuple(
        Rule(d.family, d.lo, d.hi, d.action, run, d.figures, elem_bytes=d.elem_bytes, row_inputs=d.row_inputs)
        for d in derived
    )
    assert not _overlapping(rules)
    measured = _measured(ROOT / RESULTS / run)
    for rule in rules:
        assert not _unmatched(rule, measured), rule
    for family in ("sum", "mean-var", "softmax"):
        ranges = sorted((r.lo, r.hi) for r in rules if r.family == family and r.elem_bytes == 2)
        assert ranges[0][0] == 0 and ranges[-1][1] == 2**62, family
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges)), family  # no gap
    by = {(r.family, r.lo): r for r in rules}
    assert by[("sum", 4096)].action == "triton"  # 99.9 vs 98.2: faster by more than the margin
    assert by[("sum", 0)].action == "stock"  # 99.3/98.1 vs 100.9
    # the command prints each derived rule as Python source the table takes
    assert all(eval(d.source(run), {"Rule": Rule}) == (r,) for d, r in zip(derived, rules))
    assert tool.main([str(ROOT / RESULTS / run / "results.jsonl")]) == 0

    monkeypatch.setitem(TABLES, "Test GPU", rules)
    k = example("softmax", 16, 4096).kernel()
    on_h100, on_test = choose(k, hopper=True), choose(k, hopper=True, gpu="Test GPU")
    assert isinstance(on_h100, Choice) and isinstance(on_test, Choice)
    assert (on_h100.emitter, on_h100.plan) == ("triton", "xblock=1,num_warps=4")
    assert (on_test.emitter, on_test.plan) == ("triton", "")
    assert "2026-11-22-suite" in on_test.reason


@pytest.mark.parametrize(
    ("name", "rows", "cols", "expected", "plan"),
    [
        ("rmsnorm", 4096, 32768, "triton", "xblock=1,chunk=8192,num_warps=32,stream=true"),
        ("rmsnorm", 4096, 50257, "triton", "xblock=1,chunk=16384,num_warps=16,reverse=true,stream=true"),
        ("rmsnorm", 4096, 65536, "triton", "xblock=1,chunk=32768,num_warps=32,stream=true"),
        ("rmsnorm", 4096, 131072, "gluon", "xblock=1,chunk=8192,num_warps=8,cluster=4,exchange=push"),
        (
            "rmsnorm",
            2048,
            262144,
            "gluon",
            "xblock=1,chunk=8192,num_warps=16,cluster=4,row_cache=393216,exchange=push,maxnreg=64,prefetch=1",
        ),
        ("layernorm", 4096, 32768, "triton", "xblock=1,chunk=8192,num_warps=32,reverse=true,stream=true"),
        ("layernorm", 4096, 50257, "triton", "xblock=1,chunk=16384,num_warps=16"),
        ("layernorm", 8192, 65536, "gluon", "xblock=1,chunk=2048,num_warps=8,cluster=4,exchange=push"),
        ("layernorm", 4096, 131072, "gluon", "xblock=1,chunk=4096,num_warps=16,cluster=4,exchange=push"),
        ("layernorm", 2048, 262144, "gluon", "xblock=1,chunk=4096,num_warps=16,cluster=8,exchange=push"),
        ("softmax", 4096, 32768, "triton", "xblock=1,chunk=16384,num_warps=16,reverse=true"),
        ("softmax", 4096, 50257, "gluon", "xblock=1,chunk=8192,num_warps=8"),
        ("softmax", 8192, 65536, "gluon", "xblock=1,chunk=8192,num_warps=8,cluster=2,exchange=push"),
        ("softmax", 4096, 131072, "gluon", "xblock=1,chunk=8192,num_warps=8,cluster=2,exchange=push"),
        ("softmax", 2048, 262144, "gluon", "xblock=1,chunk=4096,num_warps=4,cluster=16,exchange=push"),
    ],
)
def test_long_rows_take_the_plan_measured_best(name: str, rows: int, cols: int, expected: str, plan: str) -> None:
    """Rows of 32K elements and more: the plan that measured best for the op and length on the
    H100 — the Triton loop, its second read reversed and the rows written evict-first where that
    measured faster (bench/results/2026-11-27-h100-long-rows: a survey of the long rows alone,
    before the whole survey's rules in the table), and each row split across a cluster, its
    partials pushed to the peers where that measured faster; LayerNorm's from a survey of its own rows of 16384 and
    more with its statistics kept per lane (-h100-welford-lanes, before both), RMSNorm's from one
    with a cluster CTA's chunk sums carried as one tile (-h100-chain-sums), LayerNorm's from rows
    of 65536 from one with pushed clusters at every length (-h100-layernorm-clusters: clusters of
    4 at 65536, 96.6% of a copy against the Triton loop's 94.2), softmax's from rows of 50257 from
    one with a misaligned row cached by cp.async (-h100-cp-async: the Gluon loop at 50257, 97.5%
    of a copy against the Triton loop's 87.1), and every op's from rows of 131072 from one with
    slices of 128 KiB a CTA, whole or three quarters cached, the weight read a chunk ahead
    (-h100-slice-cache: RMSNorm 2048x262144 in clusters of 4, two CTAs an SM, 96.1% of a copy
    against clusters of 8's 90.5; softmax rows of 131072 in clusters of 2, 97.1 and 98.4 against
    clusters of 16's 96.9), before all."""
    choice = choose(meta_kernel(name, rows, cols).kernel, hopper=True)
    assert isinstance(choice, Choice) and (choice.emitter, choice.plan) == (expected, plan), choice
    run = (
        "slice-cache"
        if cols >= 131072
        else {
            "rmsnorm": "chain-sums",
            "layernorm": "welford-lanes" if cols < 65536 else "layernorm-clusters",
            "softmax": "long-rows" if cols < 50257 else "cp-async",
        }[name]
    )
    assert f"2026-11-27-h100-{run}" in choice.reason


def test_the_h200_caches_softmax_rows_of_50257_to_65536_in_shared_memory() -> None:
    """On the H200 softmax rows of 32768 take the Triton loop keeping each lane's statistics, the
    chunks read again (98.2% of a copy where the Gluon loop with the row cached in shared memory
    read 93.6, compile 46.0; bench/results/2026-11-28-h200-lanes-32768), misaligned rows of 50257 the Gluon loop with the row cached by cp.async (76.3 against the
    Triton loop's 70.2; -h200-cp-async), rows of 65536 a cluster of two CTAs, each caching half
    the row, their partials pushed (96.9 against 47.3 for compile, each CTA's statistics per lane;
    -h200-cp-async: one 128 KiB cache a CTA would leave one program an SM); the H100, where the
    Triton loop's second read hits L2, keeps Triton at rows of 32768 (-h100-long-rows,
    -h100-gluon-long-rows) and takes clusters of 2 at 65536 only with the statistics per lane
    (99.7 against the loop's 97.9, -h100-cp-async)."""
    from tilec.ir.target import H200

    for cols, emitter, plan, run in (
        (32768, "triton", "xblock=1,chunk=4096,num_warps=32,lanes_reread=true", "2026-11-28-h200-lanes-32768"),
        (50257, "gluon", "xblock=1,chunk=8192,num_warps=8", "2026-11-27-h200-cp-async"),
        (65536, "gluon", "xblock=1,chunk=8192,num_warps=8,cluster=2,exchange=push", "2026-11-27-h200-cp-async"),
    ):
        choice = choose(meta_kernel("softmax", 4096, cols).kernel, hopper=True, gpu=H200.name)
        assert isinstance(choice, Choice) and (choice.emitter, choice.plan) == (emitter, plan), choice
        assert run in choice.reason
    on_h100 = choose(meta_kernel("softmax", 4096, 32768).kernel, hopper=True)
    assert isinstance(on_h100, Choice) and on_h100.emitter == "triton", on_h100
    on_h100 = choose(meta_kernel("softmax", 4096, 65536).kernel, hopper=True)
    assert isinstance(on_h100, Choice) and "cluster=2," in (on_h100.plan or ""), on_h100


@pytest.mark.parametrize("gpu", ["H100", "H200"])
def test_each_gpus_table_is_what_the_tool_derives(gpu: str) -> None:
    """A GPU's table is `bench/rules.py` on its runs — plan surveys (`--plans`: the H100's forward
    ops, then its residual-fused norms), `tilec bench` runs (the H100's norm backward at the
    shapes Inductor fuses) and runs whose kernels the autotuner timed in place (`--kernels`, named
    "kernels:RUN" here: the models' other kernels, the cross-entropy's) — rule for rule (action,
    plan, range, figures, run): what the runs measured, nothing edited. The runs and their order are
    bench/table_runs.json's."""
    from tilec.ir import target

    tool = load("rules")
    names = load("tables").runs(gpu)
    derived = load("tables").derive(names)
    assert all(sources for _, sources in derived), "a run that derives no rule"
    rules = tuple(r for _, sources in derived for s in sources for r in eval(s, {"Rule": Rule}))
    for named in names:  # the command derives each run's rules, as printed for review
        run, kernels, families = load("tables").parse(named)
        folder = ROOT / RESULTS / run
        if kernels:
            assert tool.main(["--kernels", str(folder), *(["--families", ",".join(families)] if families else [])]) == 0
        elif (folder / "plans.jsonl").exists():
            assert tool.main(["--plans", str(folder / "plans.jsonl")]) == 0
        else:
            assert tool.main([str(folder / "results.jsonl")]) == 0
    assert TABLES[getattr(target, gpu).name] == rules


@pytest.mark.parametrize("op", ["rmsnorm", "layernorm", "softmax"])
def test_each_forward_row_length_is_decided_by_a_measurement_of_it(op: str) -> None:
    """Every row length of the bf16 forward suite (softmax's misaligned rows of 50257 included, for
    every op) is decided, in each GPU's table, by a rule whose figures measured that length: a
    rule covers a range of row bytes, and a survey of chosen shapes reaches up to the power of two
    past its longest row, so a run placed ahead of the one that measured a length could decide it
    unmeasured (the H200's survey of rows of 32768 alone reaches LayerNorm's rows of 50257, where
    its plan reads 37% of a copy against 57 for the one measured there:
    bench/results/2026-11-28-h200-lanes-long)."""
    from tilec.passes.chooser import signature

    bench = load("bench")
    shapes: dict[int, int] = {}
    for m, n in bench.SUITE + bench.SOFTMAX_EXTRA:
        shapes.setdefault(n, m)  # one row count a length (each in the suite as Inductor fuses it)
    for n, m in sorted(shapes.items()):
        sig = signature(meta_kernel(op, m, n).kernel)
        for gpu, rules in TABLES.items():
            rule = next(r for r in rules if r.covers(sig))
            lengths = {int(f.split()[0].split("x")[1]) for f in rule.figures.split("; ")}
            assert n in lengths, (gpu, op, n, rule.run, rule.figures)


def test_the_tables_script_writes_a_run_into_its_gpus_table(tmp_path: Path) -> None:
    """bench/tables.py: the H100's table with its first run taken out, then inserted again at the
    head under a comment (of several lines), is the committed table; written over unchanged, it is
    the same table."""
    import importlib.util
    import sys

    tables = load("tables")
    names = tables.runs("H100")
    blocks = tables.derive(names)
    source = tables.CHOOSER.read_text()

    def rules_of(text: str) -> tuple[Rule, ...]:
        path = tmp_path / f"chooser_{len(list(tmp_path.iterdir()))}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return tuple(Rule(**vars(r)) for r in module.RULES)

    same = tables.rewrite(source, "RULES", blocks, None)
    assert rules_of(same) == TABLES["NVIDIA H100 80GB HBM3"]
    first = blocks[0][0]
    without = tables.rewrite(source, "RULES", [*blocks[1:], (first, [])], None)
    assert all(r.run != first for r in rules_of(without))  # (its name stays in MIX_ORDER_FUSIONS)
    again = tables.rewrite(without, "RULES", blocks, (first, None, ["the first run,\nagain", "and more"]))
    assert "    # the first run,\n    # again\n    # and more\n" in again  # each line of a comment a `#` line
    assert rules_of(again) == TABLES["NVIDIA H100 80GB HBM3"]


def test_a_row_size_takes_the_candidate_that_wins_at_every_shape() -> None:
    """bench/rules.py over a survey: of the candidates that beat compile by the margin at every shape
    of a row size, the fastest over them all; a candidate fastest at one shape but slower than
    compile at another is not taken; where none wins everywhere, stock. Old records (`def`,
    `cC-wW`) are the Triton pipeline's heuristic plan and its long-row plans."""
    tool = load("rules")

    def rec(m: int, n: int, variant: str, ms: float, emitter: str = "", plan: str = "") -> dict[str, Any]:
        r: dict[str, Any] = {"op": "rmsnorm", "m": m, "n": n, "variant": variant, "ms": ms, "pct": 100 / ms}
        return r | ({"emitter": emitter, "plan": plan} if emitter else {})

    plans = [{"meta": {"gpu": "Test GPU"}}]
    for m, fast, steady in ((4096, 0.80, 0.95), (16384, 1.20, 0.96)):  # rows of 2048 bf16: 4 KiB
        plans += [
            rec(m, 2048, "compile", 1.0),
            rec(m, 2048, "gluon", 1.0, "gluon"),
            rec(m, 2048, "triton-x2-w4", fast, "triton", "xblock=2,num_warps=4"),
            rec(m, 2048, "triton-x1-w8", steady, "triton", "xblock=1,num_warps=8"),
        ]
    plans += [rec(4096, 8192, "compile", 1.0), rec(4096, 8192, "def", 0.995), rec(4096, 8192, "c4096-w16", 1.2)]
    (small, large) = tool.derive([], plans=plans)
    assert (small.lo, small.hi, small.action) == (0, 16384, "triton{xblock=1,num_warps=8}")
    assert small.figures == "4096x2048 105.3 vs 100.0; 16384x2048 104.2 vs 100.0"
    assert (large.lo, large.action) == (16384, "stock")  # 0.5% faster: inside the margin
    assert large.figures == "4096x8192 100.5 vs 100.0"  # tilec's fastest candidate
    assert tool.surveyed(plans[-1]) == "triton{xblock=1,chunk=4096,num_warps=16}"
    assert tool.surveyed(plans[-2]) == "tilec-triton" and tool.surveyed(plans[1]) == "compile"


def test_a_survey_of_the_long_rows_comes_first_and_the_whole_survey_is_cut_around_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/rules.py on a survey of chosen shapes (`bench/plans.py --shapes` or `--min-row`: its
    meta says so) starts its rules at its shortest row, not at 0; a survey derived after it
    (`--after`, `derive(covered=...)`) leaves the row sizes it covers to it — those shapes out of
    its groups, each range cut around the earlier rules' (a range may become two)."""
    tool = load("rules")

    def rec(n: int, variant: str, ms: float, plan: str = "") -> dict[str, Any]:
        r: dict[str, Any] = {"op": "rmsnorm", "m": 4096, "n": n, "variant": variant, "ms": ms, "pct": 100 / ms}
        return r | ({"emitter": "triton", "plan": plan} if plan else {})

    longer = [{"meta": {"gpu": "Test GPU", "min_row": 32768}}]
    for n in (32768, 65536):  # rows of 64 and 128 KiB: the second plan wins both
        longer += [
            rec(n, "compile", 1.0),
            rec(n, "a", 0.9, "xblock=1,chunk=8192"),
            rec(n, "b", 0.8, "xblock=1,reverse=true"),
        ]
    (first,) = tool.derive([], plans=longer)
    assert (first.lo, first.hi, first.action) == (65536, 2**62, "triton{xblock=1,reverse=true}")
    whole = [{"meta": {"gpu": "Test GPU"}}]
    for n, ms in ((2048, 0.9), (32768, 0.95), (262144, 0.9)):  # 4 KiB, 64 KiB (covered), 512 KiB
        whole += [rec(n, "compile", 1.0), rec(n, "a", ms, "xblock=1,chunk=8192")]
    # the row of 32768 left to the first survey; the one group's range cut around it
    covered = [Rule("sum", 65536, 131072, "triton", "long", "f")]  # a rule in the middle, for the cut
    cut = tool.derive([], plans=whole, covered=covered)
    assert [(d.lo, d.hi) for d in cut] == [(0, 65536), (131072, 2**62)], cut
    assert all(d.figures == "4096x2048 111.1 vs 100.0; 4096x262144 111.1 vs 100.0" for d in cut)
    # the command line: --after reads the first survey's rules
    (tmp_path / "long").mkdir()
    (tmp_path / "whole").mkdir()
    (tmp_path / "long" / "plans.jsonl").write_text("".join(json.dumps(r) + "\n" for r in longer))
    (tmp_path / "whole" / "plans.jsonl").write_text("".join(json.dumps(r) + "\n" for r in whole))
    args = ["--plans", str(tmp_path / "whole" / "plans.jsonl"), "--after", str(tmp_path / "long" / "plans.jsonl")]
    assert tool.main(args) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Rule(")]
    whole_run = str(tmp_path / "whole")  # a folder outside bench/results/ is named by its path
    assert printed == [
        f"Rule('sum', 0, 65536, 'triton', {whole_run!r}, '4096x2048 111.1 vs 100.0', plan='xblock=1,chunk=8192'),"
    ]


def test_a_survey_of_chosen_shapes_decides_only_the_rows_it_measured() -> None:
    """bench/rules.py on a survey of chosen shapes (`bench/plans.py --shapes`) ends its last rule at
    the power of two past its longest row, so a table may list it before a survey of the long
    rows (`--min-row`, whose last rule runs on) without its rule reaching rows it never measured."""
    tool = load("rules")

    def rec(n: int, variant: str, ms: float, plan: str = "") -> dict[str, Any]:
        r: dict[str, Any] = {"op": "layernorm", "m": 4096, "n": n, "variant": variant, "ms": ms, "pct": 100 / ms}
        return r | ({"emitter": "triton", "plan": plan} if plan else {})

    chosen = [{"meta": {"gpu": "Test GPU", "shapes": ["4096x8192", "4096x16384"]}}]
    for n, ms in ((8192, 1.0), (16384, 0.9)):  # rows of 16 and 32 KiB: stock, then the plan
        chosen += [rec(n, "compile", 1.0), rec(n, "a", ms, "xblock=1,rblock=8192")]
    (first, second) = tool.derive([], plans=chosen)
    assert (first.lo, first.hi, first.action) == (16384, 32768, "stock")
    assert (second.lo, second.hi, second.action) == (32768, 65536, "triton{xblock=1,rblock=8192}")


def _model_row(
    *kernels: tuple[tuple[Any, ...], dict[str, float]], gpu: str = "Test GPU", traced: Any = None
) -> dict[str, Any]:
    """A `tilec bench --models --autotune` row: its kernels' signatures and timings (ms), and where
    a size is symbolic the sizes they were timed at."""
    report = [
        {"signature": list(sig), "timings": sorted(ms.items(), key=lambda kv: kv[1]), "traced": traced}
        for sig, ms in kernels
    ] + [{"signature": None, "timings": []}]  # a kernel tilec could not lower
    return {"meta": {"gpu": gpu}, "report": report}


def test_rules_from_a_models_run_cover_what_the_models_timed(tmp_path: Path) -> None:
    """bench/rules.py --kernels: the kernels of whole models the autotuner timed in place, grouped by
    signature outside what the table's other rules cover; a row size takes the candidate that beat
    stock by the margin at every kernel of that size, over the power-of-two range holding it (all
    sizes for pointwise kernels), clipped by the other rules; a kernel timed twice (read from the
    autotuner's cache) counts once; figures are microseconds each run holds."""
    tool = load("rules")
    sum3 = ("sum", 3, 2, 4096, 2048)  # rows of 4 KiB, three row inputs
    rows = [
        _model_row(
            (("pointwise", 1, 2, 8388608, None), {"stock": 0.0500, "triton": 0.0502}),
            (("pointwise", 1, 2, 4096, None), {"stock": 0.0040, "triton": 0.0030}),  # tilec faster here only
            (sum3, {"stock": 0.0120, "triton": 0.0100, "triton{xblock=1,num_warps=8}": 0.0110}),
            (("sum", 3, 2, 128, 2048), {"stock": 0.0050, "triton": 0.0040}),
            (("sum", 2, 2, 4096, 2048), {"stock": 0.0200, "triton": 0.0100}),  # the base table covers it
            (("sum-of-products", 2, 2, 4096, 32000), {"stock": 0.100, "triton": 0.0995}),  # inside the margin
        ),
        _model_row((sum3, {"stock": 0.0120, "triton": 0.0100, "triton{xblock=1,num_warps=8}": 0.0110})),  # cached
        _model_row((("column-sum", 4, 4, 49152, None), {"stock": 0.080, "gluon": 0.020}), traced=(49152, 128)),
    ]
    base = (
        Rule("sum", 0, 4096, "stock", "r", "f", row_inputs=3),
        Rule("sum", 0, 2**62, "triton", "r", "f", row_inputs=2),
    )
    derived = {(d.family, d.row_inputs): d for d in tool.derive_models(rows, base)}
    columns = next(d for d in tool.derive_models(rows, base) if d.symbolic)
    assert (columns.family, columns.row_inputs, columns.lo, columns.hi) == ("column-sum", 4, 0, 2**62)
    assert columns.action == "gluon" and columns.figures == "49152x128 20.0 vs 80.0 us"  # at the traced sizes
    assert "symbolic=True" in columns.source("r")
    derived = {k: d for k, d in derived.items() if k != ("column-sum", 4)}
    assert set(derived) == {("pointwise", 1), ("sum", 3), ("sum-of-products", 2)}
    point, sums, products = derived[("pointwise", 1)], derived[("sum", 3)], derived[("sum-of-products", 2)]
    assert (point.lo, point.hi, point.action) == (0, 2**62, "stock")  # lost (by the margin) at one size
    assert point.figures == "8388608x1 50.2 vs 50.0 us; 4096x1 3.0 vs 4.0 us"  # where stock won by most first
    assert (sums.lo, sums.hi, sums.action) == (4096, 8192, "triton")  # from the base rule's end
    assert sums.figures == "4096x2048 10.0 vs 12.0 us; 128x2048 4.0 vs 5.0 us"  # the cached repeat counted once
    assert (products.lo, products.hi, products.action) == (32768, 65536, "stock")
    source = "".join(d.source("2026-11-26-run") for d in derived.values())
    assert "Rule('sum', 4096, 8192, 'triton', '2026-11-26-run'" in source and "row_inputs=3" in source

    # the figures check reads a models run's kernels
    runs = tmp_path
    (runs / "models.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    measured = _measured(runs)
    for d in [*derived.values(), columns]:
        rule = Rule(d.family, d.lo, d.hi, "stock", "x", d.figures, elem_bytes=d.elem_bytes, row_inputs=d.row_inputs)
        assert not _unmatched(rule, measured), d
    moved = Rule("sum", 4096, 8192, "stock", "x", "4096x2048 10.1 vs 12.0 us", row_inputs=3)
    assert _unmatched(moved, measured) == ["models:sum:3 4096x2048 bf16: 10.1"]


def test_a_kernel_of_100_us_or_more_needs_the_suites_margin_only() -> None:
    """Kernels timed in place need a 3% win where stock takes microseconds (one timing among
    microseconds is noisy), 1% where stock takes 100 us or more (1% is a microsecond or more)."""
    tool = load("rules")
    long_win = _model_row((("sum-of-products", 2, 2, 4096, 32768), {"stock": 0.2760, "triton": 0.2695}))  # 2.4%
    short_win = _model_row((("sum-of-products", 2, 2, 128, 32768), {"stock": 0.0200, "triton": 0.0195}))  # 2.5%
    (long,) = tool.derive_models([long_win])
    assert (long.lo, long.hi, long.action) == (65536, 131072, "triton")
    (short,) = tool.derive_models([short_win])
    assert short.action == "stock"
    (both,) = tool.derive_models([long_win, short_win])  # one range: the short kernel's loss keeps it stock
    assert both.action == "stock"


def test_a_models_rule_names_its_kernels_in_the_reason() -> None:
    """A reason from a models rule says which kernels it covers: pointwise kernels; rows with the
    number of row inputs."""
    assert Signature("pointwise", 4096, None, 0).where() == "pointwise kernels"
    assert Signature("sum", 4096, 2048, 4096, row_inputs=3).where() == "sum rows of 4096 bytes (3 row inputs)"
    assert (
        Signature("column-sum", 4096, 64, 256, elem_bytes=4).where()
        == "column-sum columns of 256 bytes (4-byte elements)"
    )


def _cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.float(), labels, ignore_index=-100)


@pytest.mark.parametrize(
    ("rows", "vocab", "gpu", "family", "emitter", "plan", "run"),
    [
        (8192, 50257, "H100", "log-sum-exp", "gluon", "", "2026-11-26-h100-cross-entropy-kernels"),
        (
            4096,
            32000,
            "H100",
            "log-sum-exp",
            "triton",
            "xblock=1,chunk=16384,num_warps=16",
            "2026-11-26-h100-cross-entropy-kernels",
        ),
        # rows no log-sum-exp rule covers: softmax's rule for the row size decides
        (64, 2048, "H100", "softmax", "triton", "xblock=2,num_warps=4", "2026-11-26-h100-narrow-ends"),
        (
            4096,
            32000,
            "H200",
            "log-sum-exp",
            "triton",
            "xblock=1,chunk=8192,num_warps=8,groups=8",
            "2026-11-29-h200-cross-entropy-groups",
        ),
    ],
)
def test_a_cross_entropys_log_sum_exp_has_rules_of_its_own(
    rows: int, vocab: int, gpu: str, family: str, emitter: str, plan: str, run: str
) -> None:
    """A cross-entropy's forward reduces like softmax (a max, then a sum of exponentials) but writes
    only a value per row: the family `log-sum-exp`, with rules measured on it in place (H100, H200); where
    no such rule covers its rows, softmax's rules for the row size decide (`chooser.FALLBACK`), the
    reason naming the softmax rule it used."""
    from tilec.frontend.capture import capture
    from tilec.ir import target

    args = [torch.empty(rows, vocab, dtype=torch.bfloat16, device="meta")]
    args.append(torch.empty(rows, dtype=torch.int64, device="meta"))
    kernel = capture(_cross_entropy, args, strict=True)[0].result.kernel  # type: ignore[union-attr]
    assert signature(kernel).family == "log-sum-exp"
    choice = choose(kernel, hopper=True, gpu=getattr(target, gpu).name)
    assert isinstance(choice, Choice) and (choice.emitter, choice.plan) == (emitter, plan), choice
    assert choice.reason.startswith(f"measured fastest for {family} rows") and f"{RESULTS}/{run}:" in choice.reason


def test_rows_of_symbolic_length_on_the_h200_take_plans_for_their_shorter_rows() -> None:
    """Softmax and LayerNorm over rows of symbolic length (`torch.compile(dynamic=True)`): on the
    H200 no one plan beat stock at every length surveyed (bench/results/2026-11-28-h200-symbolic-
    survey), so the rule gives the shorter rows plans of their own, each below the length from
    which the next won; RMSNorm's rows of 256 stay stock's, so its rule keeps stock. Softmax's
    plans, surveyed again with a split row's whole chunks on vectors (-2026-11-29-h200-symbolic-
    lines), each say so (`line=16`: faster than align-rows' lines at every plan and length there);
    LayerNorm's keep the lines. The H100, with no such survey, keeps stock for lack of a measurement."""
    from tilec.frontend.capture import capture
    from tilec.ir.target import H200

    def kernel(fn: Any, *inputs: torch.Tensor) -> Any:
        (k,) = capture(fn, list(inputs), dynamic="all")
        return k.result.kernel  # type: ignore[union-attr]

    x, w = torch.randn(64, 1000, dtype=torch.bfloat16), torch.randn(1000, dtype=torch.bfloat16)
    softmax = kernel(lambda x: torch.softmax(x.float(), -1).to(x.dtype), x)
    assert signature(softmax).symbolic
    choice = choose(softmax, hopper=True, gpu=H200.name)
    assert isinstance(choice, Choice) and choice.emitter == "triton", choice
    plans = [plan for plan, _ in choice.shorter] + [choice.plan]
    lengths = [below for _, below in choice.shorter]
    assert len(plans) == 4 and len(set(plans)) == 4, choice  # (bench/rules.py: at most four)
    assert lengths == sorted(lengths) and lengths[0] > 256, choice
    assert "2026-11-29-h200-symbolic-lines" in choice.reason
    assert all(plan.endswith(",line=16") for plan in plans), choice
    layernorm = kernel(lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b), x, w, w)
    ln = choose(layernorm, hopper=True, gpu=H200.name)
    assert isinstance(ln, Choice) and ln.shorter, ln
    assert "2026-11-28-h200-symbolic-survey" in ln.reason and "line=" not in (ln.plan or ""), ln
    rmsnorm = kernel(lambda x, w: x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w, x, w)
    rms = choose(rmsnorm, hopper=True, gpu=H200.name)
    assert isinstance(rms, Decline) and rms.reason.startswith(
        "stock Inductor measured faster for sum rows of symbolic"
    ), rms
    on_h100 = choose(softmax, hopper=True)
    assert isinstance(on_h100, Decline) and "rows of symbolic length" in on_h100.reason, on_h100


def test_rows_of_symbolic_length_split_where_no_one_plan_wins_at_every_length() -> None:
    """bench/rules.py --kernels on a survey of rows of symbolic length (bench/symbolic_survey.py:
    one kernel timed at several sizes): where a plan wins at every length, it alone; where none
    does, the lengths measured cut into ranges of a plan each (`shorter`: the cut of the most
    speedup, at most MOST_PLANS_BY_LENGTH ranges); where no cut has a plan for every range, stock."""
    tool = load("rules")
    sig = ("softmax", 1, 2, None, None, 0)
    small, mid, wide = (
        "triton{xblock=1,rblock=256,num_warps=1}",
        "triton{xblock=1,rblock=512,num_warps=1}",
        "triton{xblock=1,rblock=2048,num_warps=4}",
    )

    def sized(m: int, n: int, ms: dict[str, float]) -> dict[str, Any]:
        return _model_row((sig, ms), traced=[m, n])

    short_rows = sized(65536, 256, {"stock": 0.050, small: 0.040, mid: 0.045, wide: 0.090})
    mid_rows = sized(8192, 2048, {"stock": 0.060, small: 0.030, mid: 0.031, wide: 0.031})
    long_rows = sized(1024, 32768, {"stock": 0.110, small: 0.150, mid: 0.140, wide: 0.080})
    (both,) = tool.derive_models([short_rows, mid_rows, long_rows])
    assert both.symbolic and both.action == wide and both.shorter == ((small, 32768),), both
    # (the mid rows: every plan wins there, the small one by most)
    assert "shorter=(('xblock=1,rblock=256,num_warps=1', 32768),)" in both.source("run")
    assert "65536x256 40.0 vs 50.0 us" in both.figures and "1024x32768 80.0 vs 110.0 us" in both.figures
    (one,) = tool.derive_models([mid_rows, long_rows])
    assert one.action == wide and not one.shorter
    # three ranges where the mid rows' own plan wins there by most
    mid_best = sized(8192, 2048, {"stock": 0.060, small: 0.040, mid: 0.025, wide: 0.045})
    (three,) = tool.derive_models([short_rows, mid_best, long_rows])
    assert three.action == wide and three.shorter == ((small, 2048), (mid, 32768)), three
    assert tool.by_length(
        [tool.model_kernels([r])[0][2] for r in (short_rows, mid_best, long_rows)], lambda _: 0.03, most=2
    ) == (((mid, 32768),), wide)  # two ranges at most: the mid rows' plan serves the short rows too
    lost = sized(2048, 16384, {"stock": 0.070, small: 0.090, mid: 0.090, wide: 0.075})  # neither wins there
    (stock,) = tool.derive_models([short_rows, mid_rows, lost, long_rows])
    assert stock.action == "stock" and not stock.shorter
