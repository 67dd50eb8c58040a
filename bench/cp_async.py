"""A probe of the cp.async row cache: softmax over rows of 50257 bf16 logits, hand-written in Gluon.

    python bench/cp_async.py run     # on a GPU: % of a same-size copy for each chunk, warps and form
    python bench/cp_async.py ptx     # no GPU: the copies' and barriers' PTX for sm_90

Each row (one a program) is read from the aligned address below its start in chunks at
columns 8 + k * chunk, as `align-rows` splits it; every chunk is copied into shared memory by
cp.async up front, each thread arriving on the chunk's mbarrier once its copies land
(cp.async.mbarrier.arrive.noinc), and the first pass waits for each chunk's barrier. The first
vector and the last partial one are read from global memory. Two forms of the statistics:
`lanes` (each lane's maximum over the chunks, one reduction, then each lane's sum of exp over the
chunks read again from shared memory, one reduction: what `reuse` and `softmax-lanes` make) and
`chunks` (each chunk's maximum and sum reduced across the warps, as the logical form folds them).
The probe's `chunks` form starts its statistics from the first and last vectors, and gives NaN
for a row where both are -inf (exp(-inf - -inf)): row 5 of its input is one, so that form's error
reads NaN. It is timed, not used: the pipeline does not make it.
bench/results/2026-11-27-h100-cp-async/probe.log holds a run.
"""

import json
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import mbarrier


@gluon.jit
def softmax_rows(
    x_ptr,
    y_ptr,
    n: gl.constexpr,
    chunk: gl.constexpr,
    slots: gl.constexpr,
    warps: gl.constexpr,
    lanes: gl.constexpr,
):
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [1, warps], [1, 0])
    shared: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    row = gl.program_id(0)
    rowstart = row * n
    head = rowstart % 8
    base = rowstart - head
    span = n + head
    end8 = (span // 8) * 8
    nfull = (span - 8) // chunk
    cache = gl.allocate_shared_memory(gl.bfloat16, [slots, 1, chunk], shared)
    bars = gl.allocate_shared_memory(gl.int64, [slots, 1], mbarrier.MBarrierLayout())
    cols = gl.expand_dims(gl.arange(0, chunk, layout=gl.SliceLayout(0, layout)), 0)
    for k in gl.static_range(slots):
        mbarrier.init(bars.index(k), count=32 * warps)
    for k in gl.static_range(slots):
        p = 8 + k * chunk + cols
        offs = gl.multiple_of(base + p, [1, 8])
        async_copy.async_copy_global_to_shared(cache.index(k), x_ptr + offs, mask=p < end8)
        async_copy.mbarrier_arrive(bars.index(k), increment_count=False)
    hmask = (cols >= head) & (cols < 8)
    h = gl.load(x_ptr + base + cols, mask=hmask, other=float("-inf")).to(gl.float32)
    tmask = (end8 + cols) < span
    t = gl.load(x_ptr + base + end8 + cols, mask=tmask, other=float("-inf")).to(gl.float32)
    if lanes:
        ml = gl.maximum(h, t)
        for k in range(nfull):
            mbarrier.wait(bars.index(k), 0)
            ml = gl.maximum(ml, cache.index(k).load(layout).to(gl.float32))
        mbarrier.wait(bars.index(nfull), 0)
        v = cache.index(nfull).load(layout).to(gl.float32)
        ml = gl.maximum(ml, gl.where(8 + nfull * chunk + cols < end8, v, float("-inf")))
        m = gl.max(ml, axis=1)
        mb = gl.expand_dims(m, 1)
        sl = gl.exp(h - mb) + gl.exp(t - mb)
        for k in range(nfull):
            sl += gl.exp(cache.index(k).load(layout).to(gl.float32) - mb)
        v = cache.index(nfull).load(layout).to(gl.float32)
        sl += gl.where(8 + nfull * chunk + cols < end8, gl.exp(v - mb), 0.0)
        s = gl.sum(sl, axis=1)
    else:
        m = gl.max(gl.maximum(h, t), axis=1)
        mb = gl.expand_dims(m, 1)
        s = gl.sum(gl.exp(h - mb) + gl.exp(t - mb), axis=1)
        for k in range(nfull):
            mbarrier.wait(bars.index(k), 0)
            v = cache.index(k).load(layout).to(gl.float32)
            cm = gl.maximum(m, gl.max(v, axis=1))
            s = s * gl.exp(m - cm) + gl.sum(gl.exp(v - gl.expand_dims(cm, 1)), axis=1)
            m = cm
        mbarrier.wait(bars.index(nfull), 0)
        v = cache.index(nfull).load(layout).to(gl.float32)
        v = gl.where(8 + nfull * chunk + cols < end8, v, float("-inf"))
        cm = gl.maximum(m, gl.max(v, axis=1))
        s = s * gl.exp(m - cm) + gl.sum(gl.exp(v - gl.expand_dims(cm, 1)), axis=1)
        m = cm
    mb = gl.expand_dims(m, 1)
    sb = gl.expand_dims(s, 1)
    gl.store(y_ptr + base + cols, (gl.exp(h - mb) / sb).to(gl.bfloat16), mask=hmask)
    for k in range(nfull):
        p = 8 + k * chunk + cols
        v = cache.index(k).load(layout).to(gl.float32)
        offs = gl.multiple_of(base + p, [1, 8])
        gl.store(y_ptr + offs, (gl.exp(v - mb) / sb).to(gl.bfloat16))
    p = 8 + nfull * chunk + cols
    v = cache.index(nfull).load(layout).to(gl.float32)
    offs = gl.multiple_of(base + p, [1, 8])
    gl.store(y_ptr + offs, (gl.exp(v - mb) / sb).to(gl.bfloat16), mask=p < end8)
    gl.store(y_ptr + base + end8 + cols, (gl.exp(t - mb) / sb).to(gl.bfloat16), mask=tmask)
    for k in gl.static_range(slots):
        mbarrier.invalidate(bars.index(k))


def run(x, chunk, warps, lanes):
    rows, n = x.shape
    y = torch.empty_like(x)
    slots = (n - 1) // chunk + 1  # slots at 8 + k * chunk up to n + 7
    softmax_rows[(rows,)](x, y, n, chunk, slots, warps, lanes, num_warps=warps)
    return y


if __name__ == "__main__":
    if sys.argv[1] == "ptx":
        import re

        from triton.backends.compiler import GPUTarget
        from triton.experimental.gluon._runtime import GluonASTSource

        sig = {
            "x_ptr": "*bf16",
            "y_ptr": "*bf16",
            "n": "constexpr",
            "chunk": "constexpr",
            "slots": "constexpr",
            "warps": "constexpr",
            "lanes": "constexpr",
        }
        for lanes in (True, False):
            src = GluonASTSource(
                softmax_rows,
                sig,
                constexprs={"n": 50257, "chunk": 4096, "slots": 13, "warps": 8, "lanes": lanes},
                attrs={(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]},
            )
            k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
            ptx = k.asm["ptx"]
            for pat in ["cp.async[^ ;]*", "st.global[^ ;]*", "ld.global[^ ;]*", "ex2[^ ;]*", "bar.sync"]:
                print(pat, {x: ptx.count(x) for x in set(re.findall(pat, ptx))})
            print("smem", k.metadata.shared)
        sys.exit()
    torch.manual_seed(0)
    M, N = 32768, 50257
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16) * 3
    x[5, :] = float("-inf")
    x[5, 100] = 1.0
    ref = torch.softmax(x.float(), -1)
    out = {"gpu": torch.cuda.get_device_name()}

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=25, rep=200)

    tc = bench(lambda: x.clone())
    for chunk, warps in [(2048, 4), (2048, 8), (4096, 4), (4096, 8), (4096, 16), (8192, 8), (8192, 16), (8192, 32)]:
        for lanes in (True, False):
            try:
                y = run(x, chunk, warps, lanes)
                err = (y.float() - ref).abs().max().item()
                t = bench(lambda c=chunk, w=warps, la=lanes: run(x, c, w, la))
                key = f"B{chunk}-w{warps}-{'lanes' if lanes else 'chunks'}"
                out[key] = (round(tc / t * 100, 1), err)
            except Exception as e:
                out[f"B{chunk}-w{warps}-{lanes}"] = str(e)[:200]
            print(out, flush=True)
    print(json.dumps(out, indent=1))
