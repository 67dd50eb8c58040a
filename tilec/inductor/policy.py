"""Deciding whether tilec takes a kernel, changing nothing in Inductor: the graph-wide reasons to
leave every kernel to stock Inductor, the emitter this device can run, and per kernel the
chooser's measured rules or the autotuner's timings (`attempt`).
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

from tilec import config as cfg
from tilec.inductor.build import PLACEHOLDER, Declined, KernelBuild, build
from tilec.inductor.report import SignatureKey
from tilec.inductor.wrapper import name_stem
from tilec.ir.errors import error_line
from tilec.ir.target import Target, target_for

log = logging.getLogger("tilec")

# Why a kernel stays with Inductor before tilec looks at it (tests assert these).
DISABLED = "tilec is disabled (tilec.config.enabled is False, or TILEC_DISABLE=1)"
CPP_WRAPPER = (
    "Inductor's C++ wrapper (cpp_wrapper, AOTInductor) calls kernels itself: tilec's launcher needs the Python wrapper"
)
FX_WRAPPER = "Inductor's FX wrapper (fx_wrapper) is not supported"
AUTOTUNE_AT_COMPILE_TIME = "triton.autotune_at_compile_time replays kernel launches tilec does not describe"
DEBUG_OPTIONS = (
    "an Inductor debugging option is on (nan_asserts, generate_intermediate_hooks, cpp.enable_kernel_profile)"
)
NO_INTERPRETER = "on the CPU tilec runs Triton in its interpreter, which is not active (set TRITON_INTERPRET=1 before Python starts, or call tilec.install(cpu=True) before anything imports triton)"
GLUON_ON_CPU = (
    "the Gluon emitter needs a Hopper GPU; on the CPU tilec emits Triton (tilec.config.emitter = 'auto' or 'triton')"
)
INTERNAL_ERROR = "tilec failed"


def signature_key(kernel: Any, rows: int | None = None) -> SignatureKey:
    """The signature the chooser's rules read, of a logical-form kernel (`rows`: a banded kernel's,
    whose IR loops over a band of them)."""
    from tilec.passes.chooser import signature

    sig = signature(kernel)
    return (sig.family, sig.row_inputs, sig.elem_bytes, rows if rows is not None else sig.rows, sig.n, sig.column_sums)


def timings(tuned: Any) -> tuple[tuple[str, float], ...]:
    """The autotuner's timings, fastest first (none where it did not run)."""
    return tuple(sorted(tuned.ms.items(), key=lambda kv: kv[1])) if tuned is not None else ()


def traced_at(lowered: Any, tuned: Any) -> tuple[int, int] | None:
    """The rows and row length the autotuner timed a kernel with symbolic sizes at (the graph's
    trace), or None: static sizes, no timing, or sizes not read from the trace."""
    if tuned is None or (lowered.numel is not None and lowered.rnumel is not None):
        return None
    from tilec.frontend.lower import banded_sizes

    try:
        return banded_sizes(lowered)
    except KeyError:  # a symbolic size named otherwise than xnumel / rnumel
        return None


def _declined(reason: str, key: SignatureKey, lowered: Any, tuned: Any) -> Declined:
    """A decline after lowering, with what the report records of the kernel and its timings."""
    return Declined(reason, key, timings(tuned), traced_at(lowered, tuned))


def _with_facts(built: KernelBuild, key: SignatureKey, lowered: Any, tuned: Any) -> KernelBuild:
    """`built` with what the report records of the kernel and the autotuner's timings."""
    built.signature, built.timings, built.traced = key, timings(tuned), traced_at(lowered, tuned)
    built.tuning = tuned.describe() if tuned is not None else None
    return built


def decline_reason(device: Any) -> str | None:
    """Why no kernel of this graph can be taken, or None."""
    from torch._inductor import config as ic
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen
    from torch._inductor.virtualized import V

    if not cfg.enabled:
        return DISABLED
    try:
        cfg.check()
    except cfg.ConfigError as e:
        return str(e)
    if V.graph.cpp_wrapper or getattr(V.graph, "aot_mode", False):
        return CPP_WRAPPER
    if getattr(ic, "fx_wrapper", False) or not isinstance(V.graph.wrapper_code, PythonWrapperCodegen):
        return FX_WRAPPER
    if getattr(ic.triton, "autotune_at_compile_time", False):
        return AUTOTUNE_AT_COMPILE_TIME
    if ic.nan_asserts or getattr(ic, "generate_intermediate_hooks", False) or ic.cpp.enable_kernel_profile:
        return DEBUG_OPTIONS
    if device.type == "cpu":
        from tilec.runtime import interpreter_active

        if not interpreter_active():
            return NO_INTERPRETER
        if cfg.emitter == "gluon":
            return GLUON_ON_CPU
    return None


@functools.cache
def _gluon_available() -> bool:
    try:
        import triton.experimental.gluon  # noqa: F401

        from tilec.emit.gluon_api import gluon_api

        gluon_api()
        return True
    except Exception:
        return False


def device_target(device: Any) -> Target:
    """The `Target` of a CUDA device: its name and capability, its own SM count and shared memory
    (an unreadable device: sm_00, which nothing builds Gluon for)."""
    import torch

    try:
        p = torch.cuda.get_device_properties(device)
    except Exception:
        return target_for((0, 0))
    facts: dict[str, Any] = {"sm_count": p.multi_processor_count}
    smem = getattr(p, "shared_memory_per_block_optin", 0)
    if smem:
        facts["smem_per_block"] = smem
    return target_for((p.major, p.minor), p.name, **facts)


def choose_emitter(device: Any, target: Target | None) -> tuple[str | None, str | None]:
    """(emitter, None), or (None, why not) when the configured emitter cannot run on `device`
    (a CUDA one described by `target`)."""
    if device.type != "cuda":
        return "triton", None
    if cfg.emitter == "triton":
        return "triton", None
    assert target is not None
    hopper = target.gluon and _gluon_available()
    if cfg.emitter == "gluon" and not hopper:
        return None, f"the Gluon emitter needs sm_90 or newer and Triton's Gluon; this GPU is {target.arch}"
    return ("gluon" if hopper else "triton"), None


def attempt(scheduling: Any, features: Any, device: Any) -> KernelBuild | Declined:
    """The kernel built, or why stock Inductor keeps it. Changes nothing in Inductor."""
    from tilec.frontend import Unsupported, lower

    reason = decline_reason(device)
    if reason is not None:
        return Declined(reason)
    target = device_target(device) if device.type == "cuda" else None
    emitter, reason = choose_emitter(device, target)
    if emitter is None:
        assert reason is not None
        return Declined(reason)
    key: SignatureKey | None = None
    try:
        lowered = lower(features, scheduling, name=PLACEHOLDER, strict=cfg.strict)
        if isinstance(lowered, Unsupported):
            return Declined(lowered.reason)
        key = signature_key(lowered.kernel)
        plan_options, tuned = "", None
        shorter: tuple[tuple[str, int], ...] = ()
        if device.type == "cuda":  # the chooser's rules and the autotuner's timings are GPU measurements
            from tilec.inductor import autotune
            from tilec.passes.plan import reads_columns, reduction_numel
            from tilec.passes.softmax_groups import folds_statistics

            assert target is not None
            hopper, forced = emitter == "gluon", (cfg.emitter if cfg.emitter != "auto" else None)
            rows = lowered.is_reduction and not reads_columns(lowered.kernel)
            n = reduction_numel(lowered.kernel)
            cands = autotune.candidates(hopper, forced, cfg.decline, rows, target, n, folds_statistics(lowered.kernel))
            # a kernel with symbolic sizes is timed at the sizes its graph was traced with; on a
            # GPU without measured rules of its own, every kernel is timed
            if len(cands) > 1 and autotune.wanted(device, target):

                def plan_for(candidate: str) -> KernelBuild:
                    candidate_emitter, options = autotune.split(candidate)
                    return build(lowered, candidate_emitter, device.type, options)

                tuned = autotune.tune(scheduling, features, lowered, device, cands, plan_for)
            decided = _decided(tuned, lowered.kernel, hopper, forced, target)
            if isinstance(decided, str):
                return _declined(decided, key, lowered, tuned)
            emitter, plan_options, shorter = decided
        built = build(lowered, emitter, device.type, plan_options, shorter)
        built.stem = name_stem(lowered, list(features.node_schedule))
        return _with_facts(built, key, lowered, tuned)
    except Exception as e:
        if cfg.strict:
            raise
        return Declined(_failed(e), key)


def _decided(
    tuned: Any, kernel: Any, hopper: bool, forced: str | None, target: Target
) -> tuple[str, str, tuple[tuple[str, int], ...]] | str:
    """(emitter, plan options, the shorter rows' plans and the lengths each serves below): what
    the autotuner timed fastest (`tuned`, where it ran), else what the GPU's table says; or the
    reason stock Inductor keeps the kernel."""
    from tilec.inductor import autotune
    from tilec.passes.chooser import Decline, choose

    if tuned is not None:
        if tuned.winner == autotune.STOCK:
            return f"stock Inductor timed fastest when autotuned: {tuned.describe()}"
        return (*autotune.split(tuned.winner), ())
    choice = choose(kernel, hopper=hopper, forced=forced, decline=cfg.decline, gpu=target.name)
    if isinstance(choice, Decline):
        return choice.reason
    return choice.emitter, choice.plan, choice.shorter  # (build: Triton's alone)


def _failed(e: Exception) -> str:
    """The reason a kernel that failed in tilec falls back to stock Inductor (logged)."""
    log.warning("tilec: a kernel falls back to Inductor: %s", error_line(e), exc_info=log.isEnabledFor(logging.DEBUG))
    return f"{INTERNAL_ERROR}: {error_line(e)}"


def band_options(target: Target) -> str:
    """A banded kernel's plan options on `target`: its band loop's stages sized for the bytes in
    flight the target needs (`plan.band_in_flight`); none where that is the plan's default (the
    H100's, and a GPU whose bandwidth is not described)."""
    from tilec.passes.plan import IN_FLIGHT, band_in_flight

    in_flight = band_in_flight(target)
    return f"in_flight={in_flight}" if in_flight != IN_FLIGHT else ""


def fuses_mix_order(device: Any, rows: int, row: int, elem_bytes: int, sums: int, row_inputs: int) -> bool:
    """Whether tilec has a norm's backward of `rows` rows of `row` elements (`sums` column sums,
    `row_inputs` whole rows read) fused into one mix-order kernel where stock's size checks would
    not (`tilec.frontend.fusion`): tilec takes kernels of this graph, and the GPU's table has a
    measured range that covers the shape (`chooser.MIX_ORDER_FUSIONS`): one measured with the
    kernel's Gluon ring form only where the Gluon emitter can run, and only such a range where the
    emitter is forced to Gluon (the banded Triton kernel measured in the others does not run)."""
    from tilec.passes.chooser import mix_order_fusion

    if device.type != "cuda" or decline_reason(device) is not None:
        return False
    target = device_target(device)
    gluon = choose_emitter(device, target)[0] == "gluon"
    fusion = mix_order_fusion(target.name, rows, row, elem_bytes, sums, row_inputs, gluon)
    return fusion is not None and (fusion.ring or cfg.emitter != "gluon")


MIX_ORDER_GLUON = "a mix-order reduction's Gluon form (band-ring) needs static sizes (tilec.config.emitter is 'gluon')"


NO_RING = "the Gluon form chosen for a mix-order reduction (band-ring) could not be made"


class NoRingError(RuntimeError):
    """A banded kernel built for Gluon without its ring form (band-ring's remarks say why): the
    autotuner records the candidate as failed; chosen by the rules, the banded Triton kernel runs
    instead; with the Gluon emitter forced, the kernel stays stock's."""


def ring_remarks(built: KernelBuild) -> tuple[str, ...]:
    """Why a banded kernel built for Gluon is not in its ring form (band-ring's remarks) or its
    cluster form (band-cluster's), or () where it is: only those forms of a banded kernel were
    measured in Gluon."""
    if built.emitter != "gluon":
        return ()
    return tuple(r for r in built.remarks if r.startswith(("band-ring:", "band-cluster:")))


def attempt_mix_order(scheduling: Any, node: Any, device: Any) -> KernelBuild | Declined:
    """A mix-order reduction (Inductor's fused norm backward, `node`) built as a banded kernel —
    Triton, or on Hopper with static sizes Gluon in its ring form (`tilec.config.banded_gluon_pipeline`)
    — or the reason stock Inductor keeps it. Lowers copies of the node's column reductions:
    changes nothing in Inductor. The build's planned `RSPLIT` is the band the wrapper must use.
    The autotuner's timings decide where it runs (`autotune.wanted`), else the GPU's table."""
    from tilec.frontend import Unsupported, lower
    from tilec.frontend.lower import banded_sizes, mix_order_features

    reason = decline_reason(device)
    if reason is not None:
        return Declined(reason)
    target = device_target(device)
    emitter, reason = choose_emitter(device, target)
    if emitter is None:
        assert reason is not None
        return Declined(reason)
    key: SignatureKey | None = None
    try:
        features = mix_order_features(scheduling, node)
        lowered = lower(features, scheduling, name=PLACEHOLDER, strict=cfg.strict, mix_order=True)
        if isinstance(lowered, Unsupported):
            return Declined(lowered.reason)
        key = signature_key(lowered.kernel, int(lowered.numel) if lowered.numel is not None else None)
        from tilec.inductor import autotune

        # the Gluon form: Hopper, static sizes
        ring = emitter == "gluon" and lowered.numel is not None and lowered.rnumel is not None
        if cfg.emitter == "gluon" and not ring:
            return Declined(MIX_ORDER_GLUON, key)
        # a symbolic row count: banded for the rows it was traced with
        traced_rows = f"rows={banded_sizes(lowered)[0]}" if lowered.numel is None else ""
        sized = band_options(target)

        def built_as(candidate: str) -> KernelBuild:
            kind, options = autotune.split(candidate)
            if kind == "triton":
                options = ",".join(o for o in (options, traced_rows, sized) if o)
            made = build(lowered, kind, device.type, options)
            if ring_remarks(made):
                raise NoRingError("; ".join(ring_remarks(made)))
            return made

        row = int(lowered.rnumel) if lowered.rnumel is not None else None
        cands = autotune.mix_order_candidates(cfg.decline, target, gluon=ring, row=row)
        tuned = None
        if len(cands) > 1 and autotune.wanted(device, target):
            tuned = autotune.tune(scheduling, features, lowered, device, cands, built_as, banded=True)
        forced = cfg.emitter if cfg.emitter != "auto" else None
        decided = _decided(tuned, lowered.kernel, ring, forced, target)
        if isinstance(decided, str):
            return _declined(decided, key, lowered, tuned)
        kind, options, _ = decided  # (no mix-order rule has plans for shorter rows)
        try:
            made = built_as(f"{kind}{{{options}}}" if options else kind)
        except NoRingError as e:
            if cfg.emitter == "gluon":  # a decline, not a failure: strict does not raise
                return _declined(f"{NO_RING}: {e}", key, lowered, tuned)
            made = built_as("triton")  # the rules' Gluon form cannot hold this kernel's rows: the banded kernel
        built = _with_facts(made, key, lowered, tuned)
        # named as stock names it: a persistent reduction (the whole row one block)
        built.stem = re.sub(r"^triton_red_", "triton_per_", name_stem(lowered, list(features.node_schedule)))
        return built
    except Exception as e:
        if cfg.strict:
            raise
        return Declined(_failed(e), key)
