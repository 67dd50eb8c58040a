"""Rows past one CTA: each row split across a thread-block cluster, measured before tilec plans it.

    python bench/cluster.py                     # on a Hopper GPU: the table below, checked and timed
    python bench/cluster.py --compile sm_90     # anywhere: compile each kernel, print its resources (JSON)
    python bench/cluster.py --ir 4096x131072    # tests/kernels/rmsnorm_cluster_smem.tile, as tilec emits it
    python bench/cluster.py --shared-only --exchange gather,push,none --rows 0,2 --shapes 4096x131072

A row of 131072 bf16 elements (256 KiB) does not fit one CTA's shared memory (227 KiB), so a
single-CTA kernel either keeps it in registers (spilling past 65536) or reads it twice. Here a
cluster of C CTAs (Hopper: up to 8) shares each row: CTA k holds elements [k*M, (k+1)*M) in its
registers, computes its partial statistics (RMSNorm: the sum of squares; softmax: the maximum and
the sum of exponentials), and reads the other CTAs' partials from their shared memory
(distributed shared memory, DSMEM); each CTA combines all C partials in the same order, so all
agree bit for bit, and normalizes its slice. Every row is read from HBM once. With the slice in
registers a CTA takes most of an SM's registers; with the slice in its shared memory (`*_smem`:
cp.async puts all of it in flight at once, the statistics accumulate chunk by chunk as it lands,
the output is computed from shared memory) three to six CTAs share an SM, and one CTA's loads
overlap another's exchange and writes. LayerNorm has the shared-memory form only.

Gluon in Triton 3.6 launches clusters (`num_ctas`, the grid counted in clusters, `program_id` the
cluster's) and splits a layout across its CTAs (`cga_layout`), but has no operation that reads
another CTA's shared memory or waits at a cluster barrier (a reduction or layout conversion
across CTAs does not compile). The exchange is therefore inline PTX (tilec's Gluon emitter's,
`tilec.emit.gluon.cluster_gather_asm`, which prints `tile.cluster_gather` the same way): each CTA
stores its partials to a shared-memory slot, `barrier.cluster` (release/acquire) makes them
visible, `mapa` + `ld.shared::cluster` read each peer's slot, and a second cluster barrier keeps
every slot alive until all peers have read it. `--exchange` times the kernels with other
exchanges (`exchange_asm`: the second wait at the end, the partials pushed into the peers' shared
memory, none) or without a cluster; `--rows` with several rows a cluster
(`cluster_rows_prefetch`). docs/performance.md ("Rows past one CTA") says what was tried and what
it reached.

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
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from tilec.emit.gluon import cluster_gather_asm
from tilec.ir.dtypes import f32

LOG2E = gl.constexpr(1.4426950408889634)


def exchange_asm(kind: str, ctas: int, k: int) -> tuple[str, str, str]:
    """The exchange of k fp32 partials a CTA, by `kind`, as (asm, constraints, tail asm): `gather`
    is tile.cluster_gather's default (two release/acquire cluster barriers around the DSMEM
    reads); `deferred` the same with the second barrier's wait moved to the tail (after the
    output's stores, before the CTA exits); `push` is tile.cluster_gather's `exchange = "push"`
    (each CTA's partials written into every peer's slots with st.async, completing bytes on the
    peer's mbarrier: one cluster barrier, no remote reads); `none` exchanges nothing (every CTA
    takes its own partials C times: the output is wrong, the timing is the form's without an
    exchange). (`alone`, `run`'s: the same kernel without a cluster, each CTA a row of its own.)"""
    if kind in ("gather", "deferred", "push"):
        asm, cons = cluster_gather_asm(ctas, [f32] * k, "push" if kind == "push" else "barriers")
        if kind != "deferred":
            return asm, cons, ""
        lines = asm.split("\n")
        assert lines[-2] == "barrier.cluster.wait.acquire.aligned;", lines[-3:]
        return "\n".join(lines[:-2] + ["}"]), cons, "barrier.cluster.wait.acquire.aligned;"
    assert kind == "none", kind
    cons = ",".join(["=f"] * (k * ctas) + ["f"] * k)
    return "\n".join(f"mov.b32 ${i * ctas + r}, ${ctas * k + i};" for i in range(k) for r in range(ctas)), cons, ""


@gluon.jit
def tail(anchor, asm: gl.constexpr):
    """Runs `asm` (if any) where it stands: at a kernel's end, before its CTAs exit."""
    if asm != "":
        gl.inline_asm_elementwise(asm + "\nmov.b32 $0, $1;", "=f,f", [anchor], dtype=gl.float32, is_pure=False, pack=1)


EPS = 1e-6
# (op, M, N, CTAs per cluster, warps per CTA, slice in shared memory). In registers, 32768
# elements a CTA over 16 warps take all of an SM's registers (one CTA an SM), 16384 a CTA two. In
# shared memory (cp.async, all of it in flight at once, read back a chunk at a time), 32768
# elements a CTA (64 KiB) leave three CTAs an SM, 16384 six, and registers to spare
CASES = [
    ("rmsnorm", 4096, 131072, 4, 16, False),
    ("rmsnorm", 4096, 131072, 8, 16, False),
    ("rmsnorm", 2048, 262144, 8, 16, False),
    ("softmax", 4096, 131072, 4, 16, False),
    ("softmax", 4096, 131072, 8, 16, False),
    ("softmax", 8192, 131072, 8, 16, False),
    ("softmax", 2048, 262144, 8, 16, False),
    ("rmsnorm", 8192, 65536, 4, 8, True),
    ("rmsnorm", 8192, 65536, 8, 4, True),
    ("rmsnorm", 4096, 131072, 4, 8, True),
    ("rmsnorm", 4096, 131072, 8, 4, True),
    ("rmsnorm", 4096, 131072, 8, 8, True),
    ("rmsnorm", 2048, 262144, 8, 8, True),
    ("rmsnorm", 2048, 262144, 8, 16, True),
    ("rmsnorm", 2048, 262144, 16, 8, True),
    ("softmax", 8192, 65536, 4, 8, True),
    ("softmax", 8192, 65536, 8, 4, True),
    ("softmax", 4096, 131072, 4, 8, True),
    ("softmax", 4096, 131072, 8, 4, True),
    ("softmax", 4096, 131072, 8, 8, True),
    ("softmax", 8192, 131072, 8, 8, True),
    ("softmax", 2048, 262144, 8, 8, True),
    ("softmax", 2048, 262144, 8, 16, True),
    ("softmax", 2048, 262144, 16, 8, True),
    ("layernorm", 8192, 65536, 8, 4, True),
    ("layernorm", 4096, 131072, 4, 8, True),
    ("layernorm", 4096, 131072, 8, 4, True),
    ("layernorm", 2048, 262144, 8, 8, True),
    ("layernorm", 2048, 262144, 8, 16, True),
]


@gluon.constexpr_function
def split_layout(ctas: Any, num_warps: Any) -> Any:
    """[ctas, width] tiles whose row r lives in CTA r of the cluster (16-byte runs a thread)."""
    cga = [[1 << i, 0] for i in range(ctas.bit_length() - 1)]
    return gl.BlockedLayout([1, 8], [1, 32], [1, num_warps], [1, 0], cga_layout=cga)


@gluon.jit
def row_slices(ctas: gl.constexpr, width: gl.constexpr, cols: gl.constexpr, num_warps: gl.constexpr):
    """The cluster's row (its first element: one row a cluster) and the first `cols` of each CTA's
    slice of `width` elements, as offsets of a [ctas, cols] tile whose row r lives in CTA r."""
    layout: gl.constexpr = split_layout(ctas, num_warps)
    row = gl.program_id(0)
    r = gl.arange(0, ctas, layout=gl.SliceLayout(1, layout))
    c = gl.arange(0, cols, layout=gl.SliceLayout(0, layout))
    offs = r[:, None] * width + c[None, :]
    return row.to(gl.int64) * (ctas * width), offs


@gluon.jit
def cluster_sum(g, ctas: gl.constexpr):
    """The sum of the cluster's gathered values (g[r]: CTA r's), in CTA order: the same bits in
    every CTA."""
    total = g[0]
    for i in gl.static_range(1, ctas):
        total += g[i]
    return total


@gluon.jit
def cluster_softmax(g, ctas: gl.constexpr):
    """The row's maximum and sum of exponentials from each CTA's (g[r], g[ctas + r]), in CTA order."""
    gm = g[0]
    for i in gl.static_range(1, ctas):
        gm = gl.maximum(gm, g[i])
    gs = g[ctas] * gl.exp2((g[0] - gm) * LOG2E)
    for i in gl.static_range(1, ctas):
        gs += g[ctas + i] * gl.exp2((g[i] - gm) * LOG2E)
    return gm, gs


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
    start, offs = row_slices(ctas, width, width, num_warps)
    x = gl.load(x_ptr + start + offs).to(gl.float32)
    part = gl.sum(x * x, axis=1)  # within each CTA
    sums = gl.inline_asm_elementwise(asm, constraints, [part], dtype=[gl.float32] * ctas, is_pure=False, pack=1)
    total = cluster_sum(sums, ctas)
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
    start, offs = row_slices(ctas, width, width, num_warps)
    x = gl.load(x_ptr + start + offs).to(gl.float32)
    m = gl.max(x, axis=1)
    s = gl.sum(gl.exp2((x - m[:, None]) * LOG2E), axis=1)
    g = gl.inline_asm_elementwise(asm, constraints, [m, s], dtype=[gl.float32] * (2 * ctas), is_pure=False, pack=1)
    gm, gs = cluster_softmax(g, ctas)
    y = gl.exp2((x - gm[:, None]) * LOG2E) / gs[:, None]
    gl.store(out_ptr + start + offs, y.to(gl.bfloat16))


# The slice in shared memory: CHUNKS buffers of [ctas, width / CHUNKS], one allocation each, held in
# a tuple (Gluon in Triton 3.6 neither indexes nor slices a shared allocation split across a
# cluster's CTAs: "non-trivial block dimension not supported")
CHUNKS = gl.constexpr(8)


@gluon.constexpr_function
def split_shared(ctas: Any) -> Any:
    """Shared memory for a [ctas, chunk] tile whose row r lives in CTA r (no swizzle: each thread
    reads back what it copied, so no barrier is needed between the copy and the reads)."""
    cga = [[1 << i, 0] for i in range(ctas.bit_length() - 1)]
    return gl.SwizzledSharedLayout(1, 1, 1, [1, 0], cga_layout=cga)


@gluon.jit
def shared_slice(ctas: gl.constexpr, chunk: gl.constexpr):
    layout: gl.constexpr = split_shared(ctas)
    return (
        gl.allocate_shared_memory(gl.bfloat16, [ctas, chunk], layout),
        gl.allocate_shared_memory(gl.bfloat16, [ctas, chunk], layout),
        gl.allocate_shared_memory(gl.bfloat16, [ctas, chunk], layout),
        gl.allocate_shared_memory(gl.bfloat16, [ctas, chunk], layout),
        gl.allocate_shared_memory(gl.bfloat16, [ctas, chunk], layout),
        gl.allocate_shared_memory(gl.bfloat16, [ctas, chunk], layout),
        gl.allocate_shared_memory(gl.bfloat16, [ctas, chunk], layout),
        gl.allocate_shared_memory(gl.bfloat16, [ctas, chunk], layout),
    )


@gluon.jit
def issue_slice(bufs, x_ptr, start, offs, chunk: gl.constexpr):
    for i in gl.static_range(CHUNKS):
        async_copy.async_copy_global_to_shared(bufs[i], x_ptr + start + offs + i * chunk)
        async_copy.commit_group()


@gluon.jit
def partials(op: gl.constexpr, bufs, ctas: gl.constexpr, chunk: gl.constexpr, layout: gl.constexpr):
    """This CTA's partial statistics of the slice in `bufs` (its chunks waited for as they land):
    RMSNorm (the sum of squares, twice), softmax (maximum, sum of exponentials), LayerNorm (mean,
    sum of squared deviations)."""
    acc = gl.zeros([ctas, chunk], gl.float32, layout)
    if op == "softmax":
        top = gl.full([ctas, chunk], float("-inf"), gl.float32, layout)
        for i in gl.static_range(CHUNKS):
            async_copy.wait_group(CHUNKS - 1 - i)
            top = gl.maximum(top, bufs[i].load(layout).to(gl.float32))
        m = gl.max(top, axis=1)
        for i in gl.static_range(CHUNKS):
            acc += gl.exp2((bufs[i].load(layout).to(gl.float32) - m[:, None]) * LOG2E)
        return m, gl.sum(acc, axis=1)
    elif op == "layernorm":
        for i in gl.static_range(CHUNKS):
            async_copy.wait_group(CHUNKS - 1 - i)
            acc += bufs[i].load(layout).to(gl.float32)
        mean = gl.sum(acc, axis=1) / (chunk * CHUNKS)
        acc = gl.zeros([ctas, chunk], gl.float32, layout)
        for i in gl.static_range(CHUNKS):
            d = bufs[i].load(layout).to(gl.float32) - mean[:, None]
            acc += d * d
        return mean, gl.sum(acc, axis=1)
    else:
        for i in gl.static_range(CHUNKS):
            async_copy.wait_group(CHUNKS - 1 - i)
            x = bufs[i].load(layout).to(gl.float32)
            acc += x * x
        part = gl.sum(acc, axis=1)
        return part, part


@gluon.jit
def combine(
    op: gl.constexpr, p0, p1, ctas: gl.constexpr, width: gl.constexpr, asm: gl.constexpr, constraints: gl.constexpr
):
    """The row's statistics from every CTA's partials (exchanged by `asm`), the same in each CTA."""
    if op == "softmax":
        g = gl.inline_asm_elementwise(
            asm, constraints, [p0, p1], dtype=[gl.float32] * (2 * ctas), is_pure=False, pack=1
        )
        return cluster_softmax(g, ctas)
    elif op == "layernorm":
        g = gl.inline_asm_elementwise(
            asm, constraints, [p0, p1], dtype=[gl.float32] * (2 * ctas), is_pure=False, pack=1
        )
        gm = g[0]
        for i in gl.static_range(1, ctas):
            gm += g[i]
        gm = gm / ctas
        m2 = g[ctas] + width * (g[0] - gm) * (g[0] - gm)
        for i in gl.static_range(1, ctas):
            m2 += g[ctas + i] + width * (g[i] - gm) * (g[i] - gm)
        return gm, gl.rsqrt(m2 / (ctas * width) + 1e-6)
    else:
        sums = gl.inline_asm_elementwise(asm, constraints, [p0], dtype=[gl.float32] * ctas, is_pure=False, pack=1)
        rstd = gl.rsqrt(cluster_sum(sums, ctas) / (ctas * width) + 1e-6)
        return rstd, rstd


@gluon.jit
def write_row(
    op: gl.constexpr, bufs, s0, s1, w_ptr, b_ptr, out_ptr, start, offs, chunk: gl.constexpr, layout: gl.constexpr
):
    for i in gl.static_range(CHUNKS):
        x = bufs[i].load(layout).to(gl.float32)
        if op == "softmax":
            y = gl.exp2((x - s0[:, None]) * LOG2E) / s1[:, None]
        elif op == "layernorm":
            w = gl.load(w_ptr + offs + i * chunk).to(gl.float32)
            b = gl.load(b_ptr + offs + i * chunk).to(gl.float32)
            y = (x - s0[:, None]) * s1[:, None] * w + b
        else:
            w = gl.load(w_ptr + offs + i * chunk).to(gl.float32)
            y = (x * s0[:, None]).to(gl.bfloat16).to(gl.float32) * w
        gl.store(out_ptr + start + offs + i * chunk, y.to(gl.bfloat16))


@gluon.jit
def slice_in_shared(x_ptr, ctas: gl.constexpr, width: gl.constexpr, num_warps: gl.constexpr):
    """The row's start, each CTA's first chunk's offsets (`row_slices`) and all of this CTA's slice
    of the row on its way into shared memory at once: cp.async, one commit group a chunk, in order
    (the reader waits for chunk i with wait_group(CHUNKS - 1 - i))."""
    chunk: gl.constexpr = width // CHUNKS
    start, offs = row_slices(ctas, width, chunk, num_warps)
    bufs = shared_slice(ctas, chunk)
    issue_slice(bufs, x_ptr, start, offs, chunk)
    return start, offs, bufs


@gluon.jit
def cluster_smem(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    op: gl.constexpr,
    ctas: gl.constexpr,
    width: gl.constexpr,
    asm: gl.constexpr,
    constraints: gl.constexpr,
    tail_asm: gl.constexpr,
    num_warps: gl.constexpr,
):
    """One row a cluster, each CTA's slice in its shared memory: the slice copied in, this CTA's
    partials as it lands, the exchange, the output from shared memory."""
    chunk: gl.constexpr = width // CHUNKS
    layout: gl.constexpr = split_layout(ctas, num_warps)
    start, offs, bufs = slice_in_shared(x_ptr, ctas, width, num_warps)
    p0, p1 = partials(op, bufs, ctas, chunk, layout)
    s0, s1 = combine(op, p0, p1, ctas, width, asm, constraints)
    write_row(op, bufs, s0, s1, w_ptr, b_ptr, out_ptr, start, offs, chunk, layout)
    tail(s0, tail_asm)


@gluon.jit
def rmsnorm_cluster_smem(
    x_ptr,
    w_ptr,
    out_ptr,
    ctas: gl.constexpr,
    width: gl.constexpr,
    asm: gl.constexpr,
    constraints: gl.constexpr,
    tail_asm: gl.constexpr,
    num_warps: gl.constexpr,
):
    cluster_smem(x_ptr, w_ptr, w_ptr, out_ptr, "rmsnorm", ctas, width, asm, constraints, tail_asm, num_warps)


@gluon.jit
def softmax_cluster_smem(
    x_ptr,
    out_ptr,
    ctas: gl.constexpr,
    width: gl.constexpr,
    asm: gl.constexpr,
    constraints: gl.constexpr,
    tail_asm: gl.constexpr,
    num_warps: gl.constexpr,
):
    cluster_smem(x_ptr, x_ptr, x_ptr, out_ptr, "softmax", ctas, width, asm, constraints, tail_asm, num_warps)


@gluon.jit
def layernorm_cluster_smem(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    ctas: gl.constexpr,
    width: gl.constexpr,
    asm: gl.constexpr,
    constraints: gl.constexpr,
    tail_asm: gl.constexpr,
    num_warps: gl.constexpr,
):
    """LayerNorm's partials are each CTA's mean and sum of squared deviations over its slice (two
    passes over shared memory), combined over the cluster as Chan et al. combine equal-sized
    parts: the mean of the means, and the sums plus width * (mean_k - mean)^2 each."""
    cluster_smem(x_ptr, w_ptr, b_ptr, out_ptr, "layernorm", ctas, width, asm, constraints, tail_asm, num_warps)


# Several rows a cluster, the next row's slice on its way during this one's exchange: two sets of
# CHUNKS buffers, rows taken in pairs (one set each), the copies of row i + 1 issued once row i's
# partials are computed, so the SM's loads stay in flight while its CTAs wait at the exchange.
@gluon.jit
def cluster_rows_prefetch(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    op: gl.constexpr,
    ctas: gl.constexpr,
    width: gl.constexpr,
    rows: gl.constexpr,
    asm: gl.constexpr,
    constraints: gl.constexpr,
    num_warps: gl.constexpr,
):
    """`rows` consecutive rows a cluster (an even number), each as the `*_smem` kernels do it, the
    next row's copies issued before this row's exchange."""
    chunk: gl.constexpr = width // CHUNKS
    n: gl.constexpr = ctas * width
    layout: gl.constexpr = split_layout(ctas, num_warps)
    r = gl.arange(0, ctas, layout=gl.SliceLayout(1, layout))
    c = gl.arange(0, chunk, layout=gl.SliceLayout(0, layout))
    offs = r[:, None] * width + c[None, :]
    first = gl.program_id(0).to(gl.int64) * rows
    a = shared_slice(ctas, chunk)
    b = shared_slice(ctas, chunk)
    issue_slice(a, x_ptr, first * n, offs, chunk)
    for j in gl.static_range(0, rows, 2):  # unrolled: a loop over cluster-split tiles aborts Triton 3.6's LLVM lowering
        row = first + j
        p0, p1 = partials(op, a, ctas, chunk, layout)
        issue_slice(b, x_ptr, (row + 1) * n, offs, chunk)
        s0, s1 = combine(op, p0, p1, ctas, width, asm, constraints)
        write_row(op, a, s0, s1, w_ptr, b_ptr, out_ptr, row * n, offs, chunk, layout)
        p0, p1 = partials(op, b, ctas, chunk, layout)
        if j + 2 < rows:
            issue_slice(a, x_ptr, (row + 2) * n, offs, chunk)
        s0, s1 = combine(op, p0, p1, ctas, width, asm, constraints)
        write_row(op, b, s0, s1, w_ptr, b_ptr, out_ptr, (row + 1) * n, offs, chunk, layout)


# op -> (the slice in registers, in shared memory, the partials a CTA exchanges)
KERNELS = {
    "rmsnorm": (rmsnorm_cluster, rmsnorm_cluster_smem, 1),
    "softmax": (softmax_cluster, softmax_cluster_smem, 2),
    "layernorm": (None, layernorm_cluster_smem, 2),
}
POINTERS = {"rmsnorm": ["x_ptr", "w_ptr", "out_ptr"], "softmax": ["x_ptr", "out_ptr"]}


def kernel(op: str, shared: bool) -> Any:
    jit = KERNELS[op][1 if shared else 0]
    if jit is None:
        raise ValueError(f"no {op} kernel with the slice in registers")
    return jit


EXCHANGES = ("gather", "deferred", "push", "none", "alone")


def constexprs(
    op: str, n: int, ctas: int, num_warps: int, shared: bool, exchange: str = "gather", rows: int = 0
) -> dict[str, Any]:
    """The kernel's constexprs; `rows` > 0: `cluster_rows_prefetch`'s, that many rows a cluster."""
    if n % ctas or (n // ctas) & (n // ctas - 1):
        raise ValueError(f"{n} elements do not split into {ctas} power-of-two slices")
    asm, cons, tail_asm = exchange_asm(exchange, ctas, KERNELS[op][2])
    if tail_asm and not shared:
        raise ValueError(f"the {exchange} exchange needs the slice in shared memory")
    cx = {"ctas": ctas, "width": n // ctas, "asm": asm, "constraints": cons, "num_warps": num_warps}
    if rows:
        if not shared or exchange not in ("gather", "none") or rows % 2:
            raise ValueError("rows a cluster: an even number, the slice in shared memory, the gather exchange")
        return cx | {"op": op, "rows": rows}
    return cx | ({"tail_asm": tail_asm} if shared else {})


def compile_report(
    op: str, n: int, ctas: int, num_warps: int, shared: bool, arch: str, exchange: str = "gather", rows: int = 0
) -> dict[str, Any]:
    """Compiles without a GPU; the resources and the cluster instructions the PTX holds."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from tilec.emit.aot import cubin_registers, ptxas_report

    pointers = (
        POINTERS.get(op, ["x_ptr", "w_ptr", "b_ptr", "out_ptr"]) if not rows else ["x_ptr", "w_ptr", "b_ptr", "out_ptr"]
    )
    cx = constexprs(op, n, ctas, num_warps, shared, exchange, rows)
    signature = {p: "*bf16" for p in pointers} | {name: "constexpr" for name in cx}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(pointers))}
    number = int(arch.removeprefix("sm_"))
    source = GluonASTSource(
        kernel(op, shared) if not rows else cluster_rows_prefetch, signature, constexprs=cx, attrs=attrs
    )
    k = triton.compile(source, target=GPUTarget("cuda", number, 32), options={"num_warps": num_warps, "num_ctas": ctas})
    ptx = k.asm["ptx"]
    return {
        "op": op,
        "n": n,
        "ctas": ctas,
        "num_warps": num_warps,
        "slice_in_shared": shared,
        "exchange": exchange,
        "rows": rows,
        "shared_bytes": k.metadata.shared,
        "registers": cubin_registers(k.asm["cubin"]),
        **ptxas_report(ptx, number),
        "cluster": f".reqnctapercluster {ctas}" in ptx,
        "dsmem": "mapa.shared::cluster" in ptx and ("ld.shared::cluster" in ptx or "st.async" in ptx),
        "cluster_barrier": "barrier.cluster.wait" in ptx,
        "vector_loads": any(v in ptx for v in ("ld.global.v4", "ld.global.nc.v4", "cp.async.cg.shared.global")),
    }


def reference(op: str, x: Any, w: Any, b: Any) -> Any:
    """What the kernels compute, in torch (stock torch.compile compiles it)."""
    import torch

    if op == "softmax":
        return torch.softmax(x.float(), -1).to(x.dtype)
    if op == "layernorm":
        return torch.nn.functional.layer_norm(x.float(), x.shape[-1:], w.float(), b.float(), EPS).to(x.dtype)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


def checked(
    op: str, m: int, n: int, ctas: int, num_warps: int, shared: bool = False, exchange: str = "gather", rows: int = 0
) -> tuple[Any, tuple[Any, ...]]:
    """Random bf16 inputs, a launch of the cluster kernel on them, and its output checked against an
    fp32 reference (not for the `none` exchange, which computes no row's statistics): (the launch,
    (x, w, b))."""
    import torch

    from tilec.testing import assert_close

    jit = kernel(op, shared) if not rows else cluster_rows_prefetch
    cx = {k: v for k, v in constexprs(op, n, ctas, num_warps, shared, exchange, rows).items() if k != "num_warps"}
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w, b = (torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    out = torch.full_like(x, float("nan"))
    args = {"rmsnorm": (x, w, out), "softmax": (x, out)}.get(op, (x, w, b, out)) if not rows else (x, w, b, out)
    grid = (m // rows,) if rows else (m,)

    def launch() -> None:
        jit[grid](*args, **cx, num_warps=num_warps, num_ctas=ctas)  # the grid counts clusters

    launch()
    torch.cuda.synchronize()
    if exchange == "none" and ctas > 1:
        return launch, (x, w, b)
    what = f"{op} {m}x{n} over {ctas} CTAs, the {exchange} exchange" + (
        ", the slices in shared memory" if shared else ""
    )
    what += f", {rows} rows a cluster" if rows else ""
    assert_close(out, reference(op, x.float(), w.float(), b.float()), torch.bfloat16, what=what)
    return launch, (x, w, b)


STOCK: dict[tuple[str, int, int], Any] = {}  # stock torch.compile, compiled once an (op, M, N)


def run(
    op: str, m: int, n: int, ctas: int, num_warps: int, shared: bool, exchange: str = "gather", rows: int = 0
) -> dict[str, Any]:
    """Checks the kernel against an fp32 reference, then times it, stock torch.compile and a copy."""
    import functools

    import torch

    from tilec.runtime.timing import device_ms

    if exchange == "alone":  # C times the rows, each a CTA's slice long, one CTA a row
        ours, sliced = checked(op, m * ctas, n // ctas, 1, num_warps, shared, "none")
        inputs = tuple(t.view(m, n) if t.dim() == 2 else t.repeat(ctas) for t in sliced)
    else:
        ours, inputs = checked(op, m, n, ctas, num_warps, shared, exchange, rows)
    stock = STOCK.setdefault((op, m, n), torch.compile(functools.partial(reference, op), dynamic=False))
    stock(*inputs)
    # the model bytes: x read, the output written; a copy of x reads and writes as many
    src = torch.empty(m * n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy = device_ms(lambda: dst.copy_(src))
    ms, stock_ms = device_ms(ours), device_ms(lambda: stock(*inputs))
    return {
        "op": op,
        "shape": f"{m}x{n}",
        "ctas": ctas,
        "num_warps": num_warps,
        "slice_in_shared": shared,
        "exchange": exchange,
        "rows": rows,
        "ms": ms,
        "stock_ms": stock_ms,
        "copy_ms": copy,
        "pct_of_copy": 100 * copy / ms,
        "stock_pct_of_copy": 100 * copy / stock_ms,
    }


def run_ir(m: int, n: int) -> dict[str, Any]:
    """tests/kernels/rmsnorm_cluster_smem.tile as tilec emits it (clusters of 8 CTAs, 4 warps, each
    CTA's slice in 4 chunks of shared memory), checked against the fp32 reference and timed
    beside a copy and the hand-written kernel of the same form (8 chunks)."""
    from pathlib import Path

    import torch

    from tilec.emit.gluon import emit_gluon
    from tilec.ir import parse_file
    from tilec.runtime import load_source
    from tilec.runtime.timing import device_ms
    from tilec.testing import assert_close

    tile = Path(__file__).resolve().parents[1] / "tests" / "kernels" / "rmsnorm_cluster_smem.tile"
    kernel = parse_file(tile).kernels[0]
    kernel.constexprs["CH"] = n // 32
    module = load_source(emit_gluon(kernel).source)
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    y = torch.full_like(x, float("nan"))
    module.launch(x, w, y, m)
    assert_close(y, reference("rmsnorm", x.float(), w.float(), w.float()), torch.bfloat16, what=f"IR {m}x{n}")
    hand, _ = checked("rmsnorm", m, n, 8, 4, True)
    src = torch.empty(m * n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy = device_ms(lambda: dst.copy_(src))
    ms, hand_ms = device_ms(lambda: module.launch(x, w, y, m)), device_ms(hand)
    return {"shape": f"{m}x{n}", "ir_pct_of_copy": 100 * copy / ms, "hand_pct_of_copy": 100 * copy / hand_ms}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compile", metavar="ARCH", help="compile every case for ARCH (sm_90) and print JSON lines")
    p.add_argument("--ops", default=",".join(KERNELS), help="ops to run, comma-separated (default: all)")
    p.add_argument(
        "--ir",
        metavar="MxN,...",
        help="time tests/kernels/rmsnorm_cluster_smem.tile as tilec emits it at these shapes (N a multiple of 32)",
    )
    p.add_argument(
        "--exchange",
        default="gather",
        help=f"exchanges to run each case with, comma-separated, of {', '.join(EXCHANGES)} (default: gather)",
    )
    p.add_argument("--shapes", help="only the cases of these shapes (MxN, comma-separated)")
    p.add_argument(
        "--rows",
        default="0",
        help="rows a cluster, comma-separated (0: one, as the *_smem kernels; an even number: "
        "cluster_rows_prefetch's, the slice in shared memory only, exchanges gather and none)",
    )
    p.add_argument("--shared-only", action="store_true", help="only the cases with the slice in shared memory")
    args = p.parse_args(argv)
    exchanges = args.exchange.split(",")
    if unknown := set(exchanges) - set(EXCHANGES):
        p.error(f"unknown exchange {', '.join(sorted(unknown))}: choose from {', '.join(EXCHANGES)}")
    cases = [
        (*case, exchange, rows)
        for case in CASES
        for rows in (int(r) for r in args.rows.split(","))
        for exchange in exchanges
        if case[0] in args.ops.split(",")
        and (not args.shapes or f"{case[1]}x{case[2]}" in args.shapes.split(","))
        and (case[5] or not args.shared_only)
        and (case[5] or exchange != "deferred")  # its tail is the shared-memory kernels'
        and (not rows or (case[5] and exchange in ("gather", "none")))
    ]
    if args.compile:
        for op, _, n, ctas, warps, shared, exchange, rows in cases:
            print(json.dumps(compile_report(op, n, ctas, warps, shared, args.compile, exchange, rows)), flush=True)
        return 0
    import torch
    import triton

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}\n")
    if args.ir:
        print("| MxN | rmsnorm_cluster_smem.tile, % of copy | bench/cluster.py's kernel (8 CTAs, 4 warps) |")
        print("|---|---|---|")
        for shape in args.ir.split(","):
            m, n = (int(v) for v in shape.split("x"))
            r = run_ir(m, n)
            print(f"| {r['shape']} | {r['ir_pct_of_copy']:.1f} | {r['hand_pct_of_copy']:.1f} |", flush=True)
        return 0
    print(
        "| op | MxN | CTAs a row | warps | slice in | exchange | rows a cluster | ms | % of copy | stock ms | stock % of copy |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        r = run(*case)
        where = "shared" if r["slice_in_shared"] else "registers"
        print(
            f"| {r['op']} | {r['shape']} | {r['ctas']} | {r['num_warps']} | {where} | {r['exchange']} | {r['rows'] or 1} | "
            f"{r['ms']:.4f} | "
            f"{r['pct_of_copy']:.1f} | "
            f"{r['stock_ms']:.4f} | {r['stock_pct_of_copy']:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
