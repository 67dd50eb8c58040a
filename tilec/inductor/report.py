"""What the hook did: one record per kernel of each graph Inductor compiled, or loaded from its
caches, in this process; and one summary line per graph on the `tilec` logger.

    tilec.report()        # [KernelRecord(kernel='triton_per_fused__softmax_0', taken=True, emitter='gluon', ...)]
    tilec.reset_report()

A graph's line is logged when the next graph starts generating kernels (or is loaded), when a
torch.compile compilation ends (Dynamo's end-of-compile callback), or when `report()` is called —
whichever comes first.

The records survive Inductor's caches. A graph loaded from the FX-graph or AOT-autograd cache
generates no kernels, so for each kernel the hook also writes into the graph's wrapper module a
line that records it again when the module is loaded (`replay`). Each compiled graph gets a token;
a graph's kernels are recorded once per process until `reset_report()`, however often its module
is loaded (Inductor loads the module it just generated, and loads it again on every cache hit).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import uuid
import weakref
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("tilec")

__all__ = ["KernelRecord", "flush_summary", "record", "replay", "report", "reset_report"]


# A kernel's signature as a record gives it (`tilec.passes.chooser.Signature`): family, row
# inputs, element bytes, rows and row length (None where symbolic), column sums (a mix-order
# kernel's; else 0).
SignatureKey = tuple[str, int, int, int | None, int | None, int]


@dataclass(frozen=True)
class KernelRecord:
    """One kernel of a graph compiled (or loaded from Inductor's caches) while the hook was on."""

    kernel: str  # Inductor's kernel name (the name the wrapper calls)
    taken: bool  # tilec generated it
    emitter: str | None  # "gluon" or "triton" when taken
    pipeline: str | None  # the pass pipeline run before the emitter, when taken
    reason: str | None  # why tilec did not take it (None when taken)
    device: str = "cuda"
    graph: int = 0  # which graph of this process (1, 2, ... in the order they were compiled or loaded)
    autotune: str | None = None  # when the autotuner chose the emitter: its timings
    remarks: tuple[str, ...] = ()  # when taken: why passes left the kernel (or parts of it) as they did
    # what the chooser's rules read of the kernel, where tilec lowered it (`SignatureKey`)
    signature: SignatureKey | None = None
    # the autotuner's timings where it ran, taken or not: (candidate, median device ms), fastest first
    timings: tuple[tuple[str, float], ...] = ()
    # where the kernel's sizes are symbolic and the autotuner timed it: the (rows, row length) of
    # the graph's trace, which it was timed at
    traced: tuple[int, int] | None = None


_lock = threading.Lock()
_records: list[KernelRecord] = []
# the graph generating kernels: a weak reference to it, its token, how many kernels it has noted
_current: tuple[Any, str, list[int]] | None = None
_numbers: dict[str, int] = {}  # graph token -> its number, for the graphs recorded since the last reset
_recorded: set[tuple[str, int]] = set()  # (graph token, kernel index) of every record since the last reset
_loaded: set[int] = set()  # numbers of the graphs whose records came from a cached module
_pending: list[int] = []  # graph numbers whose summary is not logged yet
_count = 0

# the fields a module's line carries (the graph's number is this process's own)
_FIELDS = tuple(f.name for f in dataclasses.fields(KernelRecord) if f.name != "graph")


def _number(token: str) -> int:
    """The graph's number, a new one for a graph not recorded since the last reset: a new graph
    means the previous ones are complete, so their lines are logged first."""
    global _count
    with _lock:
        number = _numbers.get(token)
        if number is not None:
            return number
        previous = list(_pending)
    for p in previous:
        flush_summary(p)
    with _lock:
        number = _numbers.get(token)
        if number is None:
            _count += 1
            number = _numbers[token] = _count
            _pending.append(number)
        return number


def record(rec: KernelRecord, graph: object) -> str:
    """Records a kernel of `graph`, the graph being compiled (a subgraph counts as its parent), with
    the graph's number; returns the line of Python that records it again when the graph's module
    is loaded, for the wrapper to carry."""
    global _current
    while getattr(graph, "parent", None) is not None:  # cond/while bodies: Inductor's SubgraphLowering
        graph = graph.parent  # type: ignore[attr-defined]
    with _lock:
        if _current is None or _current[0]() is not graph:
            _current = (weakref.ref(graph), uuid.uuid4().hex, [0])
        _, token, counter = _current
        index = counter[0]
        counter[0] += 1
    rec = dataclasses.replace(rec, graph=_number(token))
    with _lock:
        _records.append(rec)
        _recorded.add((token, index))
    fields = ", ".join(f"{name}={getattr(rec, name)!r}" for name in _FIELDS)
    return f'__import__("tilec.inductor.report", fromlist=["replay"]).replay({token!r}, {index}, {fields})'


def replay(token: str, index: int, **fields: Any) -> None:
    """Records a kernel of a graph whose module is being loaded, unless this process has recorded
    it since the last reset (the module was generated here, or loaded before)."""
    try:
        with _lock:
            if (token, index) in _recorded:
                return
        number = _number(token)
        rec = KernelRecord(**{k: v for k, v in fields.items() if k in _FIELDS}, graph=number)
        with _lock:
            if (token, index) in _recorded:
                return
            _records.append(rec)
            _recorded.add((token, index))
            _loaded.add(number)
    except Exception:  # a record is not worth failing to load a compiled graph
        log.warning("tilec: could not record a kernel of a cached graph", exc_info=True)


def report() -> list[KernelRecord]:
    """One record per kernel of each graph compiled, or loaded from Inductor's caches, in this
    process while the hook was on (since the last `reset_report()`)."""
    flush_summary()
    with _lock:
        return list(_records)


def reset_report() -> None:
    """Forgets every record (summaries not yet logged are logged first); a graph loaded again
    afterwards is recorded again."""
    flush_summary()
    with _lock:
        _records.clear()
        _numbers.clear()
        _recorded.clear()
        _loaded.clear()


def summary(graph: int) -> str | None:
    """The summary line of one graph: what was taken, with which emitter, and why the rest was not."""
    with _lock:
        recs = [r for r in _records if r.graph == graph]
        loaded = graph in _loaded
    if not recs:
        return None
    taken = [r for r in recs if r.taken]
    emitters = sorted({r.emitter for r in taken if r.emitter})
    how = f" ({', '.join(emitters)})" if emitters else ""
    cached = ", loaded from Inductor's cache" if loaded else ""
    parts = [f"tilec: {len(taken)} of {len(recs)} kernels taken{how}{cached}"]
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
