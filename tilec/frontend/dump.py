"""`tilec dump`: the kernels Inductor builds for a function in a Python file, as tile IR.

    tilec dump --ir examples/rmsnorm.py                  # forward(), one 4096x8192 bf16 input
    tilec dump --ir model.py:layer --shape 64,1000 --dtype fp32 -p canonicalize

The file's `example_inputs(shape, dtype)`, if it has one, returns FUNC's arguments (so weights
get their own shapes); otherwise FUNC gets one tensor of `--shape`. Inputs are made on the meta
device: tracing needs only shapes, strides and dtypes, so 4096x8192 costs no memory.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_SHAPE = (4096, 8192)
DEFAULT_DTYPE = "bf16"
DEFAULT_FUNC = "forward"


class DumpError(Exception):
    """A user error: the file, the function, the options."""


@dataclass
class Target:
    path: Path
    func_name: str
    func: Callable[..., Any]
    example_inputs: Callable[..., Any] | None


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(p) for p in text.replace("x", ",").split(",") if p.strip())
    except ValueError:
        raise DumpError(f"--shape: expected sizes like 4096,8192, got '{text}'") from None
    if not shape or any(d < 1 for d in shape):
        raise DumpError(f"--shape: expected positive sizes like 4096,8192, got '{text}'")
    return shape


def parse_dtype(text: str) -> Any:
    from tilec.frontend.dtypes import DTYPE_ALIASES

    dtype = DTYPE_ALIASES.get(text.lower())
    if dtype is None:
        raise DumpError(f"--dtype: expected one of bf16, fp16, fp32, got '{text}'")
    return dtype


def load_target(spec: str) -> Target:
    """`PATH.py[:FUNC]` → the function and the file's `example_inputs`, if any."""
    path_text, func_name = spec, DEFAULT_FUNC
    head, sep, tail = spec.rpartition(":")
    if sep and tail.isidentifier():
        path_text, func_name = head, tail
    path = Path(path_text)
    if not path.is_file():
        raise DumpError(f"{path_text}: no such file")
    module_name = f"tilec_dump_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise DumpError(f"{path}: cannot load it as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except SyntaxError as e:
        raise DumpError(f"{path}:{e.lineno}:{e.offset or 0}: syntax error: {e.msg}") from None
    except Exception as e:
        raise DumpError(f"{path}: importing it failed: {type(e).__name__}: {e}") from None
    finally:
        sys.modules.pop(module_name, None)
    func = getattr(module, func_name, None)
    if not callable(func):
        raise DumpError(f"{path} defines no function '{func_name}'")
    example_inputs = getattr(module, "example_inputs", None)
    return Target(path, func_name, func, example_inputs if callable(example_inputs) else None)


def make_inputs(target: Target, shape: tuple[int, ...], dtype: Any) -> list[Any]:
    import torch

    with torch.device("meta"):
        if target.example_inputs is None:
            return [torch.randn(shape, dtype=dtype)]
        try:
            inputs = target.example_inputs(shape, dtype)
        except Exception as e:
            raise DumpError(f"{target.path}: example_inputs{(shape, dtype)} failed: {type(e).__name__}: {e}") from None
    if isinstance(inputs, torch.Tensor):
        return [inputs]
    if not isinstance(inputs, (list, tuple)):
        raise DumpError(f"{target.path}: example_inputs must return a tensor or a list or tuple of arguments")
    return list(inputs)


def dump(
    spec: str,
    shape: Sequence[int] = DEFAULT_SHAPE,
    dtype: str = DEFAULT_DTYPE,
    device: str = "cuda",
    ir: bool = False,
    pipeline: str = "",
    source: bool = False,
    dynamic: bool = False,
    strict: bool = False,
    emit: str | None = None,
    check: str | None = None,
) -> tuple[str, int]:
    """The text `tilec dump` prints, and how many taken kernels failed to compile (with `check`)."""
    import torch

    from tilec.frontend.capture import CaptureError, capture

    target = load_target(spec)
    torch_dtype = parse_dtype(dtype)
    inputs = make_inputs(target, tuple(shape), torch_dtype)
    try:
        kernels = capture(target.func, inputs, device=device, dynamic=dynamic, strict=strict)
    except CaptureError as e:
        raise DumpError(f"{target.path}: tracing {target.func_name} failed: {e}") from None
    where = device if device == "cpu" or torch.cuda.is_available() else "cuda (fake H100)"
    shape_text = ",".join(str(d) for d in shape)
    header = (
        f"// {target.path.name}:{target.func_name}, shape {shape_text}, {dtype}, {where}: "
        f"{len(kernels)} Triton kernel{'s' if len(kernels) != 1 else ''}\n"
    )
    if emit and not pipeline:
        pipeline = f"{emit}-default"
        header += f"// -p {pipeline} (the {emit} emitter's default pipeline)\n"
    text, failures = format_kernels(kernels, ir=ir, pipeline=pipeline, source=source, emit=emit, check=check)
    return header + text, failures


def format_kernels(
    kernels: Sequence[Any],
    ir: bool = True,
    pipeline: str = "",
    source: bool = False,
    emit: str | None = None,
    check: str | None = None,
) -> tuple[str, int]:
    """Per captured kernel: Inductor's name, the summary line, then (with `ir`) its tile IR and
    (with `emit`) the emitted source; with `check`, the Gluon source's ahead-of-time compile.
    Returns the text and the number of kernels that failed to compile."""
    from tilec.frontend.result import Lowered
    from tilec.ir import Module, print_module, verify

    lines: list[str] = []
    failures = 0
    for k in kernels:
        lines.append("")
        lines.append(f"// {k.name}")
        lines.append(f"// {k.summary()}")
        if source and k.source:
            lines.extend(f"//   {line}" if line else "//" for line in k.source.strip("\n").splitlines())
        if not isinstance(k.result, Lowered) or not (ir or emit):
            continue
        module = Module([k.result.kernel])
        verify(module)
        if pipeline:
            from tilec.passes import run_pipeline

            run_pipeline(module, pipeline)
        if ir:
            lines.append(print_module(module).rstrip("\n"))
        if emit == "triton":
            from tilec.emit.triton import emit_triton

            lines.append(emit_triton(module).source.rstrip("\n"))
        elif emit == "gluon":
            from tilec.emit.gluon import emit_gluon

            emitted = emit_gluon(module)
            lines.append(emitted.source.rstrip("\n"))
            if check:
                from tilec.emit.check import check_compile

                report = check_compile(emitted, check)
                lines.append(f"# {k.name}: {report.summary()}")
                failures += 0 if report.ok else 1
    return "\n".join(lines) + "\n", failures
