"""Every Triton candidate the autotuner times for a vocabulary-sized kernel compiles for sm_90 in
seconds, without spills. The autotuner compiles its candidates in the compiling process, with no
time limit: one whose compile does not end holds up `torch.compile` (a cross-entropy backward at
rows of 50257 in chunks of 32768 over 32 warps did, before align-rows kept its pieces chunk-wide:
tests/passes/test_align_rows.py). Rows of 50257 (GPT-2's vocabulary, misaligned: align-rows splits
every row loop) on an H200 (its candidates include the plans sized for its bytes in flight), 8192
of them, for softmax, RMSNorm, LayerNorm and the cross-entropy's forward and backward. Compiled
only: no GPU needed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tilec.emit.check import check_compile
from tilec.frontend import Lowered
from tilec.frontend.capture import capture
from tilec.inductor.autotune import candidates, split
from tilec.inductor.build import build
from tilec.ir.target import H200

ROWS, VOCAB = 8192, 50257


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x.float(), x.shape[-1:], w.float(), b.float()).to(x.dtype)


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.float(), labels)


def cross_entropy_backward(logits: torch.Tensor, lse: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The loss's backward as a training graph has it (the log-sum-exp saved by the forward)."""
    hit = torch.arange(logits.shape[1], device=logits.device).unsqueeze(0) == labels.unsqueeze(1)
    grad = hit.float() * -0.5
    return (grad - torch.exp(logits.float() - lse.unsqueeze(1)) * grad.sum(1, keepdim=True)).to(logits.dtype)


def _inputs(name: str) -> list[torch.Tensor]:
    x = torch.empty(ROWS, VOCAB, dtype=torch.bfloat16, device="meta")
    row = torch.empty(VOCAB, dtype=torch.bfloat16, device="meta")
    labels = torch.empty(ROWS, dtype=torch.int64, device="meta")
    return {
        "softmax": [x],
        "rmsnorm": [x, row],
        "layernorm": [x, row, row],
        "cross_entropy": [x, labels],
        "cross_entropy_backward": [x, torch.empty(ROWS, device="meta"), labels],
    }[name]


FUNCTIONS = {f.__name__: f for f in (softmax, rmsnorm, layernorm, cross_entropy, cross_entropy_backward)}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_triton_candidate_for_a_row_of_50257_compiles_in_seconds(name: str) -> None:
    kernels = [k.result for k in capture(FUNCTIONS[name], _inputs(name), strict=True)]
    lowered = [k for k in kernels if isinstance(k, Lowered) and k.kernel.constexprs.get("RBLOCK") != 1]
    assert lowered, kernels
    triton = candidates(False, None, False, target=H200, n=VOCAB)  # not Hopper: the Triton candidates
    assert "triton{xblock=1,chunk=32768,num_warps=32}" in triton and len(triton) >= 5, triton
    failed = []
    for k in lowered:
        for c in triton:
            emitter, plan = split(c)
            built = build(k, emitter, "cuda", plan)
            report = check_compile(SimpleNamespace(source=built.primary.source, kernel_name="candidate"), timeout=60)
            if not (report.ok and report.spills == 0):
                failed.append(f"{k.kernel.name} {c}: {report.summary()}")
    assert not failed, failed
