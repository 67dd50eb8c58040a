"""torch dtypes ↔ tilec dtypes, and the promotion Triton applies to mixed operands."""

from __future__ import annotations

import torch

from tilec.frontend.reasons import UnsupportedError, unsupported_dtype
from tilec.ir.dtypes import DType

_TO_TILEC: dict[torch.dtype, str] = {
    torch.bool: "i1",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.uint8: "u8",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
}
for _name, _tilec in (("float8_e4m3fn", "f8e4m3"), ("float8_e5m2", "f8e5m2"), ("uint16", "u16"), ("uint32", "u32")):
    if hasattr(torch, _name):
        _TO_TILEC[getattr(torch, _name)] = _tilec
_TO_TORCH: dict[str, torch.dtype] = {v: k for k, v in _TO_TILEC.items()}

# Parsed on the command line (`--dtype bf16`).
DTYPE_ALIASES: dict[str, torch.dtype] = {
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "f16": torch.float16,
    "float16": torch.float16,
    "half": torch.float16,
    "fp32": torch.float32,
    "f32": torch.float32,
    "float32": torch.float32,
    "float": torch.float32,
}


def to_tilec(dtype: torch.dtype) -> DType:
    name = _TO_TILEC.get(dtype)
    if name is None:
        raise UnsupportedError(unsupported_dtype(str(dtype).replace("torch.", "")))
    return DType(name)


def compute_dtype(dt: DType) -> DType:
    """The dtype a value of `dt` computes in between its load and its store, as stock Inductor's
    Triton kernels do: with `triton.codegen_upcast_to_fp32` (Inductor's default) fp16 and bf16
    values are widened to f32 when loaded and stay f32, so a kernel rounds only where it stores.
    Rounding after every op instead would give other numbers than the kernel tilec replaces."""
    from torch._inductor import config

    if dt.name in ("f16", "bf16") and config.triton.codegen_upcast_to_fp32:
        return DType("f32")
    return dt


def to_torch(dtype: DType) -> torch.dtype:
    return _TO_TORCH[dtype.name]


def promote(a: DType, b: DType) -> DType:
    """The dtype of a binary op on `a` and `b` (torch's promotion, as Triton applies it)."""
    if a == b:
        return a
    return to_tilec(torch.promote_types(to_torch(a), to_torch(b)))
