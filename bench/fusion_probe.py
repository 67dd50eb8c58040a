"""Times a norm's backward fused into a mix-order reduction and not, beside each other: stock
torch.compile as it fuses ("stock") and with Inductor's size checks off
(`triton.mix_order_reduction_non_strict_mode`: "stock-fused"), and tilec taking every kernel,
the Triton emitter, with the checks off ("tilec-fused") and as tilec fuses
(`tilec.frontend.fusion`: "tilec"). Device time as `tilec bench --bwd` times it, % of a same-size
copy of the model bytes; one JSON line per op and shape. The data behind
`chooser.MIX_ORDER_FUSIONS` (docs/performance.md).

    python bench/fusion_probe.py 2048x4096,4096x8192 rmsnorm_bwd,layernorm_bwd
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tilec
from bench import BACKWARD, FUNCTIONS, gradients, make_inputs, model_bytes, parse_shapes
from tilec.runtime.timing import device_ms


def main(argv: list[str]) -> int:
    tilec.install()
    ops = argv[1].split(",")
    for m, n in parse_shapes(argv[0]):
        src = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        dst = torch.empty_like(src)
        copy_gbps = 2 * src.numel() * 2 / device_ms(lambda: dst.copy_(src)) / 1e6  # noqa: B023
        for op in ops:
            forward = BACKWARD[op]
            row = {"op": forward, "shape": f"{m}x{n}"}
            inputs = make_inputs(op, m, n, torch.bfloat16)
            for v in ["stock", "stock-fused", "tilec-fused", "tilec"]:
                torch._dynamo.reset()
                fused = v.endswith("fused")
                settings = (
                    tilec.config.patch(enabled=False)
                    if v.startswith("stock")
                    else tilec.config.patch(enabled=True, emitter="triton", decline=False, autotune=False)
                )
                try:
                    with (
                        settings,
                        torch._inductor.config.patch(
                            {"fx_graph_cache": False, "triton.mix_order_reduction_non_strict_mode": fused}
                        ),
                        torch._functorch.config.patch(donated_buffer=False),
                    ):
                        call = gradients(torch.compile(FUNCTIONS[forward], dynamic=False), inputs, forward)
                        call()
                        ms = device_ms(call, reps=15)
                    row[v] = round(100 * model_bytes(op, m, n, 2) / ms / 1e6 / copy_gbps, 1)
                except Exception as e:
                    row[v] = f"error: {str(e)[:200]}"
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
