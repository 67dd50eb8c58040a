"""Building a taken kernel: the configured pipelines run on copies of the logical kernel, one per
emitter, and each variant is emitted. A `KernelBuild` is everything the wrapper bookkeeping
(`tilec.inductor.wrapper`) writes, decided before Inductor's state changes.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tilec import config as cfg
from tilec.inductor.report import SignatureKey

# the IR kernel's name until the wrapper names it (replaced in the emitted source)
PLACEHOLDER = "tilec_kernel_name_placeholder"


@dataclass
class Emitted:
    """One variant of a taken kernel: its source (named PLACEHOLDER) and launch arguments."""

    kind: str  # "gluon" or "triton"
    pipeline: str
    source: str
    order: list[int]  # run() argument index per parameter of the emitted launch()
    remarks: tuple[str, ...] = ()  # why passes of the pipeline left the kernel (or parts) as it was
    constexprs: dict[str, int] = field(default_factory=dict)  # the planned kernel's (a banded one's RSPLIT)


@dataclass(frozen=True)
class Declined:
    """A kernel stock Inductor keeps: why, with what tilec knew of it — its signature where it was
    lowered, and the autotuner's timings (candidate, median device ms, fastest first) where it
    timed them."""

    reason: str
    signature: SignatureKey | None = None
    timings: tuple[tuple[str, float], ...] = ()
    traced: tuple[int, int] | None = None  # (rows, row length) timed at, where a size is symbolic


@dataclass
class KernelBuild:
    """A taken kernel: its variants and launch details, everything `commit` writes."""

    lowered: Any  # tilec.frontend.Lowered
    primary: Emitted
    fallback: Emitted | None = None
    tma: list[tuple[int, tuple[int, ...], int]] = field(default_factory=list)
    device: str = "cuda"
    # rows of symbolic length with plans of their own for shorter rows: (the run() argument that is
    # the row length, the lengths that bound `shorter`'s variants, ascending): a row shorter than
    # the i-th length runs `shorter[i]` (the first that fits), a longer one the primary
    split: tuple[int, tuple[int, ...]] | None = None
    shorter: list[Emitted] = field(default_factory=list)
    stem: str = "triton"  # the kernel's name, less the wrapper's counter
    tuning: str | None = None  # the autotuner's timings, when it chose
    # the chooser's signature of the kernel (policy.signature_key), and the autotuner's timings
    # (candidate, median device ms), fastest first, when it chose
    signature: SignatureKey | None = None
    timings: tuple[tuple[str, float], ...] = ()
    traced: tuple[int, int] | None = None  # (rows, row length) timed at, where a size is symbolic

    def declined(self, reason: str) -> Declined:
        """Why stock Inductor keeps the kernel after all, with what was known of it."""
        return Declined(reason, self.signature, self.timings, self.traced)

    @property
    def emitter(self) -> str:
        return self.primary.kind

    @property
    def pipeline(self) -> str:
        return self.primary.pipeline

    @property
    def remarks(self) -> tuple[str, ...]:
        return self.primary.remarks


def through_pipeline(text: str, pipeline: str) -> tuple[Any, tuple[str, ...]]:
    """The kernel after the pipeline, and the passes' remarks (without the kernel's name: the
    wrapper names it)."""
    from tilec.ir import parse
    from tilec.passes import Remark, run_pipeline

    module = parse(text, "<tilec.inductor>")
    remarks: list[Remark] = []
    run_pipeline(module, pipeline, remarks=remarks)
    (kernel,) = module.kernels
    return kernel, tuple(f"{r.pass_name}: {r.message}" for r in remarks)


def launch_order(kernel: Any, names: list[str], what: str) -> list[int]:
    from tilec.ir.types import TensorDescType

    order = []
    for p in kernel.params:
        if isinstance(p.type, TensorDescType):
            continue
        if p.name_hint not in names:
            raise RuntimeError(f"the {what} kernel has a parameter %{p.name_hint} the wrapper does not pass")
        order.append(names.index(p.name_hint))
    return order


def _tma_operands(kernel: Any, names: list[str]) -> list[tuple[int, tuple[int, ...], int]]:
    from tilec.ir.types import TensorDescType

    out = []
    for p, attrs in zip(kernel.params, kernel.param_attrs):
        if not isinstance(p.type, TensorDescType):
            continue
        strides = tuple(int(s) for s in attrs["strides"])  # static: only kernels of static shapes get TMA operands
        out.append((names.index(attrs["source"]), strides, p.type.dtype.bytes))
    return out


def build(
    lowered: Any, emitter: str, device: str, plan: str = "", shorter: Sequence[tuple[str, int]] = ()
) -> KernelBuild:
    """Runs the pipelines on copies of the logical kernel and emits each variant. `plan`: options
    set on the primary emitter's plan pass (the chooser's or the autotuner's plan variant).
    `shorter`: (plan options, length) pairs, lengths ascending, for a Triton kernel over rows of
    symbolic length: each a variant of the Triton pipeline with those options, launched on rows
    shorter than its length and no shorter than the pair's before it (`KernelBuild.split`). A
    banded kernel (`lowered.column_sums`: a norm's backward with its weights' gradients) built for
    Gluon runs the banded Gluon pipeline (`tilec.config.banded_gluon_pipeline`), or with `plan` its
    cluster form's options (`is_cluster_plan`) the banded cluster pipeline with them, and has no
    Triton variant: the two would plan different bands, and the wrapper sizes the workspace by one."""
    from tilec.ir import print_kernel

    text = print_kernel(lowered.kernel)
    names = [a.param for a in lowered.args] + list(lowered.sizes)
    if any(a.buffer == "?" for a in lowered.args):
        raise RuntimeError("a kernel parameter has no buffer in the wrapper")
    banded = bool(getattr(lowered, "column_sums", None))
    gluon_name = cfg.banded_gluon_pipeline() if banded else cfg.pipelines["gluon"]
    key = (text, tuple(names), emitter, plan, cfg.pipelines["triton"], gluon_name, cfg.banded_cluster_pipeline())
    built = _built.get(key)
    if built is None:
        pipeline_of = functools.partial(pipeline_for, emitter=emitter, plan=plan, banded=banded)
        if banded and emitter == "gluon":
            gluon, tma = _emitted_gluon(text, names, pipeline_of("gluon"))
            built = (gluon, None, tma)
        else:
            built = _built_pair(text, names, emitter, pipeline_of)
        if len(_built) >= 256:
            _built.clear()
        _built[key] = built
    primary, fallback, tma = built
    if not shorter:
        return KernelBuild(lowered, primary, fallback, list(tma), device)
    if emitter != "triton" or "rnumel" not in names:
        raise RuntimeError("plans for shorter rows need a Triton kernel over rows of symbolic length")
    lengths = tuple(length for _, length in shorter)
    if any(a >= b for a, b in itertools.pairwise(lengths)) or lengths[0] < 1:
        raise ValueError(f"the shorter rows' lengths must ascend from 1 or more: {list(lengths)}")
    variants = [build(lowered, "triton", device, options).primary for options, _ in shorter]
    return KernelBuild(lowered, primary, None, [], device, split=(names.index("rnumel"), lengths), shorter=variants)


def pipeline_for(kind: str, emitter: str, plan: str, banded: bool) -> str:
    """The pipeline `build` runs for the `kind` variant ("gluon", "triton") of a kernel whose primary
    emitter is `emitter`: the plan options apply to the primary emitter's only; a banded kernel's
    Gluon variant runs the banded Gluon pipeline, or with a cluster plan (`is_cluster_plan`) the
    banded cluster pipeline with it set on `band-cluster`."""
    from tilec.passes.pipelines import with_options, with_plan

    if banded and kind == "gluon" and kind == emitter and is_cluster_plan(plan):
        return with_options(cfg.banded_cluster_pipeline(), "band-cluster", plan)
    if kind == "gluon":
        pipeline = cfg.banded_gluon_pipeline() if banded else cfg.pipelines["gluon"]
    else:
        pipeline = cfg.pipelines[kind]
    return with_plan(pipeline, plan) if plan and kind == emitter else pipeline


def is_cluster_plan(plan: str) -> bool:
    """Whether a banded kernel's Gluon plan options are its cluster form's (`band-cluster`'s options,
    "ctas=2,chunk=2048,warps=8"): `build` then runs the banded cluster pipeline
    (`tilec.config.banded_cluster_pipeline`) with them, not the ring's."""
    return any(kv.split("=", 1)[0].strip() == "ctas" for kv in plan.split(","))


def _bound(kernel: Any) -> dict[str, int]:
    """The planned kernel's bound constexprs (a banded one's RSPLIT: the wrapper's split size)."""
    return {k: v for k, v in kernel.constexprs.items() if v is not None}


def _emitted_gluon(
    text: str, names: list[str], pipeline: str
) -> tuple[Emitted, list[tuple[int, tuple[int, ...], int]]]:
    """The Gluon variant of the logical kernel `text` through `pipeline`, and its TMA operands."""
    from tilec.emit.gluon import emit_gluon

    gk, remarks = through_pipeline(text, pipeline)
    if any(r.startswith("band-cluster:") for r in remarks):
        # the cluster form not made: the kernel is still logical, nothing to emit (its remark is a
        # ring remark: the hook never runs the build)
        return Emitted("gluon", pipeline, "", [], remarks, {}), []
    emitted = Emitted("gluon", pipeline, emit_gluon(gk).source, launch_order(gk, names, "Gluon"), remarks, _bound(gk))
    return emitted, _tma_operands(gk, names)


def _built_pair(
    text: str, names: list[str], emitter: str, pipeline_of: Any
) -> tuple[Emitted, Emitted | None, list[tuple[int, tuple[int, ...], int]]]:
    """The primary emitter's variant, and for Gluon the Triton one to fall back to."""
    from tilec.emit.triton import emit_triton

    triton_pipeline = pipeline_of("triton")
    tk, t_remarks = through_pipeline(text, triton_pipeline)
    triton = Emitted(
        "triton",
        triton_pipeline,
        emit_triton(tk).source,
        launch_order(tk, names, "Triton"),
        t_remarks,
        _bound(tk),
    )
    if emitter == "triton":
        return triton, None, []
    gluon, tma = _emitted_gluon(text, names, pipeline_of("gluon"))
    return gluon, triton, tma


# logical kernel text and settings -> what build made of it: a model's repeated layers (the same
# norm in every block) run the pipelines once
_built: dict[tuple[Any, ...], tuple[Emitted, Emitted | None, list[tuple[int, tuple[int, ...], int]]]] = {}
