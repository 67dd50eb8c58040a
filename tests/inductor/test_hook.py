"""torch.compile with the hook, end to end on the CPU: tilec's kernels run in Triton's interpreter,
the rest in Inductor's C++ code; results equal eager, and `tilec.report()` says what was taken."""

from __future__ import annotations

import logging

import pytest
import torch

import tilec
from tilec.frontend import reasons
from tilec.inductor import policy
from tilec.inductor.check import EXAMPLES, check_example, check_function

pytestmark = pytest.mark.usefixtures("fresh")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("spec", EXAMPLES)
def test_every_example_equals_eager_and_is_taken(spec: str, dtype: torch.dtype) -> None:
    result = check_example(spec, (16, 200), dtype, "cpu")
    assert result.ok, result.message
    assert len(result.records) == 1, result.records
    (rec,) = result.records
    assert rec.taken, rec.reason
    assert (rec.emitter, rec.pipeline, rec.device) == ("triton", "triton-default", "cpu")
    assert rec.kernel.startswith("triton_per_" if spec != "gelu_mlp" else "triton_poi_"), rec.kernel


def test_the_wrapper_calls_tilecs_launcher() -> None:
    from torch._inductor.utils import run_and_get_code

    def softmax(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, -1)

    x = torch.randn(8, 100)
    y, (code, *_) = run_and_get_code(torch.compile(softmax, backend="tilec", dynamic=False), x)
    torch.testing.assert_close(y, softmax(x))
    (rec,) = tilec.report()
    assert f'{rec.kernel} = __import__("tilec.runtime.launch"' in code
    assert f"{rec.kernel}.run(" in code and "stream=" in code
    # the kernel works in place on its output (stock bookkeeping: reuse, then the call)
    assert "# reuse" in code


def test_a_taken_kernels_record_carries_the_pass_remarks() -> None:
    """The record says why the pipeline's passes left the kernel as they did (docs/passes.md)."""

    def softmax(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, -1)

    x = torch.randn(8, 100)
    torch.testing.assert_close(torch.compile(softmax, backend="tilec", dynamic=False)(x), softmax(x))
    (rec,) = tilec.report()
    assert rec.taken and rec.pipeline == "triton-default"
    # a row of 100 is one tile: no loop for peel; f32 input: no narrow value for fp32-at-use; the
    # row read twice (max, then exp) is read once by reuse: no remark from it
    assert "peel: no loop" in rec.remarks, rec.remarks
    assert any(r.startswith("fp32-at-use: no widening cast") for r in rec.remarks), rec.remarks
    assert not any(r.startswith("reuse: ") for r in rec.remarks), rec.remarks
    # and what the chooser reads of it (bench/rules.py --kernels groups timings by it); the
    # autotuner did not run on the CPU: no timings
    # (two row inputs: this CPU kernel divides in place, reading its output buffer back as a row)
    assert rec.signature == ("softmax", 2, 4, 8, 100, 0) and rec.timings == () and rec.traced is None


def scatter_model(x: torch.Tensor, w: torch.Tensor, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    y = torch.softmax(x * 2, -1)
    z = y.index_add(0, idx, x) + 1  # an accumulating scatter (atomic adds)
    # random numbers on the CPU: tilec declines the kernel they are in (scaled by 1e-30, far below
    # an ulp of z: the result stays eager's)
    z = z + 1e-30 * torch.rand_like(z)
    r = z * torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    return torch.sin(r) + x, y.sum(0)


def scatter_inputs() -> list[torch.Tensor]:
    torch.manual_seed(0)
    return [torch.randn(32, 100), torch.randn(100), torch.randint(0, 32, (32,))]


def test_an_unsupported_op_falls_back_between_taken_kernels() -> None:
    result = check_function(scatter_model, scatter_inputs())
    assert result.ok, result.message
    by_taken = {r.taken: r for r in result.records}
    assert len(result.records) == 5 and len(result.taken) == 4
    assert by_taken[False].reason == reasons.RANDOM_ON_CPU
    assert by_taken[False].kernel.startswith("cpp_")  # Inductor's C++ code generation kept it


def test_disabled_leaves_every_kernel_to_inductor() -> None:
    with tilec.config.patch(enabled=False):
        result = check_example("softmax", (8, 100), torch.float32, "cpu")
    assert result.ok
    assert [(r.taken, r.reason) for r in result.records] == [(False, policy.DISABLED)]


def test_a_failure_falls_back_with_the_reason_logged(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("boom in the emitter")

    monkeypatch.setattr(policy, "build", broken)
    with caplog.at_level(logging.WARNING, logger="tilec"):
        result = check_example("rmsnorm", (8, 100), torch.float32, "cpu")
    assert result.ok
    (rec,) = result.records
    assert not rec.taken and rec.reason == f"{policy.INTERNAL_ERROR}: RuntimeError: boom in the emitter"
    assert "boom in the emitter" in caplog.text
    assert rec.signature is not None and rec.signature[0] == "sum"  # lowered before the failure


def test_strict_mode_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("boom in the emitter")

    monkeypatch.setattr(policy, "build", broken)
    with tilec.config.patch(strict=True), pytest.raises(Exception, match="boom in the emitter"):
        check_example("rmsnorm", (8, 100), torch.float32, "cpu")


def test_strict_mode_still_declines_unsupported_kernels() -> None:
    with tilec.config.patch(strict=True):
        result = check_function(scatter_model, scatter_inputs())
    assert result.ok and len(result.taken) == 4


def test_an_invalid_setting_falls_back_with_its_reason() -> None:
    with tilec.config.patch(emitter="cuda-c"):
        result = check_example("softmax", (8, 100), torch.float32, "cpu")
    assert result.ok
    (rec,) = result.records
    assert not rec.taken and "tilec.config.emitter must be one of" in str(rec.reason)


def test_gluon_on_the_cpu_is_declined() -> None:
    with tilec.config.patch(emitter="gluon"):
        result = check_example("softmax", (8, 100), torch.float32, "cpu")
    assert result.ok
    assert [r.reason for r in result.records] == [policy.GLUON_ON_CPU]


def test_cpp_wrapper_falls_back() -> None:
    with torch._inductor.config.patch(cpp_wrapper=True):
        result = check_example("softmax", (8, 100), torch.float32, "cpu")
    assert result.ok
    assert [(r.taken, r.reason) for r in result.records] == [(False, policy.CPP_WRAPPER)]


def test_a_summary_line_per_graph(caplog) -> None:
    with caplog.at_level(logging.INFO, logger="tilec"):
        check_function(scatter_model, scatter_inputs())
        check_example("softmax", (8, 100), torch.float32, "cpu")
        tilec.report()  # logs what is still pending
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("tilec: ")]
    assert len(lines) == 2, lines
    assert lines[0].startswith("tilec: 4 of 5 kernels taken (triton); taken: ")
    assert "not taken: cpp_" in lines[0] and "(random numbers on the CPU" in lines[0]
    assert lines[1] == "tilec: 1 of 1 kernels taken (triton); taken: triton_per_fused__softmax_0"


def test_records_and_reset() -> None:
    check_example("softmax", (8, 100), torch.float32, "cpu")
    records = tilec.report()
    assert len(records) == 1 and records[0].graph >= 1
    tilec.reset_report()
    assert tilec.report() == []


def test_inductors_triton_backend_for_the_cpu() -> None:
    """cpu_backend="triton": tilec's hook sits in TritonScheduling, as on CUDA; a kernel it declines
    would need a Triton CPU driver, which is said plainly instead of failing later."""
    from tilec.inductor.cpu import CpuFallbackError

    with torch._inductor.config.patch(cpu_backend="triton"):
        result = check_example("layernorm", (16, 200), torch.bfloat16, "cpu")
        assert result.ok and [r.taken for r in result.records] == [True]
        torch._dynamo.reset()
        with pytest.raises(Exception, match="needs a Triton CPU driver") as info:
            check_function(scatter_model, scatter_inputs())
    assert any(isinstance(e, CpuFallbackError) for e in _chain(info.value))


def _chain(e: BaseException | None) -> list[BaseException]:
    out: list[BaseException] = []
    while e is not None and e not in out:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def test_a_scalar_passed_by_value_is_a_scalar_parameter() -> None:
    """A 0-d CPU tensor (a loss's divisor computed with `.item()`, the scale below) reaches the
    kernel as a Python number (the wrapper writes `s.item()`): on the CPU path it is a scalar
    parameter of the kernel, in the buffer's place among the pointers, and the result equals
    eager's."""
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.ir.types import PointerType

    def scaled_softmax(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x / s, -1)

    x, s = torch.randn(8, 100), torch.tensor(3.0)
    result = check_function(scaled_softmax, [x, s])
    assert result.ok, result.message
    (rec,) = result.records
    assert rec.taken, rec.reason
    (k,) = capture(scaled_softmax, [x, s], device="cpu", strict=True)
    lowered = k.result
    assert isinstance(lowered, Lowered)
    value = [a for a in lowered.args if a.access == "value"]
    assert [(a.dtype, a.is_read, a.is_written) for a in value] == [("f32", False, False)]
    params = {p.name_hint: p for p in lowered.kernel.params}
    assert not isinstance(params[value[0].param].type, PointerType)
    assert [a.param for a in lowered.args] == [p.name_hint for p in lowered.kernel.params][: len(lowered.args)]
