"""On the GPU: dropout and `randn` kernels taken by tilec draw the numbers stock Inductor draws.

Each function is compiled twice in one process, by stock Inductor (tilec disabled) and with
tilec taking every kernel (one emitter), and run from the same `torch.manual_seed`: the outputs
are equal bit for bit — the same dropout masks, the same normal numbers — except a norm's output,
whose sums tilec adds in another order: its residual stream (the dropout's result) is equal bit
for bit and the norm within rounding. A training step's gradients match stock's too (the
backward draws the mask again from the same seed, or reads the one saved)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from gpu_support import skip_unless_runs

import tilec
from tilec.testing import assert_close

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]

EMITTERS = ["gluon", "triton"]
bf16 = torch.bfloat16


def dropout_scaled(x: torch.Tensor) -> torch.Tensor:
    return F.dropout(x, 0.2, training=True) * 3


def two_dropouts(x: torch.Tensor) -> torch.Tensor:
    return F.dropout(F.dropout(x, 0.3, training=True) * 2, 0.1, training=True)


def residual_dropout_layernorm(
    x: torch.Tensor, r: torch.Tensor, w: torch.Tensor, b: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """GPT-2's residual branch: dropout, the residual add (the new residual stream), the next LayerNorm."""
    h = r + F.dropout(x, 0.1, training=True)
    return h, F.layer_norm(h, (h.shape[-1],), w, b)


def residual_dropout_rmsnorm(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = r + F.dropout(x, 0.1, training=True)
    hf = h.float()
    return h, (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def noise(x: torch.Tensor) -> torch.Tensor:
    return torch.randn_like(x) * 0.5 + x


def cases() -> dict[str, tuple]:
    g = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device="cuda", generator=g).to(bf16)

    return {
        "dropout": (dropout_scaled, [randn(4096, 2048)]),
        "odd-size-dropout": (dropout_scaled, [randn(1001, 999)]),
        "two-dropouts": (two_dropouts, [randn(4096, 2048)]),
        "dropout-layernorm": (
            residual_dropout_layernorm,
            [randn(4096, 2048), randn(4096, 2048), randn(2048), randn(2048)],
        ),
        "dropout-rmsnorm": (residual_dropout_rmsnorm, [randn(2048, 4096), randn(2048, 4096), randn(4096)]),
        "randn": (noise, [randn(4096, 2048)]),
    }


def run_compiled(fn, inputs: list, seed: int, enabled: bool, emitter: str = "auto") -> tuple[Any, list]:
    """fn compiled afresh (stock when not enabled), run once from `seed`; its output and records."""
    torch._dynamo.reset()
    before = len(tilec.report())
    with tilec.config.patch(enabled=enabled, emitter=emitter):
        compiled = torch.compile(fn, dynamic=False, fullgraph=True)
        torch.manual_seed(seed)
        out = compiled(*inputs)
    torch.cuda.synchronize()
    return out, tilec.report()[before:]


@pytest.mark.parametrize(
    "name", ["dropout", "odd-size-dropout", "two-dropouts", "dropout-layernorm", "dropout-rmsnorm", "randn"]
)
@pytest.mark.parametrize("emitter", EMITTERS)
def test_same_seed_same_numbers_as_stock(emitter: str, name: str) -> None:
    skip_unless_runs(emitter)
    fn, inputs = cases()[name]
    for seed in (0, 1234):
        want, _ = run_compiled(fn, inputs, seed, enabled=False)
        got, records = run_compiled(fn, inputs, seed, enabled=True, emitter=emitter)
        assert records and all(r.taken for r in records), [(r.kernel, r.reason) for r in records]
        assert any("rand" in r.kernel or "dropout" in r.kernel for r in records), [r.kernel for r in records]
        if isinstance(got, tuple):  # the residual stream, and a norm of it
            (got, normed), (want, want_normed) = got, want
            assert_close(normed.float(), want_normed.float(), bf16, what=f"{name} seed {seed}: the norm")
        assert torch.equal(got.view(torch.int16), want.view(torch.int16)), (
            f"{name} seed {seed}: {int((got != want).sum())} of {got.numel()} elements differ from stock"
        )
    # and a different seed draws different numbers
    other, _ = run_compiled(fn, inputs, 99, enabled=True, emitter=emitter)
    assert not torch.equal(other[0] if isinstance(other, tuple) else other, got)


class Block(torch.nn.Module):
    """A GPT-2 MLP half-block: LayerNorm, MLP, dropout, residual."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.dropout(self.down(F.gelu(self.up(self.ln(x)), approximate="tanh")), 0.1, training=True)


@pytest.mark.parametrize("emitter", EMITTERS)
def test_training_step_draws_stocks_masks(emitter: str) -> None:
    skip_unless_runs(emitter)
    torch.manual_seed(0)
    block = Block(1024).cuda().to(bf16)
    x = torch.randn(8, 512, 1024, device="cuda", dtype=bf16, requires_grad=True)

    def step(enabled: bool) -> tuple[torch.Tensor, list, list]:
        torch._dynamo.reset()
        block.zero_grad(set_to_none=True)
        x.grad = None
        before = len(tilec.report())
        with tilec.config.patch(enabled=enabled, emitter=emitter if enabled else "auto"):
            compiled = torch.compile(block, dynamic=False)
            torch.manual_seed(7)
            y = compiled(x)
            y.float().pow(2).mean().backward()
        torch.cuda.synchronize()
        return y.detach(), [x.grad.clone(), *(p.grad.clone() for p in block.parameters())], tilec.report()[before:]

    want, want_grads, _ = step(enabled=False)
    got, got_grads, records = step(enabled=True)
    assert any(r.taken and "dropout" in r.kernel for r in records), [(r.kernel, r.reason) for r in records]
    # a mask other than stock's would change a tenth of the elements by a whole branch value
    assert_close(got.float(), want.float(), bf16)
    for g, w in zip(got_grads, want_grads):
        assert_close(g.float(), w.float(), bf16)
