"""A probe of the cross-entropy's log-sum-exp over a row (bf16 logits, one row a program): how many
instructions an element its loop can be brought down to, and what that buys on the H200, where
tilec's kernel is bound by its instructions (16.5 an element at rows of 50257:
bench/results/2026-11-29-h200-cross-entropy-profile). Hand-written Triton, not a tilec form:

- `grp-cC-wW-gG`: each thread keeps a running maximum and sum for each group of G consecutive
  elements it holds (a chunk of C viewed as [C / G, G], the G in one thread's registers): a
  chunk's group maximum is taken in the thread (no shuffle, no shared memory), the group's sum
  rescaled once, one exponential an element; the groups combined once after the loop. The first
  and last chunks read whole 16-byte vectors and mask the columns outside the row by a select;
  the chunks between read unmasked;
- `max-cC-wW`: the same loop taking each group's maximum alone (no exponential): what reading the
  row this way costs, the ceiling of the form.

Beside them the cross-entropy's forward through tilec's hook (the GPU's table: the log-sum-exp
and the loss's small second kernel, about 11 us on the H200), through it with the Triton
emitter and a plan's `groups` (`tilec-groups-...`: `softmax-groups`, the grouped form in the tile
IR), and stock torch.compile. Each probe is checked against torch.logsumexp in fp32. Device time, cold L2; the read rate is the
logits' bytes over the time (these kernels read and do not write). One JSON line each, also to
$OUT/lse_probe.jsonl.

    python bench/lse_probe.py 8192x50257 8192x32000 4096x128256
"""

from __future__ import annotations

import json
import os
import sys
from functools import partial
from typing import Any

import torch
import triton
import triton.language as tl

from tilec.runtime.timing import device_ms


@triton.jit
def _groups(x, m, s, group: tl.constexpr, masked: tl.constexpr):
    """Folds a chunk viewed as [chunk / group, group] (fp32, -inf outside the row) into each
    group's running maximum `m` and sum `s`."""
    gm = tl.max(x, axis=1)
    m_new = tl.maximum(m, gm)
    if masked:  # a group wholly outside the row keeps -inf: no exp(-inf - -inf)
        safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - safe) + tl.sum(tl.exp(x - safe[:, None]), axis=1)
    else:
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    return m_new, s


@triton.jit
def lse_groups(x_ptr, out_ptr, n_cols: tl.constexpr, chunk: tl.constexpr, group: tl.constexpr, exp_sums: tl.constexpr):
    pid = tl.program_id(0)
    start = pid * n_cols  # (the shapes probed stay under 2**31 elements)
    head = start % 8  # the row's elements before its first 16-byte boundary
    base = x_ptr + tl.multiple_of(start - head, 8)  # 16-byte aligned
    span = n_cols + head
    rows = tl.arange(0, chunk // group)[:, None]
    cols = rows * group + tl.arange(0, group)[None, :]
    m = tl.full([chunk // group], float("-inf"), tl.float32)
    s = tl.zeros([chunk // group], tl.float32)
    # the first chunk: whole vectors from the boundary below the row's start
    c = cols
    inside = (c >= head) & (c < span)
    x = tl.load(base + c, mask=(rows * group) < span, other=0.0).to(tl.float32)
    x = tl.where(inside, x, float("-inf"))
    if exp_sums:
        m, s = _groups(x, m, s, group, True)
    else:
        m = tl.maximum(m, tl.max(x, axis=1))
    whole = (span // chunk) * chunk
    for off in range(chunk, whole, chunk):
        x = tl.load(base + tl.multiple_of(off, 8) + cols).to(tl.float32)
        if exp_sums:
            m, s = _groups(x, m, s, group, False)
        else:
            m = tl.maximum(m, tl.max(x, axis=1))
    if whole < span and whole >= chunk:
        c = tl.multiple_of(whole, 8) + cols
        x = tl.load(base + c, mask=(whole + rows * group) < span, other=0.0).to(tl.float32)
        x = tl.where(c < span, x, float("-inf"))
        if exp_sums:
            m, s = _groups(x, m, s, group, True)
        else:
            m = tl.maximum(m, tl.max(x, axis=1))
    top = tl.max(m, axis=0)
    if exp_sums:
        total = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - top)), axis=0)
        tl.store(out_ptr + pid, top + tl.log(total))
    else:
        tl.store(out_ptr + pid, top)


# each side compiled from a function of its own: Dynamo keeps compiled code on the code object, so
# two compiles of one function would both run the last one's kernels
def _loss_tilec(x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(x, labels)


def _loss_stock(x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(x, labels)


def _loss_groups(x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(x, labels)


def _group_plans() -> list[str]:
    from tilec.passes.pipelines import with_plan

    plans = ("xblock=1,chunk=4096,num_warps=8", "xblock=1,chunk=2048,num_warps=4", "xblock=1,chunk=8192,num_warps=8")
    return [with_plan("triton-default", f"{p},groups=8") for p in plans]


GROUP_PLANS = _group_plans()


def _timed(name: str, call: Any, out: Any, shape: str, read: int, ref: Any) -> dict[str, Any]:
    """One variant timed (device time, cold L2), its error against `ref` where it writes `out`."""
    try:
        call()
        torch.cuda.synchronize()
        err = (out - ref).abs().max().item() if out is not None else None
        us = device_ms(call, reps=40) * 1000
        return {"shape": shape, "v": name, "us": us, "read_tbs": read / us / 1e6, "err": err}
    except Exception as e:  # a failing variant is a result
        return {"shape": shape, "v": name, "error": str(e)[:300]}


def main(argv: list[str]) -> None:
    import tilec

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench as suite

    tilec.install()
    out = os.environ.get("OUT", ".")
    suite.warm_up(2.0)
    results: list[dict[str, Any]] = []
    for shape in argv:
        m, n = map(int, shape.split("x"))
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16) * 4
        labels = torch.randint(0, n, (m,), device="cuda")
        read = m * n * 2
        ref = torch.logsumexp(x.float(), -1)
        # tilec's Triton kernels with a plan's `groups` (softmax-groups: the grouped form in the
        # tile IR), each compiled and timed before the next is compiled (one function, one code
        # object: Dynamo keeps the last compile's code on it), and before the two losses below are
        # compiled (a reset makes a compiled function compile again when next called)
        for plan in GROUP_PLANS:
            torch._dynamo.reset()
            with tilec.config.patch(emitter="triton", pipelines={**tilec.config.pipelines, "triton": plan}):
                fn = torch.compile(_loss_groups, dynamic=False)
                fn(x, labels)
            name = "tilec-groups-" + plan.split("plan{", 1)[1].split("}", 1)[0]
            timed = _timed(name, partial(fn, x, labels), None, shape, read, ref)
            results.append(timed)
            print(json.dumps(timed), flush=True)
        torch._dynamo.reset()
        found: list[tuple[str, Any, bool]] = []
        for impl, loss in (("tilec", _loss_tilec), ("compile", _loss_stock)):
            with tilec.config.patch(enabled=impl == "tilec"):
                fn = torch.compile(loss, dynamic=False)
                fn(x, labels)
            found.append((f"{impl}-loss", partial(fn, x, labels), False))
        y = torch.empty(m, device="cuda", dtype=torch.float32)
        for c in (2048, 4096, 8192):
            for w in (4, 8, 16):
                for g in (8, 16):
                    if not 8 <= c // (32 * w) <= 64 or g > c // (32 * w):
                        continue
                    found.append(
                        (f"grp-c{c}-w{w}-g{g}", partial(lse_groups[(m,)], x, y, n, c, g, True, num_warps=w), True)
                    )
                found.append((f"max-c{c}-w{w}", partial(lse_groups[(m,)], x, y, n, c, 8, False, num_warps=w), False))
        for name, call, checked in found:
            rec = _timed(name, call, y if checked else None, shape, read, ref)
            results.append(rec)
            print(json.dumps(rec), flush=True)
        timed = sorted((r for r in results if r["shape"] == shape and "us" in r), key=lambda r: r["us"])
        print(
            "BEST", shape, " ".join(f"{r['v']}={r['us']:.1f}us/{r['read_tbs']:.2f}TB/s" for r in timed[:12]), flush=True
        )
    with open(os.path.join(out, "lse_probe.jsonl"), "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
