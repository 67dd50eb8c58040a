# ruff: noqa: N803, N806, B023  (kernel pointers in capitals; each closure runs before its loop moves on)
"""A probe: Llama's rotary embedding as Inductor fuses it — one pointwise kernel over q (batch,
tokens, heads, head_dim) that computes the angle `inv_freq[d % 64] * token` and its cos and sin
for every element — against forms that compute cos and sin once per (token, column) and
broadcast them over the heads (and tokens) the program holds. Hand-written Triton, not tilec's
output: the question is how much of stock's time is the transcendental arithmetic the heads
repeat (bench/results/2026-11-26-h100-rotary).

Kernels (bf16 q in, bf16 out, fp32 inv_freq), device time on a cold L2, against a copy of the
same bytes (read q, write the output):

- `stock`: the kernel Inductor generates for the model (1-D, XBLOCK elements a program);
- `nocos`: the same with the angle's cos and sin replaced by the angle itself (the arithmetic
  cost of cos and sin: not a valid rotary);
- `tok{T}-w{W}`: a [T, heads, head_dim] tile of T tokens, cos and sin computed on [T, 1,
  head_dim] and broadcast over the heads; W warps;
- `compile`: torch.compile of examples/llama_rotary.py (the kernel above, as Inductor builds it);
- `tilec-{emitter}`, `tilec-{emitter}-plain`: that kernel as tilec emits it with each emitter's
  default pipeline, and without its `repeats` pass.

    python bench/rotary_probe.py 4x1024x16x128,1x128x16x128    # JSON lines, also $OUT/rotary.jsonl
"""

import json
import os
import sys

import torch
import triton
import triton.language as tl

from tilec.runtime.timing import device_ms


@triton.jit
def stock(in_ptr0, in_ptr1, out_ptr0, S: tl.constexpr, HD: tl.constexpr, XBLOCK: tl.constexpr, COS: tl.constexpr):
    # Inductor's kernel for Llama's q (torch 2.13, H100), with its sizes as parameters
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    x4 = xindex
    x2 = (xindex // HD) % S
    x0 = xindex % 128
    x5 = xindex // 128
    tmp0 = tl.load(in_ptr0 + (x4), None).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (x4 % 64), None, eviction_policy="evict_last")
    tmp3 = (x2).to(tl.float32)
    tmp4 = tmp1 * tmp3
    if COS:
        tmp5 = tl.cos(tmp4)
        tmp24 = tl.sin(tmp4)
    else:
        tmp5 = tmp4
        tmp24 = tmp4 + 1.0
    tmp7 = tmp0 * tmp5
    tmp14 = x0 < 64
    tmp15 = tl.load(in_ptr0 + (64 + 128 * x5 + (x0)), tmp14, eviction_policy="evict_last", other=0.0).to(tl.float32)
    tmp18 = tl.where(tmp14, -tmp15, 0.0)
    tmp19 = x0 >= 64
    tmp22 = tl.load(in_ptr0 + (128 * x5 + ((-64) + x0)), tmp19, eviction_policy="evict_last", other=0.0).to(tl.float32)
    tmp23 = tl.where(tmp14, tmp18, tmp22)
    tmp27 = tmp7 + tmp23 * tmp24
    tl.store(out_ptr0 + (x4), tmp27, None)


@triton.jit
def tokens(in_ptr0, in_ptr1, out_ptr0, S: tl.constexpr, H: tl.constexpr, T: tl.constexpr):
    # a program holds T tokens' heads: [T, H, 128]; the angle, cos and sin on [T, 1, 128]
    t = tl.program_id(0) * T + tl.arange(0, T)[:, None, None]  # batch*S + token
    h = tl.arange(0, H)[None, :, None]
    d = tl.arange(0, 128)[None, None, :]
    x4 = t * (H * 128) + h * 128 + d
    tmp0 = tl.load(in_ptr0 + x4).to(tl.float32)
    inv = tl.load(in_ptr1 + (d % 64), eviction_policy="evict_last")  # [1, 1, 128]
    ang = inv * (t % S).to(tl.float32)  # [T, 1, 128]
    c = tl.cos(ang)
    s = tl.sin(ang)
    lo = d < 64
    q1 = tl.load(in_ptr0 + (t * (H * 128) + h * 128 + 64 + d), lo, eviction_policy="evict_last", other=0.0)
    q2 = tl.load(in_ptr0 + (t * (H * 128) + h * 128 + d - 64), d >= 64, eviction_policy="evict_last", other=0.0)
    rot = tl.where(lo, -q1.to(tl.float32), q2.to(tl.float32))
    tl.store(out_ptr0 + x4, tmp0 * c + rot * s)


def emitted(shape: tuple[int, int, int, int]) -> dict[str, object]:
    """examples/llama_rotary.py's kernel as tilec emits it, per emitter and pipeline: launchers
    taking (q, inv_freq, out)."""
    from pathlib import Path

    from tilec.emit.gluon import emit_gluon
    from tilec.emit.triton import emit_triton
    from tilec.frontend.capture import capture
    from tilec.frontend.entry import load_entry
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import GLUON_DEFAULT, TRITON_DEFAULT
    from tilec.runtime import load_source

    target = load_entry(str(Path(__file__).resolve().parents[1] / "examples" / "llama_rotary.py"))
    q = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
    inv = torch.empty(shape[-1] // 2, device="cuda")
    (k,) = capture(target.func, [q, inv])
    order = [a.buffer for a in k.result.args]  # graph inputs arg0_1 (q), arg1_1 (inv_freq), then the output
    out = {}
    for emitter, pipeline, emit in (("triton", TRITON_DEFAULT, emit_triton), ("gluon", GLUON_DEFAULT, emit_gluon)):
        for suffix, passes in (("", pipeline), ("-plain", [p for p in pipeline if p != "repeats"])):
            module = parse(print_kernel(k.result.kernel))
            run_pipeline(module, ",".join(passes))
            mod = load_source(emit(module.kernels[0]).source)

            def launch(q, inv, o, mod=mod):
                named = {"arg0_1": q, "arg1_1": inv}
                mod.launch(*[named.get(b, o) for b in order])

            out[f"tilec-{emitter}{suffix}"] = launch
    out["compile"] = torch.compile(target.func)
    return out


def main(shapes: list[tuple[int, int, int, int]]) -> list[dict]:
    rows = []
    for B, S, H, D in shapes:
        assert D == 128
        q = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16)
        inv = 1.0 / (10000 ** (torch.arange(0, D, 2, device="cuda", dtype=torch.float32) / D))
        out = torch.empty_like(q)
        n = q.numel()
        ref = torch.empty_like(q)
        stock[(n // 1024,)](q, inv, ref, S, H * D, XBLOCK=1024, COS=True, num_warps=4)
        # fp32 reference of the same arithmetic
        pos = (torch.arange(B * S, device="cuda") % S).float().view(B, S, 1, 1)
        ang = inv.repeat(2).view(1, 1, 1, D) * pos
        qf = q.float()
        want = qf * ang.cos() + torch.cat((-qf[..., 64:], qf[..., :64]), -1) * ang.sin()
        copy_ms = device_ms(lambda: out.copy_(q))
        gb = 2 * n * q.element_size() / 1e9

        def row(name, ms, err=None):
            r = {
                "shape": f"{B}x{S}x{H}x{D}",
                "kernel": name,
                "us": round(ms * 1e3, 2),
                "pct_copy": round(100 * copy_ms / ms, 1),
            }
            r["gbps"] = round(gb / ms * 1e3)
            if err is not None:
                r["max_err"] = err
            rows.append(r)
            print(json.dumps(r), flush=True)

        row("copy", copy_ms)
        for xb, nw in ((1024, 4), (2048, 8), (512, 4)):
            ms = device_ms(lambda: stock[(n // xb,)](q, inv, out, S, H * D, XBLOCK=xb, COS=True, num_warps=nw))
            row(f"stock-x{xb}-w{nw}", ms, float((out.float() - want).abs().max()))
        ms = device_ms(lambda: stock[(n // 1024,)](q, inv, out, S, H * D, XBLOCK=1024, COS=False, num_warps=4))
        row("nocos-x1024-w4", ms)
        for T, nw in ((1, 1), (1, 2), (1, 4), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8)):
            if (B * S) % T:
                continue
            ms = device_ms(lambda: tokens[((B * S) // T,)](q, inv, out, S, H, T, num_warps=nw))
            err = float((out.float() - want).abs().max())
            same = bool(torch.equal(out, ref))
            row(f"tok{T}-w{nw}", ms, err)
            rows[-1]["equal_stock"] = same
        for name, fn in emitted((B, S, H, D)).items():
            if name == "compile":
                ms = device_ms(lambda: fn(q, inv))
                res = fn(q, inv)
            else:
                ms = device_ms(lambda: fn(q, inv, out))
                res = out
            row(name, ms, float((res.float() - want).abs().max()))
            rows[-1]["equal_stock"] = bool(torch.equal(res, ref))
    return rows


if __name__ == "__main__":
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    rows = main(shapes)  # type: ignore[arg-type]
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "rotary.jsonl"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
