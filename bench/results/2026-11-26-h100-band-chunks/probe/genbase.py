"""Writes tilec's banded LayerNorm backward kernels (as the Triton pipeline built them then) to gen/;
run from the repository root."""
import os
import sys
sys.path.insert(0, "tests"); sys.path.insert(0, "tests/frontend")
from test_mix_order import backward_graph, banded
from tilec.frontend.capture import capture
from tilec.dump import table_fusion
from tilec.inductor.build import build
for m, n in [(4096, 16384), (8192, 16384), (32768, 16384), (4096, 8192), (16384, 8192)]:
    gm, inputs = backward_graph(m, n, "layernorm")
    k = banded(capture(gm, inputs, strict=True, fuse=table_fusion))
    if k is None:
        print("not fused", m, n); continue
    built = build(k.result, "triton", "cuda")
    open(f"{os.path.dirname(os.path.abspath(__file__))}/gen/base_{m}_{n}.py", "w").write(built.primary.source)
    print(m, n, [l for l in built.primary.source.splitlines() if "GRID" in l or "return (" in l or "NUM_WARPS =" in l or "num_stages" in l])
