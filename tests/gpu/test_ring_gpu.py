"""On the GPU: a norm's fused backward (Inductor's mix-order kernel) through the `gluon-ring`
pipeline (`band-ring`: one program a band, the row's chunks in a ring of shared-memory slots that
is also the next row's prefetch) computes dx and the weights' gradients as the backward graph
does, within bf16's tolerance, and the same bits on every run. Rows of 8192 (two chunks of 4096)
and 32768 (eight: every slot of the ring refilled, several rows a band). The hook does not take
this form yet (its mix-order kernels have a Triton plan only); the kernel is emitted and launched
here as `bench/ring_bwd_probe.py` does."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from tilec.emit.gluon import emit_gluon
from tilec.frontend.capture import backward_graph, capture, input_order
from tilec.frontend.logical import WORKSPACE
from tilec.ir import parse, print_kernel
from tilec.passes import run_pipeline
from tilec.runtime import load_source
from tilec.testing import assert_close

pytestmark = pytest.mark.gpu


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-6)


def ring_run(op: str, m: int, n: int) -> tuple[list[torch.Tensor], Any, int]:
    """The op's backward graph and the inputs of its placeholders (x, w, dy: normal; the saved
    statistics: 0.5 to 1.5), and a function running tilec's `gluon-ring` kernel of its fused
    backward that returns dx and each column sum (the workspace's rows added up)."""
    meta = {"dtype": torch.bfloat16, "device": "meta", "requires_grad": True}
    weights = [torch.empty(n, **meta) for _ in range(2 if op == "layernorm" else 1)]
    gm = backward_graph(rmsnorm if op == "rmsnorm" else layernorm, [torch.empty(m, n, **meta), *weights])
    vals = [p.meta["val"] for p in gm.graph.nodes if p.op == "placeholder"]
    shapes = [torch.empty_strided(v.shape, v.stride(), dtype=v.dtype) for v in vals]
    with torch._inductor.config.patch({"triton.mix_order_reduction_non_strict_mode": True}):
        kernels = capture(gm, shapes, strict=True, fuse=lambda *_: True)
    lowered = next(k.result for k in kernels if getattr(k.result, "column_sums", None))
    module = parse(print_kernel(lowered.kernel))
    run_pipeline(module, "gluon-ring")
    kernel = module.kernels[0]
    assert kernel.attributes["band_chunks"] == n // 4096
    launch = load_source(emit_gluon(kernel).source).launch
    gen = torch.Generator(device="cuda").manual_seed(m + n)
    inputs = [
        torch.rand(t.shape, dtype=t.dtype, device="cuda", generator=gen) + 0.5
        if t.dtype == torch.float32
        else torch.randn(t.shape, dtype=t.dtype, device="cuda", generator=gen)
        for t in shapes
    ]
    programs = -(-m // kernel.constexprs["RSPLIT"])
    ws = torch.empty(len(lowered.column_sums) * programs * n, dtype=torch.float32, device="cuda")
    order = input_order(gm)
    dx = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    args = [
        inputs[order[int(a.buffer[3:].split("_")[0])]]
        if a.buffer.startswith("arg")
        else ws
        if a.buffer == WORKSPACE
        else dx
        for a in lowered.args
    ]

    def run() -> list[torch.Tensor]:
        ws.fill_(float("nan"))
        dx.fill_(float("nan"))
        launch(*args)
        return [dx.clone(), *ws.view(-1, programs, n).sum(1)]

    return gm(*inputs), run, len(lowered.column_sums)


@pytest.mark.parametrize("op", ["rmsnorm", "layernorm"])
@pytest.mark.parametrize(("m", "n"), [(1056, 8192), (528, 32768)])
def test_the_ring_form_computes_the_backward(op: str, m: int, n: int) -> None:
    if op == "layernorm" and n > 16384:
        pytest.skip("LayerNorm's dW and dB over rows of 32768 spill one CTA's registers (62% of a copy at best)")
    want, run, sums = ring_run(op, m, n)
    got = run()
    torch.cuda.synchronize()
    assert_close(got[0], next(t for t in want if t is not None and t.dim() == 2), torch.bfloat16, what="dx")
    vectors = [t for t in want if t is not None and t.dim() == 1]
    assert len(vectors) == sums
    for i, ref in enumerate(vectors):  # the graph's column sums in the workspace's order
        assert_close(got[1 + i], ref, torch.bfloat16, what=f"column sum {i}")
    again = run()
    assert all(torch.equal(a, b) for a, b in zip(got, again)), "two runs differ"
