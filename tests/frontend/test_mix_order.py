"""Inductor's mix-order reductions — a norm's backward with its row sums (dx) and its column sums
over the rows (the weight's gradient) fused into one kernel — do not pass through the hook's
codegen_node_schedule. They are recorded anyway, as declined with their reason and stock's
kernel, so a report counts every kernel of a graph. Which shapes Inductor fuses (docs/hook.md):
at least 4096 rows and twice as many rows as columns, rows of at most 16384."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tilec.frontend import Lowered
from tilec.frontend.capture import capture
from tilec.frontend.reasons import MIX_ORDER_REDUCTION


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def backward_graph(m: int, n: int) -> tuple[Any, list[torch.Tensor]]:
    """RMSNorm's backward graph as AOT autograd partitions it for Inductor (traced on the meta
    device, so decompositions take their GPU branches), and CPU tensors of its inputs' layouts."""
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.decomposition import select_decomp_table

    graphs: dict[str, Any] = {}

    def backend(gm: Any, example_inputs: Any) -> Any:
        def keep(g: Any, _: Any) -> Any:
            graphs["backward"] = g
            return g

        return aot_module_simplified(
            gm,
            example_inputs,
            fw_compiler=lambda g, _: g,
            bw_compiler=keep,
            partition_fn=min_cut_rematerialization_partition,
            decompositions=select_decomp_table(),
        )

    torch._dynamo.reset()
    x = torch.empty(m, n, dtype=torch.bfloat16, device="meta", requires_grad=True)
    w = torch.empty(n, dtype=torch.bfloat16, device="meta", requires_grad=True)
    out = torch.compile(rmsnorm, backend=backend, fullgraph=True)(x, w)
    out.backward(torch.ones_like(out))
    torch._dynamo.reset()
    gm = graphs["backward"]
    inputs = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            v = node.meta["val"]
            inputs.append(torch.empty_strided(v.shape, v.stride(), dtype=v.dtype))  # capture reads layouts only
    return gm, inputs


@pytest.mark.parametrize(("m", "n", "fused"), [(4096, 2048, True), (8192, 8192, False)])
def test_a_mix_order_reduction_is_recorded_as_declined(m: int, n: int, fused: bool) -> None:
    gm, inputs = backward_graph(m, n)
    kernels = capture(gm, inputs)
    mixed = [k for k in kernels if not isinstance(k.result, Lowered) and k.result.reason == MIX_ORDER_REDUCTION]
    if not fused:  # fewer rows than twice the row length: dx and the column sums reach tilec apart
        assert not mixed and len(kernels) >= 2 and all(k.taken for k in kernels), [k.summary() for k in kernels]
        return
    (k,) = mixed
    assert (k.numel, k.rnumel) == (str(m), str(n)) and "sum" in k.reductions
    assert k.name and k.source is not None and "RSPLIT_SIZE" in k.source  # stock's kernel, named
    assert all(other.taken for other in kernels if other is not k), [o.summary() for o in kernels]
