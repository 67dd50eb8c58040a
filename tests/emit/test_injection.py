"""Emitted source is Python that tilec wrote: nothing in a .tile file (names, attribute strings,
the file's own name) can add code to it. Hostile inputs are rejected by the parser or verifier,
or come out as harmless identifiers, strings or comments."""

from __future__ import annotations

import io
import tokenize

import pytest
import torch
from harness import planned, run_triton

from tilec.emit.gluon import emit_gluon
from tilec.emit.triton import emit_triton
from tilec.ir import parse, verify
from tilec.ir.errors import TilecError
from tilec.passes import run_pipeline
from tilec.runtime import load_source

PAYLOAD_NAMES = {"system", "popen", "exec", "eval", "__import__", "pwned"}


def names_in_code(source: str) -> set[str]:
    """The identifiers of the source's code (not its strings or comments)."""
    out = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME:
            out.add(tok.string)
    return out


def copy_kernel(name: str = "k", value: str = "v", file: str = "<input>") -> str:
    return f"""tile.kernel @{name}(%x: ptr<f32>, %y: ptr<f32>) attributes {{grid = [1]}} {{
  %r = tile.arange {{end = 16}} : tile<[16], i32>
  %{value} = tile.load %x, %r : tile<[16], f32>
  tile.store %y, %r, %{value}
}}
"""


def emit_both(text: str, file: str = "<input>") -> list[str]:
    module = parse(text, file)
    verify(module)
    run_pipeline(module, "plan")
    return [emit_triton(module).source, emit_gluon(module).source]


@pytest.mark.parametrize(
    "value",
    [
        "import",
        "def",
        "__import__",
        "exec",
        "tl",
        "gl",
        "torch",
        "triton",
        "KERNEL",
        "launch",
        "GRID",
        "descs",
        "num_sms",
    ],
)
def test_value_names_that_are_python_words_are_renamed(value: str) -> None:
    text = copy_kernel(value=value)
    for src in emit_both(text):
        compile(src, "<emitted>", "exec")  # still valid Python
    x = torch.arange(16, dtype=torch.float32)
    _, y = run_triton(planned(text), [x, torch.zeros(16)])
    assert torch.equal(x, y)


@pytest.mark.parametrize(
    "name", ["torch", "tl", "triton", "launch", "KERNEL", "GRID", "descriptors", "__import__", "_tilec_bf16", "BLOCKED"]
)
def test_kernel_names_that_would_shadow_module_names_are_renamed(name: str) -> None:
    text = copy_kernel(name=name)
    for src in emit_both(text):
        compile(src, "<emitted>", "exec")
    # the Triton module still runs (a kernel named `launch` or `tl` would break it)
    module = load_source(emit_triton(planned(text)).source, interpret=True)
    x, y = torch.arange(16, dtype=torch.float32), torch.zeros(16)
    module.launch(x, y)
    assert torch.equal(x, y)


@pytest.mark.parametrize("name", ["x y", "a;b", "k(", "k\nimport os"])
def test_kernel_names_that_are_not_identifiers_are_rejected(name: str) -> None:
    with pytest.raises(TilecError) as info:
        verify(parse(copy_kernel(name=name), "bad.tile"))
    assert info.value.loc is not None


HOSTILE_ATTRS = [
    # an attribute string that would close the emitted call and add a statement
    'tile.load %x, %r {eviction = "evict_last\\")\\nimport os\\nos.system(\\"touch /tmp/pwned\\")\\n#"} : tile<[16], f32>',
    # a reduction kind that is code
    "tile.reduce %v2 {kind = \"__import__('os').system('touch /tmp/pwned')\", axis = 0} : f32",
    # a comparison predicate that is code
    "tile.cmp %r, %r {predicate = \"lt) or __import__('os').system('x') or (1\"} : tile<[16], i1>",
]


@pytest.mark.parametrize("line", HOSTILE_ATTRS)
def test_hostile_attribute_strings_are_rejected(line: str) -> None:
    text = f"""tile.kernel @k(%x: ptr<f32>, %y: ptr<f32>) attributes {{grid = [1]}} {{
  %r = tile.arange {{end = 16}} : tile<[16], i32>
  %v2 = tile.load %x, %r : tile<[16], f32>
  %h = {line}
}}
"""
    with pytest.raises(TilecError) as info:
        verify(parse(text, "hostile.tile"))
    assert info.value.loc is not None


def test_hostile_descriptor_source_is_rejected() -> None:
    text = """#shared = #nvmma_shared<swizzle_byte_width = 0, element_bitwidth = 32, rank = 2>
tile.kernel @k(%x: ptr<f32>, %d: tensordesc<[1, 16], f32, #shared> {source = "x\\")\\nimport os\\n#", shape = [4, 16], strides = [16, 1]}) attributes {grid = [1], num_warps = 1} {
  %c0 = tile.constant {value = 0} : i32
}
"""
    with pytest.raises(TilecError, match="no parameter named"):
        verify(parse(text, "hostile.tile"))


def test_a_file_name_with_newlines_stays_in_its_comment(tmp_path) -> None:
    """Source locations go into comments: a file name cannot end the comment and add a line."""
    file = "evil\nimport os\nos.system('touch pwned')\n#.tile"
    for src in emit_both(copy_kernel(), file):
        assert not PAYLOAD_NAMES & names_in_code(src), src
        compile(src, "<emitted>", "exec")
