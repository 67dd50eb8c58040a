"""The tile IR: types, layouts, ops, kernels and modules, with their text form and verifier."""

from tilec.ir import ops
from tilec.ir.builder import Builder
from tilec.ir.core import OPS, Block, BlockArg, Kernel, Launch, Module, Operation, OpResult, Value
from tilec.ir.dtypes import ALL_DTYPES, DType, Type, bf16, f16, f32, f64, i1, i8, i16, i32, i64
from tilec.ir.errors import IRTypeError, LayoutError, Location, ParseError, TilecError, VerifyError
from tilec.ir.layouts import BlockedLayout, NVMMASharedLayout, SliceLayout, SwizzledSharedLayout
from tilec.ir.parser import parse, parse_file
from tilec.ir.printer import print_kernel, print_module
from tilec.ir.types import MBarrierType, PointerType, SharedBufferType, TensorDescType, TileType
from tilec.ir.verify import verify

__all__ = [
    "ALL_DTYPES",
    "OPS",
    "Block",
    "BlockArg",
    "BlockedLayout",
    "Builder",
    "DType",
    "IRTypeError",
    "Kernel",
    "Launch",
    "LayoutError",
    "Location",
    "MBarrierType",
    "Module",
    "NVMMASharedLayout",
    "OpResult",
    "Operation",
    "ParseError",
    "PointerType",
    "SharedBufferType",
    "SliceLayout",
    "SwizzledSharedLayout",
    "TensorDescType",
    "TileType",
    "TilecError",
    "Type",
    "Value",
    "VerifyError",
    "bf16",
    "f16",
    "f32",
    "f64",
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "ops",
    "parse",
    "parse_file",
    "print_kernel",
    "print_module",
    "verify",
]
