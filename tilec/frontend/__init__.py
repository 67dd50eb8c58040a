"""Inductor kernels → logical-form tile IR.

    from tilec.frontend import lower                 # the function the Inductor hook calls
    from tilec.frontend.capture import capture       # a traced function's kernels, without a GPU

Importing this package imports torch; `tilec` itself and `tilec opt` never import it. Note that
`tilec.frontend.lower` is the function here, not its module: reach the module's other names
with `from tilec.frontend.lower import ...`.
"""

from __future__ import annotations

from tilec.frontend import reasons
from tilec.frontend.lower import lower
from tilec.frontend.reasons import UnsupportedError
from tilec.frontend.result import Access, KernelArg, Lowered, Unsupported

__all__ = ["Access", "KernelArg", "Lowered", "Unsupported", "UnsupportedError", "lower", "reasons"]
