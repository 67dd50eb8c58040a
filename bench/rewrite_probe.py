"""Whole models' training steps with and without a decomposition tilec's backend may replace
(`tilec.inductor.decompositions`), and stock torch.compile, in one process: what
`tilec.passes.chooser.GRAPH_REWRITES` quotes.

    python bench/rewrite_probe.py [FAMILIES] [--aten] [--size default|small]   # FAMILIES: llama,gpt2,gemma

Per family (`bench/models.py`'s models at the default size or `--size`'s, bf16, a training step: forward, loss,
backward, AdamW), three sides compiled from one model's weights: `tilec` (the backend with no
rewrite), `tilecfb` (the backend with tilec's `embedding_dense_backward`) and `stock`. For each: whether two first steps give the same
gradients bit for bit, the largest relative error of a parameter's gradient against stock's; the
median wall time of 12 steps in alternating order (ABBA), the device time per step (the sum of
the profiler's kernel and copy times over 3 steps) and the device time of each kernel whose name
says it takes part in the embedding's gradient. One JSON line each to $OUT/rewrite_probe.jsonl.

`--aten`: the `tilecfb` side leaves `embedding_dense_backward` to ATen's CUDA kernel instead (not
decomposed: Inductor's fallback to it registered), the alternative measured first.

Caches off (AOT autograd's and the FX graph's): AOT autograd's cache key does not see the
decomposition table, so a side compiled after another would load the other's graph.
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

SIDES = ("tilec", "tilecfb", "stock")
EMBEDDING = ("embedding", "ill", "sort", "krn", "segment", "compute_")


def rewritten(aten: bool = False) -> dict[Any, Any]:
    """The decomposition table of the `tilecfb` side, handed to `compile_fx`: Inductor's with
    `embedding_dense_backward` tilec's, or (`aten`) without it, ATen's kernel registered as
    Inductor's fallback for it."""
    import torch
    from torch._inductor import decomposition, lowering

    from tilec.inductor.decompositions import REWRITES, overload

    op = overload("embedding_dense_backward")
    table = dict(decomposition.select_decomp_table())
    if aten:
        lowering.make_fallback(torch.ops.aten.embedding_dense_backward, warn=False, override_decomp=True)
        del table[op]
    else:
        table[op] = REWRITES["embedding_dense_backward"][1]
    return table


def main(argv: list[str]) -> None:
    import models as bench_models
    import torch
    from torch._inductor import compile_fx

    import tilec
    from tilec.inductor.backend import _inner_compile
    from tilec.inductor.registry import register, scope

    torch._functorch.config.enable_autograd_cache = False
    torch._inductor.config.fx_graph_cache = False
    size = "default"
    if "--size" in argv:
        i = argv.index("--size")
        size = argv[i + 1]
        argv = argv[:i] + argv[i + 2 :]
    args = [a for a in argv if not a.startswith("--")]
    families = (args[0] if args else "llama,gpt2,gemma").split(",")
    with_rewrite = rewritten(aten="--aten" in argv)

    def compile_with(decompositions: Any) -> Any:
        def backend(gm: Any, example_inputs: Any) -> Any:
            register(cpu=False)
            with scope():
                return compile_fx.compile_fx(
                    gm, example_inputs, inner_compile=_inner_compile, decompositions=decompositions
                )

        return backend

    backends = {"tilec": compile_with(None), "tilecfb": compile_with(with_rewrite), "stock": "inductor"}

    def family(fam: str, out: Any) -> None:
        base = bench_models.build(fam, size)
        shape = bench_models.SIZES[size]
        ids = torch.randint(0, base.config.vocab_size, shape, generator=torch.Generator().manual_seed(1)).cuda()
        models = {s: copy.deepcopy(base).to("cuda", torch.bfloat16) for s in SIDES}
        torch._dynamo.reset()
        compiled = {s: torch.compile(bench_models.entry(s), backend=backends[s], dynamic=False) for s in SIDES}
        opts = {s: torch.optim.AdamW(models[s].parameters(), lr=1e-4, foreach=True) for s in SIDES}
        grads: dict[str, list[Any]] = {}

        def step(s: str, keep: bool = False, update: bool = True) -> None:
            models[s].train()
            compiled[s](models[s], ids, ids).loss.backward()
            if keep:
                grads[s] = [p.grad.detach().double().clone() for p in models[s].parameters()]
            if update:
                opts[s].step()
            opts[s].zero_grad(set_to_none=True)

        for s in SIDES:
            tilec.reset_report()
            step(s, keep=True, update=False)
            step(s, update=False)
            taken = [r.kernel for r in tilec.report() if r.taken]
            print(fam, s, "taken", len(taken), "of", len(tilec.report()), flush=True)
        for s in SIDES:  # the first step again: the same gradients?
            first = grads[s]
            step(s, keep=True, update=False)
            same = all(torch.equal(a, b) for a, b in zip(first, grads[s], strict=True))
            against = grads["stock"] if s != "stock" else first
            err = max(
                ((a - b).norm() / b.norm().clamp_min(1e-30)).item() for a, b in zip(grads[s], against, strict=True)
            )
            print(fam, s, "same gradients twice:", same, "largest error against stock:", err, flush=True)
            out.write(json.dumps({"family": fam, "side": s, "deterministic": same, "max_rel_err_vs_stock": err}) + "\n")
        for s in SIDES:
            for _ in range(2):
                step(s)
        torch.cuda.synchronize()
        times: dict[str, list[float]] = {s: [] for s in SIDES}
        for i in range(12):
            for s in SIDES if i % 2 == 0 else SIDES[::-1]:
                times[s].append(bench_models._sync_ms(lambda s=s: step(s)))
        for s in SIDES:
            per = {name: us for name, (us, _) in bench_models.kernel_times(lambda s=s: step(s)).items()}
            row = {
                "family": fam,
                "size": size,
                "side": s,
                "device_us": sum(per.values()),
                "wall_ms_median": statistics.median(times[s]),
                "wall_spread": [min(times[s]), max(times[s])],
                "emb_kernels": {k[:90]: round(v, 1) for k, v in per.items() if any(w in k.lower() for w in EMBEDDING)},
            }
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(fam, s, f"device {row['device_us']:.1f} us  wall {row['wall_ms_median']:.3f} ms", flush=True)

    with open(f"{os.environ.get('OUT', '.')}/rewrite_probe.jsonl", "a") as out:
        for fam in families:
            family(fam, out)
            torch._dynamo.reset()
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
