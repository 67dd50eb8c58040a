"""Errors the interpreter reports. Each names the op (with its source location) that broke the rule."""

from __future__ import annotations

from tilec.ir.core import Operation
from tilec.ir.errors import TilecError


class InterpError(TilecError):
    """Base of the interpreter's errors."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        prefix = f"'{op.name}' " if op is not None else ""
        super().__init__(prefix + message, op.loc if op is not None else None)
        self.op = op


class ExecutionError(InterpError):
    """An access out of bounds, a division by zero, a bad argument."""


class DeviceAssertError(ExecutionError):
    """A `tile.assert` found its condition false: the kernel would stop on the device."""


class RaceError(InterpError):
    """A shared-memory access that no barrier orders against a conflicting one."""


class ProtocolError(InterpError):
    """An mbarrier used against its rules: uninitialized, invalidated, overrun, lapped."""


class DeadlockError(InterpError):
    """Every partition waits and none can make progress."""
