"""Unrolled chains of chunk statistics: each combine folds the next chunk's reduction into the
statistics before it, as an unrolled loop does (`cluster-rows` unrolls a CTA's chunks so). The
passes that keep such statistics per lane (`welford-lanes`, `softmax-lanes`) find them here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tilec.ir.builder import Builder
from tilec.ir.clone import clone_op
from tilec.ir.core import Kernel, Launch, Operation, Value, defining_op, replace_uses
from tilec.ir.ops import CombineOp, ForOp, ReductionOp
from tilec.ir.types import TileType

R = TypeVar("R", bound=ReductionOp)
C = TypeVar("C", bound=CombineOp)


def folded_into(combine: C) -> C | None:
    """The combine (of the same kind) whose statistics `combine` folds its chunk into, if one does."""
    before = defining_op(combine.operands[0])
    if type(before) is type(combine) and list(before.results) == combine.operands[: combine.parts]:
        return before  # type: ignore[return-value]
    return None


def chain(last: C, part: type[R], counts: dict[int, int], why_not: Callable[[R], str]) -> list[tuple[R, C]] | str:
    """The straight-line chain of chunk statistics that ends at `last`, first chunk first: each
    combine folds one chunk's reduction (a `part`) into the one before it. It starts after the
    last combine that does not qualify (a chunk `why_not` refuses, another tile: their statistics
    are the chain's initial ones). Or why it cannot be kept per lane, where fewer than two chunks
    chain. `counts`: the kernel's use counts (each link's statistics must be used once)."""
    n = last.parts
    links: list[tuple[R, C]] = []
    combine: Operation | None = last
    why = ""
    while type(combine) is type(last) and combine is not None and combine.parent is last.parent:
        reduced = defining_op(combine.operands[n])
        if (
            not isinstance(reduced, part)
            or list(reduced.results) != combine.operands[n:]
            or reduced.parent is not last.parent
        ):
            break
        if any(counts.get(id(v), 0) != 1 for v in reduced.results):
            why = "a chunk's statistics have other uses"
            break
        why = why_not(reduced)
        if why or (links and reduced.src.type != links[0][0].src.type):
            break
        links.append((reduced, combine))  # type: ignore[arg-type]
        before = folded_into(combine)
        if before is None or any(counts.get(id(v), 0) != 1 for v in before.results):
            break
        combine = before
    links.reverse()
    if len(links) < 2:
        return why or "one chunk: nothing to carry"
    return links


def chain_ends(kernel: Kernel, combine: type[C]) -> list[C]:
    """The combines of `combine`'s kind that no other folds its chunk into: each the last of a
    chain (or a combine alone)."""
    combines = [op for op in kernel.walk() if isinstance(op, combine)]
    inner = {id(folded_into(op)) for op in combines}
    return [op for op in combines if id(op) not in inner]


def replace_chain(kernel: Kernel, links: list[tuple[R, C]], joined: Operation) -> None:
    """The chain's statistics replaced by `joined`'s results, its reductions and combines erased."""
    for old, new in zip(links[-1][1].results, joined.results):
        replace_uses(kernel.body, old, new)
    for part, combine in reversed(links):
        combine.erase()
        part.erase()


def broadcast_row(b: Builder, v: Value, src: TileType, name: str) -> Value:
    """A row's value `v` broadcast along the chunk (`src`'s shape)."""
    col = b.op("tile.expand_dims", v, axis=1, name_hint=f"{name}_col")
    return b.op("tile.broadcast", col, type=src, name_hint=name)


def lane_elems(chunk: TileType, launch: Launch) -> int | None:
    """A thread's elements of a chunk (a cluster's tile is shared by its CTAs): what keeping each
    lane's statistics across the chunks costs in registers, a few each. None for a symbolic shape."""
    elems = 1
    for n in chunk.shape:
        if not isinstance(n, int):
            return None
        elems *= n
    return -(-elems // (32 * (launch.num_warps or 4) * launch.num_ctas))


def lane_loop(
    b: Builder,
    loop: ForOp,
    start: Value,
    ops: list[Operation],
    chunk: Value,
    name: str,
    step: Callable[[Builder, Value, Value, dict[int, Value]], Value],
) -> Value:
    """A loop over `loop`'s bounds carrying one chunk-shaped tile from `start`: `ops` of its body
    cloned (those that give its chunk `chunk`), then the next carried value, `step(b, carried, the
    chunk, the clones' mapping)`. Its result."""
    new = b.for_(loop.lower, loop.upper, loop.step, [start], iv_name=loop.induction_var.name_hint, names=[name])
    mapping: dict[int, Value] = {id(loop.induction_var): new.induction_var}
    with b.inside(new.body):
        for op in ops:
            b.insert(clone_op(op, mapping))
        b.yield_(step(b, new.iter_args[0], mapping.get(id(chunk), chunk), mapping))
    return new.results[0]
