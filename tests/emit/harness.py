"""Differential execution: one planned kernel run by tilec's interpreter and, emitted as Triton,
by Triton's interpreter (CPU) — and on a GPU, emitted as Triton and as Gluon."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tilec import interp
from tilec.emit.triton import emit_triton
from tilec.ir import Kernel, Module, parse, verify
from tilec.passes import run_pipeline
from tilec.runtime import load_source
from tilec.testing import assert_close


def planned(text: str, pipeline: str = "plan,canonicalize,cse,dce") -> Kernel:
    module: Module = parse(text, "test.tile")
    verify(module)
    run_pipeline(module, pipeline)
    return module.kernels[0]


def clone_all(args: Sequence[object]) -> list[object]:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def run_interp(kernel: Kernel, args: Sequence[object], **kw: object) -> list[object]:
    out = clone_all(args)
    interp.run(kernel, *out, **kw)  # type: ignore[arg-type]
    return out


def run_triton(kernel: Kernel, args: Sequence[object], num_sms: int = 4) -> list[object]:
    module = load_source(emit_triton(kernel).source, interpret=True)
    out = clone_all(args)
    module.launch(*out, num_sms=num_sms)
    return out


def assert_same_outputs(a: Sequence[object], b: Sequence[object], outputs: Sequence[int], what: str) -> None:
    for i in outputs:
        x, y = a[i], b[i]
        assert isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)
        assert_close(y, x, what=f"{what}: output {i}")
