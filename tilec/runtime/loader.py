"""Turns emitted source into a Python module: written once to an on-disk cache (Triton reads a
kernel's source from its file), imported, and kept in memory.

The cache key is the source's hash, the Triton version, the target and whether the module runs
under Triton's interpreter; files are written atomically, so processes can share the cache.
Only source produced by tilec's emitters is loaded (names in it come from validated IR).

Triton's interpreter keeps its state in module globals (the language it patches for a run, the
program index): two launches at once, from two threads, corrupt each other. The `launch` of a
module loaded for the interpreter therefore takes a process-wide lock.

Triton 3.6's interpreter holds a scalar as a one-element array and turns it into a Python int
with `int(array)`, which numpy 2.4 refuses for arrays that are not 0-d: a loop whose bound is a
kernel argument (`range(0, rnumel, RBLOCK)`, a symbolic reduction length) then fails. Modules
loaded for the interpreter get a conversion that takes the one element (`_scalar_index`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

_lock = threading.Lock()
_modules: dict[str, ModuleType] = {}
# held by every interpreted launch (Triton's interpreter is not thread-safe)
interpreter_lock = threading.RLock()


def cache_dir() -> Path:
    """`$TILEC_CACHE_DIR`, or `~/.cache/tilec`."""
    env = os.environ.get("TILEC_CACHE_DIR")
    base = Path(env) if env else Path.home() / ".cache" / "tilec"
    base.mkdir(parents=True, exist_ok=True)
    return base


def _triton_version() -> str:
    try:
        import triton

        return str(triton.__version__)
    except ImportError:  # pragma: no cover - triton is a dependency
        return "none"


def cache_key(source: str, target: str, interpret: bool) -> str:
    h = hashlib.sha256()
    for part in (source, _triton_version(), target, "interpret" if interpret else "compile"):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def write_atomic(path: Path, text: str) -> None:
    """Writes `text` to `path` so that readers see either nothing or the whole file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class InterpreterModeError(RuntimeError):
    """Triton's interpreter was asked for, but Triton was imported without it."""


def enable_interpreter() -> None:
    """Puts this process's Triton in interpreter mode (CPU execution).

    Triton decides when it is imported: its standard library (tl.sum, ...) is decorated then. So
    this must run before anything imports triton; afterwards it can only check."""
    os.environ["TRITON_INTERPRET"] = "1"
    if "triton" in sys.modules and not interpreter_active():
        raise InterpreterModeError(
            "Triton was imported before its interpreter was enabled; set TRITON_INTERPRET=1 in the "
            "environment before starting Python (or call tilec.runtime.enable_interpreter() first)"
        )


def interpreter_active() -> bool:
    """Whether this process's Triton runs @jit functions in its interpreter."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    if "triton" not in sys.modules:
        return True  # it will be, once imported
    import triton.language.standard as standard
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(standard.sum, InterpretedFunction)


@functools.cache
def _scalar_index() -> None:
    """Makes the interpreter's scalar tensors usable as Python ints (`range(0, n, BLOCK)` with
    `n` an argument) under numpy versions that refuse `int()` of a one-element 1-d array."""
    import numpy as np
    from triton.runtime import interpreter

    try:
        int(np.array([1]))  # type: ignore[call-overload]
        return  # this numpy still converts them
    except TypeError:
        pass
    patch = interpreter._patch_lang_tensor

    def patched(tensor: Any, scope: Any) -> None:
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    interpreter._patch_lang_tensor = patched


@contextlib.contextmanager
def _decorating(interpret: bool) -> Iterator[None]:
    """Triton decides at decoration time whether a @jit function runs in its interpreter."""
    if interpret:
        enable_interpreter()
        _scalar_index()
        yield
        return
    if interpreter_active():
        raise InterpreterModeError(
            "this process runs Triton in its interpreter (TRITON_INTERPRET=1); it cannot compile for a GPU"
        )
    yield


def _serialized(launch: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(launch)
    def serialized(*args: Any, **kwargs: Any) -> Any:
        with interpreter_lock:
            return launch(*args, **kwargs)

    return serialized


def load_source(source: str, target: str = "cuda", interpret: bool = False) -> ModuleType:
    """The module for `source`, loaded once per process and written once per cache."""
    key = cache_key(source, target, interpret)
    with _lock:
        module = _modules.get(key)
        if module is not None:
            return module
        path = cache_dir() / f"tilec_{key}.py"
        if not path.exists() or path.read_text() != source:
            write_atomic(path, source)
        name = f"tilec_generated_{key}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        with _decorating(interpret):
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        launch = getattr(module, "launch", None)
        if interpret and callable(launch):
            module.launch = _serialized(launch)  # type: ignore[attr-defined]
        _modules[key] = module
        return module
