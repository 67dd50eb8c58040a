"""Properties of the text form: random well-typed programs round-trip to a fixpoint; mutated
files and random bytes never crash the parser, the verifier or the CLI."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from gen import kernels
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from profiles import examples

from tilec.cli import main
from tilec.ir import Module, TilecError, parse, print_module, verify
from tilec.passes import run_pipeline

TESTS = Path(__file__).resolve().parents[1]


def valid_tile_files() -> list[Path]:
    out = []
    for p in sorted(TESTS.rglob("*.tile")):
        text = p.read_text()
        if "not tilec" in text:
            continue
        out.append(p)
    return out


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels())
def test_random_programs_verify_and_round_trip(module: Module) -> None:
    verify(module)
    text = print_module(module)
    again = parse(text)
    verify(again)
    assert print_module(again) == text
    generic = print_module(again, generic=True)
    assert print_module(parse(generic)) == text


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels())
def test_random_programs_survive_the_basic_passes(module: Module) -> None:
    run_pipeline(module, "canonicalize,cse,dce")  # verifies after each pass
    text = print_module(module)
    assert print_module(parse(text)) == text


def test_every_test_file_round_trips() -> None:
    files = valid_tile_files()
    assert len(files) >= 3
    for p in files:
        module = parse(p.read_text(), str(p))
        verify(module)
        text = print_module(module)
        assert print_module(parse(text)) == text, p


def _mutate(text: str, data: st.DataObject) -> str:
    vocab = [
        "%",
        "{",
        "}",
        "(",
        ")",
        "<",
        ">",
        "[",
        "]",
        ",",
        ":",
        "=",
        "\n",
        "tile.for",
        "tile.if",
        "#blocked",
        "tile<[4], f32>",
        "-",
        "1e",
        '"',
        "\\",
        "@",
        "^",
        "//",
        "0",
        "99999999999999999999",
        "i1",
        "nan",
        "smem<",
    ]
    for _ in range(data.draw(st.integers(1, 4))):
        if not text:
            break
        i = data.draw(st.integers(0, len(text) - 1))
        j = data.draw(st.integers(i, min(len(text), i + 20)))
        action = data.draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        piece = data.draw(st.sampled_from(vocab))
        if action == "delete":
            text = text[:i] + text[j:]
        elif action == "insert":
            text = text[:i] + piece + text[i:]
        elif action == "replace":
            text = text[:i] + piece + text[j:]
        else:
            text = text[:j] + text[i:j] + text[j:]
    return text


# 1000 mutants in CI (a fixed draw: derandomized), a new draw of them each run elsewhere
@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutations_never_crash_the_parser(data: st.DataObject) -> None:
    files = valid_tile_files()
    path = data.draw(st.sampled_from(files))
    text = _mutate(path.read_text(), data)
    try:
        module = parse(text, "mutant.tile")
        verify(module)
        run_pipeline(module, "canonicalize,cse,dce")
    except TilecError as e:
        # every error points into the file (line and column) and says what is wrong
        assert e.loc is not None and str(e).startswith("mutant.tile:"), str(e)
        assert ": error: " in str(e), str(e)


@settings(max_examples=examples(1000), deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_never_crash(blob: bytes) -> None:
    text = blob.decode("utf-8", errors="replace")
    try:
        verify(parse(text, "blob.tile"))
    except TilecError as e:
        assert e.loc is not None and str(e).startswith("blob.tile:"), str(e)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutations_never_crash_the_cli(data: st.DataObject, tmp_path_factory) -> None:
    files = valid_tile_files()
    text = _mutate(data.draw(st.sampled_from(files)).read_text(), data)
    src = tmp_path_factory.mktemp("m") / "mutant.tile"
    src.write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["opt", str(src), "-p", "canonicalize,cse,dce"])
    assert code in (0, 2), err.getvalue()
    assert "Traceback" not in err.getvalue()


@given(st.integers(-4, 1 << 40))
@example(0)  # (0 - 1).bit_length() is 1: once rounded up to 2
def test_powers_of_two_bracket_every_integer(v: int) -> None:
    """`next_pow2` is the least power of two at least v, `pow2_floor` the greatest at most v (both 1
    below 2): the block sizes the plan and the frontend round to."""
    from tilec.ir.expr import next_pow2, pow2_floor

    up, down = next_pow2(v), pow2_floor(v)
    assert up & (up - 1) == 0 and down & (down - 1) == 0
    assert (up >= v and (up == 1 or up // 2 < v)) and (down <= max(v, 1) and down * 2 > max(v, 1))
