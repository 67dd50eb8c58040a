"""Compiling a function with the hook and checking it against eager PyTorch (used by `tilec demo`
and the tests).

    result = check_function(fn, inputs)            # torch.compile(fn, backend="tilec") vs fn in fp32
    result.ok, result.error, result.records

The reference is the function run eagerly on the inputs upcast to float32; each output is compared
with `tilec.testing.assert_close` at the output's dtype (docs/numerics.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilec.inductor.report import KernelRecord, report

# The example models (examples/*.py) the demo and the tests compile, as `tilec dump` names them.
EXAMPLES = (
    "rmsnorm",
    "layernorm",
    "layernorm:inference",
    "softmax",
    "log_softmax",
    "attention_softmax",
    "gelu_mlp",
)


def examples_dir() -> Path | None:
    """The repository's examples/ folder, when tilec runs from a checkout."""
    d = Path(__file__).resolve().parents[2] / "examples"
    return d if d.is_dir() else None


@dataclass
class CheckResult:
    name: str
    ok: bool
    message: str  # "" when ok, else why not
    records: list[KernelRecord] = field(default_factory=list)  # what the hook did for this compile

    @property
    def taken(self) -> list[KernelRecord]:
        return [r for r in self.records if r.taken]

    def line(self) -> str:
        verdict = "equal to eager" if self.ok else f"DIFFERS: {self.message}"
        took = ", ".join(f"{r.kernel} ({r.emitter})" for r in self.taken) or "nothing"
        rest = [f"{r.kernel} ({r.reason})" for r in self.records if not r.taken]
        tail = f"; not taken: {', '.join(rest)}" if rest else ""
        return f"{self.name}: {verdict}; tilec took {took}{tail}"


def _upcast(x: Any) -> Any:
    import torch

    return x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x


def check_function(
    fn: Callable[..., Any], inputs: Sequence[Any], name: str = "", backend: Any = "tilec"
) -> CheckResult:
    """Compiles `fn` (fullgraph, static shapes) with the hook, runs it on `inputs` and compares every
    output with eager `fn` on the inputs upcast to float32."""
    import torch

    from tilec.testing import assert_close

    before = len(report())
    compiled = torch.compile(fn, backend=backend, dynamic=False, fullgraph=True)
    out = compiled(*inputs)
    ref = fn(*[_upcast(x) for x in inputs])
    records = report()[before:]
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    try:
        for i, (o, r) in enumerate(zip(outs, refs)):
            assert_close(o, r, o.dtype, what=f"{name or fn.__name__} output {i}")
    except AssertionError as e:
        return CheckResult(name or fn.__name__, False, str(e), records)
    return CheckResult(name or fn.__name__, True, "", records)


def example_inputs(spec: str, shape: tuple[int, ...], dtype: Any, device: str, seed: int = 0) -> tuple[Any, list[Any]]:
    """The function of `examples/<spec>` and random inputs for it on `device`."""
    import torch

    from tilec.frontend.entry import load_entry

    root = examples_dir()
    if root is None:
        raise FileNotFoundError("the examples/ folder of the tilec repository is not next to this installation")
    file, _, func = spec.partition(":")
    entry = load_entry(str(root / f"{file}.py") + (f":{func}" if func else ""))
    torch.manual_seed(seed)
    with torch.device(device):
        if entry.example_inputs is None:
            inputs = [torch.randn(shape, dtype=dtype)]
        else:
            made = entry.example_inputs(shape, dtype)
            inputs = [made] if isinstance(made, torch.Tensor) else list(made)
    return entry.func, inputs


def check_example(spec: str, shape: tuple[int, ...], dtype: Any, device: str) -> CheckResult:
    fn, inputs = example_inputs(spec, shape, dtype, device)
    return check_function(fn, inputs, name=spec)
