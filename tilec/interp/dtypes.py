"""IR dtypes as torch dtypes."""

from __future__ import annotations

import torch

from tilec.ir.dtypes import DType

TORCH_DTYPES: dict[str, torch.dtype] = {
    "i1": torch.bool,
    "i8": torch.int8,
    "i16": torch.int16,
    "i32": torch.int32,
    "i64": torch.int64,
    "u8": torch.uint8,
    "u16": torch.uint16,
    "u32": torch.uint32,
    "u64": torch.uint64,
    "f8e4m3": torch.float8_e4m3fn,
    "f8e5m2": torch.float8_e5m2,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "f32": torch.float32,
    "f64": torch.float64,
}
FROM_TORCH: dict[torch.dtype, str] = {v: k for k, v in TORCH_DTYPES.items()}


def to_torch(dt: DType) -> torch.dtype:
    return TORCH_DTYPES[dt.name]
