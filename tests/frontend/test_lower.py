"""tilec.lower on real Inductor kernels (captured for a fake H100): every example translates,
the IR verifies, round-trips and survives the canonicalizing pipeline; each reduction kind is
lowered to its tile op; what tilec cannot take comes back as a stable reason."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tilec.dump import dump
from tilec.frontend import Lowered, Unsupported, lower, reasons
from tilec.frontend.capture import CapturedKernel, capture
from tilec.frontend.entry import load_entry, make_inputs
from tilec.ir import Module, parse, print_kernel, print_module, verify
from tilec.passes import run_pipeline

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["rmsnorm", "layernorm", "softmax", "log_softmax", "attention_softmax", "gelu_mlp"]
SHAPES = [(64, 1000), (4096, 8192)]
bf16 = torch.bfloat16

_cache: dict[tuple[str, tuple[int, ...], object], list[CapturedKernel]] = {}


def example_kernels(name: str, shape: tuple[int, ...], dtype: object = bf16) -> list[CapturedKernel]:
    key = (name, shape, dtype)
    if key not in _cache:
        target = load_entry(str(ROOT / "examples" / f"{name}.py"))
        _cache[key] = capture(target.func, make_inputs(target, shape, dtype), strict=True)
    return _cache[key]


def lowered(k: CapturedKernel) -> Lowered:
    assert isinstance(k.result, Lowered), f"{k.name}: {k.result}"
    return k.result


def only_kernel(fn, *inputs, **kwargs) -> CapturedKernel:
    kernels = capture(fn, list(inputs), **kwargs)
    assert len(kernels) == 1, [k.name for k in kernels]
    return kernels[0]


# ---------------------------------------------------------------------------------------------
# Every example, both shapes


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_lowers_and_survives_the_pipeline(name: str, shape: tuple[int, ...]) -> None:
    kernels = example_kernels(name, shape)
    assert len(kernels) == 1
    k = lowered(kernels[0])
    assert k.kernel.name == kernels[0].name
    verify(k.kernel)
    text = print_kernel(k.kernel)
    assert print_module(parse(text)) == text  # round trip
    pow2 = 1 << max(0, (k.rnumel - 1).bit_length())
    for rblock in sorted({pow2, 256}):
        module = parse(text)
        run_pipeline(module, f"specialize{{XBLOCK=1,RBLOCK={rblock}}},canonicalize,cse,dce")  # verifies after each
        out = print_module(module)
        assert re.search(r"tile<\[[^\]]*BLOCK", out) is None, out  # every tile shape is concrete
        if k.rnumel > 1:
            # one chunk covers the row: canonicalize inlines the single-trip loops
            assert ("tile.for" in out) == (rblock < k.rnumel), out
        assert "tile.store" in out


def test_persistent_vs_looped_is_not_decided_by_the_frontend() -> None:
    # Inductor picks a persistent kernel for 1000 columns and a looped one for 8192; the logical
    # form is the same looped shape for both.
    small, large = (lowered(example_kernels("softmax", s)[0]) for s in SHAPES)
    assert example_kernels("softmax", SHAPES[0])[0].name.startswith("triton_per_")
    assert example_kernels("softmax", SHAPES[1])[0].name.startswith("triton_red_")

    def skeleton(k: Lowered) -> list[str]:
        return [re.sub(r"\d+", "N", line) for line in print_kernel(k.kernel).splitlines()[1:]]  # not the name

    assert skeleton(small) == skeleton(large)


def test_param_names_follow_inductor() -> None:
    for name in EXAMPLES:
        k = example_kernels(name, SHAPES[0])[0]
        assert k.source is not None
        signature = re.search(r"def \w+\((.*?)\)", k.source)
        assert signature is not None
        stock = [p.strip().split(":")[0].strip() for p in signature.group(1).split(",")]
        params = [a.param for a in lowered(k).args]
        assert params == [p for p in stock if "ptr" in p], (name, params, stock)


def test_lowered_args_and_removed_buffers() -> None:
    ln = lowered(example_kernels("layernorm", SHAPES[1])[0])
    assert [(a.param, a.access, a.dtype) for a in ln.args] == [
        ("in_out_ptr0", "write", "f32"),  # rstd, in place over m2's buffer
        ("in_ptr0", "read", "bf16"),
        ("in_ptr1", "read", "bf16"),
        ("in_ptr2", "read", "bf16"),
        ("out_ptr0", "write", "f32"),  # mean
        ("out_ptr1", "write", "bf16"),  # y
    ]
    assert ln.reductions == ["welford_reduce"]
    assert (ln.numel, ln.rnumel, ln.index_dtype) == (4096, 8192, "i32")
    x = ln.args[1]
    assert (x.buffer, x.shape, x.strides, x.offset) == ("arg0_1", (4096, 8192), (8192, 1), 0)
    assert (ln.args[0].buffer, ln.args[0].shape) == ("buf3", (4096, 1))
    attn = lowered(example_kernels("attention_softmax", SHAPES[0])[0])
    assert [(a.param, a.access) for a in attn.args] == [("in_out_ptr0", "read_write")]
    rms = lowered(example_kernels("rmsnorm", SHAPES[0])[0])
    assert "buf0" in rms.removed_buffers  # the mean of squares: every user is in this kernel
    x_loads = [a for a in rms.accesses if a.param == "in_ptr0"]
    assert x_loads and all(a.contiguous_r and dict(a.strides) == {"r0_1": 1, "x0": 1000} for a in x_loads)


def test_lower_does_not_change_what_inductor_generates(monkeypatch: pytest.MonkeyPatch) -> None:
    capture_module = importlib.import_module("tilec.frontend.capture")
    target = load_entry(str(ROOT / "examples" / "layernorm.py"))
    inputs = make_inputs(target, SHAPES[0], bf16)
    with_lower = [k.source for k in capture(target.func, inputs)]
    monkeypatch.setattr(capture_module, "lower", lambda *a, **k: Unsupported("skipped"))
    without = [k.source for k in capture(target.func, inputs)]
    assert with_lower == without and all(with_lower)


def test_deterministic() -> None:
    spec = str(ROOT / "examples" / "attention_softmax.py")
    first, _ = dump(spec, shape=(2, 4, 256, 256), ir=True)
    assert dump(spec, shape=(2, 4, 256, 256), ir=True)[0] == first
    # and in another process, with another hash seed
    code = f"from tilec.dump import dump; print(dump({spec!r}, shape=(2, 4, 256, 256), ir=True)[0], end='')"
    env = {**__import__("os").environ, "PYTHONHASHSEED": "12345"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == first


@pytest.mark.parametrize("dtype,name", [(torch.float16, "f16"), (torch.float32, "f32")])
def test_other_dtypes(dtype: object, name: str) -> None:
    k = lowered(example_kernels("rmsnorm", SHAPES[0], dtype)[0])
    text = print_kernel(k.kernel)
    assert f"%in_ptr0: ptr<{name}>" in text
    assert f'tile.load %in_ptr0, %offs, %mask {{eviction = "evict_last"}} : tile<[XBLOCK, RBLOCK], {name}>' in text
    assert ("tile.cast %load : tile<[XBLOCK, RBLOCK], f32>" in text) == (name != "f32")


# ---------------------------------------------------------------------------------------------
# Reduction kinds


def _x(dtype: object = bf16, shape: tuple[int, ...] = (64, 1000)) -> object:
    return torch.randn(shape, dtype=dtype)


@pytest.mark.parametrize(
    "fn,kind,combine,dtype",
    [
        (lambda x: x.sum(-1), '"sum"', "tile.add", torch.float32),
        (lambda x: x.amax(-1), '"max"', "tile.maximum", bf16),
        (lambda x: x.amin(-1), '"min"', "tile.minimum", bf16),
        (lambda x: x.prod(-1), '"prod"', "tile.mul", torch.float32),
    ],
    ids=["sum", "max", "min", "prod"],
)
def test_reduce_kinds(fn, kind: str, combine: str, dtype: object) -> None:
    k = lowered(only_kernel(fn, _x(dtype)))
    text = print_kernel(k.kernel)
    assert re.search(r"tile\.reduce %\w+, %mask \{kind = " + kind + r", axis = 1\}", text), text
    assert re.search(rf"%acc_\w+_next = {combine} %acc_\w+, %\w+_part", text), text
    assert "tile.store %out_ptr0, %xindex" in text


@pytest.mark.parametrize("kind", ["max", "min"])
def test_argreduce(kind: str) -> None:
    fn = (lambda x: x.argmax(-1)) if kind == "max" else (lambda x: x.argmin(-1))
    k = lowered(only_kernel(fn, _x()))
    text = print_kernel(k.kernel)
    init = "-inf" if kind == "max" else "inf"
    # bf16 compared in f32, Inductor's compute type for it
    assert f"%arg{kind}_value_init = tile.full {{value = {init}}} : tile<[XBLOCK], f32>" in text
    # the chunk's index plus the loop offset is the index within the row
    assert re.search(rf"%arg{kind}_pvalue, %arg{kind}_pchunk = tile.argreduce %\w+, %mask {{kind = \"{kind}\"", text)
    assert f"%arg{kind}_pindex = tile.add %arg{kind}_pchunk, %roffset : tile<[XBLOCK], i32>" in text
    assert f"tile.arg_combine %acc_arg{kind}_value, %acc_arg{kind}, %arg{kind}_pvalue, %arg{kind}_pindex" in text
    assert re.search(rf"= tile.cast %arg{kind} : tile<\[XBLOCK\], i64>", text)  # Inductor's int64 result
    assert [a.dtype for a in k.args] == ["bf16", "i64"]


def test_var_mean_welford() -> None:
    from torch._inductor import config

    with config.patch({"triton.use_two_step_variance_threshold": 0}):  # Welford at any size
        k = lowered(only_kernel(lambda x: torch.var_mean(x, -1), _x()))
    text = print_kernel(k.kernel)
    assert k.reductions == ["welford_reduce"]
    assert text.count("tile.welford ") == 1 and text.count("tile.for") == 1
    # var = m2 / (n - 1) and mean: two outputs of one reduction
    assert "%welford_m2_row" in text and "%welford_mean_row" in text
    assert text.count("tile.store") == 2


def test_var_mean_two_pass() -> None:
    # torch 2.13 on CUDA computes var_mean of bf16 rows of 1024..32768 elements in two passes
    k = lowered(only_kernel(lambda x: torch.var_mean(x, -1), _x(shape=(4096, 8192))))
    text = print_kernel(k.kernel)
    if k.reductions == ["welford_reduce"]:
        pytest.skip("this torch computes var_mean with Welford here")
    assert k.reductions == ["sum"]
    # loop 1: the sum (mean); loop 2: the sum of squared deviations from it, as an SSA value
    loops = text.split("tile.for")
    assert len(loops) == 3
    assert "tile.sub" not in loops[1] and re.search(r"tile.sub %\w+, %bcast", loops[2])
    assert text.count("tile.store") == 2


def test_masked_sub_block() -> None:
    # a full sum over 999000 elements is split into 122 chunks of 8189; the last is ragged
    kernels = capture(lambda x: x.sum(), [_x(shape=(1000, 999))])
    first = print_kernel(lowered(kernels[0]).kernel)
    assert re.search(r"%(\w+) = tile.cmp %offs, %c999000 \{predicate = \"lt\"\}", first)
    assert re.search(r"%mask_1 = tile.and %mask, %cmp", first)
    assert re.search(r"tile.load %in_ptr0, %\w+, %mask_1", first)
    assert re.search(r"%masked = tile.where %cmp, %wide, %cst", first)
    assert all(k.taken for k in kernels)


# ---------------------------------------------------------------------------------------------
# What tilec does not take


def test_gather_is_a_load_at_loaded_offsets_after_a_bounds_check() -> None:
    index = torch.randint(0, 1000, (64, 4))
    k = only_kernel(lambda x, i: torch.gather(x, 1, i), _x(), index)
    text = print_kernel(lowered(k).kernel)
    assert 'tile.assert %ok {message = "index out of bounds: 0 <= tmp0 < 1000"}' in text
    assert re.search(r"%\w+ = tile.load %in_ptr1, %offs", text)  # the row at the loaded column


def test_cumsum_is_a_scan() -> None:
    k = only_kernel(lambda x: torch.cumsum(x, -1), _x())
    assert k.result == Unsupported(reasons.SCAN)


def test_symbolic_rows_are_a_size_parameter() -> None:
    """Leading dimensions symbolic (the rows), the row length static: the kernel takes its x
    size as the scalar parameter `xnumel`, which the grid and the row mask read."""
    (k,) = capture(lambda x: torch.softmax(x, -1), [_x()], dynamic=True)
    assert isinstance(k.result, Lowered), k.summary()
    assert "s" in k.numel and k.result.numel is None  # symbolic
    assert [str(e) for e in k.result.sizes.values()] == [k.numel]
    text = print_kernel(k.result.kernel)
    assert "%xnumel: i32) constexprs(XBLOCK, RBLOCK) attributes {grid = [cdiv(xnumel, XBLOCK)]}" in text
    assert "tile.cmp %xindex, %xnumel" in text


def test_a_symbolic_reduction_length_is_a_size_parameter() -> None:
    # the reduced dimension is a leading one, so symbolic: the reduction's length is the
    # parameter `rnumel`, and the row stride 32*s (a size expression) the parameter `ks0`
    (k,) = capture(lambda x: x.sum(1), [torch.randn(4, 64, 32)], dynamic=True)
    assert isinstance(k.result, Lowered), k.summary()
    assert k.result.rnumel is None and list(k.result.sizes) == ["ks0", "rnumel", "xnumel"]
    assert str(k.result.sizes["rnumel"]) == k.rnumel


def test_split_online_softmax_partials() -> None:
    # few wide rows: Inductor splits each row's reduction (torch 2.13: over value tuples)
    kernels = capture(lambda x: torch.softmax(x, -1), [_x(shape=(8, 50257))])
    reasons_seen = {k.result.reason for k in kernels if isinstance(k.result, Unsupported)}
    assert reasons_seen <= {reasons.SPLIT_REDUCTION_PARTIALS}
    assert kernels[-1].taken  # the pointwise normalization


def test_lower_never_raises() -> None:
    result = lower(object())
    assert isinstance(result, Unsupported) and result.reason.startswith(reasons.INTERNAL_ERROR)
    with pytest.raises(AttributeError):
        lower(object(), strict=True)


def test_every_example_is_taken() -> None:
    for name in EXAMPLES:
        for shape in SHAPES:
            for k in example_kernels(name, shape):
                assert k.taken, (name, shape, k.result)


# ---------------------------------------------------------------------------------------------
# The IR of a kernel needs no Inductor to be read again


def test_dump_output_parses_as_a_module() -> None:
    text, _ = dump(str(ROOT / "examples" / "rmsnorm.py"), shape=(64, 1000), ir=True)
    module = parse(text)
    verify(module)
    assert isinstance(module, Module) and len(module.kernels) == 1


def test_value_stored_in_one_loop_and_read_in_another() -> None:
    # y is an output written in the reduction loop; the epilogue loop reads it back from memory
    # (a value of one loop's chunk is not live in the next), so its buffer is kept.
    def fn(x):
        y = x * 2
        return y, y / y.sum(-1, keepdim=True)

    k = lowered(only_kernel(fn, _x()))
    text = print_kernel(k.kernel)
    loops = text.split("tile.for")
    assert "tile.store %out_ptr0" in loops[1] and "tile.load %out_ptr0" in loops[2]
    assert [(a.param, a.access) for a in k.args] == [
        ("in_ptr0", "read"),
        ("out_ptr0", "read_write"),
        ("out_ptr2", "write"),
    ]
    assert "buf0" not in k.removed_buffers
