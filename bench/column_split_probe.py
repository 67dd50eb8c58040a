# ruff: noqa: N803, N806, B023  (kernel pointers in capitals; each closure runs before its loop moves on)
"""A probe: a long-row norm backward (RMSNorm, LayerNorm) as one kernel with its columns split
over G programs. Program (g, band) owns columns [g·N/G, (g+1)·N/G) of a band of rows: per row it
loads its own columns of x and dy (kept in registers), sums the statistics over its own columns
and then over the other G-1 slices (read in chunks of CH, from L2 where the slice's owner read it
at about the same time), computes dx for its own columns and adds dy·xhat (and dy) into fp32
column sums of its own columns, carried in registers across the band (a band: M / bands
rows, bands the largest divisor of M that keeps G·bands within the SMs, or twice them), stored once to its band's
row of a workspace that a torch sum adds up. x and dy come from HBM once; L2 serves each row G
times. Timed beside torch.compile of the same formula, % of a copy of the model bytes (3·M·N·2),
device time, cold L2 (triton.testing.do_bench). Hand-written Triton, not tilec's output: whether a
column-split plan of the banded kernel is worth building past rows of 16384.

    python bench/column_split_probe.py 4096x32768,2048x65536      # JSON lines, also $OUT/column_split.jsonl
"""

import json
import os
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from column_sums_probe import measure, norm_case, ref_ln, ref_rms


@triton.jit
def rms_split(X, DY, W, RSTD, DX, WS, M, N: tl.constexpr, RSPLIT: tl.constexpr, G: tl.constexpr, CH: tl.constexpr):
    SLICE: tl.constexpr = N // G
    g = tl.program_id(0)
    band = tl.program_id(1)
    cols = g * SLICE + tl.arange(0, SLICE)
    chunk = tl.arange(0, CH)
    w = tl.load(W + cols).to(tl.float32)
    acc = tl.zeros([SLICE], tl.float32)
    for k in range(0, RSPLIT):
        r = band * RSPLIT + k
        base = r.to(tl.int64) * N
        x = tl.load(X + base + cols).to(tl.float32)
        dy = tl.load(DY + base + cols).to(tl.float32)
        rstd = tl.load(RSTD + r)
        part = tl.zeros([CH], tl.float32)
        for j in range(1, G):
            start = ((g + j) % G) * SLICE
            for c in range(0, SLICE, CH):
                xo = tl.load(X + base + start + c + chunk).to(tl.float32)
                dyo = tl.load(DY + base + start + c + chunk).to(tl.float32)
                wo = tl.load(W + start + c + chunk).to(tl.float32)
                part += dyo * wo * xo
        s = (tl.sum(dy * w * x, 0) + tl.sum(part, 0)) * rstd * rstd * rstd / N
        dx = rstd * dy * w - x * s
        tl.store(DX + base + cols, dx.to(DX.dtype.element_ty))
        acc += dy * x * rstd
    tl.store(WS + band * N + cols, acc)


@triton.jit
def ln_split(X, DY, W, MEAN, RSTD, DX, WS, M, N: tl.constexpr, RSPLIT: tl.constexpr, G: tl.constexpr, CH: tl.constexpr):
    SLICE: tl.constexpr = N // G
    g = tl.program_id(0)
    band = tl.program_id(1)
    bands = tl.num_programs(1)
    cols = g * SLICE + tl.arange(0, SLICE)
    chunk = tl.arange(0, CH)
    w = tl.load(W + cols).to(tl.float32)
    dw = tl.zeros([SLICE], tl.float32)
    db = tl.zeros([SLICE], tl.float32)
    for k in range(0, RSPLIT):
        r = band * RSPLIT + k
        base = r.to(tl.int64) * N
        x = tl.load(X + base + cols).to(tl.float32)
        dy = tl.load(DY + base + cols).to(tl.float32)
        rstd = tl.load(RSTD + r)
        mean = tl.load(MEAN + r)
        p1 = tl.zeros([CH], tl.float32)
        p2 = tl.zeros([CH], tl.float32)
        for j in range(1, G):
            start = ((g + j) % G) * SLICE
            for c in range(0, SLICE, CH):
                xo = tl.load(X + base + start + c + chunk).to(tl.float32)
                dyo = tl.load(DY + base + start + c + chunk).to(tl.float32)
                wo = tl.load(W + start + c + chunk).to(tl.float32)
                go = dyo * wo
                p1 += go
                p2 += go * (xo - mean)
        gw = dy * w
        xh = (x - mean) * rstd
        m1 = (tl.sum(gw, 0) + tl.sum(p1, 0)) / N
        m2 = (tl.sum(gw * xh, 0) + tl.sum(p2, 0) * rstd) / N
        dx = rstd * (gw - m1 - xh * m2)
        tl.store(DX + base + cols, dx.to(DX.dtype.element_ty))
        dw += dy * xh
        db += dy
    tl.store(WS + band * N + cols, dw)
    tl.store(WS + (bands + band) * N + cols, db)


@triton.jit
def rms_split_flat(X, DY, W, RSTD, DX, WS, M, N: tl.constexpr, RSPLIT: tl.constexpr, G: tl.constexpr, CH: tl.constexpr):
    """rms_split with the other slices' chunks unrolled: no loop inside the band loop, so
    Triton's pipelining keeps the next rows' loads in flight (num_stages)."""
    SLICE: tl.constexpr = N // G
    g = tl.program_id(0)
    band = tl.program_id(1)
    cols = g * SLICE + tl.arange(0, SLICE)
    chunk = tl.arange(0, CH)
    w = tl.load(W + cols).to(tl.float32)
    acc = tl.zeros([SLICE], tl.float32)
    for k in range(0, RSPLIT):
        r = band * RSPLIT + k
        base = r.to(tl.int64) * N
        x = tl.load(X + base + cols).to(tl.float32)
        dy = tl.load(DY + base + cols).to(tl.float32)
        rstd = tl.load(RSTD + r)
        part = tl.zeros([CH], tl.float32)
        for j in tl.static_range(1, G):
            start = ((g + j) % G) * SLICE
            for c in tl.static_range(0, SLICE, CH):
                xo = tl.load(X + base + start + c + chunk).to(tl.float32)
                dyo = tl.load(DY + base + start + c + chunk).to(tl.float32)
                wo = tl.load(W + start + c + chunk).to(tl.float32)
                part += dyo * wo * xo
        s = (tl.sum(dy * w * x, 0) + tl.sum(part, 0)) * rstd * rstd * rstd / N
        dx = rstd * dy * w - x * s
        tl.store(DX + base + cols, dx.to(DX.dtype.element_ty))
        acc += dy * x * rstd
    tl.store(WS + band * N + cols, acc)


@triton.jit
def ln_split_flat(
    X, DY, W, MEAN, RSTD, DX, WS, M, N: tl.constexpr, RSPLIT: tl.constexpr, G: tl.constexpr, CH: tl.constexpr
):
    """ln_split with the other slices' chunks unrolled (as rms_split_flat)."""
    SLICE: tl.constexpr = N // G
    g = tl.program_id(0)
    band = tl.program_id(1)
    bands = tl.num_programs(1)
    cols = g * SLICE + tl.arange(0, SLICE)
    chunk = tl.arange(0, CH)
    w = tl.load(W + cols).to(tl.float32)
    dw = tl.zeros([SLICE], tl.float32)
    db = tl.zeros([SLICE], tl.float32)
    for k in range(0, RSPLIT):
        r = band * RSPLIT + k
        base = r.to(tl.int64) * N
        x = tl.load(X + base + cols).to(tl.float32)
        dy = tl.load(DY + base + cols).to(tl.float32)
        rstd = tl.load(RSTD + r)
        mean = tl.load(MEAN + r)
        p1 = tl.zeros([CH], tl.float32)
        p2 = tl.zeros([CH], tl.float32)
        for j in tl.static_range(1, G):
            start = ((g + j) % G) * SLICE
            for c in tl.static_range(0, SLICE, CH):
                xo = tl.load(X + base + start + c + chunk).to(tl.float32)
                dyo = tl.load(DY + base + start + c + chunk).to(tl.float32)
                wo = tl.load(W + start + c + chunk).to(tl.float32)
                go = dyo * wo
                p1 += go
                p2 += go * (xo - mean)
        gw = dy * w
        xh = (x - mean) * rstd
        m1 = (tl.sum(gw, 0) + tl.sum(p1, 0)) / N
        m2 = (tl.sum(gw * xh, 0) + tl.sum(p2, 0) * rstd) / N
        dx = rstd * (gw - m1 - xh * m2)
        tl.store(DX + base + cols, dx.to(DX.dtype.element_ty))
        dw += dy * xh
        db += dy
    tl.store(WS + band * N + cols, dw)
    tl.store(WS + (bands + band) * N + cols, db)


def main() -> None:
    out = open(os.environ.get("OUT", "/tmp") + "/column_split.jsonl", "a")  # noqa: SIM115
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1].split(",")]
    ops = sys.argv[2].split(",") if len(sys.argv) > 2 else ["rms", "ln"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    stock = {"rms": torch.compile(ref_rms), "ln": torch.compile(ref_ln)}
    for m, n in shapes:
        args, copy_ms = norm_case(m, n)
        x, w, dy, rrstd = args["rms"]
        mean, rstd = args["ln"][3:]
        dx = torch.empty_like(x)
        refs = {"rms": ref_rms(*args["rms"]), "ln": ref_ln(*args["ln"])}

        def rec(op, variant, fn, m=m, n=n, copy_ms=copy_ms, refs=refs):
            r = dict(op=op, m=m, n=n, variant=variant, **measure(fn, refs[op], copy_ms))
            print(json.dumps(r), flush=True)
            out.write(json.dumps(r) + "\n")

        for op in ops:
            rec(op, "stock", lambda: stock[op](*args[op]))
            for G in (2, 4, 8):
                if n // G > 16384 or n // G < 4096:
                    continue
                for per_sm in (1, 2):
                    bands = max(b for b in range(1, sms * per_sm // G + 1) if m % b == 0)
                    rsplit = m // bands
                    ws = torch.empty(2 * bands, n, device="cuda", dtype=torch.float32)
                    for warps in (8, 16, 32):
                        if per_sm * warps > 32:
                            continue
                        for flat, stages in ((False, 3), (True, 1), (True, 2), (True, 3)):
                            ch = 4096
                            v = f"G{G}-per{per_sm}-w{warps}-ch{ch}" + (f"-flat-s{stages}" if flat else "")
                            rms_k, ln_k = (rms_split_flat, ln_split_flat) if flat else (rms_split, ln_split)

                            def frms(G=G, rsplit=rsplit, bands=bands, ws=ws, warps=warps, ch=ch, k=rms_k, s=stages):
                                k[(G, bands)](
                                    x, dy, w, rrstd, dx, ws, m, n, rsplit, G, ch, num_warps=warps, num_stages=s
                                )
                                return dx, ws[:bands].sum(0).to(w.dtype)

                            def fln(G=G, rsplit=rsplit, bands=bands, ws=ws, warps=warps, ch=ch, k=ln_k, s=stages):
                                k[(G, bands)](
                                    x, dy, w, mean, rstd, dx, ws, m, n, rsplit, G, ch, num_warps=warps, num_stages=s
                                )
                                s2 = ws.view(2, bands, n).sum(1).to(w.dtype)
                                return dx, s2[0], s2[1]

                            rec(op, v, frms if op == "rms" else fln)


if __name__ == "__main__":
    main()
