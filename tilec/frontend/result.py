"""What `tilec.lower` returns: a `Lowered` kernel, or `Unsupported` with its reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tilec.ir import Kernel


@dataclass(frozen=True)
class Unsupported:
    """tilec does not take this kernel; `reason` is one of `tilec.frontend.reasons`."""

    reason: str


@dataclass(frozen=True)
class KernelArg:
    """A buffer parameter of the kernel and the Inductor buffer the wrapper passes for it: a
    pointer, or (access "value", on the CPU path) a scalar the wrapper passes as `buf.item()`."""

    param: str  # "in_ptr0", "out_ptr2", "in_out_ptr0"
    buffer: str  # the buffer name in the wrapper ("arg0_1", "buf3")
    access: str  # "read", "write", "read_write" or "value"
    dtype: str  # tilec dtype name of the elements
    # the buffer's layout (elements), None where Inductor does not know it statically
    shape: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None
    offset: int | None = None

    @property
    def is_read(self) -> bool:
        return self.access in ("read", "read_write")

    @property
    def is_written(self) -> bool:
        return self.access in ("write", "read_write")


@dataclass(frozen=True)
class Access:
    """One global load or store: its index as {kernel variable: coefficient} plus a constant,
    and whether consecutive r indices touch consecutive elements."""

    param: str
    kind: str  # "load" or "store"
    index: str  # Inductor's index expression, as text
    strides: tuple[tuple[str, int], ...]  # affine coefficients of the kernel variables
    affine: bool  # no division or remainder in the index beyond the range-tree variables
    contiguous_r: bool  # stride 1 along the reduction index (or along x for pointwise kernels)


@dataclass
class Lowered:
    """A kernel tilec takes: its logical-form IR plus what the Inductor hook needs to call it."""

    kernel: Kernel
    args: list[KernelArg]  # in parameter order
    numel: int | None  # xnumel; None where symbolic (the kernel's scalar parameter `xnumel`)
    rnumel: int | None  # reduction numel (1 for pointwise kernels); None where symbolic (`rnumel`)
    reductions: list[str]  # reduction types, once each, in order ("sum", "welford_reduce", ...)
    index_dtype: str  # "i32" or "i64"
    removed_buffers: frozenset[str] = frozenset()  # stores dropped: every user is in this kernel
    inplaced_to_remove: frozenset[str] = frozenset()
    inplace_update_buffers: dict[str, str] = field(default_factory=dict)  # output -> input it reuses
    node_names: list[str] = field(default_factory=list)
    accesses: list[Access] = field(default_factory=list)
    # The Inductor kernel object used to map ranges and name arguments (its `args` and
    # `inplace_update_buffers` are what `mark_run` needs); None outside Inductor.
    inductor_kernel: Any = None
    # the kernel's scalar parameters (after the pointers) and the size each holds, a sympy
    # expression of the graph's size symbols, in parameter order: {"xnumel": 1024*s77} for a
    # symbolic x size, "rnumel" for a symbolic reduction length, "ks0", "ks1", ... for the
    # symbolic coefficients, divisors and bounds of its indices
    sizes: dict[str, Any] = field(default_factory=dict)
    # a mix-order kernel's column sums (the buffers of its `partial_accumulate`s), in the order of
    # their rows in the workspace (`ws_ptr`); empty for every other kernel
    column_sums: list[str] = field(default_factory=list)

    @property
    def is_reduction(self) -> bool:
        return self.rnumel is None or self.rnumel > 1 or bool(self.reductions)
