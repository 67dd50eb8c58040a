"""On the GPU: the inputs of tests/inductor/test_inputs.py through torch.compile with tilec's real
kernels, with the Gluon and the Triton emitter (strict: a tilec failure raises instead of falling
back). RMSNorm, LayerNorm and softmax on views (transposed, strided, padded rows, an odd storage
offset, permuted), M = 0, M = 1, N = 1, N not a multiple of 8, rows of one tile and rows in
chunks, NaN and ±Inf, fp32, bf16 and fp16: every output equals eager (tests/input_cases.py says
how), no input is written, and tilec takes the kernels. A view TMA cannot read takes the Triton
variant of a Gluon kernel.

Past 2**31 elements (bf16 [2**31 // 4096 + 64, 4096], 4.3 GB a tensor): the kernel indexes in 64
bits and every row equals eager, the last ones included.
"""

from __future__ import annotations

import pytest
import torch
from gpu_support import skip_unless_runs
from input_cases import DTYPES, FUNCTIONS, LAYOUTS, VECTORS, check_compiled, make_inputs

import tilec
from tilec.inductor.policy import INTERNAL_ERROR
from tilec.runtime import TilecKernel, loaded_kernels
from tilec.testing import tolerance

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]

EMITTERS = ["gluon", "triton"]
DTYPE_IDS = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}
# name -> (M, N)
SHAPES = {
    "M0": (0, 64),
    "M1": (1, 200),
    "N1": (37, 1),
    "N77": (130, 77),  # not a multiple of 8: no TMA (a row stride of 154 bytes)
    "N1001": (12, 1001),
    "N4096": (130, 4096),  # a row block in shared memory (Gluon)
    "N16384": (33, 16384),  # rows in chunks
}


def check(
    emitter: str, name: str, layout: str, m: int, n: int, dtype: torch.dtype, specials: bool = False
) -> list[TilecKernel]:
    """check_compiled on CUDA with `emitter`; returns the kernels tilec ran."""
    skip_unless_runs(emitter)
    inputs, storages = make_inputs(name, layout, m, n, dtype, "cuda", seed=0, specials=specials)
    torch._dynamo.reset()
    with tilec.config.patch(emitter=emitter, strict=True):
        records = check_compiled(name, inputs, storages)
    torch.cuda.synchronize()
    if inputs[0].numel() == 0:
        return []  # Inductor generates no kernel for an empty tensor
    # every kernel taken by `emitter`, or declined with a stable reason (a split reduction's
    # second kernel, for one), never after a failure of tilec's; the function's main kernel taken
    assert all(
        (r.taken and r.emitter == emitter) or (not r.taken and r.reason and not r.reason.startswith(INTERNAL_ERROR))
        for r in records
    ), records
    assert any(r.taken for r in records), records
    kernels = []
    for rec in (r for r in records if r.taken):
        found = loaded_kernels(rec.kernel)
        assert found, rec.kernel
        k = found[-1]
        assert k.primary.kind == emitter and k.launches["primary"] + k.launches["fallback"] >= 1, k.launches
        kernels.append(k)
    return kernels


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("emitter", EMITTERS)
def test_edge_shapes(emitter: str, name: str, shape: str) -> None:
    m, n = SHAPES[shape]
    check(emitter, name, "contiguous", m, n, DTYPES[list(SHAPES).index(shape) % len(DTYPES)])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS.get)
@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("emitter", EMITTERS)
def test_dtypes(emitter: str, name: str, dtype: torch.dtype) -> None:
    check(emitter, name, "contiguous", 130, 4096, dtype)


@pytest.mark.parametrize("layout", [lay for lay in LAYOUTS if lay != "contiguous"])
@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("emitter", EMITTERS)
def test_views(emitter: str, name: str, layout: str) -> None:
    dtype = DTYPES[LAYOUTS.index(layout) % len(DTYPES)]
    kernels = check(emitter, name, layout, 45, 1024, dtype)
    if emitter == "gluon" and layout in ("odd_offset", "padded_rows"):
        for k in kernels:
            if k.tma:  # what the kernel reads through TMA is misaligned: the Triton variant ran
                assert k.launches["primary"] == 0 and k.launches["fallback"] >= 1, (k, k.launches)


@pytest.mark.parametrize(
    "shape,dtype",
    [((24, 77), torch.float32), ((24, 77), torch.bfloat16), ((24, 77), torch.float16), ((8, 16384), torch.bfloat16)],
    ids=["24x77-f32", "24x77-bf16", "24x77-f16", "8x16384-bf16"],
)
@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("emitter", EMITTERS)
def test_nan_and_inf_propagate_as_in_eager(emitter: str, name: str, shape: tuple[int, int], dtype: torch.dtype) -> None:
    check(emitter, name, "contiguous", *shape, dtype, specials=True)


# ---------------------------------------------------------------------------------------------
# Past 2**31 elements

LARGE_N = 4096
LARGE_M = 2**31 // LARGE_N + 64
ROWS_PER_CHECK = 32768


@pytest.mark.parametrize("name", ["rmsnorm", "softmax"])
@pytest.mark.parametrize("emitter", EMITTERS)
def test_past_2_31_elements(emitter: str, name: str) -> None:
    skip_unless_runs(emitter)
    m, n, dtype = LARGE_M, LARGE_N, torch.bfloat16
    assert m * n > 2**31
    tensor_bytes = m * n * dtype.itemsize
    free, _ = torch.cuda.mem_get_info()
    if free < 3 * tensor_bytes:  # x, y, and room for the reference
        pytest.skip(f"needs {3 * tensor_bytes / 2**30:.0f} GiB of free GPU memory, has {free / 2**30:.0f}")
    fn = FUNCTIONS[name]
    torch.manual_seed(0)
    x = torch.randn(m, n, device="cuda", dtype=dtype)
    vectors = [torch.randn(n, device="cuda", dtype=dtype) * 0.5 + 1 for _ in range(VECTORS[name])]
    y = None
    try:
        with tilec.config.patch(emitter=emitter, strict=True):
            y = torch.compile(fn, backend="tilec", dynamic=False, fullgraph=True)(x, *vectors)
        torch.cuda.synchronize()
        (rec,) = tilec.report()
        assert rec.taken and rec.emitter == emitter, rec
        k = loaded_kernels(rec.kernel)[-1]
        variant = k.primary if k.launches["primary"] else k.fallback
        assert variant is not None and "int64" in variant.source, "the kernel does not index in 64 bits"
        assert y.shape == x.shape and y.dtype == dtype
        # Every row, a block of rows at a time, each row on its own (a norm over a whole block
        # would hide one wrong row); rows from 2**31 // n on are the ones past element 2**31.
        worst = 0.0
        for start in range(0, m, ROWS_PER_CHECK):
            rows = slice(start, min(m, start + ROWS_PER_CHECK))
            reference = fn(x[rows].float(), *(v.float() for v in vectors)).double()
            got = y[rows].double()
            assert bool(torch.isfinite(got).all()), f"{name}: NaN or Inf in rows {rows.start}..{rows.stop - 1}"
            per_row = (got - reference).norm(dim=-1) / reference.norm(dim=-1)
            i = int(per_row.argmax())
            worst = max(worst, float(per_row[i]))
            assert float(per_row[i]) <= tolerance(dtype), (
                f"{name}: row {start + i} has relative error {float(per_row[i]):.3g} (bf16 tolerance {tolerance(dtype)})"
            )
        print(f"{name} {m}x{n} {emitter}: worst row relative error {worst:.3g}")
    finally:
        x = y = None  # a failure's traceback must not keep 8 GB alive for the tests after it
        torch.cuda.empty_cache()
