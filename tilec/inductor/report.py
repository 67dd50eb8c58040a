"""What the hook did: one record per kernel Inductor generated in this process, and one summary line
per compiled graph on the `tilec` logger.

    tilec.report()        # [KernelRecord(kernel='triton_per_fused__softmax_0', taken=True, emitter='gluon', ...)]
    tilec.reset_report()

A graph's line is logged when the next graph starts generating kernels, when a torch.compile
compilation ends (Dynamo's end-of-compile callback), or when `report()` is called — whichever
comes first. A graph Inductor loads from its FX-graph cache generates no kernels and adds nothing.
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("tilec")

__all__ = ["KernelRecord", "flush_summary", "record", "report", "reset_report"]


@dataclass(frozen=True)
class KernelRecord:
    """One kernel Inductor generated while the hook was installed."""

    kernel: str  # Inductor's kernel name (the name the wrapper calls)
    taken: bool  # tilec generated it
    emitter: str | None  # "gluon" or "triton" when taken
    pipeline: str | None  # the pass pipeline run before the emitter, when taken
    reason: str | None  # why tilec did not take it (None when taken)
    device: str = "cuda"
    graph: int = 0  # which compiled graph of this process (1, 2, ...)
    autotune: str | None = None  # when the autotuner chose the emitter: its timings


_lock = threading.Lock()
_records: list[KernelRecord] = []
_current: tuple[Any, int] | None = None  # (a weak reference to the graph being compiled, its number)
_pending: list[int] = []  # graph numbers whose summary is not logged yet
_count = 0


def graph_number(graph: object) -> int:
    """This process's number for the graph being compiled (a subgraph counts as its parent); the
    first kernel of a new graph logs the previous graphs' lines."""
    global _count, _current
    while getattr(graph, "parent", None) is not None:  # cond/while bodies: Inductor's SubgraphLowering
        graph = graph.parent  # type: ignore[attr-defined]
    with _lock:
        if _current is not None and _current[0]() is graph:
            return _current[1]
        previous = list(_pending)
    for p in previous:  # a new graph: the previous ones are complete
        flush_summary(p)
    with _lock:
        _count += 1
        _current = (weakref.ref(graph), _count)
        _pending.append(_count)
        return _count


def record(rec: KernelRecord) -> None:
    with _lock:
        _records.append(rec)


def report() -> list[KernelRecord]:
    """One record per kernel Inductor generated in this process while the hook was installed."""
    flush_summary()
    with _lock:
        return list(_records)


def reset_report() -> None:
    """Forgets every record (summaries not yet logged are logged first)."""
    flush_summary()
    with _lock:
        _records.clear()


def summary(graph: int) -> str | None:
    """The summary line of one graph: what was taken, with which emitter, and why the rest was not."""
    with _lock:
        recs = [r for r in _records if r.graph == graph]
    if not recs:
        return None
    taken = [r for r in recs if r.taken]
    emitters = sorted({r.emitter for r in taken if r.emitter})
    how = f" ({', '.join(emitters)})" if emitters else ""
    parts = [f"tilec: {len(taken)} of {len(recs)} kernels taken{how}"]
    if taken:
        parts.append("taken: " + ", ".join(r.kernel for r in taken))
    rest = [r for r in recs if not r.taken]
    if rest:
        parts.append("not taken: " + ", ".join(f"{r.kernel} ({r.reason})" for r in rest))
    return "; ".join(parts)


def flush_summary(graph: int | None = None) -> None:
    """Logs the summary line of `graph` (default: every graph not yet summarized)."""
    with _lock:
        todo = [g for g in _pending if graph is None or g == graph]
        for g in todo:
            _pending.remove(g)
    for g in todo:
        line = summary(g)
        if line is not None:
            log.info("%s", line)
