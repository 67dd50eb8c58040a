"""On the GPU: gathers, scatters that add and rotary embeddings, with each emitter. The kernels
Inductor fuses an embedding, its weight gradient (atomic adds), a cross-entropy target gather or a
rotary embedding into are taken and equal eager; an
index out of range stops the kernel as it stops stock's (a device-side assert). Also a boolean row
read in two phases and a pad's range masks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from gpu_support import check_taken, skip_unless_runs

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import embedding_backward  # noqa: E402
import embedding_rmsnorm  # noqa: E402
import rotary  # noqa: E402

EMITTERS = ["gluon", "triton"]
bf16 = torch.bfloat16


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), labels)


def gather_rows_softmax(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return x[idx].softmax(-1)


def masked_rows(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """A boolean row read before and after a sum: kept in registers (i1 is no TMA operand)."""
    y = x.masked_fill(m, 0.0)
    return y / y.sum(-1, keepdim=True) * m


def embedding_dense_backward(grad: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The table gradient as autograd computes it (bf16 out: accumulated in f32, then cast)."""
    return torch.ops.aten.embedding_dense_backward(grad, ids, 32000, -1, False)


def padded(x: torch.Tensor) -> torch.Tensor:
    return F.pad(x, (2, 3)) * 2  # range masks: Inductor's `and_`


def cases() -> dict[str, tuple]:
    g = torch.Generator(device="cuda").manual_seed(0)
    labels = torch.randint(0, 32000, (512,), device="cuda", generator=g)
    labels[::7] = -100  # ignored targets
    return {
        "embedding-rmsnorm": (
            embedding_rmsnorm.forward,
            [t.cuda() for t in embedding_rmsnorm.example_inputs((1000, 2048), bf16)],
        ),
        # 4096 tokens over 100 ids: every row of the table gradient that is touched is added to ~40 times
        "embedding-backward": (
            embedding_backward.forward,
            [
                torch.randint(0, 100, (4096,), device="cuda", generator=g),
                torch.randn(4096, 1024, device="cuda", dtype=bf16),
            ],
        ),
        "embedding-dense-backward": (
            embedding_dense_backward,
            [
                torch.randn(4, 1024, 512, device="cuda", dtype=bf16),
                torch.randint(0, 32000, (4, 1024), device="cuda", generator=g),
            ],
        ),
        "rotary": (rotary.forward, [t.cuda() for t in rotary.example_inputs((2, 8, 256, 128), bf16)]),
        "cross-entropy": (cross_entropy, [torch.randn(512, 32000, device="cuda", dtype=bf16), labels]),
        "masked-rows": (
            masked_rows,
            [
                torch.randn(512, 1024, device="cuda", dtype=bf16),
                torch.rand(512, 1024, device="cuda", generator=g) > 0.5,
            ],
        ),
        "pad": (padded, [torch.randn(512, 1000, device="cuda", dtype=bf16)]),
        "negative-rows-softmax": (
            gather_rows_softmax,
            [torch.randn(300, 1000, device="cuda"), torch.randint(-300, 300, (777,), device="cuda", generator=g)],
        ),
    }


@pytest.mark.parametrize(
    "name",
    [
        "embedding-rmsnorm",
        "embedding-backward",
        "embedding-dense-backward",
        "rotary",
        "cross-entropy",
        "negative-rows-softmax",
        "masked-rows",
        "pad",
    ],
)
@pytest.mark.parametrize("emitter", EMITTERS)
def test_gathers_equal_eager_with_every_kernel_taken(emitter: str, name: str) -> None:
    fn, inputs = cases()[name]
    result = check_taken(fn, inputs, name, emitter)
    assert {r.emitter for r in result.records} == {emitter}


OUT_OF_RANGE = """
import sys, torch, tilec
sys.path.insert(0, "examples")
import embedding_rmsnorm
tilec.install()
with tilec.config.patch(decline=False, emitter=sys.argv[1]):
    ids, table, w = [t.cuda() for t in embedding_rmsnorm.example_inputs((64, 256), torch.bfloat16)]
    ids[5] = 32000
    torch.compile(embedding_rmsnorm.forward, dynamic=False)(ids, table, w)
    torch.cuda.synchronize()
"""


@pytest.mark.parametrize("emitter", EMITTERS)
def test_an_index_out_of_range_stops_the_kernel(emitter: str) -> None:
    """A device-side assert leaves the CUDA context unusable: the run is a process of its own."""
    skip_unless_runs(emitter)
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(OUT_OF_RANGE), emitter],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode != 0
    assert "index out of bounds: 0 <= tmp0 < 32000" in r.stderr or "device-side assert" in r.stderr, r.stderr[-3000:]
