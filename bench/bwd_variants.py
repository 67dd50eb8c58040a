"""Times a norm's backward compiled with tilec under variants of the Triton pipeline's plan
options, beside stock torch.compile: tuning data for the plan of banded kernels (Inductor's
mix-order reductions, docs/performance.md). Each variant compiles the op's forward with tilec
(every kernel taken, the Triton emitter) and times its backward as `tilec bench --bwd` does
(`bench.gradients`: dx and the weights' gradients; device time, cold L2). Prints one JSON line
per op and shape: device time as % of a same-size copy (`bench.model_bytes`), per variant (""
is the plan's default), or the error of a variant that did not compile.

    python bench/bwd_variants.py 16384x8192,8192x4096 ";stages=2;stages=4;xblock=2;bands=264" > variants.jsonl
    python bench/bwd_variants.py 4096x2048 "bands=132;bands=264" add_rmsnorm_bwd,add_rmsnorm_mlp_bwd
    python bench/bwd_variants.py 4096x16384 ";band-chunks{chunk=0}"    # another pass's options
    python bench/bwd_variants.py 4096x32768 "num_warps=32;num_warps=32+band-chunks{chunk=4096}" --fuse-to 32768

A variant is the plan's options, or `pass{options}` for another pass of the Triton pipeline, or
several of these joined by "+". `--fuse-to N`: the GPU's range of shapes tilec fuses
(`chooser.MIX_ORDER_FUSIONS`) reaches rows of N elements in this process (the data for
widening it).

The third argument names the backward ops (`tilec bench --bwd`'s; default: rmsnorm_bwd,layernorm_bwd).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tilec
from bench import BACKWARD, FUNCTIONS, gradients, make_inputs, model_bytes, parse_shapes
from tilec.passes import chooser
from tilec.passes.pipelines import with_options, with_plan
from tilec.runtime.timing import device_ms

OPS = ("rmsnorm_bwd", "layernorm_bwd")
Settings = Callable[[], AbstractContextManager[object]]  # a variant's settings, entered anew each time


def measure(shapes: list[tuple[int, int]], ops: Sequence[str], variants: dict[str, Settings]) -> None:
    """Per op and shape, one JSON line: the op's backward compiled and timed under each variant's
    settings (entered around its compile and its timing), as % of a same-size copy of the model
    bytes, or the error of a variant that did not compile (shared memory, say)."""
    for m, n in shapes:
        src = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        dst = torch.empty_like(src)
        copy_gbps = 2 * src.numel() * src.element_size() / device_ms(lambda: dst.copy_(src)) / 1e6  # noqa: B023
        for op in ops:
            forward = BACKWARD[op]
            row: dict[str, object] = {"op": forward, "shape": f"{m}x{n}"}
            inputs = make_inputs(op, m, n, torch.bfloat16)
            for name, settings in variants.items():
                torch._dynamo.reset()
                try:
                    with (
                        settings(),
                        torch._inductor.config.patch(fx_graph_cache=False),
                        torch._functorch.config.patch(donated_buffer=False),  # the backward runs again and again
                    ):
                        call = gradients(torch.compile(FUNCTIONS[forward], dynamic=False), inputs, forward)
                        call()  # the backward compiles here
                        ms = device_ms(call, reps=15)
                    row[name] = round(100 * model_bytes(op, m, n, 2) / ms / 1e6 / copy_gbps, 1)
                except Exception as e:
                    row[name] = f"error: {str(e)[:200]}"
            print(json.dumps(row), flush=True)


def main(argv: list[str]) -> int:
    if "--fuse-to" in argv:
        at = argv.index("--fuse-to")
        widest = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2 :]
        for gpu, fusion in list(chooser.MIX_ORDER_FUSIONS.items()):
            chooser.MIX_ORDER_FUSIONS[gpu] = dataclasses.replace(fusion, max_row=max(fusion.max_row, widest))
    variants = argv[1].split(";") if len(argv) > 1 else [""]
    ops = argv[2].split(",") if len(argv) > 2 else OPS
    unknown = [op for op in ops if op not in BACKWARD]
    if unknown:
        print(f"not a backward op: {', '.join(unknown)} (one of {', '.join(BACKWARD)})", file=sys.stderr)
        return 2
    tilec.install()

    def tilec_with(variant: str) -> AbstractContextManager[object]:
        triton = "triton-default"
        for options in filter(None, variant.split("+")):
            other = re.fullmatch(r"([a-z-]+)\{(.*)\}", options)
            triton = with_options(triton, other[1], other[2]) if other else with_plan(triton, options)
        pipes = {**tilec.config.pipelines, "triton": triton}
        return tilec.config.patch(enabled=True, emitter="triton", decline=False, autotune=False, pipelines=pipes)

    settings: dict[str, Settings] = {"stock": lambda: tilec.config.patch(enabled=False)}
    settings.update({v or "default": functools.partial(tilec_with, v) for v in variants})
    measure(parse_shapes(argv[0]), ops, settings)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
