"""The reference interpreter: the executable meaning of the tile IR, on the CPU.

    tilec.interp.run(kernel, x, w, y, XBLOCK=1, RBLOCK=1024)

Runs a kernel over its grid on torch tensors, in every form the IR takes (logical, planned,
pipelined, warp-specialized), and reports the op that breaks a rule: an out-of-bounds access
(`ExecutionError`; a failed `tile.assert` is its `DeviceAssertError`), a shared-memory race
(`RaceError`), mbarrier misuse (`ProtocolError`), or partitions that wait on each other forever
(`DeadlockError`).
"""

from tilec.interp.errors import (
    DeadlockError,
    DeviceAssertError,
    ExecutionError,
    InterpError,
    ProtocolError,
    RaceError,
)
from tilec.interp.machine import run

__all__ = ["DeadlockError", "DeviceAssertError", "ExecutionError", "InterpError", "ProtocolError", "RaceError", "run"]
