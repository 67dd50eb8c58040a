"""On the GPU: torch.compile with the hook, end to end.

Every example with the Gluon and with the Triton emitter equals eager with its kernel taken; each
long-row rule of the GPU's table runs its emitter and plan through the hook, equal to eager; a small
bf16 transformer block compiled whole equals eager with its norm and softmax kernels taken; a
misaligned input takes the Triton variant; a launch on another stream; the host cost of small
launches (printed, with stock Inductor's for comparison); `backend="tilec"` in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from gpu_support import hopper, skip_unless_runs
from torch import nn

import tilec
from tilec.inductor.build import pipeline_for
from tilec.inductor.check import EXAMPLES, check_example, check_function, example_inputs
from tilec.passes.chooser import TABLES
from tilec.passes.pipelines import with_plan
from tilec.runtime import loaded_kernels
from tilec.testing import relative_error

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hooked")]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import rmsnorm as rmsnorm_example  # noqa: E402


def emitters() -> list[str]:
    return ["gluon", "triton"] if hopper() else ["triton"]


def kernel_of(name: str):
    kernels = loaded_kernels(name)
    assert kernels, f"no loaded tilec kernel named {name}"
    return kernels[-1]


@pytest.mark.parametrize(
    "shape,dtype", [((130, 1000), torch.bfloat16), ((512, 8192), torch.float32)], ids=["130x1000-bf16", "512x8192-f32"]
)
@pytest.mark.parametrize("spec", EXAMPLES)
@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_examples_equal_eager_with_the_kernel_taken(
    emitter: str, spec: str, shape: tuple[int, int], dtype: torch.dtype
) -> None:
    if emitter not in emitters():
        pytest.skip("Gluon needs Hopper or newer")
    with tilec.config.patch(emitter=emitter):
        result = check_example(spec, shape, dtype, "cuda")
    print(result.line())
    assert result.ok, result.message
    assert result.records and all(r.taken for r in result.records), result.records
    # the emitter's pipeline, with a plan this GPU's rules measured for that emitter where they set
    # one: the pipeline the build runs for it (`pipeline_for`; these kernels are not banded, so the
    # rules for the norms' fused backward, `mix-order`, are not theirs)
    default = f"{emitter}-default"
    rules = TABLES.get(torch.cuda.get_device_name(), ())
    planned = {
        pipeline_for(emitter, emitter, r.plan, banded=False)
        for r in rules
        if r.plan and r.action == emitter and r.family != "mix-order"
    }
    assert {r.emitter for r in result.records} == {emitter}
    assert all(r.pipeline in {default, *planned} for r in result.records), result.records
    for rec in result.records:
        k = kernel_of(rec.kernel)
        assert k.primary.kind == emitter and k.launches["primary"] >= 1, k.launches


# the forward ops whose long-row rules the GPU's table holds, by family
LONG_ROW_OPS = {"sum": "rmsnorm", "mean-var": "layernorm:inference", "softmax": "softmax"}


@pytest.mark.parametrize("family", sorted(LONG_ROW_OPS))
def test_each_long_row_rule_of_this_gpu_runs_its_plan_through_the_hook(family: str) -> None:
    """Rows past one Triton tile (32768 bf16 elements and more): for each rule of this GPU's table
    that takes tilec there, the op at the row length where the rule begins, compiled with the hook,
    equals eager with its kernel taken by the rule's emitter and plan (on the H200 softmax rows of
    32768 by the Gluon loop, the row cached in shared memory)."""
    rules = TABLES.get(torch.cuda.get_device_name())
    if rules is None:
        pytest.skip("no rules for this GPU: the autotuner decides")
    checked = []
    for rule in rules:
        n = rule.lo // rule.elem_bytes
        if (
            rule.family != family
            or (rule.elem_bytes, rule.row_inputs, rule.symbolic) != (2, 1, False)
            or rule.action == "stock"
            or n <= 16384
            or (rule.action == "gluon" and not hopper())
        ):
            continue
        spec = LONG_ROW_OPS[family]
        shape = (4096 if n <= 65536 else 2048, n)  # enough rows that Inductor does not split the rows
        fn, inputs = example_inputs(spec, shape, torch.bfloat16, "cuda")
        torch._dynamo.reset()
        result = check_function(fn, inputs, f"{spec} {shape[0]}x{n}")
        assert result.ok, result.message
        (record,) = result.records
        assert record.taken and record.emitter == rule.action, record
        assert record.pipeline == with_plan(f"{rule.action}-default", rule.plan), record
        checked.append((spec, n, rule.action))
    if not checked:
        pytest.skip(f"this GPU's table keeps every {family} long row with stock")


class Block(nn.Module):
    """RMSNorm → linear (qkv) → causal attention scores and softmax → ·v → linear → LayerNorm."""

    def __init__(self, dim: int = 512, heads: int = 8) -> None:
        super().__init__()
        self.heads = heads
        self.norm_weight = nn.Parameter(torch.randn(dim) * 0.1 + 1)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim)
        self.ln = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        xf = x.float()
        h = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * self.norm_weight
        q, k, v = self.qkv(h).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) * (d // self.heads) ** -0.5
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        attn = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, s, d)
        return self.ln(self.out(y) + x)


@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_transformer_block(emitter: str) -> None:
    if emitter not in emitters():
        pytest.skip("Gluon needs Hopper or newer")
    torch.manual_seed(0)
    block = Block().cuda()
    x = torch.randn(2, 256, 512, device="cuda")
    reference = block(x)  # fp32 eager
    block16 = Block().cuda().to(torch.bfloat16)
    block16.load_state_dict({k: v.to(torch.bfloat16) for k, v in block.state_dict().items()})
    x16 = x.to(torch.bfloat16)
    with torch.no_grad():
        eager16 = block16(x16)
        with tilec.config.patch(emitter=emitter):
            compiled = torch.compile(block16, backend="tilec", dynamic=False, fullgraph=True)(x16)
    records = tilec.report()
    print("\n".join(f"  {r.kernel}: {'taken' if r.taken else r.reason}" for r in records))
    err_eager = relative_error(eager16.float(), reference.float())
    err_tilec = relative_error(compiled.float(), reference.float())
    print(f"relative error vs fp32: eager bf16 {err_eager:.2e}, compiled with tilec {err_tilec:.2e}")
    assert err_tilec <= max(1e-2, 2 * err_eager)
    taken = [r.kernel for r in records if r.taken]
    assert any("pow" in k and "rsqrt" in k for k in taken), records  # RMSNorm
    assert any("softmax" in k for k in taken), records
    assert any("layer_norm" in k for k in taken), records
    assert all(r.emitter == emitter for r in records if r.taken)


@pytest.mark.skipif(not hopper(), reason="TMA needs Hopper or newer")
def test_a_misaligned_view_takes_the_triton_variant() -> None:
    ex = rmsnorm_example
    storage = torch.randn(64 * 1000 + 1, device="cuda").to(torch.bfloat16)
    x = storage[1:].view(64, 1000)  # 2-byte offset: TMA cannot read it
    assert x.data_ptr() % 16 != 0
    w = torch.randn(1000, device="cuda").to(torch.bfloat16)
    with tilec.config.patch(emitter="gluon"):
        result = check_function(ex.forward, [x, w], name="rmsnorm misaligned")
    assert result.ok, result.message
    (rec,) = result.records
    assert rec.taken and rec.emitter == "gluon"
    k = kernel_of(rec.kernel)
    if k.tma:  # (a kernel without TMA reads any pointer: nothing to guard)
        assert k.launches["primary"] == 0 and k.launches["fallback"] >= 1, k.launches
        y = torch.compile(ex.forward, backend="tilec", dynamic=False, fullgraph=True)(x.clone(), w)  # aligned copy
        torch.testing.assert_close(y.float(), ex.forward(x, w).float(), atol=2e-2, rtol=2e-2)


def recorded_args(kernel) -> list[tuple]:
    """Makes `kernel` record the arguments the wrapper passes to run()."""
    calls: list[tuple] = []
    run = kernel.run

    def recording(*args, stream=None):
        calls.append(args)
        return run(*args, stream=stream)

    kernel.run = recording
    return calls


def test_a_launch_on_another_stream() -> None:
    x = torch.randn(256, 1000, device="cuda")
    fn = torch.compile(lambda x: torch.softmax(x, -1), backend="tilec", dynamic=False, fullgraph=True)
    fn(x)
    (rec,) = tilec.report()
    k = kernel_of(rec.kernel)
    calls = recorded_args(k)
    y = fn(x)
    (args,) = calls
    out = next(a for a in args if a.data_ptr() == y.data_ptr())
    out.fill_(float("nan"))
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    type(k).run(k, *args, stream=side.cuda_stream)  # not the current stream: made current for the launch
    side.synchronize()
    torch.testing.assert_close(y, torch.softmax(x, -1))


def test_small_launches_stay_cheap() -> None:
    """A 1x1024 RMSNorm in a loop: the compiled function's time per call with tilec (cached TMA
    descriptors) and with stock Inductor. Printed for the record; the cache must be hit."""
    ex = rmsnorm_example
    x = torch.randn(1, 1024, device="cuda").to(torch.bfloat16)
    w = torch.randn(1024, device="cuda").to(torch.bfloat16)

    def per_call(fn) -> float:
        for _ in range(20):
            fn(x, w)
        torch.cuda.synchronize()
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            fn(x, w)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n * 1e6

    tilec_fn = torch.compile(ex.forward, backend="tilec", dynamic=False, fullgraph=True)
    tilec_us = per_call(tilec_fn)
    (rec,) = tilec.report()
    k = kernel_of(rec.kernel)
    print(f"1x1024 RMSNorm, per call of the compiled function: tilec ({k.primary.kind}) {tilec_us:.1f} us")
    if k.tma:
        assert len(k._descs) == 1  # one pointer: its descriptors were built once
        calls = recorded_args(k)
        tilec_fn(x, w)
        (args,) = calls
        module, ordered = k.primary.module, k.primary.args(args)

        def launch(descs) -> float:
            for _ in range(20):
                module.launch(*ordered, num_sms=132, descs=descs)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(2000):
                module.launch(*ordered, num_sms=132, descs=descs)
            torch.cuda.synchronize()
            return (time.perf_counter() - t0) / 2000 * 1e6

        fresh_us = launch(None)  # descriptors built for every launch
        cached_us = launch(module.descriptors(*ordered))
        run_us = per_call(lambda x, w: type(k).run(k, *args))
        print(
            f"  the kernel alone: descriptors built per launch {fresh_us:.1f} us, reused {cached_us:.1f} us; "
            f"TilecKernel.run (guard + cache) {run_us:.1f} us"
        )
    torch._dynamo.reset()
    with tilec.config.patch(enabled=False):
        stock_us = per_call(torch.compile(ex.forward, backend="tilec", dynamic=False, fullgraph=True))
    print(f"  stock Inductor, per call of the compiled function: {stock_us:.1f} us")
    assert tilec_us < 20 * stock_us  # a sanity bound: the numbers above are the result


def test_backend_by_name_in_a_fresh_process() -> None:
    rules = TABLES.get(torch.cuda.get_device_name())
    if rules is None:
        pytest.skip("no rules for this GPU: the autotuner decides")
    (rule,) = [
        r
        for r in rules
        if (r.family, r.elem_bytes, r.row_inputs) == ("softmax", 2, 1) and not r.symbolic and r.lo <= 8192 < r.hi
    ]
    code = """
        import torch
        f = torch.compile(lambda x: torch.softmax(x, -1), backend="tilec", dynamic=False)
        x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)  # 8 KB rows: measured faster with tilec
        torch.testing.assert_close(f(x), torch.softmax(x, -1))
        import tilec
        print([(r.taken, r.emitter) for r in tilec.report()])
    """
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd="/", env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    expected = "gluon" if hopper() and rule.action == "gluon" else "triton"  # the rule's emitter
    assert rule.action != "stock" and r.stdout.strip() == f"[(True, '{expected}')]", r.stdout + r.stderr[-2000:]


@pytest.mark.parametrize("emitter", ["gluon", "triton"])
def test_reduce_overhead_replays_tilec_kernels(emitter: str) -> None:
    """mode="reduce-overhead": Inductor's CUDA-graph trees capture tilec's launch (TMA descriptors
    included, encoded for the graph's static buffers) and replay it; every call equals eager, new
    input values included, and the kernel is tilec's."""
    skip_unless_runs(emitter)
    torch._dynamo.reset()
    tilec.reset_report()
    with tilec.config.patch(emitter=emitter, decline=False):
        fn = torch.compile(lambda x: torch.softmax(x * 0.5, -1), backend="tilec", mode="reduce-overhead", dynamic=False)
        for i in range(6):  # warm-up, recording, then replays
            x = torch.randn(512, 2048, device="cuda", dtype=torch.bfloat16) * (i + 1)
            y = fn(x)
            torch.testing.assert_close(y.float(), torch.softmax(x.float() * 0.5, -1), atol=2e-3, rtol=2e-2)
    (rec,) = tilec.report()
    assert rec.taken and rec.emitter == emitter, rec
    assert kernel_of(rec.kernel).launches["primary"] >= 1
