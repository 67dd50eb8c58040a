"""On the GPU: a norm's backward that Inductor fuses into a mix-order reduction (dx and the
weights' gradients in one kernel: at least 4096 rows, twice as many rows as columns) is taken by
tilec as a banded Triton kernel; its gradients equal eager's (float64), the same on every run
(the workspace's rows are summed in a fixed order); the Gluon emitter leaves it to stock, saying
why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch._inductor import metrics

import tilec
from tilec.inductor.policy import NO_RING
from tilec.testing import assert_close

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]
bf16 = torch.bfloat16


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-6)


def layernorm_no_bias(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, None, 1e-6)


FUNCTIONS: dict[str, tuple[Callable[..., torch.Tensor], int]] = {
    "rmsnorm": (rmsnorm, 1),
    "layernorm": (layernorm, 2),
    "layernorm_no_bias": (layernorm_no_bias, 1),
}


def gradients(name: str, m: int, n: int, dynamic: bool | None = False) -> tuple[list[torch.Tensor], ...]:
    """(tilec's gradients, a second run's, float64 eager's) of the op at m x n."""
    fn, weights = FUNCTIONS[name]
    torch.manual_seed(m + n)
    x = torch.randn(m, n, device="cuda", dtype=bf16, requires_grad=True)
    ws = [torch.randn(n, device="cuda", dtype=bf16, requires_grad=True) for _ in range(weights)]
    dy = torch.randn(m, n, device="cuda", dtype=bf16)
    compiled = torch.compile(fn, dynamic=dynamic)
    first, second = (torch.autograd.grad(compiled(x, *ws), (x, *ws), dy) for _ in range(2))
    leaves = [t.detach().double().requires_grad_() for t in (x, *ws)]
    want = torch.autograd.grad(fn(*leaves), leaves, dy.double())
    return list(first), list(second), list(want)


def check(
    name: str, m: int, n: int, first: list[torch.Tensor], second: list[torch.Tensor], want: list[torch.Tensor]
) -> None:
    for i, (g, again, r) in enumerate(zip(first, second, want)):
        what = f"{name} {m}x{n} {'dx' if i == 0 else f'weight {i}'}"
        assert_close(g.double(), r, bf16, what=what)
        assert torch.equal(g, again), f"{what} differs between two runs"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("shape", [(4096, 2048), (8192, 4096), (6000, 1000)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_mix_order_reduction_is_taken(name: str, shape: tuple[int, int]) -> None:
    m, n = shape
    metrics.reset()
    first, second, want = gradients(name, m, n)
    assert metrics.codegen_mix_order_reduction == 1  # Inductor fused dx and the weights' gradients
    check(name, m, n, first, second, want)
    records = tilec.report()
    assert records and all(r.taken for r in records), [(r.kernel, r.reason) for r in records]
    assert any(r.kernel.startswith("triton_per_") for r in records), [r.kernel for r in records]


@pytest.mark.parametrize("name", ["rmsnorm", "layernorm"])
def test_the_workspace_rows_are_summed_in_one_launch(name: str) -> None:
    """Where tilec takes a mix-order kernel, the wrapper's sums of its workspace's rows (one ATen
    sum per column sum, as stock writes them) are one launch of tilec's `workspace_sums` kernel,
    each weight's gradient a slice of what it writes; the gradients equal eager's, the same on
    every run."""
    from torch._inductor.utils import run_and_get_code

    m, n = 4096, 2048
    fn, weights = FUNCTIONS[name]
    torch.manual_seed(0)
    x = torch.randn(m, n, device="cuda", dtype=bf16, requires_grad=True)
    ws = [torch.randn(n, device="cuda", dtype=bf16, requires_grad=True) for _ in range(weights)]
    dy = torch.randn(m, n, device="cuda", dtype=bf16)
    compiled = torch.compile(fn, dynamic=False)
    out = compiled(x, *ws)
    first, codes = run_and_get_code(lambda: torch.autograd.grad(out, (x, *ws), dy, retain_graph=True))
    code = "\n".join(codes)
    launches = [line for line in code.splitlines() if "tilec_workspace_sums_" in line and ".run(" in line]
    assert len(launches) == 1 and ".sum(dim=0)" not in code, code
    second = torch.autograd.grad(out, (x, *ws), dy)
    leaves = [t.detach().double().requires_grad_() for t in (x, *ws)]
    want = torch.autograd.grad(fn(*leaves), leaves, dy.double())
    check(name, m, n, list(first), list(second), list(want))


def table_range(name: str, m: int, n: int) -> Any:
    """The GPU's measured range fusing the op's backward at m x n (`chooser.MIX_ORDER_FUSIONS`:
    its weights' gradients are its column sums; x and dy its whole rows), or None."""
    from tilec.passes.chooser import mix_order_fusion

    return mix_order_fusion(torch.cuda.get_device_properties(0).name, m, n, 2, FUNCTIONS[name][1], 2)


def fused_by_table(name: str, m: int, n: int) -> tuple[bool, list[tilec.KernelRecord]]:
    """Runs the op's backward at m x n with tilec: whether the GPU's table has it fused
    (`table_range`, as Inductor then did), its gradients checked against eager's; and tilec's
    records."""
    fused = table_range(name, m, n) is not None
    metrics.reset()
    first, second, want = gradients(name, m, n)
    assert metrics.codegen_mix_order_reduction == int(fused)
    check(name, m, n, first, second, want)
    return fused, tilec.report()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("shape", [(2048, 4096), (4096, 4096)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_tilec_fuses_where_its_banded_kernel_measured_faster(name: str, shape: tuple[int, int]) -> None:
    """At 2048x4096 (fewer rows than twice the row length) and 4096x4096 (square: stock cannot
    tell its two reductions apart by their sizes) stock Inductor keeps dx and the weights'
    gradients apart; on a GPU whose table measured the banded kernel faster there (the H100's,
    `chooser.MIX_ORDER_FUSIONS`) tilec has them fused and takes the kernel, and with tilec off (or
    on another GPU) stock's kernels run unfused. The gradients equal eager's either way."""
    m, n = shape
    fused, records = fused_by_table(name, m, n)
    assert records and all(r.taken for r in records), [(r.kernel, r.reason) for r in records]
    assert any(r.kernel.startswith("triton_per_") for r in records) or not fused, [r.kernel for r in records]
    torch._dynamo.reset()
    metrics.reset()
    with tilec.config.patch(enabled=False):
        first, second, want = gradients(name, m, n)
    assert metrics.codegen_mix_order_reduction == 0
    check(name, m, n, first, second, want)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_long_row_is_banded_in_chunks(name: str) -> None:
    """At rows of 16384, where the GPU's table has the norm's backward fused at 4096x16384 (the
    H100's), tilec takes the fused kernel in the form the table's rules say. The banded Triton
    kernel: LayerNorm's, with two column sums, with its row in chunks of 8192, each with its own
    column sums (`band-chunks`); a kernel with one column sum (RMSNorm, LayerNorm without bias)
    with its row whole, as the pass's remark says. The Gluon ring form (the H100's rules at rows
    of 16384): in chunks of 4096, every one in a ring (no band-ring remark). The gradients equal
    eager's either way, the same on every run."""
    fused, records = fused_by_table(name, 4096, 16384)
    banded = [r for r in records if r.signature and r.signature[0] == "mix-order"]
    assert len(banded) == int(fused) and all(r.taken for r in banded), [(r.kernel, r.reason) for r in records]
    for r in banded:
        if r.emitter == "gluon":
            assert "ring" in (r.pipeline or "") and not [m for m in r.remarks if m.startswith("band-ring:")], r
            continue
        whole = [m for m in r.remarks if m.startswith("band-chunks: its 1 column sum(s) of 16384")]
        assert len(whole) == int(FUNCTIONS[name][1] == 1), r.remarks  # one column sum a weight


def test_the_gluon_emitter_leaves_a_mix_order_reduction_without_a_ring_form_to_stock() -> None:
    """Rows of one chunk (2048) have no ring form (band-ring): with the Gluon emitter forced, the
    mix-order kernel stays stock's, saying why."""
    metrics.reset()
    with tilec.config.patch(emitter="gluon"):
        first, second, want = gradients("rmsnorm", 4096, 2048)
    assert metrics.codegen_mix_order_reduction == 1
    check("rmsnorm", 4096, 2048, first, second, want)
    declined = [r for r in tilec.report() if not r.taken]
    assert [r.reason.split(":")[0] for r in declined] == [NO_RING], [(r.kernel, r.reason) for r in tilec.report()]


@pytest.mark.parametrize("emitter", ["gluon", "auto"])
@pytest.mark.parametrize(
    ("name", "m", "n"),
    [
        ("rmsnorm", 4096, 32768),
        ("rmsnorm", 8192, 32768),
        ("layernorm", 8192, 16384),
        ("layernorm", 4096, 32768),
        ("layernorm", 2048, 65536),
    ],
)
def test_the_ring_form_is_taken_through_the_hook(emitter: str, name: str, m: int, n: int) -> None:
    """RMSNorm's backward over rows of 32768 is fused where the GPU's table has a range for it
    (the H100's and the H200's: measured with the ring form, one column sum), LayerNorm's at
    8192x16384 where the table fuses rows of 16384, and at 4096x32768 and 2048x65536 where it
    fuses them in the cluster form. With the chooser's emitter, the fused kernel is taken, in a Gluon
    form (the ring, `gluon-ring`, or the cluster form, `band-cluster`, as the rules say) where its
    range was measured with it; with the Gluon emitter forced, only those forms' ranges fuse, and
    the fused kernel is one of them. Either way the gradients
    equal float64 eager's within bf16's tolerance and are the same on every run."""
    fusion = table_range(name, m, n)
    if emitter == "auto":
        fused, records = fused_by_table(name, m, n)
    else:
        metrics.reset()
        with tilec.config.patch(emitter="gluon"):
            first, second, want = gradients(name, m, n)
        fused = metrics.codegen_mix_order_reduction == 1
        assert fused == (fusion is not None and fusion.ring)
        check(name, m, n, first, second, want)
        records = tilec.report()
    banded = [r for r in records if r.signature and r.signature[0] == "mix-order"]
    assert len(banded) == int(fused), records
    for r in banded:
        assert r.taken, r
        if emitter == "gluon" or fusion.ring:
            pipeline = r.pipeline or ""
            assert r.emitter == "gluon" and ("ring" in pipeline or pipeline.startswith("band-cluster")), r
    print(
        f"  {name} {m}x{n} {emitter}: fused={fused} "
        + "; ".join(f"{r.kernel} {r.emitter or r.reason}" for r in records)
    )


def test_symbolic_row_counts_keep_their_gradients() -> None:
    """With a symbolic row count Inductor (torch 2.11, H100) fuses no mix-order reduction, even
    without its size checks; whatever it fuses, the gradients equal eager's and every kernel is
    taken (the declines are off)."""
    with torch._inductor.config.patch({"triton.mix_order_reduction_non_strict_mode": True}):
        for m in (4096, 6144):
            first, second, want = gradients("rmsnorm", m, 2048, dynamic=True)
            check("rmsnorm", m, 2048, first, second, want)
    records = tilec.report()
    assert records and all(r.taken for r in records), [(r.kernel, r.reason) for r in records]


def test_an_autotuned_mix_order_reduction_is_timed_against_stock(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the autotuner on, the banded kernel at both bands and stock's kernel (each with its
    workspace's sums) are timed; the faster runs, and the gradients are right either way."""
    from tilec.inductor import autotune
    from tilec.inductor.policy import device_target

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(autotune, "_memo", {})
    cands = autotune.mix_order_candidates(True, device_target(torch.device("cuda")))
    metrics.reset()
    with tilec.config.patch(autotune=True, decline=True):
        first, second, want = gradients("rmsnorm", 8192, 2048)
    assert metrics.codegen_mix_order_reduction == 1
    check("rmsnorm", 8192, 2048, first, second, want)
    (record,) = [r for r in tilec.report() if r.kernel.startswith("triton_per_")]
    timed = record.autotune if record.taken else record.reason
    print(f"  {record.kernel}: {record.emitter if record.taken else 'stock'}: {timed}")
    assert timed is not None and all(f"{c} " in timed for c in cands), timed
    if not record.taken:
        assert timed.startswith("stock Inductor timed fastest when autotuned"), timed
