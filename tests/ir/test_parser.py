"""Malformed text, unknown ops and bad layouts give one located message."""

from __future__ import annotations

from pathlib import Path

import pytest

from tilec.ir import ParseError, parse, print_module

CASES = {
    "unknown-op": (
        "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.frobnicate : i32\n}\n",
        "2:8",
        "unknown op 'tile.frobnicate'",
    ),
    "bad-char": (
        "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.constant {value = 1} : i32 ?\n}\n",
        "2:40",
        "unexpected character '?'",
    ),
    "missing-brace": (
        "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.constant {value = 1} : i32\n",
        "3:1",
        "unexpected end of input",
    ),
    "unknown-type": ("tile.kernel @k(%x: blob<f32>) attributes {grid = [1]} {\n}\n", "1:20", "unexpected"),
    "unknown-layout-kind": (
        "#l = #striped<a = 1>\n",
        "1:6",
        "unknown layout kind 'striped'",
    ),
    "undefined-alias": (
        "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.full {value = 0.0} : tile<[4], f32, #nope>\n}\n",
        "2:49",
        "undefined layout alias #nope",
    ),
    "swizzle-too-wide": (
        "#s = #nvmma_shared<swizzle_byte_width = 128, element_bitwidth = 16, rank = 2>\n"
        "tile.kernel @k() attributes {grid = [1]} {\n  %s = tile.smem_alloc : smem<[8, 32], bf16, #s>\n}\n",
        "3:26",
        "a 128-byte swizzle needs an inner dimension that is a multiple of 128 bytes; this one has 64 bytes",
    ),
    "swizzle-too-few-rows": (
        "#s = #nvmma_shared<swizzle_byte_width = 128, element_bitwidth = 16, rank = 2>\n"
        "tile.kernel @k() attributes {grid = [1]} {\n  %s = tile.smem_alloc : smem<[4, 64], bf16, #s>\n}\n",
        "3:26",
        "a 128-byte swizzle needs at least 8 rows",
    ),
    "swizzle-value": (
        "#s = #nvmma_shared<swizzle_byte_width = 48, element_bitwidth = 16>\n",
        "1:6",
        "swizzle_byte_width must be 0, 32, 64 or 128",
    ),
    "element-bits": (
        "#s = #nvmma_shared<swizzle_byte_width = 0, element_bitwidth = 16, rank = 2>\n"
        "tile.kernel @k() attributes {grid = [1]} {\n  %s = tile.smem_alloc : smem<[8, 64], f32, #s>\n}\n",
        "3:26",
        "element_bitwidth 16 does not match a 32-bit dtype",
    ),
    "blocked-threads": (
        "#b = #blocked<size_per_thread = [1], threads_per_warp = [16], warps_per_cta = [4], order = [0]>\n",
        "1:6",
        "threads_per_warp must multiply to 32",
    ),
    "blocked-order": (
        "#b = #blocked<size_per_thread = [1, 1], threads_per_warp = [1, 32], warps_per_cta = [4, 1], order = [1, 1]>\n",
        "1:6",
        "not a permutation",
    ),
    "blocked-missing-field": ("#b = #blocked<size_per_thread = [1]>\n", "1:6", "bad parameters for #blocked"),
    "slice-dim": (
        "#b = #blocked<size_per_thread = [1, 1], threads_per_warp = [1, 32], warps_per_cta = [4, 1], order = [1, 0]>\n"
        "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.arange {end = 4} : tile<[4], i32, #slice<dim = 2, parent = #b>>\n}\n",
        "3:47",
        "slice: dim 2 out of range",
    ),
    "layout-rank": (
        "#b = #blocked<size_per_thread = [1, 1], threads_per_warp = [1, 32], warps_per_cta = [4, 1], order = [1, 0]>\n"
        "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.arange {end = 4} : tile<[4], i32, #b>\n}\n",
        "3:32",
        "layout of rank 2 on a tile of rank 1",
    ),
    "redefinition": (
        "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.constant {value = 1} : i32\n  %a = tile.constant {value = 2} : i32\n}\n",
        "3:3",
        "value %a is defined twice",
    ),
    "result-count": (
        "tile.kernel @k() attributes {grid = [1]} {\n  %a, %b = tile.constant {value = 1} : i32\n}\n",
        "2:3",
        "has 1 results, 2 names given",
    ),
    "no-result-types": (
        "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.constant {value = 1}\n}\n",
        "2:3",
        "write the result types of 'tile.constant' after ':'",
    ),
    "duplicate-kernel": (
        "tile.kernel @k() attributes {grid = [1]} {\n}\ntile.kernel @k() attributes {grid = [1]} {\n}\n",
        "3:1",
        "kernel @k is defined twice",
    ),
    "duplicate-attr": (
        "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.constant {value = 1, value = 2} : i32\n}\n",
        "2:34",
        "attribute 'value' given twice",
    ),
    "float-in-shape": (
        "tile.kernel @k() attributes {grid = [1]} {\n  %a = tile.full {value = 0.0} : tile<[4.0], f32>\n}\n",
        "2:41",
        "unexpected",
    ),
    "reserved-constexpr": (
        "tile.kernel @k() constexprs(inf) attributes {grid = [1]} {\n}\n",
        "1:29",
        "'inf' is reserved",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_is_located(case: str) -> None:
    text, where, message = CASES[case]
    with pytest.raises(ParseError) as info:
        parse(text, "bad.tile")
    got = str(info.value)
    assert got.startswith(f"bad.tile:{where}: error: "), got
    assert message in got, got
    assert "\n" not in got.strip()


def test_comments_and_blank_lines() -> None:
    m = parse(
        "// a comment\n\n#b = #blocked<size_per_thread = [1], threads_per_warp = [32], warps_per_cta = [4], order = [0]>\n\n"
        "tile.kernel @k() attributes {grid = [1]} { // trailing\n\n  %a = tile.constant {value = 1} : i32 // ok\n}\n"
    )
    assert [op.name for op in m.kernels[0].walk()] == ["tile.constant"]


def test_floats_print_exactly() -> None:
    from tilec.ir import print_module

    src = (
        "tile.kernel @k() attributes {grid = [1]} {\n"
        "  %a = tile.constant {value = 1e-06} : f32\n  %b = tile.constant {value = -inf} : f32\n"
        "  %c = tile.constant {value = nan} : f32\n  %d = tile.constant {value = 0.1} : f64\n}\n"
    )
    text = print_module(parse(src))
    assert "value = 1e-06" in text and "value = -inf" in text and "value = nan" in text and "value = 0.1" in text
    assert print_module(parse(text)) == text


def test_a_text_parsed_again_is_a_module_of_its_own() -> None:
    """The parser keeps the syntax trees of the texts it parsed last (a kernel's candidates are
    built from the same text again): each parse of a text builds IR of its own, located in the
    file it names, which changing another parse's IR leaves as it was."""
    from tilec.passes import run_pipeline

    text = (Path(__file__).resolve().parents[1] / "passes" / "plan_banded.tile").read_text()
    first, second = parse(text, "first.tile"), parse(text, "second.tile")
    printed = print_module(second)
    run_pipeline(first, "plan,canonicalize,accumulate{where=bands},dce")
    assert print_module(first) != printed
    assert print_module(second) == printed == print_module(parse(text))
    assert first.kernels[0].loc.file == "first.tile" and second.kernels[0].loc.file == "second.tile"
