"""The scripts under bench/, loaded as modules by the tests that check them (bench/ is no package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load(name: str) -> ModuleType:
    """bench/<name>.py, imported once per process (as `bench_<name>`)."""
    key = f"bench_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


def meta_kernel(op: str, rows: int, cols: int) -> Any:
    """The one kernel Inductor makes of bench/bench.py's forward `op` (rmsnorm, layernorm,
    softmax, and the residual-fused add_rmsnorm, add_layernorm) over bf16 rows of `cols`, captured
    on meta tensors for the fake H100 (rows this long are gigabytes): its `Lowered` result."""
    import torch

    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture

    weights = {"rmsnorm": 1, "layernorm": 2, "softmax": 0}[op.removeprefix("add_")]
    rows_in = 2 if op.startswith("add_") else 1
    inputs = [torch.empty(rows, cols, dtype=torch.bfloat16, device="meta") for _ in range(rows_in)]
    inputs += [torch.empty(cols, dtype=torch.bfloat16, device="meta") for _ in range(weights)]
    (k,) = capture(load("bench").FUNCTIONS[op], inputs, strict=True)
    assert isinstance(k.result, Lowered), k.result
    return k.result
