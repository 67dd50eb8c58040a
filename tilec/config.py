"""Settings of tilec's Inductor hook (`tilec.install()`, `torch.compile(backend="tilec")`).

    import tilec
    tilec.config.emitter = "triton"          # "auto" | "gluon" | "triton"
    with tilec.config.patch(strict=True):    # for a block
        ...

Read at compile time, for every kernel; `fingerprint()` is part of Inductor's FX-graph cache key
(through the hook's custom pass), so changing a setting never reuses a kernel compiled under
another. The environment sets the initial values: `TILEC_EMITTER`, `TILEC_DISABLE=1`,
`TILEC_STRICT=1`, `TILEC_NO_DECLINE=1`, `TILEC_AUTOTUNE=1`. This module imports nothing heavy (`tilec opt` never imports torch).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

EMITTERS = ("auto", "gluon", "triton")

_TRUE = ("1", "true", "yes", "on")


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


# Which emitter prints the kernels tilec takes: "gluon" (Hopper and newer: TMA, shared memory),
# "triton" (plain Triton, any GPU and the CPU interpreter), or "auto": per kernel, the one the
# chooser's measurements favour (tilec.passes.chooser), Gluon on sm_90+ where none applies, else Triton.
emitter: str = os.environ.get("TILEC_EMITTER", "auto").strip().lower() or "auto"
# False: the hook stays registered but every kernel goes to stock Inductor.
enabled: bool = not _flag("TILEC_DISABLE")
# True: any tilec failure (lowering, passes, emitting, loading) raises instead of falling back.
strict: bool = _flag("TILEC_STRICT")
# True: on a CUDA GPU, kernels where stock Inductor measured faster than tilec stay on stock code
# (tilec.passes.chooser: its rules and their measurements; tilec.report() gives the reason).
# False: tilec takes every kernel it can. `TILEC_NO_DECLINE=1` starts it False.
decline: bool = not _flag("TILEC_NO_DECLINE")
# True: on a CUDA GPU, the first compile of a kernel times tilec's candidates (each emitter it may
# use) and stock Inductor's kernel on random inputs and keeps the fastest, remembered on disk
# (tilec/inductor/autotune.py); the chooser's rules are not consulted. Also on whenever Inductor's
# `max_autotune` is (torch.compile(mode="max-autotune...")). `TILEC_AUTOTUNE=1` starts it True.
autotune: bool = _flag("TILEC_AUTOTUNE")
# The pass pipeline run before each emitter (names from tilec.passes, or pipeline strings), and
# before the Gluon emitter for a banded kernel (a norm's backward fused with its weights'
# gradients): "gluon-banded", "gluon-ring" where the key is absent.
# A banded kernel's cluster form (its rows split across a cluster: a candidate or rule whose plan
# options are `band-cluster`'s, "ctas=2,..."): "gluon-banded-cluster", "gluon-cluster-ring" where
# the key is absent.
BANDED_GLUON = "gluon-ring"
BANDED_CLUSTER = "gluon-cluster-ring"
pipelines: dict[str, str] = {
    "gluon": "gluon-default",
    "triton": "triton-default",
    "gluon-banded": BANDED_GLUON,
    "gluon-banded-cluster": BANDED_CLUSTER,
}

_FIELDS = ("emitter", "enabled", "strict", "decline", "autotune", "pipelines")


class ConfigError(ValueError):
    """A setting has a value tilec does not know."""


def check() -> None:
    """Raises ConfigError if a setting is invalid."""
    if emitter not in EMITTERS:
        raise ConfigError(f"tilec.config.emitter must be one of {', '.join(EMITTERS)}; got {emitter!r}")
    for name in ("gluon", "triton", *(k for k in ("gluon-banded", "gluon-banded-cluster") if k in pipelines)):
        if not isinstance(pipelines.get(name), str):
            raise ConfigError(
                f"tilec.config.pipelines[{name!r}] must be a pipeline string; got {pipelines.get(name)!r}"
            )


def banded_gluon_pipeline() -> str:
    """The pipeline before the Gluon emitter for a banded kernel (`pipelines["gluon-banded"]`)."""
    return pipelines.get("gluon-banded", BANDED_GLUON)


def banded_cluster_pipeline() -> str:
    """The pipeline before the Gluon emitter for a banded kernel's cluster form
    (`pipelines["gluon-banded-cluster"]`)."""
    return pipelines.get("gluon-banded-cluster", BANDED_CLUSTER)


def fingerprint() -> str:
    """Everything that changes the code the hook generates: tilec's version, a digest of its
    source (an editable install changes without a new version) and the settings."""
    from tilec import __version__

    pipes = ";".join(f"{k}={pipelines[k]}" for k in sorted(pipelines))
    return (
        f"tilec={__version__} source={source_digest()} enabled={bool(enabled)} emitter={emitter} strict={bool(strict)} "
        f"decline={bool(decline)} autotune={bool(autotune)} pipelines={pipes}"
    )


@functools.cache
def source_digest() -> str:
    """A digest of tilec's installed source: its Python modules and grammar files (read once)."""
    from tilec.ir.parser import grammar_path

    root = Path(__file__).parent
    digest = hashlib.sha256()
    for path in [*sorted(root.rglob("*.py")), grammar_path()]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def snapshot() -> dict[str, Any]:
    """The current settings (copies)."""
    g = globals()
    return {k: dict(g[k]) if isinstance(g[k], dict) else g[k] for k in _FIELDS}


@contextlib.contextmanager
def patch(**changes: Any) -> Iterator[None]:
    """Sets some settings for the duration of a `with` block, then restores all of them."""
    unknown = sorted(set(changes) - set(_FIELDS))
    if unknown:
        raise ConfigError(f"unknown tilec.config settings: {', '.join(unknown)}")
    saved = snapshot()
    g = globals()
    try:
        g.update(changes)
        yield
    finally:
        g.update(saved)
