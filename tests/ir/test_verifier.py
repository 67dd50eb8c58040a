"""Each verifier rule has a failing example whose message is asserted."""

from __future__ import annotations

import pytest

from tilec.ir import ParseError, VerifyError, parse, verify

BL = "#bl = #blocked<size_per_thread = [1, 1], threads_per_warp = [1, 32], warps_per_cta = [4, 1], order = [1, 0]>\n"
SH = "#sh = #nvmma_shared<swizzle_byte_width = 0, element_bitwidth = 16, rank = 2>\n"
# [4, N] tiles whose row r lives in CTA r of a cluster of 4, and their rows' values (#s)
CLUSTER = (
    "#c = #blocked<size_per_thread = [1, 1], threads_per_warp = [1, 32], warps_per_cta = [1, 4], "
    "order = [1, 0], cga_layout = [[1, 0], [2, 0]]>\n#s = #slice<dim = 1, parent = #c>\n"
)


def kernel(body: str, params: str = "%x: ptr<f32>", attrs: str = "grid = [1]", header: str = "") -> str:
    return f"{header}tile.kernel @k({params}) attributes {{{attrs}}} {{\n{body}\n}}\n"


CASES = {
    # name: (source, message fragment)
    "multiple-of-not-a-power-of-two": (
        kernel("", params="%x: ptr<f32>, %n: i32 {multiple_of = 12}"),
        "multiple_of must be a power of two from 2 to 16, got 12",
    ),
    "multiple-of-one": (kernel("", params="%n: i64 {multiple_of = 1}"), "got 1"),
    "multiple-of-past-16": (kernel("", params="%n: i32 {multiple_of = 32}"), "from 2 to 16, got 32"),
    "multiple-of-on-a-pointer": (
        kernel("", params="%x: ptr<f32> {multiple_of = 16}"),
        "takes no attributes (descriptors take theirs, integers multiple_of)",
    ),
    "multiple-of-on-a-float": (kernel("", params="%s: f32 {multiple_of = 16}"), "takes no attributes"),
    "rand-offset-dtype": (
        kernel(
            "  %s = tile.constant {value = 7} : i64\n  %i = tile.arange {end = 8} : tile<[8], i32>\n"
            '  %r = tile.rand %s, %i {dist = "uniform"} : tile<[8], f32>'
        ),
        "offset must have dtype u32",
    ),
    "rand-seed-dtype": (
        kernel(
            "  %s = tile.constant {value = 7.0} : f32\n  %i = tile.arange {end = 8} : tile<[8], i32>\n"
            "  %o = tile.cast %i : tile<[8], u32>\n"
            '  %r = tile.rand %s, %o {dist = "uniform"} : tile<[8], f32>'
        ),
        "seed must be an integer",
    ),
    "rand-lanes": (
        kernel(
            "  %s = tile.constant {value = 7} : i64\n  %i = tile.arange {end = 8} : tile<[8], i32>\n"
            "  %o = tile.cast %i : tile<[8], u32>\n"
            '  %r = tile.rand %s, %o {dist = "normal", lanes = 2} : tile<[8], f32>'
        ),
        "lanes must be 1 or 4",
    ),
    "dominance": (
        kernel("  %a = tile.add %b, %b : f32\n  %b = tile.constant {value = 1.0} : f32"),
        "use of undefined value %b",
    ),
    "dominance-sibling-region": (
        kernel(
            "  %c = tile.constant {value = 1} : i1\n"
            "  tile.if %c {\n    %v = tile.constant {value = 1.0} : f32\n  }\n"
            "  %w = tile.add %v, %v : f32"
        ),
        "operand 0 (%v) is not defined before this use",
    ),
    "isolated-partition": (
        kernel(
            "  %c = tile.constant {value = 1.0} : f32\n"
            "  tile.warp_specialize default() {\n    %d = tile.add %c, %c : f32\n"
            "  } worker(warps = 1, regs = 24)() {\n  }",
        ),
        "operand 0 (%c) is not defined before this use",
    ),
    "operand-types": (
        kernel(
            "  %a = tile.constant {value = 1.0} : f32\n  %b = tile.constant {value = 1} : i32\n  %c = tile.add %a, %b : f32"
        ),
        "'tile.add' operands have different dtypes f32 and i32",
    ),
    "result-type": (
        kernel("  %a = tile.constant {value = 1.0} : f32\n  %c = tile.add %a, %a : f16"),
        "result 0 has type f16, expected f32",
    ),
    "shapes": (
        kernel(
            "  %a = tile.arange {end = 16} : tile<[16], i32>\n  %b = tile.arange {end = 32} : tile<[32], i32>\n"
            "  %c = tile.add %a, %b : tile<[16], i32>"
        ),
        "operands have different shapes [16] and [32]",
    ),
    "float-op-on-int": (
        kernel("  %a = tile.constant {value = 1} : i32\n  %b = tile.exp %a : i32"),
        "'tile.exp' takes floats, got i32",
    ),
    "missing-attribute": (kernel("  %a = tile.arange : tile<[16], i32>"), "'tile.arange' needs attribute 'end'"),
    "unknown-attribute": (
        kernel("  %a = tile.constant {value = 1, color = 2} : i32"),
        "'tile.constant' has no attribute 'color'",
    ),
    "attribute-choice": (
        kernel(
            '  %a = tile.arange {end = 4} : tile<[4], i32>\n  %b = tile.cmp %a, %a {predicate = "lt2"} : tile<[4], i1>'
        ),
        "attribute 'predicate' must be one of",
    ),
    "layout-mix": (
        BL
        + kernel(
            "  %a = tile.arange {end = 32} : tile<[32], i32, #slice<dim = 0, parent = #bl>>\n"
            "  %b = tile.arange {end = 32} : tile<[32], i32>",
            attrs="grid = [1], num_warps = 4",
        ),
        "mixes tiles with and without layouts",
    ),
    "layout-warps": (
        BL + kernel("  %a = tile.full {value = 0.0} : tile<[4, 32], f32, #bl>", attrs="grid = [1], num_warps = 8"),
        "tile layout spans 4 warps, but this code runs on 8",
    ),
    "elementwise-layouts": (
        BL
        + "#bl2 = #blocked<size_per_thread = [1, 1], threads_per_warp = [32, 1], warps_per_cta = [4, 1], order = [1, 0]>\n"
        + kernel(
            "  %a = tile.full {value = 0.0} : tile<[4, 32], f32, #bl>\n"
            "  %b = tile.full {value = 0.0} : tile<[4, 32], f32, #bl2>\n"
            "  %c = tile.add %a, %b : tile<[4, 32], f32, #bl>",
            attrs="grid = [1], num_warps = 4",
        ),
        "operands have different layouts",
    ),
    "reduction-layout": (
        BL
        + kernel(
            "  %a = tile.full {value = 0.0} : tile<[4, 32], f32, #bl>\n"
            '  %s = tile.reduce %a {kind = "sum", axis = 1} : tile<[4], f32, #slice<dim = 0, parent = #bl>>',
            attrs="grid = [1], num_warps = 4",
        ),
        "result 0 has type",
    ),
    "yield-outside": (kernel("  tile.yield"), "'tile.yield' outside a loop, conditional or partition"),
    "yield-types": (
        kernel(
            "  %z = tile.constant {value = 0} : i32\n  %f = tile.constant {value = 0.0} : f32\n"
            "  %r = tile.for %i = %z to %z step %z iter_args(%a = %f) -> (f32) {\n    tile.yield %i\n  }"
        ),
        "body yields 1 values of other types than the op's results",
    ),
    "for-bounds": (
        kernel("  %z = tile.constant {value = 0.0} : f32\n  tile.for %i = %z to %z step %z {\n  }"),
        "lower bound must be an integer scalar",
    ),
    "if-condition": (
        kernel("  %z = tile.constant {value = 0} : i32\n  tile.if %z {\n  }"),
        "condition must be an i1 scalar",
    ),
    "worker-takes-tile": (
        kernel(
            "  %t = tile.arange {end = 32} : tile<[32], i32>\n"
            "  tile.warp_specialize default() {\n  } worker(warps = 1, regs = 24)(%w = %t) {\n  }"
        ),
        "worker partition 1 takes a register tile; workers take none",
    ),
    "worker-regs": (
        kernel("  tile.warp_specialize default() {\n  } worker(warps = 1, regs = 20)() {\n  }"),
        "worker register budgets must be multiples of 8 in 24..256, got 20",
    ),
    "mbarrier-init": (
        kernel(
            "  %b = tile.mbarrier_alloc : mbarrier<1>\n  %z = tile.constant {value = 0} : i32\n  tile.mbarrier_wait %b, %z, %z"
        ),
        "mbarrier %b is used before 'tile.mbarrier_init'",
    ),
    "mbarrier-init-through-partition": (
        kernel(
            "  %b = tile.mbarrier_alloc : mbarrier<1>\n"
            "  tile.warp_specialize default(%bb = %b) {\n    %z = tile.constant {value = 0} : i32\n"
            "    tile.mbarrier_arrive %bb, %z\n  } worker(warps = 1, regs = 24)() {\n  }"
        ),
        "mbarrier %bb is used before 'tile.mbarrier_init'",
    ),
    "smem-budget": (
        SH + kernel("  %s = tile.smem_alloc : smem<[64, 1024], bf16, #sh, slots = 2>"),
        "uses 262144 bytes of shared memory; the budget is 232448 per CTA",
    ),
    "tma-destination": (
        SH
        + kernel(
            "  %z = tile.constant {value = 0} : i32\n  %b = tile.mbarrier_alloc : mbarrier<1>\n  tile.mbarrier_init %b, %z\n"
            "  %s = tile.smem_alloc : smem<[8, 32], bf16, #sh>\n  tile.tma_load %d, %z, %z, %b, %z, %s",
            params='%x: ptr<bf16>, %d: tensordesc<[8, 64], bf16, #sh> {source = "x", shape = [64, 64], strides = [64, 1]}',
        ),
        "destination must match the descriptor's block shape and dtype",
    ),
    "descriptor-source": (
        SH
        + kernel(
            "",
            params='%x: ptr<f32>, %d: tensordesc<[8, 64], bf16, #sh> {source = "x", shape = [64, 64], strides = [64, 1]}',
        ),
        "source 'x' must be a pointer to bf16",
    ),
    "descriptor-stride": (
        SH
        + kernel(
            "",
            params='%x: ptr<bf16>, %d: tensordesc<[8, 64], bf16, #sh> {source = "x", shape = [64, 64], strides = [64, 2]}',
        ),
        "the last stride must be 1",
    ),
    "param-type": (kernel("", params="%t: tile<[4], f32>"), "parameters are pointers, scalars or TMA descriptors"),
    "param-name": (kernel("", params="%class: i32"), "parameter %class needs a name that is a valid identifier"),
    "grid-names": (kernel("", attrs="grid = [cdiv(M, 4)]"), "the grid uses undeclared names ['M']"),
    "undeclared-constexpr": (
        kernel("  %a = tile.arange {end = RB} : tile<[RB], i32>"),
        "uses undeclared constexprs ['RB']",
    ),
    "num-warps": (kernel("", attrs="grid = [1], num_warps = 3"), "num_warps must be a power of two from 1 to 32"),
    "smem-slots": (
        SH
        + kernel(
            "  %s = tile.smem_alloc : smem<[8, 64], bf16, #sh, slots = 2>\n  %v = tile.smem_load %s : tile<[8, 64], bf16>"
        ),
        "buffer has slots: pick one with 'tile.smem_index' first",
    ),
    "load-pointer": (
        kernel("  %z = tile.constant {value = 0} : i32\n  %v = tile.load %z, %z : i32"),
        "first operand must be a pointer",
    ),
    "store-dtype": (
        kernel("  %z = tile.constant {value = 0} : i32\n  tile.store %x, %z, %z"),
        "value must have the pointee dtype f32, got i32",
    ),
    "mask-dtype": (
        kernel("  %z = tile.constant {value = 0} : i32\n  %v = tile.load %x, %z, %z : f32"),
        "mask must have dtype i1, got i32",
    ),
    "num-ctas-not-a-power-of-two": (kernel("", attrs="grid = [1], num_ctas = 3"), "num_ctas must be a power of two"),
    "num-ctas-past-16": (kernel("", attrs="grid = [1], num_ctas = 32"), "from 1 to 16, got 32"),
    "cga-basis-two-dims": (
        "#c = #blocked<size_per_thread = [1, 1], threads_per_warp = [1, 32], warps_per_cta = [1, 4], "
        "order = [1, 0], cga_layout = [[1, 1]]>\n" + kernel(""),
        "a cga_layout basis moves one dimension by a power of two",
    ),
    "cga-basis-rank": (
        "#c = #blocked<size_per_thread = [1, 1], threads_per_warp = [1, 32], warps_per_cta = [1, 4], "
        "order = [1, 0], cga_layout = [[1]]>\n" + kernel(""),
        "each cga_layout basis needs 2 entries",
    ),
    "layout-ctas-not-the-kernels": (
        CLUSTER + kernel("  %r = tile.arange {end = 4} : tile<[4], i32, #s>", attrs="grid = [1], num_warps = 4"),
        "spans 4 CTAs, but the kernel launches 1 a program (num_ctas)",
    ),
    "cluster-gather-one-cta": (
        kernel(
            "  %r = tile.arange {end = 4} : tile<[4], i32, #bl1>\n"
            "  %a, %b, %c, %d = tile.cluster_gather %r : " + ", ".join(["tile<[4], i32, #bl1>"] * 4),
            attrs="grid = [1], num_warps = 4",
            header="#bl1 = #blocked<size_per_thread = [1], threads_per_warp = [32], warps_per_cta = [4], order = [0]>\n",
        ),
        "each operand holds one element per CTA",
    ),
    "cluster-gather-results": (
        CLUSTER
        + kernel(
            "  %r = tile.arange {end = 4} : tile<[4], i32, #s>\n"
            "  %a, %b = tile.cluster_gather %r : tile<[4], i32, #s>, tile<[4], i32, #s>",
            attrs="grid = [1], num_warps = 4, num_ctas = 4",
        ),
        "has 2 results, expected 4",
    ),
    "cluster-gather-width": (
        CLUSTER
        + kernel(
            "  %r = tile.arange {end = 4} : tile<[4], i32, #s>\n"
            "  %h = tile.cast %r : tile<[4], f16, #s>\n"
            "  %a, %b, %c, %d = tile.cluster_gather %h : " + ", ".join(["tile<[4], f16, #s>"] * 4),
            attrs="grid = [1], num_warps = 4, num_ctas = 4",
        ),
        "exchanges 32-bit values, got f16",
    ),
    "cluster-gather-push-in-a-nested-loop": (
        CLUSTER
        + kernel(
            "  %r = tile.arange {end = 4} : tile<[4], i32, #s>\n"
            "  %lo = tile.constant {value = 0} : i32\n"
            "  %hi = tile.constant {value = 2} : i32\n"
            "  %one = tile.constant {value = 1} : i32\n"
            "  tile.for %j = %lo to %hi step %one {\n"
            "  tile.for %i = %lo to %hi step %one {\n"
            '    %a, %b, %c, %d = tile.cluster_gather %r {exchange = "push"} : '
            + ", ".join(["tile<[4], i32, #s>"] * 4)
            + "\n    tile.yield\n  }\n  tile.yield\n  }",
            attrs="grid = [1], num_warps = 4, num_ctas = 4",
        ),
        "exchange = \"push\" stands at the kernel's top level or directly in a top-level loop's body "
        "(its mbarriers count the loop's iterations), not inside 'tile.for', 'tile.for'",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_has_a_failing_example(case: str) -> None:
    source, message = CASES[case]
    with pytest.raises((VerifyError, ParseError)) as info:
        verify(parse(source, "case.tile"))
    text = str(info.value)
    assert message in text, text
    assert text.startswith("case.tile:"), f"no location in: {text}"


def test_valid_kernel_passes() -> None:
    verify(parse(kernel("  %a = tile.constant {value = 1.0} : f32\n  %b = tile.add %a, %a : f32")))
