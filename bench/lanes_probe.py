"""A probe of rows of 4096-16384 on the H200: softmax and LayerNorm as Triton loops that keep their
statistics per lane and read the row's chunks again (from L1 while the rows in flight fit there),
with no reduction across warps inside a loop; and a one-tile softmax dividing by the row's sum or
multiplying by its reciprocal. Hand-written Triton, not tilec's forms (which `lanes_reread` builds:
docs/passes.md):

- `sm3-rR-wW`: softmax in three loops over chunks of chunk over W warps: each lane's maximum, one max
  reduction; each lane's sum of exp(x - max), the chunks loaded again, one sum reduction; the
  output, loaded a third time, times the sum's reciprocal;
- `sm2-rR-wW`: each lane's online maximum and sum (two exps an element), then the output;
- `ln3-rR-wW`: LayerNorm as each lane's sum (the mean), each lane's squared deviations (the m2),
  then the output;
- `ln2-rR-wW`: each lane's sums of x - x[0] and of its square in one loop (the shifted one-pass
  variance), then the output;
- `sm1-wW-div`, `sm1-wW-rcp`: softmax with the row in one tile, dividing by the sum or multiplying
  by its reciprocal.

Beside them tilec through the hook (the GPU's table) and stock torch.compile, unless
`--probe-only`. Each checked against an fp32 reference (largest error relative to the largest
output); device time, cold L2, % of a same-size copy; one JSON line each, also to
$OUT/lanes_probe.jsonl, and the best ten a shape last.

    python bench/lanes_probe.py softmax:4096x16384 layernorm:4096x16384 [--probe-only]

Results: bench/results/2026-11-28-h200-lanes/ (probe.log, one-tile-reciprocal.log).
"""

from __future__ import annotations

import json
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench as suite  # bench/ is no package
from tilec.runtime.timing import device_ms


@triton.jit
def sm3(x_ptr, y_ptr, n_cols: tl.constexpr, chunk: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    cols = tl.arange(0, chunk)
    m = tl.full([chunk], float("-inf"), tl.float32)
    for off in range(0, n_cols, chunk):
        v = tl.load(x_ptr + base + off + cols, eviction_policy="evict_last").to(tl.float32)
        m = tl.maximum(m, v)
    mx = tl.max(m, 0)
    s = tl.zeros([chunk], tl.float32)
    for off in range(0, n_cols, chunk):
        v = tl.load(x_ptr + base + off + cols, eviction_policy="evict_last").to(tl.float32)
        s += tl.exp(v - mx)
    inv = 1.0 / tl.sum(s, 0)
    for off in range(0, n_cols, chunk):
        v = tl.load(x_ptr + base + off + cols, eviction_policy="evict_first").to(tl.float32)
        tl.store(y_ptr + base + off + cols, (tl.exp(v - mx) * inv).to(tl.bfloat16))


@triton.jit
def sm2(x_ptr, y_ptr, n_cols: tl.constexpr, chunk: tl.constexpr):
    # per-lane online max and sum (two exps an element), then the output pass
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    cols = tl.arange(0, chunk)
    m = tl.full([chunk], float("-inf"), tl.float32)
    s = tl.zeros([chunk], tl.float32)
    for off in range(0, n_cols, chunk):
        v = tl.load(x_ptr + base + off + cols, eviction_policy="evict_last").to(tl.float32)
        mn = tl.maximum(m, v)
        s = s * tl.exp(m - mn) + tl.exp(v - mn)
        m = mn
    mx = tl.max(m, 0)
    tot = tl.sum(s * tl.exp(m - mx), 0)
    inv = 1.0 / tot
    for off in range(0, n_cols, chunk):
        v = tl.load(x_ptr + base + off + cols, eviction_policy="evict_first").to(tl.float32)
        tl.store(y_ptr + base + off + cols, (tl.exp(v - mx) * inv).to(tl.bfloat16))


@triton.jit
def _ln_out(x_ptr, w_ptr, b_ptr, y_ptr, base, cols, mean, rstd, n_cols: tl.constexpr, chunk: tl.constexpr):
    """LayerNorm's output loop: the row read a last time, normalized, scaled and shifted."""
    for off in range(0, n_cols, chunk):
        v = tl.load(x_ptr + base + off + cols, eviction_policy="evict_first").to(tl.float32)
        w = tl.load(w_ptr + off + cols, eviction_policy="evict_last").to(tl.float32)
        b = tl.load(b_ptr + off + cols, eviction_policy="evict_last").to(tl.float32)
        tl.store(y_ptr + base + off + cols, ((v - mean) * rstd * w + b).to(tl.bfloat16))


@triton.jit
def ln3(x_ptr, w_ptr, b_ptr, y_ptr, n_cols: tl.constexpr, chunk: tl.constexpr, eps):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    cols = tl.arange(0, chunk)
    s = tl.zeros([chunk], tl.float32)
    for off in range(0, n_cols, chunk):
        s += tl.load(x_ptr + base + off + cols, eviction_policy="evict_last").to(tl.float32)
    mean = tl.sum(s, 0) / n_cols
    q = tl.zeros([chunk], tl.float32)
    for off in range(0, n_cols, chunk):
        d = tl.load(x_ptr + base + off + cols, eviction_policy="evict_last").to(tl.float32) - mean
        q += d * d
    rstd = tl.rsqrt(tl.sum(q, 0) / n_cols + eps)
    _ln_out(x_ptr, w_ptr, b_ptr, y_ptr, base, cols, mean, rstd, n_cols, chunk)


@triton.jit
def ln2(x_ptr, w_ptr, b_ptr, y_ptr, n_cols: tl.constexpr, chunk: tl.constexpr, eps):
    # per-lane sums of x and x*x shifted by the row's first element (one pass), then the output
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    cols = tl.arange(0, chunk)
    shift = tl.load(x_ptr + base).to(tl.float32)
    s = tl.zeros([chunk], tl.float32)
    q = tl.zeros([chunk], tl.float32)
    for off in range(0, n_cols, chunk):
        d = tl.load(x_ptr + base + off + cols, eviction_policy="evict_last").to(tl.float32) - shift
        s += d
        q += d * d
    ms = tl.sum(s, 0) / n_cols
    var = tl.maximum(tl.sum(q, 0) / n_cols - ms * ms, 0.0)
    mean = ms + shift
    rstd = tl.rsqrt(var + eps)
    _ln_out(x_ptr, w_ptr, b_ptr, y_ptr, base, cols, mean, rstd, n_cols, chunk)


@triton.jit
def sm1(x_ptr, y_ptr, n_cols: tl.constexpr, recip: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, n_cols)
    v = tl.load(x_ptr + row * n_cols + cols).to(tl.float32)
    e = tl.exp(v - tl.max(v, 0))
    s = tl.sum(e, 0)
    if recip:
        y = e * (1.0 / s)
    else:
        y = e / s
    tl.store(y_ptr + row * n_cols + cols, y.to(tl.bfloat16))


def main(argv: list[str]) -> None:
    import tilec

    tilec.install()
    probe_only = "--probe-only" in argv
    specs = [a for a in argv if not a.startswith("--")]
    out = os.environ.get("OUT", ".")
    suite.warm_up(2.0)
    results: list[dict[str, Any]] = []
    for spec in specs:
        op, shape = spec.split(":")
        m, n = map(int, shape.split("x"))
        inputs = suite.make_inputs(op, m, n, torch.bfloat16)
        x = inputs[0]
        y = torch.empty_like(x)
        src, dst = torch.randn_like(x), torch.empty_like(x)
        copy = device_ms(lambda s=src, d=dst: d.copy_(s), reps=60)
        ref = suite.reference(op, inputs)
        found: list[tuple[str, Any, Any]] = []
        for impl in () if probe_only else ("tilec", "compile"):
            torch._dynamo.reset()
            fn = suite.build(impl, op, inputs).fn
            found.append((impl, lambda fn=fn, i=inputs: fn(*i), None))
        if op == "softmax":
            for w in (4, 8, 16):
                for rc in (0, 1):
                    name = f"sm1-w{w}-{'rcp' if rc else 'div'}"
                    found.append((name, partial(sm1[(m,)], x, y, n, rc, num_warps=w), y))
        for r in () if probe_only else (1024, 2048, 4096, 8192):
            for w in (4, 8, 16):
                if r > n or not 4 <= r // (32 * w) <= 32:
                    continue
                if op == "softmax":
                    found.append((f"sm3-r{r}-w{w}", partial(sm3[(m,)], x, y, n, r, num_warps=w), y))
                    found.append((f"sm2-r{r}-w{w}", partial(sm2[(m,)], x, y, n, r, num_warps=w), y))
                else:
                    w_, b_ = inputs[1], inputs[2]
                    found.append((f"ln3-r{r}-w{w}", partial(ln3[(m,)], x, w_, b_, y, n, r, 1e-5, num_warps=w), y))
                    found.append((f"ln2-r{r}-w{w}", partial(ln2[(m,)], x, w_, b_, y, n, r, 1e-5, num_warps=w), y))
        for name, call, written in found:
            try:
                got = call()
                got = written if written is not None else got
                torch.cuda.synchronize()
                err = ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
                ms = device_ms(call, reps=60)
                rec: dict[str, Any] = {"op": op, "shape": shape, "v": name, "pct": 100 * copy / ms, "err": err}
            except Exception as e:  # a failing variant is a result
                rec = {"op": op, "shape": shape, "v": name, "error": str(e)[:200]}
            results.append(rec)
            print(json.dumps(rec), flush=True)
        timed = sorted(
            (r for r in results if r["shape"] == shape and r["op"] == op and "pct" in r), key=lambda r: -r["pct"]
        )
        best = " ".join(f"{r['v']}={r['pct']:.1f}{'' if r['err'] < 3e-2 else '(WRONG)'}" for r in timed[:10])
        print("BEST", op, shape, best, flush=True)
    with open(os.path.join(out, "lanes_probe.jsonl"), "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
