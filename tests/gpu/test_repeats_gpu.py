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


# the model's form, q (batch, tokens, heads, head_dim); and q heads first (batch, heads, tokens,
# head_dim), where each program's rows step over the heads
CASES = [("llama_rotary.py", shape) for shape in ((4, 1024, 16, 128), (1, 128, 8, 64), (2, 7, 4, 128))] + [
    ("llama_rotary.py:heads_first", shape) for shape in ((4, 16, 1024, 128), (1, 4, 3, 128))
]


@pytest.mark.parametrize(("entry", "shape"), CASES)
@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_rotary_equals_stock_bit_for_bit(emitter: str, entry: str, shape: tuple[int, int, int, int]) -> None:
    target = load_entry(str(ROOT / "examples" / entry))
    assert target.example_inputs is not None
    torch.manual_seed(0)
    inputs = [t.cuda() for t in target.example_inputs(shape, torch.bfloat16)]
    torch._dynamo.reset()
    stock = torch.compile(target.func)(*inputs)
    with hooked():
        result = check_taken(target.func, inputs, entry, emitter)
        said = [m for r in result.records for m in r.remarks if m.startswith("repeats:")]
        assert not said, said  # the pass took the kernel
        torch._dynamo.reset()
        ours = torch.compile(target.func)(*inputs)
    assert torch.equal(ours, stock)
