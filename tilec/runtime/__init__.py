"""Loading and launching emitted kernels: the on-disk cache, the interpreter mode on CPU, and the
launcher Inductor's wrapper calls (`tilec.runtime.launch`)."""

from tilec.runtime.launch import TilecKernel, load_kernel, loaded_kernels
from tilec.runtime.loader import (
    InterpreterModeError,
    cache_dir,
    enable_interpreter,
    interpreter_active,
    load_source,
)

__all__ = [
    "InterpreterModeError",
    "TilecKernel",
    "cache_dir",
    "enable_interpreter",
    "interpreter_active",
    "load_kernel",
    "load_source",
    "loaded_kernels",
]
