"""repeats: a pointwise kernel's costly values that repeat across its block (a rotary embedding's
cos and sin, the same for every head of a token) computed once per column. The rewritten kernel
computes the same values as the kernel it came from, bit for bit (the same operations on the same
operands), in tilec's interpreter and as emitted Triton; where the costly value reads the digits
between its columns and its block, or nothing is costly, the kernel is left as it was."""

from __future__ import annotations

from pathlib import Path

import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

from examples import run_chain
from tilec import interp
from tilec.frontend import Lowered
from tilec.frontend.entry import load_entry
from tilec.ir import Kernel, parse
from tilec.passes import run_pipeline
from tilec.passes.pipelines import TRITON_DEFAULT
from tilec.passes.repeats import find
from tilec.testing import assert_close

ROOT = Path(__file__).resolve().parents[2]

# a pointwise kernel: out[x] = v[x] * f(table[x % low] * ((x // high) % wrap)), f costly
KERNEL = """
tile.kernel @k(%v: ptr<f32>, %table: ptr<f32>, %out: ptr<f32>) constexprs(XBLOCK) attributes {{grid = [cdiv({n}, XBLOCK)]}} {{
  %pid = tile.program_id : i32
  %xnumel = tile.constant {{value = {n}}} : i32
  %xblock = tile.constant {{value = XBLOCK}} : i32
  %xoffset = tile.mul %pid, %xblock : i32
  %xrange = tile.arange {{end = XBLOCK}} : tile<[XBLOCK], i32>
  %xindex = tile.add %xrange, %xoffset : tile<[XBLOCK], i32>
  %xmask = tile.cmp %xindex, %xnumel {{predicate = "lt"}} : tile<[XBLOCK], i1>
  %low = tile.constant {{value = {low}}} : i32
  %high = tile.constant {{value = {high}}} : i32
  %wrap = tile.constant {{value = {wrap}}} : i32
  %col = tile.rem %xindex, %low : tile<[XBLOCK], i32>
  %t = tile.load %table, %col, %xmask : tile<[XBLOCK], f32>
  %pos = tile.div %xindex, %high : tile<[XBLOCK], i32>
  %pos_1 = tile.rem %pos, %wrap : tile<[XBLOCK], i32>
  %posf = tile.cast %pos_1 : tile<[XBLOCK], f32>
  %angle = tile.mul %t, %posf : tile<[XBLOCK], f32>
  %f = tile.{op} %angle : tile<[XBLOCK], f32>
  %x = tile.load %v, %xindex, %xmask : tile<[XBLOCK], f32>
  %y = tile.mul %x, %f : tile<[XBLOCK], f32>
  tile.store %out, %xindex, %y, %xmask
}}
"""


# the same with its size and the position's period parameters, as Inductor has them over a
# symbolic number of tokens: out[x] = v[x] * f(table[x % low] * ((x // high) % wrap))
SYMBOLIC = (
    KERNEL.replace("%out: ptr<f32>)", "%out: ptr<f32>, %wrap: i32, %xnumel: i32)")
    .replace("cdiv({n}, XBLOCK)", "cdiv(xnumel, XBLOCK)")
    .replace("  %xnumel = tile.constant {{value = {n}}} : i32\n", "")
    .replace("  %wrap = tile.constant {{value = {wrap}}} : i32\n", "")
)


def _outputs(text: str, pipeline: str, n: int, low: int, sizes: tuple[int, ...] = ()) -> torch.Tensor:
    module = parse(text)
    if pipeline:
        run_pipeline(module, pipeline)
    kernel = module.kernels[0]
    torch.manual_seed(n)
    v, table = torch.randn(n), torch.rand(low) * 0.1
    out = torch.full((n,), float("nan"))
    blocks = {"XBLOCK": 256} if kernel.constexprs["XBLOCK"] is None else {}
    interp.run(kernel, v, table, out, *sizes, **blocks)
    return out


@settings(max_examples=examples(25), deadline=None)
@given(
    n=st.integers(1, 5000),
    low=st.sampled_from([1, 3, 16, 32, 64, 96, 128]),
    high=st.sampled_from([64, 128, 256, 384, 2048, 4096]),
    wrap=st.sampled_from([1, 5, 8, 1024]),
    op=st.sampled_from(["cos", "sin", "exp", "sqrt"]),
)
@example(n=4096, low=64, high=2048, wrap=1024, op="cos")  # the rotary form: [32, 64] blocks of 2048
@example(n=1000, low=64, high=4096, wrap=1, op="exp")  # one block past the end, masked
@example(n=3000, low=96, high=384, wrap=8, op="cos")  # 96 columns: not a power of two
def test_rewritten_kernel_computes_what_it_did(n: int, low: int, high: int, wrap: int, op: str) -> None:
    text = KERNEL.format(n=n, low=low, high=high, wrap=wrap, op=op)
    found = find(parse(text).kernels[0])
    after = _outputs(text, "repeats", n, low)
    assert torch.equal(after, _outputs(text, "", n, low))
    if isinstance(found, str):
        return
    # the costly value on the first row's columns, every row of a block the same
    costly = [o for o in parse_after(text).walk() if o.name == f"tile.{op}"]
    assert [o.result.type.shape for o in costly] == [(1, found.split.columns)]
    assert found.split.columns % low == 0  # (a table read at x % 3 or x % 96 is no column's)
    assert found.split.rows >= 4


@settings(max_examples=examples(25), deadline=None)
@given(
    n=st.integers(1, 5000),
    low=st.sampled_from([1, 16, 64, 96, 128]),
    high=st.sampled_from([64, 256, 384, 2048]),
    wrap=st.integers(1, 40),
    op=st.sampled_from(["cos", "exp"]),
)
@example(n=4096, low=64, high=2048, wrap=2, op="cos")  # Llama's: two tokens of 16 heads of 128
@example(n=1000, low=64, high=256, wrap=3, op="exp")  # a last block past the end, masked
def test_over_a_symbolic_size_the_kernel_computes_what_it_did(n: int, low: int, high: int, wrap: int, op: str) -> None:
    """A symbolic size and a symbolic period (`(x // high) % wrap`, the tokens of a batch): one
    kernel, rewritten once, computes every size as the kernel it came from, bit for bit; its rows
    stay consecutive and its grid cdiv(xnumel, XBLOCK). With `symbolic=false` the kernel is left
    as it was."""
    text = SYMBOLIC.format(low=low, high=high, op=op)
    off = find(parse(text).kernels[0], symbolic=False)
    assert off == "its size is symbolic (the pass's `symbolic` option is off)"
    found = find(parse(text).kernels[0])
    hoists = not isinstance(found, str)
    assert hoists == (high >= 512 and high % 128 == 0 and 128 % low == 0), found
    after = _outputs(text, "repeats", n, low, (wrap, n))
    assert torch.equal(after, _outputs(text, "", n, low, (wrap, n)))
    if hoists:
        assert not isinstance(found, str) and found.split.step == found.split.columns and found.xnumel is None
        grid = parse_after(text, "repeats").launch.grid[0]
        assert str(grid) == f"cdiv(xnumel, {found.split.xblock})"


def parse_after(text: str, pipeline: str = "repeats") -> Kernel:
    module = parse(text)
    run_pipeline(module, pipeline)
    return module.kernels[0]


def test_the_split_keeps_the_digits_between_columns_and_block_out() -> None:
    # the angle reads x % 64 and x // 2048: 128 columns (a program's threads), blocks of 2048
    # (one token's 16 heads)
    found = find(parse(KERNEL.format(n=1 << 20, low=64, high=2048, wrap=1024, op="cos")).kernels[0])
    assert not isinstance(found, str) and (found.split.columns, found.split.xblock) == (128, 2048)
    # blocks of at most `xblock` (a pass option), never past the next power of two of the size
    found = find(parse(KERNEL.format(n=1000, low=16, high=4096, wrap=1, op="exp")).kernels[0])
    assert not isinstance(found, str) and (found.split.columns, found.split.xblock) == (128, 1024)
    # columns past 128 where the low digits need them
    found = find(parse(KERNEL.format(n=1 << 20, low=256, high=4096, wrap=1024, op="cos")).kernels[0])
    assert not isinstance(found, str) and (found.split.columns, found.split.xblock) == (256, 2048)
    # a position read from digits below the columns' period: the angle changes every row
    found = find(parse(KERNEL.format(n=1 << 20, low=64, high=32, wrap=1024, op="cos")).kernels[0])
    assert isinstance(found, str) and "no costly op's value repeats" in found


def _rotary(entry: str, shape: tuple[int, int, int, int]) -> tuple[Lowered, Kernel]:
    """`examples/<entry>` on its example inputs of `shape`, emitted as Triton by the Triton
    pipeline and run in Triton's interpreter, with and without `repeats`: the outputs are equal,
    and equal eager's; the lowered kernel and the kernel run with the pass."""
    target = load_entry(str(ROOT / "examples" / entry))
    assert target.example_inputs is not None
    torch.manual_seed(sum(shape))
    inputs = list(target.example_inputs(shape, torch.bfloat16))
    without = ",".join(p for p in TRITON_DEFAULT if p != "repeats")
    got, lowered, ran = run_chain(target.func, [t.clone() for t in inputs], pipeline="triton-default", triton=True)
    plain, _, _ = run_chain(target.func, [t.clone() for t in inputs], pipeline=without, triton=True)
    assert torch.equal(got, plain)
    assert_close(got.float(), target.func(*[t.float() for t in inputs]), torch.bfloat16, what=entry)
    return lowered[0], ran[0]


@settings(max_examples=examples(4), deadline=None)
@given(
    batch=st.integers(1, 2),
    tokens=st.integers(1, 12),
    heads=st.sampled_from([1, 3, 4, 8, 16]),
    dim=st.sampled_from([32, 64, 128]),
)
@example(batch=2, tokens=8, heads=16, dim=32)  # blocks of one token: [4, 128]
@example(batch=1, tokens=5, heads=8, dim=128)  # [8, 128]
def test_rotary_as_triton_equals_the_kernel_without_the_pass(batch: int, tokens: int, heads: int, dim: int) -> None:
    """Llama's rotary embedding as the model computes it, emitted as Triton (the Triton pipeline,
    with and without `repeats`) and run in Triton's interpreter: equal outputs, and eager's."""
    lowered, ran = _rotary("llama_rotary.py", (batch, tokens, heads, dim))
    found = find(lowered.kernel)
    hoisted = [o for o in ran.walk() if o.name in ("tile.cos", "tile.sin")]
    assert all(o.result.type.shape[0] == 1 for o in hoisted) != isinstance(found, str)
    if (batch, tokens, heads, dim) in ((2, 8, 16, 32), (1, 5, 8, 128)):  # a token's heads: a block of 512, 1024
        assert not isinstance(found, str) and found.split.xblock == heads * dim


@settings(max_examples=examples(3), deadline=None)
@given(batch=st.integers(1, 2), heads=st.sampled_from([4, 8, 16]), tokens=st.sampled_from([3, 16, 64]))
@example(batch=2, heads=16, tokens=64)
@example(batch=1, heads=4, tokens=3)  # a row step of 3 x 128: no power of two
def test_rows_step_over_the_digits_between_where_the_repeat_is_outer(batch: int, heads: int, tokens: int) -> None:
    """Heads outermost: no block of consecutive elements holds a repeat, so each program's rows
    are one column block of each head (a row step of tokens x head_dim), its token and columns
    fixed by the program's id; as Triton, equal to the kernel without the pass and to eager."""
    dim = 128
    lowered, _ = _rotary("llama_rotary.py:heads_first", (batch, heads, tokens, dim))
    found = find(lowered.kernel)
    assert not isinstance(found, str), found
    assert found.split.step == tokens * dim and found.split.columns == 128
    # rows over the heads, and over the batch too where the block has room: neither is read
    assert found.split.rows == min(batch * heads, 16)
