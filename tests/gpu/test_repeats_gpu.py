"""On the GPU: Llama's rotary embedding as the model computes it (examples/llama_rotary.py), with
the angle's cos and sin computed once per token and column (`repeats`): taken by each emitter,
equal to eager, and bit for bit what stock torch.compile computes (the same operations on the
same operands, each done once where stock repeats it for every head)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from gpu_support import check_taken, hooked

from tilec.frontend.entry import load_entry

pytestmark = [pytest.mark.gpu]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("shape", [(4, 1024, 16, 128), (1, 128, 8, 64), (2, 7, 4, 128)])
@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_rotary_equals_stock_bit_for_bit(emitter: str, shape: tuple[int, int, int, int]) -> None:
    target = load_entry(str(ROOT / "examples" / "llama_rotary.py"))
    assert target.example_inputs is not None
    torch.manual_seed(0)
    inputs = [t.cuda() for t in target.example_inputs(shape, torch.bfloat16)]
    torch._dynamo.reset()
    stock = torch.compile(target.func)(*inputs)
    with hooked():
        result = check_taken(target.func, inputs, "llama_rotary", emitter)
        said = [m for r in result.records for m in r.remarks if m.startswith("repeats:")]
        assert not said, said  # the pass took the kernel
        torch._dynamo.reset()
        ours = torch.compile(target.func)(*inputs)
    assert torch.equal(ours, stock)


@pytest.mark.parametrize("shape", [(4, 16, 1024, 128), (1, 4, 3, 128)])
@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_heads_first_rotary_equals_stock_bit_for_bit(emitter: str, shape: tuple[int, int, int, int]) -> None:
    """q laid out (batch, heads, tokens, head_dim): each program's rows step over the heads."""
    heads_first = load_entry(str(ROOT / "examples" / "llama_rotary.py:heads_first")).func
    torch.manual_seed(1)
    q = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    inv = 1.0 / (10000 ** (torch.arange(0, shape[-1], 2, device="cuda", dtype=torch.float32) / shape[-1]))
    torch._dynamo.reset()
    stock = torch.compile(heads_first)(q, inv)
    with hooked():
        result = check_taken(heads_first, [q, inv], "llama_rotary:heads_first", emitter)
        said = [m for r in result.records for m in r.remarks if m.startswith("repeats:")]
        assert not said, said
        torch._dynamo.reset()
        ours = torch.compile(heads_first)(q, inv)
    assert torch.equal(ours, stock)
