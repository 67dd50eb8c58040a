"""The entry `tilec dump` and the example checks trace: a function or Module of a Python file.

    entry = load_entry("examples/rmsnorm.py")          # forward(), the file's one candidate
    entry = load_entry("model.py:Block")               # a torch.nn.Module subclass
    fn, args = make_call(entry, make_inputs(entry, (4096, 8192), torch.bfloat16), torch.bfloat16)

Without `:NAME`, the file's entry is its one candidate (a public function defined in the file,
other than `example_inputs` and `main`, or a `torch.nn.Module` subclass defined in it), or the
function `forward` among several. A Module subclass is built with no arguments, in eval mode and
the dtype, and traced for inference: its parameters and buffers become Inductor graph inputs, as
under `torch.compile(module)`.

The file's `example_inputs(shape, dtype)`, if it has one, returns the call's arguments (so weights
get their own shapes); otherwise it gets one tensor of the shape. Inputs, and Modules, are made on
the meta device: tracing needs only shapes, strides and dtypes, so 4096x8192 costs no memory.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_FUNC = "forward"  # chosen among several candidates (examples/layernorm.py: forward, inference)
NOT_CANDIDATES = ("example_inputs", "main")


class EntryError(Exception):
    """A user error: the file, the function, its inputs, the options."""


@dataclass
class Entry:
    path: Path
    func_name: str
    func: Callable[..., Any]  # the function, or the Module subclass (`is_module`)
    example_inputs: Callable[..., Any] | None
    is_module: bool = False


def load_entry(spec: str) -> Entry:
    """`PATH.py[:NAME]` → the function or Module subclass to trace and the file's `example_inputs`,
    if any. Without NAME: the file's one candidate, or `forward` among several."""
    import torch

    path_text, name = spec, None
    head, sep, tail = spec.rpartition(":")
    if sep and tail.isidentifier():
        path_text, name = head, tail
    path = Path(path_text)
    if not path.is_file():
        raise EntryError(f"{path_text}: no such file")
    module_name = f"tilec_dump_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise EntryError(f"{path}: cannot load it as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    # it stays registered: Dynamo imports the module of a function it inlines (a Module's forward)
    sys.modules[module_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except SyntaxError as e:
        sys.modules.pop(module_name, None)
        raise EntryError(f"{path}:{e.lineno}:{e.offset or 0}: syntax error: {e.msg}") from None
    except Exception as e:
        sys.modules.pop(module_name, None)
        raise EntryError(f"{path}: importing it failed: {type(e).__name__}: {e}") from None
    candidates = _candidates(module, module_name)
    if name is None:
        name = _choose(path, candidates)
    func = getattr(module, name, None)
    is_module = isinstance(func, type) and issubclass(func, torch.nn.Module)
    if func is None or not callable(func) or (isinstance(func, type) and not is_module):
        raise EntryError(f"{path} defines no function or torch.nn.Module subclass '{name}'{_listing(candidates)}")
    example_inputs = getattr(module, "example_inputs", None)
    return Entry(path, name, func, example_inputs if callable(example_inputs) else None, is_module)


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
        raise EntryError(
            f"{path} defines nothing to trace: no public function (other than {' and '.join(NOT_CANDIDATES)}) "
            f"and no torch.nn.Module subclass of its own; define one, or name one as {path}:NAME"
        )
    raise EntryError(
        f"{path} defines {len(candidates)} things to trace{_listing(candidates)}; "
        f"name one as {path}:NAME, or call the function to trace '{DEFAULT_FUNC}'"
    )


def _listing(candidates: dict[str, str]) -> str:
    return ": " + ", ".join(f"{kind} {name}" for name, kind in candidates.items()) if candidates else ""


def make_inputs(entry: Entry, shape: tuple[int, ...], dtype: Any) -> list[Any]:
    import torch

    with torch.device("meta"):
        if entry.example_inputs is None:
            return [torch.randn(shape, dtype=dtype)]
        try:
            inputs = entry.example_inputs(shape, dtype)
        except Exception as e:
            raise EntryError(f"{entry.path}: example_inputs{(shape, dtype)} failed: {type(e).__name__}: {e}") from None
    if isinstance(inputs, torch.Tensor):
        return [inputs]
    if not isinstance(inputs, (list, tuple)):
        raise EntryError(f"{entry.path}: example_inputs must return a tensor or a list or tuple of arguments")
    return list(inputs)


def make_call(entry: Entry, inputs: Sequence[Any], dtype: Any) -> tuple[Callable[..., Any], list[Any]]:
    """What `capture` traces and its arguments. A function gets `inputs`. A Module subclass is
    built on the meta device and called through `torch.func.functional_call`, its parameters and
    buffers passed after `inputs`: FakeTensors on the capture's device, graph inputs of the same
    shapes and dtypes as `torch.compile(module)` makes them (meta weights would not meet a cuda
    input, and real ones of 4096x8192 would cost memory for nothing)."""
    import torch

    if not entry.is_module:
        return entry.func, list(inputs)
    try:
        with torch.device("meta"):
            module = entry.func().eval().to(dtype)
    except Exception as e:
        raise EntryError(
            f"{entry.path}: {entry.func_name}() failed: {type(e).__name__}: {e} "
            "(a Module subclass is built with no arguments)"
        ) from None
    # no gradients: traced for inference, as functions are (their inputs do not require grad)
    state = {k: v.detach() for k, v in (*module.named_parameters(), *module.named_buffers())}
    names, count = list(state), len(inputs)

    def call(*args: Any) -> Any:
        return torch.func.functional_call(module, dict(zip(names, args[count:])), args[:count])

    return call, [*inputs, *state.values()]
