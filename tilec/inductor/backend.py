"""The Dynamo backend: `torch.compile(model, backend="tilec")`.

Registered under the name "tilec" by the `torch_dynamo_backends` entry point in pyproject.toml, so
it works right after `pip install`, without importing tilec first. It registers the hook (for
CUDA, and for the CPU where Triton's interpreter is active; idempotent) and compiles with Inductor,
with `mode` and `options` applied as `backend="inductor"` applies them, and with tilec applied to
this compilation's graphs only: Inductor's compile of each graph, the forward and the backward
AOT autograd compiles at the first backward call, runs inside `registry.scope()`. Another
`torch.compile` with the default backend stays stock, unless `tilec.install()` applies tilec to
every graph.

AOT autograd decomposes the graph with Inductor's table, in which this backend replaces the
decompositions a GPU's table measured faster (`tilec.passes.chooser.GRAPH_REWRITES`,
`tilec.inductor.decompositions`), over the tokens measured: on the device the graph's inputs are
on, every one at any size where `tilec.config.decline` is off (the CPU: only then), none where
tilec is disabled.
"""

from __future__ import annotations

from typing import Any

__all__ = ["tilec_backend"]


def tilec_backend(gm: Any, example_inputs: Any, mode: str | None = None, options: dict[str, Any] | None = None) -> Any:
    """A Dynamo backend: Inductor, with tilec applied to the graphs it compiles."""
    import torch
    from torch._inductor import compile_fx

    from tilec.inductor import decompositions
    from tilec.inductor.registry import register, scope
    from tilec.runtime import interpreter_active

    register(cpu=interpreter_active())
    # the wrapper backend="inductor" uses turns mode and options into Inductor settings
    settings = torch._TorchCompileInductorWrapper(mode, options, None).config  # type: ignore[attr-defined]
    # the AOT-autograd cache key is computed here, outside the inner compiles; the forward and
    # backward graphs are traced and decomposed here too
    with scope(), decompositions.replaced(rewrites(example_inputs)):
        return compile_fx.compile_fx(gm, example_inputs, inner_compile=_inner_compile, config_patches=settings or None)


def rewrites(example_inputs: Any) -> dict[str, tuple[int, int] | None]:
    """The decompositions this backend replaces for a graph of these inputs (`decompositions.REWRITES`'
    names), each with the range of tokens it takes (None: any): all, at any size, where
    `tilec.config.decline` is off; else those the table of the CUDA device they are on measured
    faster, over the range measured (none on the CPU); none where tilec is disabled."""
    import torch

    from tilec import config as cfg
    from tilec.inductor import decompositions
    from tilec.passes.chooser import graph_rewrites

    if not cfg.enabled:
        return {}
    devices = {t.device for t in example_inputs if isinstance(t, torch.Tensor)}
    if not cfg.decline and devices:
        return dict.fromkeys(decompositions.REWRITES)
    cuda = [d for d in devices if d.type == "cuda"]
    if not cuda:
        return {}
    return {r.name: r.tokens for r in graph_rewrites(torch.cuda.get_device_name(cuda[0]))}


def _inner_compile(*args: Any, **kwargs: Any) -> Any:
    """Inductor's compile of one graph, with tilec applied: also the backward graph, which AOT
    autograd compiles at the first backward call, after `tilec_backend` has returned."""
    from torch._inductor import compile_fx

    from tilec.inductor.registry import scope

    with scope():
        return compile_fx.compile_fx_inner(*args, **kwargs)
