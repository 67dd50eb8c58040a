"""Symbolic sizes: a kernel whose rows are symbolic (Dynamo's dynamic leading dimensions, the row
length static) is lowered once with its x size as the scalar parameter `xnumel`; the one kernel
computes every size in tilec's interpreter, after both default pipelines and as emitted Triton in
Triton's interpreter, and through the CPU hook one compiled kernel serves several batch sizes.

So do kernels with other symbolic sizes: a reduction over a symbolic dimension (`rnumel`),
index coefficients and divisors that are sizes (rotary embeddings over a symbolic sequence),
the bounds of a gathered index into a symbolic table (`ks0`, `ks1`, ...)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

import tilec
from tilec import interp
from tilec.emit.triton import emit_triton
from tilec.frontend import Lowered
from tilec.frontend.capture import capture
from tilec.ir import Kernel, parse, print_kernel
from tilec.passes import run_pipeline
from tilec.passes.pipelines import with_options
from tilec.runtime import load_source
from tilec.testing import assert_close

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))
from examples import run_chain

N = 384
# the last: the Triton pipeline with `repeats` leaving kernels over symbolic sizes (the rotary's) alone
PLAIN_ROTARY = with_options("triton-default", "repeats", "symbolic=false")
PIPELINES = ("triton-default", "gluon-default", PLAIN_ROTARY)


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def gelu_bias(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(x + b, approximate="tanh")


def softmax(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)


FUNCTIONS = {"rmsnorm": rmsnorm, "gelu": gelu_bias, "softmax": softmax}


@functools.cache
def _kernels(name: str) -> tuple[Lowered, dict[str, Kernel]]:
    (k,) = capture(FUNCTIONS[name], [torch.randn(2, 16, N, dtype=torch.bfloat16), torch.randn(N)], dynamic=True)
    assert isinstance(k.result, Lowered), k.summary()
    text = print_kernel(k.result.kernel)
    out = {"logical": parse(text).kernels[0]}
    for pipeline in ("triton-default", "gluon-default"):
        module = parse(text)
        run_pipeline(module, pipeline)
        out[pipeline] = module.kernels[0]
    return k.result, out


def _run(kernel: Kernel, lowered: Lowered, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The kernel on x (rows x N, bf16) and w; x's row count is the kernel's xnumel (its numel for
    a pointwise kernel)."""
    from tilec.interp.dtypes import TORCH_DTYPES

    inputs = iter([x, w])  # the graph's tensor inputs, in order (its size symbols come first)
    (written,) = [a for a in lowered.args if a.is_written]
    out = torch.empty(x.shape, dtype=TORCH_DTYPES[written.dtype])
    args: list[object] = [next(inputs).to(TORCH_DTYPES[a.dtype]) if a is not written else out for a in lowered.args]
    xnumel = x.numel() if lowered.rnumel == 1 else x.shape[0]
    blocks = {"XBLOCK": 4, "RBLOCK": 128} if "RBLOCK" in kernel.constexprs else {"XBLOCK": 256}
    interp.run(kernel, *args, xnumel, **{k: v for k, v in blocks.items() if kernel.constexprs.get(k) is None})
    return out


@pytest.mark.parametrize("name", list(FUNCTIONS))
@settings(max_examples=examples(3), deadline=None)
@given(rows=st.integers(1, 67))
@example(rows=1)
def test_one_kernel_computes_every_size(name: str, rows: int) -> None:
    lowered, kernels = _kernels(name)
    assert lowered.numel is None and list(lowered.sizes) == ["xnumel"]
    x = torch.randn(rows, N).to(torch.bfloat16)
    w = torch.randn(N).to(torch.bfloat16)
    want = FUNCTIONS[name](x.float(), w.float())
    for pipeline, kernel in kernels.items():
        assert_close(_run(kernel, lowered, x, w).float(), want, torch.bfloat16, what=f"{name} {pipeline} {rows} rows")


def test_emitted_triton_takes_the_size_at_launch() -> None:
    from tilec.interp.dtypes import TORCH_DTYPES

    lowered, kernels = _kernels("rmsnorm")
    module = load_source(emit_triton(kernels["triton-default"]).source, interpret=True)
    w = torch.randn(N).to(torch.bfloat16)
    for rows in (3, 40):
        x = torch.randn(rows, N).to(torch.bfloat16)
        (written,) = [a for a in lowered.args if a.is_written]
        out = torch.empty(x.shape, dtype=TORCH_DTYPES[written.dtype])
        inputs = iter([x, w.float()])
        args = [next(inputs) if a is not written else out for a in lowered.args]
        module.launch(*args, rows, num_sms=4)
        assert_close(out.float(), rmsnorm(x.float(), w.float()), torch.bfloat16)


def test_the_cpu_hook_compiles_once_for_every_batch_size() -> None:
    from tilec.runtime import interpreter_active

    if not interpreter_active():
        pytest.skip("the CPU hook runs Triton's interpreter")
    torch._dynamo.reset()
    tilec.reset_report()
    w = torch.randn(N)
    with tilec.installed(cpu=True), tilec.config.patch(decline=False):
        compiled = torch.compile(rmsnorm, dynamic=False, fullgraph=True)
        for rows in (5, 33, 70):
            x = torch.randn(rows, N)
            torch._dynamo.mark_dynamic(x, 0)
            assert_close(compiled(x, w), rmsnorm(x, w), torch.float32)
    records = tilec.report()
    torch._dynamo.reset()
    assert len(records) == 1 and records[0].taken, [(r.kernel, r.reason) for r in records]


# -- other symbolic sizes: one kernel per function, traced at sizes `BASE` (distinct values, so
# each size symbol is known by its value), run at other sizes


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return torch.cat((-x.narrow(-1, h, h), x.narrow(-1, 0, h)), dim=-1)


def rope(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return q * cos + rotate_half(q) * sin


def llama_rope(q: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """Llama's rotary embedding on q as its projection writes it, (batch, tokens, 4 heads x 128):
    batch and tokens symbolic, the heads static, the angle's cos and sin computed in the kernel —
    the same for each head of a token (`repeats` computes them once a token and column)."""
    positions = torch.arange(q.shape[1], device=q.device).float()
    angles = positions.unsqueeze(-1) * inv_freq.unsqueeze(0)
    emb = torch.cat((angles, angles), dim=-1).unsqueeze(1)
    q4 = q.view(q.shape[0], q.shape[1], 4, 128)
    out = q4 * emb.cos().to(q.dtype) + rotate_half(q4) * emb.sin().to(q.dtype)
    return out.view(q.shape)


def column_sum(x: torch.Tensor) -> torch.Tensor:
    return x.float().sum(0)


def middle_sum(x: torch.Tensor) -> torch.Tensor:
    return x.float().sum(1)


def take_rows(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten.index.Tensor(x, [idx]) * 2  # negative indices count from the end


def embedding_rmsnorm(ids: torch.Tensor, table: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return rmsnorm(F.embedding(ids, table), w)


def _bf16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape).to(torch.bfloat16)


# name: (function, inputs for dimensions (a, b, c), the size parameters the kernel takes)
SIZED = {
    "rope": (
        rope,
        lambda a, b, c: [_bf16(a, b, c, 64), _bf16(a, 1, c, 64), _bf16(a, 1, c, 64)],
        ["ks0", "ks1", "xnumel"],
    ),
    "llama-rope": (
        llama_rope,
        lambda a, b, c: [_bf16(a, b, 512), 1.0 / (10000 ** (torch.arange(0, 128, 2).float() / 128))],
        ["ks0", "xnumel"],
    ),
    "column-sum": (column_sum, lambda a, b, c: [_bf16(a, 96)], ["rnumel"]),
    "middle-sum": (middle_sum, lambda a, b, c: [_bf16(a, b, 40)], ["ks0", "rnumel", "xnumel"]),
    "negative-index": (
        take_rows,
        lambda a, b, c: [torch.randn(a, 33), torch.randint(-a, a, (b, 3))],
        ["ks0", "xnumel"],
    ),
    "embedding-rmsnorm": (
        embedding_rmsnorm,
        lambda a, b, c: [torch.randint(0, a, (b, c, 3)), _bf16(a, 64), _bf16(64)],
        ["ks0", "xnumel"],
    ),
}
BASE = (5, 7, 11)


@functools.cache
def _sized(name: str) -> tuple[Lowered, dict[str, int], dict[str, Kernel]]:
    fn, make, _ = SIZED[name]
    torch.manual_seed(0)
    (k,) = capture(fn, make(*BASE), dynamic=True)
    assert isinstance(k.result, Lowered), k.summary()
    text = print_kernel(k.result.kernel)
    kernels = {"logical": parse(text).kernels[0]}
    for pipeline in PIPELINES:
        module = parse(text)
        run_pipeline(module, pipeline)
        kernels[pipeline] = module.kernels[0]
    return k.result, k.symbols, kernels


def _size_values(lowered: Lowered, symbols: dict[str, int], dims: tuple[int, ...]) -> list[int]:
    """The kernel's size arguments for inputs of dimensions `dims` (each symbol traced at a
    dimension of `BASE` takes the matching one of `dims`)."""
    import sympy

    values = {sympy.Symbol(s, integer=True, positive=True): dims[BASE.index(v)] for s, v in symbols.items()}
    return [int(sympy.sympify(e).xreplace(values)) for e in lowered.sizes.values()]


def _run_sized(kernel: Kernel, lowered: Lowered, inputs: list[torch.Tensor], sizes: list[int], like: torch.Tensor):
    """The kernel on `inputs` (its read buffers, the graph's inputs in order) and its size
    arguments; returns what it wrote, shaped like `like`."""
    from tilec.interp.dtypes import TORCH_DTYPES

    reads = sorted((a.buffer for a in lowered.args if not a.is_written), key=lambda b: int(b[3:].split("_")[0]))
    by_buffer = dict(zip(reads, inputs))
    (written,) = [a for a in lowered.args if a.is_written]
    out = torch.empty(like.shape, dtype=TORCH_DTYPES[written.dtype])
    args = [out if a is written else by_buffer[a.buffer] for a in lowered.args]
    blocks = {"XBLOCK": 4, "RBLOCK": 16} if "RBLOCK" in kernel.constexprs else {"XBLOCK": 64}
    interp.run(kernel, *args, *sizes, **{k: v for k, v in blocks.items() if kernel.constexprs.get(k) is None})
    return out


def test_sized_kernels_take_their_sizes_as_parameters() -> None:
    for name, (_, _, params) in SIZED.items():
        lowered, symbols, kernels = _sized(name)
        assert list(lowered.sizes) == params, (name, lowered.sizes)
        assert sorted(symbols.values()) == sorted(set(symbols.values())), name  # one symbol per dimension
        logical = kernels["logical"]
        assert [p.name_hint for p in logical.params[-len(params) :]] == params, name


def test_rope_reads_the_tables_at_symbolic_strides() -> None:
    lowered, _, kernels = _sized("rope")
    text = print_kernel(kernels["logical"])
    # the position of an element in cos/sin: (x // (64*b*c)) * (64*c) + x % (64*c)
    assert "tile.div %xindex, %ks0" in text and "tile.rem %xindex, %ks1" in text, text
    assert {n: str(e) for n, e in lowered.sizes.items()}["ks1"].startswith("64*")


def test_a_symbolic_reduction_length_is_the_loop_bound() -> None:
    lowered, _, kernels = _sized("column-sum")
    assert lowered.rnumel is None and lowered.numel == 96 and lowered.is_reduction
    text = print_kernel(kernels["logical"])
    assert "to %rnumel step %rblock" in text and "tile.cmp %rindex, %rnumel" in text, text


@pytest.mark.parametrize("name", list(SIZED))
@settings(max_examples=examples(4), deadline=None)
@given(dims=st.tuples(st.integers(1, 16), st.integers(1, 16), st.integers(1, 12)))
@example(dims=BASE)
@example(dims=(1, 1, 1))
@example(dims=(40, 3, 24))
def test_one_sized_kernel_computes_every_size(name: str, dims: tuple[int, int, int]) -> None:
    fn, make, _ = SIZED[name]
    lowered, symbols, kernels = _sized(name)
    torch.manual_seed(sum(dims))
    inputs = make(*dims)
    want = fn(*(x.float() if x.is_floating_point() else x for x in inputs))
    sizes = _size_values(lowered, symbols, dims)
    for pipeline, kernel in kernels.items():
        got = _run_sized(kernel, lowered, inputs, sizes, want)
        dtype = inputs[0].dtype if inputs[0].is_floating_point() else inputs[1].dtype
        assert_close(got.float(), want.float(), dtype, what=f"{name} {pipeline} {dims}")


@pytest.mark.parametrize("name", list(SIZED))
def test_the_cpu_hook_compiles_a_sized_kernel_once(name: str) -> None:
    """Through the CPU hook (Inductor's wrapper passes the size arguments, Triton's interpreter
    runs the kernel; a loop bounded by an argument included), one compile serves three sizes."""
    from tilec.runtime import interpreter_active

    if not interpreter_active():
        pytest.skip("the CPU hook runs Triton's interpreter")
    fn, make, _ = SIZED[name]
    torch._dynamo.reset()
    tilec.reset_report()
    with tilec.installed(cpu=True), tilec.config.patch(decline=False):
        compiled = torch.compile(fn, dynamic=False, fullgraph=True)
        for dims in (BASE, (9, 3, 6), (13, 2, 17)):
            torch.manual_seed(sum(dims))
            inputs = [x.float() if x.is_floating_point() else x for x in make(*dims)]
            for x in inputs:
                for d in range(x.dim() - 1):
                    torch._dynamo.mark_dynamic(x, d)
            assert_close(compiled(*inputs), fn(*inputs), torch.float32, what=f"{name} {dims}")
    records = tilec.report()
    torch._dynamo.reset()
    assert records and all(r.taken for r in records), [(r.kernel, r.reason) for r in records]
    assert len({r.kernel for r in records}) == len(records)  # compiled once


def weight_grad(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """RMSNorm's weight gradient: a sum over every token of dy * x-hat (Inductor splits it)."""
    xf = x.float()
    xhat = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (dy.float() * xhat).sum((0, 1))


def test_a_split_sum_over_symbolic_tokens() -> None:
    """The weight gradient's sum over tokens: Inductor splits it into partial sums over
    cdiv(tokens, splits) rows (a symbolic reduction length, the tail masked by the symbolic token
    count) and a sum of the partials; every kernel is taken and the chain equals eager."""
    torch.manual_seed(0)
    x, dy = _bf16(3, 203, N), _bf16(3, 203, N)
    got, kernels, _ = run_chain(weight_grad, [x, dy], dynamic=True)
    assert any(k.rnumel is None for k in kernels), [k.sizes for k in kernels]
    assert_close(got.float(), weight_grad(x.float(), dy.float()), torch.bfloat16)


def scaled_softmax(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float() / s, -1).to(x.dtype)


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_a_number_passed_by_value_is_a_parameter_of_gpu_kernels(pipeline: str) -> None:
    """A 0-d CPU tensor a GPU kernel reads (a loss's divisor, a step count) reaches it as a number
    (the wrapper writes `s.item()`): a scalar parameter, so the one kernel computes every value,
    as lowered and as emitted Triton; a boolean one stays stock with its reason."""
    from tilec.frontend.reasons import SCALAR_ARGUMENT

    x = torch.randn(5, 300).bfloat16()
    for s in (3.0, -0.25):
        inputs = [x, torch.tensor(s)]
        (lowered,) = [k.result for k in capture(scaled_softmax, inputs, strict=True)]
        assert isinstance(lowered, Lowered)
        assert [(a.access, a.dtype) for a in lowered.args if a.buffer == "arg1_1"] == [("value", "f32")]
        for triton in (False, True):
            got, _, _ = run_chain(scaled_softmax, inputs, pipeline=pipeline, triton=triton)
            assert_close(got, scaled_softmax(*inputs), torch.bfloat16, what=f"s={s} triton={triton}")
    (k,) = capture(scaled_softmax, [x, torch.tensor(True)])
    assert not isinstance(k.result, Lowered) and k.result.reason == SCALAR_ARGUMENT


def test_a_size_that_is_a_multiple_of_16_says_so() -> None:
    """A size that is a multiple of a power of two for every value of the symbols (`384*s0*s1`)
    carries `multiple_of` (at most 16); one that is not (`99*s0`, a bare symbol) carries nothing."""
    lowered, kernels = _kernels("gelu")
    attrs = {p.name_hint: a for p, a in zip(kernels["logical"].params, kernels["logical"].param_attrs)}
    assert attrs["xnumel"] == {"multiple_of": 16}, lowered.sizes
    assert "%xnumel: i32 {multiple_of = 16}" in print_kernel(kernels["triton-default"])
    for name, want in (("middle-sum", {"ks0": 8, "xnumel": 8}), ("negative-index", {}), ("column-sum", {})):
        _, _, sized = _sized(name)
        k = sized["logical"]
        assert {p.name_hint: a["multiple_of"] for p, a in zip(k.params, k.param_attrs) if a} == want, name


def test_the_interpreter_holds_a_launch_to_multiple_of() -> None:
    from tilec.interp.dtypes import TORCH_DTYPES

    lowered, kernels = _kernels("gelu")
    x, w = torch.randn(2, N), torch.randn(N)
    inputs = iter([x, w])
    args = [
        next(inputs).to(TORCH_DTYPES[a.dtype])
        if not a.is_written
        else torch.empty(x.shape, dtype=TORCH_DTYPES[a.dtype])
        for a in lowered.args
    ]
    with pytest.raises(interp.ExecutionError, match="'xnumel' is 760, not a multiple of 16"):
        interp.run(kernels["triton-default"], *args, x.numel() - 8)


def test_a_size_known_to_be_a_multiple_of_16_keeps_16_byte_accesses(tmp_path: Path) -> None:
    """Triton compiles sizes unspecialized: of a bare size it knows no divisibility, and every
    access masked by it or offset by it would be one element wide. Passed divided by 16 and
    multiplied back in the kernel, it is known to be a multiple of 16: the gelu's bf16 loads and
    stores are 16 bytes wide, as stock's (which Inductor compiles with the size's divisibility)."""
    import collections
    import re

    from triton_ptx import triton_ptx

    _, kernels = _kernels("gelu")
    source = emit_triton(kernels["triton-default"]).source
    assert "xnumel = xnumel_over_16 * 16" in source and "xnumel // 16" in source, source
    counts = collections.Counter(
        re.findall(r"(?:ld|st)\.global[.:\w]*", triton_ptx(kernels["triton-default"], tmp_path))
    )
    assert counts and all(".v4." in op for op in counts), counts


@settings(max_examples=examples(3), deadline=None)
@given(rows=st.integers(1, 40))
@example(rows=1)
def test_emitted_triton_takes_a_divided_size_at_launch(rows: int) -> None:
    """The emitted launcher divides a size said to be a multiple of 16 and the kernel multiplies it
    back: the gelu in Triton's interpreter equals eager at every row count."""
    lowered, kernels = _kernels("gelu")
    module = load_source(emit_triton(kernels["triton-default"]).source, interpret=True)
    w = torch.randn(N).to(torch.bfloat16)
    x = torch.randn(rows, N).to(torch.bfloat16)
    out = torch.empty(x.shape, dtype=torch.bfloat16)
    inputs = iter([x, w.float()])
    args = [next(inputs) if not a.is_written else out for a in lowered.args]
    module.launch(*args, x.numel(), num_sms=4)
    assert_close(out.float(), gelu_bias(x.float(), w.float()), torch.bfloat16)


def test_the_rotary_over_symbolic_tokens_computes_cos_and_sin_once_a_column() -> None:
    """Llama's rotary with the batch and tokens symbolic: the default pipelines' `repeats`
    computes its cos and sin on [1, 128] (one token's columns), broadcast over its 4 heads; with
    `symbolic=false` they stay on every element."""
    _, _, kernels = _sized("llama-rope")

    def shapes(kernel: Kernel) -> set[tuple[int, ...]]:
        return {o.result.type.shape for o in kernel.walk() if o.name in ("tile.cos", "tile.sin")}  # type: ignore[union-attr]

    assert shapes(kernels["triton-default"]) == shapes(kernels["gluon-default"]) == {(1, 128)}
    xblock = kernels[PLAIN_ROTARY].constexprs["XBLOCK"]
    assert shapes(kernels[PLAIN_ROTARY]) == {(xblock,)}  # one an element
