"""The sums of a banded kernel's workspace rows (`tilec.frontend.workspace`), the kernel the hook
launches in place of the wrapper's ATen sums: what it computes, in tilec's interpreter and emitted
as Triton under Triton's interpreter, for any rows, columns and number of column sums; and how the
hook rewrites the wrapper's lines (`tilec.inductor.wrapper.WorkspaceSums`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

from tilec import interp
from tilec.emit.triton import emit_triton
from tilec.frontend.workspace import OUT_DTYPES, PIPELINE, RBLOCK, XBLOCK, workspace_sums
from tilec.interp.dtypes import TORCH_DTYPES
from tilec.ir import parse, print_kernel
from tilec.passes import run_pipeline
from tilec.runtime import load_source


def planned(out: str = "f32") -> Any:
    module = parse(workspace_sums(out=out))
    run_pipeline(module, PIPELINE)
    return module.kernels[0]


def test_the_kernel_adds_each_column_sums_rows_in_fixed_steps() -> None:
    text = print_kernel(planned())
    assert "constexprs(XBLOCK = 64, RBLOCK = 32)" in text and "grid = [cdiv(cols, 64), sums], num_warps = 4" in text
    # RBLOCK rows of XBLOCK columns a step, masked by both; one reduction over the rows at the end
    assert "tile.for %r = %c0 to %rows step %rblock iter_args(%a = %zero)" in text
    assert "%v = tile.load %ws, %offs, %m :" in text and text.count("tile.reduce") == 1
    assert "tile.store %out, %ooffs, %srow, %cmask" in text


@settings(max_examples=examples(8), deadline=None)
@given(
    rows=st.integers(1, 3 * RBLOCK + 5),
    cols=st.integers(1, 2 * XBLOCK + 9),
    sums=st.integers(1, 3),
    out=st.sampled_from(OUT_DTYPES),
    triton=st.booleans(),
)
@example(rows=132, cols=2 * XBLOCK, sums=2, out="f32", triton=True)  # a band a SM on the H100, LayerNorm's dW and dB
@example(rows=131, cols=XBLOCK + 3, sums=1, out="bf16", triton=True)  # RMSNorm's dW, written as its bf16 buffer
@example(rows=1, cols=1, sums=1, out="f32", triton=False)
def test_the_kernel_sums_the_workspace_rows(rows: int, cols: int, sums: int, out: str, triton: bool) -> None:
    """Each column's sum over its rows, in fp32 (and rounded once to bf16 or f16 where written so:
    the bits the wrapper's `.to(dtype)` of the fp32 sum gives)."""
    gen = torch.Generator().manual_seed(rows * 1000 + cols * 10 + sums)
    ws = torch.randn(sums * rows * cols, generator=gen)
    dtype = TORCH_DTYPES[out]
    written = torch.full((sums * cols,), float("nan"), dtype=dtype)
    kernel = planned(out)
    if triton:
        load_source(emit_triton(kernel).source, interpret=True).launch(ws, written, rows, cols, sums)
    else:
        interp.run(kernel, ws, written, rows, cols, sums)
    want = ws.double().view(sums, rows, cols).sum(1).flatten()
    if out == "f32":
        torch.testing.assert_close(written.double(), want, rtol=1e-5, atol=1e-5 * rows)
    else:  # one rounding of an fp32 sum: within a unit of the last place of the exact sum's rounding
        torch.testing.assert_close(written.double(), want.to(dtype).double(), rtol=2**-7, atol=1e-5 * rows)


class _Wrapper:
    """What `WorkspaceSums` uses of Inductor's Python wrapper."""

    def __init__(self) -> None:
        self.lines: list[Any] = []
        self.src_to_kernel: dict[str, str] = {}
        self.kernels: dict[str, str] = {}

    def writeline(self, line: Any) -> None:
        self.lines.append(line)

    def next_kernel_suffix(self) -> str:
        return str(len(self.kernels))

    def define_kernel(self, name: str, code: str, metadata: str) -> None:
        self.kernels[name] = code

    def generate_kernel_call(self, name: str, args: list[str], **_: Any) -> None:
        self.writeline(f"{name}.run({', '.join(args)}, stream=stream0)")


def rewritten(lines: list[str], sums: int) -> tuple[list[Any], _Wrapper]:
    from torch._inductor.virtualized import V

    from tilec.inductor.wrapper import WorkspaceSums

    wrapper = _Wrapper()
    with V.set_graph_handler(SimpleNamespace(wrapper_code=wrapper)), WorkspaceSums(sums, "cuda"):  # type: ignore[arg-type]
        for line in lines:
            wrapper.writeline(line)
    return wrapper.lines, wrapper


def stock_sum(buf: str, idx: int, rest: str = "") -> str:
    return (
        f"{buf} = workspace_0[{idx} * (128) * (2048) : ({idx} + 1) * (128) * (2048)].view(128, 2048).sum(dim=0){rest}"
    )


def stock_sum_211(buf: str, idx: int, rest: str = "") -> str:
    """As torch 2.11 writes it."""
    return f"{buf} = workspace_0[{idx} * 128 * 2048 : ({idx} + 1) * 128 * 2048].view(128, 2048).sum(dim=0){rest}"


@pytest.mark.parametrize("written", [stock_sum, stock_sum_211])
def test_the_wrappers_sums_become_one_launch(written: Any) -> None:
    lines, wrapper = rewritten(
        ["kernel.run(...)", written("buf3", 0), written("buf5", 1, ".view([2048])"), "del workspace_0"], 2
    )
    (name,) = wrapper.kernels
    assert lines == [
        "kernel.run(...)",
        "workspace_0_sums = empty_strided_cuda((2 * (2048),), (1,), torch.float32)",
        f"{name}.run(workspace_0, workspace_0_sums, 128, 2048, 2, stream=stream0)",
        "buf3 = workspace_0_sums[0 * (2048) : 1 * (2048)]",
        "buf5 = workspace_0_sums[1 * (2048) : 2 * (2048)].view([2048])",
        "del workspace_0_sums",
        "del workspace_0",
    ]
    assert "load_kernel(" in wrapper.kernels[name] and "def tilec_workspace_sums_0(" in wrapper.kernels[name]


def test_sums_converted_to_one_dtype_are_written_in_it() -> None:
    """RMSNorm's one column sum, a bf16 buffer the wrapper converts the fp32 sum to: the kernel
    writes bf16, and no conversion follows. Sums converted to different types keep fp32 and their
    conversions."""
    lines, wrapper = rewritten([stock_sum_211("buf1", 0, ".to(torch.bfloat16)"), "del workspace_0"], 1)
    (name,) = wrapper.kernels
    assert lines == [
        "workspace_0_sums = empty_strided_cuda((1 * (2048),), (1,), torch.bfloat16)",
        f"{name}.run(workspace_0, workspace_0_sums, 128, 2048, 1, stream=stream0)",
        "buf1 = workspace_0_sums[0 * (2048) : 1 * (2048)]",
        "del workspace_0_sums",
        "del workspace_0",
    ]
    assert '"out": "*bf16"' in wrapper.kernels[name]  # the emitted signature
    mixed = [stock_sum("buf3", 0, ".to(torch.bfloat16)"), stock_sum("buf5", 1, ".to(torch.float16)")]
    lines, wrapper = rewritten(mixed, 2)
    assert "torch.float32)" in lines[0] and lines[2:4] == [
        "buf3 = workspace_0_sums[0 * (2048) : 1 * (2048)].to(torch.bfloat16)",
        "buf5 = workspace_0_sums[1 * (2048) : 2 * (2048)].to(torch.float16)",
    ]


def test_sums_written_otherwise_stay_stocks() -> None:
    """Fewer sums than the kernel has, sums out of order or of two workspaces: the lines pass
    through as stock wrote them, in order."""
    for lines, sums in [
        ([stock_sum("buf3", 0), "del workspace_0"], 2),
        ([stock_sum("buf5", 1), stock_sum("buf3", 0), "del workspace_0"], 2),
        ([stock_sum("buf3", 0), stock_sum("buf5", 1).replace("workspace_0", "workspace_1"), "x"], 2),
        ([stock_sum("buf3", 0).replace("0 * (128)", "0 * (64)"), "x"], 1),  # a slice of other rows
    ]:
        out, wrapper = rewritten(lines, sums)
        assert out == lines and not wrapper.kernels, out
