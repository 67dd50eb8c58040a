"""A probe of row reductions over symbolic sizes: RMSNorm, LayerNorm and softmax compiled with a
symbolic number of rows (`rows`: the rows' dimension marked dynamic after a first size, as a
model's token count is) and with both sizes symbolic (`both`: `dynamic=True`, so the row length
is symbolic too, as an attention softmax over a varying sequence is), tilec (the product's
defaults, or `--autotune`: the autotuner timing its candidates and stock in place) against stock
torch.compile, each compiled from a function of its own and timed on device (cold L2), % of a
same-size copy. Prints what tilec took or why it declined, and the autotuner's timings.

    python bench/symbolic_probe.py               # rows and both, tilec's defaults against stock
    python bench/symbolic_probe.py --autotune    # both, the autotuner against stock
    python bench/symbolic_probe.py --attention   # causal attention scores' softmax over a varying sequence

Results: bench/results/2026-11-28-h200-symbolic-rows/ (default.log, autotune.log), and with the
symbolic-length rules: bench/results/2026-11-28-h200-symbolic-survey/probe.log (default).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# a first size, compiled static; the second compiles the symbolic kernel; then the sizes timed
FIRST = {"rows": [(1000, 2048), (3000, 2048)], "both": [(1000, 3000), (3000, 5000)]}
TIMED = {
    "rows": [(32768, 2048), (8192, 2048)],
    "both": [(4096, 16384), (8192, 4096), (32768, 2048), (16384, 1000), (65536, 256)],
}
AUTOTUNED_FIRST = [(1000, 3000), (4096, 8192)]
AUTOTUNED_TIMED = [(4096, 8192), (4096, 16384), (32768, 1024)]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--autotune", action="store_true", help="the autotuner against stock, both sizes symbolic")
    p.add_argument(
        "--attention",
        action="store_true",
        help="examples/attention_softmax.py (scores, scaled, causally masked, softmaxed) over sequences of "
        "symbolic length, tilec against stock",
    )
    args = p.parse_args(argv)
    if args.attention:
        return attention()

    import torch

    import tilec
    from bench import FUNCTIONS, copy_ms, make_inputs, own_code, warm_up
    from tilec.runtime.timing import device_ms

    tilec.install()
    warm_up()
    kinds = ["both"] if args.autotune else ["rows", "both"]
    for op in ("softmax", "rmsnorm", "layernorm") if args.autotune else ("rmsnorm", "layernorm", "softmax"):
        for kind in kinds:
            for impl in ("autotune" if args.autotune else "tilec", "stock"):
                fn = torch.compile(own_code(FUNCTIONS[op]), dynamic=True if kind == "both" else None)
                settings = (
                    tilec.config.patch(enabled=False)
                    if impl == "stock"
                    else tilec.config.patch(
                        enabled=True, emitter="auto", strict=False, decline=True, autotune=impl == "autotune"
                    )
                )
                tilec.reset_report()
                with settings, torch._inductor.config.patch(fx_graph_cache=False):
                    for m, n in AUTOTUNED_FIRST if args.autotune else FIRST[kind]:
                        inputs: list[Any] = make_inputs(op, m, n, torch.bfloat16)
                        if kind == "rows":
                            torch._dynamo.mark_dynamic(inputs[0], 0)
                        fn(*inputs)
                    records = tilec.report() if impl != "stock" else []
                    for r in records:
                        print(op, kind, impl, r.kernel, "taken" if r.taken else f"declined: {r.reason}", flush=True)
                        for candidate, ms in r.timings:
                            print(f"    {candidate} {ms * 1000:.1f} us")
                    for m, n in AUTOTUNED_TIMED if args.autotune else TIMED[kind]:
                        inputs = make_inputs(op, m, n, torch.bfloat16)
                        ms = device_ms(lambda: fn(*inputs))  # noqa: B023  (called here, at once)
                        pct = 100 * copy_ms(m, n, torch.bfloat16) / ms
                        print(f"{op} {kind} {impl} {m}x{n} {ms * 1000:.1f} us, {pct:.1f}% of a copy", flush=True)
    return 0


# attention over a varying sequence: batch x heads, sequences traced first, then those timed
HEADS = (4, 16)
ATTENTION_FIRST = (300, 700)
ATTENTION_TIMED = (256, 1000, 2048, 4096)


def attention() -> int:
    """examples/attention_softmax.py compiled with `dynamic=True` (its sequence symbolic: the
    softmax's row length), tilec and stock each from a function of their own, traced at two
    sequences, then timed at others (device time of the whole call: the score matmul and the
    softmax kernel); tilec's kernel is checked against stock's output."""
    import torch

    import tilec
    from bench import own_code, warm_up
    from tilec.runtime.timing import device_ms
    from tilec.testing import assert_close

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import attention_softmax

    tilec.install()
    warm_up()
    fns = {}
    for impl in ("tilec", "stock"):
        fn = torch.compile(own_code(attention_softmax.forward), dynamic=True)
        settings = tilec.config.patch(enabled=impl == "tilec", emitter="auto", strict=False, decline=True)
        tilec.reset_report()
        with settings, torch._inductor.config.patch(fx_graph_cache=False):
            for s in ATTENTION_FIRST:
                fn(*(t.cuda() for t in attention_softmax.example_inputs((*HEADS, s, s), torch.bfloat16)))
        for r in tilec.report() if impl == "tilec" else []:
            print("attention", impl, r.kernel, "taken" if r.taken else f"declined: {r.reason}", flush=True)
        fns[impl] = fn
    for s in ATTENTION_TIMED:
        q, k = (t.cuda() for t in attention_softmax.example_inputs((*HEADS, s, s), torch.bfloat16))
        assert_close(fns["tilec"](q, k).float(), fns["stock"](q, k).float(), torch.bfloat16, what=f"attention {s}")
        times = {impl: device_ms(lambda f=f, q=q, k=k: f(q, k)) * 1000 for impl, f in fns.items()}
        print(f"attention {HEADS[0]}x{HEADS[1]}x{s}x{s}: tilec {times['tilec']:.1f} us, stock {times['stock']:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
