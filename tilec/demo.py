"""`tilec demo`: tilec on a built-in RMSNorm kernel, then torch.compile with the hook on the example
models — runnable on a machine without a GPU (Triton's interpreter runs tilec's kernels there)."""

from __future__ import annotations

from typing import Any, TextIO

# RMSNorm over the rows of a 64 x 1000 bf16 matrix, y = x * rsqrt(mean(x^2) + 1e-6) * w, in the
# logical form: block sizes are symbolic and x is read twice (once per loop), as Inductor does.
RMSNORM_LOGICAL = """\
tile.kernel @rmsnorm(%x: ptr<bf16>, %w: ptr<bf16>, %y: ptr<bf16>) constexprs(XBLOCK, RBLOCK) attributes {grid = [cdiv(64, XBLOCK)]} {
  %pid = tile.program_id : i32
  %xblock = tile.constant {value = XBLOCK} : i32
  %xoffset = tile.mul %pid, %xblock : i32
  %xrange = tile.arange {end = XBLOCK} : tile<[XBLOCK], i32>
  %xrow = tile.add %xrange, %xoffset : tile<[XBLOCK], i32>
  %xindex = tile.expand_dims %xrow {axis = 1} : tile<[XBLOCK, 1], i32>
  %xnumel = tile.constant {value = 64} : i32
  %xmask = tile.cmp %xindex, %xnumel {predicate = "lt"} : tile<[XBLOCK, 1], i1>
  %rnumel = tile.constant {value = 1000} : i32
  %c0 = tile.constant {value = 0} : i32
  %rblock = tile.constant {value = RBLOCK} : i32
  %rowstart = tile.mul %xindex, %rnumel : tile<[XBLOCK, 1], i32>
  %zero = tile.full {value = 0.0} : tile<[XBLOCK], f32>
  %sumsq = tile.for %roffset = %c0 to %rnumel step %rblock iter_args(%acc = %zero) -> (tile<[XBLOCK], f32>) {
    %rrange = tile.arange {end = RBLOCK} : tile<[RBLOCK], i32>
    %rcol = tile.add %rrange, %roffset : tile<[RBLOCK], i32>
    %rindex = tile.expand_dims %rcol {axis = 0} : tile<[1, RBLOCK], i32>
    %rmask = tile.cmp %rindex, %rnumel {predicate = "lt"} : tile<[1, RBLOCK], i1>
    %xm = tile.broadcast %xmask : tile<[XBLOCK, RBLOCK], i1>
    %rm = tile.broadcast %rmask : tile<[XBLOCK, RBLOCK], i1>
    %mask = tile.and %xm, %rm : tile<[XBLOCK, RBLOCK], i1>
    %rows = tile.broadcast %rowstart : tile<[XBLOCK, RBLOCK], i32>
    %cols = tile.broadcast %rindex : tile<[XBLOCK, RBLOCK], i32>
    %offs = tile.add %rows, %cols : tile<[XBLOCK, RBLOCK], i32>
    %xv = tile.load %x, %offs, %mask : tile<[XBLOCK, RBLOCK], bf16>
    %xf = tile.cast %xv : tile<[XBLOCK, RBLOCK], f32>
    %sq = tile.mul %xf, %xf : tile<[XBLOCK, RBLOCK], f32>
    %part = tile.reduce %sq, %mask {kind = "sum", axis = 1} : tile<[XBLOCK], f32>
    %acc_next = tile.add %acc, %part : tile<[XBLOCK], f32>
    tile.yield %acc_next
  }
  %n = tile.constant {value = 1000.0} : f32
  %mean = tile.div %sumsq, %n : tile<[XBLOCK], f32>
  %eps = tile.constant {value = 1e-06} : f32
  %var = tile.add %mean, %eps : tile<[XBLOCK], f32>
  %rstd_row = tile.rsqrt %var : tile<[XBLOCK], f32>
  %rstd = tile.expand_dims %rstd_row {axis = 1} : tile<[XBLOCK, 1], f32>
  tile.for %roffset2 = %c0 to %rnumel step %rblock {
    %rrange2 = tile.arange {end = RBLOCK} : tile<[RBLOCK], i32>
    %rcol2 = tile.add %rrange2, %roffset2 : tile<[RBLOCK], i32>
    %rindex2 = tile.expand_dims %rcol2 {axis = 0} : tile<[1, RBLOCK], i32>
    %rmask2 = tile.cmp %rindex2, %rnumel {predicate = "lt"} : tile<[1, RBLOCK], i1>
    %xm2 = tile.broadcast %xmask : tile<[XBLOCK, RBLOCK], i1>
    %rm2 = tile.broadcast %rmask2 : tile<[XBLOCK, RBLOCK], i1>
    %mask2 = tile.and %xm2, %rm2 : tile<[XBLOCK, RBLOCK], i1>
    %rows2 = tile.broadcast %rowstart : tile<[XBLOCK, RBLOCK], i32>
    %cols2 = tile.broadcast %rindex2 : tile<[XBLOCK, RBLOCK], i32>
    %offs2 = tile.add %rows2, %cols2 : tile<[XBLOCK, RBLOCK], i32>
    %xv2 = tile.load %x, %offs2, %mask2 : tile<[XBLOCK, RBLOCK], bf16>
    %wv = tile.load %w, %rindex2, %rmask2 {eviction = "evict_last"} : tile<[1, RBLOCK], bf16>
    %xf2 = tile.cast %xv2 : tile<[XBLOCK, RBLOCK], f32>
    %rs = tile.broadcast %rstd : tile<[XBLOCK, RBLOCK], f32>
    %normed = tile.mul %xf2, %rs : tile<[XBLOCK, RBLOCK], f32>
    %wf = tile.cast %wv : tile<[1, RBLOCK], f32>
    %wb = tile.broadcast %wf : tile<[XBLOCK, RBLOCK], f32>
    %out = tile.mul %normed, %wb : tile<[XBLOCK, RBLOCK], f32>
    %outb = tile.cast %out : tile<[XBLOCK, RBLOCK], bf16>
    tile.store %y, %offs2, %outb, %mask2
  }
}
"""

DEMO_PIPELINE = "specialize{XBLOCK=1,RBLOCK=1024},canonicalize,cse,dce"


def run_demo(out: TextIO) -> int:
    from tilec.ir import parse, print_module, verify
    from tilec.passes import run_pipeline

    module = parse(RMSNORM_LOGICAL, "<demo:rmsnorm>")
    verify(module)
    out.write("// RMSNorm in tilec's logical tile IR (parsed and verified):\n")
    out.write(print_module(module))
    run_pipeline(module, DEMO_PIPELINE)
    out.write(f"\n// After -p '{DEMO_PIPELINE}' (one row per program, the row in one tile):\n")
    out.write(print_module(module))
    write_traced_rmsnorm(out)
    return 1 if write_hooked_examples(out) else 0


def rmsnorm(x: Any, weight: Any, eps: float = 1e-6) -> Any:
    """examples/rmsnorm.py's forward."""
    import torch

    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def write_traced_rmsnorm(out: TextIO) -> None:
    """The same RMSNorm written in PyTorch, traced by torch.compile and lowered by tilec.lower."""
    try:
        import torch
    except ImportError:
        out.write("\n// (install torch to see tilec translate Inductor's own RMSNorm kernel)\n")
        return
    from tilec.dump import format_kernels
    from tilec.frontend.capture import capture

    with torch.device("meta"):  # only shapes and dtypes matter
        x, w = torch.randn(64, 1000, dtype=torch.bfloat16), torch.randn(1000, dtype=torch.bfloat16)
    kernels = capture(rmsnorm, [x, w])
    where = "a GPU" if torch.cuda.is_available() else "an H100 (a fake one: no GPU here)"
    out.write(
        f"\n// The same RMSNorm in PyTorch (examples/rmsnorm.py), compiled by Inductor for {where};\n"
        "// its kernel as tilec.lower translates it (`tilec dump --ir examples/rmsnorm.py --shape 64,1000`):\n"
    )
    text, _ = format_kernels(kernels)
    out.write(text.lstrip("\n"))
    run_traced_rmsnorm(out, kernels)


def run_traced_rmsnorm(out: TextIO, kernels: Any) -> None:
    """Runs that kernel, through triton-default and the Triton emitter, on real tensors: on the GPU
    if there is one, else on the CPU through Triton's interpreter; checks it against eager."""
    import torch

    from tilec.frontend.result import Lowered
    from tilec.ir import Module, parse, print_module
    from tilec.passes import run_pipeline
    from tilec.runtime import interpreter_active, load_source
    from tilec.testing import assert_close, relative_error

    lowered = kernels[0].result
    if not isinstance(lowered, Lowered):
        out.write(f"\n// (tilec did not take the kernel: {lowered.reason})\n")
        return
    on_gpu = torch.cuda.is_available() and not interpreter_active()
    module = parse(print_module(Module([lowered.kernel])))
    run_pipeline(module, "triton-default")
    from tilec.emit.triton import emit_triton

    emitted = emit_triton(module)
    device = "cuda" if on_gpu else "cpu"
    torch.manual_seed(0)
    x = torch.randn(64, 1000, device=device).to(torch.bfloat16)
    w = torch.randn(1000, device=device).to(torch.bfloat16)
    y = torch.full_like(x, float("nan"))
    tensors = {"arg0_1": x, "arg1_1": w}
    args = [tensors.get(a.buffer, y) for a in lowered.args]
    load_source(emitted.source, interpret=not on_gpu).launch(*args)
    reference = rmsnorm(x.float(), w.float())
    where = "on the GPU" if on_gpu else "on the CPU, in Triton's interpreter"
    out.write(
        f"\n// That kernel after -p triton-default, emitted as Triton ({len(emitted.source.splitlines())} lines; "
        "`tilec dump examples/rmsnorm.py --shape 64,1000 --emit triton` prints it),\n"
        f"// run {where} on random 64 x 1000 bf16 inputs:\n"
    )
    error = relative_error(y.float().cpu(), reference.cpu())
    assert_close(y.float().cpu(), reference.cpu(), torch.bfloat16, what="tilec's RMSNorm")
    out.write(f"// relative error against eager PyTorch (fp32): {error:.2e} (bf16 tolerance 1e-2): OK\n")


def write_hooked_examples(out: TextIO) -> int:
    """torch.compile(fn, backend="tilec") on every example: checked against eager, with what tilec
    took. On the GPU, or on the CPU through Triton's interpreter. Returns how many differ."""
    try:
        import torch
    except ImportError:
        return 0
    from tilec.inductor.check import EXAMPLES, check_example, examples_dir
    from tilec.inductor.install import installed
    from tilec.runtime import interpreter_active

    if examples_dir() is None:
        out.write("\n// (the examples/ folder of a tilec checkout is needed for the torch.compile part)\n")
        return 0
    on_gpu = torch.cuda.is_available() and not interpreter_active()
    if not on_gpu and not interpreter_active():
        out.write("\n// (on the CPU, the hook needs Triton's interpreter: run with TRITON_INTERPRET=1)\n")
        return 0
    device, shape = ("cuda", (4096, 4096)) if on_gpu else ("cpu", (64, 1000))
    where = "on the GPU" if on_gpu else "on the CPU: tilec's kernels in Triton's interpreter, the rest in C++"
    out.write(
        f'\n// torch.compile(fn, backend="tilec") on each example ({shape[0]} x {shape[1]} bf16, {where}),\n'
        "// checked against eager PyTorch in fp32:\n"
    )
    failures = 0
    import logging

    log = logging.getLogger("tilec")
    level = log.level
    log.setLevel(logging.WARNING)  # the hook's summary lines would repeat what the demo prints
    try:
        with installed(cpu=not on_gpu), torch._inductor.config.patch(fx_graph_cache=False):
            for spec in EXAMPLES:
                torch._dynamo.reset()
                result = check_example(spec, shape, torch.bfloat16, device)
                failures += not result.ok
                out.write(f"//   {result.line()}\n")
    finally:
        torch._dynamo.reset()
        log.setLevel(level)
    return failures
