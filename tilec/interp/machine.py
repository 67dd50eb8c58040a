"""Runs a kernel over its grid: programs one after another (in grid order or shuffled), and inside
a program the partitions of a warp-specialize region as coroutines switched at every barrier,
TMA and shared-memory op by a seeded scheduler.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from tilec.interp.barriers import MBarrier, barrier_clock_id, mark_landed
from tilec.interp.compute import Operands, run_pure, scalar
from tilec.interp.dtypes import to_torch
from tilec.interp.errors import DeadlockError, DeviceAssertError, ExecutionError, ProtocolError
from tilec.interp.memory import Agent, Descriptor, GlobalPtr, SharedBuffer, SharedMemory, SmemView
from tilec.ir.core import Block, Kernel, Operation, Value
from tilec.ir.dtypes import DType, Type
from tilec.ir.expr import IntExpr, evaluate
from tilec.ir.ops import (
    AssertOp,
    AsyncCommitOp,
    AsyncCopyArriveOp,
    AsyncCopyOp,
    AsyncWaitOp,
    AtomicAddOp,
    ClusterGatherOp,
    CtaBarrierOp,
    FenceAsyncSharedOp,
    ForOp,
    IfOp,
    LoadOp,
    MBarrierAllocOp,
    MBarrierArriveOp,
    MBarrierExpectOp,
    MBarrierInitOp,
    MBarrierInvalidateOp,
    MBarrierWaitOp,
    NumProgramsOp,
    ProgramIdOp,
    SmemAllocOp,
    SmemIndexOp,
    SmemLoadOp,
    SmemSliceOp,
    SmemStoreOp,
    StoreOp,
    TmaLoadOp,
    TmaStoreOp,
    TmaStoreWaitOp,
    WarpSpecializeOp,
    YieldOp,
)
from tilec.ir.types import SharedBufferType, TensorDescType


@dataclass
class Blocked:
    """A partition waiting for a barrier phase."""

    barrier: MBarrier
    phase: int
    op: Operation
    agent: Agent

    def ready(self) -> bool:
        return self.barrier.ready(self.phase)

    def describe(self) -> str:
        loc = f" at {self.op.loc}" if self.op.loc else ""
        return (
            f"partition '{self.agent.name}' waits{loc} on {self.barrier.label} for phase {self.phase} "
            f"(parity {self.phase % 2}); {self.barrier.describe()}"
        )


SWITCH = None  # yielded where the scheduler may switch to another partition
Event = Blocked | None
Exec = Generator[Event, None, list[Any]]


@dataclass
class BarrierArray:
    bars: list[MBarrier]

    def at(self, op: Operation, index: Any) -> MBarrier:
        i = int(index)
        if not 0 <= i < len(self.bars):
            raise ExecutionError(f"barrier index {i} out of range for {len(self.bars)} barriers", op)
        return self.bars[i]


def _name(v: Value) -> str:
    return f"%{v.name_hint}" if v.name_hint else "%<value>"


class Program:
    """One program instance: its shared memory, barriers and agents."""

    def __init__(self, launch: Launch, pid: tuple[int, int, int]) -> None:
        self.launch = launch
        self.pid = pid
        self.agents: dict[int, Agent] = {}
        self.barriers: dict[int, MBarrier] = {}
        self.buffers: list[SharedBuffer] = []
        self.smem = SharedMemory(self.agents, lambda uid: self.barriers[uid].label)
        self.next_uid = 0

    def finish(self, agent: Agent) -> None:
        """At the end of the program every TMA copy must have been waited on and every barrier settled."""
        for b in self.buffers:
            guarded = b.w_guard_bar >= 0
            for uid in torch.unique(b.w_guard_bar[guarded]).tolist():
                sel = guarded & (b.w_guard_bar == uid)
                phase = int(b.w_guard_phase[sel].max())
                if agent.clock.get(barrier_clock_id(uid), 0) < phase + 1:
                    writer = b.ops[int(b.w_op[sel][0])]
                    if uid in self.smem.copy_groups:
                        raise ProtocolError(
                            f"copies into {b.label} asynchronously, but nothing waited for the copy before the program "
                            "ended ('tile.async_wait', or a wait on the barrier a 'tile.async_copy_arrive' arrives on)",
                            writer,
                        )
                    raise ProtocolError(
                        f"copies into {b.label}, but nothing waited on {self.barriers[uid].label} phase {phase} "
                        "before the program ended: a producer issued more items than its consumer takes",
                        writer,
                    )
        for bar in self.barriers.values():
            if bar.state == "active" and bar.tx > 0:
                raise ProtocolError(
                    f"{bar.label} still expects {bar.tx} transaction bytes when the program ends", bar.last_expect
                )

    def new_agent(self, name: str, parent: Agent | None = None) -> Agent:
        a = Agent(len(self.agents), name)
        if parent is not None:
            a.join(parent.clock)
            a.observed = dict(parent.observed)
            a.fence_epoch = parent.fence_epoch
        self.agents[a.id] = a
        return a

    # -- blocks

    def exec_block(self, block: Block, env: dict[int, Any], agent: Agent) -> Exec:
        for op in block.ops:
            if isinstance(op, YieldOp):
                return [env[id(v)] for v in op.operands]
            args = Operands(op, [env[id(v)] for v in op.operands])
            handler = HANDLERS.get(type(op))
            if handler is None:
                results = run_pure(op, args, self.launch)
            else:
                results = yield from handler(self, op, args, env, agent)
            for r, v in zip(op.results, results):
                env[id(r)] = v
        return []

    # -- scheduling

    def schedule(self, parts: list[tuple[Agent, Exec]]) -> list[list[Any]]:
        gens = [g for _, g in parts]
        blocked: list[Blocked | None] = [None] * len(parts)
        done: list[list[Any] | None] = [None] * len(parts)
        while any(d is None for d in done):
            runnable = [i for i in range(len(parts)) if done[i] is None and (blocked[i] is None or blocked[i].ready())]  # type: ignore[union-attr]
            if not runnable:
                waits = "; ".join(b.describe() for b in blocked if b is not None)
                first = next(b for b in blocked if b is not None)
                raise DeadlockError(f"deadlock: every partition waits: {waits}", first.op)
            i = runnable[0] if len(runnable) == 1 else self.launch.rng.choice(runnable)
            if self.launch.trace is not None and len(parts) > 1:
                self.launch.trace.append(parts[i][0].name)
            try:
                blocked[i] = next(gens[i])
            except StopIteration as stop:
                done[i] = stop.value
                blocked[i] = None
        return [d for d in done if d is not None]


class Launch:
    """One kernel launch: arguments, constexprs, grid, and the programs run one after another."""

    def __init__(
        self,
        kernel: Kernel,
        env: dict[int, Any],
        constexprs: dict[str, int],
        grid: tuple[int, int, int],
        rng: random.Random,
        trace: list[str] | None = None,
    ) -> None:
        self.kernel = kernel
        self.params = env
        self.constexprs = constexprs
        self.grid = grid
        self.rng = rng
        self.trace = trace

    def shape(self, t: Type) -> tuple[int, ...]:
        dims = getattr(t, "shape", ())
        try:
            return tuple(evaluate(d, self.constexprs) for d in dims)
        except KeyError as e:
            raise ExecutionError(f"{e.args[0]}: pass the constexpr to tilec.interp.run") from None

    def value(self, e: IntExpr) -> int:
        try:
            return evaluate(e, self.constexprs)
        except KeyError as err:
            raise ExecutionError(f"{err.args[0]}: pass the constexpr to tilec.interp.run") from None

    def run_program(self, pid: tuple[int, int, int]) -> None:
        program = Program(self, pid)
        agent = program.new_agent("main")
        env = dict(self.params)
        program.schedule([(agent, program.exec_block(self.kernel.body, env, agent))])
        program.finish(agent)


# ---------------------------------------------------------------------------------------------
# Op handlers (everything that is not pure computation)

Handler = Callable[[Program, Any, Operands, dict[int, Any], Agent], Exec]
Effect = Callable[[Program, Any, Operands, dict[int, Any], Agent], list[Any]]
HANDLERS: dict[type, Handler] = {}


def handles(*classes: type) -> Callable[[Handler], Handler]:
    """Registers a handler that may block (a generator yielding Blocked or SWITCH)."""

    def register(fn: Handler) -> Handler:
        for c in classes:
            HANDLERS[c] = fn
        return fn

    return register


def effect(*classes: type, switch: bool = False) -> Callable[[Effect], Effect]:
    """Registers a handler that never blocks; with `switch`, the scheduler may switch partitions after it."""

    def register(fn: Effect) -> Effect:
        def run(p: Program, op: Any, args: Operands, env: dict[int, Any], agent: Agent) -> Exec:
            out = fn(p, op, args, env, agent)
            if switch:
                yield SWITCH
            return out

        for c in classes:
            HANDLERS[c] = run
        return fn

    return register


def _int(x: Any) -> int:
    return int(x.item()) if isinstance(x, torch.Tensor) else int(x)


@effect(ProgramIdOp, NumProgramsOp)
def _program_id(p: Program, op: Any, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    axis = op.attr("axis")
    value = p.launch.grid[axis] if isinstance(op, NumProgramsOp) else p.pid[axis]
    return [scalar(value, DType("i32"))]


@handles(ForOp)
def _for(p: Program, op: ForOp, args: Operands, env: dict[int, Any], agent: Agent) -> Exec:
    lower, upper, step = _int(args.lower), _int(args.upper), _int(args.step)
    if step <= 0:
        raise ExecutionError(f"step must be positive, got {step}", op)
    carried = list(args.inits)
    iv_dtype = to_torch(op.lower.type)  # type: ignore[arg-type]
    body = op.body
    for i in range(lower, upper, step):
        env[id(body.args[0])] = torch.tensor(i, dtype=iv_dtype)
        for a, v in zip(body.args[1:], carried):
            env[id(a)] = v
        carried = yield from p.exec_block(body, env, agent)
    return carried


@handles(IfOp)
def _if(p: Program, op: IfOp, args: Operands, env: dict[int, Any], agent: Agent) -> Exec:
    region = op.regions[0] if bool(args.cond) else op.regions[1]
    return (yield from p.exec_block(region, env, agent))


@effect(WarpSpecializeOp)
def _warp_specialize(p: Program, op: WarpSpecializeOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    parts = []
    children = []
    for i, region in enumerate(op.regions):
        child = p.new_agent("default" if i == 0 else f"worker {i}", agent)
        children.append(child)
        for a, v in zip(region.args, op.partition_captures(i)):
            env[id(a)] = env[id(v)]
        parts.append((child, p.exec_block(region, env, child)))
    results = p.schedule(parts)
    for child in children:
        agent.join(child.clock)
        for uid, k in child.observed.items():
            agent.observed[uid] = max(agent.observed.get(uid, -10), k)
        agent.fence_epoch = max(agent.fence_epoch, child.fence_epoch)
    return results[0]


@effect(AssertOp)
def _assert(p: Program, op: AssertOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    if not bool(torch.as_tensor(args.cond).all()):
        raise DeviceAssertError(op.attr("message"), op)
    return []


# -- global memory


@effect(LoadOp)
def _load(p: Program, op: LoadOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    ptr, offsets = args.ptr, args.offsets
    mask = args.mask if args.mask is not None else torch.ones((), dtype=torch.bool)
    other = args.other if args.other is not None else torch.zeros((), dtype=ptr.flat.dtype)
    return [ptr.load(op, offsets, mask, other)]


@effect(StoreOp, AtomicAddOp)
def _store(p: Program, op: StoreOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    mask = args.mask if args.mask is not None else torch.ones((), dtype=torch.bool)
    args.ptr.store(op, args.offsets, args.value, mask, add=isinstance(op, AtomicAddOp))
    return []


# -- shared memory


@effect(SmemAllocOp)
def _smem_alloc(p: Program, op: SmemAllocOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    t = op.result.type
    assert isinstance(t, SharedBufferType)
    shape = p.launch.shape(t)
    full = ((t.slots,) if t.slots is not None else ()) + shape
    buf = SharedBuffer(_name(op.result), full, to_torch(t.dtype))
    p.buffers.append(buf)
    return [SmemView(buf, torch.arange(buf.data.numel()).reshape(full), _name(op.result))]


@effect(SmemIndexOp)
def _smem_index(p: Program, op: SmemIndexOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    view, slot = args.buf, _int(args.slot)
    n = view.idx.shape[0]
    if not 0 <= slot < n:
        raise ExecutionError(f"slot {slot} out of range for {view.label} with {n} slots", op)
    return [SmemView(view.buffer, view.idx[slot], f"{view.label}[slot {slot}]")]


@effect(SmemSliceOp)
def _smem_slice(p: Program, op: SmemSliceOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    view = args.buf
    dim, start, length = op.attr("dim"), op.attr("start"), op.attr("length")
    return [
        SmemView(
            view.buffer, view.idx.narrow(dim, start, length), f"{view.label}[{start}:{start + length} of dim {dim}]"
        )
    ]


@effect(SmemLoadOp, switch=True)
def _smem_load(p: Program, op: SmemLoadOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    value = p.smem.read(op, args.buf, agent)
    return [value]


@effect(SmemStoreOp, switch=True)
def _smem_store(p: Program, op: SmemStoreOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    p.smem.write(op, args.buf, agent, args.value)
    return []


# -- TMA


@effect(TmaLoadOp, switch=True)
def _tma_load(p: Program, op: TmaLoadOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    if args.pred is not None and not bool(args.pred):
        return []
    bar = args.bars.at(op, args.index)
    bar._active(op)
    data = args.desc.read(op, [_int(c) for c in args.coords])
    p.smem.write(op, args.dst, agent, data, guard=(bar.uid, bar.phase))
    bar.deliver(op, dict(agent.clock), data.numel() * data.element_size())
    return []


# -- asynchronous copies (cp.async)


@effect(AsyncCopyOp, switch=True)
def _async_copy(p: Program, op: AsyncCopyOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    mask = args.mask if args.mask is not None else torch.ones((), dtype=torch.bool)
    data = args.ptr.load(op, args.offsets, mask, torch.zeros((), dtype=args.ptr.flat.dtype))  # off: 0
    uid = p.next_uid
    p.next_uid += 1
    agent.copy_group.append(uid)
    p.smem.async_copy(op, args.dst, agent, data, uid)
    return []


@effect(AsyncCommitOp)
def _async_commit(p: Program, op: AsyncCommitOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    agent.copy_groups.append(agent.copy_group)  # an empty group counts too
    agent.copy_group = []
    return []


@effect(AsyncWaitOp, switch=True)
def _async_wait(p: Program, op: AsyncWaitOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    keep = op.attr("pending")
    done = agent.copy_groups[: max(0, len(agent.copy_groups) - keep)]
    for group in done:  # their copies have landed: this agent may read them (and hand that on)
        mark_landed(agent.clock, group)
    agent.copy_groups = agent.copy_groups[len(done) :]
    return []


@effect(AsyncCopyArriveOp, switch=True)
def _async_copy_arrive(
    p: Program, op: AsyncCopyArriveOp, args: Operands, env: dict[int, Any], agent: Agent
) -> list[Any]:
    """Every thread of the agent arrives once, its copies so far landed: whoever waits for the
    phase may read them. (Each thread tracks its own copies; the agent's are all its threads'.)"""
    if agent.id != 0:
        raise ExecutionError("'tile.async_copy_arrive' runs only outside warp_specialize", op)
    bar = args.bars.at(op, args.index)
    threads = 32 * (p.launch.kernel.launch.num_warps or 4)
    copies = [uid for group in agent.copy_groups for uid in group] + agent.copy_group
    bar.arrive(op, agent, threads, landed=copies)  # the waiters may read them; this agent waits too
    return []


@effect(TmaStoreOp, switch=True)
def _tma_store(p: Program, op: TmaStoreOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    data = p.smem.tma_store_read(op, args.src, agent)
    args.desc.write(op, [_int(c) for c in args.coords], data)
    return []


@effect(TmaStoreWaitOp, switch=True)
def _tma_store_wait(p: Program, op: TmaStoreWaitOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    p.smem.store_wait(agent, op.attr("pendings"))
    return []


@effect(FenceAsyncSharedOp, switch=True)
def _fence(p: Program, op: FenceAsyncSharedOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    agent.fence_epoch = agent.tick()
    return []


@effect(CtaBarrierOp, switch=True)
def _cta_barrier(p: Program, op: CtaBarrierOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    return []


@effect(ClusterGatherOp)
def _cluster_gather(p: Program, op: ClusterGatherOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    """A program is a whole cluster, its tiles every CTA's part: CTA j's element of each operand,
    given to every CTA."""
    return [v[j].expand(v.shape[0]).clone() for v in args for j in range(v.shape[0])]


# -- mbarriers


@effect(MBarrierAllocOp)
def _mbarrier_alloc(p: Program, op: MBarrierAllocOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    count = op.result.type.count  # type: ignore[attr-defined]
    bars = []
    for i in range(count):
        bar = MBarrier(p.next_uid, f"{_name(op.result)}[{i}]")
        p.barriers[bar.uid] = bar
        p.next_uid += 1
        bars.append(bar)
    return [BarrierArray(bars)]


@effect(MBarrierInitOp, switch=True)
def _mbarrier_init(p: Program, op: MBarrierInitOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    args.bars.at(op, args.index).init(op, op.attr("count"))
    return []


@effect(MBarrierExpectOp, switch=True)
def _mbarrier_expect(p: Program, op: MBarrierExpectOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    nbytes = p.launch.value(op.attr("bytes"))
    args.bars.at(op, args.index).expect(op, agent, nbytes)
    return []


@effect(MBarrierArriveOp, switch=True)
def _mbarrier_arrive(p: Program, op: MBarrierArriveOp, args: Operands, env: dict[int, Any], agent: Agent) -> list[Any]:
    args.bars.at(op, args.index).arrive(op, agent, op.attr("count"))
    return []


@effect(MBarrierInvalidateOp, switch=True)
def _mbarrier_invalidate(
    p: Program, op: MBarrierInvalidateOp, args: Operands, env: dict[int, Any], agent: Agent
) -> list[Any]:
    args.bars.at(op, args.index).invalidate(op)
    return []


@handles(MBarrierWaitOp)
def _mbarrier_wait(p: Program, op: MBarrierWaitOp, args: Operands, env: dict[int, Any], agent: Agent) -> Exec:
    bar = args.bars.at(op, args.index)
    k = bar.target(op, agent, _int(args.phase))
    while not bar.ready(k):
        yield Blocked(bar, k, op, agent)
    if k <= bar.phase - 2:
        raise ProtocolError(
            f"resumes on {bar.label} for phase {k}, but the barrier has moved on to phase {bar.phase}: "
            "it was lapped while waiting",
            op,
        )
    bar.observe(agent, k)
    yield SWITCH
    return []


# ---------------------------------------------------------------------------------------------
# Entry point


def _bind(kernel: Kernel, args: tuple[Any, ...]) -> tuple[dict[int, Any], dict[str, Any]]:
    """Binds positional arguments to the kernel's non-descriptor parameters."""
    plain = [p for p in kernel.params if not isinstance(p.type, TensorDescType)]
    if len(args) != len(plain):
        names = ", ".join(p.name_hint or "?" for p in plain)
        raise ExecutionError(f"kernel @{kernel.name} takes {len(plain)} arguments ({names}), got {len(args)}")
    env: dict[int, Any] = {}
    by_name: dict[str, Any] = {}
    attrs_of = {id(p): a for p, a in zip(kernel.params, kernel.param_attrs)}
    for p, a in zip(plain, args):
        name = p.name_hint or "?"
        t = p.type
        value: Any
        if isinstance(t, DType):
            value = torch.tensor(a.item() if isinstance(a, torch.Tensor) else a, dtype=to_torch(t))
            m = attrs_of[id(p)].get("multiple_of")
            if m is not None and int(value.item()) % m:
                raise ExecutionError(
                    f"argument '{name}' is {int(value.item())}, not a multiple of {m} as the kernel says"
                )
            by_name[name] = value
        else:
            if not isinstance(a, torch.Tensor):
                raise ExecutionError(f"argument '{name}' must be a tensor")
            want = to_torch(t.pointee)  # type: ignore[attr-defined]
            if a.dtype != want:
                raise ExecutionError(f"argument '{name}' is a {a.dtype} tensor; the kernel takes {t}")
            if a.device.type != "cpu":
                raise ExecutionError(f"argument '{name}' is on {a.device}; the interpreter runs on the CPU")
            value = GlobalPtr.of(name, a)
            by_name[name] = a
        env[id(p)] = value
    return env, by_name


def run(
    kernel: Kernel,
    *args: Any,
    grid: tuple[int, ...] | None = None,
    seed: int = 0,
    shuffle: bool = False,
    num_sms: int = 132,
    trace: list[str] | None = None,
    programs: Sequence[int] | None = None,
    **constexprs: int,
) -> None:
    """Executes `kernel` over its grid on CPU tensors, writing outputs in place as the GPU would.

    Positional arguments go to the parameters that are not TMA descriptors, in order (pointers
    take tensors, scalars take numbers); descriptors are built from their source tensors.
    Constexprs the kernel leaves unbound are passed by keyword. `seed` drives the order of the
    programs (with `shuffle=True`) and the interleaving of warp-specialized partitions.
    `programs`: run only these programs of a 1-D grid (their ids, each within it), in that
    order; what the others would write is left as it was.
    """
    cx = kernel.bound_constexprs()
    for k, v in constexprs.items():
        if k not in kernel.constexprs:
            raise ExecutionError(f"kernel @{kernel.name} has no constexpr '{k}'")
        if k in cx and cx[k] != v:
            raise ExecutionError(f"constexpr '{k}' is bound to {cx[k]} in the kernel, not {v}")
        cx[k] = v
    env, by_name = _bind(kernel, args)
    # integer scalars name sizes in the kernel's expressions (a float one, NaN or infinite too, never)
    scalars = {
        k: int(v.item())
        for k, v in by_name.items()
        if isinstance(v, torch.Tensor) and v.dim() == 0 and not v.is_floating_point()
    }
    names = {**scalars, **cx, "num_sms": num_sms}

    def ev(e: IntExpr, what: str) -> int:
        try:
            return evaluate(e, names)
        except KeyError as err:
            raise ExecutionError(f"{what}: {err.args[0]}") from None

    for p, attrs in zip(kernel.params, kernel.param_attrs):
        t = p.type
        if isinstance(t, TensorDescType):
            src = attrs["source"]
            block = [ev(d, f"descriptor %{p.name_hint}") for d in t.block_shape]
            shape = [ev(d, f"descriptor %{p.name_hint}") for d in attrs["shape"]]
            strides = [ev(d, f"descriptor %{p.name_hint}") for d in attrs["strides"]]
            env[id(p)] = Descriptor(p.name_hint or "desc", GlobalPtr.of(src, by_name[src]), shape, strides, block)
    if grid is None:
        dims = [ev(g, "grid") for g in kernel.launch.grid]
    else:
        dims = list(grid)
    full = tuple(dims + [1] * (3 - len(dims)))
    launch = Launch(kernel, env, cx, full, random.Random(seed), trace)  # type: ignore[arg-type]
    pids = [(x, y, z) for z in range(full[2]) for y in range(full[1]) for x in range(full[0])]
    if programs is not None:
        if full[1:] != (1, 1) or any(not 0 <= p < full[0] for p in programs):
            raise ExecutionError(f"programs {list(programs)} are not ids of the 1-D grid {dims}")
        pids = [(p, 0, 0) for p in programs]
    if shuffle:
        launch.rng.shuffle(pids)
    for pid in pids:
        launch.run_program(pid)
