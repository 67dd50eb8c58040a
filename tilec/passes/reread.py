"""reread: a row read again from L2 keeps more of itself there.

A row too long to keep (in registers or shared memory) is read twice: a first loop over its
chunks accumulates the statistics, a second reads the row again and writes the output. The second
read comes from L2 only while the row is still there, and with a program per row on every SM the
rows in flight outgrow L2 from rows of 64-128 KiB on (132 programs x 512 KiB of a row of 262144
bf16 elements, and as much output, against 50 MB). Two plan options help L2 keep what is read
again:

- `reverse` (kernel attribute `reverse`): each loop that reads a row again runs from the row's
  last chunk back, so it starts with the chunks the first loop read last, the likeliest still in
  L2. Only loops that carry no value from one iteration to the next are reversed (their
  iterations are independent, and every output bit stays as it was), and only where each of their
  stores' offsets moves with the loop (a loop storing to one place each iteration would leave
  another last value) and it reads no pointer it writes but where it writes it (a chunk reading
  what another chunk wrote would read another value). Bounds need not be constants (a misaligned row's pieces, a symbolic row):
  the reversed index is then computed before the loop.
- `stream` (kernel attribute `stream`): the rows the kernel writes (stores of tiles wider than
  one column) are stored `evict_first`, so the output does not push the input's lines out of L2
  before the second read (per-row values, such as a norm's mean, keep the default).

Both are cache hints in effect: they change no value, only which lines L2 holds when. Where they
pay depends on the GPU, the op and the row length, so the plan survey times them and the chooser
takes them by rule (docs/performance.md). Run after `reuse`: a loop reading a cached row reads
shared memory and is not reversed, and `reuse` matches the loads of sibling loops by their
offsets, which the reversal rewrites.

Before (`reverse`; rows of 262144 in chunks of 32768):
    %s = tile.for %r = %c0 to %c262144 step %rblock iter_args(%a = %z) -> (...) { ... load %x ... }
    tile.for %r2 = %c0 to %c262144 step %rblock { ... load %x ... store %y, %offs2 ... }
After:
    %s = tile.for %r = %c0 to %c262144 step %rblock iter_args(%a = %z) -> (...) { ... }
    %r2_from = tile.constant {value = 229376} : i32
    tile.for %r2 = %c0 to %c262144 step %rblock {
      %r2_rev = tile.sub %r2_from, %r2 : i32
      ... the chunk at %r2_rev ...
    }
"""

from __future__ import annotations

from tilec.ir.builder import Builder
from tilec.ir.core import Kernel, Module, Operation, Value, defining_op, replace_uses
from tilec.ir.ops import ForOp, LoadOp, StoreOp
from tilec.ir.ops.memory import AtomicAddOp
from tilec.ir.types import TileType
from tilec.passes.base import Pass, register
from tilec.passes.plan import REVERSE, STREAM
from tilec.passes.rewrite import const_value, depends_on


def _pointers_read(op: Operation) -> set[int]:
    return {id(o.ptr) for o in op.walk() if isinstance(o, LoadOp)}


def _reversed_start(loop: ForOp, step: int, name: str) -> Value | None:
    """`lo + last`, where `last` is the loop's last index (`lo + (hi - lo - 1) // step * step`):
    the reversed index is that less the loop's own. A constant where the bounds are, else computed
    before the loop (the bounds of a misaligned row's pieces, a symbolic row's; where the loop runs
    no trip the value is never read). None for a loop of one trip or none."""
    b = Builder.before(loop)
    lo, hi = const_value(loop.lower), const_value(loop.upper)
    t = loop.lower.type
    if isinstance(lo, int) and isinstance(hi, int):
        count = -(-(hi - lo) // step)
        return b.constant(2 * lo + (count - 1) * step, t, name_hint=name) if count >= 2 else None  # type: ignore[arg-type]
    span = b.op("tile.sub", loop.upper, loop.lower, name_hint=f"{name}_span")
    last_step = b.op("tile.sub", span, b.constant(1, t), name_hint=f"{name}_last_step")  # type: ignore[arg-type]
    steps = b.op("tile.div", last_step, loop.step, name_hint=f"{name}_steps")
    last = b.op("tile.mul", steps, loop.step, name_hint=f"{name}_last")
    twice = b.op("tile.add", loop.lower, loop.lower, name_hint=f"{name}_lo")
    return b.op("tile.add", twice, last, name_hint=name)


def reverse_rereads(kernel: Kernel) -> list[str]:
    """Reverses the kernel's loops that read a row again (see the module's doc); returns why
    each such loop that could not be reversed was left."""
    why: list[str] = []
    read: set[int] = set()  # pointers loaded by the kernel's earlier loops
    turned = 0
    for loop in [op for op in kernel.body.ops if isinstance(op, ForOp)]:
        reads = _pointers_read(loop)
        again = reads & read
        read |= reads
        if not again or loop.iter_args:  # a loop that carries values (a running sum) stays in order
            continue
        iv = loop.induction_var
        name = f"loop %{iv.name_hint or 'iv'}"
        if any(isinstance(o, AtomicAddOp) for o in loop.walk()):
            why.append(f"{name} adds atomically")
            continue
        stores = [o for o in loop.walk() if isinstance(o, StoreOp)]
        if any(not depends_on(o.offsets, iv) for o in stores):
            why.append(f"{name} stores to the same place every chunk")
            continue
        written: dict[int, set[int]] = {}  # pointer -> the offsets stored to it
        for o in stores:
            written.setdefault(id(o.ptr), set()).add(id(o.offsets))
        loads = [o for o in loop.walk() if isinstance(o, LoadOp) and id(o.ptr) in written]
        if any(id(o.offsets) not in written[id(o.ptr)] for o in loads):
            why.append(f"{name} reads what it writes elsewhere in the row (an order it would change)")
            continue
        step = const_value(loop.step)
        if not isinstance(step, int) or step <= 0:
            why.append(f"{name} steps by a value that is not a positive constant")
            continue
        start = _reversed_start(loop, step, f"{iv.name_hint or 'iv'}_from")
        if start is None:
            turned += 1  # one chunk: nothing to turn around
            continue
        body = loop.body
        rev = Builder(body, 0).op("tile.sub", start, iv, name_hint=f"{iv.name_hint or 'iv'}_rev")
        replace_uses(body, iv, rev, keep=[defining_op(rev)])  # the reversal itself reads the loop's index
        turned += 1
    if not turned and not why:
        why.append("no loop reads its row again without carrying a value from one chunk to the next")
    return why


def stream_stores(kernel: Kernel) -> int:
    """Marks the stores of the rows the kernel writes (tiles wider than one column) evict-first;
    returns how many."""
    marked = 0
    for op in kernel.walk():
        if type(op) is StoreOp and isinstance(t := op.value.type, TileType) and t.rank == 2 and t.shape[-1] != 1:
            op.attributes["eviction"] = "evict_first"
            marked += 1
    return marked


@register
class Reread(Pass):
    """Reverses the loops that read a row again and stores the rows written evict-first, as the
    plan asks (`reverse`, `stream`)."""

    name = "reread"
    unchanged = "the plan asks for neither (its `reverse` and `stream`)"

    def run(self, module: Module) -> None:
        for kernel in module.kernels:
            if kernel.attributes.get(REVERSE):
                for why in reverse_rereads(kernel):
                    self.remark(kernel, why)
            if kernel.attributes.get(STREAM) and not stream_stores(kernel):
                self.remark(kernel, "it writes no row wider than one column")
