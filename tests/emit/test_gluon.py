"""The Gluon emitter: every reference kernel compiles for sm_90 and sm_100 without a GPU (in a
subprocess), with sane resources; IR that would fail at launch is refused; the barrier that keeps
two shared-memory reads two reads is the separate-reads pass's, printed where the IR has it."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from harness import planned

from tilec.emit.check import check_compile
from tilec.emit.common import EmitError
from tilec.emit.gluon import emit_gluon
from tilec.emit.gluon_api import gluon_api
from tilec.ir import parse, print_module
from tilec.passes import run_pipeline
from tilec.passes.pipelines import GLUON_DEFAULT

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
PHYSICAL = ["rmsnorm_tma", "rmsnorm_ring", "rmsnorm_ws"]


def kernel_for(name: str) -> object:
    text = (KERNELS / f"{name}.tile").read_text()
    if name == "rmsnorm_logical":
        return planned(text)
    return parse(text).kernels[0]


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
@pytest.mark.parametrize("name", [*PHYSICAL, "rmsnorm_logical"])
def test_reference_kernels_compile(name: str, arch: str) -> None:
    module = emit_gluon(kernel_for(name))  # type: ignore[arg-type]
    report = check_compile(module, arch)
    assert report.ok, report.error + "\n" + report.detail
    assert report.spills == 0, report.summary()
    assert 0 < report.registers <= (module.maxnreg or 255), report.summary()
    assert report.shared_bytes <= 232_448, report.summary()
    if name == "rmsnorm_ws":
        assert report.num_warps == 8  # 4 default warps + 1 producer, padded to a warp group


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
@pytest.mark.parametrize(("name", "ctas"), [("rmsnorm_cluster", 4), ("rmsnorm_cluster_smem", 8)])
def test_a_cluster_kernel_compiles_with_its_exchange(name: str, ctas: int, arch: str) -> None:
    """rmsnorm_cluster.tile (a row split across a cluster of 4 CTAs) and rmsnorm_cluster_smem.tile
    (8 CTAs, each slice copied into its shared memory by cp.async): launched as clusters, the
    exchange of `tile.cluster_gather` (the peers' shared memory read between cluster barriers) in
    the PTX, nothing spilled; a CTA's shared memory is its part of the split buffers (4 chunks of
    [1, 1024] bf16, 8 KiB), not the cluster's."""
    module = emit_gluon(kernel_for(name))  # type: ignore[arg-type]
    assert f"num_ctas={ctas}" in module.source and "cga_layout=[[1, 0], [2, 0]" in module.source
    report = check_compile(module, arch)
    assert report.ok, report.error + "\n" + report.detail
    assert report.num_ctas == ctas and report.cluster_exchange and report.spills == 0, report.summary()
    if name == "rmsnorm_cluster_smem":
        assert f"{gluon_api().cp_async}(" in module.source
        assert 4 * 1024 * 2 <= report.shared_bytes < 4 * 1024 * 2 + 1024, report.summary()


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
def test_a_pushed_exchange_in_a_loop_counts_its_uses(arch: str) -> None:
    """rmsnorm_cluster_rows.tile (the gather pushed every iteration of a loop over rows): the
    per-use exchange, its first use, parity and phase the loop's iteration, compiles as a cluster
    kernel with the exchange in the PTX, nothing spilled; at the top level the gather keeps the
    exchange that serves once (rmsnorm_cluster.tile with exchange = "push")."""
    module = emit_gluon(kernel_for("rmsnorm_cluster_rows"))  # type: ignore[arg-type]
    use = "((row - pid) // P)"
    assert f"({use} == 0).to(gl.int32)" in module.source and f"({use} % 2).to(gl.int32)" in module.source
    assert f"(({use} // 2) % 2).to(gl.int32)" in module.source and "CLUSTER_PUSH_C" in module.source
    assert "tilec_push_bars[2]" in module.source and "mbarrier.try_wait.parity" in module.source
    report = check_compile(module, arch)
    assert report.ok, report.error + "\n" + report.detail
    assert report.num_ctas == 4 and report.cluster_exchange and report.spills == 0, report.summary()
    once = (
        (KERNELS / "rmsnorm_cluster.tile")
        .read_text()
        .replace("tile.cluster_gather %part :", 'tile.cluster_gather %part {exchange = "push"} :')
    )
    source = emit_gluon(parse(once).kernels[0]).source
    assert "CLUSTER_PUSH" not in source and "tilec_push_slot" in source and "tilec_push_bars" not in source


def test_compile_failure_is_reported_not_raised() -> None:
    module = emit_gluon(kernel_for("rmsnorm_tma"))  # type: ignore[arg-type]
    module.source = module.source.replace("gl.sum(", "gl.no_such_reduction(")
    report = check_compile(module, "sm_90")
    assert not report.ok and "no_such_reduction" in report.error + report.detail


SHARED = "#s = #nvmma_shared<swizzle_byte_width = 0, element_bitwidth = 16, rank = 2>\n"


def tma_kernel(block: str) -> str:
    return (
        SHARED
        + f'tile.kernel @k(%x: ptr<bf16>, %d: tensordesc<[{block}], bf16, #s> {{source = "x", shape = [64, 64], strides = [64, 1]}}) '
        "attributes {grid = [1], num_warps = 4} {\n  %c0 = tile.constant {value = 0} : i32\n}\n"
    )


@pytest.mark.parametrize(
    "block,message",
    [
        ("8, 4", "the inner box dimension is 8 bytes; TMA needs at least 16"),
        ("8, 24", "box dimensions must be powers of two"),
    ],
)
def test_refuses_boxes_tma_cannot_copy(block: str, message: str) -> None:
    with pytest.raises(EmitError, match=message):
        emit_gluon(parse(tma_kernel(block)))


def test_refuses_shared_memory_over_budget() -> None:
    text = SHARED + (
        "tile.kernel @k() attributes {grid = [1], num_warps = 4} {\n"
        "  %s = tile.smem_alloc : smem<[128, 1024], bf16, #s>\n}\n"
    )
    with pytest.raises(Exception, match="shared memory; the budget is 232448"):
        emit_gluon(parse(text))


def test_refuses_unplanned_ir() -> None:
    with pytest.raises(EmitError, match="needs planned IR"):
        emit_gluon(parse((KERNELS / "rmsnorm_logical.tile").read_text()))


def test_two_reads_stay_two_reads_by_the_pass_not_the_emitter() -> None:
    """Emitters print, passes decide: without the kernel's barrier between its two reads of %buf
    the emitter prints none; separate-reads puts it back where the hand-written kernel has it."""
    text = (KERNELS / "rmsnorm_tma.tile").read_text()
    barrier = f"{gluon_api().cta_barrier}()"
    bare = parse(text.replace("  tile.cta_barrier\n", ""))
    assert barrier not in emit_gluon(bare).source
    run_pipeline(bare, "separate-reads")
    assert print_module(bare) == print_module(parse(text))
    source = emit_gluon(bare).source
    first = source.index("x1 = buf.load(BLOCKED)")
    second = source.index("x2 = buf.load(BLOCKED)")
    assert barrier in source[first:second]


def _example(name: str, rows: int, cols: int) -> Any:  # tests/passes/examples.py's Example
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))
    from examples import example

    return example(name, rows, cols)


# a shared-memory read in emitted Gluon: `name = buffer.load(LAYOUT)`
SMEM_READ = re.compile(r"\s*\w+ = (\w+)\.load\((\w+)\)(  #.*)?$")


@pytest.mark.parametrize("name", ["rmsnorm", "softmax"])
def test_gluon_default_keeps_the_cached_rows_reads_apart(name: str) -> None:
    """gluon-default on a kernel whose phases read the cached row from shared memory: its last pass
    places a barrier right before the second read of the row, the only line it adds to the emitted
    source; without that pass the emitter prints none there."""
    ex = _example(name, 8, 1000)
    assert GLUON_DEFAULT[-1] == "separate-reads"
    barrier = f"{gluon_api().cta_barrier}()"

    def is_barrier(line: str) -> bool:  # (with the comment naming its IR line, if any)
        return line.strip().split("  #")[0] == barrier

    lines = emit_gluon(ex.kernel("gluon-default")).source.splitlines()
    lines_without = emit_gluon(ex.kernel(",".join(GLUON_DEFAULT[:-1]))).source.splitlines()
    reads = [(i, m.group(1, 2)) for i, line in enumerate(lines) if (m := SMEM_READ.match(line))]
    first, again = next((a, b) for n, (a, key) in enumerate(reads) for b, other in reads[n + 1 :] if other == key)
    assert is_barrier(lines[again - 1]), "\n".join(lines[first : again + 1])
    # the pass's barriers (each right before a read) are all that differs
    added = [i for i, line in enumerate(lines) if is_barrier(line) and SMEM_READ.match(lines[i + 1])]
    assert again - 1 in added
    assert [line for i, line in enumerate(lines) if i not in added] == lines_without
    # and without the pass, nothing separates the two reads
    shift = sum(i < first for i in added)
    between = lines_without[first - shift : again - shift - 1]
    assert between[0] == lines[first] and lines_without[again - shift - 1] == lines[again]
    assert not any(is_barrier(line) for line in between), "\n".join(between)


def test_output_is_deterministic_and_mirrors_the_ir() -> None:
    a = emit_gluon(kernel_for("rmsnorm_ws")).source  # type: ignore[arg-type]
    b = emit_gluon(kernel_for("rmsnorm_ws")).source  # type: ignore[arg-type]
    assert a == b
    assert "SHARED = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=16, rank=2))" in a
    assert "ring = gl.allocate_shared_memory(gl.bfloat16, [3, 1, 128], SHARED)" in a
    assert "mbarrier.wait(empty_w.index(slot_p), epar)" in a
    assert f"{gluon_api().tma_load}(xd_w, [row_w, col], ready_w.index(slot_p), view_p)" in a
    assert "gl.warp_specialize([(rmsnorm_ws_default, (w, y, row, ring, ready, empty)), (rmsnorm_ws_worker1," in a
    assert "[1], [24])" in a
    assert "maxnreg=128" in a
    # compile_only compiles what launch launches: the same grid, arguments and options
    launch = a[a.index("def launch(") :].split("\n\n")[0]
    compile_only = a[a.index("def compile_only(") :].split("\n\n")[0]
    assert (
        compile_only.strip().replace("compile_only", "launch").replace(".warmup(*args, grid=grid, ", "[grid](*args, ")
        == launch.strip()
    )


def test_api_names_for_the_installed_triton() -> None:
    import triton

    api = gluon_api()
    if triton.__version__.startswith("3.6"):
        assert (api.cta_barrier, api.tma_load, api.tma_store) == (
            "gl.thread_barrier",
            "tma.async_copy_global_to_shared",
            "tma.async_copy_shared_to_global",
        )


EXAMPLES = ["rmsnorm", "layernorm", "softmax", "log_softmax", "gelu_mlp"]


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_kernels_compile(name: str, arch: str) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))
    from examples import example

    for rows, cols in ((64, 1000), (512, 12288)):
        module = emit_gluon(example(name, rows, cols).kernel("gluon-default"))
        report = check_compile(module, arch)
        assert report.ok, f"{name} {rows}x{cols}: {report.error}\n{report.detail}"
        assert report.spills == 0, f"{name} {rows}x{cols}: {report.summary()}"


@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
def test_a_row_cached_in_part_compiles(name: str) -> None:
    """A row of 131072 bf16 elements (256 KiB: past shared memory) with its first 128 KiB cached
    (`row_cache`, split-rows) and the rest read again: compiles for sm_90 without spills, in the
    shared memory of its cache."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))
    from examples import example
    from tilec.passes.pipelines import with_plan

    kernel = example(name, 512, 131072).kernel(
        with_plan("gluon-default", "xblock=1,chunk=16384,num_warps=16,row_cache=131072")
    )
    assert kernel.attributes["row_cache"] == 131072
    report = check_compile(emit_gluon(kernel), "sm_90")
    assert report.ok, f"{report.error}\n{report.detail}"
    assert report.spills == 0 and 131072 <= report.shared_bytes < 140000, report.summary()
