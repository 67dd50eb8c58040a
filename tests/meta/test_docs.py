"""The docs cover what the code has."""

from __future__ import annotations

import re
from pathlib import Path

from tilec.ir import OPS
from tilec.ir.layouts import LAYOUT_CLASSES

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
