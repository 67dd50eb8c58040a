"""Passes, their registry and typed options.

A pass is a dataclass: its fields are its options, typed, with defaults. The pipeline text
`reuse{cache=smem},pipeline{stages=3}` sets them by name; a value that does not convert to the
field's type is an error naming the pass and the option.

A pass that declines to act on a kernel says why in a `Remark` (`self.remark(kernel, why)`): the
pass manager collects them (`tilec opt --remarks` prints them; `tilec.report()` carries those of
the kernels tilec took). A pass that leaves a kernel unchanged without a remark of its own gets
its class's `unchanged` remark from the manager.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import types
import typing
from collections.abc import Iterator
from typing import Any, ClassVar, Literal, get_args, get_origin

from tilec.ir.core import Kernel, Module
from tilec.ir.errors import TilecError

PASSES: dict[str, type[Pass]] = {}


class PipelineError(TilecError):
    """A pipeline string that names an unknown pass or gives a bad option."""


@dataclasses.dataclass(frozen=True)
class Remark:
    """Why a pass left a kernel (or part of it) as it was."""

    pass_name: str
    kernel: str
    message: str

    def __str__(self) -> str:
        return f"remark: @{self.kernel}: {self.pass_name}: {self.message}"


_remarks: contextvars.ContextVar[list[Remark] | None] = contextvars.ContextVar("tilec_remarks", default=None)


@contextlib.contextmanager
def collecting_remarks() -> Iterator[list[Remark]]:
    """The remarks passes make inside the block (nested blocks collect their own)."""
    sink: list[Remark] = []
    token = _remarks.set(sink)
    try:
        yield sink
    finally:
        _remarks.reset(token)


class Pass:
    """Base of all passes. Subclasses are dataclasses with a `name` and a `run`."""

    name: ClassVar[str] = ""
    # A pass whose options are free-form integers (e.g. constexpr values) gets them as `values`.
    accepts_any_options: ClassVar[bool] = False
    # The remark for a kernel the pass left unchanged without saying why itself.
    unchanged: ClassVar[str] = "nothing to do"

    def remark(self, kernel: Kernel, message: str) -> None:
        """Says why the pass leaves `kernel` (or a part of it) as it is."""
        sink = _remarks.get()
        if sink is not None:
            sink.append(Remark(self.name, kernel.name, message))

    def run(self, module: Module) -> None:
        raise NotImplementedError

    def options(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def describe(self) -> str:
        """The pass as pipeline text: its name and the options that differ from the defaults."""
        changed = []
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if f.default is not dataclasses.MISSING and v == f.default:
                continue
            changed.append(f"{f.name}={_format_option(v)}")
        return self.name + ("{" + ",".join(changed) + "}" if changed else "")


def register(cls: type[Pass]) -> type[Pass]:
    """Class decorator: makes `cls` a dataclass (if it is not one) and registers it by name."""
    if not dataclasses.is_dataclass(cls):
        cls = dataclasses.dataclass(cls)
    if not cls.name or cls.name in PASSES:
        raise AssertionError(f"pass {cls.__name__} needs a unique name")
    PASSES[cls.name] = cls
    return cls


def _format_option(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _convert(pass_name: str, key: str, text: str, annotation: Any) -> Any:
    def bad(expected: str) -> PipelineError:
        return PipelineError(f"pass '{pass_name}': option '{key}' must be {expected}, got '{text}'")

    origin = get_origin(annotation)
    if origin is Literal:
        choices = get_args(annotation)
        for c in choices:
            if str(c) == text:
                return c
        raise bad("one of " + ", ".join(str(c) for c in choices))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if text in ("none", "auto") and len(args) < len(get_args(annotation)):
            return None
        for a in args:
            try:
                return _convert(pass_name, key, text, a)
            except PipelineError:
                continue
        raise bad(" or ".join(getattr(a, "__name__", str(a)) for a in args))
    if annotation is bool:
        if text in ("true", "1", "on"):
            return True
        if text in ("false", "0", "off"):
            return False
        raise bad("true or false")
    if annotation is int:
        try:
            return int(text)
        except ValueError:
            raise bad("an integer") from None
    if annotation is float:
        try:
            return float(text)
        except ValueError:
            raise bad("a number") from None
    if annotation is str:
        return text
    raise bad(f"of type {annotation}")


# a pass class's option types (its annotations resolved: once a class, not once a pipeline)
_HINTS: dict[type, dict[str, Any]] = {}


def make_pass(name: str, options: dict[str, str]) -> Pass:
    cls = PASSES.get(name)
    if cls is None:
        raise PipelineError(f"unknown pass '{name}' (known: {', '.join(sorted(PASSES))})")
    if cls.accepts_any_options:
        values: dict[str, int] = {}
        for key, text in options.items():
            try:
                values[key] = int(text)
            except ValueError:
                raise PipelineError(f"pass '{name}': option '{key}' must be an integer, got '{text}'") from None
        return cls(values=values)  # type: ignore[call-arg]
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, text in options.items():
        if key not in fields:
            known = ", ".join(sorted(fields)) or "none"
            raise PipelineError(f"pass '{name}' has no option '{key}' (options: {known})")
        kwargs[key] = _convert(name, key, text, hints[key])
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise PipelineError(f"pass '{name}': {e}") from None
