"""Inputs a compiled model meets in other people's training runs, for RMSNorm, LayerNorm and
softmax (examples/*.py), and the check that tilec changes no number of theirs.

Shared by tests/inductor/test_inputs.py (the CPU hook, Triton's interpreter) and
tests/gpu/test_inputs_gpu.py (the real kernels):

    inputs, storages = make_inputs("rmsnorm", "odd_offset", 130, 77, torch.bfloat16, "cpu", seed=0)
    records = check_compiled("rmsnorm", inputs, storages)

`check_compiled` compiles the function with `backend="tilec"` (static shapes), runs it once and
asserts: every output equals eager PyTorch on the inputs upcast to float32 within the tolerance of
its dtype (`tilec.testing.assert_close`: NaN and ±Inf in the same places, the infinities with the
same sign), NaN and ±Inf also sit where eager in the inputs' own dtype puts them, no input's
storage changed, and every kernel the hook saw was taken or has a reason. (One output where stock
Inductor itself departs from eager on ±Inf may equal either eager or stock torch.compile:
STOCK_DIFFERS_FROM_EAGER.)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import tilec
from tilec.testing import assert_close

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "examples") not in sys.path:
    sys.path.insert(0, str(ROOT / "examples"))

import layernorm as layernorm_example  # noqa: E402
import rmsnorm as rmsnorm_example  # noqa: E402
import softmax as softmax_example  # noqa: E402

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "rmsnorm": rmsnorm_example.forward,
    "layernorm": layernorm_example.forward,  # y, mean and rstd
    "softmax": softmax_example.forward,
}
# vectors of the row length each function takes after x (weights, biases)
VECTORS = {"rmsnorm": 1, "layernorm": 2, "softmax": 0}

# How x [M, N] is laid out in memory (and the weights, where they can be views too).
LAYOUTS = (
    "contiguous",
    "transposed",  # x = x_t.t(): column-major
    "strided",  # every other column of a [M, 2N] tensor (inner stride 2); weights strided too
    "padded_rows",  # the first N columns of [M, N + 3]: an odd row stride
    "odd_offset",  # a view one element into its storage (not 16-byte aligned); weights too
    "permuted",  # [2, M, N] from a [2, N, M] tensor, permuted
)
DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _randn(shape: tuple[int, ...], dtype: torch.dtype, device: str, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=gen).to(device=device, dtype=dtype)


def _vector(layout: str, n: int, dtype: torch.dtype, device: str, gen: torch.Generator) -> tuple[torch.Tensor, Any]:
    """A weight or bias of length n (around 1, so outputs stay well scaled), and its storage."""
    if layout == "strided":
        base = _randn((2 * n,), dtype, device, gen) * 0.5 + 1
        return base[::2], base
    if layout == "odd_offset":
        base = _randn((n + 1,), dtype, device, gen) * 0.5 + 1
        return base[1:], base
    v = _randn((n,), dtype, device, gen) * 0.5 + 1
    return v, v


def make_x(
    layout: str, m: int, n: int, dtype: torch.dtype, device: str, gen: torch.Generator
) -> tuple[torch.Tensor, Any]:
    """x of shape [M, N] ([2, M, N] for "permuted") laid out as `layout`, and the tensor owning its storage."""
    if layout == "contiguous":
        x = _randn((m, n), dtype, device, gen)
        return x, x
    if layout == "transposed":
        base = _randn((n, m), dtype, device, gen)
        return base.t(), base
    if layout == "strided":
        base = _randn((m, 2 * n), dtype, device, gen)
        return base[:, ::2], base
    if layout == "padded_rows":
        base = _randn((m, n + 3), dtype, device, gen)
        return base[:, :n], base
    if layout == "odd_offset":
        base = _randn((m * n + 1,), dtype, device, gen)
        return base[1:].view(m, n), base
    if layout == "permuted":
        base = _randn((2, n, m), dtype, device, gen)
        return base.permute(0, 2, 1), base
    raise ValueError(f"unknown layout {layout!r}")


def add_specials(x: torch.Tensor, gen: torch.Generator) -> None:
    """Writes NaN, +Inf and -Inf into x (in place, through the view): single ones in some rows, a
    row of -Inf (softmax: NaN), a row with both infinities, and one in the last row."""
    rows, n = x.shape[-2], x.shape[-1]
    if rows == 0 or n == 0:
        return
    lead = (0,) * (x.dim() - 2)  # [2, M, N]: the first of the two

    def put(r: int, c: int, value: float) -> None:
        x[(*lead, r % rows, c % n)] = value

    picks = torch.randint(0, max(n, 1), (6,), generator=gen).tolist()
    put(0, picks[0], float("nan"))
    put(1, picks[1], float("inf"))
    put(2, picks[2], float("-inf"))
    put(3, picks[3], float("inf"))
    put(3, picks[4] + 1, float("-inf"))
    if rows > 5:
        x[(*lead, 5)] = float("-inf")  # a whole row
    put(rows - 1, picks[5], float("nan"))


def make_inputs(
    name: str,
    layout: str,
    m: int,
    n: int,
    dtype: torch.dtype,
    device: str,
    seed: int = 0,
    specials: bool = False,
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The function's arguments and the tensors owning their storages (checked unchanged)."""
    gen = torch.Generator().manual_seed(seed)
    x, xs = make_x(layout, m, n, dtype, device, gen)
    if specials:
        add_specials(x, gen)
    inputs, storages = [x], [xs]
    for _ in range(VECTORS[name]):
        v, vs = _vector(layout, n, dtype, device, gen)
        inputs.append(v)
        storages.append(vs)
    return inputs, storages


def _upcast(t: torch.Tensor) -> torch.Tensor:
    return t.float() if t.is_floating_point() else t


def _same_specials(actual: torch.Tensor, eager: torch.Tensor, what: str) -> None:
    a, e = actual.detach().cpu().double(), eager.detach().cpu().double()
    if not torch.equal(torch.isnan(a), torch.isnan(e)):
        raise AssertionError(
            f"{what}: NaN in {int(torch.isnan(a).sum())} places, eager has {int(torch.isnan(e).sum())}"
        )
    inf = torch.isinf(e)
    if not torch.equal(torch.isinf(a), inf) or not torch.equal(a[inf], e[inf]):
        raise AssertionError(f"{what}: ±Inf do not match eager's")


# Outputs where stock Inductor itself puts NaN/±Inf elsewhere than eager does: LayerNorm's saved
# mean of a row holding ±Inf is ±Inf when Inductor computes it as a sum (two-pass: on the CPU, and
# for bf16/fp16 rows on CUDA with torch 2.13), NaN in eager (Welford); its saved rstd of rows of
# one element NaN or ±Inf is finite, 1/sqrt(eps), where Inductor drops the reduction over one
# element (the variance of one value: 0) and NaN in eager. tilec replaces Inductor's kernel, so
# there it must agree with stock torch.compile.
STOCK_DIFFERS_FROM_EAGER = {("layernorm", 1), ("layernorm", 2)}


def _outputs(out: Any) -> tuple[torch.Tensor, ...]:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def stock_compiled(name: str, inputs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """FUNCTIONS[name] compiled by stock Inductor (the hook stays, tilec is disabled). Resets
    Dynamo before and after: a compiled frame does not notice tilec's settings change."""
    torch._dynamo.reset()
    with tilec.config.patch(enabled=False):
        out = torch.compile(FUNCTIONS[name], dynamic=False, fullgraph=True)(*inputs)
    torch._dynamo.reset()
    return _outputs(out)


def check_compiled(name: str, inputs: list[torch.Tensor], storages: list[torch.Tensor]) -> list[tilec.KernelRecord]:
    """Compiles FUNCTIONS[name] with tilec, runs it on `inputs` and checks it (module docstring);
    returns the records of the kernels the hook saw."""
    fn = FUNCTIONS[name]
    before_storages = [s.clone() for s in storages]
    eagers = _outputs(fn(*inputs))
    refs = _outputs(fn(*[_upcast(t) for t in inputs]))
    specials = not all(bool(torch.isfinite(t).all()) for t in inputs if t.is_floating_point())
    stocks = stock_compiled(name, inputs) if specials and any(n == name for n, _ in STOCK_DIFFERS_FROM_EAGER) else ()
    start = len(tilec.report())
    outs = _outputs(torch.compile(fn, backend="tilec", dynamic=False, fullgraph=True)(*inputs))
    records = tilec.report()[start:]
    assert len(outs) == len(refs)
    shape = "x".join(map(str, inputs[0].shape))
    for i, (o, e, r) in enumerate(zip(outs, eagers, refs)):
        what = f"{name} {shape} {inputs[0].dtype} output {i}"
        assert o.dtype == e.dtype, f"{what}: dtype {o.dtype}, eager gives {e.dtype}"
        if stocks and (name, i) in STOCK_DIFFERS_FROM_EAGER:
            # tilec computes what the Inductor kernel it replaces computes: as eager where that
            # kernel is Welford's (CUDA, fp32 rows), as stock torch.compile where it is a sum
            try:
                assert_close(o, r, o.dtype, what=what)
                _same_specials(o, e, what)
            except AssertionError:
                assert_close(o, stocks[i], o.dtype, what=f"{what} (against stock torch.compile)")
            continue
        assert_close(o, r, o.dtype, what=what)
        _same_specials(o, e, what)
    for i, (s, b) in enumerate(zip(storages, before_storages)):
        assert torch.equal(s.isnan(), b.isnan()) and torch.equal(s.nan_to_num(), b.nan_to_num()), (
            f"{name}: the compiled function wrote into input {i}"
        )
    for rec in records:
        assert rec.taken or rec.reason, rec
    return records
