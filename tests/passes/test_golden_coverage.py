"""Every registered pass has a golden `.tile` test here (collected and run by tests/conftest.py):
a kernel the pass rewrites, checked line by line, and a kernel it leaves, whose remark
(`tilec opt --remarks`) says why."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tilec.passes import PASSES

HERE = Path(__file__).parent


def _passes_run(line: str) -> list[str]:
    """The pass names of a RUN line's `-p` pipeline ("plan{xblock=1},canonicalize" → plan, canonicalize)."""
    found = re.search(r"-p\s+'?([^'\s]+)", line)
    if found is None:
        return []
    return [re.sub(r"\{.*", "", part) for part in re.sub(r"\{[^}]*\}", "", found.group(1)).split(",")]


@pytest.mark.parametrize("name", sorted(PASSES))
def test_the_pass_has_a_golden_test_with_a_remark(name: str) -> None:
    for path in sorted(HERE.glob("*.tile")):
        lines = path.read_text().splitlines()
        if not any("RUN:" in line and "--remarks" in line and name in _passes_run(line) for line in lines):
            continue
        remarks = [line for line in lines if re.match(rf"//\s*\w+: remark: @\w+: {re.escape(name)}: \S", line)]
        kernels = [line for line in lines if "CHECK-LABEL: tile.kernel @" in line]
        if remarks and len(kernels) >= 2:  # one it rewrites, one it leaves (and says why)
            return
    pytest.fail(f"no golden test in tests/passes runs '{name}' with --remarks and checks a kernel it leaves")
