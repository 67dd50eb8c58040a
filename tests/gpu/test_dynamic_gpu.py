"""On the GPU: one kernel serving several sizes. With the rows symbolic (Dynamo's dynamic leading
dimensions, the row length static), each kernel tilec takes is compiled once and launched for
every batch size with its size as an argument, through the launcher's bound path (the grid
recomputed from the size), and equals eager each time."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from gpu_support import skip_unless_runs

import tilec
from tilec.runtime import loaded_kernels
from tilec.testing import assert_close

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]

EMITTERS = ["gluon", "triton"]
N = 2048
ROWS = (7, 300, 4096, 33, 300)
bf16 = torch.bfloat16


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def layernorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w)


def softmax(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x * w, -1)


def gelu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(x + b, approximate="tanh")


@pytest.mark.parametrize("fn", [rmsnorm, layernorm, softmax, gelu], ids=lambda f: f.__name__)
@pytest.mark.parametrize("emitter", EMITTERS)
def test_one_compile_serves_every_batch(emitter: str, fn) -> None:
    skip_unless_runs(emitter)
    w = torch.randn(N, device="cuda", dtype=bf16)
    with tilec.config.patch(emitter=emitter):
        compiled = torch.compile(fn, dynamic=False, fullgraph=True)
        for rows in ROWS:
            x = torch.randn(rows, N, device="cuda", dtype=bf16)
            torch._dynamo.mark_dynamic(x, 0)
            y = compiled(x, w)
            assert_close(y.float(), fn(x.float(), w.float()), bf16, what=f"{fn.__name__} {rows} rows")
    torch.cuda.synchronize()
    records = tilec.report()
    assert len(records) == 1 and records[0].taken, [(r.kernel, r.reason) for r in records]  # compiled once
    kernel = loaded_kernels(records[0].kernel)[-1]  # this test's (earlier tests may reuse the name)
    assert sum(kernel.launches.values()) == len(ROWS)
    bound = kernel._bound
    assert bound is not None and bound.size_args, "the bound launch path takes the size as an argument"
