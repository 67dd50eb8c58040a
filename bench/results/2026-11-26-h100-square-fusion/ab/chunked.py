"""Hand-written variants of the banded LayerNorm backward at rows of N: column sums in K chunks."""
import sys
HEAD = '''import triton
import triton.language as tl

@triton.jit
def kern(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, ws_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, RSPLIT: tl.constexpr):
    pid = tl.program_id(0)
    xnumel = {M}
    band_start = pid * RSPLIT
    band_end = tl.minimum(band_start + RSPLIT, xnumel)
    cr = tl.expand_dims(tl.arange(0, {C}), 0)
'''
def gen(M, N, K, stages, reload_w):
    C = N // K
    s = HEAD.format(M=M, C=C)
    for k in range(K):
        s += f"    aw{k} = tl.full([1, {C}], 0.0, tl.float32)\n    ab{k} = tl.full([1, {C}], 0.0, tl.float32)\n"
    carried = ", ".join(f"aw{k}, ab{k}" for k in range(K))
    s += f"    for xoffset in tl.range(band_start, band_end, 1, num_stages={stages}):\n"
    s += "        mean = tl.load(in_ptr3 + xoffset)\n        rstd = tl.load(in_ptr4 + xoffset)\n        base = xoffset * %d\n" % N
    s += "        s1 = tl.zeros([1, %d], tl.float32)\n        s2 = tl.zeros([1, %d], tl.float32)\n" % (C, C)
    for k in range(K):
        s += f"        x{k} = tl.load(in_ptr2 + base + {k*C} + cr).to(tl.float32)\n"
        s += f"        dy{k} = tl.load(in_ptr0 + base + {k*C} + cr).to(tl.float32)\n"
        s += f"        w{k} = tl.load(in_ptr1 + {k*C} + cr).to(tl.float32)\n"
        s += f"        g{k} = dy{k} * w{k}\n        xh{k} = (x{k} - mean) * rstd\n"
        s += f"        s1 += g{k}\n        s2 += g{k} * xh{k}\n"
    s += "        t1 = tl.sum(s1, 1)[:, None]\n        t2 = tl.sum(s2, 1)[:, None]\n"
    for k in range(K):
        if reload_w:
            s += f"        x{k} = tl.load(in_ptr2 + base + {k*C} + cr).to(tl.float32)\n"
            s += f"        dy{k} = tl.load(in_ptr0 + base + {k*C} + cr).to(tl.float32)\n"
            s += f"        w{k} = tl.load(in_ptr1 + {k*C} + cr).to(tl.float32)\n"
            s += f"        g{k} = dy{k} * w{k}\n        xh{k} = (x{k} - mean) * rstd\n"
        s += f"        dx{k} = (rstd / {N}.0) * ({N}.0 * g{k} - t1 - xh{k} * t2)\n"
        s += f"        tl.store(out_ptr2 + base + {k*C} + cr, dx{k}.to(tl.bfloat16))\n"
        s += f"        aw{k} += dy{k} * xh{k}\n        ab{k} += dy{k}\n"
    s += "    ws = ws_ptr + pid * %d\n" % N
    s += "    ws2 = ws_ptr + (pid + tl.num_programs(0)) * %d\n" % N
    for k in range(K):
        s += f"    tl.store(ws + {k*C} + cr, aw{k})\n    tl.store(ws2 + {k*C} + cr, ab{k})\n"
    s += f'''
KERNEL = kern
SIGNATURE = {{"in_ptr0": "*bf16", "in_ptr1": "*bf16", "in_ptr2": "*bf16", "in_ptr3": "*fp32", "in_ptr4": "*fp32", "out_ptr2": "*bf16", "ws_ptr": "*fp32", "XBLOCK": "constexpr", "RBLOCK": "constexpr", "RSPLIT": "constexpr"}}
CONSTEXPRS = {{'XBLOCK': 1, 'RBLOCK': {N}, 'RSPLIT': {-(-M // 132)}}}
DIVISIBLE = ['in_ptr0', 'in_ptr1', 'in_ptr2', 'in_ptr3', 'in_ptr4', 'out_ptr2', 'ws_ptr']
'''
    return s

if __name__ == "__main__":
    from tilec.emit.check import check_compile
    from tilec.emit.triton import TritonModule
    from tilec.inductor.build import PLACEHOLDER
    M, N = 4096, int(sys.argv[1])
    for K in (1, 2, 4, 8):
        for reload_w in (False, True):
            for warps in (8, 16):
                src = gen(M, N, K, 2, reload_w) + f"NUM_WARPS = {warps}\n"
                r = check_compile(TritonModule(PLACEHOLDER, src), "sm_90")
                print(N, K, "reload" if reload_w else "keep", r.summary() if r.ok else r.error[:300], flush=True)
