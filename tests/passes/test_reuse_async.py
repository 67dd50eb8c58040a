"""reuse's cache filled by cp.async: a misaligned row (no TMA box describes it) read in
align-rows' aligned chunks, each chunk copied once into shared memory, its copies waited for on
the chunk's own barrier, and softmax's statistics kept per lane through the loops over it
(softmax-lanes). Every kernel of the chain computes what eager PyTorch computes in tilec's
interpreter, whose race detection checks that no chunk is read before its barrier says it
landed, at every misalignment of a row (eight rows), the rows' count static or symbolic (the
range analysis bounds a symbolic grid's program ids by what an i32 holds, so a row's misalignment
is still known to be less than a vector)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

from examples import run_chain
from tilec.ir.core import Kernel
from tilec.testing import assert_close


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)


def rmsnorm(x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)


def layernorm(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), eps=1e-6).to(x.dtype)


FUNCTIONS = {"softmax": softmax, "rmsnorm": rmsnorm, "layernorm": layernorm}


def pipeline(chunk: int, warps: int) -> str:
    """The Gluon pipeline's passes up to the statistics per lane, one row a program."""
    plan = f"plan{{xblock=1,max_rblock={chunk},chunk={chunk},num_warps={warps}}}"
    return (
        f"{plan},welford-lanes{{where=all}},align-rows,canonicalize,peel,canonicalize,cse,"
        "reuse{cache=smem},cse,softmax-lanes{where=all},cse,dce"
    )


def cached(kernels: list[Kernel]) -> bool:
    return any(op.name == "tile.async_copy_arrive" for k in kernels for op in k.walk())


@settings(max_examples=examples(8), deadline=None)
@given(
    name=st.sampled_from(sorted(FUNCTIONS)),
    cols=st.sampled_from([257, 1001, 1100, 3001]),
    chunk=st.sampled_from([64, 256]),
    warps=st.sampled_from([1, 2]),
    special=st.booleans(),
    dynamic=st.booleans(),
)
# rows of 257 in chunks of 64 leave the rest's loop without a trip at some misalignments; 3001 in
# chunks of 256 over two warps: four elements a thread (8-byte copies)
@example(name="softmax", cols=257, chunk=64, warps=1, special=True, dynamic=False)
@example(name="softmax", cols=3001, chunk=256, warps=2, special=False, dynamic=False)
@example(name="layernorm", cols=1100, chunk=256, warps=1, special=False, dynamic=False)
@example(name="rmsnorm", cols=1001, chunk=64, warps=1, special=False, dynamic=False)
@example(name="layernorm", cols=257, chunk=64, warps=2, special=False, dynamic=False)
# traced with the rows symbolic: the copies' row mask, defined before the loops, comes first
@example(name="softmax", cols=1001, chunk=256, warps=1, special=True, dynamic=True)
def test_rows_cached_by_cp_async_equal_eager(
    name: str, cols: int, chunk: int, warps: int, special: bool, dynamic: bool
) -> None:
    torch.manual_seed(cols * 10 + chunk + warps)
    x = (torch.randn(8, cols) * 4).bfloat16()
    if special and name == "softmax":  # masked logits, a row of -inf only (NaN, as torch gives)
        x[:, ::97] = float("-inf")
        x[5] = float("-inf")
    got, _, kernels = run_chain(FUNCTIONS[name], [x], pipeline=pipeline(chunk, warps), dynamic=dynamic)
    # where a thread holds two elements of a chunk or more (cp.async copies 4 bytes or more)
    assert cached(kernels) or chunk // (32 * warps) < 2, (name, cols, chunk, warps)
    if name == "softmax" and cached(kernels):  # one maximum and one sum reduction a row
        assert not any(op.name == "tile.softmax_reduce" for k in kernels for op in k.walk())
    want = FUNCTIONS[name](x.float())
    assert_close(got.float().reshape(want.shape), want, torch.bfloat16, what=f"{name} 8x{cols} chunk {chunk}")


@pytest.mark.parametrize("cols", [1001, 4096])
def test_rows_that_tma_describes_keep_the_tma_cache(cols: int) -> None:
    """Aligned rows (4096) keep reuse's TMA cache; a misaligned one (1001) takes cp.async."""
    x = torch.randn(8, cols).bfloat16()
    got, _, kernels = run_chain(softmax, [x], pipeline=pipeline(256, 1))
    tma = any(op.name == "tile.tma_load" for k in kernels for op in k.walk())
    assert (tma, cached(kernels)) == (cols % 8 == 0, cols % 8 != 0)
    assert_close(got.float().reshape(x.shape), softmax(x.float()), torch.bfloat16)


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
@pytest.mark.parametrize(("op", "chunk", "warps"), [("softmax", 8192, 8), ("layernorm", 4096, 16)])
def test_a_cached_row_of_50257_compiles_to_16_byte_copies(op: str, chunk: int, warps: int, arch: str) -> None:
    """GPT-2's vocabulary (50257 bf16 logits a row) in the Gluon pipeline with the H100's plan:
    compiled with pointers 16-byte aligned (as Triton specializes them at launch), every cp.async
    copies 16 bytes, threads arrive on the chunks' barriers as their copies land, nothing spills,
    and the cache (the row in slots of a chunk) fits one CTA's shared memory."""
    from bench_scripts import meta_kernel

    from tilec.emit.check import check_compile
    from tilec.emit.gluon import emit_gluon
    from tilec.ir import Module, parse, print_module
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan

    module = parse(print_module(Module([meta_kernel(op, 32768, 50257).kernel])))
    run_pipeline(module, with_plan("gluon-default", f"xblock=1,chunk={chunk},num_warps={warps}"))
    report = check_compile(emit_gluon(module.kernels[0]), arch)
    assert report.ok, report.error + "\n" + report.detail
    assert report.cp_async_bytes == (16,) and report.cp_async_arrives, report
    assert report.spills == 0 and report.shared_bytes <= 232_448, report.summary()


def test_a_plan_caps_registers_for_the_gluon_emitter_only() -> None:
    """The plan's `maxnreg` is the launch's register cap: the Gluon module compiles with it (64 a
    thread: two CTAs of 16 warps an SM beside a 104 KiB cache); the Triton emitter, whose kernels
    launch through Inductor's configs, refuses it; a cap outside 24..256 is an error."""
    from bench_scripts import meta_kernel

    from tilec.emit.common import EmitError
    from tilec.emit.gluon import emit_gluon
    from tilec.emit.triton import emit_triton
    from tilec.ir import Module, parse, print_module
    from tilec.passes import run_pipeline
    from tilec.passes.base import PipelineError
    from tilec.passes.pipelines import with_plan

    module = parse(print_module(Module([meta_kernel("softmax", 32768, 50257).kernel])))
    run_pipeline(module, with_plan("gluon-default", "xblock=1,chunk=4096,num_warps=16,maxnreg=64"))
    kernel = module.kernels[0]
    assert kernel.launch.maxnreg == 64
    assert "maxnreg=64" in emit_gluon(kernel).source
    with pytest.raises(EmitError, match="caps its registers at 64"):
        emit_triton(kernel)
    with pytest.raises(PipelineError, match="maxnreg must be 0"):
        with_plan("gluon-default", "xblock=1,maxnreg=300")
