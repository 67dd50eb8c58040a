"""Element types of the tile IR.

A dtype is also the type of a scalar value: `%n: i32` is a scalar of dtype i32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


class Type:
    """Base of every IR type: dtypes (scalar types), pointers, tiles, shared buffers, barriers, descriptors."""


@dataclass(frozen=True)
class DType(Type):
    """One element type. Compared by name; `bits` and `kind` are derived facts."""

    name: str

    _KINDS: ClassVar[dict[str, tuple[str, int]]] = {
        "i1": ("bool", 1),
        "i8": ("int", 8),
        "i16": ("int", 16),
        "i32": ("int", 32),
        "i64": ("int", 64),
        "u8": ("uint", 8),
        "u16": ("uint", 16),
        "u32": ("uint", 32),
        "u64": ("uint", 64),
        "f8e4m3": ("float", 8),
        "f8e5m2": ("float", 8),
        "f16": ("float", 16),
        "bf16": ("float", 16),
        "f32": ("float", 32),
        "f64": ("float", 64),
    }

    def __post_init__(self) -> None:
        if self.name not in self._KINDS:
            raise ValueError(f"unknown dtype '{self.name}'")

    @property
    def kind(self) -> str:
        return self._KINDS[self.name][0]

    @property
    def bits(self) -> int:
        return self._KINDS[self.name][1]

    @property
    def bytes(self) -> int:
        """Storage bytes per element (i1 occupies one byte, as in torch and Triton)."""
        return max(1, self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        """Integers of any signedness, and i1."""
        return self.kind in ("int", "uint", "bool")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DType({self.name})"


i1 = DType("i1")
i8 = DType("i8")
i16 = DType("i16")
i32 = DType("i32")
i64 = DType("i64")
u8 = DType("u8")
u16 = DType("u16")
u32 = DType("u32")
u64 = DType("u64")
f8e4m3 = DType("f8e4m3")
f8e5m2 = DType("f8e5m2")
f16 = DType("f16")
bf16 = DType("bf16")
f32 = DType("f32")
f64 = DType("f64")

ALL_DTYPES: tuple[DType, ...] = tuple(DType(n) for n in DType._KINDS)
DTYPE_NAMES: frozenset[str] = frozenset(DType._KINDS)
