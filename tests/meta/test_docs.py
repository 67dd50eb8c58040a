"""The docs cover what the code has."""

from __future__ import annotations

import re
from pathlib import Path

from tilec.ir import OPS
from tilec.ir.layouts import LAYOUT_CLASSES
from tilec.ir.ops import ElementwiseOp

ROOT = Path(__file__).resolve().parents[2]


def test_ir_reference_covers_every_op() -> None:
    doc = (ROOT / "docs" / "ir.md").read_text()
    headed = set(re.findall(r"^#{2,4} `(tile\.[a-z_0-9]+)`", doc, re.M))
    missing = sorted(set(OPS) - headed)
    assert not missing, f"docs/ir.md has no section for: {missing}"
    unknown = sorted(headed - set(OPS))
    assert not unknown, f"docs/ir.md documents ops that do not exist: {unknown}"


def test_ir_reference_covers_every_layout() -> None:
    doc = (ROOT / "docs" / "ir.md").read_text()
    for kind in LAYOUT_CLASSES:
        assert f"#{kind}<" in doc, kind


def _operands_line(cls: type) -> str:
    parts = []
    for d in cls.operand_defs:
        suffix = {"one": "", "optional": " (optional)", "variadic": " (any number)"}[d.kind]
        parts.append(f"`{d.name}`{suffix}")
    return "Operands: " + ", ".join(parts) + "."


def test_ir_reference_names_every_ops_operands() -> None:
    """Each op's section lists its declared operands (elementwise ops: the section's intro)."""
    doc = (ROOT / "docs" / "ir.md").read_text()
    sections = re.split(r"^#### `(tile\.[a-z_0-9]+)`\n", doc, flags=re.M)
    listed = {sections[i]: sections[i + 1].split("\n", 1)[0] for i in range(1, len(sections), 2)}
    for name, cls in OPS.items():
        if issubclass(cls, ElementwiseOp):
            names = ", ".join(f"`{d.name}`" for d in cls.operand_defs)
            said = {1: f"take {names} (one operand)", 2: f"{names} (two)", 3: f"or {names} (`tile.fma`)"}
            assert said[cls.arity] in doc, f"docs/ir.md does not name the operands of {name}: {names}"
        elif cls.operand_defs:
            assert listed[name] == _operands_line(cls), f"{name}: {listed[name]!r}"
        else:
            assert not listed[name].startswith("Operands:"), name
