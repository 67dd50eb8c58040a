"""The Triton emitter: every op family, run by Triton's interpreter, equals tilec's interpreter;
the output is deterministic and readable; what it cannot print it refuses clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from harness import assert_same_outputs, planned, run_interp, run_triton
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from profiles import examples

from tilec.emit.common import EmitError
from tilec.emit.triton import emit_triton
from tilec.ir import parse
from tilec.testing import assert_close

KERNELS = Path(__file__).resolve().parents[1] / "kernels"

ELEMENTWISE = """tile.kernel @ew(%a: ptr<f32>, %b: ptr<f32>, %k: ptr<i32>, %o: ptr<f32>, %p: ptr<i32>, %h: ptr<bf16>) attributes {grid = [2]} {
  %pid = tile.program_id : i32
  %c64 = tile.constant {value = 64} : i32
  %base = tile.mul %pid, %c64 : i32
  %r = tile.arange {end = 64} : tile<[64], i32>
  %i = tile.add %r, %base : tile<[64], i32>
  %x = tile.load %a, %i : tile<[64], f32>
  %y = tile.load %b, %i : tile<[64], f32>
  %n = tile.load %k, %i : tile<[64], i32>
  %s1 = tile.add %x, %y : tile<[64], f32>
  %s2 = tile.mul %s1, %x : tile<[64], f32>
  %s3 = tile.div %s2, %y : tile<[64], f32>
  %s4 = tile.maximum %s3, %x : tile<[64], f32>
  %s5 = tile.minimum %s4, %y : tile<[64], f32>
  %s6 = tile.exp %s5 : tile<[64], f32>
  %s7 = tile.tanh %s6 : tile<[64], f32>
  %s8 = tile.sigmoid %s7 : tile<[64], f32>
  %s9 = tile.erf %s8 : tile<[64], f32>
  %s10 = tile.fma %s9, %x, %y : tile<[64], f32>
  %s11 = tile.abs %s10 : tile<[64], f32>
  %s12 = tile.sqrt %s11 : tile<[64], f32>
  %s13 = tile.rsqrt %s12 : tile<[64], f32>
  %two = tile.constant {value = 2.0} : f32
  %s14 = tile.pow %s13, %two : tile<[64], f32>
  %z = tile.constant {value = 0.0} : f32
  %neg = tile.cmp %x, %z {predicate = "lt"} : tile<[64], i1>
  %s15 = tile.where %neg, %s14, %x : tile<[64], f32>
  %s16 = tile.rem %s15, %y : tile<[64], f32>
  %s17 = tile.neg %s16 : tile<[64], f32>
  tile.store %o, %i, %s17
  %c7 = tile.constant {value = 7} : i32
  %d = tile.div %n, %c7 : tile<[64], i32>
  %m = tile.rem %n, %c7 : tile<[64], i32>
  %q = tile.add %d, %m : tile<[64], i32>
  %c3 = tile.constant {value = 3} : i32
  %sh = tile.shr %q, %c3 : tile<[64], i32>
  %sl = tile.shl %sh, %c3 : tile<[64], i32>
  %xo = tile.xor %sl, %n : tile<[64], i32>
  %no = tile.not %xo : tile<[64], i32>
  %mx = tile.maximum %no, %n : tile<[64], i32>
  tile.store %p, %i, %mx
  %hb = tile.cast %s12 : tile<[64], bf16>
  %he = tile.exp %hb : tile<[64], bf16>
  %hc = tile.constant {value = 0.5} : bf16
  %hm = tile.mul %he, %hc : tile<[64], bf16>
  tile.store %h, %i, %hm
}
"""


def test_elementwise_ops_match_the_interpreter() -> None:
    k = planned(ELEMENTWISE)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(128, generator=g)
    b = torch.randn(128, generator=g)
    a[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    n = torch.randint(-1000, 1000, (128,), generator=g, dtype=torch.int32)
    args = [a, b, n, torch.zeros(128), torch.zeros(128, dtype=torch.int32), torch.zeros(128, dtype=torch.bfloat16)]
    assert_same_outputs(run_interp(k, args), run_triton(k, args), [3, 4, 5], "elementwise")


REDUCTIONS = """tile.kernel @red(%a: ptr<f32>, %o: ptr<f32>, %oi: ptr<i32>) attributes {grid = [1]} {
  %rows = tile.arange {end = 8} : tile<[8], i32>
  %cols = tile.arange {end = 32} : tile<[32], i32>
  %r2 = tile.expand_dims %rows {axis = 1} : tile<[8, 1], i32>
  %c2 = tile.expand_dims %cols {axis = 0} : tile<[1, 32], i32>
  %c32 = tile.constant {value = 32} : i32
  %ro = tile.mul %r2, %c32 : tile<[8, 1], i32>
  %rb = tile.broadcast %ro : tile<[8, 32], i32>
  %cb = tile.broadcast %c2 : tile<[8, 32], i32>
  %offs = tile.add %rb, %cb : tile<[8, 32], i32>
  %x = tile.load %a, %offs : tile<[8, 32], f32>
  %climit = tile.constant {value = 20} : i32
  %cm = tile.cmp %c2, %climit {predicate = "lt"} : tile<[1, 32], i1>
  %m = tile.broadcast %cm : tile<[8, 32], i1>
  %sum = tile.reduce %x, %m {kind = "sum", axis = 1} : tile<[8], f32>
  %max = tile.reduce %x, %m {kind = "max", axis = 1} : tile<[8], f32>
  %min = tile.reduce %x {kind = "min", axis = 1} : tile<[8], f32>
  %prod = tile.reduce %x, %m {kind = "prod", axis = 1} : tile<[8], f32>
  %av, %ai = tile.argreduce %x, %m {kind = "max", axis = 1} : tile<[8], f32>, tile<[8], i32>
  %bv, %bi = tile.argreduce %x {kind = "min", axis = 1} : tile<[8], f32>, tile<[8], i32>
  %mean, %m2, %cnt = tile.welford %x, %m {axis = 1} : tile<[8], f32>, tile<[8], f32>, tile<[8], f32>
  %wm, %wm2, %wc = tile.welford_combine %mean, %m2, %cnt, %sum, %max, %cnt : tile<[8], f32>, tile<[8], f32>, tile<[8], f32>
  %fmean, %fm2, %fcnt = tile.welford %x {axis = 1} : tile<[8], f32>, tile<[8], f32>, tile<[8], f32>
  %smax, %ssum = tile.softmax_reduce %x, %m {axis = 1} : tile<[8], f32>, tile<[8], f32>
  %cmax, %csum = tile.softmax_combine %smax, %ssum, %min, %ssum : tile<[8], f32>, tile<[8], f32>
  %cv, %ci = tile.arg_combine %av, %ai, %bv, %bi {kind = "max"} : tile<[8], f32>, tile<[8], i32>
"""


def reduction_kernel() -> str:
    """Stores every reduction result into its own column of an [8, 23] output."""
    results = [
        "%sum",
        "%max",
        "%min",
        "%prod",
        "%av",
        "%bv",
        "%mean",
        "%m2",
        "%cnt",
        "%wm",
        "%wm2",
        "%wc",
        "%fmean",
        "%fm2",
        "%fcnt",
        "%smax",
        "%ssum",
        "%cmax",
        "%csum",
        "%cv",
    ]
    ints = ["%ai", "%bi", "%ci"]
    text = REDUCTIONS
    lines = ["  %c23 = tile.constant {value = 23} : i32", "  %obase = tile.mul %rows, %c23 : tile<[8], i32>"]
    for j, v in enumerate(results + ints):
        lines.append(f"  %cj{j} = tile.constant {{value = {j}}} : i32")
        lines.append(f"  %off{j} = tile.add %obase, %cj{j} : tile<[8], i32>")
        lines.append(f"  tile.store {'%oi' if v in ints else '%o'}, %off{j}, {v}")
    return text + "\n".join(lines) + "\n}\n"


@settings(
    max_examples=examples(8), deadline=None, phases=[Phase.explicit, Phase.generate]
)  # no shrinking: runs are slow
@given(seed=st.integers(0, 2**16), specials=st.booleans())
def test_reductions_match_the_interpreter(seed: int, specials: bool) -> None:
    k = planned(reduction_kernel())
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(8 * 32, generator=g)
    if specials:
        a[3] = float("nan")
        a[40] = float("inf")
        a[70:90] = -float("inf")
        a[100] = a[101] = 7.0  # a tie
    args = [a, torch.zeros(8 * 23), torch.zeros(8 * 23, dtype=torch.int32)]
    assert_same_outputs(run_interp(k, args), run_triton(k, args), [1, 2], "reductions")


CONTROL = """tile.kernel @ctl(%a: ptr<f32>, %o: ptr<f32>, %oi: ptr<i64>) attributes {grid = [1]} {
  %c0 = tile.constant {value = 0} : i32
  %c1 = tile.constant {value = 1} : i32
  %c5 = tile.constant {value = 5} : i32
  %i = tile.arange {end = 16} : tile<[16], i32>
  %x = tile.load %a, %i : tile<[16], f32>
  %g0 = tile.constant {value = 3} : i64
  %acc, %cnt = tile.for %t = %c0 to %c5 step %c1 iter_args(%v = %x, %g = %g0) -> (tile<[16], f32>, i64) {
    %tf = tile.cast %t : f32
    %v2 = tile.add %v, %tf : tile<[16], f32>
    %one = tile.constant {value = 1} : i64
    %g2 = tile.add %g, %one : i64
    tile.yield %v2, %g2
  }
  %p = tile.cmp %cnt, %g0 {predicate = "gt"} : i1
  %res = tile.if %p -> (tile<[16], f32>) {
    %d = tile.mul %acc, %acc : tile<[16], f32>
    tile.yield %d
  } else {
    tile.yield %acc
  }
  tile.for %u = %c0 to %c1 step %c1 {unroll = true} {
    tile.store %o, %i, %res
  }
  tile.store %oi, %c0, %cnt
}
"""


def test_control_flow_matches_the_interpreter() -> None:
    k = planned(CONTROL)
    args = [torch.randn(16), torch.zeros(16), torch.zeros(1, dtype=torch.int64)]
    a, b = run_interp(k, args), run_triton(k, args)
    assert_same_outputs(a, b, [1, 2], "control flow")
    assert int(b[2][0]) == 8  # type: ignore[index]


STAGED = """tile.kernel @staged(%a: ptr<f32>, %o: ptr<f32>) attributes {grid = [1]} {
  %c0 = tile.constant {value = 0} : i32
  %c1 = tile.constant {value = 1} : i32
  %c4 = tile.constant {value = 4} : i32
  %c16 = tile.constant {value = 16} : i32
  %z = tile.full {value = 0.0} : tile<[16], f32>
  %r = tile.arange {end = 16} : tile<[16], i32>
  %s = tile.for %t = %c0 to %c4 step %c1 iter_args(%acc = %z) -> (tile<[16], f32>) {stages = 3} {
    %base = tile.mul %t, %c16 : i32
    %i = tile.add %r, %base : tile<[16], i32>
    %x = tile.load %a, %i : tile<[16], f32>
    %n = tile.add %acc, %x : tile<[16], f32>
    tile.yield %n
  }
  tile.store %o, %r, %s
}
"""


def test_a_loop_with_stages_is_a_pipelined_triton_range() -> None:
    k = planned(STAGED)
    src = emit_triton(k).source
    assert "in tl.range(0, 4, 1, num_stages=3):" in src, src
    args = [torch.randn(64), torch.zeros(16)]
    assert_same_outputs(run_interp(k, args), run_triton(k, args), [1], "a pipelined loop")


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


@pytest.mark.parametrize("plan", ["plan", "plan{xblock=1,rblock=256}", "plan{xblock=8,rblock=128,num_warps=2}"])
def test_logical_rmsnorm_equals_eager(plan: str) -> None:
    k = planned((KERNELS / "rmsnorm_logical.tile").read_text(), f"{plan},canonicalize,cse,dce")
    x = torch.randn(64, 1000).to(torch.bfloat16)
    w = torch.randn(1000).to(torch.bfloat16)
    (_, _, y) = run_triton(k, [x, w, torch.full_like(x, float("nan"))])
    assert_close(y, rmsnorm(x, w).float(), torch.bfloat16)  # type: ignore[arg-type]


def test_a_row_read_again_in_reverse_with_streaming_stores_equals_eager() -> None:
    """A plan's `reverse` and `stream` (`reread`): the second loop over the row indexes its chunks
    from the last back and the row written is stored evict-first; Triton's interpreter computes
    eager's result, and the kernel compiles for sm_90 without spills."""
    from tilec.emit.check import check_compile

    k = planned(
        (KERNELS / "rmsnorm_logical.tile").read_text(),
        "plan{xblock=1,rblock=256,num_warps=4,reverse=true,stream=true},canonicalize,peel,canonicalize,cse,reread,dce",
    )
    module = emit_triton(k)
    assert "roffset2_rev = roffset2_from - roffset2" in module.source, module.source
    assert 'tl.store(y + offs2, outb, eviction_policy="evict_first")' in module.source, module.source
    # the peeled last chunk too
    assert 'tl.store(y + offs_1, outb_1, mask=rmask, eviction_policy="evict_first")' in module.source
    x = torch.randn(64, 1000).to(torch.bfloat16)
    w = torch.randn(1000).to(torch.bfloat16)
    (_, _, y) = run_triton(k, [x, w, torch.full_like(x, float("nan"))])
    assert_close(y, rmsnorm(x, w).float(), torch.bfloat16)  # type: ignore[arg-type]
    report = check_compile(module, "sm_90")
    assert report.ok and report.spills == 0, report


def test_output_is_deterministic_and_readable() -> None:
    text = (KERNELS / "rmsnorm_logical.tile").read_text()
    a = emit_triton(planned(text)).source
    b = emit_triton(planned(text)).source
    assert a == b
    assert "def rmsnorm(x, w, y, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):" in a
    assert "xv = tl.load(x + offs, mask=mask, other=0)" in a or "xv = tl.load(x + offs" in a
    assert "part = tl.sum(" in a
    assert "tl.store(y + offs" in a
    # compile_only compiles what launch launches: the same grid, arguments and options
    launch = a[a.index("def launch(") :].split("\n\n")[0]
    compile_only = a[a.index("def compile_only(") :].split("\n\n")[0]
    assert (
        compile_only.strip().replace("compile_only", "launch").replace(".warmup(*args, grid=grid, ", "[grid](*args, ")
        == launch.strip()
    )


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
def test_triton_output_compiles_ahead_of_time_with_its_resources(arch: str) -> None:
    """`--check` on Triton output: the module carries its signature (pointers typed, constexprs
    named, pointers 16-byte divisible) and compiles to a cubin without a GPU, reporting registers,
    spills and warps as for Gluon."""
    from tilec.emit.check import check_compile

    module = emit_triton(planned((KERNELS / "rmsnorm_logical.tile").read_text(), "plan{xblock=1,num_warps=4}"))
    assert 'SIGNATURE = {"x": "*bf16", "w": "*bf16", "y": "*bf16", "XBLOCK": "constexpr"' in module.source
    assert "DIVISIBLE = ['x', 'w', 'y']" in module.source
    report = check_compile(module, arch)
    assert report.ok, report.error
    assert report.num_warps == 4 and 0 < report.registers <= 255 and report.spills == 0, report


def test_refuses_unplanned_and_hopper_only_ir() -> None:
    with pytest.raises(EmitError, match="needs planned IR"):
        emit_triton(parse((KERNELS / "rmsnorm_logical.tile").read_text()))
    with pytest.raises(EmitError, match="TMA descriptor"):
        emit_triton(parse((KERNELS / "rmsnorm_tma.tile").read_text()))
    with pytest.raises(EmitError, match="launches clusters of 4 CTAs; the Triton emitter prints one CTA a program"):
        emit_triton(parse((KERNELS / "rmsnorm_cluster.tile").read_text()))


def test_bf16_results_round_with_the_conversion_instruction_on_a_gpu(tmp_path: Path) -> None:
    """An f32 result stored as bf16 rounds to nearest even on both paths: in integer operations
    under Triton's interpreter, which truncates (test_logical_rmsnorm_equals_eager runs that), and
    compiled for a GPU with the conversion instruction alone, none of the integer form's
    arithmetic left (it cost up to a third of the bandwidth of softmax rows on the H100)."""
    import re

    from triton_ptx import triton_ptx

    kernel = planned((KERNELS / "rmsnorm_logical.tile").read_text())
    source = emit_triton(kernel).source
    assert "_tilec_bf16(" in source and "if _TILEC_INTERPRETED:" in source
    ptx = triton_ptx(kernel, tmp_path)
    assert re.search(r"cvt\.rn\.bf16(x2)?\.f32", ptx)
    assert "32767" not in ptx and "0x7fff" not in ptx.lower()  # the integer form's bias
