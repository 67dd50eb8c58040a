"""Times a norm's backward compiled with tilec under variants of the Triton pipeline's plan
options, beside stock torch.compile: tuning data for the plan of banded kernels (Inductor's
mix-order reductions, docs/performance.md). Each variant compiles the op's forward with tilec
(every kernel taken, the Triton emitter) and times `torch.autograd.grad` of its output for x and
the weights (device time, cold L2: tilec.runtime.timing.device_ms). Prints one JSON line per op
and shape: the device time as % of a copy of the model bytes (x and dy read, dx written: a copy
of 3·M·N bf16 elements moves twice that), per variant ("" is the plan's default).

    python bench/bwd_variants.py 16384x8192,8192x4096 ";stages=2;stages=4;xblock=2;bands=264" > variants.jsonl
"""

from __future__ import annotations

import json
import sys

import torch
import torch.nn.functional as F  # noqa: N812

import tilec
from tilec.passes.pipelines import with_plan
from tilec.runtime.timing import device_ms

EPS = 1e-6


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


def main(argv: list[str]) -> int:
    shapes = [tuple(map(int, s.split("x"))) for s in argv[0].split(",")]
    variants = argv[1].split(";") if len(argv) > 1 else [""]
    tilec.install()
    for m, n in shapes:
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        w, b = (torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        src = torch.empty(3 * m * n * 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        copy = device_ms(lambda: dst.copy_(src))  # noqa: B023 (called here, in this iteration)
        for name, fn, args in (("rmsnorm", rmsnorm, [x, w]), ("layernorm", layernorm, [x, w, b])):
            row: dict[str, object] = {"op": name, "shape": f"{m}x{n}"}
            for v in ["stock", *variants]:
                torch._dynamo.reset()
                leaves = [a.detach().requires_grad_(True) for a in args]
                if v == "stock":
                    settings = tilec.config.patch(enabled=False)
                else:
                    pipeline = with_plan("triton-default", v) if v else "triton-default"
                    pipes = {**tilec.config.pipelines, "triton": pipeline}
                    settings = tilec.config.patch(
                        enabled=True, emitter="triton", decline=False, autotune=False, pipelines=pipes
                    )
                try:
                    with (
                        settings,
                        torch._inductor.config.patch(fx_graph_cache=False),
                        torch._functorch.config.patch(donated_buffer=False),
                    ):
                        out = torch.compile(fn, dynamic=False)(*leaves)
                        grad = lambda: torch.autograd.grad(out, leaves, dy, retain_graph=True)  # noqa: E731, B023
                        grad()  # the backward compiles here
                        ms = device_ms(grad, reps=15)
                    row[v or "default"] = round(100 * copy / ms / 2, 1)
                except Exception as e:  # a variant that does not compile (shared memory) is reported
                    row[v or "default"] = f"error: {str(e)[:200]}"
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
