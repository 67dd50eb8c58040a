"""On the GPU: Llama's rotary embedding as the model computes it (examples/llama_rotary.py), with
the angle's cos and sin computed once per token and column (`repeats`): taken by each emitter,
equal to eager, and bit for bit what stock torch.compile computes (the same operations on the
same operands, each done once where stock repeats it for every head)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from gpu_support import check_taken, hooked, skip_unless_runs

import tilec
from tilec.frontend.entry import load_entry

pytestmark = [pytest.mark.gpu]

ROOT = Path(__file__).resolve().parents[2]
forward = load_entry(str(ROOT / "examples" / "llama_rotary.py")).func


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


def projected(q: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """Llama's rotary on q as its projection writes it, (batch, tokens, 16 heads x 128): with the
    batch and tokens symbolic, the heads static (what Dynamo gives a model after a second length)."""
    q4 = q.view(q.shape[0], q.shape[1], 16, 128)
    return forward(q4, inv_freq).view(q.shape)


@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_over_a_symbolic_number_of_tokens_one_kernel_equals_stock_bit_for_bit(emitter: str) -> None:
    """One compile, the pass taking the kernel over symbolic sizes, serves
    every batch and length, each result bit for bit stock's (compiled as dynamically)."""
    skip_unless_runs(emitter)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, 128, 2, dtype=torch.float32, device="cuda") / 128))
    shapes = ((2, 1024), (3, 77), (4, 300))  # no dimension of 1: Dynamo specializes those

    def run(fn: object) -> list[torch.Tensor]:
        out = []
        for batch, tokens in shapes:
            torch.manual_seed(batch * tokens)
            q = torch.randn(batch, tokens, 2048, dtype=torch.bfloat16, device="cuda")
            torch._dynamo.mark_dynamic(q, 0)
            torch._dynamo.mark_dynamic(q, 1)
            out.append(fn(q, inv_freq))  # type: ignore[operator]
        return out

    torch._dynamo.reset()
    stock = run(torch.compile(projected, dynamic=False, fullgraph=True))
    with hooked(), tilec.config.patch(emitter=emitter):
        ours = run(torch.compile(projected, dynamic=False, fullgraph=True))
        torch.cuda.synchronize()
        records = tilec.report()
    assert len(records) == 1 and records[0].taken, [(r.kernel, r.reason) for r in records]
    said = [m for m in records[0].remarks if m.startswith("repeats:")]
    assert not said, said  # the pass took the kernel
    for a, b in zip(ours, stock):
        assert torch.equal(a, b)
