"""Decompositions tilec's backend gives AOT autograd in place of Inductor's own, where a GPU's table
says they measured faster (`tilec.passes.chooser.GRAPH_REWRITES`).

`torch.compile(backend="tilec")` compiles with these entries of Inductor's decomposition table
replaced for the duration of its compile (`replaced`: AOT autograd traces and decomposes the
forward and the backward graphs then; Dynamo compiles one frame at a time), and the FX-graph
cache keys of its graphs name them (`active`). A GPU's table takes a rewrite over the range of
tokens its run measured (`chooser.Rewrite.tokens`, of what `MEASURED` reads from the op's
arguments): an op of other tokens, or of tokens known only at run time, keeps Inductor's
decomposition. `tilec.install()`, which applies tilec to the
default backend's compiles, leaves that backend's table as it is. (Handing compile_fx a table of
its own instead would put the table in Inductor's cache key, which cannot hash it: every compile
would bypass the FX-graph cache.)

`embedding_dense_backward`: an embedding's weight gradient. Inductor's decomposition accumulates
it in an fp32 table of the whole vocabulary — zeros, every token's row added in, then the table
converted to the weight's dtype — three passes over V x H fp32 values where the tokens touch a few
thousand rows (Llama's 32000 x 2048: 262 MB zeroed, 262 MB read and 131 MB written again, about
150 us of an H200's training step). Here each token's row adds into a compact fp32 buffer of one
row per token, at the row of its index's first occurrence among the tokens; the weight's gradient
is zeros in its own dtype with each token's index row set to its sum. The sums are the same fp32
sums of the same rows (in an order atomics choose, as Inductor's are), rounded once to the
weight's dtype; rows of a padding index and of indices outside the table get nothing, as in
Inductor's. Other dtypes (an fp32 weight: the table is the result) and `scale_grad_by_freq` keep
Inductor's decomposition.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

__all__ = ["MEASURED", "REWRITES", "active", "embedding_dense_backward", "overload", "replaced"]

log = logging.getLogger("tilec")

# the rewrites of the compile under way (`replaced`), for the cache key
_active: ContextVar[tuple[str, ...]] = ContextVar("tilec_rewrites", default=())


def embedding_dense_backward(
    grad_output: Any, indices: Any, num_weights: int, padding_idx: int, scale_grad_by_freq: bool
) -> Any:
    import torch
    from torch._decomp.decompositions import embedding_dense_backward as stock
    from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

    compute, result = elementwise_dtypes(grad_output, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)
    if scale_grad_by_freq or compute == result:
        return stock(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
    ids = indices.reshape(-1).to(torch.long)
    tokens = ids.shape[0]
    row = tuple(grad_output.shape[indices.dim() :])
    grad = grad_output.reshape(tokens, *row).to(compute)
    inside = (ids >= 0) & (ids < num_weights)
    kept = (inside & (ids != padding_idx)).reshape(tokens, *(1 for _ in row))
    grad = torch.where(kept, grad, torch.zeros((), dtype=compute, device=grad.device))
    # an index outside the table writes its (zero) row to a row past the table's last, dropped
    slot = torch.where(inside, ids, num_weights)
    position = torch.arange(tokens, dtype=torch.long, device=ids.device)
    first = torch.full((num_weights + 1,), tokens, dtype=torch.long, device=ids.device)
    first = first.scatter_reduce(0, slot, position, "amin")
    owner = first[slot]  # the compact buffer's row of each token: its index's first occurrence
    sums = torch.zeros((tokens, *row), dtype=compute, device=grad.device).index_put((owner,), grad, accumulate=True)
    out = torch.zeros((num_weights + 1, *row), dtype=result, device=grad.device)
    # every token of an index writes the same row: the order of the writes does not matter
    out = out.index_put((slot,), sums[owner].to(result))
    return out[:num_weights]


# name -> (the ATen op's overload, the decomposition)
REWRITES: dict[str, tuple[str, Any]] = {
    "embedding_dense_backward": ("embedding_dense_backward.default", embedding_dense_backward),
}


def _tokens(grad_output: Any, indices: Any, *rest: Any) -> Any:
    return indices.numel()


# name -> what a table's measured range (`chooser.Rewrite.tokens`) bounds, of the op's arguments
MEASURED: dict[str, Callable[..., Any]] = {"embedding_dense_backward": _tokens}


def _known(condition: Any) -> bool:
    """Whether `condition` holds for every value of the sizes it reads (a symbolic size: only
    where provable without a guard)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    return bool(statically_known_true(condition))


def _within(name: str, tokens: tuple[int, int], inductors: Any) -> Any:
    """`name`'s decomposition where the op's tokens lie in `tokens` ([low, high)), else the one
    Inductor's table had (`inductors`; none: the op is not decomposed)."""
    low, high = tokens

    def decomposition(*args: Any, **kwargs: Any) -> Any:
        n = MEASURED[name](*args, **kwargs)
        if _known(n >= low) and _known(n < high):
            return REWRITES[name][1](*args, **kwargs)
        return NotImplemented if inductors is None else inductors(*args, **kwargs)

    return decomposition


def overload(name: str) -> Any:
    """The ATen overload `name` (of `REWRITES`) decomposes."""
    import torch

    packet, _, which = REWRITES[name][0].partition(".")
    return getattr(getattr(torch.ops.aten, packet), which)


@contextlib.contextmanager
def replaced(ranges: Mapping[str, tuple[int, int] | None]) -> Iterator[None]:
    """Inductor's decomposition table with the entries of `ranges` (names of `REWRITES`, each with
    the range of tokens it takes, or None: any) replaced in the block; outside its range an op
    keeps Inductor's decomposition."""
    if not ranges:
        yield
        return
    from torch._inductor import decomposition

    # the table Inductor hands AOT autograd: its `decompositions`, or (without fallback_random) a
    # merged copy that `fast_random_decomps` makes once and keeps: both are replaced, and restored
    tables = [decomposition.decompositions]
    merged = getattr(decomposition, "fast_random_decomps", None)
    if merged is not None and merged() is not decomposition.decompositions:
        tables.append(merged())
    names = tuple(ranges)
    ops = [overload(name) for name in names]
    saved = [{op: table.get(op) for op in ops} for table in tables]
    installed = [
        REWRITES[name][1] if r is None else _within(name, r, saved[0][op])
        for (name, r), op in zip(ranges.items(), ops, strict=True)
    ]
    # the cache key names each rewrite with its range: a graph's code depends on both
    token = _active.set(tuple(name if r is None else f"{name}[{r[0]},{r[1]})" for name, r in ranges.items()))
    try:
        for table in tables:
            for op, fn in zip(ops, installed, strict=True):
                table[op] = fn
        chosen = decomposition.select_decomp_table()
        missed = [name for name, op, fn in zip(names, ops, installed, strict=True) if chosen.get(op) is not fn]
        if missed:  # a torch whose table is built otherwise: Inductor's own decompositions stay
            log.warning("tilec: Inductor's decomposition table did not take %s; its own stay", ", ".join(missed))
        yield
    finally:
        _active.reset(token)
        for table, before in zip(tables, saved, strict=True):
            for op, fn in before.items():
                if fn is None:
                    table.pop(op, None)
                else:
                    table[op] = fn


def active() -> tuple[str, ...]:
    """The rewrites `replaced` applies at this point of a compile (none outside one)."""
    return _active.get()
