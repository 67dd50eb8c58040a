"""`tilec bench --models`: whole models, tilec against stock torch.compile, in one process.

    tilec bench --models [--size default|small] [--families llama,gpt2] [--modes infer,train,infer-ro]

Hugging Face transformers models built from their configs (random weights; nothing is
downloaded): Llama (RMSNorm, SwiGLU, rotary) and GPT-2 (LayerNorm, GELU, learned positions),
bf16, SDPA attention. Sizes: `default` is hidden 2048, intermediate 5632, 2 layers, a batch of
4 x 1024 tokens; `small` the same model on 1 x 128 tokens. Modes:

- `infer`: a forward pass (torch.compile default mode);
- `infer-ro`: the same with `mode="reduce-overhead"` (CUDA graphs);
- `train`: forward, loss, backward and an AdamW step (the step itself eager, the same for both).

tilec and stock run on two copies of the model with the same weights, compiled separately
(`backend="tilec"`, which applies tilec to its own graphs only, and the default backend), and
their steps alternate: the median and the spread (min to max) of each's wall time per step over
the repeats, measured with CUDA events around a synchronized step. Per row: the ratio stock/tilec,
the kernels tilec took and declined (with the reasons' counts), and each side's error against an
fp32 eager run of the same weights (inference logits; relative norm error).
"""

from __future__ import annotations

import copy
import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

SIZES = {"default": (4, 1024), "small": (1, 128)}
FAMILIES = ("llama", "gpt2")
MODES = ("infer", "train", "infer-ro")


def build(family: str) -> Any:
    import torch
    import transformers as tf

    if family == "llama":
        config = tf.LlamaConfig(
            hidden_size=2048,
            intermediate_size=5632,
            num_hidden_layers=2,
            num_attention_heads=16,
            num_key_value_heads=16,
            vocab_size=32000,
            max_position_embeddings=2048,
        )
        cls = tf.LlamaForCausalLM
    elif family == "gpt2":
        config = tf.GPT2Config(n_embd=2048, n_layer=2, n_head=16, n_positions=2048, vocab_size=50257)
        cls = tf.GPT2LMHeadModel
    else:
        raise ValueError(family)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return cls(config)


def _sync_ms(fn: Any) -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def relative_error(a: Any, ref: Any) -> float:
    a, ref = a.double(), ref.double()
    return float((a - ref).norm() / ref.norm())


def run_row(family: str, size: str, mode: str, repeats: int, log: Any) -> dict[str, Any]:
    import torch

    import tilec

    batch, seq = SIZES[size]
    base = build(family)
    ids = torch.randint(0, base.config.vocab_size, (batch, seq), device="cuda")
    ref_logits = None
    if mode != "train":
        with torch.no_grad():
            ref_logits = base.to("cuda", torch.float32)(ids).logits.float()
    models = {side: copy.deepcopy(base).to("cuda", torch.bfloat16) for side in ("tilec", "stock")}
    del base
    torch._dynamo.reset()
    tilec.reset_report()
    compile_mode = "reduce-overhead" if mode == "infer-ro" else None
    compiled = {
        "tilec": torch.compile(models["tilec"], backend="tilec", mode=compile_mode, dynamic=False),
        "stock": torch.compile(models["stock"], mode=compile_mode, dynamic=False),
    }
    opts = (
        {s: torch.optim.AdamW(models[s].parameters(), lr=1e-4, foreach=True) for s in models} if mode == "train" else {}
    )

    def step(side: str) -> Any:
        if mode == "train":
            models[side].train()
            out = compiled[side](ids, labels=ids)
            out.loss.backward()
            opts[side].step()
            opts[side].zero_grad(set_to_none=True)
            return out.loss.detach()
        with torch.no_grad():
            models[side].eval()
            return compiled[side](ids).logits

    errors = {}
    start = time.perf_counter()
    for side in ("tilec", "stock"):
        for _ in range(3):  # compile (forward, then backward), then CUDA-graph warm-up and recording
            out = step(side)
        torch.cuda.synchronize()
        if ref_logits is not None:
            errors[side] = relative_error(out.float(), ref_logits)
    compile_s = time.perf_counter() - start
    records = tilec.report()
    times: dict[str, list[float]] = {"tilec": [], "stock": []}
    for _ in range(repeats):
        for side in ("tilec", "stock"):
            times[side].append(_sync_ms(lambda side=side: step(side)))
    med = {s: statistics.median(v) for s, v in times.items()}
    declined = Counter(r.reason.split(":")[0].split(" (")[0] for r in records if not r.taken and r.reason)
    row = {
        "family": family,
        "size": size,
        "mode": mode,
        "tilec_ms": med["tilec"],
        "stock_ms": med["stock"],
        "speedup": med["stock"] / med["tilec"],
        "tilec_spread_ms": [min(times["tilec"]), max(times["tilec"])],
        "stock_spread_ms": [min(times["stock"]), max(times["stock"])],
        "taken": sum(r.taken for r in records),
        "kernels": len(records),
        "declined": dict(declined),
        "error_tilec": errors.get("tilec"),
        "error_stock": errors.get("stock"),
        "compile_s": compile_s,
    }
    log(
        f"{family:6s} {size:8s} {mode:9s} tilec {med['tilec']:8.3f} ms  stock {med['stock']:8.3f} ms  "
        f"{row['speedup']:.3f}x  taken {row['taken']}/{row['kernels']}  errors {errors}"
    )

    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return row


def main(out: Path, size: str, families: list[str], modes: list[str], repeats: int = 20) -> int:
    import torch
    import triton

    import tilec

    out.mkdir(parents=True, exist_ok=True)
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    import transformers

    env["transformers"] = transformers.__version__
    tilec.uninstall()  # the backend applies tilec to its own graphs; the stock copy stays stock
    rows = []
    with (out / "models.jsonl").open("w") as f:
        for family in families:
            for mode in modes:
                row = run_row(family, size, mode, repeats, lambda line: print(line, flush=True))
                row["meta"] = env
                f.write(json.dumps(row) + "\n")
                f.flush()
                rows.append(row)
    lines = [
        "# tilec bench --models",
        "",
        f"{env['gpu']}, torch {env['torch']}, triton {env['triton']}, transformers {env['transformers']}; "
        f"size {size} (batch x tokens {SIZES[size][0]}x{SIZES[size][1]}), bf16, median of {repeats} steps each, "
        "tilec and stock alternating.",
        "",
        "| model | mode | tilec ms | stock ms | stock/tilec | tilec spread | stock spread | taken | error tilec | error stock |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:

        def err(x: float | None) -> str:
            return "" if x is None else f"{x:.2e}"

        lines.append(
            f"| {r['family']} | {r['mode']} | {r['tilec_ms']:.3f} | {r['stock_ms']:.3f} | {r['speedup']:.3f} | "
            f"{r['tilec_spread_ms'][0]:.3f}-{r['tilec_spread_ms'][1]:.3f} | "
            f"{r['stock_spread_ms'][0]:.3f}-{r['stock_spread_ms'][1]:.3f} | {r['taken']}/{r['kernels']} | "
            f"{err(r['error_tilec'])} | {err(r['error_stock'])} |"
        )
    lines += ["", "Declined, by reason:", ""]
    for r in rows:
        lines.append(f"- {r['family']} {r['mode']}: " + "; ".join(f"{n}x {k}" for k, n in r["declined"].items()))
    (out / "models.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0
