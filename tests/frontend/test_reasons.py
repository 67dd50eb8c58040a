"""Every reason `lower` can give is a constant in tilec.frontend.reasons, documented in
docs/frontend.md."""

from __future__ import annotations

from pathlib import Path

from tilec.frontend import reasons

ROOT = Path(__file__).resolve().parents[2]


def test_every_reason_is_documented() -> None:
    doc = (ROOT / "docs" / "frontend.md").read_text()
    constants = {k: v for k, v in vars(reasons).items() if k.isupper() and isinstance(v, str)}
    assert len(constants) > 10
    parametrized = [
        reasons.unsupported_op("<name>"),
        reasons.unsupported_reduction("<type>"),
        reasons.unsupported_dtype("<name>"),
        reasons.unsupported_node("<T>"),
    ]
    missing = [text for text in [*constants.values(), *parametrized] if f"`{text}" not in doc]
    assert not missing, f"docs/frontend.md does not list: {missing}"


def test_reasons_are_one_line() -> None:
    for name, value in vars(reasons).items():
        if name.isupper() and isinstance(value, str):
            assert "\n" not in value and value == value.strip(), name
