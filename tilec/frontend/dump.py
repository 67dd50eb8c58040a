"""`tilec dump`: the kernels Inductor builds for a function or Module of a Python file, as tile IR.

    tilec dump --ir examples/rmsnorm.py                  # forward(), one 4096x8192 bf16 input
    tilec dump --ir model.py:layer --shape 64,1000 --dtype fp32 -p canonicalize
    tilec dump model.py:Block                            # a torch.nn.Module subclass

Without `:NAME`, the file's entry is its one candidate (a public function defined in the file,
other than `example_inputs` and `main`, or a `torch.nn.Module` subclass defined in it), or the
function `forward` among several. A Module subclass is built with no arguments, in eval mode and
the `--dtype`, and traced for inference: its parameters and buffers become Inductor graph
inputs, as under `torch.compile(module)`.

The file's `example_inputs(shape, dtype)`, if it has one, returns the call's arguments (so weights
get their own shapes); otherwise it gets one tensor of `--shape`. Inputs, and Modules, are made on
the meta device: tracing needs only shapes, strides and dtypes, so 4096x8192 costs no memory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_SHAPE = (4096, 8192)
DEFAULT_DTYPE = "bf16"
DEFAULT_FUNC = "forward"  # chosen among several candidates (examples/layernorm.py: forward, inference)
NOT_CANDIDATES = ("example_inputs", "main")


class DumpError(Exception):
    """A user error: the file, the function, the options."""


@dataclass
class Target:
    path: Path
    func_name: str
    func: Callable[..., Any]  # the function, or the Module subclass (`is_module`)
    example_inputs: Callable[..., Any] | None
    is_module: bool = False


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
    """`PATH.py[:NAME]` → the function or Module subclass to trace and the file's `example_inputs`,
    if any. Without NAME: the file's one candidate, or `forward` among several."""
    import torch

    path_text, name = spec, None
    head, sep, tail = spec.rpartition(":")
    if sep and tail.isidentifier():
        path_text, name = head, tail
    path = Path(path_text)
    if not path.is_file():
        raise DumpError(f"{path_text}: no such file")
    module_name = f"tilec_dump_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise DumpError(f"{path}: cannot load it as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    # it stays registered: Dynamo imports the module of a function it inlines (a Module's forward)
    sys.modules[module_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except SyntaxError as e:
        sys.modules.pop(module_name, None)
        raise DumpError(f"{path}:{e.lineno}:{e.offset or 0}: syntax error: {e.msg}") from None
    except Exception as e:
        sys.modules.pop(module_name, None)
        raise DumpError(f"{path}: importing it failed: {type(e).__name__}: {e}") from None
    candidates = _candidates(module, module_name)
    if name is None:
        name = _choose(path, candidates)
    func = getattr(module, name, None)
    is_module = isinstance(func, type) and issubclass(func, torch.nn.Module)
    if func is None or not callable(func) or (isinstance(func, type) and not is_module):
        raise DumpError(f"{path} defines no function or torch.nn.Module subclass '{name}'{_listing(candidates)}")
    example_inputs = getattr(module, "example_inputs", None)
    return Target(path, name, func, example_inputs if callable(example_inputs) else None, is_module)


def _candidates(module: Any, module_name: str) -> dict[str, str]:
    """What the file itself defines that `tilec dump` could trace: name → "function" or "module"."""
    import torch

    out: dict[str, str] = {}
    for name, value in vars(module).items():
        if name.startswith("_") or name in NOT_CANDIDATES or getattr(value, "__module__", None) != module_name:
            continue  # imported, private, or not an entry
        if inspect.isfunction(value):
            out[name] = "function"
        elif isinstance(value, type) and issubclass(value, torch.nn.Module):
            out[name] = "module"
    return out


def _choose(path: Path, candidates: dict[str, str]) -> str:
    if len(candidates) == 1:
        return next(iter(candidates))
    if candidates.get(DEFAULT_FUNC) == "function":
        return DEFAULT_FUNC
    if not candidates:
        raise DumpError(
            f"{path} defines nothing to trace: no public function (other than {' and '.join(NOT_CANDIDATES)}) "
            f"and no torch.nn.Module subclass of its own; define one, or name one as {path}:NAME"
        )
    raise DumpError(
        f"{path} defines {len(candidates)} things to trace{_listing(candidates)}; "
        f"name one as {path}:NAME, or call the function to trace '{DEFAULT_FUNC}'"
    )


def _listing(candidates: dict[str, str]) -> str:
    return ": " + ", ".join(f"{kind} {name}" for name, kind in candidates.items()) if candidates else ""


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


def make_call(target: Target, inputs: Sequence[Any], dtype: Any) -> tuple[Callable[..., Any], list[Any]]:
    """What `capture` traces and its arguments. A function gets `inputs`. A Module subclass is
    built on the meta device and called through `torch.func.functional_call`, its parameters and
    buffers passed after `inputs`: FakeTensors on the capture's device, graph inputs of the same
    shapes and dtypes as `torch.compile(module)` makes them (meta weights would not meet a cuda
    input, and real ones of 4096x8192 would cost memory for nothing)."""
    import torch

    if not target.is_module:
        return target.func, list(inputs)
    try:
        with torch.device("meta"):
            module = target.func().eval().to(dtype)
    except Exception as e:
        raise DumpError(
            f"{target.path}: {target.func_name}() failed: {type(e).__name__}: {e} "
            "(a Module subclass is built with no arguments)"
        ) from None
    # no gradients: traced for inference, as functions are (their inputs do not require grad)
    state = {k: v.detach() for k, v in (*module.named_parameters(), *module.named_buffers())}
    names, count = list(state), len(inputs)

    def call(*args: Any) -> Any:
        return torch.func.functional_call(module, dict(zip(names, args[count:])), args[:count])

    return call, [*inputs, *state.values()]


@contextlib.contextmanager
def _torch_logs_quiet() -> Iterator[None]:
    """torch logs a failed trace's error and traceback on stderr itself; `tilec dump` reports it as
    one located line (`--traceback` keeps torch's logs)."""
    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


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
    fn, args = make_call(target, make_inputs(target, tuple(shape), torch_dtype), torch_dtype)
    try:
        with contextlib.nullcontext() if strict else _torch_logs_quiet():
            kernels = capture(fn, args, device=device, dynamic=dynamic, strict=strict)
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
