"""Memory as the interpreter sees it: global buffers, TMA descriptors, shared memory that tracks
who wrote and read each element, and the agents (partitions) whose clocks order those accesses.

Race detection is happens-before: every agent has a vector clock; mbarrier arrivals carry the
arriving agent's clock and a wait that observes a completed phase takes it in. A shared-memory
access conflicts with an earlier one by another agent unless the earlier one is in the accessing
agent's past. A TMA copy into shared memory is guarded by the barrier phase its bytes complete:
accessing it requires that phase's completion in the agent's past. Each barrier has its own
entry in the clocks (the count of its completed phases), so that knowledge travels with every
later hand-over, like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from tilec.interp.errors import ExecutionError, RaceError
from tilec.ir.core import Operation

Tensor = torch.Tensor


def _where(op: Operation | None) -> str:
    if op is None:
        return "?"
    return f"'{op.name}' at {op.loc}" if op.loc else f"'{op.name}'"


# ---------------------------------------------------------------------------------------------
# Agents


@dataclass
class Agent:
    """A partition (or the whole CTA outside warp_specialize): one sequential stream of ops."""

    id: int
    name: str
    clock: dict[int, int] = field(default_factory=dict)
    observed: dict[int, int] = field(default_factory=dict)  # barrier uid -> last phase it waited for
    fence_epoch: int = 0
    pending_stores: list[int] = field(default_factory=list)
    # asynchronous copies, each its own guard uid: those of the open group, and the committed
    # groups still pending, oldest first
    copy_group: list[int] = field(default_factory=list)
    copy_groups: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.clock.setdefault(self.id, 1)

    @property
    def now(self) -> int:
        return self.clock[self.id]

    def tick(self) -> int:
        self.clock[self.id] += 1
        return self.clock[self.id]

    def join(self, other: dict[int, int]) -> None:
        for k, v in other.items():
            if v > self.clock.get(k, 0):
                self.clock[k] = v


# ---------------------------------------------------------------------------------------------
# Global memory


@dataclass
class GlobalPtr:
    """A kernel pointer argument: the flat storage of a tensor from its first element on."""

    name: str
    flat: Tensor

    @classmethod
    def of(cls, name: str, t: Tensor) -> GlobalPtr:
        storage_elems = t.untyped_storage().nbytes() // t.element_size()
        return cls(name, torch.as_strided(t, (storage_elems - t.storage_offset(),), (1,), t.storage_offset()))

    def check(self, op: Operation, offsets: Tensor, mask: Tensor, verb: str) -> None:
        n = self.flat.numel()
        bad = mask & ((offsets < 0) | (offsets >= n))
        if bool(bad.any()):
            first = int(offsets[bad].reshape(-1)[0])
            raise ExecutionError(f"{verb} {self.name}[{first}] out of bounds (it has {n} elements)", op)

    def load(self, op: Operation, offsets: Tensor, mask: Tensor, other: Tensor) -> Tensor:
        offsets = offsets.long()
        mask = mask.expand(offsets.shape)
        self.check(op, offsets, mask, "reads")
        vals = (
            self.flat[offsets.clamp(0, max(self.flat.numel() - 1, 0))]
            if self.flat.numel()
            else torch.zeros(offsets.shape, dtype=self.flat.dtype)
        )
        return torch.where(mask, vals, other.to(self.flat.dtype))

    def store(self, op: Operation, offsets: Tensor, value: Tensor, mask: Tensor, add: bool = False) -> None:
        """Writes `value` where the mask is true; with `add`, adds it instead, as atomic adds
        per element: every lane naming an element adds to it (in lane order; the hardware's
        order is unspecified, so results may differ in the last bits)."""
        offsets = offsets.long()
        mask = mask.expand(offsets.shape)
        self.check(op, offsets, mask, "adds to" if add else "writes")
        value = value.to(self.flat.dtype).expand(offsets.shape)
        self.flat.index_put_((offsets[mask],), value[mask], accumulate=add)


@dataclass
class Descriptor:
    """A TMA descriptor: a strided global view of `shape` copied in boxes of `block`."""

    name: str
    ptr: GlobalPtr
    shape: list[int]
    strides: list[int]
    block: list[int]

    def box(self, coords: list[int]) -> tuple[Tensor, Tensor]:
        """Flat offsets of the box at `coords` and which of its elements are inside the global view."""
        offsets = torch.zeros(self.block, dtype=torch.int64)
        inside = torch.ones(self.block, dtype=torch.bool)
        rank = len(self.block)
        for d in range(rank):
            idx = coords[d] + torch.arange(self.block[d])
            view = [1] * rank
            view[d] = self.block[d]
            idx = idx.reshape(view)
            inside = inside & ((idx >= 0) & (idx < self.shape[d]))
            offsets = offsets + idx * self.strides[d]
        return offsets, inside

    def read(self, op: Operation, coords: list[int]) -> Tensor:
        offsets, inside = self.box(coords)
        zero = torch.zeros((), dtype=self.ptr.flat.dtype)
        return self.ptr.load(op, torch.where(inside, offsets, 0), inside, zero)

    def write(self, op: Operation, coords: list[int], value: Tensor) -> None:
        offsets, inside = self.box(coords)
        self.ptr.store(op, torch.where(inside, offsets, 0), value, inside)


# ---------------------------------------------------------------------------------------------
# Shared memory


class SharedBuffer:
    """A shared-memory allocation with per-element access history."""

    def __init__(self, label: str, shape: tuple[int, ...], dtype: torch.dtype) -> None:
        self.label = label
        poison = float("nan") if dtype.is_floating_point else 0
        self.data = torch.full(shape, poison, dtype=dtype).reshape(-1)
        n = self.data.numel()
        self.w_agent = torch.full((n,), -1, dtype=torch.int64)  # -1: never written
        self.w_epoch = torch.zeros(n, dtype=torch.int64)
        self.w_guard_bar = torch.full((n,), -1, dtype=torch.int64)  # barrier uid guarding a TMA write
        self.w_guard_phase = torch.zeros(n, dtype=torch.int64)
        self.w_op = torch.full((n,), -1, dtype=torch.int64)  # which op wrote (index into ops)
        self.r_epoch: dict[int, Tensor] = {}  # agent -> epoch of its last read of each element
        self.store_pending = torch.zeros(n, dtype=torch.int64)  # in-flight TMA store reading it
        self.ops: list[Operation] = []

    def op_id(self, op: Operation) -> int:
        for i, o in enumerate(self.ops):
            if o is op:
                return i
        self.ops.append(op)
        return len(self.ops) - 1


@dataclass
class SmemView:
    """Elements of a shared buffer: `idx` holds flat element positions, shaped like the view."""

    buffer: SharedBuffer
    idx: Tensor
    label: str


def _completed(agent: Agent, bar_uid: int, phase: int) -> bool:
    """Whether the completion of phase `phase` of barrier `bar_uid` happened before `agent`'s now."""
    return agent.clock.get(-1 - bar_uid, 0) >= phase + 1


def _agent_name(agents: dict[int, Agent], aid: int) -> str:
    a = agents.get(aid)
    return f"partition '{a.name}'" if a else f"agent {aid}"


class SharedMemory:
    """Checks and performs shared-memory accesses for the agents of one program."""

    def __init__(self, agents: dict[int, Agent], barrier_label: Any) -> None:
        self.agents = agents
        self.barrier_label = barrier_label  # uid -> "%bars[i]"
        self.copy_groups: set[int] = set()  # guard uids that are groups of asynchronous copies
        self.next_store = 1
        self._store_views: dict[int, tuple[SharedBuffer, Tensor]] = {}

    def read(self, op: Operation, view: SmemView, agent: Agent) -> Tensor:
        b, idx = view.buffer, view.idx.reshape(-1)
        wa = b.w_agent[idx]
        if bool((wa < 0).any()):
            raise RaceError(f"reads {view.label} before anything wrote it", op)
        gb, gp = b.w_guard_bar[idx], b.w_guard_phase[idx]
        for bar in torch.unique(gb[gb >= 0]).tolist():
            sel = gb == bar
            need = int(gp[sel].max())
            if not _completed(agent, bar, need):
                writer = b.ops[int(b.w_op[idx][sel][0])]
                if bar in self.copy_groups:
                    raise RaceError(
                        f"reads {view.label} copied by {_where(writer)} before {_agent_name(self.agents, agent.id)} "
                        "waited for that copy ('tile.async_commit', then 'tile.async_wait' with its group no "
                        "longer pending; or a wait on the barrier a later 'tile.async_copy_arrive' arrives on)",
                        op,
                    )
                raise RaceError(
                    f"reads {view.label} written by {_where(writer)} before {_agent_name(self.agents, agent.id)} "
                    f"waited on {self.barrier_label(bar)} for phase {need}, the phase that copy completes",
                    op,
                )
        generic = gb < 0
        for w in torch.unique(wa[generic]).tolist():
            if w == agent.id:
                continue
            sel = generic & (wa == w)
            need = int(b.w_epoch[idx][sel].max())
            if agent.clock.get(w, 0) < need:
                writer = b.ops[int(b.w_op[idx][sel][0])]
                raise RaceError(
                    f"reads {view.label} written by {_agent_name(self.agents, w)} at {_where(writer)} "
                    "with no barrier hand-over in between",
                    op,
                )
        epoch = agent.tick()
        r = b.r_epoch.setdefault(agent.id, torch.zeros_like(b.w_epoch))
        r[idx] = epoch
        return b.data[idx].reshape(view.idx.shape)

    def check_write(self, op: Operation, view: SmemView, agent: Agent, asynchronous: bool) -> None:
        b, idx = view.buffer, view.idx.reshape(-1)
        if bool((b.store_pending[idx] > 0).any()):
            raise RaceError(
                f"overwrites {view.label} while a 'tile.tma_store' may still be reading it "
                "(wait with 'tile.tma_store_wait' first)",
                op,
            )
        for q, r in b.r_epoch.items():
            need = int(r[idx].max())
            if need == 0:
                continue
            if q == agent.id:
                # program order covers the generic proxy; the TMA engine needs the reads fenced
                if asynchronous and agent.fence_epoch < need:
                    raise RaceError(
                        f"TMA-writes {view.label} after this program read it without 'tile.fence_async_shared' "
                        "between the read and the copy",
                        op,
                    )
                continue
            if agent.clock.get(q, 0) < need:
                raise RaceError(
                    f"writes {view.label} while {_agent_name(self.agents, q)} may still read it: its read is not "
                    "ordered before this write by a barrier hand-over (the slot is reused before it is released)",
                    op,
                )
            reader = self.agents.get(q)
            if asynchronous and reader is not None and reader.fence_epoch < need:
                raise RaceError(
                    f"TMA-writes {view.label} after {_agent_name(self.agents, q)} read it without "
                    "'tile.fence_async_shared' between its read and the hand-over",
                    op,
                )
        gb, gp = b.w_guard_bar[idx], b.w_guard_phase[idx]
        for bar in torch.unique(gb[gb >= 0]).tolist():
            need = int(gp[gb == bar].max())
            if not _completed(agent, bar, need):
                if bar in self.copy_groups:
                    raise RaceError(
                        f"overwrites {view.label} while an asynchronous copy into it has not been waited for", op
                    )
                raise RaceError(
                    f"overwrites {view.label} while a TMA copy into it (completing {self.barrier_label(bar)} "
                    f"phase {need}) has not been waited on",
                    op,
                )
        wa = b.w_agent[idx]
        for w in torch.unique(wa[(wa >= 0) & (gb < 0)]).tolist():
            if w != agent.id and agent.clock.get(w, 0) < int(b.w_epoch[idx][wa == w].max()):
                raise RaceError(f"writes {view.label} concurrently with {_agent_name(self.agents, w)}", op)

    def write(
        self,
        op: Operation,
        view: SmemView,
        agent: Agent,
        value: Tensor,
        guard: tuple[int, int] | None = None,
        tma: bool = True,
    ) -> None:
        """`guard`: the barrier phase (or group of asynchronous copies) whose completion makes the
        data readable; `tma`: a guarded write by the TMA engine (the async proxy: earlier reads of
        the bytes need a fence), not by cp.async (the threads' own)."""
        self.check_write(op, view, agent, asynchronous=guard is not None and tma)
        b, idx = view.buffer, view.idx.reshape(-1)
        epoch = agent.tick()
        b.data[idx] = value.reshape(-1).to(b.data.dtype)
        b.w_agent[idx] = agent.id
        b.w_epoch[idx] = epoch
        b.w_guard_bar[idx] = guard[0] if guard else -1
        b.w_guard_phase[idx] = guard[1] if guard else 0
        b.w_op[idx] = b.op_id(op)

    def tma_store_read(self, op: Operation, view: SmemView, agent: Agent) -> Tensor:
        """The TMA engine reads `view` for a store issued by `agent`: needs the agent's writes fenced."""
        b, idx = view.buffer, view.idx.reshape(-1)
        data = self.read(op, view, agent)
        mine = (b.w_agent[idx] == agent.id) & (b.w_guard_bar[idx] < 0)
        if bool(mine.any()) and agent.fence_epoch < int(b.w_epoch[idx][mine].max()):
            raise RaceError(
                f"copies {view.label} to global memory, but the writes to it are not followed by "
                "'tile.fence_async_shared'",
                op,
            )
        store_id = self.next_store
        self.next_store += 1
        b.store_pending[idx] = store_id
        agent.pending_stores.append(store_id)
        self._store_views[store_id] = (b, idx)
        return data

    def async_copy(self, op: Operation, view: SmemView, agent: Agent, value: Tensor, uid: int) -> None:
        """An asynchronous copy by `agent` into `view` (guard uid `uid`)."""
        self.copy_groups.add(uid)
        self.write(op, view, agent, value, guard=(uid, 0), tma=False)

    def store_wait(self, agent: Agent, pendings: int) -> None:
        keep = agent.pending_stores[len(agent.pending_stores) - pendings :] if pendings else []
        for sid in agent.pending_stores:
            if sid in keep:
                continue
            b, idx = self._store_views.pop(sid)
            still = b.store_pending[idx] == sid
            b.store_pending[idx[still]] = 0
        agent.pending_stores = list(keep)
