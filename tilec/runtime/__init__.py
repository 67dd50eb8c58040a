"""Loading and launching emitted kernels: the on-disk cache, the interpreter mode on CPU."""

from tilec.runtime.loader import (
    InterpreterModeError,
    cache_dir,
    enable_interpreter,
    interpreter_active,
    load_source,
)

__all__ = ["InterpreterModeError", "cache_dir", "enable_interpreter", "interpreter_active", "load_source"]
