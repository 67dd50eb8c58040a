"""The CUDA path without a GPU: Inductor compiles for a fake H100 (tilec.frontend.capture.fake_h100)
with the hook installed, and stops after generating the wrapper. The wrapper must define each taken
kernel as tilec's launcher with the Gluon source, its Triton fallback and the TMA operands, call it
as `name.run(buffers..., stream=...)` after allocating its outputs, and define identical kernels once.
The Gluon source it embeds compiles to a cubin for sm_90 (no GPU needed)."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import tilec
from tilec.frontend.capture import _find, fake_h100

pytestmark = pytest.mark.usefixtures("fresh")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import attention_softmax  # noqa: E402
import layernorm  # noqa: E402
import rmsnorm  # noqa: E402
import softmax  # noqa: E402


class _StopError(Exception):
    pass


@pytest.fixture
def codegen(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., str]]:
    """compile(fn, *inputs) -> the wrapper code Inductor generates for a fake H100."""
    if torch.cuda.is_available():
        pytest.skip("a real GPU: tests/gpu covers it")
    from torch._inductor import graph as graph_mod
    from torch._subclasses.fake_tensor import FakeTensorMode

    codes: list[str] = []

    def compile_to_module(self: Any) -> Any:
        code = self.codegen()[0]
        codes.append(getattr(code, "value", code))
        raise _StopError

    monkeypatch.setattr(graph_mod.GraphLowering, "_compile_to_module", compile_to_module)

    def generate(fn: Callable[..., Any], *inputs: torch.Tensor) -> str:
        patches = {"fx_graph_cache": False, "compile_threads": 1, "shape_padding": False}
        with fake_h100(), torch._inductor.config.patch(patches):
            with FakeTensorMode():
                args = [torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cuda") for x in inputs]
            torch._dynamo.reset()
            try:
                torch.compile(fn, fullgraph=True, dynamic=False)(*args)
            except Exception as e:
                if _find(e, _StopError) is None:
                    raise
        return codes[-1]

    yield generate
    torch._dynamo.reset()


def definitions(code: str) -> dict[str, list[Any]]:
    """kernel name -> the arguments of its load_kernel(...) call (constants)."""
    out: dict[str, list[Any]] = {}
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "attr", "") == "load_kernel"
        ):
            call = node.value
            args = [ast.literal_eval(a) for a in call.args]
            args.append({k.arg: ast.literal_eval(k.value) for k in call.keywords})
            out[node.targets[0].id] = args  # type: ignore[attr-defined]
    return out


def bf16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.bfloat16)


def test_gluon_with_a_triton_fallback_and_tma_operands(codegen: Callable[..., str]) -> None:
    code = codegen(rmsnorm.forward, bf16(64, 1000), bf16(1000))
    (rec,) = tilec.report()
    assert (rec.taken, rec.emitter, rec.pipeline, rec.device) == (True, "gluon", "gluon-default", "cuda")
    (name, (kname, source, kind, kw)), *_ = definitions(code).items()
    assert name == kname == rec.kernel
    assert kind == "gluon" and f"def {name}(" in source and "TensorDescriptor" in source
    assert kw["fallback_kind"] == "triton" and f"def {name}(" in kw["fallback"]
    assert kw["order"] == kw["fallback_order"] == [0, 1, 2]
    assert kw["tma"] == [(0, (1000, 1), 2)]  # x is read through TMA: 1000 bf16 per row
    assert kw["device"] == "cuda"
    # outputs allocated before the call, the call on Inductor's stream
    alloc = code.index("buf1 = empty_strided_cuda((64, 1000), (1000, 1), torch.bfloat16)")
    call = code.index(f"{name}.run(arg0_1, arg1_1, buf1, stream=")
    assert alloc < call


def test_the_triton_emitter(codegen: Callable[..., str]) -> None:
    with tilec.config.patch(emitter="triton"):
        code = codegen(rmsnorm.forward, bf16(64, 1000), bf16(1000))
    (rec,) = tilec.report()
    assert (rec.emitter, rec.pipeline) == ("triton", "triton-default")
    ((_, _, kind, kw),) = definitions(code).values()
    assert kind == "triton" and "fallback" not in kw and "tma" not in kw


def test_the_chooser_declines_where_stock_measured_faster(codegen: Callable[..., str]) -> None:
    """LayerNorm rows of 2 KB: stock Inductor's kernel measured no slower on the H100, so it stays;
    softmax rows of 5 KB: the Triton emitter measured fastest. tilec.report() says which and why."""
    with tilec.config.patch(decline=True):
        code = codegen(layernorm.forward, bf16(64, 1000), bf16(1000), bf16(1000))
        (rec,) = tilec.report()
        assert not rec.taken and rec.reason.startswith("stock Inductor measured faster for mean-var rows")
        assert "tilec.runtime.launch" not in code and "@triton.jit" in code  # stock's own kernel
        tilec.reset_report()
        codegen(softmax.forward, bf16(64, 2500))
        (rec,) = tilec.report()
        assert rec.taken and rec.emitter == "triton"


def test_a_graph_tilec_declines_runs_stocks_wrapper_unchanged(codegen: Callable[..., str]) -> None:
    """Where tilec declines every kernel, the wrapper is stock's line for line but for its report
    of the decision, one call at module level (run when the module loads, not at every call) and
    the graph's id: a declined graph costs the host nothing per call."""
    inputs = (bf16(64, 1000), bf16(1000), bf16(1000))
    with tilec.config.patch(decline=True):
        declined = codegen(layernorm.forward, *inputs)
    with tilec.config.patch(enabled=False):
        stock = codegen(layernorm.forward, *inputs)

    def body(code: str) -> list[str]:
        lines = code.splitlines()
        report = [i for i, line in enumerate(lines) if "tilec.inductor.report" in line]
        assert len(report) == 1 and not lines[report[0]].startswith(" "), report  # module level
        return [line for i, line in enumerate(lines) if i != report[0] and not line.startswith("# AOT ID")]

    assert "stock Inductor measured faster" in declined and "tilec.runtime.launch" not in declined
    assert body(declined) == body(stock)


def test_identical_kernels_are_defined_once(codegen: Callable[..., str]) -> None:
    def two_layers(x: torch.Tensor, m: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = rmsnorm.forward(x, w) @ m  # the matmul keeps the norms apart
        return h, rmsnorm.forward(h, w)  # h is an output too: the second norm is not in place

    code = codegen(two_layers, bf16(64, 1000), bf16(1000, 1000), bf16(1000))
    records = tilec.report()
    assert len(records) == 2 and all(r.taken for r in records)
    assert records[0].kernel == records[1].kernel
    assert len(definitions(code)) == 1
    assert code.count(f"{records[0].kernel}.run(") == 2


def test_layernorm_writes_all_three_outputs(codegen: Callable[..., str]) -> None:
    code = codegen(layernorm.forward, bf16(64, 1000), bf16(1000), bf16(1000))
    (rec,) = tilec.report()
    assert rec.taken
    call = next(line.strip() for line in code.splitlines() if f"{rec.kernel}.run(" in line)
    # y, and the saved mean and rstd (rstd computed in place), as stock Triton passes them
    assert call.count("buf") == 3, call


def test_attention_scores_in_place_on_the_matmul_output(codegen: Callable[..., str]) -> None:
    q, k = attention_softmax.example_inputs((2, 128, 128), torch.bfloat16)
    code = codegen(attention_softmax.forward, q, k)
    (rec,) = tilec.report()
    assert rec.taken, rec.reason
    lines = code.splitlines()
    call = next(i for i, line in enumerate(lines) if f"{rec.kernel}.run(" in line)
    out = lines[call].split(".run(")[1].split(",")[0]  # the kernel's in_out_ptr0
    reuse = next(line.strip() for line in lines[:call] if line.strip().startswith(f"{out} = "))
    matmul_out = reuse.split(" = ")[1].split(";")[0]
    assert reuse.endswith("# reuse"), reuse
    assert any("extern_kernels.bmm(" in line and f"out={matmul_out}" in line for line in lines[:call])


def test_the_embedded_gluon_source_compiles_for_sm90(codegen: Callable[..., str]) -> None:
    from tilec.emit.check import check_compile
    from tilec.emit.gluon import GluonModule

    code = codegen(rmsnorm.forward, bf16(64, 1000), bf16(1000))
    ((name, source, _, _),) = definitions(code).values()
    report = check_compile(GluonModule(name, source), "sm_90")
    assert report.ok, report.error


def test_a_mix_order_kernels_workspace_rows_are_summed_in_one_launch(codegen: Callable[..., str]) -> None:
    """LayerNorm's backward at 4096x2048, a mix-order reduction Inductor fuses: with tilec's banded
    kernel taken, the wrapper's two ATen sums of the workspace's rows (dW's and dB's, as stock
    writes them) become one launch of tilec's `workspace_sums` kernel, allocated before it, each
    weight's gradient a slice of its output, the output's name released after."""
    sys.path.insert(0, str(ROOT / "tests" / "frontend"))
    from test_mix_order import backward_graph

    gm, inputs = backward_graph(4096, 2048, "layernorm")
    with tilec.config.patch(emitter="triton"):
        code = codegen(gm, *inputs)
    banded = [r for r in tilec.report() if r.signature and r.signature[0] == "mix-order"]
    assert len(banded) == 1 and banded[0].taken, tilec.report()
    assert ".sum(dim=0)" not in code, code
    (name,) = [n for n in definitions(code) if n.startswith("tilec_workspace_sums_")]
    (_, source, kind, kw) = definitions(code)[name]
    assert kind == "triton" and f"def {name}(" in source and kw["order"] == [0, 1, 2, 3, 4]
    lines = [line.strip() for line in code.splitlines()]
    alloc = next(
        i for i, line in enumerate(lines) if line.startswith("workspace_0_sums = empty_strided_cuda((2 * (2048),)")
    )
    call = next(i for i, line in enumerate(lines) if line.startswith(f"{name}.run(workspace_0, workspace_0_sums, "))
    assert alloc < call, lines[alloc : call + 1]
    # the workspace's rows (one per program of the band), the columns, the column sums; Inductor's stream
    assert re.fullmatch(rf"{name}\.run\(workspace_0, workspace_0_sums, \d+, 2048, 2, stream=\w+\)", lines[call]), lines[
        call
    ]
    slices = [line for line in lines[call + 1 : call + 4] if "= workspace_0_sums[" in line]
    assert [s.split(" = ")[1].split("]")[0] for s in slices] == [
        "workspace_0_sums[0 * (2048) : 1 * (2048)",
        "workspace_0_sums[1 * (2048) : 2 * (2048)",
    ], slices
    assert lines[call + 3] == "del workspace_0_sums"


def test_rmsnorms_weight_gradient_is_written_as_its_buffer_dtype(codegen: Callable[..., str]) -> None:
    """RMSNorm's backward at 4096x2048: one column sum, which the wrapper converts to the weight's
    bf16 (`.to(torch.bfloat16)`, a launch of its own): tilec's `workspace_sums` writes bf16."""
    sys.path.insert(0, str(ROOT / "tests" / "frontend"))
    from test_mix_order import backward_graph

    gm, inputs = backward_graph(4096, 2048, "rmsnorm")
    with tilec.config.patch(emitter="triton"):
        code = codegen(gm, *inputs)
    assert ".sum(dim=0)" not in code and ".to(torch.bfloat16)" not in code, code
    (name,) = [n for n in definitions(code) if n.startswith("tilec_workspace_sums_")]
    assert '"out": "*bf16"' in definitions(code)[name][1]
    assert "workspace_0_sums = empty_strided_cuda((1 * (2048),), (1,), torch.bfloat16)" in code


def test_a_mix_order_kernel_in_its_gluon_cluster_form(codegen: Callable[..., str]) -> None:
    """RMSNorm's backward at 4096x32768, which the H100's table fuses for the banded kernel's
    Gluon forms and whose rules take its cluster form there: with the Gluon emitter, the wrapper
    defines the mix-order kernel as tilec's Gluon launcher (`band-cluster` with the rule's options,
    no Triton variant: its band is the wrapper's split size), the workspace holds one row a
    program, a cluster of 2 (4096 rows over 66 clusters: bands of 63, 66 programs), and its rows
    are summed in one launch of `workspace_sums`."""
    sys.path.insert(0, str(ROOT / "tests" / "frontend"))
    from test_mix_order import backward_graph

    gm, inputs = backward_graph(4096, 32768, "rmsnorm")
    with tilec.config.patch(emitter="gluon"):
        code = codegen(gm, *inputs)
    (ring,) = [r for r in tilec.report() if r.signature and r.signature[0] == "mix-order"]
    assert ring.taken and ring.emitter == "gluon" and ring.pipeline.startswith("band-cluster"), ring
    (_, source, kind, kw) = definitions(code)[ring.kernel]
    assert kind == "gluon" and "fallback" not in kw and "async_copy" in source and "CLUSTER_PUSH" in source
    assert (
        "workspace_0 = empty_strided_cuda((2162688, ), (1, ), torch.float32)" in code
    )  # 66 rows of 32768 column sums, fp32
    assert (
        ".sum(dim=0)" not in code and len([n for n in definitions(code) if n.startswith("tilec_workspace_sums_")]) == 1
    )


def test_a_mix_order_kernel_without_a_ring_form_stays_stock_under_gluon(codegen: Callable[..., str]) -> None:
    """RMSNorm's backward at 4096x2048, which Inductor fuses itself: its row is one chunk, so the
    Gluon ring form cannot be made (band-ring's remark); with the Gluon emitter forced the kernel
    stays stock's, the reason naming the remark, strict mode or not (a decline, not a failure)."""
    from tilec.inductor.policy import NO_RING

    sys.path.insert(0, str(ROOT / "tests" / "frontend"))
    from test_mix_order import backward_graph

    gm, inputs = backward_graph(4096, 2048, "rmsnorm")
    with tilec.config.patch(emitter="gluon", strict=True):
        codegen(gm, *inputs)
    (banded,) = [r for r in tilec.report() if r.signature and r.signature[0] == "mix-order"]
    assert not banded.taken and banded.reason == f"{NO_RING}: band-ring: its row is not in chunks (band-chunks)"


def test_a_mix_order_kernel_the_rules_send_to_gluon_without_a_ring_form_runs_triton(
    codegen: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule taking Gluon for a mix-order kernel whose ring cannot be made (rows of 2048: one
    chunk) gets the banded Triton kernel, not stock's; and a mix-order kernel no rule covers,
    with the declines off, gets the banded Triton kernel by default, though its ring could be
    made (rows of 32768): its Gluon form only where measured."""
    from tilec.ir.target import H100
    from tilec.passes import chooser

    sys.path.insert(0, str(ROOT / "tests" / "frontend"))
    from test_mix_order import backward_graph

    gluon = chooser.Rule("mix-order", 0, 2**62, "gluon", "a test", "none", row_inputs=2)
    monkeypatch.setitem(chooser.TABLES, H100.name, (gluon, *chooser.TABLES[H100.name]))
    gm, inputs = backward_graph(4096, 2048, "rmsnorm")
    codegen(gm, *inputs)
    (banded,) = [r for r in tilec.report() if r.signature and r.signature[0] == "mix-order"]
    assert banded.taken and banded.emitter == "triton", banded
    monkeypatch.setitem(chooser.TABLES, H100.name, ())
    tilec.reset_report()
    gm, inputs = backward_graph(4096, 32768, "rmsnorm")  # rows the ring holds
    with tilec.config.patch(decline=False):
        codegen(gm, *inputs)
    (banded,) = [r for r in tilec.report() if r.signature and r.signature[0] == "mix-order"]
    assert banded.taken and banded.emitter == "triton", banded
