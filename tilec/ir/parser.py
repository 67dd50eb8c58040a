"""Parses the text form (`grammar/tile.lark`) into IR.

Every error is a `ParseError` carrying `file:line:col`. The parser checks names and types as it
builds; the IR's own rules are the verifier's (`tilec.ir.verify`), which callers run afterwards.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import lark
from lark import Token, Tree

from tilec.ir import ops as _ops  # noqa: F401  (registers the ops)
from tilec.ir.core import OPS, Block, Kernel, Launch, Module, Operation, Value
from tilec.ir.dtypes import DType, Type
from tilec.ir.errors import IRTypeError, Location, ParseError, TilecError
from tilec.ir.expr import BinExpr, CallExpr, Expr, IntExpr, Sym
from tilec.ir.layouts import LAYOUT_CLASSES, DistributedLayout, Layout, NVMMASharedLayout, SharedLayout
from tilec.ir.ops import ForOp, IfOp, WarpSpecializeOp, YieldOp
from tilec.ir.types import MBarrierType, PointerType, SharedBufferType, TensorDescType, TileType

Node = Any  # a lark Tree or Token; lark's own types are too loose to check against
RESERVED_NAMES = frozenset({"inf", "nan", "true", "false", "num_sms"})


def grammar_path() -> Path:
    """The grammar file: `grammar/tile.lark` in a source checkout, `tilec/grammar/` when installed."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[2] / "grammar" / "tile.lark", here.parents[1] / "grammar" / "tile.lark"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("tile.lark not found next to the tilec package")


@functools.cache
def _lark() -> lark.Lark:
    return lark.Lark(grammar_path().read_text(), parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _describe(token: Token | None) -> str:
    if token is None or token.type == "$END":
        return "end of input"
    if token.type == "_NL":
        return "end of line"
    return repr(str(token))


def _expected(names: Sequence[str]) -> str:
    pretty = {
        "VALUE_ID": "a value (%name)",
        "OP_NAME": "an op name",
        "DTYPE": "a dtype",
        "INT": "an integer",
        "IDENT": "a name",
        "LAYOUT_NAME": "a layout (#name)",
        "SYMBOL": "a kernel name (@name)",
        "_NL": "end of line",
        "RBRACE": "'}'",
        "LBRACE": "'{'",
        "RPAR": "')'",
        "LPAR": "'('",
        "COLON": "':'",
        "COMMA": "','",
        "EQUAL": "'='",
        "MORETHAN": "'>'",
        "LESSTHAN": "'<'",
        "RSQB": "']'",
        "LSQB": "'['",
    }
    words = sorted({pretty.get(n, n.lower()) for n in names})
    if len(words) > 6:
        words = words[:6] + ["..."]
    return ", ".join(words)


class _Builder:
    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.aliases: dict[str, Layout] = {}
        self.values: dict[str, Value] = {}

    # -- locations and errors

    def loc(self, node: Node) -> Location:
        if isinstance(node, Token):
            return Location(self.filename, node.line or 0, node.column or 0)
        meta = node.meta
        return Location(self.filename, getattr(meta, "line", 0), getattr(meta, "column", 0))

    def fail(self, node: Node, message: str) -> ParseError:
        return ParseError(message, self.loc(node))

    # -- module

    def module(self, tree: Node) -> Module:
        module = Module()
        for item in tree.children:
            if not isinstance(item, Tree):
                continue
            if item.data == "alias_def":
                name, layout = item.children
                if str(name) in self.aliases:
                    raise self.fail(name, f"layout alias {name} is defined twice")
                self.aliases[str(name)] = self.layout(layout)
            else:
                module.kernels.append(self.kernel(item))
        seen: set[str] = set()
        for k in module.kernels:
            if k.name in seen:
                raise ParseError(f"kernel @{k.name} is defined twice", k.loc)
            seen.add(k.name)
        return module

    def kernel(self, tree: Node) -> Kernel:
        _, sym, *rest = tree.children
        body = rest[-1]
        attrs_tree = rest[-2]
        cx_tree = rest[-3]
        param_trees = [p for p in rest[:-3] if p is not None]
        self.values = {}
        params: list[tuple[str, Type]] = []
        param_attrs: list[dict[str, Any]] = []
        for p in param_trees:
            vid, ty, pattrs = p.children
            params.append((self.new_name(vid), self.type(ty)))
            param_attrs.append(self.attr_dict(pattrs) if pattrs is not None else {})
        constexprs: dict[str, int | None] = {}
        if cx_tree is not None:
            for c in cx_tree.children:
                cname, cval = c.children
                if str(cname) in constexprs:
                    raise self.fail(cname, f"constexpr {cname} is declared twice")
                if str(cname) in RESERVED_NAMES:
                    raise self.fail(cname, f"'{cname}' is reserved and cannot name a constexpr")
                constexprs[str(cname)] = self.signed_int(cval) if cval is not None else None
        attrs = self.attr_dict(attrs_tree) if attrs_tree is not None else {}
        launch = Launch()
        if "grid" in attrs:
            grid = attrs.pop("grid")
            if not isinstance(grid, list) or not 1 <= len(grid) <= 3 or not all(_is_intexpr(g) for g in grid):
                raise self.fail(attrs_tree, "grid must be a list of one to three integer expressions")
            launch.grid = tuple(grid)
        for key in ("num_warps", "maxnreg", "num_ctas"):
            if key in attrs:
                v = attrs.pop(key)
                if isinstance(v, bool) or not isinstance(v, int):
                    raise self.fail(attrs_tree, f"{key} must be an integer")
                setattr(launch, key, v)
        if "persistent" in attrs:
            v = attrs.pop("persistent")
            if not isinstance(v, bool):
                raise self.fail(attrs_tree, "persistent must be true or false")
            launch.persistent = v
        kernel = Kernel(str(sym)[1:], params, constexprs, launch, attrs, loc=self.loc(tree))
        kernel.param_attrs = param_attrs
        for arg, (pname, _) in zip(kernel.params, params):
            self.values[pname] = arg
        self.stmts(body.children, kernel.body)
        return kernel

    # -- names

    def new_name(self, tok: Node) -> str:
        name = str(tok)[1:]
        if name in self.values:
            raise self.fail(tok, f"value %{name} is defined twice")
        return name

    def use(self, tok: Node) -> Value:
        name = str(tok)[1:]
        v = self.values.get(name)
        if v is None:
            raise self.fail(tok, f"use of undefined value %{name}")
        return v

    def define(self, tok: Node, v: Value) -> None:
        name = self.new_name(tok)
        v.name_hint = name
        self.values[name] = v

    # -- statements

    def stmts(self, items: Sequence[Any], block: Block) -> None:
        for s in items:
            if isinstance(s, Tree):
                block.append(getattr(self, s.data)(s))

    def results(self, tree: Node) -> list[Node]:
        return list(tree.children) if tree is not None else []

    def bind_results(self, op: Operation, names: list[Node], node: Node) -> Operation:
        if len(names) != len(op.results):
            raise self.fail(node, f"'{op.name}' has {len(op.results)} results, {len(names)} names given")
        for tok, r in zip(names, op.results):
            self.define(tok, r)
        return op

    def op_class(self, tok: Node, name: str) -> type[Operation]:
        cls = OPS.get(name)
        if cls is None:
            raise self.fail(tok, f"unknown op '{name}'")
        return cls

    def region(self, tree: Node, arg_types: Sequence[Type] | None = None) -> Block:
        """A generic-form region: `{ ^(%a: t, ...): stmts }`."""
        args_tree, *body = tree.children
        block = Block()
        if args_tree is not None:
            for a in args_tree.children:
                if a is None:
                    continue
                vid, ty = a.children
                arg = block.add_arg(self.type(ty))
                self.define(vid, arg)
        self.stmts(body, block)
        return block

    def generic_stmt(self, tree: Node) -> Operation:
        res, name_tok, operands, attrs, regions, types = tree.children
        cls = self.op_class(name_tok, str(name_tok))
        return self.build(cls, tree, res, operands, attrs, regions, types, None)

    def quoted_stmt(self, tree: Node) -> Operation:
        res, name_tok, operands, attrs, regions, operand_types, result_types = tree.children
        name = str(name_tok)[1:-1]
        cls = self.op_class(name_tok, name)
        rtypes: list[Type] = []
        if result_types is not None:
            inner = result_types.children[0] if result_types.children else None
            if isinstance(inner, Tree) and inner.data == "type_list":
                rtypes = [self.type(t) for t in inner.children]
            elif inner is not None:
                rtypes = [self.type(inner)]
        otypes = [self.type(t) for t in operand_types.children] if operand_types is not None else []
        return self.build(cls, tree, res, operands, attrs, regions, None, (otypes, rtypes))

    def build(
        self,
        cls: type[Operation],
        tree: Node,
        res: Node,
        operands_tree: Node,
        attrs_tree: Node,
        regions_tree: Node,
        types_tree: Node,
        quoted: tuple[list[Type], list[Type]] | None,
    ) -> Operation:
        operands = [self.use(t) for t in operands_tree.children] if operands_tree is not None else []
        attrs = self.attr_dict(attrs_tree) if attrs_tree is not None else {}
        names = self.results(res)
        if quoted is not None:
            otypes, rtypes = quoted
            if [v.type for v in operands] != otypes:
                raise self.fail(tree, f"operand types written for '{cls.name}' differ from the operands' types")
        elif types_tree is not None:
            rtypes = [self.type(t) for t in types_tree.children]
        elif names:
            inferred = _safe_infer(cls, operands, attrs)
            if inferred is None:
                raise self.fail(tree, f"write the result types of '{cls.name}' after ':'")
            rtypes = inferred
        else:
            rtypes = []
        if not names and rtypes:
            raise self.fail(tree, f"'{cls.name}' has result types but no result names")
        regions = [self.region(r) for r in regions_tree.children] if regions_tree is not None else []
        for block in regions:
            _ensure_terminator(block)
        op = cls(operands, rtypes, attrs, regions, loc=self.loc(tree))
        return self.bind_results(op, names, tree)

    def for_stmt(self, tree: Node) -> Operation:
        res, _, iv, lb, ub, step, iters, arrow, attrs, body = tree.children
        bounds = [self.use(t) for t in (lb, ub, step)]
        pairs = [(a.children[0], a.children[1]) for a in iters.children] if iters is not None else []
        inits = [self.use(v) for _, v in pairs]
        types = self.arrow(arrow) if arrow is not None else [v.type for v in inits]
        block = Block()
        self.define(iv, block.add_arg(bounds[0].type))
        for (name_tok, _), v in zip(pairs, inits):
            self.define(name_tok, block.add_arg(v.type))
        self.stmts(body.children, block)
        _ensure_terminator(block)
        attributes = self.attr_dict(attrs) if attrs is not None else {}
        op = ForOp(bounds + inits, types, attributes, [block], loc=self.loc(tree))
        return self.bind_results(op, self.results(res), tree)

    def if_stmt(self, tree: Node) -> Operation:
        res, _, cond, arrow, then_body, else_body = tree.children
        types = self.arrow(arrow) if arrow is not None else []
        blocks = []
        for body in (then_body, else_body):
            block = Block()
            if body is not None:
                self.stmts(body.children, block)
            _ensure_terminator(block)
            blocks.append(block)
        op = IfOp([self.use(cond)], types, {}, blocks, loc=self.loc(tree))
        return self.bind_results(op, self.results(res), tree)

    def ws_stmt(self, tree: Node) -> Operation:
        res, _, arrow, *parts = tree.children
        types = self.arrow(arrow) if arrow is not None else []
        operands: list[Value] = []
        counts: list[int] = []
        warps: list[int] = []
        regs: list[int] = []
        blocks = []
        for i, part in enumerate(parts):
            if part.data == "default_partition":
                if i != 0:
                    raise self.fail(part, "the default partition comes first")
                caps, body = part.children
            else:
                if i == 0:
                    raise self.fail(part, "the default partition comes first")
                w, r, caps, body = part.children
                warps.append(int(w))
                regs.append(int(r))
            block = Block()
            cap_pairs = [c.children for c in caps.children if c is not None]
            for arg_tok, val_tok in cap_pairs:
                v = self.use(val_tok)
                operands.append(v)
                self.define(arg_tok, block.add_arg(v.type))
            counts.append(len(cap_pairs))
            self.stmts(body.children, block)
            _ensure_terminator(block)
            blocks.append(block)
        attrs = {"captures": counts, "worker_warps": warps, "worker_regs": regs}
        op = WarpSpecializeOp(operands, types, attrs, blocks, loc=self.loc(tree))
        return self.bind_results(op, self.results(res), tree)

    def arrow(self, tree: Node) -> list[Type]:
        tl = tree.children[0]
        return [self.type(t) for t in tl.children] if tl is not None else []

    # -- types

    def type(self, tree: Node) -> Type:
        try:
            return self._type(tree)
        except IRTypeError as e:
            raise self.fail(tree, e.message) from None

    def _type(self, tree: Node) -> Type:
        assert isinstance(tree, Tree), tree
        kind, ch = tree.data, cast(list[Any], tree.children)
        if kind == "scalar_type":
            return DType(str(ch[0]))
        if kind == "ptr_type":
            return PointerType(DType(str(ch[0])))
        if kind == "tile_type":
            shape, dt, layout = ch
            tile_layout = cast(DistributedLayout, self.layout(layout)) if layout is not None else None
            return TileType(self.shape(shape), DType(str(dt)), tile_layout)
        if kind == "smem_type":
            shape, dt, layout, slots = ch
            return SharedBufferType(
                self.shape(shape),
                DType(str(dt)),
                cast(SharedLayout, self.layout(layout)),
                int(slots) if slots is not None else None,
            )
        if kind == "mbarrier_type":
            return MBarrierType(int(ch[0]))
        if kind == "desc_type":
            shape, dt, layout = ch
            return TensorDescType(self.shape(shape), DType(str(dt)), cast(NVMMASharedLayout, self.layout(layout)))
        raise self.fail(tree, f"unknown type {kind}")

    def shape(self, tree: Node) -> tuple[IntExpr, ...]:
        dims = []
        for d in tree.children:
            v = self.value(d)
            if not _is_intexpr(v):
                raise self.fail(d, "dimensions must be integers or integer expressions")
            dims.append(v)
        return tuple(dims)

    # -- layouts

    def layout(self, tree: Node) -> Layout:
        name_tok = tree.children[0]
        name = str(name_tok)
        if tree.data == "layout_ref":
            if name not in self.aliases:
                raise self.fail(name_tok, f"undefined layout alias {name}")
            return self.aliases[name]
        kind = name[1:]
        cls = LAYOUT_CLASSES.get(kind)
        if cls is None:
            raise self.fail(name_tok, f"unknown layout kind '{kind}' (known: {', '.join(LAYOUT_CLASSES)})")
        params: dict[str, Any] = {}
        for p in tree.children[1:]:
            if p is None:
                continue
            key, val = p.children
            if str(key) in params:
                raise self.fail(key, f"layout parameter '{key}' given twice")
            params[str(key)] = self.value(val)
        try:
            return cls(**params)
        except TypeError as e:
            raise self.fail(tree, f"bad parameters for #{kind}: {_typeerror_text(e)}") from None
        except IRTypeError as e:
            raise self.fail(tree, e.message) from None

    # -- attributes and values

    def attr_dict(self, tree: Node) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for entry in tree.children:
            key, val = entry.children
            if str(key) in out:
                raise self.fail(key, f"attribute '{key}' given twice")
            out[str(key)] = self.value(val)
        return out

    def signed_int(self, tree: Node) -> int:
        v = int(tree.children[0])
        return -v if tree.data == "neg_int" else v

    def value(self, node: Node) -> Any:
        if isinstance(node, Token):
            raise self.fail(node, f"unexpected {node}")
        k, ch = node.data, node.children
        if k == "int_value":
            return int(ch[0])
        if k == "float_value":
            return float(ch[0])
        if k == "neg_float_value":
            return -float(ch[0])
        if k == "string_value":
            return _unescape(str(ch[0]))
        if k == "true_value":
            return True
        if k == "false_value":
            return False
        if k == "list_value":
            return [self.value(c) for c in ch if c is not None]
        if k == "dtype_name":
            return DType(str(ch[0]))
        if k == "name":
            n = str(ch[0])
            if n == "inf":
                return float("inf")
            if n == "nan":
                return float("nan")
            return Sym(n)
        if k == "neg":
            v = self.value(ch[0])
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v
            if isinstance(v, Expr):
                return BinExpr("-", 0, v)
            raise self.fail(node, "'-' needs a number")
        if k in ("add", "sub", "mul", "floordiv", "mod"):
            a, b = self.value(ch[0]), self.value(ch[1])
            if not (_is_intexpr(a) and _is_intexpr(b)):
                raise self.fail(node, "arithmetic is only for integer expressions")
            op = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}[k]
            return _fold(BinExpr(op, a, b))
        if k == "call":
            fn, a, b = str(ch[0]), self.value(ch[1]), self.value(ch[2])
            if fn not in ("cdiv", "min", "max"):
                raise self.fail(node, f"unknown function '{fn}' (known: cdiv, min, max)")
            if not (_is_intexpr(a) and _is_intexpr(b)):
                raise self.fail(node, f"'{fn}' takes integer expressions")
            return _fold(CallExpr(fn, (a, b)))
        if k in ("layout_ref", "layout_literal"):
            return self.layout(node)
        raise self.fail(node, f"unexpected {k}")


def _safe_infer(cls: type[Operation], operands: list[Value], attrs: dict[str, Any]) -> list[Type] | None:
    """Result types the op implies, or None; malformed operands are the verifier's to report."""
    try:
        return cls.infer(operands, attrs)
    except (IndexError, KeyError, TypeError, AttributeError, IRTypeError):
        return None


def _is_intexpr(v: Any) -> bool:
    return isinstance(v, Expr) or (isinstance(v, int) and not isinstance(v, bool))


def _fold(e: Expr) -> IntExpr:
    from tilec.ir.expr import substitute

    return substitute(e, {})


def _unescape(s: str) -> str:
    body = s[1:-1]
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _typeerror_text(e: TypeError) -> str:
    text = str(e)
    return text.split("() ", 1)[-1] if "() " in text else text


def _ensure_terminator(block: Block) -> None:
    if block.terminator is None:
        block.append(YieldOp())


# the syntax trees of the texts parsed last, which the builder only reads: a kernel's candidates
# and plans are each built from the same logical text again (the autotuner, the plan surveys)
_TREES: OrderedDict[str, Node] = OrderedDict()
TREES_KEPT = 32
_TREES_LOCK = threading.Lock()  # (the autotuner builds candidates in worker threads)


def _tree(text: str) -> Node:
    with _TREES_LOCK:
        tree = _TREES.get(text)
        if tree is not None:
            _TREES.move_to_end(text)
            return tree
    tree = _lark().parse(text)
    with _TREES_LOCK:
        _TREES[text] = tree
        while len(_TREES) > TREES_KEPT:
            _TREES.popitem(last=False)
    return tree


def parse(text: str, filename: str = "<input>") -> Module:
    """Parses a module. Raises ParseError (with file:line:col) on malformed text."""
    try:
        tree = _tree(text)
    except lark.exceptions.UnexpectedCharacters as e:
        loc = Location(filename, e.line, e.column)
        ch = text[e.pos_in_stream] if e.pos_in_stream is not None and e.pos_in_stream < len(text) else "?"
        raise ParseError(f"unexpected character {ch!r}", loc) from None
    except lark.exceptions.UnexpectedToken as e:
        tok = e.token
        loc = Location(
            filename, e.line if e.line != -1 else tok.line or 0, e.column if e.column != -1 else tok.column or 0
        )
        if tok.type == "$END":
            loc = Location(filename, text.count("\n") + 1, len(text.rsplit("\n", 1)[-1]) + 1)
        raise ParseError(f"unexpected {_describe(tok)}; expected {_expected(sorted(e.expected))}", loc) from None
    except lark.exceptions.UnexpectedEOF as e:
        loc = Location(filename, text.count("\n") + 1, len(text.rsplit("\n", 1)[-1]) + 1)
        raise ParseError(f"unexpected end of input; expected {_expected(sorted(e.expected))}", loc) from None
    try:
        return _Builder(filename).module(tree)
    except TilecError:
        raise
    except RecursionError:
        raise ParseError("input nests too deeply", Location(filename, 1, 1)) from None


def parse_file(path: str | Path) -> Module:
    p = Path(path)
    try:
        text = p.read_text()
    except UnicodeDecodeError:
        raise ParseError("file is not UTF-8 text", Location(str(path), 1, 1)) from None
    return parse(text, str(path))
