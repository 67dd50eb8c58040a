"""Errors a user of tilec can see. Each carries an optional source location and prints like a
compiler diagnostic: `file:line:col: error: message`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class TilecError(Exception):
    """Base of tilec's user-facing errors."""

    def __init__(self, message: str, loc: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc

    def __str__(self) -> str:
        return f"{self.loc}: error: {self.message}" if self.loc else f"error: {self.message}"


class ParseError(TilecError):
    """Malformed text."""


class VerifyError(TilecError):
    """Well-formed text that breaks a rule of the IR."""


class IRTypeError(TilecError, ValueError):
    """An ill-formed type or layout."""


class LayoutError(IRTypeError):
    """An invalid layout, or a layout that does not fit the shape it is attached to."""


def error_line(e: BaseException, limit: int = 300) -> str:
    """Any exception as one line of at most `limit` characters ("TypeError: ..."), for a decline
    reason or a log line."""
    return " ".join(f"{type(e).__name__}: {e}".split())[:limit]
