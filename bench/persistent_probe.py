"""A probe of rows of 8192 and 16384 on the H200: does a persistent program that overlaps the next
row's load with this row's reductions and stores close what one row a program leaves below a copy?
Hand-written Triton kernels, not a tilec form, each row whole in registers, for RMSNorm, LayerNorm
(weight and bias) and softmax: `one-wW` one row a program (the baseline); `staged2-oO-wW` a
persistent grid of O programs an SM looping over rows pid, pid + P, ... (`tl.range`, num_stages=2:
Triton 3.6 does not pipeline these loads -- no cp.async in the PTX -- so this is the plain
persistent loop); `prefetch-oO-wW` the same with the next row loaded into registers before this
row's work. Each checked against an fp32 reference; device time, cold L2, % of a same-size copy;
one JSON line each, also to $OUT/persistent_probe.jsonl, and the best eight a shape last.

    python bench/persistent_probe.py layernorm:4096x16384 softmax:8192x8192

Results: bench/results/2026-11-28-h200-in-turn/persistent/.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import triton
import triton.language as tl

from tilec.runtime.timing import device_ms


@triton.jit
def _row(op: tl.constexpr, x, w_ptr, b_ptr, cols, n_cols: tl.constexpr, eps):
    """One row's output in fp32: 0 RMSNorm, 1 LayerNorm, 2 softmax."""
    x = x.to(tl.float32)
    if op == 0:  # rmsnorm
        ms = tl.sum(x * x, 0) / n_cols
        w = tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)
        return x * tl.rsqrt(ms + eps) * w
    elif op == 1:  # layernorm
        mean = tl.sum(x, 0) / n_cols
        xc = x - mean
        var = tl.sum(xc * xc, 0) / n_cols
        w = tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)
        b = tl.load(b_ptr + cols, eviction_policy="evict_last").to(tl.float32)
        return xc * tl.rsqrt(var + eps) * w + b
    else:  # softmax
        m = tl.max(x, 0)
        e = tl.exp(x - m)
        return e / tl.sum(e, 0)


@triton.jit
def one_row(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols: tl.constexpr, eps, op: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, n_cols)
    x = tl.load(x_ptr + row * n_cols + cols, eviction_policy="evict_first")
    y = _row(op, x, w_ptr, b_ptr, cols, n_cols, eps)
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty))


@triton.jit
def staged(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols: tl.constexpr, eps, op: tl.constexpr, stages: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, n_cols)
    for row in tl.range(pid, n_rows, nprog, num_stages=stages):
        r = row.to(tl.int64)
        x = tl.load(x_ptr + r * n_cols + cols, eviction_policy="evict_first")
        y = _row(op, x, w_ptr, b_ptr, cols, n_cols, eps)
        tl.store(y_ptr + r * n_cols + cols, y.to(y_ptr.dtype.element_ty))


@triton.jit
def prefetch(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols: tl.constexpr, eps, op: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, n_cols)
    nxt = tl.load(
        x_ptr + pid.to(tl.int64) * n_cols + cols, mask=(cols < n_cols) & (pid < n_rows), eviction_policy="evict_first"
    )
    for row in tl.range(pid, n_rows, nprog, num_stages=1):
        x = nxt
        n2 = row + nprog
        nxt = tl.load(
            x_ptr + n2.to(tl.int64) * n_cols + cols, mask=(cols < n_cols) & (n2 < n_rows), eviction_policy="evict_first"
        )
        y = _row(op, x, w_ptr, b_ptr, cols, n_cols, eps)
        tl.store(y_ptr + row.to(tl.int64) * n_cols + cols, y.to(y_ptr.dtype.element_ty))


def ref(op: int, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The op in fp32, eager."""
    xf = x.float()
    if op == 0:
        return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
    if op == 1:
        return torch.nn.functional.layer_norm(xf, (x.shape[1],), w.float(), b.float(), 1e-6)
    return torch.softmax(xf, -1)


OPS = {"rmsnorm": 0, "layernorm": 1, "softmax": 2}


def variants(op: int, x, w, b, y, sms: int) -> list[tuple[str, Callable[[], Any]]]:
    """Every variant of the probe over rows `x` into `y`: (name, launch)."""
    m, n = x.shape
    found: list[tuple[str, Callable[[], Any]]] = []
    for warps in (4, 8, 16):
        if n // (32 * warps) < 4:  # fewer than four elements a thread
            continue
        found.append((f"one-w{warps}", partial(one_row[(m,)], x, w, b, y, m, n, 1e-6, op, num_warps=warps)))
        for occ in (1, 2, 3, 4):
            grid = (min(m, sms * occ),)
            found.append(
                (f"staged2-o{occ}-w{warps}", partial(staged[grid], x, w, b, y, m, n, 1e-6, op, 2, num_warps=warps))
            )
            found.append(
                (f"prefetch-o{occ}-w{warps}", partial(prefetch[grid], x, w, b, y, m, n, 1e-6, op, num_warps=warps))
            )
    return found


def main() -> None:
    out = os.environ.get("OUT", ".")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    results: list[dict[str, Any]] = []
    shapes = [s.split(":") for s in sys.argv[1:]]
    for name, shape in shapes:
        m, n = map(int, shape.split("x"))
        op = OPS[name]
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        copy = device_ms(partial(torch.empty_like(x).copy_, x), reps=50)
        expect = ref(op, x, w, b)
        for variant, launch in variants(op, x, w, b, y, sms):
            try:
                y.fill_(float("nan"))
                launch()
                torch.cuda.synchronize()
                err = ((y.float() - expect).abs().max() / expect.abs().max()).item()
                ms = device_ms(launch, reps=50)
                r = {"op": name, "m": m, "n": n, "variant": variant, "ms": ms, "pct": 100 * copy / ms, "err": err}
            except Exception as e:  # a failing variant is a result
                r = {"op": name, "m": m, "n": n, "variant": variant, "error": str(e)[:300]}
            results.append(r)
            print(json.dumps(r), flush=True)
    with open(os.path.join(out, "persistent_probe.jsonl"), "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    for name, shape in shapes:
        timed = sorted(
            (r for r in results if r["op"] == name and f"{r['m']}x{r['n']}" == shape and "pct" in r),
            key=lambda r: -r["pct"],
        )
        best = " ".join(f"{r['variant']}={r['pct']:.1f}{'' if r['err'] < 2e-2 else '(WRONG)'}" for r in timed[:8])
        print(name, shape, best)


if __name__ == "__main__":
    main()
