"""Kernels launched as thread-block clusters: a program is a whole cluster whose tiles hold every
CTA's part (the CTA a dimension of its own), and `tile.cluster_gather` gives every CTA every CTA's
value. rmsnorm_cluster.tile (a row split over four CTAs, each slice in registers) and
rmsnorm_cluster_smem.tile (over eight, each slice copied into shared memory asynchronously, read as
its groups land) equal RMSNorm computed in torch, with no race on the shared memory."""

from __future__ import annotations

from pathlib import Path

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from tilec import interp
from tilec.ir import parse, parse_file, verify

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
CLUSTER = (
    "#c = #blocked<size_per_thread = [1, 1], threads_per_warp = [1, 32], warps_per_cta = [1, 4], "
    "order = [1, 0], cga_layout = [[1, 0], [2, 0]]>\n#s = #slice<dim = 1, parent = #c>\n"
)


def test_each_cta_gets_every_ctas_value_of_each_operand() -> None:
    """Operand-major results: result i*4 + j is CTA j's element of operand i, in every element."""
    results = ", ".join(f"%g{i}" for i in range(8))
    types = ", ".join(["tile<[4], i32, #s>"] * 4 + ["tile<[4], f32, #s>"] * 4)
    stores = "".join(f"  %o{i} = tile.add %r, %b{i} : tile<[4], i32, #s>\n" for i in range(8))
    stores += "".join(f"  %f{i} = tile.cast %g{i} : tile<[4], f32, #s>\n" for i in range(4))
    stores += "".join(f"  tile.store %y, %o{i}, %f{i}\n" for i in range(4))
    stores += "".join(f"  tile.store %y, %o{i}, %g{i}\n" for i in range(4, 8))
    bases = "".join(
        f"  %k{i} = tile.constant {{value = {4 * i}}} : i32\n  %b{i} = tile.add %k{i}, %z : i32\n" for i in range(8)
    )
    text = CLUSTER + (
        "tile.kernel @k(%x: ptr<f32>, %y: ptr<f32>) attributes {grid = [1], num_warps = 4, num_ctas = 4} {\n"
        "  %z = tile.constant {value = 0} : i32\n"
        "  %r = tile.arange {end = 4} : tile<[4], i32, #s>\n"
        "  %t = tile.mul %r, %r : tile<[4], i32, #s>\n"
        "  %v = tile.load %x, %r : tile<[4], f32, #s>\n"
        f"  {results} = tile.cluster_gather %t, %v : {types}\n" + bases + stores + "}\n"
    )
    module = parse(text)
    verify(module)
    x = torch.tensor([0.5, -1.0, 2.0, 7.0])
    y = torch.full((32,), float("nan"))
    interp.run(module.kernels[0], x, y)
    squares = torch.tensor([0.0, 1.0, 4.0, 9.0])
    for j in range(4):
        assert torch.equal(y[4 * j : 4 * j + 4], squares[j].expand(4)), (j, y)
        assert torch.equal(y[16 + 4 * j : 16 + 4 * j + 4], x[j].expand(4)), (j, y)


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).bfloat16().float() * w.float()


# kernel file -> (its constexpr, the row's length in units of it)
FORMS = {"rmsnorm_cluster": ("W", 4), "rmsnorm_cluster_smem": ("CH", 32)}


@settings(max_examples=examples(10), deadline=None)
@given(
    form=st.sampled_from(sorted(FORMS)),
    rows=st.integers(1, 5),
    unit=st.sampled_from([32, 256]),
    seed=st.integers(0, 2**16),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
)
def test_a_row_split_over_a_cluster_equals_rmsnorm(form: str, rows: int, unit: int, seed: int, scale: float) -> None:
    """Each CTA's partial sum of squares, gathered and added in CTA order: the row's rstd in every
    CTA, so the slices are normalized alike (to within the order of the sum)."""
    kernel = parse_file(KERNELS / f"{form}.tile").kernels[0]
    name, per = FORMS[form]
    kernel.constexprs[name] = unit
    cols = per * unit
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(rows, cols, generator=g) * scale).bfloat16()
    w = torch.randn(cols, generator=g).bfloat16()
    y = torch.full_like(x, float("nan"))
    interp.run(kernel, x, w, y, rows)
    expected = rmsnorm(x, w)
    torch.testing.assert_close(y.float(), expected.bfloat16().float(), rtol=1.6e-2, atol=1e-5)


@settings(max_examples=examples(10), deadline=None)
@given(
    rows=st.integers(1, 7),
    programs=st.integers(1, 3),
    unit=st.sampled_from([32, 256]),
    seed=st.integers(0, 2**16),
)
def test_clusters_taking_rows_in_a_loop_equal_rmsnorm(rows: int, programs: int, unit: int, seed: int) -> None:
    """rmsnorm_cluster_rows.tile: P clusters, each taking rows pid, pid + P, ... in a loop, the
    partial sums gathered every row (exchange = "push" in the loop's body): every row normalized
    as RMSNorm, whether a cluster takes several rows, one, or none."""
    kernel = parse_file(KERNELS / "rmsnorm_cluster_rows.tile").kernels[0]
    kernel.constexprs["W"] = unit
    cols = 4 * unit
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g).bfloat16()
    w = torch.randn(cols, generator=g).bfloat16()
    y = torch.full_like(x, float("nan"))
    interp.run(kernel, x, w, y, rows, programs)
    torch.testing.assert_close(y.float(), rmsnorm(x, w).bfloat16().float(), rtol=1.6e-2, atol=1e-5)
