"""`tilec bench --models`: whole models, tilec against stock torch.compile, in one process.

    tilec bench --models [--size default|small|tiny] [--device cuda|cpu]
                         [--families llama,gpt2,gemma] [--modes infer,infer-ro,train,train-ro]
                         [--dropout P] [--dynamic] [--control] [--stock-first] [--autotune]
                         [--vocab V] [--both-orders]

Hugging Face transformers models built from their configs (random weights; nothing is
downloaded), SDPA attention, dropout off (a step is then deterministic, and comparable with an
eager run): Llama (RMSNorm, SwiGLU, rotary), GPT-2 (LayerNorm, GELU, learned positions) and
Gemma (RMSNorm with `1 + w`, GELU-tanh, a scaled embedding). Sizes:

- `default`: hidden 2048, intermediate 5632, 2 layers, 16 heads, vocabulary 32000 (GPT-2: 50257),
  a batch of 4 x 1024 tokens, bf16;
- `small`: the same model on 1 x 128 tokens (host-bound: launch costs show);
- `tiny`: hidden 64, 2 layers, vocabulary 512, 2 x 16 tokens, fp32 — for `--device cpu`, where
  tilec's kernels run in Triton's interpreter and the rest in Inductor's C++ code.

`--vocab V` gives every family a vocabulary of V (Llama 3's 128256, Gemma's 256000: the loss's
rows of logits then take much more of a step).

Modes: `infer` (a forward pass), `train` (forward, loss, backward and an AdamW step; the step
itself eager, the same for both sides), each also with `mode="reduce-overhead"` (`infer-ro`,
`train-ro`: CUDA graphs; GPU only).

On the GPU, tilec (`backend="tilec"`, which applies tilec to its own graphs only) and stock (the
default backend) run on two copies of the model with the same weights, compiled separately, and
their steps alternate (in ABBA order): per side the median and the spread (min to max) of the wall time per
synchronized step over the repeats, and the device time per step (the sum of the GPU's kernel
and copy times, from the profiler). Per row: the ratio stock/tilec, the kernels tilec took and
declined (with the reasons' counts; models.jsonl lists every kernel with its emitter or reason,
its signature and, with `--autotune`, the autotuner's timings: `bench/rules.py --kernels` derives
the table's rules for the models' kernels from them), and each side's error against an fp32 eager run of the same weights — inference: the
logits; training: the first step's gradients (relative norm error).
In the `-ro` modes each row also counts, per side, the graphs CUDA-graph trees declined to
capture while it compiled (`cudagraph_skips`), and the table says which rows had any.

`--autotune` has tilec's autotuner decide instead of the chooser's rules: at compile time it
times each kernel tilec can take against stock Inductor's and keeps the faster (docs/hook.md).

`--dynamic` (GPU) compiles with `dynamic=None`, Dynamo's default, and runs each side at two
other sequence lengths first (half and three quarters of the size's, weights unchanged): the
second makes Dynamo recompile with a symbolic length, and the measured steps, at the size's own
length, run that symbolic graph.

`--stock-first` (GPU) makes, compiles and warms up the stock side first (by default tilec's is
first). Whichever side comes first runs slower on the host: between two stock sides the first
measured up to 1.7% slower in inference (H100), and on the CPU, with Inductor's code on both
sides, the side compiled first about 1% slower, the model copied first about 0.3% more.
`--both-orders` runs each row twice, tilec's side first and stock's first, and gives each model
and mode the geometric mean of the two: a reading the order does not favour.
`--control` (GPU) compiles the tilec column without tilec: two stock sides, measured exactly as
a row is. Their ratio and spreads are what the bench reads between identical code (allocation,
clocks, Inductor's own choices per compile), the floor under which a row's stock/tilec says
nothing.

`--dropout P` (GPU) trains with dropout on: GPT-2's residual, embedding and attention dropout,
Llama's and Gemma's attention dropout (inside SDPA, not Inductor's), all P. Eager PyTorch draws
other masks than Inductor's kernels, so a training row's error is then tilec's first-step
gradients against stock's, both steps run from the same `torch.manual_seed` after a step that
compiled everything (one that updates no weights): tilec's dropout kernels draw stock's masks, so
the error is the rounding of the kernels alone.

On the CPU (`--device cpu`, size `tiny`: correctness and coverage, no timing), tilec takes every
kernel it can (`tilec.config.decline = False`: the chooser's rules are GPU measurements), and a
row passes when tilec's error is within stock's: at most twice stock's, or 1e-5. The command
exits 1 when a row does not pass.
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

# batch x tokens
SIZES = {"default": (4, 1024), "small": (1, 128), "tiny": (2, 16)}
FAMILIES = ("llama", "gpt2", "gemma")
MODES = ("infer", "infer-ro", "train", "train-ro")
CPU_MODES = ("infer", "train")
# a row passes when tilec's error is at most this many times stock's, or at most ERROR_FLOOR
ERROR_RATIO = 2.0
ERROR_FLOOR = 1e-5


def dims(size: str) -> dict[str, int]:
    if size == "tiny":
        return {"hidden": 64, "intermediate": 160, "layers": 2, "heads": 4, "vocab": 512, "positions": 128}
    return {"hidden": 2048, "intermediate": 5632, "layers": 2, "heads": 16, "vocab": 32000, "positions": 2048}


def build(family: str, size: str, dropout: float = 0.0, vocab: int | None = None) -> Any:
    import torch
    import transformers as tf

    d = dims(size)
    if vocab is not None:
        d["vocab"] = vocab
    elif family == "gpt2" and size != "tiny":
        d["vocab"] = 50257  # GPT-2's own
    if family == "llama":
        config: Any = tf.LlamaConfig(
            hidden_size=d["hidden"],
            intermediate_size=d["intermediate"],
            num_hidden_layers=d["layers"],
            num_attention_heads=d["heads"],
            num_key_value_heads=d["heads"],
            vocab_size=d["vocab"],
            max_position_embeddings=d["positions"],
            attention_dropout=dropout,
        )
        cls: Any = tf.LlamaForCausalLM
    elif family == "gpt2":
        config = tf.GPT2Config(
            n_embd=d["hidden"],
            n_layer=d["layers"],
            n_head=d["heads"],
            n_positions=d["positions"],
            vocab_size=d["vocab"],
            bos_token_id=d["vocab"] - 1,
            eos_token_id=d["vocab"] - 1,
            resid_pdrop=dropout,
            embd_pdrop=dropout,
            attn_pdrop=dropout,
        )
        cls = tf.GPT2LMHeadModel
    elif family == "gemma":
        config = tf.GemmaConfig(
            hidden_size=d["hidden"],
            intermediate_size=d["intermediate"],
            num_hidden_layers=d["layers"],
            num_attention_heads=d["heads"],
            num_key_value_heads=d["heads"],
            head_dim=d["hidden"] // d["heads"],
            vocab_size=d["vocab"],
            max_position_embeddings=d["positions"],
            attention_dropout=dropout,
        )
        cls = tf.GemmaForCausalLM
    else:
        raise ValueError(f"unknown family {family!r}; of {', '.join(FAMILIES)}")
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return cls(config)


def entry(side: str) -> Callable[[Any, Any, Any], Any]:
    """The function each side compiles: `model(ids, labels=labels)`, a code object of its own.

    Dynamo keeps compiled code per code object, one entry per backend, and looks entries up
    newest first: compiling the two models themselves would share one code object (Module's
    call), and each call of the side compiled first would pass over the other side's entry —
    measured at about 30 us per call on Llama, 3% of a small inference step, against whichever
    side compiled first. With a code object per side, each side's lookup finds only its own."""
    namespace: dict[str, Any] = {}
    exec(f"def forward_{side}(model, ids, labels):\n    return model(ids, labels=labels)\n", namespace)
    return namespace[f"forward_{side}"]  # type: ignore[no-any-return]


def stepper(
    family: str, size: str, backends: dict[str, Any], train: bool, device: str = "cuda"
) -> Callable[[str], None]:
    """`step(side)` over sides compiled alike, for the probes that time a model's steps per side:
    each side (`backends`: side -> its `torch.compile` backend, made and compiled in the dict's
    order) a bf16 copy of the family's model at `size`, compiled from an entry of its own
    (`entry`); a step is a forward pass, or with `train` forward, loss, backward and AdamW.
    Dynamo and tilec's report are reset first."""
    import torch

    import tilec

    batch, seq = SIZES[size]
    base = build(family, size)
    ids = torch.randint(0, base.config.vocab_size, (batch, seq), generator=torch.Generator().manual_seed(1))
    ids = ids.to(device)
    models = {side: copy.deepcopy(base).to(device, torch.bfloat16) for side in backends}
    torch._dynamo.reset()
    tilec.reset_report()
    compiled = {side: torch.compile(entry(side), backend=b, dynamic=False) for side, b in backends.items()}
    opts = {s: torch.optim.AdamW(m.parameters(), lr=1e-4, foreach=True) for s, m in models.items()} if train else {}

    def step(side: str) -> None:
        if train:
            models[side].train()
            compiled[side](models[side], ids, ids).loss.backward()
            opts[side].step()
            opts[side].zero_grad(set_to_none=True)
        else:
            models[side].eval()
            with torch.no_grad():
                compiled[side](models[side], ids, None)

    return step


def kernel_rows(records: list[Any]) -> list[dict[str, Any]]:
    """Each kernel tilec saw, as results carry it: taken (emitter, the autotuner's choice) or why
    not, what the chooser read of it (its signature) and the autotuner's timings where it ran —
    what `bench/rules.py --kernels` derives rules from."""
    fields = ("kernel", "taken", "emitter", "autotune", "reason", "signature", "timings", "traced")
    return [{f: getattr(r, f) for f in fields} for r in records]


def _grads(model: Any) -> Any:
    import torch

    return torch.cat([p.grad.detach().flatten().double() for p in model.parameters() if p.grad is not None])


def _sync_ms(fn: Callable[[], Any]) -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def kernel_times(fn: Callable[[], Any], steps: int = 3) -> dict[str, tuple[float, float]]:
    """Each kernel's (and copy's) device time per step in us and launches per step, by name, as
    the profiler records `steps` calls of `fn` (CUDA-graph replays included)."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    total: dict[str, tuple[float, int]] = {}
    for e in prof.events():
        if e.device_type == DeviceType.CUDA:
            us, n = total.get(e.name, (0.0, 0))
            total[e.name] = (us + e.time_range.elapsed_us(), n + 1)
    return {name: (us / steps, n / steps) for name, (us, n) in total.items()}


def device_ms(fn: Callable[[], Any], steps: int = 3, skip: str | None = None) -> float | None:
    """GPU milliseconds per step: the sum of the kernels' and copies' durations the profiler
    records (`kernel_times`; those whose name contains `skip` left out), averaged over `steps`
    steps; None if it saw none."""
    kept = [us for name, (us, _) in kernel_times(fn, steps).items() if not (skip and skip in name.lower())]
    return sum(kept) / 1000.0 if kept else None


def within(error_tilec: float | None, error_stock: float | None) -> bool | None:
    """Whether tilec's error against the reference is within stock's."""
    if error_tilec is None or error_stock is None:
        return None
    return error_tilec <= max(ERROR_RATIO * error_stock, ERROR_FLOOR)


def run_row(
    family: str,
    size: str,
    mode: str,
    repeats: int,
    device: str,
    log: Callable[[str], None],
    dropout: float = 0.0,
    dynamic: bool = False,
    control: bool = False,
    stock_first: bool = False,
    vocab: int | None = None,
) -> dict[str, Any]:
    import torch

    import tilec
    from tilec.testing import relative_error

    batch, seq = SIZES[size]
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    train = mode.startswith("train")
    base = build(family, size, dropout, vocab)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, base.config.vocab_size, (batch, seq), generator=gen).to(device)
    against_stock = bool(dropout) and train  # eager's masks are not Inductor's: compare with stock

    # the fp32 eager reference: logits, or the first step's gradients
    ref_model = copy.deepcopy(base).to(device, torch.float32)
    if against_stock:
        reference = None
    elif train:
        ref_model.train()
        ref_model(ids, labels=ids).loss.backward()
        reference = _grads(ref_model)
    else:
        ref_model.eval()
        with torch.no_grad():
            reference = ref_model(ids).logits.double()
    del ref_model

    order = ("stock", "tilec") if stock_first else ("tilec", "stock")  # which side is made and compiled first
    models = {side: copy.deepcopy(base).to(device, dtype) for side in order}
    base_vocab = base.config.vocab_size
    del base
    torch._dynamo.reset()
    tilec.reset_report()
    compile_mode = "reduce-overhead" if mode.endswith("-ro") else None
    compiled = {
        "tilec": torch.compile(
            entry("tilec"),
            backend="inductor" if control else "tilec",
            mode=compile_mode,
            dynamic=None if dynamic else False,
        ),
        "stock": torch.compile(entry("stock"), mode=compile_mode, dynamic=None if dynamic else False),
    }
    opts = {s: torch.optim.AdamW(models[s].parameters(), lr=1e-4, foreach=True) for s in models} if train else {}
    errors: dict[str, float] = {}
    first: dict[str, Any] = {}  # each side's first-step gradients, where compared with stock's

    def step(side: str, measure: bool = False, update: bool = True, tokens: Any = None) -> Any:
        t = ids if tokens is None else tokens
        if train:
            models[side].train()
            out = compiled[side](models[side], t, t)
            out.loss.backward()
            if measure and against_stock:
                first[side] = _grads(models[side])
            elif measure:
                errors[side] = relative_error(_grads(models[side]), reference)
            if update:
                opts[side].step()
            opts[side].zero_grad(set_to_none=True)
            return out.loss.detach()
        models[side].eval()
        with torch.no_grad():
            out = compiled[side](models[side], t, None).logits
        if measure:
            errors[side] = relative_error(out, reference)
        return out

    start = time.perf_counter()
    if dynamic:  # the second length recompiles with a symbolic sequence length; weights unchanged
        for side in order:
            for n in (seq // 2, 3 * seq // 4):
                step(side, update=False, tokens=ids[:, :n].contiguous())
    if against_stock:
        for side in order:
            step(side, update=False)  # compiles (compiling may draw random numbers: autotuning's inputs)
            torch.manual_seed(1234)
            step(side, measure=True, update=False)
        errors["tilec"] = relative_error(first["tilec"], first["stock"])
    skips: dict[str, int] = {}  # CUDA-graph trees' skips while each side compiled (reduce-overhead)
    for side in order:
        before = cudagraph_skips()
        step(side, measure=not against_stock)  # the first step: compiles, and is compared with the reference
        if device != "cpu":
            for _ in range(2):  # the backward's compile, CUDA-graph warm-up and recording
                step(side)
            torch.cuda.synchronize()
        skips[side] = cudagraph_skips() - before
    compile_s = time.perf_counter() - start
    records = tilec.report()
    declined = Counter(r.reason.split(":")[0].split(" (")[0] for r in records if not r.taken and r.reason)
    row: dict[str, Any] = {
        "family": family,
        "size": size,
        "mode": mode,
        "device": device,
        "dropout": dropout,
        "dynamic": dynamic,
        "control": control,
        "stock_first": stock_first,
        "vocab": base_vocab,
        "taken": sum(r.taken for r in records),
        "kernels": len(records),
        "declined": dict(declined),
        # every kernel tilec saw: taken (emitter, pipeline, the autotuner's timings) or why not
        "report": kernel_rows(records),
        "error_tilec": errors.get("tilec"),
        "error_stock": errors.get("stock"),
        "within_stock_error": within(errors.get("tilec"), errors.get("stock")),
        "cudagraph_skips": skips if compile_mode else None,
        "compile_s": compile_s,
    }
    if device != "cpu":
        times: dict[str, list[float]] = {"tilec": [], "stock": []}
        for i in range(repeats):
            # ABBA order: whatever favours the step run first (or second) of a pair favours neither
            for side in ("tilec", "stock") if i % 2 == 0 else ("stock", "tilec"):
                times[side].append(_sync_ms(lambda side=side: step(side)))
        med = {s: statistics.median(v) for s, v in times.items()}
        row.update(
            tilec_ms=med["tilec"],
            stock_ms=med["stock"],
            speedup=med["stock"] / med["tilec"],
            tilec_spread_ms=[min(times["tilec"]), max(times["tilec"])],
            stock_spread_ms=[min(times["stock"]), max(times["stock"])],
            tilec_device_ms=device_ms(lambda: step("tilec")),
            stock_device_ms=device_ms(lambda: step("stock")),
        )
        log(
            f"{family:6s} {size:8s} {mode:9s} tilec {med['tilec']:8.3f} ms  stock {med['stock']:8.3f} ms  "
            f"{row['speedup']:.3f}x  device {row['tilec_device_ms']} / {row['stock_device_ms']} ms  "
            f"taken {row['taken']}/{row['kernels']}  errors {errors}"
        )
    else:
        log(
            f"{family:6s} {size:8s} {mode:9s} taken {row['taken']}/{row['kernels']}  errors {errors}  "
            f"{'ok' if row['within_stock_error'] else 'ABOVE STOCK ERROR'}"
        )
    torch._dynamo.reset()
    if device != "cpu":
        torch.cuda.empty_cache()
    return row


def cudagraph_skips() -> int:
    """How many graphs CUDA-graph trees have declined to capture in this process (Inductor's own
    counter; the reason goes to the `cudagraphs` log, off unless TORCH_LOGS asks for it)."""
    from torch._dynamo.utils import counters

    return int(counters["inductor"]["cudagraph_skips"])


def _f(x: float | None, spec: str = ".3f") -> str:
    return "" if x is None else format(x, spec)


def device_ratio(row: dict[str, Any]) -> float | None:
    """A row's device time per step, stock's over tilec's (above 1: tilec's kernels take less)."""
    tilec, stock = row.get("tilec_device_ms"), row.get("stock_device_ms")
    return stock / tilec if tilec and stock else None


def order_pairs(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]:
    """(family, mode) -> its rows with tilec's side first and with stock's first, where a run has
    both (`--both-orders`)."""
    by: dict[tuple[str, str], dict[bool, dict[str, Any]]] = {}
    for r in rows:
        by.setdefault((r["family"], r["mode"]), {})[bool(r.get("stock_first"))] = r
    return {k: (v[False], v[True]) for k, v in by.items() if len(v) == 2}


def markdown(
    rows: list[dict[str, Any]],
    env: dict[str, str],
    size: str,
    device: str,
    repeats: int,
    dropout: float = 0.0,
    dynamic: bool = False,
    control: bool = False,
    vocab: int | None = None,
) -> str:
    batch, seq = SIZES[size]
    lines = [
        "# tilec bench --models",
        "",
        f"{env['gpu']}, torch {env['torch']}, triton {env['triton']}, transformers {env['transformers']}; "
        f"size {size} (batch x tokens {batch}x{seq}){f', vocabulary {vocab}' if vocab else ''}, "
        f"{'fp32' if device == 'cpu' else 'bf16'}; tilec's choice: "
        f"{env.get('tilec', 'measured rules')}.",
        "",
    ]
    if device == "cpu":
        lines += [
            "CPU: tilec takes every kernel it can (Triton's interpreter), stock is Inductor's C++ code; errors "
            "against an fp32 eager run (inference: logits; training: the first step's gradients).",
            "",
            "| model | mode | taken | error tilec | error stock | within stock's error |",
            "|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(
                f"| {r['family']} | {r['mode']} | {r['taken']}/{r['kernels']} | {_f(r['error_tilec'], '.2e')} | "
                f"{_f(r['error_stock'], '.2e')} | {'yes' if r['within_stock_error'] else 'NO'} |"
            )
    else:
        speedups = [r["speedup"] for r in rows]
        geomean = statistics.geometric_mean(speedups) if speedups else float("nan")
        lines += [
            f"Wall time per synchronized step, median of {repeats} steps each, tilec and stock alternating; "
            "device time per step from the profiler (kernels and copies); errors against an fp32 eager run "
            "(inference: logits; training: the first step's gradients).",
            "",
            "| model | mode | tilec ms | stock ms | stock/tilec | tilec spread | stock spread | tilec device ms | "
            "stock device ms | device stock/tilec | taken | error tilec | error stock |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(
                f"| {r['family']} | {r['mode']}{' (stock first)' if r.get('stock_first') else ''} | {r['tilec_ms']:.3f} | {r['stock_ms']:.3f} | {r['speedup']:.3f} | "
                f"{r['tilec_spread_ms'][0]:.3f}-{r['tilec_spread_ms'][1]:.3f} | "
                f"{r['stock_spread_ms'][0]:.3f}-{r['stock_spread_ms'][1]:.3f} | {_f(r['tilec_device_ms'])} | "
                f"{_f(r['stock_device_ms'])} | {_f(device_ratio(r))} | {r['taken']}/{r['kernels']} | "
                f"{_f(r['error_tilec'], '.2e')} | {_f(r['error_stock'], '.2e')} |"
            )
        lines += ["", f"Geomean stock/tilec over the {len(rows)} rows: {geomean:.3f}x."]
        devices = [d for d in map(device_ratio, rows) if d is not None]
        if devices:
            lines += [f"Geomean of device time, stock/tilec: {statistics.geometric_mean(devices):.3f}x."]
        skipped = [r for r in rows if any((r.get("cudagraph_skips") or {}).values())]
        if skipped:
            lines += [
                "",
                "CUDA graphs not captured (`-ro` rows whose graphs CUDA-graph trees declined, each side's count; "
                "run with TORCH_LOGS=cudagraphs for the reasons): "
                + "; ".join(
                    f"{r['family']} {r['mode']}: tilec {r['cudagraph_skips'].get('tilec', 0)}, "
                    f"stock {r['cudagraph_skips'].get('stock', 0)}"
                    for r in skipped
                )
                + ".",
            ]
        elif any(r.get("cudagraph_skips") is not None for r in rows):
            lines += ["", "CUDA graphs: every graph of the `-ro` rows was captured on both sides."]
        if control:
            lines += [
                "",
                "Control: the tilec column was compiled without tilec (stock against stock): the ratios and "
                "spreads are the bench's own, between identical code.",
            ]
        both = order_pairs(rows)
        if both:
            lines += [
                "",
                "Both orders (`--both-orders`): each model and mode ran with tilec's side made, compiled and warmed "
                "up first, then with stock's first; the geometric mean of the two readings, which the order does not "
                "favour:",
                "",
                "| model | mode | stock/tilec, tilec first | stock/tilec, stock first | both | device, both |",
                "|---|---|---|---|---|---|",
            ]
            for (family, mode), (a, b) in both.items():
                dev = [device_ratio(a), device_ratio(b)]
                dev_both = statistics.geometric_mean(dev) if None not in dev else None  # type: ignore[arg-type]
                lines.append(
                    f"| {family} | {mode} | {a['speedup']:.3f} | {b['speedup']:.3f} | "
                    f"{statistics.geometric_mean([a['speedup'], b['speedup']]):.3f} | {_f(dev_both)} |"
                )
            means = [statistics.geometric_mean([a["speedup"], b["speedup"]]) for a, b in both.values()]
            lines += [
                "",
                f"Geomean over the {len(means)} models and modes, both orders: "
                f"{statistics.geometric_mean(means):.3f}x.",
            ]
        elif any(r.get("stock_first") for r in rows):
            lines += ["", "Order: the stock side was made, compiled and warmed up first (`--stock-first`)."]
        if dynamic:
            lines += [
                "",
                f"Dynamic: compiled with dynamic=None; each side ran {seq // 2} and {3 * seq // 4} tokens first "
                f"(Dynamo recompiled with a symbolic length), the measured steps run {seq} tokens on that graph.",
            ]
        if dropout:
            lines += [
                "",
                f"Dropout {dropout}: a training row's error is tilec's first-step gradients against stock's, "
                "both from the same seed (eager draws other masks); stock's column is empty.",
            ]
    lines += ["", "Declined, by reason:", ""]
    for r in rows:
        reasons = "; ".join(f"{n}x {k}" for k, n in r["declined"].items()) or "none"
        lines.append(f"- {r['family']} {r['mode']}: {reasons}")
    return "\n".join(lines) + "\n"


def main(
    out: Path,
    size: str,
    families: list[str],
    modes: list[str],
    repeats: int = 20,
    device: str = "cuda",
    autotune: bool = False,
    dropout: float = 0.0,
    dynamic: bool = False,
    control: bool = False,
    stock_first: bool = False,
    vocab: int | None = None,
    both_orders: bool = False,
) -> int:
    if device == "cpu":
        # tilec's CPU kernels run in Triton's interpreter, which Triton picks when first imported
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import torch
    import transformers
    import triton

    import tilec
    from tilec.runtime import interpreter_active

    if device == "cpu" and not interpreter_active():
        raise RuntimeError("--device cpu needs Triton's interpreter: set TRITON_INTERPRET=1 before Python starts")
    out.mkdir(parents=True, exist_ok=True)
    gpu = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    env = {
        "gpu": gpu,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "transformers": transformers.__version__,
        "tilec": "none (--control: stock against stock)" if control else "autotune" if autotune else "measured rules",
    }
    tilec.uninstall()  # the backend applies tilec to its own graphs; the stock copy stays stock
    rows = []
    settings = {"decline": device != "cpu" and tilec.config.decline, "autotune": autotune or tilec.config.autotune}
    with tilec.config.patch(**settings), (out / "models.jsonl").open("w") as f:
        orders = (False, True) if both_orders and device != "cpu" else (stock_first,)
        for family in families:
            for mode in modes:
                for first in orders:
                    row = run_row(
                        family,
                        size,
                        mode,
                        repeats,
                        device,
                        lambda line: print(line, flush=True),
                        dropout,
                        dynamic,
                        control,
                        first,
                        vocab,
                    )
                    row["meta"] = env
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    rows.append(row)
    text = markdown(rows, env, size, device, repeats, dropout, dynamic, control, vocab)
    (out / "models.md").write_text(text)
    print(text)
    failed = [f"{r['family']} {r['mode']}" for r in rows if r["within_stock_error"] is False]
    if failed and device == "cpu":
        print(f"tilec bench --models: tilec's error is above stock's in: {', '.join(failed)}")
        return 1
    return 0
