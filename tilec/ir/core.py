"""The IR's structure: SSA values, operations, blocks, kernels and modules.

Operations are mutable and compared by identity. Each op class declares its name, its operands
by name (`src = Operand()`, `mask = Optional()`, `coords = Variadic()`: `op.src` reads and
`op.src = v` replaces), attributes, result count, regions and traits, and checks
its local rules in `verify_()`; the module verifier (`tilec.ir.verify`) checks the operand count
against the declaration and the rules that span ops. Positional access to `op.operands` is for
this module and generic code (cloning, printing, use lists); everything else uses the names. Control flow is structured: a region is a
single `Block`, and a block has no terminator unless its op needs one (`tile.yield`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, overload

from tilec.ir.dtypes import DType, Type
from tilec.ir.errors import Location, VerifyError
from tilec.ir.expr import Expr, IntExpr
from tilec.ir.formatting import format_attr

# ---------------------------------------------------------------------------------------------
# Values


class Value:
    """An SSA value: an op result or a block argument."""

    __slots__ = ("name_hint", "type")

    def __init__(self, type: Type, name_hint: str | None = None) -> None:
        self.type = type
        self.name_hint = name_hint

    def __repr__(self) -> str:
        return f"<{type(self).__name__} %{self.name_hint or '?'}: {self.type}>"


class OpResult(Value):
    __slots__ = ("index", "op")

    def __init__(self, type: Type, op: Operation, index: int, name_hint: str | None = None) -> None:
        super().__init__(type, name_hint)
        self.op = op
        self.index = index


class BlockArg(Value):
    __slots__ = ("block", "index")

    def __init__(self, type: Type, block: Block, index: int, name_hint: str | None = None) -> None:
        super().__init__(type, name_hint)
        self.block = block
        self.index = index


# ---------------------------------------------------------------------------------------------
# Attributes


@dataclass(frozen=True)
class Attr:
    """How an op attribute is typed. `kind` is one of: int, symint, number, symnumber, bool, str,
    dtype, ints, symints, choice."""

    kind: str
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] = ()

    def check(self, op_name: str, key: str, value: Any) -> Any:
        """The value, normalized; raises VerifyError if it has the wrong type."""

        def bad(expected: str) -> VerifyError:
            return VerifyError(f"'{op_name}' attribute '{key}' must be {expected}, got {format_attr_value(value)}")

        k = self.kind
        if k == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad("an integer")
        elif k == "symint":
            if isinstance(value, bool) or not isinstance(value, (int, Expr)):
                raise bad("an integer or integer expression")
        elif k == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise bad("a number")
        elif k == "symnumber":
            if isinstance(value, bool) or not isinstance(value, (int, float, Expr)):
                raise bad("a number or integer expression")
        elif k == "bool":
            if not isinstance(value, bool):
                raise bad("true or false")
        elif k == "str":
            if not isinstance(value, str):
                raise bad("a string")
        elif k == "dtype":
            if not isinstance(value, DType):
                raise bad("a dtype")
        elif k in ("ints", "symints"):
            elem_ok = (int,) if k == "ints" else (int, Expr)
            if not isinstance(value, list) or not all(
                isinstance(v, elem_ok) and not isinstance(v, bool) for v in value
            ):
                raise bad("a list of integers")
        elif k == "choice":
            if value not in self.choices:
                raise bad("one of " + ", ".join(f'"{c}"' for c in self.choices))
        else:
            raise AssertionError(k)
        return value


def format_attr_value(v: Any) -> str:
    """Text form of an attribute value (shared by the printer and by messages)."""
    return format_attr(v)


# ---------------------------------------------------------------------------------------------
# Operand declarations
#
# An op class declares its operands as class attributes, in order:
#
#     class LoadOp(Operation):
#         ptr = Operand()
#         offsets = Operand()
#         mask = Optional()     # Value | None
#         other = Optional()
#
# `op.ptr` reads the operand and `op.ptr = v` replaces it; a Variadic reads as a list and is
# replaced by assigning one. Optional operands fill in order: a later one is present only with
# the earlier ones. An op with a Variadic and an Optional says how long the Variadic is
# (`variadic_length`).


class OperandDef:
    """Base of the operand declarations; `kind` is one, optional or variadic."""

    kind: ClassVar[str] = "one"
    name: str = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def segment(self, op: Operation) -> slice:
        return op.operand_segments()[self.name]

    def pick(self, values: Sequence[Any], seg: slice) -> Any:
        """This operand's entry of `values` (an op's operands, or anything in their order)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Operand(OperandDef):
    """Exactly one value."""

    @overload
    def __get__(self, op: None, owner: type) -> Operand: ...
    @overload
    def __get__(self, op: Operation, owner: type) -> Value: ...
    def __get__(self, op: Operation | None, owner: type) -> Operand | Value:
        if op is None:
            return self
        return self.pick(op.operands, self.segment(op))

    def pick(self, values: Sequence[Any], seg: slice) -> Any:
        return values[seg.start]

    def __set__(self, op: Operation, value: Value) -> None:
        op.operands[self.segment(op).start] = value


class Optional(OperandDef):
    """Zero or one value."""

    kind: ClassVar[str] = "optional"

    @overload
    def __get__(self, op: None, owner: type) -> Optional: ...
    @overload
    def __get__(self, op: Operation, owner: type) -> Value | None: ...
    def __get__(self, op: Operation | None, owner: type) -> Optional | Value | None:
        if op is None:
            return self
        return self.pick(op.operands, self.segment(op))

    def pick(self, values: Sequence[Any], seg: slice) -> Any:
        return values[seg.start] if seg.stop > seg.start else None

    def __set__(self, op: Operation, value: Value | None) -> None:
        seg = self.segment(op)
        present = seg.stop > seg.start
        if value is None:
            if present and seg.stop != len(op.operands):
                raise AssertionError(f"'{op.name}': {self.name} can only go with the operands after it")
            del op.operands[seg]
        elif present:
            op.operands[seg.start] = value
        elif seg.start == len(op.operands) and self._earlier_present(op):
            op.operands.append(value)
        else:
            raise AssertionError(f"'{op.name}': {self.name} can only be added after the operands before it")

    def _earlier_present(self, op: Operation) -> bool:
        segments = op.operand_segments()
        earlier = [d for d in op.operand_defs if d.kind == "optional"]
        earlier = earlier[: earlier.index(self)]
        return all(segments[d.name].stop > segments[d.name].start for d in earlier)


class Variadic(OperandDef):
    """Any number of values (at most one Variadic per op)."""

    kind: ClassVar[str] = "variadic"

    @overload
    def __get__(self, op: None, owner: type) -> Variadic: ...
    @overload
    def __get__(self, op: Operation, owner: type) -> list[Value]: ...
    def __get__(self, op: Operation | None, owner: type) -> Variadic | list[Value]:
        if op is None:
            return self
        return self.pick(op.operands, self.segment(op))

    def pick(self, values: Sequence[Any], seg: slice) -> Any:
        return list(values[seg])

    def __set__(self, op: Operation, values: Sequence[Value]) -> None:
        op.operands[self.segment(op)] = list(values)


# ---------------------------------------------------------------------------------------------
# Operations

OPS: dict[str, type[Operation]] = {}


# (op class, operand count, variadic length) -> where each declared operand sits (operand_segments)
_SEGMENTS: dict[tuple[type, int, int | None], dict[str, slice]] = {}


class Operation:
    """Base of every op. Subclasses set `name` and declare what they take."""

    name: ClassVar[str] = ""
    # The declared operands in order, collected from the class and its bases (see OperandDef).
    operand_defs: ClassVar[tuple[OperandDef, ...]] = ()
    has_variadic: ClassVar[bool] = False  # whether one of operand_defs is variadic
    attrs: ClassVar[dict[str, Attr]] = {}
    num_results: ClassVar[int | None] = 0  # None: variadic
    num_regions: ClassVar[int] = 0
    # Traits: "pure" (no memory access, no side effect: CSE and DCE may touch it), "reads"
    # (reads memory: DCE may drop it when unused, CSE may not merge it), "terminator",
    # "isolated" (regions see only their own block arguments).
    traits: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        defs: dict[str, OperandDef] = {}
        for klass in reversed(cls.__mro__):
            for key, value in vars(klass).items():
                if isinstance(value, OperandDef):
                    defs.pop(key, None)
                    defs[key] = value
        cls.operand_defs = tuple(defs.values())
        cls.has_variadic = any(d.kind == "variadic" for d in cls.operand_defs)
        if sum(d.kind == "variadic" for d in cls.operand_defs) > 1:
            raise AssertionError(f"{cls.__name__} declares more than one variadic operand")
        if cls.name:
            if cls.name in OPS:
                raise AssertionError(f"op {cls.name} defined twice")
            OPS[cls.name] = cls

    def __init__(
        self,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attributes: dict[str, Any] | None = None,
        regions: Sequence[Block] = (),
        loc: Location | None = None,
    ) -> None:
        self.operands: list[Value] = list(operands)
        self.results: list[OpResult] = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        self.attributes: dict[str, Any] = dict(attributes or {})
        self.regions: list[Block] = []
        for r in regions:
            self.add_region(r)
        self.parent: Block | None = None
        self.loc = loc

    # -- operands by name

    def variadic_length(self) -> int | None:
        """How many values the variadic operand has, where optional operands make the count
        alone ambiguous (an op with both overrides this); None: what the others leave."""
        return None

    def operand_count_range(self) -> tuple[int, int | None]:
        """The fewest and most operands the declaration allows (None: no upper bound)."""
        defs = self.operand_defs
        lo = sum(d.kind == "one" for d in defs)
        if self.has_variadic:
            n = self.variadic_length()
            if n is None:
                return lo, None
            lo += n
        return lo, lo + sum(d.kind == "optional" for d in defs)

    def operand_segments(self) -> dict[str, slice]:
        """Where each declared operand sits in `operands` (an absent optional: an empty slice).
        The same for every op of a class with as many operands (and variadic length): computed
        once each, shared (not to be changed)."""
        var_len = self.variadic_length() if self.has_variadic else 0
        key = (type(self), len(self.operands), var_len)
        found = _SEGMENTS.get(key)
        if found is None:
            found = _SEGMENTS[key] = self._segments(len(self.operands), var_len)
        return found

    def _segments(self, n: int, var_len: int | None) -> dict[str, slice]:
        defs = self.operand_defs
        singles = sum(d.kind == "one" for d in defs)
        optionals = sum(d.kind == "optional" for d in defs)
        if var_len is None:
            var_len = max(0, n - singles) if not optionals else 0
        present = max(0, min(optionals, n - singles - var_len))
        segments: dict[str, slice] = {}
        i = 0
        for d in defs:
            if d.kind == "one":
                size = 1
            elif d.kind == "variadic":
                size = var_len
            else:
                size = 1 if present > 0 else 0
                present -= size
            segments[d.name] = slice(i, i + size)
            i += size
        return segments

    def verify_operands(self) -> None:
        """The operand count fits the declaration (ops that declare no operands take none)."""
        lo, hi = self.operand_count_range()
        n = len(self.operands)
        if n < lo or (hi is not None and n > hi):
            want = str(lo) if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            names = ", ".join(
                d.name + {"one": "", "optional": "?", "variadic": "..."}[d.kind] for d in self.operand_defs
            )
            raise self.error(f"takes {want} operands ({names or 'none'}), got {n}")

    # -- construction helpers

    def add_region(self, block: Block) -> None:
        block.parent_op = self
        self.regions.append(block)

    @property
    def result(self) -> OpResult:
        if len(self.results) != 1:
            raise AssertionError(f"{self.name} has {len(self.results)} results")
        return self.results[0]

    def attr(self, key: str) -> Any:
        if key in self.attributes:
            return self.attributes[key]
        spec = self.attrs.get(key)
        return spec.default if spec else None

    # -- types: ops that can infer their result types override this

    @classmethod
    def infer(cls, operands: Sequence[Value], attributes: dict[str, Any]) -> list[Type] | None:
        """Result types implied by operands and attributes, or None where the op cannot tell."""
        return None

    # -- verification

    def verify_attrs(self) -> None:
        for key, spec in self.attrs.items():
            if key in self.attributes:
                self.attributes[key] = spec.check(self.name, key, self.attributes[key])
            elif spec.required:
                raise VerifyError(f"'{self.name}' needs attribute '{key}'")
        for key in self.attributes:
            if key not in self.attrs:
                raise VerifyError(f"'{self.name}' has no attribute '{key}'")

    def verify_(self) -> None:
        """Local rules of this op (operand and result types, attributes). Raise VerifyError."""

    def error(self, message: str) -> VerifyError:
        return VerifyError(f"'{self.name}' {message}", self.loc)

    # -- traversal

    def walk(self) -> Iterator[Operation]:
        """This op and every op nested in its regions, in program order."""
        yield self
        for r in self.regions:
            yield from r.walk()

    @property
    def is_pure(self) -> bool:
        return "pure" in self.traits

    @property
    def is_removable(self) -> bool:
        """Can go when its results are unused."""
        return bool({"pure", "reads", "alloc"} & self.traits)

    def erase(self) -> None:
        assert self.parent is not None, "op is not in a block"
        self.parent.ops.remove(self)
        self.parent = None

    def __repr__(self) -> str:
        return f"<{self.name} at {id(self):#x}>"


# ---------------------------------------------------------------------------------------------
# Blocks


class Block:
    """A straight-line list of ops with typed arguments: a region of a structured op, or a kernel body."""

    def __init__(self, arg_types: Sequence[Type] = (), arg_names: Sequence[str | None] | None = None) -> None:
        names = list(arg_names) if arg_names is not None else [None] * len(arg_types)
        self.args: list[BlockArg] = [BlockArg(t, self, i, n) for i, (t, n) in enumerate(zip(arg_types, names))]
        self.ops: list[Operation] = []
        self.parent_op: Operation | None = None

    def add_arg(self, t: Type, name: str | None = None) -> BlockArg:
        a = BlockArg(t, self, len(self.args), name)
        self.args.append(a)
        return a

    def append(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Operation) -> Operation:
        op.parent = self
        self.ops.insert(index, op)
        return op

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.ops.index(anchor), op)

    def walk(self) -> Iterator[Operation]:
        for op in list(self.ops):
            yield op  # (an op without regions yields itself alone: no generator of its own)
            for r in op.regions:
                yield from r.walk()

    @property
    def terminator(self) -> Operation | None:
        if self.ops and "terminator" in self.ops[-1].traits:
            return self.ops[-1]
        return None


# ---------------------------------------------------------------------------------------------
# Kernels and modules


@dataclass
class Launch:
    """How a kernel is launched: the grid over its programs, warps, register cap, persistence, and
    the CTAs of a thread-block cluster that make one program (`num_ctas`; the grid counts
    clusters)."""

    grid: tuple[IntExpr, ...] = (1,)
    num_warps: int | None = None
    maxnreg: int | None = None
    persistent: bool = False
    num_ctas: int = 1


class Kernel:
    """A GPU kernel: typed parameters (the body's arguments), constexprs, launch metadata, a body."""

    def __init__(
        self,
        name: str,
        params: Sequence[tuple[str, Type]] = (),
        constexprs: dict[str, int | None] | None = None,
        launch: Launch | None = None,
        attributes: dict[str, Any] | None = None,
        loc: Location | None = None,
    ) -> None:
        self.name = name
        self.body = Block([t for _, t in params], [n for n, _ in params])
        self.param_attrs: list[dict[str, Any]] = [{} for _ in params]
        self.constexprs: dict[str, int | None] = dict(constexprs or {})
        self.launch = launch or Launch()
        self.attributes: dict[str, Any] = dict(attributes or {})
        self.loc = loc

    @property
    def params(self) -> list[BlockArg]:
        return self.body.args

    def param(self, name: str) -> BlockArg:
        for p in self.params:
            if p.name_hint == name:
                return p
        raise KeyError(f"kernel @{self.name} has no parameter '{name}'")

    def add_param(self, name: str, t: Type, **attrs: Any) -> BlockArg:
        self.param_attrs.append(dict(attrs))
        return self.body.add_arg(t, name)

    def walk(self) -> Iterator[Operation]:
        return self.body.walk()

    def bound_constexprs(self) -> dict[str, int]:
        return {k: v for k, v in self.constexprs.items() if v is not None}

    def __repr__(self) -> str:
        return f"<Kernel @{self.name}>"


@dataclass
class Module:
    """A file's worth of kernels."""

    kernels: list[Kernel] = field(default_factory=list)

    def kernel(self, name: str) -> Kernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel @{name}")

    def walk(self) -> Iterator[Operation]:
        for k in self.kernels:
            yield from k.walk()


# ---------------------------------------------------------------------------------------------
# Rewriting helpers


def replace_uses(root: Block, old: Value, new: Value, keep: Sequence[Operation | None] = ()) -> None:
    """Replace every use of `old` under `root` by `new`, but in the ops of `keep` (those that
    compute `new` from `old`)."""
    kept = {id(k) for k in keep if k is not None}
    for op in root.walk():
        if id(op) in kept:
            continue
        operands = op.operands
        for i, v in enumerate(operands):
            if v is old:
                operands[i] = new


def use_counts(root: Block) -> dict[int, int]:
    """How many times each value (by id) is used as an operand under `root`."""
    counts: dict[int, int] = {}
    for op in root.walk():
        for v in op.operands:
            counts[id(v)] = counts.get(id(v), 0) + 1
    return counts


def defining_op(v: Value) -> Operation | None:
    return v.op if isinstance(v, OpResult) else None


def enclosing_ops(op: Operation) -> Iterator[Operation]:
    """The structured ops that contain `op`, innermost first."""
    block = op.parent
    while block is not None and block.parent_op is not None:
        yield block.parent_op
        block = block.parent_op.parent


def ancestor_in(block: Block, op: Operation) -> Operation | None:
    """The op of `block` that is `op` or contains it; None if `op` is not under `block`."""
    cur: Operation | None = op
    while cur is not None:
        if cur.parent is block:
            return cur
        parent_block = cur.parent
        cur = parent_block.parent_op if parent_block is not None else None
    return None


Predicate = Callable[[Operation], bool]
