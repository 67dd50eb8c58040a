"""mbarriers, as the hardware has them: a phase counter, an arrival count, transaction bytes.

A fresh barrier is in phase 0 and behaves as if phase -1 (parity 1) had just completed. A phase
completes once it has all its arrivals and its transaction bytes have reached zero.
`wait(b, parity)` returns when the last completed phase has that parity.

Each agent's waits are also checked against the protocol every ring relies on: a wait targets the
next phase of its parity after the last one that agent saw. A wait whose target the barrier has
already lapped (only two phases are tracked), or that targets the phase after the one in
progress (the hardware would return at once), is a ProtocolError.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tilec.interp.errors import ProtocolError
from tilec.interp.memory import Agent
from tilec.ir.core import Operation


@dataclass
class MBarrier:
    uid: int
    label: str
    state: str = "uninitialized"  # "active", "invalidated"
    count: int = 1
    pending: int = 0  # arrivals still missing in the current phase
    tx: int = 0  # transaction bytes still missing (may dip below 0 before the expect arrives)
    phase: int = 0  # the phase in progress
    accum: dict[int, int] = field(default_factory=dict)  # clocks of this phase's arrivals
    done: dict[int, int] = field(default_factory=dict)  # clocks of every completed phase
    last_expect: Operation | None = None

    def describe(self) -> str:
        if self.state != "active":
            return f"{self.label} is {self.state}"
        missing = []
        if self.pending:
            missing.append(f"{self.pending} of {self.count} arrivals")
        if self.tx > 0:
            what = f"{self.tx} transaction bytes"
            if self.last_expect is not None and self.last_expect.loc:
                what += f" (expected at {self.last_expect.loc})"
            missing.append(what)
        return f"{self.label} is in phase {self.phase}, missing " + (" and ".join(missing) or "nothing")

    def _active(self, op: Operation) -> None:
        if self.state == "uninitialized":
            raise ProtocolError(f"uses {self.label} before 'tile.mbarrier_init'", op)
        if self.state == "invalidated":
            raise ProtocolError(f"uses {self.label} after 'tile.mbarrier_invalidate'", op)

    def init(self, op: Operation, count: int) -> None:
        if self.state == "active":
            raise ProtocolError(f"initializes {self.label} again without invalidating it", op)
        self.state, self.count, self.pending, self.tx, self.phase = "active", count, count, 0, 0
        self.accum, self.done = {}, {}

    def invalidate(self, op: Operation) -> None:
        self._active(op)
        if self.tx != 0 or self.pending != self.count:
            raise ProtocolError(f"invalidates {self.label} in the middle of phase {self.phase}", op)
        self.state = "invalidated"

    def arrive(self, op: Operation, agent: Agent, count: int = 1, landed: Sequence[int] = ()) -> None:
        """`count` arrivals by `agent`; `landed`: asynchronous copies (their guard uids) whose
        landing the arrivals hand on to whoever waits for the phase."""
        self._active(op)
        _join(self.accum, agent.clock)
        mark_landed(self.accum, landed)
        agent.tick()
        self.pending -= count
        if self.pending < 0:
            raise ProtocolError(
                f"arrives on {self.label} more often than its count ({self.count}) in phase {self.phase}", op
            )
        self._maybe_complete(op)

    def expect(self, op: Operation, agent: Agent, nbytes: int) -> None:
        self._active(op)
        self.tx += nbytes
        self.last_expect = op
        self.arrive(op, agent)

    def deliver(self, op: Operation, issuer_clock: dict[int, int], nbytes: int) -> int:
        """A TMA copy's bytes land; returns the phase they count towards."""
        self._active(op)
        phase = self.phase
        _join(self.accum, issuer_clock)
        self.tx -= nbytes
        self._maybe_complete(op)
        return phase

    @property
    def clock_id(self) -> int:
        """This barrier's entry in vector clocks: the number of its completed phases."""
        return barrier_clock_id(self.uid)

    def _maybe_complete(self, op: Operation) -> None:
        if self.pending == 0 and self.tx < 0:
            raise ProtocolError(
                f"brings {self.label}'s transaction bytes below zero in phase {self.phase}: "
                "the copies deliver more bytes than 'tile.mbarrier_expect' announced",
                op,
            )
        if self.pending == 0 and self.tx == 0:
            self.accum[self.clock_id] = self.phase + 1
            _join(self.done, self.accum)
            self.accum = {}
            self.phase += 1
            self.pending = self.count

    def target(self, op: Operation, agent: Agent, parity: int) -> int:
        """The phase this wait is for; raises if the barrier cannot track it."""
        self._active(op)
        if parity not in (0, 1):
            raise ProtocolError(f"waits on {self.label} with parity {parity}; parity is 0 or 1", op)
        seen = agent.observed.get(self.uid, -2)
        k = seen + 1 if (seen + 1) % 2 == parity else seen + 2
        if k <= self.phase - 2:
            raise ProtocolError(
                f"waits on {self.label} for phase {k}, but the barrier is already in phase {self.phase}: "
                "it tracks only the current and previous phase (the waiter fell behind, or the parity is wrong)",
                op,
            )
        if k >= self.phase + 1:
            raise ProtocolError(
                f"waits on {self.label} for phase {k}, two phases ahead of phase {self.phase - 1}, the last "
                "completed: the hardware would return at once (wrong parity?)",
                op,
            )
        return k

    def ready(self, k: int) -> bool:
        return self.phase - 1 >= k

    def observe(self, agent: Agent, k: int) -> None:
        agent.observed[self.uid] = k
        agent.join(self.done)


def barrier_clock_id(uid: int) -> int:
    return -1 - uid


def mark_landed(clock: dict[int, int], copies: Sequence[int]) -> None:
    """Marks asynchronous copies (their guard uids) landed in a vector clock: whoever holds it may
    read what they wrote."""
    for uid in copies:
        clock[barrier_clock_id(uid)] = max(clock.get(barrier_clock_id(uid), 0), 1)


def _join(into: dict[int, int], other: dict[int, int]) -> None:
    for key, v in other.items():
        if v > into.get(key, 0):
            into[key] = v
