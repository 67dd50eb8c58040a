"""Why `tilec.lower` declines a kernel: one stable, one-line string per cause.

Tests assert these strings, and `tilec dump` prints them, so change them only on purpose. The
functions build the parametrized ones; their fixed prefix is stable too.
"""

from __future__ import annotations

DYNAMIC_SHAPE = (
    "sizes that are not expressions of the graph's size symbols (data-dependent or float symbols) are not supported"
)
INDIRECT_INDEXING = "indirect indexing (gather, scatter, embedding) is not supported"
RELOAD_ATOMIC = "a buffer the kernel adds to atomically is read back in the same kernel"
SCAN = "scans (cumsum, cumprod, ...) are not supported"
SORT = "sorts are not supported"
RANDOM_ON_CPU = (
    "random numbers on the CPU: stock Inductor draws them from its C++ generator (at::Philox4_32), "
    "whose stream tilec does not reproduce"
)
RANDOM_INTEGERS = "random integers (randint) are not supported"
RANDOM_ALIGNED_WITH_EAGER = (
    "random numbers aligned with eager PyTorch (Inductor's align_random_eager) are not supported"
)
RANDOM_BLOCK_DEPENDENT = (
    "random numbers where stock Inductor's four-lane stream (rand4x) depends on its block size: "
    "offsets other than a 1-D kernel's linear index, or a kernel that may have fewer than 4 elements"
)
NON_AFFINE_INDEX = "index is not affine in the kernel's index variables"
NESTED_REDUCTION_USE = "a reduction result is used inside its own reduction loop"
REDUCTION_OUTSIDE_LOOP = "a reduction outside the kernel's reduction dimension is not supported"
SPLIT_REDUCTION_PARTIALS = "a reduction of value tuples (split-reduction partials) is not supported"
MASKED_BODY = "a masked sub-block tilec cannot express"
RELOAD_OTHER_INDEX = "a buffer stored in the kernel is reloaded at another index"
SCALAR_ARGUMENT = (
    "a boolean 0-d CPU tensor passed to a GPU kernel by value (the wrapper's `.item()`) is not supported "
    "(numbers are scalar parameters)"
)
BANDED_OUTSIDE_MIX_ORDER = "a column sum over the rows (partial_accumulate) outside a mix-order reduction"
BANDED_SYMBOLIC_ROW = "a mix-order reduction over rows of symbolic length is not supported"
BANDED_REDUCTION_TYPE = "a mix-order reduction's column reduction other than a sum is not supported"
CANNOT_SPLIT_RANGES = "a node's iteration ranges do not map onto the kernel's (x, r) space"
INTERNAL_ERROR = "internal error in tilec.lower"


def unsupported_op(name: str) -> str:
    return f"op '{name}' is not supported"


def unsupported_reduction(kind: str) -> str:
    return f"reduction '{kind}' is not supported"


def unsupported_dtype(dtype: object) -> str:
    return f"dtype {dtype} is not supported"


def unsupported_node(kind: str) -> str:
    return f"scheduler node of type {kind} is not supported"


class UnsupportedError(Exception):
    """Raised inside the frontend; `lower` turns it into `Unsupported(reason)`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
