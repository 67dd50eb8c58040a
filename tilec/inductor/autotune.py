"""The autotuner: a kernel's candidates timed on the GPU the first time it is compiled, the fastest kept.

    cands = autotune.candidates(hopper=True, forced=None, decline=True)
    if autotune.wanted(device):
        tuned = autotune.tune(scheduling, features, lowered, device, cands, plan_for)
        tuned.winner            # a candidate: "gluon", "gluon{xblock=1,num_warps=4}", "triton" or "stock"

The candidates are what tilec could run for the kernel — each emitter it may use (Gluon on
sm_90+, Triton), with its heuristic plan and with the plan variants in `PLAN_VARIANTS` — and stock
Inductor's own kernel for the same nodes, unless `tilec.config.decline`
is off. Each is timed on random inputs of the kernel's static shapes, strides and dtypes (a
kernel with symbolic sizes: the sizes the graph was traced with, Dynamo's hints) with
`tilec.runtime.timing.device_ms` (cold L2, the host kept out): tilec's candidates through the
launcher the wrapper would call, stock's through Inductor's benchmark module for the nodes
(`generate_kernel_code_from_nodes(..., benchmark_kernel=True)`, the module Inductor's own fusion
benchmarking loads; its run-time autotuning of launch configurations happens on its first call).

tilec's fastest candidate runs if it beats stock by `MARGIN`; otherwise stock runs (a tie is not a
reason to replace stock code). The choice is kept on disk, in `tilec.runtime.loader.cache_dir()
/ "autotune"`, keyed by the kernel (its logical IR: operations, shapes, dtypes), its arguments'
layouts, the candidates, the pipelines, the GPU and the versions of torch, Triton and tilec: a
second compile of the same kernel — the same layer again, another process, another day — times
nothing. Remove the folder to time again.

Under torch.distributed with several ranks every rank takes rank 0's choice (`agree`: one
broadcast per kernel tuned), so that no rank's timing noise gives it other kernels than the rest.

Autotuning runs when `tilec.config.autotune` is set or Inductor's `max_autotune` is (as
torch.compile(mode="max-autotune-no-cudagraphs") sets it), on CUDA only; it replaces the chooser's
rules (tilec.passes.chooser), which stand for it when it is off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tilec import config as cfg
from tilec.ir.errors import error_line
from tilec.ir.target import H100, Target
from tilec.passes.chooser import has_table
from tilec.passes.plan import Plan

if TYPE_CHECKING:
    from tilec.inductor.build import KernelBuild

log = logging.getLogger("tilec")

__all__ = [
    "MARGIN",
    "PLAN_VARIANTS",
    "STOCK",
    "Tuned",
    "candidates",
    "key",
    "long_row_variants",
    "pick",
    "random_args",
    "sized_variants",
    "split",
    "traced",
    "tune",
    "wanted",
]

STOCK = "stock"
# tilec's candidate replaces stock's kernel only if it takes at most (1 - MARGIN) of stock's time
MARGIN = 0.01
REPS = 20  # timed calls per candidate (after 3 untimed)
_memo: dict[str, Tuned] = {}  # key -> choice, this process


@dataclass(frozen=True)
class Tuned:
    winner: str  # a candidate: "gluon", "gluon{xblock=1,num_warps=4}", "triton", ... or STOCK
    ms: dict[str, float] = field(default_factory=dict)  # median device ms per candidate timed
    errors: dict[str, str] = field(default_factory=dict)  # candidates that could not be timed, and why
    cached: bool = False  # the choice came from the disk cache
    rank0: bool = False  # rank 0's choice (and timings), where this rank's differed

    def describe(self) -> str:
        """'gluon 0.112 ms, triton 0.118 ms, stock 0.121 ms' (fastest first), with the failures."""
        parts = [f"{c} {ms:.4g} ms" for c, ms in sorted(self.ms.items(), key=lambda kv: kv[1])]
        parts += [f"{c} failed ({e})" for c, e in self.errors.items()]
        return ", ".join(parts) + (" (cached)" if self.cached else "") + (" (rank 0's choice)" if self.rank0 else "")


def wanted(device: Any, target: Target | None = None) -> bool:
    """Whether kernels compiled for `device` (a CUDA GPU described by `target`) are autotuned: when
    asked for (`tilec.config.autotune`, Inductor's `max_autotune`), and always on a GPU the
    chooser has no measured rules for."""
    if device.type != "cuda":
        return False
    from torch._inductor import config as ic

    return bool(cfg.autotune or ic.max_autotune) or (target is not None and not has_table(target.name))


# plan variants timed beside each emitter's heuristic plan (options of its plan pass) for row
# reductions: one row per program with 4 warps measured best for Gluon on rows of 4-8 KiB
# (tilec.passes.chooser's rules). A pointwise kernel has none: XBLOCK is its whole block there; nor
# has a column reduction (one column per program ran 4-15x slower than its plan on every weight
# gradient of bench/results/2026-11-25-columns).
PLAN_VARIANTS = {"gluon": ["xblock=1,num_warps=4"], "triton": []}
# rows (elements) longer than this get the long-row variants
LONG_ROW = 16384
# one row a program, in the chunks and warps that measured best for some op and length (the
# running sums carried as the chunk's tile: `accumulate`). H100, bf16, device time as % of a
# copy (bench/results/2026-11-25-long-rows), against the heuristic plan (16 warps, chunks of 8192):
# RMSNorm 8192x65536 99.8 against 70.9 (chunks of 8192, 32 warps); LayerNorm 8192x65536 84.0
# against 67.7 and softmax 4096x131072 88.6 against 67.9 (32768, 32 warps); softmax 8192x65536
# 95.4 against 74.8 (16384, 16 warps)
LONG_ROW_PLANS = [
    "xblock=1,chunk=8192,num_warps=32",
    "xblock=1,chunk=32768,num_warps=32",
    "xblock=1,chunk=16384,num_warps=16",
]


def sized_variants(target: Target | None) -> dict[str, list[str]]:
    """Plan variants sized for `target`'s bytes in flight: where each SM must keep more bytes
    requested than on the H100 (whose heuristic plans and rules were measured) to fill its memory
    (`Target.bytes_in_flight_per_sm`: 21.8 KB on the H200 against 15.2 KB), the rows per
    program grow by that ratio, rounded up to a power of two (`target_elems` of the plan pass).
    None where the target is the H100 or its memory is not described."""
    if target is None or not target.bytes_in_flight_per_sm:
        return {}
    ratio = target.bytes_in_flight_per_sm / H100.bytes_in_flight_per_sm
    if ratio <= 1.0:
        return {}
    scale = 1 << math.ceil(math.log2(ratio))
    option = f"target_elems={Plan.target_elems * scale}"
    return {"gluon": [option], "triton": [option]}


def long_row_variants(n: int | None) -> dict[str, list[str]]:
    """For rows longer than the Triton plan holds in one tile (16384 elements): one row a program
    in other chunks and warps (`LONG_ROW_PLANS`) than the heuristic plan's (16 warps, chunks of
    8192). Such a row is read twice, the second time mostly from L2. (For RMSNorm rows of 65536,
    Inductor's max-autotune picks the first shape for its own loop.)"""
    if n is None or n <= LONG_ROW:
        return {}
    return {"triton": list(LONG_ROW_PLANS)}


def candidates(
    hopper: bool,
    forced: str | None,
    decline: bool,
    reduction: bool = True,
    target: Target | None = None,
    n: int | None = None,
) -> list[str]:
    """The candidates for a kernel: each emitter tilec may use here with its heuristic plan and, for
    a row reduction (of `n` elements a row, where constant), its plan variants
    ("gluon{xblock=1,num_warps=4}"), those sized for the `target` GPU's bytes in flight and, for
    long rows, the whole row in registers; and stock unless decline is off."""
    emitters = [forced] if forced else (["gluon", "triton"] if hopper else ["triton"])
    variants: dict[str, list[str]] = {}
    if reduction:
        extra = [sized_variants(target), long_row_variants(n)]
        variants = {e: [*PLAN_VARIANTS.get(e, []), *(v for x in extra for v in x.get(e, []))] for e in emitters}
    out = [c for e in emitters for c in [e, *(f"{e}{{{v}}}" for v in variants.get(e, []))]]
    return out + ([STOCK] if decline else [])


def split(candidate: str) -> tuple[str, str]:
    """'gluon{xblock=1,num_warps=4}' -> ('gluon', 'xblock=1,num_warps=4'); 'triton' -> ('triton', '')."""
    emitter, _, plan = candidate.partition("{")
    return emitter, plan.removesuffix("}")


def _gpu() -> str:
    """The GPU being compiled for (the current device: `tune` makes it so)."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return f"{props.name} sm_{props.major}{props.minor} {props.multi_processor_count} SMs"


def key(lowered: Any, cands: list[str]) -> str:
    """The disk cache's key for a kernel and its candidates (see the module docstring)."""
    import torch
    import triton
    from torch._inductor import config as ic

    from tilec import __version__
    from tilec.ir import print_kernel

    layouts = [(a.param, a.dtype, a.access, a.shape, a.strides, a.offset) for a in lowered.args]
    parts = [
        print_kernel(lowered.kernel),
        repr(layouts),
        repr(traced(lowered)) if lowered.sizes else "",
        repr(cands),
        repr(sorted(cfg.pipelines.items())),
        _gpu(),
        f"torch={torch.__version__} triton={triton.__version__} tilec={__version__} margin={MARGIN}",
        f"max_autotune={ic.max_autotune} coordinate_descent_tuning={ic.coordinate_descent_tuning}",
    ]
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _path(k: str) -> Any:
    from tilec.runtime.loader import cache_dir

    d = cache_dir() / "autotune"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{k}.json"


def _load(k: str, cands: list[str]) -> Tuned | None:
    if k in _memo:
        return _memo[k]
    try:
        data = json.loads(_path(k).read_text())
        if data.get("winner") not in cands:
            return None
        return Tuned(data["winner"], {c: float(v) for c, v in data.get("ms", {}).items()}, {}, cached=True)
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _store(k: str, tuned: Tuned) -> None:
    from tilec.runtime.loader import write_atomic

    _memo[k] = Tuned(tuned.winner, tuned.ms, tuned.errors, cached=True)
    try:
        text = json.dumps({"winner": tuned.winner, "ms": tuned.ms, "errors": tuned.errors, "gpu": _gpu()})
        write_atomic(_path(k), text + "\n")
    except OSError as e:  # a read-only cache: the choice holds for this process
        log.debug("tilec: the autotuning cache is not writable: %s", e)


def random_args(lowered: Any, device: Any, layouts: dict[str, Any] | None = None) -> list[Any]:
    """A tensor per kernel argument with its static shape, strides, offset and dtype, random values
    (floats normal, integers 1..63, booleans either); a number for a value the wrapper passes by
    value. `layouts` (buffer -> (shape, strides, offset)) gives the layouts of a kernel with
    symbolic sizes, at the sizes it is timed for."""
    import torch

    from tilec.interp.dtypes import TORCH_DTYPES

    out: list[Any] = []
    for a in lowered.args:
        if a.access == "value":  # a number the wrapper passes by value (`buf.item()`)
            out.append(1.5 if TORCH_DTYPES[a.dtype].is_floating_point else 3)
            continue
        shape, strides, offset = (layouts or {}).get(a.buffer, (a.shape, a.strides, a.offset or 0))
        if shape is None or strides is None:
            raise ValueError(f"the layout of {a.buffer} is not static")
        dtype = TORCH_DTYPES[a.dtype]
        span = 0 if any(s == 0 for s in shape) else sum((s - 1) * st for s, st in zip(shape, strides)) + 1
        base = torch.empty(offset + span, dtype=dtype, device=device)
        if dtype.is_floating_point:
            base.normal_()
        elif dtype == torch.bool:
            base.copy_(torch.rand(base.shape, device=device) < 0.5)
        else:
            base.random_(1, 64)
        out.append(base.as_strided(shape, strides, offset))
    return out


def traced(lowered: Any) -> tuple[dict[str, Any], list[int]]:
    """A kernel with symbolic sizes at the sizes its graph was traced with: its buffers' layouts
    and its size arguments (inside Inductor's compile only)."""
    from tilec.frontend.lower import traced_layouts, traced_sizes

    return traced_layouts(lowered), traced_sizes(lowered)


def _time_plan(plan: KernelBuild, args: list[Any]) -> float:
    from tilec.runtime.launch import load_kernel
    from tilec.runtime.timing import device_ms

    fb = plan.fallback
    kernel = load_kernel(
        f"tilec_autotune_{plan.primary.kind}",
        plan.primary.source,
        plan.primary.kind,
        plan.primary.order,
        fallback=fb.source if fb else None,
        fallback_kind=fb.kind if fb else "triton",
        fallback_order=fb.order if fb else (),
        tma=plan.tma,
        device="cuda",
    )
    return device_ms(lambda: kernel.run(*args), reps=REPS)


def _time_stock(scheduling: Any, features: Any) -> float:
    from torch._inductor.codecache import PyCodeCache

    from tilec.runtime.timing import device_ms

    nodes = list(features.scheduler_nodes())
    src = scheduling.generate_kernel_code_from_nodes(nodes, benchmark_kernel=True)
    mod = PyCodeCache.load(src)
    args = mod.get_args()
    return device_ms(lambda: mod.call(args), reps=REPS)


def pick(ms: dict[str, float]) -> str:
    """The winner among timed candidates: tilec's fastest, unless stock is timed and tilec's fastest
    does not beat it by MARGIN."""
    tilec_ms = {c: t for c, t in ms.items() if c != STOCK}
    best = min(tilec_ms, key=lambda c: tilec_ms[c])
    if STOCK in ms and tilec_ms[best] > (1 - MARGIN) * ms[STOCK]:
        return STOCK
    return best


def tune(
    scheduling: Any, features: Any, lowered: Any, device: Any, cands: list[str], plan_for: Callable[[str], KernelBuild]
) -> Tuned | None:
    """The fastest candidate on `device` (from the disk cache, or timed now), or None where too few
    could be timed to choose (the caller falls back to the chooser's rules)."""
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    with torch.cuda.device(index):
        return agree(_tune(scheduling, features, lowered, torch.device("cuda", index), cands, plan_for))


def agree(tuned: Tuned | None) -> Tuned | None:
    """Every rank's choice is rank 0's, under torch.distributed with more than one rank: timings
    differ from rank to rank by noise, and ranks whose kernels differ compute different results
    (or, with a collective inside a graph, wait on each other forever). One broadcast per kernel
    tuned, whether this rank timed it or read its disk cache: every rank compiles the same graphs,
    in the same order, so every rank makes the same broadcasts."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return tuned
    box: list[Any] = [None if tuned is None else (tuned.winner, tuned.ms, tuned.errors)]
    dist.broadcast_object_list(box, src=0)
    if box[0] is None:
        return None  # rank 0 could not choose: the chooser's rules decide, on every rank alike
    winner, ms, errors = box[0]
    if tuned is not None and tuned.winner == winner:
        return tuned
    return Tuned(winner, ms, errors, rank0=True)


def _tune(
    scheduling: Any, features: Any, lowered: Any, device: Any, cands: list[str], plan_for: Callable[[str], KernelBuild]
) -> Tuned | None:
    k = key(lowered, cands)
    found = _load(k, cands)
    if found is not None:
        return found
    ms: dict[str, float] = {}
    errors: dict[str, str] = {}
    args: list[Any] | None = None
    for c in cands:
        try:
            if c == STOCK:
                ms[c] = _time_stock(scheduling, features)
            else:
                if args is None:
                    layouts, sizes = traced(lowered) if lowered.sizes else ({}, [])
                    args = [*random_args(lowered, device, layouts), *sizes]
                ms[c] = _time_plan(plan_for(c), args)
        except Exception as e:  # a candidate that fails to build, compile or run is not chosen
            if cfg.strict and c != STOCK:
                raise
            errors[c] = error_line(e, 200)
            log.debug("tilec: autotuning: %s failed", c, exc_info=True)
    del args
    if not any(c != STOCK for c in ms) or (STOCK in cands and STOCK not in ms):
        log.info("tilec: autotuning could not time enough candidates (%s); the chooser's rules decide", errors)
        return None
    tuned = Tuned(pick(ms), ms, errors)
    _store(k, tuned)
    return tuned
