"""What the Triton and Gluon emitters share: printing planned tile IR as Python in the Triton
family of languages, one IR op per line, named after the IR's values.

The emitter prints; it decides nothing a pass could. A subclass names the language module
(`tl` or `gl`), says how layouts appear (Triton: not at all; Gluon: on every op that creates a
tile) and handles the ops only its target has.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from tilec.emit.common import RESERVED as PY_RESERVED
from tilec.emit.common import EmitError, PyNames, py_float
from tilec.ir.core import Block, Kernel, Operation, Value
from tilec.ir.dtypes import DType
from tilec.ir.expr import Expr, evaluate
from tilec.ir.layouts import Layout
from tilec.ir.ops import (
    ELEMENTWISE_OPS,
    ArgCombineOp,
    ArgReduceOp,
    AssertOp,
    AtomicAddOp,
    BitcastOp,
    BroadcastOp,
    CastOp,
    CmpOp,
    ConvertLayoutOp,
    ElementwiseOp,
    ExpandDimsOp,
    ForOp,
    IfOp,
    LoadOp,
    RandOp,
    ReduceOp,
    ReductionOp,
    ReshapeOp,
    SoftmaxCombineOp,
    SoftmaxReduceOp,
    StoreOp,
    WelfordCombineOp,
    WelfordOp,
    WhereOp,
    yielded_values,
)
from tilec.ir.ops.common import elem_dtype
from tilec.ir.types import TileType

DTYPES = {
    "i1": "int1",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f8e4m3": "float8e4nv",
    "f8e5m2": "float8e5",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
}

BINARY_SYMBOLS = {
    "tile.add": "+",
    "tile.sub": "-",
    "tile.mul": "*",
    "tile.rem": "%",
    "tile.and": "&",
    "tile.or": "|",
    "tile.xor": "^",
    "tile.shl": "<<",
    "tile.shr": ">>",
}
CMP_SYMBOLS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
UNARY_FUNCTIONS = {
    "tile.abs": "abs",
    "tile.exp": "exp",
    "tile.exp2": "exp2",
    "tile.log": "log",
    "tile.log2": "log2",
    "tile.sqrt": "sqrt",
    "tile.rsqrt": "rsqrt",
    "tile.sin": "sin",
    "tile.cos": "cos",
    "tile.erf": "erf",
    "tile.floor": "floor",
    "tile.ceil": "ceil",
}

# Combine functions the emitted code may need; each is emitted once, only when used. They are
# plain @triton.jit functions, which Gluon kernels may call too.
HELPERS = {
    "max": """@triton.jit
def _tilec_max(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
""",
    "min": """@triton.jit
def _tilec_min(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
""",
    "fmod": """@triton.jit
def _tilec_fmod(a, b):
    # C's fmod: the GPU's a % b gives inf for inf % inf and +0 for -0 % 1; the result has a's sign
    r = a % b
    r = tl.where(r == 0.0, a * 0.0, r)
    r = tl.where(tl.abs(b) == float("inf"), a, r)
    return tl.where(tl.abs(a) == float("inf"), float("nan"), r)
""",
    "prod": """@triton.jit
def _tilec_mul(a, b):
    return a * b
""",
    "argmax": """@triton.jit
def _tilec_argmax(va, ia, vb, ib):
    a_nan = va != va
    b_nan = vb != vb
    b_wins = (vb > va) | (b_nan & ~a_nan)
    tie = (va == vb) | (a_nan & b_nan)
    pick_b = b_wins | (tie & (ib < ia))
    return tl.where(pick_b, vb, va), tl.where(pick_b, ib, ia)
""",
    "argmin": """@triton.jit
def _tilec_argmin(va, ia, vb, ib):
    a_nan = va != va
    b_nan = vb != vb
    b_wins = (vb < va) | (b_nan & ~a_nan)
    tie = (va == vb) | (a_nan & b_nan)
    pick_b = b_wins | (tie & (ib < ia))
    return tl.where(pick_b, vb, va), tl.where(pick_b, ib, ia)
""",
    "tanh": """@triton.jit
def _tilec_tanh(x):
    # |x| >= 0.625: (1 - e^(-2|x|)) / (1 + e^(-2|x|)) with the sign of x (no overflow; NaN stays
    # NaN); below, where 1 - e^(-2|x|) cancels, an odd polynomial (Cephes tanhf); tanh(±0) = ±0
    a = tl.abs(x)
    e = tl.exp(-2.0 * a)
    t = (1.0 - e) / (1.0 + e)
    z = x * x
    p = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z + 1.33314422036e-1) * z - 3.33332819422e-1) * z * x + x
    return tl.where(x == 0.0, x, tl.where(a < 0.625, p, tl.where(x < 0.0, t * -1.0, t)))
""",
    "pow": """@triton.jit
def _tilec_pow(a, b):
    # C99 pow: exp2(b * log2|a|) with the sign and special cases of Annex F
    a, b = tl.broadcast(a, b)
    r = tl.exp2(b * tl.log2(tl.abs(a)))
    integral = b == tl.floor(b)
    odd = integral & (tl.abs(b % 2.0) == 1.0)
    signed = integral | (a == float("-inf"))  # a negative base: only integral powers are real
    r = tl.where(a < 0.0, tl.where(signed, tl.where(odd, r * -1.0, r), float("nan")), r)
    r = tl.where((a == 0.0) & ((1.0 / a) < 0.0) & odd, r * -1.0, r)  # (-0)^odd keeps the sign
    one = (b == 0.0) | (a == 1.0) | ((a == -1.0) & (tl.abs(b) == float("inf")))
    return tl.where(one, 1.0, tl.where(b == 1.0, a, r))
""",
    "bf16": """_TILEC_INTERPRETED = tl.constexpr(triton.knobs.runtime.interpret)


@triton.jit
def _tilec_bf16(x):
    # f32 -> bf16 rounding to nearest even. On a GPU the conversion instruction rounds so (the
    # integer form below cost up to a third of the bandwidth of bf16 softmax rows on the H100);
    # Triton's interpreter truncates, so there it is done in integer ops
    if _TILEC_INTERPRETED:
        bits = x.to(tl.uint32, bitcast=True)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return tl.where(x != x, x, rounded.to(tl.float32, bitcast=True)).to(tl.bfloat16)
    else:
        return x.to(tl.bfloat16)
""",
    "rand4": """@triton.jit
def _tilec_rand4(seed, offset, normal: tl.constexpr):
    # output offset % 4 of Philox at counter offset // 4: the stream of Inductor's rand4x, randn4x
    if normal:
        r0, r1, r2, r3 = tl.randn4x(seed, offset // 4)
    else:
        r0, r1, r2, r3 = tl.rand4x(seed, offset // 4)
    lane = offset % 4
    return tl.where(lane == 0, r0, tl.where(lane == 1, r1, tl.where(lane == 2, r2, r3)))
""",
    "welford": """@triton.jit
def _tilec_welford(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    frac = tl.where(n == 0.0, 0.0, n_b / tl.where(n == 0.0, 1.0, n))
    delta = mean_b - mean_a
    mean = tl.where(n_a == 0.0, mean_b, tl.where(n_b == 0.0, mean_a, mean_a + delta * frac))
    m2 = tl.where(n_a == 0.0, m2_b, tl.where(n_b == 0.0, m2_a, m2_a + m2_b + delta * delta * n_a * frac))
    # an infinite mean (a row holding ±inf) makes both NaN, as Welford's updates give
    infinite = (tl.abs(mean_a) == float("inf")) | (tl.abs(mean_b) == float("inf"))
    return tl.where(infinite, float("nan"), mean), tl.where(infinite, float("nan"), m2), n
""",
}

# the module-level functions HELPERS define: no value or kernel may take their names
HELPER_NAMES = frozenset(name for src in HELPERS.values() for name in re.findall(r"^def (\w+)", src, re.M))


def shape_text(t: Any) -> str:
    return "[" + ", ".join(str(d) for d in t.shape) + "]"


def extreme(dt: DType, kind: str) -> float | int:
    """The value that loses every comparison of a `kind` (max or min) reduction."""
    if dt.is_float:
        return float("-inf") if kind == "max" else float("inf")
    if dt.is_bool:
        return 0 if kind == "max" else 1
    bits = dt.bits
    if dt.is_signed:
        return -(2 ** (bits - 1)) if kind == "max" else 2 ** (bits - 1) - 1
    return 0 if kind == "max" else 2**bits - 1


class PythonEmitter:
    """Base: the kernel body for a Triton-family language."""

    L: ClassVar[str] = "tl"  # the language module's alias in emitted code
    target: ClassVar[str] = ""
    handlers: ClassVar[dict[str, Callable[[Any, Operation, int], None]]] = {}  # the language's own ops

    def __init__(self, kernel: Kernel, reserved: set[str]) -> None:
        self.k = kernel
        reserved = {*reserved, *HELPER_NAMES}
        self.names = PyNames(kernel, {kernel.name, *reserved})
        # the jitted function's name: the kernel's, unless that is a module-level name of the
        # emitted source (a keyword, builtin, import alias or the launcher's own names)
        clash = kernel.name in reserved or kernel.name in PY_RESERVED
        self.kname = self.names.fresh(f"{kernel.name}_kernel") if clash else kernel.name
        self.lines: list[str] = []
        self.helpers: set[str] = set()
        # integer parameters said to be multiples of m (`multiple_of`, a symbolic size such as
        # 5632*s0): the launch passes the value divided by m and the kernel multiplies it back.
        # Triton compiles sizes unspecialized, so it knows nothing of a size's divisibility, and a
        # mask or offset from it would cost every load and store its 16-byte width; of `q * m` it
        # knows that m divides it. Parameter name -> (the jitted function's parameter, m).
        self.scaled: dict[str, tuple[str, int]] = {}
        for p, attrs in zip(kernel.params, kernel.param_attrs):
            m = attrs.get("multiple_of")
            if m is not None and isinstance(p.type, DType) and p.type.is_int:
                name = self.n(p)
                self.scaled[name] = (self.fresh(f"{name}_over_{m}"), m)

    def kernel_param(self, name: str) -> str:
        """The jitted function's parameter for the kernel parameter `name` (its own name, or that
        of the value divided by its `multiple_of`)."""
        return self.scaled[name][0] if name in self.scaled else name

    def host_arg(self, name: str) -> str:
        """What the launcher passes for the kernel parameter `name`."""
        return f"{name} // {self.scaled[name][1]}" if name in self.scaled else name

    def scaled_prologue(self) -> None:
        """The kernel's first lines: each scaled parameter multiplied back."""
        for name, (q, m) in self.scaled.items():
            self.emit(1, f"{name} = {q} * {m}")

    # -- naming and literals

    def n(self, v: Value) -> str:
        return self.names(v)

    def fresh(self, base: str) -> str:
        return self.names.fresh(base)

    def dtype(self, dt: DType) -> str:
        return f"{self.L}.{DTYPES[dt.name]}"

    def layout(self, layout: Layout | None) -> str | None:
        """How a tile layout is written; None where the language does not take layouts."""
        return None

    def with_layout(self, t: TileType) -> str:
        lay = self.layout(t.layout)
        return f", layout={lay}" if lay else ""

    def jit_options(self, kernel: bool = False) -> str:
        """The decorator's arguments: asserts are compiled only with `debug=True` (Inductor compiles
        its kernels so too, for the same bounds checks). The kernel's own (`kernel`) integer
        scalar parameters (a symbolic size) are not specialized: Triton would compile another
        variant for a size of 1 or a multiple of 16, and one compiled kernel serves every size."""
        options = []
        if any(isinstance(op, AssertOp) for op in self.k.walk()):
            options.append("debug=True")
        ints = [self.n(p) for p in self.k.params if isinstance(p.type, DType) and p.type.is_int] if kernel else []
        sizes = [self.kernel_param(n) for n in ints]
        if sizes:
            options.append(f"do_not_specialize={sizes!r}")
        return f"({', '.join(options)})" if options else ""

    def emit(self, depth: int, text: str, op: Operation | None = None) -> None:
        suffix = ""
        if op is not None and op.loc and op.loc.line:
            # a comment holds one line: whatever a file name contains, it cannot end the comment
            file = "".join(c if c.isprintable() else "?" for c in op.loc.file.rsplit("/", 1)[-1])
            suffix = f"  # {file}:{op.loc.line}"
        self.lines.append("    " * depth + text + suffix)

    def assign(self, op: Operation, expr: str, depth: int) -> None:
        self.emit(depth, f"{self.n(op.result)} = {expr}", op)

    def downcast(self, expr: str, dt: DType) -> str:
        """An f32 expression rounded to the narrower float dtype `dt`."""
        return f"({expr}).to({self.dtype(dt)})"

    def literal(self, value: Any, dt: DType) -> str:
        if dt.is_float:
            text = py_float(float(value))
            if dt.name == "f32":
                return text
            # built in f32 and converted: Triton's interpreter mishandles bf16 constants
            return f"{self.L}.full([], {text}, {self.L}.float32).to({self.dtype(dt)})"
        v = int(value)
        if dt.name == "i32" and -(2**31) <= v < 2**31:
            return str(v)
        return f"{self.L}.cast({v}, {self.dtype(dt)})"

    def fill(self, t: TileType, value: float | int) -> str:
        text = py_float(float(value)) if t.dtype.is_float else str(int(value))
        if t.dtype.name == "bf16":  # see literal()
            return f"{self.L}.full({shape_text(t)}, {text}, {self.L}.float32{self.with_layout(t)}).to({self.dtype(t.dtype)})"
        return f"{self.L}.full({shape_text(t)}, {text}, {self.dtype(t.dtype)}{self.with_layout(t)})"

    def constant_of(self, v: Value) -> Any:
        """The value of a scalar constant operand (None if `v` is not one)."""
        owner = getattr(v, "op", None)
        if isinstance(owner, Operation) and owner.name == "tile.constant":
            return owner.attr("value")
        return None

    def bound(self, v: Value) -> str:
        """A loop bound: a literal when constant (Triton's interpreter needs plain ints there)."""
        c = self.constant_of(v)
        return str(int(c)) if c is not None else self.n(v)

    def carried(self, v: Value) -> str:
        """A value entering a loop-carried or conditional variable: a typed tensor, never a constexpr
        (such variables must keep one type)."""
        c = self.constant_of(v)
        if c is None:
            return self.n(v)
        dt = v.type
        assert isinstance(dt, DType)
        if dt.is_float and dt.name != "f32":
            return self.literal(c, dt)
        text = py_float(float(c)) if dt.is_float else str(int(c))
        return f"{self.L}.full([], {text}, {self.dtype(dt)})"

    # -- blocks

    def block(self, block: Block, depth: int) -> None:
        """Emits a block's ops (its yield is the enclosing op's to print)."""
        for op in block.ops:
            if op.name == "tile.yield":
                return
            self.block_op(op, depth)

    def block_op(self, op: Operation, depth: int) -> None:
        handler = self.handlers.get(op.name) or PYTHON_HANDLERS.get(op.name)
        if handler is not None:
            handler(self, op, depth)
        elif op.name in ELEMENTWISE_OPS:
            self.elementwise(op, depth)
        else:
            raise EmitError(f"the {self.target} emitter cannot print '{op.name}'", op.loc)

    def body(self, block: Block, depth: int) -> None:
        start = len(self.lines)
        self.block(block, depth)
        if len(self.lines) == start:
            self.emit(depth, "pass")

    # -- elementwise math

    def elementwise(self, op: Operation, depth: int) -> None:
        assert isinstance(op, ElementwiseOp)
        dt = elem_dtype(op.result.type)
        operand_dt = op.operand_dtype
        assert dt is not None
        # bf16 and f16 math runs in f32 and rounds once: the IR's meaning, what GPUs do, and the only
        # form Triton's interpreter gets right for bf16
        half = operand_dt.name in ("f16", "bf16")
        lang = self.L
        args = [
            f"{self.n(v)}.to({lang}.float32)" if half and elem_dtype(v.type) == operand_dt else self.n(v)
            for v in op.operands
        ]
        name = op.name
        if name == "tile.rem" and dt.is_float:
            self.helpers.add("fmod")
            expr = f"_tilec_fmod({args[0]}, {args[1]})"
        elif name in BINARY_SYMBOLS:
            expr = f"{args[0]} {BINARY_SYMBOLS[name]} {args[1]}"
        elif name == "tile.div":
            expr = f"{args[0]} / {args[1]}" if dt.is_float else f"{args[0]} // {args[1]}"
        elif name in ("tile.maximum", "tile.minimum"):
            fn = f"{lang}.maximum" if name == "tile.maximum" else f"{lang}.minimum"
            nan = ", propagate_nan=tl.PropagateNan.ALL" if dt.is_float else ""
            expr = f"{fn}({args[0]}, {args[1]}{nan})"
        elif name == "tile.neg":
            # Triton's unary minus is 0 - x, which gives +0 for +0: multiplying by -1 flips the sign
            expr = f"{args[0]} * -1.0" if dt.is_float else f"-{args[0]}"
        elif name == "tile.not":
            expr = f"~{args[0]}"
        elif name == "tile.fma":
            expr = f"{lang}.fma({args[0]}, {args[1]}, {args[2]})"
        elif name == "tile.pow":
            self.helpers.add("pow")
            expr = f"_tilec_pow({args[0]}, {args[1]})"
        elif name == "tile.tanh":
            self.helpers.add("tanh")
            expr = f"_tilec_tanh({args[0]})"
        elif name == "tile.sigmoid":
            expr = f"1.0 / (1.0 + {lang}.exp(-{args[0]}))"
        elif name in UNARY_FUNCTIONS:
            expr = f"{lang}.{UNARY_FUNCTIONS[name]}({args[0]})"
        else:
            raise EmitError(f"the {self.target} emitter has no form for '{name}'", op.loc)
        if half and dt == operand_dt:
            expr = self.downcast(expr, dt)
        self.assign(op, expr, depth)

    # -- reductions

    def masked_operand(self, op: Operation, depth: int, fill: float | int) -> str:
        """The reduced operand with masked-off elements replaced by `fill` (a new line when there is a mask)."""
        assert isinstance(op, ReductionOp)
        x = self.n(op.src)
        if op.mask is None:
            return x
        t = op.src.type
        assert isinstance(t, TileType)
        name = self.fresh(f"{x}_masked")
        self.emit(depth, f"{name} = {self.L}.where({self.n(op.mask)}, {x}, {self.fill(t, fill)})")
        return name

    def positions(self, t: TileType, axis: int, depth: int, dtype: DType) -> str:
        """Each element's index along `axis`, as a tile shaped like `t`: an arange along `axis`,
        expanded back to the tile's rank and broadcast to its shape."""
        pos = self.fresh("pos")
        expr = f"{self.L}.arange(0, {t.shape[axis]}{self.arange_layout(t, axis)})"
        if dtype.name != "i32":
            expr = f"{expr}.to({self.dtype(dtype)})"
        for other in range(t.rank):
            if other != axis:
                expr = f"{self.L}.expand_dims({expr}, {other})"
        self.emit(depth, f"{pos} = tl.broadcast_to({expr}, {shape_text(t)})")
        return pos

    def arange_layout(self, t: TileType, axis: int) -> str:
        """The layout argument of an arange along `axis` of a tile shaped like `t`."""
        return ""


# ---------------------------------------------------------------------------------------------
# Op handlers shared by both languages

Handler = Callable[[Any, Operation, int], None]
PYTHON_HANDLERS: dict[str, Handler] = {}


def op(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for n in names:
            PYTHON_HANDLERS[n] = fn
        return fn

    return register


@op("tile.program_id")
def _program_id(e: PythonEmitter, o: Operation, d: int) -> None:
    e.assign(o, f"{e.L}.program_id({o.attr('axis')})", d)


@op("tile.num_programs")
def _num_programs(e: PythonEmitter, o: Operation, d: int) -> None:
    e.assign(o, f"{e.L}.num_programs({o.attr('axis')})", d)


@op("tile.constant")
def _constant(e: PythonEmitter, o: Operation, d: int) -> None:
    dt = o.result.type
    assert isinstance(dt, DType)
    value = o.attr("value")
    if isinstance(value, Expr):  # over constexprs (`W * 4`): bound by the time a kernel is printed
        value = evaluate(value, e.k.bound_constexprs())
    e.assign(o, e.literal(value, dt), d)


@op("tile.full")
def _full(e: PythonEmitter, o: Operation, d: int) -> None:
    t = o.result.type
    assert isinstance(t, TileType)
    e.assign(o, e.fill(t, o.attr("value")), d)


@op("tile.arange")
def _arange(e: PythonEmitter, o: Operation, d: int) -> None:
    start = o.attr("start")
    t = o.result.type
    assert isinstance(t, TileType)
    n = t.shape[0]
    end = start + n if isinstance(n, int) else (f"{n}" if start == 0 else f"{start} + {n}")  # n: a constexpr
    e.assign(o, f"{e.L}.arange({start}, {end}{e.with_layout(t)})", d)


@op("tile.broadcast")
def _broadcast(e: PythonEmitter, o: Operation, d: int) -> None:
    t = o.result.type
    assert isinstance(t, TileType) and isinstance(o, BroadcastOp)
    src = o.src
    if isinstance(src.type, DType):
        e.assign(o, f"{e.L}.full({shape_text(t)}, {e.n(src)}, {e.dtype(t.dtype)}{e.with_layout(t)})", d)
    else:
        e.assign(o, f"tl.broadcast_to({e.n(src)}, {shape_text(t)})", d)


@op("tile.expand_dims")
def _expand_dims(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, ExpandDimsOp)
    e.assign(o, f"{e.L}.expand_dims({e.n(o.src)}, {o.attr('axis')})", d)


@op("tile.reshape")
def _reshape(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, ReshapeOp)
    e.assign(o, f"{e.L}.reshape({e.n(o.src)}, {shape_text(o.result.type)})", d)


@op("tile.convert_layout")
def _convert_layout(e: PythonEmitter, o: Operation, d: int) -> None:
    t = o.result.type
    assert isinstance(t, TileType) and isinstance(o, ConvertLayoutOp)
    lay = e.layout(t.layout)
    e.assign(o, f"{e.L}.convert_layout({e.n(o.src)}, {lay})" if lay else e.n(o.src), d)


@op("tile.cmp")
def _cmp(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, CmpOp)
    half = o.operand_dtype in (DType("f16"), DType("bf16"))
    a, b = (f"{e.n(v)}.to({e.L}.float32)" if half else e.n(v) for v in (o.lhs, o.rhs))
    e.assign(o, f"{a} {CMP_SYMBOLS[o.attr('predicate')]} {b}", d)


@op("tile.where")
def _where(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, WhereOp)
    c, a, b = e.n(o.cond), e.n(o.true_value), e.n(o.false_value)
    e.assign(o, f"{e.L}.where({c}, {a}, {b})", d)


@op("tile.cast")
def _cast(e: PythonEmitter, o: Operation, d: int) -> None:
    dt = elem_dtype(o.result.type)
    assert dt is not None and isinstance(o, CastOp)
    src = e.n(o.src)
    src_dt = elem_dtype(o.src.type)
    if dt.is_bool:
        e.assign(o, f"{src} != 0", d)
    elif dt.is_float and src_dt is not None and src_dt.is_float and src_dt.bits > dt.bits:
        e.assign(o, e.downcast(src, dt), d)
    elif dt.is_float and src_dt is not None and src_dt.is_float and src_dt != dt and src_dt.bits == dt.bits:
        # fp16 <-> bf16 through f32 (exact), then one rounding: Triton's interpreter converts them wrongly
        e.assign(o, e.downcast(f"{e.L}.cast({src}, {e.L}.float32)", dt), d)
    else:
        # tl.cast rather than .to(): a loop index is a plain int in Triton's interpreter
        e.assign(o, f"{e.L}.cast({src}, {e.dtype(dt)})", d)


@op("tile.bitcast")
def _bitcast(e: PythonEmitter, o: Operation, d: int) -> None:
    dt = elem_dtype(o.result.type)
    assert dt is not None and isinstance(o, BitcastOp)
    e.assign(o, f"{e.L}.cast({e.n(o.src)}, {e.dtype(dt)}, bitcast=True)", d)


@op("tile.load")
def _load(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, LoadOp)
    ptr, offs = e.n(o.ptr), e.n(o.offsets)
    args = [f"{ptr} + {offs}"]
    if o.mask is not None:
        args.append(f"mask={e.n(o.mask)}")
        args.append(f"other={e.n(o.other) if o.other is not None else '0'}")
    if o.attr("eviction"):
        args.append(f'eviction_policy="{o.attr("eviction")}"')
    e.assign(o, f"{e.L}.load({', '.join(args)})", d)


@op("tile.assert")
def _assert(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, AssertOp)
    e.emit(d, f"{e.L}.device_assert({e.n(o.cond)}, {o.attr('message')!r})", o)


@op("tile.rand")
def _rand(e: PythonEmitter, o: Operation, d: int) -> None:
    # Triton's own generators, which Gluon kernels may call too: the functions stock Inductor calls
    assert isinstance(o, RandOp)
    normal = o.attr("dist") == "normal"
    seed, offset = e.n(o.seed), e.n(o.offset)
    if o.attr("lanes") == 1:
        e.assign(o, f"{'tl.randn' if normal else 'tl.rand'}({seed}, {offset})", d)
    else:
        e.helpers.add("rand4")
        e.assign(o, f"_tilec_rand4({seed}, {offset}, {normal})", d)


@op("tile.assume_multiple")
def _assume_multiple(e: PythonEmitter, o: Operation, d: int) -> None:
    divisors = o.attr("divisors")
    arg = str(divisors[0]) if len(divisors) == 1 else f"[{', '.join(map(str, divisors))}]"
    e.assign(o, f"{e.L}.multiple_of({e.n(o.operands[0])}, {arg})", d)


@op("tile.store", "tile.atomic_add")
def _store(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, StoreOp)  # an atomic add is a store that adds
    ptr, offs, val = e.n(o.ptr), e.n(o.offsets), e.n(o.value)
    mask = f", mask={e.n(o.mask)}" if o.mask is not None else ""
    if isinstance(o, AtomicAddOp):  # relaxed, as Inductor's scatters: only the sum matters
        e.emit(d, f'{e.L}.atomic_add({ptr} + {offs}, {val}{mask}, sem="relaxed")', o)
    else:
        hint = f', eviction_policy="{o.attr("eviction")}"' if o.attr("eviction") else ""
        e.emit(d, f"{e.L}.store({ptr} + {offs}, {val}{mask}{hint})", o)


@op("tile.reduce")
def _reduce(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, ReduceOp)
    kind, axis = o.attr("kind"), o.attr("axis")
    t = o.src.type
    assert isinstance(t, TileType)
    if t.dtype.name in ("f16", "bf16"):
        raise EmitError(
            f"reductions of {t.dtype} are not emitted: reduce in f32 (cast first), as Inductor's kernels do", o.loc
        )
    if kind == "sum":
        e.assign(o, f"{e.L}.sum({e.masked_operand(o, d, 0)}, {axis})", d)
    elif kind == "prod":
        x = e.masked_operand(o, d, 1)
        e.helpers.add("prod")
        e.assign(o, f"{e.L}.reduce({x}, {axis}, _tilec_mul)", d)
    else:
        x = e.masked_operand(o, d, extreme(t.dtype, kind))
        if t.dtype.is_float:
            e.helpers.add(kind)
            e.assign(o, f"{e.L}.reduce({x}, {axis}, _tilec_{kind})", d)
        else:
            e.assign(o, f"{e.L}.{kind}({x}, {axis})", d)


@op("tile.argreduce")
def _argreduce(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, ArgReduceOp)
    kind, axis = o.attr("kind"), o.attr("axis")
    t = o.src.type
    assert isinstance(t, TileType)
    idx_dt = elem_dtype(o.results[1].type)
    assert idx_dt is not None
    n = t.shape[axis]
    pos = e.positions(t, axis, d, idx_dt)
    x = e.n(o.src)
    if o.mask is not None:
        # masked-off elements lose every comparison: the worst value and an index past the end
        m = e.n(o.mask)
        masked = e.fresh(f"{x}_masked")
        e.emit(d, f"{masked} = {e.L}.where({m}, {x}, {e.fill(t, extreme(t.dtype, kind))})")
        mpos = e.fresh("pos_masked")
        e.emit(d, f"{mpos} = {e.L}.where({m}, {pos}, {n})")
        x, pos = masked, mpos
    e.helpers.add(f"arg{kind}")
    value, index = (e.n(r) for r in o.results)
    raw = e.fresh(f"{index}_raw")
    e.emit(d, f"{value}, {raw} = {e.L}.reduce(({x}, {pos}), {axis}, _tilec_arg{kind})", o)
    e.emit(d, f"{index} = {e.L}.where({raw} == {n}, 0, {raw})")


@op("tile.welford")
def _welford(e: PythonEmitter, o: Operation, d: int) -> None:
    """A tile's mean, m2 and count in two passes over the values it holds: the mean from a sum,
    then the sum of squared deviations from that mean (what the interpreter computes, in f32).
    Chan's combine at every step of a tree reduction (`_tilec_welford`: a division and six
    selects) cost about forty instructions an element, which made LayerNorm rows issue-bound on
    the H200 (93-95% of a copy, RMSNorm's sum of squares 99-100); two sums cost a few. A row
    holding an infinity or NaN gives NaN for both, as Welford's updates do."""
    assert isinstance(o, WelfordOp)
    axis = o.attr("axis")
    t = o.src.type
    assert isinstance(t, TileType)
    lang = e.L
    x = e.masked_operand(o, d, 0.0)
    mean, m2, n = (e.n(r) for r in o.results)
    counted = o.results[2].type
    if o.mask is not None:
        e.emit(d, f"{n} = {lang}.sum({lang}.where({e.n(o.mask)}, 1.0, {e.fill(t, 0.0)}), {axis})", o)
    elif isinstance(counted, TileType):  # every element counts: the tile's extent along the axis
        e.emit(d, f"{n} = {e.fill(counted, t.shape[axis])}", o)
    else:
        e.emit(d, f"{n} = {lang}.sum({e.fill(t, 1.0)}, {axis})", o)
    raw = e.fresh(f"{mean}_raw")
    e.emit(d, f"{raw} = {lang}.sum({x}, {axis}) / {lang}.where({n} == 0.0, 1.0, {n})")
    dev = e.fresh(f"{x}_dev")
    centered = f"{x} - {lang}.expand_dims({raw}, {axis})"
    if o.mask is not None:
        e.emit(d, f"{dev} = {lang}.where({e.n(o.mask)}, {centered}, {e.fill(t, 0.0)})")
    else:
        e.emit(d, f"{dev} = {centered}")
    finite = e.fresh(f"{mean}_finite")
    e.emit(d, f'{finite} = {lang}.abs({raw}) < float("inf")')
    e.emit(d, f'{mean} = {lang}.where({finite}, {raw}, float("nan"))')
    e.emit(d, f'{m2} = {lang}.where({finite}, {lang}.sum({dev} * {dev}, {axis}), float("nan"))')


@op("tile.welford_combine")
def _welford_combine(e: PythonEmitter, o: Operation, d: int) -> None:
    e.helpers.add("welford")
    names = ", ".join(e.n(r) for r in o.results)
    assert isinstance(o, WelfordCombineOp)
    e.emit(d, f"{names} = _tilec_welford({', '.join(e.n(v) for v in o.partials)})", o)


@op("tile.softmax_reduce")
def _softmax_reduce(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, SoftmaxReduceOp)
    axis = o.attr("axis")
    x = e.masked_operand(o, d, float("-inf"))
    e.helpers.add("max")
    mx, s = (e.n(r) for r in o.results)
    e.emit(d, f"{mx} = {e.L}.reduce({x}, {axis}, _tilec_max)", o)
    ex = e.fresh("exps")
    shifted = f"{e.L}.exp({x} - {e.L}.expand_dims({mx}, {axis}))"
    if o.mask is not None:
        t = o.src.type
        assert isinstance(t, TileType)
        e.emit(d, f"{ex} = {e.L}.where({e.n(o.mask)}, {shifted}, {e.fill(t, 0.0)})")
    else:
        e.emit(d, f"{ex} = {shifted}")
    e.emit(d, f'{s} = {e.L}.where({mx} == float("-inf"), 0.0, {e.L}.sum({ex}, {axis}))')


@op("tile.softmax_combine")
def _softmax_combine(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, SoftmaxCombineOp)
    ma, sa, mb, sb = (e.n(v) for v in o.partials)
    m, s = (e.n(r) for r in o.results)
    lang = e.L
    e.emit(d, f"{m} = {lang}.maximum({ma}, {mb}, propagate_nan=tl.PropagateNan.ALL)", o)
    e.emit(
        d,
        f'{s} = {lang}.where({ma} == float("-inf"), 0.0, {sa} * {lang}.exp({ma} - {m})) + '
        f'{lang}.where({mb} == float("-inf"), 0.0, {sb} * {lang}.exp({mb} - {m}))',
    )


@op("tile.arg_combine")
def _arg_combine(e: PythonEmitter, o: Operation, d: int) -> None:
    kind = o.attr("kind")
    e.helpers.add(f"arg{kind}")
    names = ", ".join(e.n(r) for r in o.results)
    assert isinstance(o, ArgCombineOp)
    e.emit(d, f"{names} = _tilec_arg{kind}({', '.join(e.n(v) for v in o.partials)})", o)


@op("tile.for")
def _for(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, ForOp)
    body = o.body
    iv, iters = o.induction_var, o.iter_args
    for a, init in zip(iters, o.inits):
        e.emit(d, f"{e.n(a)} = {e.carried(init)}")
    lo, hi, step = e.bound(o.lower), e.bound(o.upper), e.bound(o.step)
    if o.attr("unroll"):
        head = f"{e.L}.static_range({lo}, {hi}, {step})"
    elif o.attr("stages") > 1 and e.L == "tl":  # software pipelining: a Triton hint (Gluon pipelines by hand)
        head = f"tl.range({lo}, {hi}, {step}, num_stages={o.attr('stages')})"
    else:
        head = f"range({lo}, {hi}, {step})"
    e.emit(d, f"for {e.n(iv)} in {head}:", o)
    start = len(e.lines)
    e.block(body, d + 1)
    if iters and body.terminator is not None:
        carried = ", ".join(e.carried(v) for v in yielded_values(body))
        e.emit(d + 1, f"{', '.join(e.n(a) for a in iters)} = {carried}")
    if len(e.lines) == start:
        e.emit(d + 1, "pass")
    for r, a in zip(o.results, iters):
        e.emit(d, f"{e.n(r)} = {e.n(a)}")


@op("tile.if")
def _if(e: PythonEmitter, o: Operation, d: int) -> None:
    assert isinstance(o, IfOp)
    e.emit(d, f"if {e.n(o.cond)}:", o)
    for i, region in enumerate(o.regions):
        if i == 1:
            if not o.results and all(inner.name == "tile.yield" for inner in region.ops):
                break
            e.emit(d, "else:")
        start = len(e.lines)
        e.block(region, d + 1)
        if o.results and region.terminator is not None:
            carried = ", ".join(e.carried(v) for v in yielded_values(region))
            e.emit(d + 1, f"{', '.join(e.n(r) for r in o.results)} = {carried}")
        if len(e.lines) == start:
            e.emit(d + 1, "pass")
