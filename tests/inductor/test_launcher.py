"""tilec's launcher (`TilecKernel.run`): argument order per variant, the TMA guard (a misaligned
input takes the Triton variant), the descriptor cache (built once per pointer, never keeping a
tensor alive), and the fallback after a failed first launch. The primary variant here is a stand-in
for the Gluon module with the same interface (`descriptors`, `launch(..., descs=...)`), run on the
CPU; the real one runs in tests/gpu/test_hook_gpu.py."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from tilec import config as cfg
from tilec.runtime.launch import MAX_CACHED_POINTERS, TilecKernel, TmaOperand, Variant


class Descriptor:
    """What the launcher sees of Gluon's TensorDescriptor: a dataclass-like object with `base`."""

    def __init__(self, base: torch.Tensor, strides: list[int]) -> None:
        self.base, self.strides = base, strides


class FakeModule(SimpleNamespace):
    pass


def doubling_module(kind: str, calls: list[tuple[str, Any]], fail: bool = False) -> FakeModule:
    """launch(x, y): y = 2 * x, recording what it was given."""

    def descriptors(x: torch.Tensor, y: torch.Tensor) -> dict[str, Descriptor]:
        calls.append(("descriptors", x.data_ptr()))
        return {"x_desc": Descriptor(x, [x.shape[-1], 1])}

    def launch(x: torch.Tensor, y: torch.Tensor, num_sms: int = 1, descs: Any = None) -> None:
        if fail:
            raise RuntimeError("does not compile")
        if descs is not None:
            assert descs["x_desc"].base is x  # bound to this launch's tensor
        calls.append((kind, sorted(descs) if descs is not None else None))
        y.copy_(2 * x)

    return FakeModule(descriptors=descriptors, launch=launch)


def variant(module: FakeModule, kind: str, order: tuple[int, ...]) -> Variant:
    v = Variant("", kind, order, interpret=False)
    v._module = module  # type: ignore[assignment]
    return v


def make_kernel(calls: list[tuple[str, Any]], fail: bool = False, strides: tuple[int, ...] = (64, 1)) -> TilecKernel:
    # run(y, x): the primary's launch takes (x, y); the fallback's too
    k = TilecKernel(
        "k",
        variant(doubling_module("gluon", calls, fail), "gluon", (1, 0)),
        variant(doubling_module("triton", calls), "triton", (1, 0)),
        (TmaOperand(1, strides, 2),),
        device="cuda",
    )
    k._sms = lambda: 132  # type: ignore[method-assign]  # no GPU to ask
    return k


def kinds(calls: list[tuple[str, Any]]) -> list[str]:
    return [c[0] for c in calls]


def test_aligned_inputs_take_the_primary_and_descriptors_are_cached() -> None:
    calls: list[tuple[str, Any]] = []
    k = make_kernel(calls)
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    for _ in range(3):
        k.run(y, x)
        torch.testing.assert_close(y, 2 * x)
    assert kinds(calls) == ["descriptors", "gluon", "gluon", "gluon"]  # built once
    assert k.launches == {"primary": 3, "fallback": 0}


def test_a_misaligned_view_takes_the_triton_variant() -> None:
    calls: list[tuple[str, Any]] = []
    k = make_kernel(calls)
    storage = torch.randn(4 * 64 + 1, dtype=torch.bfloat16)
    x = storage[1:].view(4, 64)  # 2-byte offset: not 16-byte aligned
    assert x.data_ptr() % 16 != 0
    y = torch.empty(4, 64, dtype=torch.bfloat16)
    k.run(y, x)
    k.run(y, x)
    torch.testing.assert_close(y, 2 * x)
    assert kinds(calls) == ["triton", "triton"]
    aligned = torch.randn(4, 64, dtype=torch.bfloat16)
    k.run(y, aligned)
    assert kinds(calls)[-1] == "gluon"


def test_strides_tma_cannot_take_always_use_triton() -> None:
    calls: list[tuple[str, Any]] = []
    k = make_kernel(calls, strides=(3, 1))  # 6-byte rows
    x = torch.randn(4, 3, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    k.run(y, x)
    assert kinds(calls) == ["triton"]


def test_the_cache_keeps_no_tensor_alive() -> None:
    calls: list[tuple[str, Any]] = []
    k = make_kernel(calls)
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    k.run(y, x)
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None
    assert all(t.base is None for entry in k._descs.values() for t in entry.values())


def test_the_cache_is_bounded() -> None:
    calls: list[tuple[str, Any]] = []
    k = make_kernel(calls)
    y = torch.empty(4, 64, dtype=torch.bfloat16)
    xs = [torch.randn(4, 64, dtype=torch.bfloat16) for _ in range(MAX_CACHED_POINTERS + 5)]
    for x in xs:
        k.run(y, x)
    assert len(k._descs) <= MAX_CACHED_POINTERS


def test_a_failed_first_launch_falls_back_for_good(caplog) -> None:
    calls: list[tuple[str, Any]] = []
    k = make_kernel(calls, fail=True)
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    k.run(y, x)
    k.run(y, x)
    torch.testing.assert_close(y, 2 * x)
    assert kinds(calls) == ["descriptors", "triton", "triton"]
    assert k.launches == {"primary": 0, "fallback": 2}
    assert "failed on its first launch" in caplog.text


def test_strict_mode_raises_on_a_failed_launch() -> None:
    k = make_kernel([], fail=True)
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    with cfg.patch(strict=True), pytest.raises(RuntimeError, match="does not compile"):
        k.run(torch.empty_like(x), x)


def test_a_real_triton_module_in_the_interpreter(hook: None) -> None:
    """load_kernel on an emitted Triton kernel: the CPU path the wrapper takes."""
    from tilec.emit.triton import emit_triton
    from tilec.ir import parse
    from tilec.passes import run_pipeline
    from tilec.runtime.launch import load_kernel

    text = """
tile.kernel @scale(%x: ptr<f32>, %y: ptr<f32>) constexprs(XBLOCK) attributes {grid = [cdiv(100, XBLOCK)]} {
  %pid = tile.program_id : i32
  %xblock = tile.constant {value = XBLOCK} : i32
  %xoffset = tile.mul %pid, %xblock : i32
  %xrange = tile.arange {end = XBLOCK} : tile<[XBLOCK], i32>
  %xindex = tile.add %xrange, %xoffset : tile<[XBLOCK], i32>
  %n = tile.constant {value = 100} : i32
  %mask = tile.cmp %xindex, %n {predicate = "lt"} : tile<[XBLOCK], i1>
  %v = tile.load %x, %xindex, %mask : tile<[XBLOCK], f32>
  %two = tile.constant {value = 2.0} : f32
  %w = tile.mul %v, %two : tile<[XBLOCK], f32>
  tile.store %y, %xindex, %w, %mask
}
"""
    module = parse(text)
    run_pipeline(module, "triton-default")
    source = emit_triton(module.kernels[0]).source
    k = load_kernel("scale", source, "triton", order=[1, 0], device="cpu")  # run(y, x)
    x, y = torch.randn(100), torch.full((100,), float("nan"))
    k.run(y, x, stream=0)
    torch.testing.assert_close(y, 2 * x)
    assert k.launches == {"primary": 1, "fallback": 0}


class FakeCompiled:
    """What the launcher uses of Triton's CompiledKernel: `run(grid..., stream, ..., *args)`."""

    function, packed_metadata = "function", "metadata"

    def __init__(self, calls: list[tuple[str, Any]], key: Any) -> None:
        self.calls, self.key = calls, key

    def launch_metadata(self, grid: Any, stream: Any, *args: Any) -> None:
        return None

    def run(
        self, g0: int, g1: int, g2: int, stream: int, fn: Any, meta: Any, lm: Any, enter: Any, exit: Any, *args: Any
    ) -> None:
        self.calls.append(("compiled", (self.key, (g0, g1, g2), stream)))
        x, y, _block = args
        y.copy_(2 * x)


def compiling_module(calls: list[tuple[str, Any]]) -> FakeModule:
    """A module with the emitted interface of `launch_args` and a `launch` returning the compiled
    kernel (compiled once per alignment of x, as Triton's cache key does)."""

    def launch_args(x: torch.Tensor, y: torch.Tensor, num_sms: int = 1) -> tuple[tuple[int, ...], tuple[Any, ...]]:
        return (x.shape[0],), (x, y, 64)

    def launch(x: torch.Tensor, y: torch.Tensor, num_sms: int = 1) -> FakeCompiled:
        calls.append(("jit", x.data_ptr() % 16 == 0))
        y.copy_(2 * x)
        return FakeCompiled(calls, x.data_ptr() % 16 == 0)

    return FakeModule(launch_args=launch_args, launch=launch)


def test_after_the_first_launch_the_compiled_kernel_is_called_directly(monkeypatch) -> None:
    import tilec.runtime.launch as launch

    monkeypatch.setattr(launch, "_current_device", lambda: 0)
    monkeypatch.setattr(launch, "_current_stream", lambda index: 7)
    calls: list[tuple[str, Any]] = []
    k = TilecKernel("k", variant(compiling_module(calls), "triton", (0, 1)), device="cuda")
    k._sms = lambda: 132  # type: ignore[method-assign]
    x = torch.randn(4, 64)
    y = torch.empty_like(x)
    k.run(x, y)
    k.run(x, y)
    k.run(x, y, stream=9)
    torch.testing.assert_close(y, 2 * x)
    assert calls == [("jit", True), ("compiled", (True, (4, 1, 1), 7)), ("compiled", (True, (4, 1, 1), 9))]
    # an argument Triton would specialize differently (a pointer not 16-byte aligned) goes through
    # Triton again, and gets its own compiled kernel
    storage = torch.randn(4 * 64 + 1)
    odd = storage[1:].view(4, 64)
    k.run(odd, y)
    k.run(odd, y)
    torch.testing.assert_close(y, 2 * odd)
    assert calls[3:] == [("jit", False), ("compiled", (False, (4, 1, 1), 7))]
    assert k.launches == {"primary": 5, "fallback": 0}


class FakeCLaunch:
    """Triton's compiled C launcher: (grid, stream, function, cooperative, pdl, scratch x2,
    packed metadata, launch metadata, hooks x2, *kernel arguments)."""

    def __init__(self, calls: list[tuple[str, Any]]) -> None:
        self.calls = calls
        self.memory: dict[int, torch.Tensor] = {}  # the tensors at the addresses it is passed

    def __call__(self, g0: int, g1: int, g2: int, stream: int, fn: Any, *rest: Any) -> None:
        _coop, _pdl, _gs, _ps, meta, _lm, _enter, _exit, *args = rest
        self.calls.append(("c", ((g0, g1, g2), stream, fn, meta, tuple(type(a).__name__ for a in args))))
        x, y, _block = args
        self.memory[y].copy_(2 * self.memory[x])


class FakeLauncher:
    """Triton 3.6's CudaLauncher: callable as `compiled.run(...)`, with the C launcher underneath."""

    global_scratch_size = profile_scratch_size = 0
    launch_cooperative_grid = launch_pdl = False

    def __init__(self, calls: list[tuple[str, Any]]) -> None:
        self.calls, self.launch = calls, FakeCLaunch(calls)

    def __call__(self, g0: int, g1: int, g2: int, stream: int, fn: Any, meta: Any, lm: Any, *rest: Any) -> None:
        self.calls.append(("triton", stream))
        _, _, x, y, _block = rest
        y.copy_(2 * x)


def test_a_bound_launch_calls_the_c_launcher_directly(monkeypatch) -> None:
    """After Triton compiled the kernel, a launch with the wrapper's stream goes straight to the
    compiled C launcher, arguments in the kernel's order; a pointer of another alignment takes
    the general path (and Triton) again."""
    import tilec.runtime.launch as launch

    monkeypatch.setattr(launch, "_current_device", lambda: 0)
    monkeypatch.setattr(launch, "_current_stream", lambda index: 7)
    calls: list[tuple[str, Any]] = []

    class Compiled:
        function, packed_metadata = "function", "metadata"
        run = FakeLauncher(calls)

        def launch_metadata(self, *a: Any) -> None:
            return None

    def launch_args(x: torch.Tensor, y: torch.Tensor, num_sms: int = 1) -> tuple[tuple[int, ...], tuple[Any, ...]]:
        return (x.shape[0],), (x, y, 64)

    def jit_launch(x: torch.Tensor, y: torch.Tensor, num_sms: int = 1) -> Any:
        calls.append(("jit", x.data_ptr() % 16 == 0))
        y.copy_(2 * x)
        return Compiled()

    k = TilecKernel("k", variant(FakeModule(launch_args=launch_args, launch=jit_launch), "triton", (0, 1)))
    k._sms = lambda: 132  # type: ignore[method-assign]
    x, y = torch.randn(4, 64), torch.empty(4, 64)
    Compiled.run.launch.memory.update({x.data_ptr(): x, y.data_ptr(): y})
    k.run(x, y, stream=7)  # Triton's JIT compiles; bound from now on
    k.run(x, y, stream=7)
    y.zero_()
    k.run(x, y, stream=9)
    torch.testing.assert_close(y, 2 * x)
    # the buffers passed as their addresses: Triton's C launcher takes an integer as it is (a
    # tensor it would ask data_ptr() and the driver about, at every launch)
    c = ("function", "metadata", ("int", "int", "int"))
    assert calls == [("jit", True), ("c", ((4, 1, 1), 7, *c)), ("c", ((4, 1, 1), 9, *c))]
    assert k.launches == {"primary": 3, "fallback": 0}
    odd = torch.randn(4 * 64 + 1)[1:].view(4, 64)
    k.run(odd, y, stream=7)  # not the alignment it was bound for: Triton compiles another
    torch.testing.assert_close(y, 2 * odd)
    assert calls[3] == ("jit", False)


def compiled(c_launch: Any) -> Any:
    """A compiled kernel of Triton 3.6's shape whose launcher's C function is `c_launch`."""
    run = SimpleNamespace(
        launch=c_launch,
        global_scratch_size=0,
        profile_scratch_size=0,
        launch_cooperative_grid=False,
        launch_pdl=False,
    )
    return SimpleNamespace(function="function", packed_metadata="metadata", run=run, launch_metadata=lambda *a: None)


def test_a_number_passed_by_value_reaches_every_bound_launch(monkeypatch) -> None:
    """A value the wrapper passes as a number (`s.item()`, a loss's divisor) changes between calls:
    the bound launch passes each call's number (a float stays a float, an integer an integer),
    never the one of the launch it was bound at."""
    import tilec.runtime.launch as launch

    monkeypatch.setattr(launch, "_current_device", lambda: 0)
    monkeypatch.setattr(launch, "_current_stream", lambda index: 7)
    seen: list[tuple[Any, ...]] = []

    class CLaunch:  # a C function: no `__code__`
        def __call__(self, g0: int, g1: int, g2: int, stream: int, fn: Any, *rest: Any) -> None:
            x, y, s, n, _block = rest[8:]
            seen.append((type(s).__name__, s, n))
            memory[y].copy_(memory[x] * s + n)  # the bound launch passes addresses

    def launch_args(
        x: torch.Tensor, y: torch.Tensor, s: float, n: int, num_sms: int = 1
    ) -> tuple[tuple[int, ...], tuple[Any, ...]]:
        return (x.shape[0],), (x, y, s, n, 64)

    def jit_launch(x: torch.Tensor, y: torch.Tensor, s: float, n: int, num_sms: int = 1) -> Any:
        y.copy_(x * s + n)
        return compiled(CLaunch())

    module = FakeModule(launch_args=launch_args, launch=jit_launch, GRID=lambda x, y, s, n, num_sms=1: (x.shape[0],))
    k = TilecKernel("k", variant(module, "triton", (0, 1, 2, 3)))
    k._sms = lambda: 132  # type: ignore[method-assign]
    x, y = torch.randn(4, 64), torch.empty(4, 64)
    memory = {t.data_ptr(): t for t in (x, y)}
    k.run(x, y, 3.0, 1, stream=7)  # Triton's JIT compiles; bound from now on
    assert k._bound is not None
    for s, n in ((0.5, 2), (-2.25, 5)):
        k.run(x, y, s, n, stream=7)
        torch.testing.assert_close(y, x * s + n)
    assert seen == [("float", 0.5, 2), ("float", -2.25, 5)]
    assert k.launches == {"primary": 3, "fallback": 0}


def test_a_size_passed_divided_reaches_every_bound_launch_divided(monkeypatch) -> None:
    """A symbolic size the kernel knows to be a multiple of 16 (`multiple_of`) is passed divided
    by 16 (the emitted `launch_args` divides it; the kernel multiplies it back): the bound launch
    divides each call's size the same way, and a number passed by value beside it stays whole."""
    import tilec.runtime.launch as launch

    monkeypatch.setattr(launch, "_current_device", lambda: 0)
    monkeypatch.setattr(launch, "_current_stream", lambda index: 7)
    seen: list[tuple[Any, ...]] = []

    class CLaunch:  # a C function: no `__code__`
        def __call__(self, g0: int, g1: int, g2: int, stream: int, fn: Any, *rest: Any) -> None:
            x, y, n_over_16, s, _block = rest[8:]
            seen.append((g0, n_over_16, s))
            memory[y][: n_over_16 * 16].copy_(memory[x][: n_over_16 * 16] * s)  # addresses

    def grid(x: torch.Tensor, y: torch.Tensor, n: int, s: int, num_sms: int = 1) -> tuple[int, ...]:
        return (-(-n // 64),)

    def launch_args(
        x: torch.Tensor, y: torch.Tensor, n: int, s: int, num_sms: int = 1
    ) -> tuple[tuple[int, ...], tuple[Any, ...]]:
        return grid(x, y, n, s), (x, y, n // 16, s, 64)

    def jit_launch(x: torch.Tensor, y: torch.Tensor, n: int, s: int, num_sms: int = 1) -> Any:
        y[:n].copy_(x[:n] * s)
        return compiled(CLaunch())

    module = FakeModule(launch_args=launch_args, launch=jit_launch, GRID=grid)
    k = TilecKernel("k", variant(module, "triton", (0, 1, 2, 3)))
    k._sms = lambda: 132  # type: ignore[method-assign]
    x, y = torch.randn(1024), torch.zeros(1024)
    memory = {t.data_ptr(): t for t in (x, y)}
    k.run(x, y, 256, 3, stream=7)  # Triton's JIT compiles; bound from now on
    assert k._bound is not None and k._bound.size_args == (2, 3)
    for n, s in ((512, 2), (1024, 5), (16, 7)):
        y.zero_()
        k.run(x, y, n, s, stream=7)
        torch.testing.assert_close(y[:n], x[:n] * s)
        assert not y[n:].any()
    assert seen == [(8, 32, 2), (16, 64, 5), (1, 1, 7)]


@pytest.mark.parametrize("which", ["launch_enter_hook", "launch_exit_hook"])
def test_a_launch_hook_sends_bound_launches_back_to_triton(monkeypatch, which: str) -> None:
    """While a Triton launch hook is set (a profiler's), a bound kernel leaves the launch to
    Triton's path, which calls the hooks; once it is removed the bound launch resumes. (Triton's
    runtime knobs are looked up once and read at every launch: a hook added later is seen.)"""
    from triton import knobs

    import tilec.runtime.launch as launch

    monkeypatch.setattr(launch, "_current_device", lambda: 0)
    bound: list[int] = []

    class CLaunch:  # a C function: no `__code__`
        def __call__(self, *a: Any) -> None:
            bound.append(1)

    x = torch.randn(4, 64)
    b = launch._Bound.make(compiled(CLaunch()), (4,), (x, 64), (x,), 0, ())
    assert b is not None and not launch.knobs_hooked()
    assert b.launch((x,), 7) and bound == [1]
    chain = getattr(knobs.runtime, which)

    def hook(*a: Any) -> None:
        pass

    chain.add(hook)
    try:
        assert launch.knobs_hooked()
        assert not b.launch((x,), 7) and bound == [1]
    finally:
        chain.remove(hook)
    assert not launch.knobs_hooked()
    assert b.launch((x,), 7) and bound == [1, 1]


def test_rows_take_the_variant_of_their_length(monkeypatch) -> None:
    """A kernel over rows of symbolic length with plans for its shorter rows (`split`: the run()
    argument that is the row length, and the lengths bounding the `shorter` variants): each launch
    takes the variant of its row length, in any order, counted under its role, and a launch bound
    to one variant (`_Bound`) is not reused for rows of another."""
    import tilec.runtime.launch as launch

    monkeypatch.setattr(launch, "_current_device", lambda: 0)
    monkeypatch.setattr(launch, "_current_stream", lambda index: 7)
    calls: list[tuple[str, Any]] = []

    def module(kind: str, factor: int) -> FakeModule:
        def launch(x: torch.Tensor, y: torch.Tensor, n: int, num_sms: int = 1) -> None:
            calls.append((kind, n))
            y.copy_(factor * x)

        return FakeModule(launch=launch)

    # run(x, y, n): the row length is argument 2; rows shorter than 256 take "tiny", shorter than
    # 1024 "short", the others the primary
    tiny, short = variant(module("tiny", 4), "triton", (0, 1, 2)), variant(module("short", 3), "triton", (0, 1, 2))
    k = TilecKernel("k", variant(module("long", 2), "triton", (0, 1, 2)), split=(2, (256, 1024)), shorter=(tiny, short))
    k._sms = lambda: 132  # type: ignore[method-assign]
    x = torch.randn(4, 8)
    cases = (
        (1024, "long", 2),
        (1023, "short", 3),
        (256, "short", 3),
        (255, "tiny", 4),
        (1, "tiny", 4),
        (4096, "long", 2),
    )
    for n, kind, factor in cases:
        y = torch.empty_like(x)
        k.run(x, y, n)
        assert calls[-1] == (kind, n)
        torch.testing.assert_close(y, factor * x)
    assert k.launches == {"primary": 2, "fallback": 0, "below 256": 2, "below 1024": 2}
    assert "2 more by row length" in repr(k)

    bound: list[str] = []
    k._bound = SimpleNamespace(  # type: ignore[assignment]
        variant=short, launch=lambda args, stream: bound.append("short") or True
    )
    k.run(x, torch.empty_like(x), 512, stream=7)  # its rows: the bound variant
    k.run(x, torch.empty_like(x), 100, stream=7)  # tiny rows: not the bound variant
    k.run(x, torch.empty_like(x), 2048, stream=7)  # long rows: nor
    assert bound == ["short"] and calls[-2:] == [("tiny", 100), ("long", 2048)]
    # each launch counted under its variant's role, the bound one too
    assert k.launches == {"primary": 3, "fallback": 0, "below 256": 3, "below 1024": 3}


def test_a_split_needs_a_variant_per_length() -> None:
    calls: list[tuple[str, Any]] = []
    one = variant(doubling_module("triton", calls), "triton", (0, 1))
    with pytest.raises(ValueError, match="one variant per length"):
        TilecKernel("k", one, split=(1, (10, 20)), shorter=(one,))
    with pytest.raises(ValueError, match="one variant per length"):
        TilecKernel("k", one, split=(1, (10,)))
    with pytest.raises(ValueError, match="one variant per length"):
        TilecKernel("k", one, shorter=(one,))
