"""Mix-order fusions stock Inductor's size checks refuse, made where tilec's banded kernel was
measured faster than the kernels they replace.

Inductor fuses a norm's backward — the row reduction with dx, and the weights' gradients summed
over the rows — into one mix-order reduction (`MixOrderReduction.can_fuse`) only at shapes its own
kernel wins: at least 4096 rows, twice as many rows as the row is long, 5·2^20 elements
(`triton.mix_order_reduction_non_strict_mode` drops these three checks). tilec's banded kernel
wins at more shapes (a wide row with fewer rows: 4096x8192, 2048x4096). Where tilec compiles the
graph (its scheduling is the device's) and the GPU's table has a measured range covering the
shape (`chooser.MIX_ORDER_FUSIONS`), tilec answers yes for a pair that stock would fuse with those
checks off — square shapes included, which stock refuses whatever its checks, telling the two
reductions apart by their sizes alone (tilec tells them apart by their reads: `_square_orders`);
the fused node then reaches the scheduling's `codegen_mix_order_reduction` like any other
(docs/hook.md). The scheduling decides: the hook's and capture's have a
`mix_order_fusion(device, rows, row, elem_bytes, sums, row_inputs)` (the column sums the kernel
would compute and the whole rows it would read: a range past rows of 16384 holds for the kernel's
Gluon form, whose rows must fit in shared memory); any other scheduling (tilec not applied to the
graph) gets stock's answer.

    patch()      # while tilec is registered with Inductor (tilec.inductor.registry)
    unpatch()
    with patched(): ...   # capture
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

log = logging.getLogger("tilec")

# Inductor's own `MixOrderReduction.can_fuse`, while tilec's is in place
_stock: Any = None


def patch() -> None:
    """Puts tilec's `can_fuse` in place of Inductor's (idempotent)."""
    global _stock
    from torch._inductor.scheduler import MixOrderReduction

    if _stock is None:
        _stock = MixOrderReduction.__dict__["can_fuse"]
        MixOrderReduction.can_fuse = classmethod(_can_fuse)  # type: ignore[method-assign, assignment]


def unpatch() -> None:
    """Restores Inductor's `can_fuse`."""
    global _stock
    from torch._inductor.scheduler import MixOrderReduction

    if _stock is not None:
        MixOrderReduction.can_fuse = _stock  # type: ignore[method-assign]
        _stock = None


@contextlib.contextmanager
def patched() -> Iterator[None]:
    """`patch()` for a block; restores Inductor's `can_fuse` on exit unless it was patched before."""
    before = _stock is not None
    patch()
    try:
        yield
    finally:
        if not before:
            unpatch()


def _can_fuse(cls: Any, node1: Any, node2: Any) -> bool:
    stock = _stock.__get__(None, cls)
    if stock(node1, node2):
        return True
    try:
        return _fuses(cls, stock, node1, node2)
    except Exception:  # a question about fusion must never fail a compile: stock's answer stands
        log.debug("tilec: could not decide a mix-order fusion", exc_info=True)
        return False


def _fuses(cls: Any, stock: Any, node1: Any, node2: Any) -> bool:
    """Whether tilec's scheduling compiles the graph and fuses this pair (`mix_order_fusion`)."""
    from torch._inductor import config as ic
    from torch._inductor.virtualized import V

    if not (node1.is_reduction() and node2.is_reduction()):
        return False
    device = node1.get_device()
    if device is None or device.type != "cuda":
        return False
    backend = node1.scheduler.get_backend(device)
    decide = getattr(getattr(backend, "_triton_scheduling", backend), "mix_order_fusion", None)
    if decide is None:
        return False
    with (
        ic.patch({"triton.mix_order_reduction_non_strict_mode": True}),
        _square_orders(cls),
        _long_rows(V.graph.sizevars),
    ):
        if not stock(node1, node2):
            return False
    contiguous, other = (node1, node2) if cls.is_contiguous_node(node1) else (node2, node1)
    nrow, ncol = cls.get_numel_rnumel(contiguous)
    if not (getattr(nrow, "is_number", True) and getattr(ncol, "is_number", True)):
        return False  # a symbolic size: measured ranges are for static shapes
    # the element size of the rows both reductions read whole (x and dy)
    sizes = {V.graph.get_dtype(name).itemsize for name in cls.get_common_read(node1, node2)}
    if len(sizes) != 1:
        return False
    sums, row_inputs = _sums_and_rows(cls, contiguous, other, (int(nrow), int(ncol)))
    return bool(decide(device, int(nrow), int(ncol), sizes.pop(), sums, row_inputs))


def _sums_and_rows(cls: Any, contiguous: Any, other: Any, shape: tuple[int, int]) -> tuple[int, int]:
    """The column sums the fused kernel may come to compute — the reductions of `other` (the node
    that does not read its rows contiguously: a weight's gradient each), and those of every other
    column reduction of the graph over the same rows, which the scheduler may fuse in later
    (LayerNorm's dB beside its dW: asked about dW alone first, the answer must hold for both) —
    and the whole rows it reads (the buffers of M x N elements either node reads: x, dy, a
    residual's gradient)."""
    from torch._inductor.virtualized import V

    nodes = (contiguous, other)
    pair = {id(n) for node in nodes for n in node.get_nodes()}
    sums = sum(1 for n in other.get_nodes() if n.is_reduction())
    for node in contiguous.scheduler.nodes:
        if not node.is_reduction() or any(id(n) in pair for n in node.get_nodes()):
            continue
        try:
            columns = tuple(cls.get_numel_rnumel(node)) == shape[::-1] and not cls.is_contiguous_node(node)
        except Exception:  # a node of more than one shape: not a column reduction of these rows
            continue
        if columns and cls.get_common_read(contiguous, node):
            sums += sum(1 for n in node.get_nodes() if n.is_reduction())
    numel = shape[0] * shape[1]
    names = {dep.name for node in nodes for dep in node.read_writes.reads}
    rows = 0
    for name in names:
        try:
            size = V.graph.get_numel(name)
        except Exception:  # a name the graph does not size (not a buffer): not a row read
            continue
        rows += bool(getattr(size, "is_number", isinstance(size, int))) and int(size) == numel
    return sums, rows


# The row length past which stock's `can_fuse` refuses a mix-order reduction whatever its size
# checks ("rnumel so large that we will not generate persistent reduction"), and its question.
PERSISTENT_ROW = 1024 * 16


@contextlib.contextmanager
def _long_rows(sizevars: Any) -> Iterator[None]:
    """Stock's row-length check (`statically_known_leq(ncol, 16384)`, the one size check
    `non_strict_mode` leaves) answered yes for a longer static row, which the banded kernel takes
    in chunks (`band-chunks`): the GPU's range (`mix_order_fusion`) decides next, as for every
    size. Every other question gets stock's answer."""
    stock_leq = sizevars.statically_known_leq
    own = "statically_known_leq" in vars(sizevars)

    def leq(left: Any, right: Any) -> bool:
        static = getattr(left, "is_number", isinstance(left, int))
        if right == PERSISTENT_ROW and static and int(left) > PERSISTENT_ROW:
            return True
        return bool(stock_leq(left, right))

    sizevars.statically_known_leq = leq
    try:
        yield
    finally:
        if own:
            sizevars.statically_known_leq = stock_leq
        else:
            del sizevars.statically_known_leq


@contextlib.contextmanager
def _square_orders(cls: Any) -> Iterator[None]:
    """Stock's `has_mix_reduction_orders`, which tells the row reduction from the column reduction
    by their sizes alone ((M, N) against (N, M)) and so refuses every square shape, with a square
    pair told apart by how each reads its rows: the row reduction reads them contiguously (its
    reduction variable has stride 1 or 0 in every load: `is_contiguous_node`, which is how
    `FusedMixOrderReductions` orders the two), the column reduction does not."""
    stock_orders = cls.__dict__.get("has_mix_reduction_orders")
    if stock_orders is None:
        yield
        return

    def orders(c: Any, node1: Any, node2: Any) -> bool:
        if stock_orders.__get__(None, c)(node1, node2):
            return True
        g1, g2 = c.get_numel_rnumel(node1), c.get_numel_rnumel(node2)
        return (
            len(g1) == 2
            and tuple(g1) == tuple(g2)
            and g1[0] == g1[1]
            and c.is_contiguous_node(node1) != c.is_contiguous_node(node2)
        )

    cls.has_mix_reduction_orders = classmethod(orders)
    try:
        yield
    finally:
        cls.has_mix_reduction_orders = stock_orders
