"""The Inductor hook: torch.compile runs tilec's kernels where tilec takes them, stock Inductor elsewhere.

    import tilec
    tilec.install()                               # or torch.compile(model, backend="tilec")
    model = torch.compile(model)
    tilec.report()                                # what was taken, with which emitter, and why not

`docs/hook.md` describes the mechanism, the settings (`tilec.config`), the run-time guards and
what falls back when. Importing this package imports nothing from torch; installing does.
"""

from __future__ import annotations

from tilec.inductor.backend import tilec_backend
from tilec.inductor.install import install, installed, is_installed, uninstall
from tilec.inductor.report import KernelRecord, report, reset_report

__all__ = [
    "KernelRecord",
    "install",
    "installed",
    "is_installed",
    "report",
    "reset_report",
    "tilec_backend",
    "uninstall",
]
