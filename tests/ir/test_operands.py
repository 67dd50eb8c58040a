"""Declared operands: every op names its operands, accessors read and replace them, the verifier
checks counts against the declaration."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from tilec.ir import OPS, VerifyError, parse, verify
from tilec.ir.core import Operand, Operation, Optional, Value, Variadic
from tilec.ir.dtypes import Type, f32, i1, i32
from tilec.ir.ops import ElementwiseOp, LoadOp, StoreOp, TmaLoadOp
from tilec.ir.types import PointerType

ROOT = Path(__file__).resolve().parents[2]
F32P = PointerType(f32)


def _v(t: Type = i32, name: str = "v") -> Value:
    return Value(t, name)


def test_every_op_with_operands_declares_them() -> None:
    names = {"walk", "error", "result", "results", "regions", "parent", "loc", "attributes", "operands", "name"}
    for name, cls in OPS.items():
        variadics = [d for d in cls.operand_defs if d.kind == "variadic"]
        assert len(variadics) <= 1, name
        for d in cls.operand_defs:
            assert d.name not in names, f"{name}: operand '{d.name}' shadows an Operation member"
        if issubclass(cls, ElementwiseOp):
            assert len(cls.operand_defs) == cls.arity, name


def test_golden_files_segment_exactly() -> None:
    """Every op in the repository's .tile files: the declared segments cover its operands once, in order."""
    seen = 0
    for path in sorted((ROOT / "tests").rglob("*.tile")):
        text = path.read_text()
        if "tile.kernel" not in text or "// ERROR" in text:
            continue
        for chunk in text.split("// -----"):
            try:
                module = parse(chunk)
            except Exception:
                continue  # inputs that are meant to fail
            for op in module.walk():
                segments = op.operand_segments()
                covered = [i for d in op.operand_defs for i in range(len(op.operands))[segments[d.name]]]
                assert covered == list(range(len(op.operands))), (path.name, op.name)
                seen += 1
    assert seen > 500


def test_optional_operands_read_none_and_fill_in_order() -> None:
    ptr, offs, mask, other = _v(F32P, "p"), _v(i32, "o"), _v(i1, "m"), _v(F32P.pointee, "x")
    load = LoadOp([ptr, offs])
    assert load.ptr is ptr and load.offsets is offs and load.mask is None and load.other is None
    with pytest.raises(AssertionError, match="other can only be added after"):
        load.other = other
    load.mask = mask
    load.other = other
    assert load.operands == [ptr, offs, mask, other]
    with pytest.raises(AssertionError, match="mask can only go with the operands after it"):
        load.mask = None
    load.other = None
    load.mask = None
    assert load.operands == [ptr, offs]


def test_variadic_length_from_the_descriptor() -> None:
    module = parse((ROOT / "tests" / "ir" / "all_ops.tile").read_text())
    copies = [op for op in module.walk() if isinstance(op, TmaLoadOp)]
    assert copies
    for op in copies:
        rank = len(op.desc.type.block_shape)  # type: ignore[attr-defined]
        assert len(op.coords) == rank
        assert op.operands == [op.desc, *op.coords, op.bars, op.index, op.dst, *([op.pred] if op.pred else [])]
        new = [_v(i32, f"c{i}") for i in range(rank)]
        op.coords = new  # type: ignore[assignment]
        assert op.coords == new and op.operands[1 : 1 + rank] == new


def test_replacing_a_single_operand() -> None:
    ptr, offs, val, mask = _v(F32P, "p"), _v(i32, "o"), _v(F32P.pointee, "x"), _v(i1, "m")
    store = StoreOp([ptr, offs, val, mask])
    other = _v(F32P.pointee, "y")
    store.value = other  # type: ignore[assignment]
    assert store.operands == [ptr, offs, other, mask]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("  %a = tile.constant {value = 1.0} : f32\n  %b = tile.exp %a, %a : f32", "takes 1 operands (x), got 2"),
        (
            '  %a = tile.constant {value = 1.0} : f32\n  %b = "tile.constant"(%a) {value = 1.0} : (f32) -> f32',
            "takes 0 operands (none), got 1",
        ),
        (
            '  %z = tile.constant {value = 0} : i32\n  "tile.store"(%x, %z) : (ptr<f32>, i32) -> ()',
            "takes 3 to 4 operands (ptr, offsets, value, mask?), got 2",
        ),
        (
            "  %z = tile.constant {value = 0} : i32\n  %c = tile.constant {value = 1} : i1\n"
            '  "tile.if"(%c, %c) ({\n  }, {\n  }) : (i1, i1) -> ()',
            "takes 1 operands (cond), got 2",
        ),
    ],
)
def test_verifier_checks_counts_against_the_declaration(body: str, message: str) -> None:
    src = f"tile.kernel @k(%x: ptr<f32>) attributes {{grid = [1]}} {{\n{body}\n}}\n"
    with pytest.raises(VerifyError, match=re.escape(message)):
        verify(parse(src))


class _Demo(Operation):
    a = Operand()
    rest = Variadic()
    b = Operand()


class _DemoOpt(Operation):
    a = Operand()
    x = Optional()
    y = Optional()


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(0, 8))
def test_segments_partition_the_operands(n: int) -> None:
    vals = [_v(i32, f"v{i}") for i in range(n)]
    op = _Demo(vals)
    if n >= 2:
        assert op.a is vals[0] and op.b is vals[-1] and op.rest == vals[1:-1]
        op.verify_operands()
    else:
        with pytest.raises(VerifyError, match="takes at least 2 operands"):
            op.verify_operands()
    opt = _DemoOpt(vals)
    if 1 <= n <= 3:
        opt.verify_operands()
        got = [opt.a, opt.x, opt.y]
        assert got == vals + [None] * (3 - n)
    else:
        with pytest.raises(VerifyError, match="takes 1 to 3 operands"):
            opt.verify_operands()


def test_two_variadics_are_refused() -> None:
    with pytest.raises(AssertionError, match="more than one variadic"):

        class _Bad(Operation):
            a = Variadic()
            b = Variadic()
