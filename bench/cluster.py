"""Rows past one CTA: each row split across a thread-block cluster, measured before tilec plans it.

    python bench/cluster.py                     # on a Hopper GPU: the table below, checked and timed
    python bench/cluster.py --compile sm_90     # anywhere: compile each kernel, print its resources (JSON)

A row of 131072 bf16 elements (256 KiB) does not fit one CTA's shared memory (227 KiB), so a
single-CTA kernel either keeps it in registers (spilling past 65536) or reads it twice. Here a
cluster of C CTAs (Hopper: up to 8) shares each row: CTA k holds elements [k*M, (k+1)*M) in its
registers, computes its partial statistics (RMSNorm: the sum of squares; softmax: the maximum and
the sum of exponentials), and reads the other CTAs' partials from their shared memory
(distributed shared memory, DSMEM); each CTA combines all C partials in the same order, so all
agree bit for bit, and normalizes its slice. Every row is read from HBM once.

Gluon in Triton 3.6 launches clusters (`num_ctas`, the grid counted in clusters, `program_id` the
cluster's) and splits a layout across its CTAs (`cga_layout`), but has no operation that reads
another CTA's shared memory or waits at a cluster barrier (a reduction or layout conversion
across CTAs does not compile). The exchange is therefore inline PTX (`allgather_asm`): each CTA
stores its partials to a shared-memory slot, `barrier.cluster` (release/acquire) makes them
visible, `mapa` + `ld.shared::cluster` read each peer's slot, and a second cluster barrier keeps
every slot alive until all peers have read it. docs/performance.md ("Rows past one CTA") says
what was tried and what it reached.

The table: device time (`tilec.runtime.timing.device_ms`, L2 flushed) as % of a same-size copy
and against stock `torch.compile`, each output checked against an fp32 reference first.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

LOG2E = gl.constexpr(1.4426950408889634)
EPS = 1e-6
# (op, M, N, CTAs per cluster, warps per CTA). 32768 elements a CTA over 16 warps take all of an
# SM's registers (one CTA an SM); 16384 a CTA, two
CASES = [
    ("rmsnorm", 4096, 131072, 4, 16),
    ("rmsnorm", 4096, 131072, 8, 16),
    ("rmsnorm", 2048, 262144, 8, 16),
    ("softmax", 4096, 131072, 4, 16),
    ("softmax", 4096, 131072, 8, 16),
    ("softmax", 8192, 131072, 8, 16),
    ("softmax", 2048, 262144, 8, 16),
]


def allgather_asm(ctas: int, k: int) -> tuple[str, str]:
    """Inline PTX gathering `k` f32 values from every CTA of the cluster, and its constraints.
    Operands: outputs $0..$(ctas*k-1), value j of CTA r at $(j*ctas + r); inputs: this CTA's k
    values. Every thread runs it (all threads of a CTA hold the same values: they come from a
    reduction over the CTA's slice)."""
    slot = "tilec_cluster_slot"
    lines = ["{", ".reg .b32 %tilec_addr;", f".shared .align 16 .f32 {slot}[{k}];"]
    lines += [f"st.shared.f32 [{slot}+{4 * j}], ${ctas * k + j};" for j in range(k)]
    # release: this CTA's stores are visible to the cluster before any CTA passes the barrier
    lines += ["barrier.cluster.arrive.release.aligned;", "barrier.cluster.wait.acquire.aligned;"]
    for r in range(ctas):
        lines.append(f"mapa.shared::cluster.u32 %tilec_addr, {slot}, {r};")
        lines += [f"ld.shared::cluster.f32 ${j * ctas + r}, [%tilec_addr+{4 * j}];" for j in range(k)]
    # no CTA leaves (and frees its slot) while a peer may still read it
    lines += ["barrier.cluster.arrive.relaxed.aligned;", "barrier.cluster.wait.aligned;", "}"]
    return "\n".join(lines), ",".join(["=f"] * (ctas * k) + ["f"] * k)


@gluon.constexpr_function
def split_layout(ctas: Any, num_warps: Any) -> Any:
    """[ctas, width] tiles whose row r lives in CTA r of the cluster (16-byte runs a thread)."""
    cga = [[1 << i, 0] for i in range(ctas.bit_length() - 1)]
    return gl.BlockedLayout([1, 8], [1, 32], [1, num_warps], [1, 0], cga_layout=cga)


@gluon.jit
def row_slices(ctas: gl.constexpr, width: gl.constexpr, num_warps: gl.constexpr):
    """The cluster's row (its first element: one row a cluster) and each CTA's slice of it, as
    offsets of a [ctas, width] tile whose row r lives in CTA r."""
    layout: gl.constexpr = split_layout(ctas, num_warps)
    row = gl.program_id(0)
    r = gl.arange(0, ctas, layout=gl.SliceLayout(1, layout))
    c = gl.arange(0, width, layout=gl.SliceLayout(0, layout))
    offs = r[:, None] * width + c[None, :]
    return row.to(gl.int64) * (ctas * width), offs


@gluon.jit
def rmsnorm_cluster(
    x_ptr,
    w_ptr,
    out_ptr,
    ctas: gl.constexpr,
    width: gl.constexpr,
    asm: gl.constexpr,
    constraints: gl.constexpr,
    num_warps: gl.constexpr,
):
    start, offs = row_slices(ctas, width, num_warps)
    x = gl.load(x_ptr + start + offs).to(gl.float32)
    part = gl.sum(x * x, axis=1)  # within each CTA
    sums = gl.inline_asm_elementwise(asm, constraints, [part], dtype=[gl.float32] * ctas, is_pure=False, pack=1)
    total = sums[0]
    for i in gl.static_range(1, ctas):  # the same order in every CTA
        total += sums[i]
    rstd = gl.rsqrt(total / (ctas * width) + 1e-6)
    w = gl.load(w_ptr + offs).to(gl.float32)  # the row's columns: each CTA its slice of the weight
    y = (x * rstd[:, None]).to(gl.bfloat16).to(gl.float32) * w
    gl.store(out_ptr + start + offs, y.to(gl.bfloat16))


@gluon.jit
def softmax_cluster(
    x_ptr,
    out_ptr,
    ctas: gl.constexpr,
    width: gl.constexpr,
    asm: gl.constexpr,
    constraints: gl.constexpr,
    num_warps: gl.constexpr,
):
    start, offs = row_slices(ctas, width, num_warps)
    x = gl.load(x_ptr + start + offs).to(gl.float32)
    m = gl.max(x, axis=1)
    s = gl.sum(gl.exp2((x - m[:, None]) * LOG2E), axis=1)
    g = gl.inline_asm_elementwise(asm, constraints, [m, s], dtype=[gl.float32] * (2 * ctas), is_pure=False, pack=1)
    gm = g[0]
    for i in gl.static_range(1, ctas):
        gm = gl.maximum(gm, g[i])
    gs = g[ctas] * gl.exp2((g[0] - gm) * LOG2E)
    for i in gl.static_range(1, ctas):
        gs += g[ctas + i] * gl.exp2((g[i] - gm) * LOG2E)
    y = gl.exp2((x - gm[:, None]) * LOG2E) / gs[:, None]
    gl.store(out_ptr + start + offs, y.to(gl.bfloat16))


KERNELS = {"rmsnorm": (rmsnorm_cluster, 1), "softmax": (softmax_cluster, 2)}


def constexprs(op: str, n: int, ctas: int, num_warps: int) -> dict[str, Any]:
    if n % ctas or (n // ctas) & (n // ctas - 1):
        raise ValueError(f"{n} elements do not split into {ctas} power-of-two slices")
    asm, cons = allgather_asm(ctas, KERNELS[op][1])
    return {"ctas": ctas, "width": n // ctas, "asm": asm, "constraints": cons, "num_warps": num_warps}


def compile_report(op: str, n: int, ctas: int, num_warps: int, arch: str) -> dict[str, Any]:
    """Compiles without a GPU; the resources and the cluster instructions the PTX holds."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from tilec.emit.aot import cubin_registers, ptxas_report

    kernel, _ = KERNELS[op]
    pointers = ["x_ptr", "w_ptr", "out_ptr"] if op == "rmsnorm" else ["x_ptr", "out_ptr"]
    cx = constexprs(op, n, ctas, num_warps)
    signature = {p: "*bf16" for p in pointers} | {name: "constexpr" for name in cx}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(pointers))}
    number = int(arch.removeprefix("sm_"))
    source = GluonASTSource(kernel, signature, constexprs=cx, attrs=attrs)
    k = triton.compile(source, target=GPUTarget("cuda", number, 32), options={"num_warps": num_warps, "num_ctas": ctas})
    ptx = k.asm["ptx"]
    return {
        "op": op,
        "n": n,
        "ctas": ctas,
        "num_warps": num_warps,
        "registers": cubin_registers(k.asm["cubin"]),
        **ptxas_report(ptx, number),
        "cluster": f".reqnctapercluster {ctas}" in ptx,
        "dsmem": "mapa.shared::cluster" in ptx and "ld.shared::cluster" in ptx,
        "cluster_barrier": "barrier.cluster.wait" in ptx,
        "vector_loads": "ld.global.v4" in ptx or "ld.global.nc.v4" in ptx,
    }


def reference(op: str, x: Any, w: Any) -> Any:
    """What the kernels compute, in torch (stock torch.compile compiles it)."""
    import torch

    if op == "softmax":
        return torch.softmax(x.float(), -1).to(x.dtype)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


def checked(op: str, m: int, n: int, ctas: int, num_warps: int) -> tuple[Any, Any, Any]:
    """Random bf16 inputs, a launch of the cluster kernel on them, and its output checked against an
    fp32 reference: (the launch, x, w)."""
    import torch

    from tilec.testing import assert_close

    kernel, _ = KERNELS[op]
    cx = {k: v for k, v in constexprs(op, n, ctas, num_warps).items() if k != "num_warps"}
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    out = torch.full_like(x, float("nan"))
    args = (x, w, out) if op == "rmsnorm" else (x, out)

    def launch() -> None:
        kernel[(m,)](*args, **cx, num_warps=num_warps, num_ctas=ctas)  # the grid counts clusters

    launch()
    assert_close(out, reference(op, x.float(), w.float()), torch.bfloat16, what=f"{op} {m}x{n} over {ctas} CTAs")
    return launch, x, w


def run(op: str, m: int, n: int, ctas: int, num_warps: int) -> dict[str, Any]:
    """Checks the kernel against an fp32 reference, then times it, stock torch.compile and a copy."""
    import functools

    import torch

    from tilec.runtime.timing import device_ms

    ours, x, w = checked(op, m, n, ctas, num_warps)
    stock = torch.compile(functools.partial(reference, op), dynamic=False)
    stock(x, w)
    # the model bytes: x read, the output written; a copy of x reads and writes as many
    src = torch.empty(m * n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy = device_ms(lambda: dst.copy_(src))
    ms, stock_ms = device_ms(ours), device_ms(lambda: stock(x, w))
    return {
        "op": op,
        "shape": f"{m}x{n}",
        "ctas": ctas,
        "num_warps": num_warps,
        "ms": ms,
        "stock_ms": stock_ms,
        "copy_ms": copy,
        "pct_of_copy": 100 * copy / ms,
        "stock_pct_of_copy": 100 * copy / stock_ms,
    }


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compile", metavar="ARCH", help="compile every case for ARCH (sm_90) and print JSON lines")
    args = p.parse_args(argv)
    if args.compile:
        for op, _, n, ctas, warps in CASES:
            print(json.dumps(compile_report(op, n, ctas, warps, args.compile)), flush=True)
        return 0
    import torch
    import triton

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}\n")
    print("| op | MxN | CTAs a row | ms | % of copy | stock ms | stock % of copy |")
    print("|---|---|---|---|---|---|---|")
    for case in CASES:
        r = run(*case)
        print(
            f"| {r['op']} | {r['shape']} | {r['ctas']} | {r['ms']:.4f} | {r['pct_of_copy']:.1f} | "
            f"{r['stock_ms']:.4f} | {r['stock_pct_of_copy']:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
