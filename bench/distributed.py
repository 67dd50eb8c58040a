"""`tilec bench --distributed`: sharded training, tilec against stock torch.compile, on every rank.

    torchrun --nproc-per-node 2 -m tilec.cli bench --distributed [--wrap ddp,fsdp2]
        [--device cuda|cpu] [--size default|tiny] [--steps 20] [--autotune] [--out DIR]

Each process (rank) builds the Llama of `tilec bench --models` (`models.build`: the same weights on
every rank, from one seed), twice: one copy compiled with `backend="tilec"`, one with stock
Inductor. Each copy is wrapped for data-parallel training, separately per wrapper:

- `ddp`: `DistributedDataParallel` — Dynamo's DDP optimizer splits the compiled graph at the
  gradient buckets' boundaries, so tilec compiles each piece;
- `fsdp2`: `fully_shard` on each decoder layer and on the model — parameters sharded across ranks,
  gathered before each layer's forward and backward, gradients reduce-scattered.

Then `--steps` training steps (forward, loss, backward, AdamW), tilec's and stock's alternating;
each rank trains on its own tokens (seeded by the rank), the same tokens for both copies. Per
step: each side's loss (the mean over ranks) and wall time (the slowest rank's). On the GPU the
model is bf16 (`fsdp2`: fp32 parameters, bf16 compute, fp32 gradient reduction through FSDP2's
mixed-precision policy) over NCCL; on the CPU (`--device cpu`: gloo, size `tiny`, fp32) tilec's
kernels run in Triton's interpreter and the rest in Inductor's C++ code, with every kernel tilec
can take taken (the chooser's rules are GPU measurements).

Checked, and written to `--out` by rank 0 (`distributed.md`, `distributed.jsonl`):

- losses: every step's tilec loss within tolerance of stock's (relative: 1e-4 in fp32, 2e-2 in
  bf16, where two stock runs of one model differ by that much);
- ranks agree: tilec's report (each kernel: taken or not, emitter, plan, reason) is the same on
  every rank — the kernels and plans a rank takes must not depend on that rank's timing noise
  (docs/hook.md: autotuning under torch.distributed takes rank 0's choices).

`--autotune`: tilec's autotuner decides each kernel instead of the chooser's rules; under
torch.distributed every rank takes rank 0's choice (`autotune.agree`), so the ranks' reports stay
identical whatever each rank's own timings.

The command exits 1 when either check fails.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

WRAPS = ("ddp", "fsdp2")
TOLERANCE = {"fp32": 1e-4, "bf16": 2e-2}


def _report_lines() -> list[str]:
    """tilec's choices in this process, one line per kernel in compile order: taken or not, the
    emitter and pipeline, or the kind of reason (a decline's timings, which differ from rank to
    rank, are left out: the choice must not)."""
    import tilec

    return [
        f"{r.kernel}: {r.emitter} {r.pipeline}" if r.taken else f"{r.kernel}: stock ({str(r.reason).split(':')[0]})"
        for r in tilec.report()
    ]


def _wrap(model: Any, wrap: str, device: str, size: str) -> Any:
    import torch

    if wrap == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        ids = [torch.cuda.current_device()] if device == "cuda" else None
        cap = 25.0  # DDP's default
        if size == "tiny":
            # the tiny model (about 0.5 MB) fits one bucket: small buckets make Dynamo's DDP optimizer
            # split its graph, as it splits a real model's. DDP and the optimizer both size the first
            # bucket by this constant (1 MiB), which may not exceed the others.
            import torch.distributed as dist

            cap = 0.03
            dist._DEFAULT_FIRST_BUCKET_BYTES = int(cap * 2**20)  # type: ignore[attr-defined]
        return DistributedDataParallel(model, device_ids=ids, bucket_cap_mb=cap)
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    kwargs: dict[str, Any] = {}
    if device == "cuda":
        kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, **kwargs)
    fully_shard(model, **kwargs)
    return model


def run_wrap(wrap: str, size: str, steps: int, device: str, log: Any) -> dict[str, Any]:
    import models
    import torch
    import torch.distributed as dist

    import tilec

    rank, world = dist.get_rank(), dist.get_world_size()
    batch, seq = models.SIZES[size]
    dtype_name = "fp32" if device == "cpu" else "bf16"  # what the model computes in
    # the parameters: FSDP2 on the GPU keeps them fp32 and computes in bf16 (its mixed precision)
    dtype = torch.float32 if dtype_name == "fp32" or wrap == "fsdp2" else torch.bfloat16
    base = models.build("llama", size)  # seeded: the same weights on every rank
    gen = torch.Generator().manual_seed(1000 + rank)
    tokens = [torch.randint(0, base.config.vocab_size, (batch, seq), generator=gen).to(device) for _ in range(steps)]
    torch._dynamo.reset()
    tilec.reset_report()
    sides = ("tilec", "stock")
    wrapped = {s: _wrap(copy.deepcopy(base).to(device, dtype), wrap, device, size) for s in sides}
    del base
    compiled = {
        "tilec": torch.compile(models.entry(f"tilec_{wrap}"), backend="tilec", dynamic=False),
        "stock": torch.compile(models.entry(f"stock_{wrap}"), dynamic=False),
    }
    opts = {s: torch.optim.AdamW(wrapped[s].parameters(), lr=1e-4) for s in sides}
    losses: dict[str, list[float]] = {s: [] for s in sides}
    times: dict[str, list[float]] = {s: [] for s in sides}

    def step(side: str, ids: Any) -> None:
        if device == "cuda":
            torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        wrapped[side].train()
        loss = compiled[side](wrapped[side], ids, ids).loss
        loss.backward()
        opts[side].step()
        opts[side].zero_grad(set_to_none=True)
        value = loss.detach().float().reshape(1)
        if device == "cuda":
            torch.cuda.synchronize()
        elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64, device=value.device)
        dist.all_reduce(value)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        losses[side].append(float(value) / world)
        times[side].append(float(elapsed) * 1e3)

    for i, ids in enumerate(tokens):
        # ABBA: whichever side runs first in a pair is favoured in neither
        for side in sides if i % 2 == 0 else sides[::-1]:
            step(side, ids)
    device_ms: dict[str, Any] = {s: None for s in sides}
    if device == "cuda":
        # each side's computation on this GPU per step: its kernels' durations, the collectives'
        # (which include waiting for the other ranks) left out
        for side in sides:
            device_ms[side] = models.device_ms(functools.partial(step, side, tokens[-1]), skip="nccl")
        for side in sides:  # the profiled steps are no measurement of wall time
            del losses[side][steps:], times[side][steps:]
    reports: list[Any] = [None] * world
    dist.all_gather_object(reports, _report_lines())
    same = all(r == reports[0] for r in reports)
    tol = TOLERANCE[dtype_name]
    worst = max(abs(t - s) / max(abs(s), 1e-12) for t, s in zip(losses["tilec"], losses["stock"]))
    records = tilec.report()
    timed = slice(2, None) if steps > 4 else slice(0, None)  # the first steps compile
    row = {
        "wrap": wrap,
        "size": size,
        "device": device,
        "world": world,
        "dtype": dtype_name,
        "steps": steps,
        "loss_tilec": losses["tilec"],
        "loss_stock": losses["stock"],
        "max_relative_loss_difference": worst,
        "tolerance": tol,
        "losses_agree": worst <= tol,
        "reports_identical": same,
        "taken": sum(r.taken for r in records),
        "kernels": len(records),
        "graphs": len({r.graph for r in records}),
        "report": reports[0],
        "tilec_ms": statistics.median(times["tilec"][timed]),
        "stock_ms": statistics.median(times["stock"][timed]),
        "tilec_step_ms": times["tilec"],
        "stock_step_ms": times["stock"],
        "tilec_spread_ms": [min(times["tilec"][timed]), max(times["tilec"][timed])],
        "stock_spread_ms": [min(times["stock"][timed]), max(times["stock"][timed])],
        "tilec_device_ms": device_ms["tilec"],
        "stock_device_ms": device_ms["stock"],
    }
    row["speedup"] = row["stock_ms"] / row["tilec_ms"]
    if rank == 0:
        timing = (
            f"; step {row['tilec_ms']:.1f} ms tilec, {row['stock_ms']:.1f} ms stock; "
            f"device {row['tilec_device_ms']} / {row['stock_device_ms']} ms"
            if device == "cuda"
            else ""
        )
        log(
            f"{wrap:5s} {size} {device} x{world}: taken {row['taken']}/{row['kernels']} in {row['graphs']} graphs "
            f"on rank 0, reports {'identical' if same else 'DIFFER'} across ranks; loss difference {worst:.2e} "
            f"(tolerance {tol:g}){timing}"
        )
        if not same:
            for r, lines in enumerate(reports):
                log(f"  rank {r}: {lines}")
    torch._dynamo.reset()
    return row


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def markdown(rows: list[dict[str, Any]], env: dict[str, str]) -> str:
    lines = [
        "# tilec bench --distributed",
        "",
        ", ".join(f"{k} {v}" for k, v in env.items()),
        "",
        "Llama built from its config, data-parallel training on every rank, tilec's and stock's steps "
        "alternating; the loss is the mean over ranks, a step's time the slowest rank's (median over "
        "the steps after the first two, which compile; none on the CPU, where tilec's kernels run in "
        "Triton's interpreter), its spread the minimum and maximum of those steps. Device ms: rank 0's "
        "kernels per step, the collectives left out (their time includes waiting for the other rank), "
        "from 3 more profiled steps per side. Taken: rank 0's kernels, in its graphs (DDP's split at its buckets).",
        "",
        "| wrap | size | ranks | dtype | steps | stock/tilec | tilec ms | stock ms | tilec spread | stock spread | "
        "tilec device ms | stock device ms | first loss tilec / stock | "
        "last loss tilec / stock | max loss difference | losses agree | taken | reports identical |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        # on the CPU tilec's kernels run in Triton's interpreter: its times are no measurement
        timed = r["device"] == "cuda"
        speed = (
            f"{r['speedup']:.3f} | {r['tilec_ms']:.2f} | {r['stock_ms']:.2f} | "
            f"{r['tilec_spread_ms'][0]:.2f}-{r['tilec_spread_ms'][1]:.2f} | "
            f"{r['stock_spread_ms'][0]:.2f}-{r['stock_spread_ms'][1]:.2f} | "
            f"{_ms(r['tilec_device_ms'])} | {_ms(r['stock_device_ms'])}"
            if timed
            else "— | — | — | — | — | — | —"
        )
        lines.append(
            f"| {r['wrap']} | {r['size']} | {r['world']} | {r['dtype']} | {r['steps']} | {speed} | "
            f"{r['loss_tilec'][0]:.6f} / {r['loss_stock'][0]:.6f} | "
            f"{r['loss_tilec'][-1]:.6f} / {r['loss_stock'][-1]:.6f} | {r['max_relative_loss_difference']:.2e} | "
            f"{'yes' if r['losses_agree'] else 'NO'} | {r['taken']}/{r['kernels']} in {r['graphs']} graphs | "
            f"{'yes' if r['reports_identical'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def main(
    out: Path, wraps: list[str], size: str, steps: int, device: str, backend: str | None = None, autotune: bool = False
) -> int:
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before Triton is first imported
    import torch
    import torch.distributed as dist
    import triton

    import tilec
    from tilec.runtime import interpreter_active

    if "RANK" not in os.environ:
        print("tilec bench --distributed runs under torchrun: torchrun --nproc-per-node 2 -m tilec.cli bench ...")
        return 2
    if device == "cpu" and not interpreter_active():
        raise RuntimeError("--device cpu needs Triton's interpreter: set TRITON_INTERPRET=1 before Python starts")
    if device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend or ("nccl" if device == "cuda" else "gloo"))
    env = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "CPU",
        "backend": dist.get_backend(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "tilec": "autotune (rank 0's choices)" if autotune else "measured rules",
    }
    rows = []
    tilec.uninstall()  # the backend applies tilec to its own graphs; the stock copy stays stock
    # every rank compiles every graph itself (no graph from Inductor's or AOT autograd's caches,
    # which another rank may have just written): each rank's choices are its own, and comparable
    no_caches = (
        torch._inductor.config.patch(fx_graph_cache=False),
        torch._functorch.config.patch(enable_autograd_cache=False),
    )
    try:
        settings = {"decline": device != "cpu" and tilec.config.decline, "autotune": autotune or tilec.config.autotune}
        with tilec.config.patch(**settings), no_caches[0], no_caches[1]:
            for wrap in wraps:
                rows.append(run_wrap(wrap, size, steps, device, lambda line: print(line, flush=True)))
    finally:
        dist.destroy_process_group()
    if int(os.environ["RANK"]) == 0:
        out.mkdir(parents=True, exist_ok=True)
        with (out / "distributed.jsonl").open("w") as f:
            for r in rows:
                f.write(json.dumps({**r, "meta": env}) + "\n")
        text = markdown(rows, env)
        (out / "distributed.md").write_text(text)
        print(text)
    failed = [r["wrap"] for r in rows if not (r["losses_agree"] and r["reports_identical"])]
    if failed:
        print(f"tilec bench --distributed: losses or reports disagree in: {', '.join(failed)}")
        return 1
    return 0
