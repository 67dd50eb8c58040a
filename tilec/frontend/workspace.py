"""The sums of a banded kernel's workspace rows, as one tilec kernel.

A mix-order reduction (a norm's backward with its weights' gradients: docs/frontend.md) writes,
per program, one fp32 row of each column sum to a workspace laid out `[sums][programs][columns]`;
Inductor's wrapper then adds those rows up with one `workspace[...].view(programs, columns)
.sum(dim=0)` per column sum — an ATen reduction over the non-contiguous axis each, about 4.6 us a
launch on the H100 for 132 rows of 2048 columns (bench/results/2026-11-26-h100-square-fusion,
`profile/`). `workspace_sums` is one kernel for all of them: program (c, j) adds the `rows` rows
of column sum j at columns `[c * XBLOCK, (c + 1) * XBLOCK)`, `RBLOCK` rows a step, in a fixed
order (the same bits every run), and stores them to `out[j * cols + column]`:

    %ws: ptr<f32>    [sums * rows * cols]: sum j's row p at (j * rows + p) * cols
    %out: ptr<f32>   [sums * cols] (or bf16, f16: the sums rounded once, where the wrapper converts them)
    %rows, %cols, %sums: i32 (run-time: one kernel serves every size)
    grid = [cdiv(cols, XBLOCK), sums]

The hook (`tilec.inductor.hook`) launches it in place of the wrapper's sums where tilec takes the
mix-order kernel; each column sum's buffer is then a slice of `out`. Where the wrapper converts
every sum to one narrower type (RMSNorm's weight gradient, a bf16 buffer: `.to(torch.bfloat16)`,
another launch), the kernel writes that type itself.
"""

from __future__ import annotations

# columns a program adds up, and rows a step: 64 x 32 fp32 over 4 warps is 16 values a thread
XBLOCK = 64
RBLOCK = 32
NUM_WARPS = 4
# what makes the kernel launchable: its layouts over NUM_WARPS warps, then the usual clean-up
PIPELINE = f"plan{{num_warps={NUM_WARPS}}},canonicalize,cse,dce"


# the kernel's parameters, in the order the hook passes them
PARAMS = ["ws", "out", "rows", "cols", "sums"]

# the element types the sums may be written in (a buffer the wrapper would convert them to)
OUT_DTYPES = ("f32", "bf16", "f16")


def workspace_sums(name: str = "workspace_sums", out: str = "f32") -> str:
    """The kernel's text in tilec IR (`tilec.ir.parse` reads it), its sums written as `out` (one
    of OUT_DTYPES: rounded to nearest even from fp32, as the wrapper's `.to(dtype)` does)."""
    if out not in OUT_DTYPES:
        raise ValueError(f"workspace sums are written as one of {', '.join(OUT_DTYPES)}, not {out}")
    store = "%srow" if out == "f32" else "%sout"
    cast = "" if out == "f32" else f"\n  %sout = tile.cast %srow : tile<[1, XBLOCK], {out}>"
    return f"""\
tile.kernel @{name}(%ws: ptr<f32>, %out: ptr<{out}>, %rows: i32, %cols: i32, %sums: i32) constexprs(XBLOCK = {XBLOCK}, RBLOCK = {RBLOCK}) attributes {{grid = [cdiv(cols, XBLOCK), sums]}} {{
  %pid = tile.program_id {{axis = 0}} : i32
  %j = tile.program_id {{axis = 1}} : i32
  %xblock = tile.constant {{value = XBLOCK}} : i32
  %cstart = tile.mul %pid, %xblock : i32
  %crange = tile.arange {{end = XBLOCK}} : tile<[XBLOCK], i32>
  %ccol = tile.add %crange, %cstart : tile<[XBLOCK], i32>
  %col = tile.expand_dims %ccol {{axis = 0}} : tile<[1, XBLOCK], i32>
  %cmask = tile.cmp %col, %cols {{predicate = "lt"}} : tile<[1, XBLOCK], i1>
  %first = tile.mul %j, %rows : i32
  %zero = tile.full {{value = 0.0}} : tile<[RBLOCK, XBLOCK], f32>
  %c0 = tile.constant {{value = 0}} : i32
  %rblock = tile.constant {{value = RBLOCK}} : i32
  %acc = tile.for %r = %c0 to %rows step %rblock iter_args(%a = %zero) -> (tile<[RBLOCK, XBLOCK], f32>) {{
    %rrange = tile.arange {{end = RBLOCK}} : tile<[RBLOCK], i32>
    %rrow = tile.add %rrange, %r : tile<[RBLOCK], i32>
    %row = tile.expand_dims %rrow {{axis = 1}} : tile<[RBLOCK, 1], i32>
    %rmask = tile.cmp %row, %rows {{predicate = "lt"}} : tile<[RBLOCK, 1], i1>
    %wsrow = tile.add %row, %first : tile<[RBLOCK, 1], i32>
    %base = tile.mul %wsrow, %cols : tile<[RBLOCK, 1], i32>
    %bases = tile.broadcast %base : tile<[RBLOCK, XBLOCK], i32>
    %cols2 = tile.broadcast %col : tile<[RBLOCK, XBLOCK], i32>
    %offs = tile.add %bases, %cols2 : tile<[RBLOCK, XBLOCK], i32>
    %rm = tile.broadcast %rmask : tile<[RBLOCK, XBLOCK], i1>
    %cm = tile.broadcast %cmask : tile<[RBLOCK, XBLOCK], i1>
    %m = tile.and %rm, %cm : tile<[RBLOCK, XBLOCK], i1>
    %v = tile.load %ws, %offs, %m : tile<[RBLOCK, XBLOCK], f32>
    %next = tile.add %a, %v : tile<[RBLOCK, XBLOCK], f32>
    tile.yield %next
  }}
  %s = tile.reduce %acc {{kind = "sum", axis = 0}} : tile<[XBLOCK], f32>
  %srow = tile.expand_dims %s {{axis = 0}} : tile<[1, XBLOCK], f32>{cast}
  %obase = tile.mul %j, %cols : i32
  %ooffs = tile.add %col, %obase : tile<[1, XBLOCK], i32>
  tile.store %out, %ooffs, {store}, %cmask
}}
"""
