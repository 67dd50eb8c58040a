"""The Dynamo backend: `torch.compile(model, backend="tilec")`.

Registered under the name "tilec" by the `torch_dynamo_backends` entry point in pyproject.toml, so
it works right after `pip install`, without importing tilec first. It installs the hook (for CUDA;
idempotent) and compiles with Inductor, passing `mode` and `options` on as `backend="inductor"` would.
"""

from __future__ import annotations

from typing import Any

__all__ = ["tilec_backend"]


def tilec_backend(gm: Any, example_inputs: Any, mode: str | None = None, options: dict[str, Any] | None = None) -> Any:
    """A Dynamo backend: Inductor, with tilec's hook installed."""
    import torch

    from tilec.inductor.install import install

    install()
    inductor = torch._TorchCompileInductorWrapper(mode, options, None)  # type: ignore[attr-defined]
    return inductor(gm, example_inputs)
