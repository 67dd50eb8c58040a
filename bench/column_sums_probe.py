# ruff: noqa: N803, N806, B023  (kernel pointers in capitals; each closure runs before its loop moves on)
"""A probe: a long-row norm backward (RMSNorm, LayerNorm) as one kernel, its weights' column sums
kept in global memory. Each of P programs owns rows pid, pid + P, ...; per row it sums over the
row's chunks, then reads the row again (from L2, it is hoped) for dx, and adds dy*xhat (and dy)
into its own fp32 row of a P x N workspace, read, added to and written back every row (P x N x 4
bytes: 17 MB at 132 programs and rows of 32768, meant to stay in the 50 MB L2); a torch sum over
P adds the workspace rows. Timed beside torch.compile of the same formula, % of a copy of the
model bytes (3·M·N·2), device time, cold L2 (triton.testing.do_bench). Hand-written Triton, not
tilec's output: the question is whether the plan is worth building (bench/results/
2026-11-26-h200-global-column-sums).

    python bench/column_sums_probe.py 4096x32768,2048x65536      # JSON lines, also $OUT/fusedbwd.jsonl
"""

import json
import os
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def rms_bwd(X, DY, W, RSTD, DX, PART, M, N: tl.constexpr, P: tl.constexpr, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    for c in range(0, N, BLOCK):
        tl.store(PART + pid * N + c + cols, tl.zeros([BLOCK], tl.float32))
    for k in range(0, tl.cdiv(M - pid, P)):
        r = pid + k * P
        rstd = tl.load(RSTD + r)
        acc = tl.zeros([BLOCK], tl.float32)
        for c in range(0, N, BLOCK):
            x = tl.load(X + r * N + c + cols).to(tl.float32)
            dy = tl.load(DY + r * N + c + cols).to(tl.float32)
            w = tl.load(W + c + cols).to(tl.float32)
            acc += dy * w * x
        s = tl.sum(acc, 0) * rstd * rstd * rstd / N
        for i in range(0, N, BLOCK):
            if REVERSE:
                c = N - BLOCK - i
            else:
                c = i
            x = tl.load(X + r * N + c + cols).to(tl.float32)
            dy = tl.load(DY + r * N + c + cols).to(tl.float32)
            w = tl.load(W + c + cols).to(tl.float32)
            dx = rstd * dy * w - x * s
            tl.store(DX + r * N + c + cols, dx.to(DX.dtype.element_ty))
            p = tl.load(PART + pid * N + c + cols)
            tl.store(PART + pid * N + c + cols, p + dy * x * rstd)


@triton.jit
def ln_bwd(
    X, DY, W, MEAN, RSTD, DX, PART, M, N: tl.constexpr, P: tl.constexpr, BLOCK: tl.constexpr, REVERSE: tl.constexpr
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    for c in range(0, N, BLOCK):
        tl.store(PART + pid * N + c + cols, tl.zeros([BLOCK], tl.float32))
        tl.store(PART + (P + pid) * N + c + cols, tl.zeros([BLOCK], tl.float32))
    for k in range(0, tl.cdiv(M - pid, P)):
        r = pid + k * P
        rstd = tl.load(RSTD + r)
        mean = tl.load(MEAN + r)
        a1 = tl.zeros([BLOCK], tl.float32)
        a2 = tl.zeros([BLOCK], tl.float32)
        for c in range(0, N, BLOCK):
            x = tl.load(X + r * N + c + cols).to(tl.float32)
            dy = tl.load(DY + r * N + c + cols).to(tl.float32)
            w = tl.load(W + c + cols).to(tl.float32)
            g = dy * w
            a1 += g
            a2 += g * (x - mean)
        m1 = tl.sum(a1, 0) / N
        m2 = tl.sum(a2, 0) * rstd / N
        for i in range(0, N, BLOCK):
            if REVERSE:
                c = N - BLOCK - i
            else:
                c = i
            x = tl.load(X + r * N + c + cols).to(tl.float32)
            dy = tl.load(DY + r * N + c + cols).to(tl.float32)
            w = tl.load(W + c + cols).to(tl.float32)
            xh = (x - mean) * rstd
            dx = rstd * (dy * w - m1 - xh * m2)
            tl.store(DX + r * N + c + cols, dx.to(DX.dtype.element_ty))
            p = tl.load(PART + pid * N + c + cols)
            tl.store(PART + pid * N + c + cols, p + dy * xh)
            q = tl.load(PART + (P + pid) * N + c + cols)
            tl.store(PART + (P + pid) * N + c + cols, q + dy)


def ref_rms(x, w, dy, rstd):
    xf, dyf, wf = x.float(), dy.float(), w.float()
    xh = xf * rstd[:, None]
    g = dyf * wf
    dx = rstd[:, None] * (g - xh * (g * xh).mean(1, keepdim=True))
    return dx.to(x.dtype), (dyf * xh).sum(0).to(w.dtype)


def ref_ln(x, w, dy, mean, rstd):
    xf, dyf, wf = x.float(), dy.float(), w.float()
    xh = (xf - mean[:, None]) * rstd[:, None]
    g = dyf * wf
    dx = rstd[:, None] * (g - g.mean(1, keepdim=True) - xh * (g * xh).mean(1, keepdim=True))
    return dx.to(x.dtype), (dyf * xh).sum(0).to(w.dtype), dyf.sum(0).to(w.dtype)


def norm_case(m, n):
    """A norm backward's bf16 inputs over m rows of n (seeded) with their saved statistics, as
    `ref_rms` and `ref_ln` take them ({"rms": args, "ln": args}), and a same-size copy's device ms."""
    torch.manual_seed(0)
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    xf = x.float()
    mean = xf.mean(1)
    rstd = torch.rsqrt(xf.var(1, unbiased=False) + 1e-6)
    rrstd = torch.rsqrt(xf.pow(2).mean(1) + 1e-6)
    src = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy_ms = triton.testing.do_bench(lambda: dst.copy_(src), return_mode="median")
    return {"rms": (x, w, dy, rrstd), "ln": (x, w, dy, mean, rstd)}, copy_ms


def measure(fn, want, copy_ms, ok=None):
    """`fn`'s results checked against `want` (elementwise, atol 0.05, rtol 0.02), or `ok` as its
    maker checked them, and its device time: {"ok", "us", "pct"} (% of a copy of the model bytes
    3·M·N·2), or {"error"}."""
    try:
        got = fn()
        torch.cuda.synchronize()
        if ok is None:
            ok = all(bool(torch.allclose(a.float(), b.float(), atol=5e-2, rtol=2e-2)) for a, b in zip(got, want))
        t = triton.testing.do_bench(fn, return_mode="median")
        return dict(ok=bool(ok), us=round(t * 1e3, 1), pct=round(150 * copy_ms / t, 1))
    except Exception as e:
        return dict(error=str(e)[-300:])


def main():
    out = open(os.environ.get("OUT", "/tmp") + "/fusedbwd.jsonl", "a")  # noqa: SIM115
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1].split(",")]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    stock_rms = torch.compile(ref_rms)
    stock_ln = torch.compile(ref_ln)
    for m, n in shapes:
        cases, copy_ms = norm_case(m, n)
        x, w, dy, rrstd = cases["rms"]
        mean, rstd = cases["ln"][3:]
        dx = torch.empty_like(x)
        wants = {"rms": ref_rms(*cases["rms"]), "ln": ref_ln(*cases["ln"])}

        def rec(op, variant, fn, m=m, n=n, copy_ms=copy_ms):
            r = dict(op=op, m=m, n=n, variant=variant, **measure(fn, wants[op], copy_ms))
            print(json.dumps(r), flush=True)
            out.write(json.dumps(r) + "\n")

        rec("rms", "stock", lambda: stock_rms(*cases["rms"]))
        rec("ln", "stock", lambda: stock_ln(*cases["ln"]))
        for per_sm in (1, 2):
            P = sms * per_sm
            part = torch.empty(2 * P, n, device="cuda", dtype=torch.float32)
            for block in (4096, 8192):
                for warps in (16, 32):
                    for rev in (False, True):
                        v = f"P{per_sm}-b{block}-w{warps}{'-rev' if rev else ''}"

                        def frms(P=P, block=block, warps=warps, rev=rev):
                            rms_bwd[(P,)](x, dy, w, rrstd, dx, part, m, n, P, block, rev, num_warps=warps)
                            return dx, part[:P].sum(0).to(w.dtype)

                        def fln(P=P, block=block, warps=warps, rev=rev):
                            ln_bwd[(P,)](x, dy, w, mean, rstd, dx, part, m, n, P, block, rev, num_warps=warps)
                            s = part.view(2, P, n).sum(1).to(w.dtype)
                            return dx, s[0], s[1]

                        rec("rms", v, frms)
                        rec("ln", v, fln)


if __name__ == "__main__":
    main()
