"""tilec: a tile-IR compiler for memory-bound kernels inside PyTorch Inductor.

    import tilec
    tilec.install()                      # torch.compile then runs tilec's kernels where it can
                                         # (or, for one model: torch.compile(model, backend="tilec"))
    tilec.report()                       # one record per kernel of each graph tilec applied to

The hook's API is loaded on first use: `import tilec` (and `tilec opt`) never imports torch.
"""

from __future__ import annotations

from typing import Any

from tilec import config

__version__ = "0.1.0"

# name -> the module of tilec.inductor that defines it
_LAZY = {
    "install": "tilec.inductor.install",
    "uninstall": "tilec.inductor.install",
    "installed": "tilec.inductor.install",
    "is_installed": "tilec.inductor.install",
    "report": "tilec.inductor.report",
    "reset_report": "tilec.inductor.report",
    "KernelRecord": "tilec.inductor.report",
    "backend": "tilec.inductor.backend",
}

__all__ = [
    "KernelRecord",
    "__version__",
    "backend",
    "config",
    "install",
    "installed",
    "report",
    "reset_report",
    "uninstall",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tilec' has no attribute {name!r}")
    import importlib

    attr = "tilec_backend" if name == "backend" else name
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
