"""tilec's benchmark suite: memory-bound kernels against their peers and a plain copy.

    tilec bench [--ops rmsnorm,layernorm,softmax] [--shapes 8192x4096,...] [--dtype bf16]
                [--impls tilec-gluon,compile,...] [--out DIR]
    tilec bench --bwd [--dtype bf16]    # the backward suite: rmsnorm_bwd, layernorm_bwd, softmax_bwd,
                                        # cross_entropy_train
    python bench/bench.py ...           # the same

A backward op (`rmsnorm_bwd`, ...) is its forward's gradients: the forward is compiled and called
once, and each timed call is `torch.autograd.grad` of that output for every input (dx and the
weights' gradients), so it runs AOT autograd's compiled backward alone. Its model bytes are
3·M·N elements (x and dy read, dx written); its reference is float64 autograd of the eager forward.

Cross-entropy (`cross_entropy`: the mean loss of M rows of logits over a vocabulary of N, with
`ignore_index` targets, as a language model's loss takes them: `F.cross_entropy(logits.float(),
labels)`) is also timed as a training step's part, `cross_entropy_train`: each call is the
compiled forward and the backward of the logits (`torch.autograd.grad` of the loss), reading the
logits once per pass: model bytes 3·M·N elements (the forward's read, the backward's read and its
write of the gradient). Liger's cross-entropy writes the gradient over its input during the
forward; it runs on a copy of the logits of its own, made once.

On a GPU, in one process, per (op, shape, dtype) and implementation: compile (torch.compile with
`dynamic=False`; each implementation from a function of its own, Inductor's FX-graph cache off,
so every compile is a real one and its time is measured), run once on fresh random inputs and
check every output against a float32 reference, then time it three ways:

- end to end: `triton.testing.do_bench` (median, L2 flushed between runs) of the whole call, host
  included. Where the host's time per call (Dynamo's guards, the wrapper, the launch: 50-100 us
  on the benchmark machine, and noisy) exceeds the ~85 us the L2 flush keeps the GPU busy, this
  measures the host, not the kernel. The implementations (and the copy) are timed in turn, in
  four rounds, every other round in reverse order, and each gets its median: the host's drift
  within a run then falls on all of them alike.
- device: the same, with the GPU held in a spin kernel (`torch.cuda._sleep`, ~0.6 ms) after each
  flush, so the host has queued the whole call before the start event: the GPU time of a call on
  a cold L2, the host out of it. The tables' main figures, and the targets, use this.
- host: microseconds of host time per call (calls queued without waiting for the GPU).

Bandwidth counts model bytes: inputs and weights read once, outputs written once. The ceiling of
each shape is a device-to-device copy of the same MxN, timed the same ways.

Writes to --out: results.md (GB/s and % of the copy, one table per dtype; the end-to-end and host
figures follow), results.jsonl (one record per measurement, each round's end-to-end time with it)
and results.png (device % of the copy per shape, a line per implementation).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# The suite (bf16); fp16 and fp32 run two shapes each.
SUITE = [
    (32768, 512),
    (65536, 1024),
    (32768, 2048),
    (8192, 4096),
    (32768, 4096),
    (8192, 8192),
    (16384, 8192),
    (4096, 16384),
    (16384, 16384),
    (4096, 32768),
    (8192, 65536),
    (4096, 131072),  # rows past one CTA's shared memory (256 KiB in bf16)
    (2048, 262144),
]
# neither a power of two nor a multiple of 8; a vocabulary-sized row of 128K
SOFTMAX_EXTRA = [(32768, 50257), (8192, 131072)]
OTHER_DTYPE_SHAPES = [(32768, 2048), (4096, 16384)]
# cross-entropy: 8192 tokens over the vocabularies of Llama 2, GPT-2, Llama 3 and Gemma
CROSS_ENTROPY_SUITE = [(8192, 32000), (8192, 50257), (8192, 128256), (8192, 256000)]
IGNORE_INDEX = -100
# The backward suite (--bwd): the shapes of the backward targets, bf16
BWD_SUITE = [(32768, 2048), (8192, 8192), (4096, 32768), (2048, 65536)]
# A backward op is its forward's gradients, dx and the weights' (torch.autograd.grad of the
# compiled forward's output): what AOT autograd's backward graph computes, timed alone
BACKWARD = {
    "rmsnorm_bwd": "rmsnorm",
    "layernorm_bwd": "layernorm",
    "softmax_bwd": "softmax",
    "add_rmsnorm_bwd": "add_rmsnorm",  # two outputs (the residual stream and the norm): two gradients in
    "add_layernorm_bwd": "add_layernorm",
    "gemma_rmsnorm_bwd": "gemma_rmsnorm",
    # the residual-fused norm whose normalized rows several projections read (a transformer block's
    # attention input: q, k and v; its MLP's: gate and up): a gradient in for each, summed
    "add_rmsnorm_qkv_bwd": "add_rmsnorm_qkv",
    "add_rmsnorm_mlp_bwd": "add_rmsnorm_mlp",
    "add_gemma_rmsnorm_qkv_bwd": "add_gemma_rmsnorm_qkv",
    "add_gemma_rmsnorm_mlp_bwd": "add_gemma_rmsnorm_mlp",
    "add_layernorm_mlp_bwd": "add_layernorm_mlp",
}
# residual-fused norms read by several projections: (the residual-fused norm, the projections)
FANOUT = {
    "add_rmsnorm_qkv": ("add_rmsnorm", 3),
    "add_rmsnorm_mlp": ("add_rmsnorm", 2),
    "add_gemma_rmsnorm_qkv": ("add_gemma_rmsnorm", 3),
    "add_gemma_rmsnorm_mlp": ("add_gemma_rmsnorm", 2),
    "add_layernorm_mlp": ("add_layernorm", 2),
}
# forwards with more than one output (a backward takes a gradient for each)
OUTPUTS = {"add_rmsnorm": 2, "add_layernorm": 2, "add_gemma_rmsnorm": 2} | {op: 1 + k for op, (_, k) in FANOUT.items()}
# A training op is its forward and its backward in one call (a loss: nothing flows in)
TRAIN = {"cross_entropy_train": "cross_entropy"}
OPS = (
    "rmsnorm",
    "layernorm",
    "softmax",
    "add_rmsnorm",
    "add_layernorm",
    "gemma_rmsnorm",
    "cross_entropy",
    *BACKWARD,
    *TRAIN,
)
# run unless --ops says otherwise: the residual-fused norms and cross-entropy are measured on
# request, and so are the backwards of norms read by several projections
DEFAULT_OPS = ("rmsnorm", "layernorm", "softmax")
DEFAULT_BWD_OPS = (*(op for op in BACKWARD if BACKWARD[op] not in FANOUT), *TRAIN)
IMPLS = ("tilec", "tilec-autotune", "tilec-gluon", "tilec-triton", "eager", "compile", "max-autotune", "liger", "copy")
# run unless --impls says otherwise (tilec-autotune, tilec with its autotuner on, is asked for by name)
DEFAULT_IMPLS = tuple(i for i in IMPLS if i != "tilec-autotune")
EPS = 1e-6


# ---------------------------------------------------------------------------------------------
# The ops: eager definitions (what torch.compile sees), inputs, references, model bytes


def rmsnorm(x: Any, w: Any) -> Any:
    import torch

    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


def layernorm(x: Any, w: Any, b: Any) -> Any:
    import torch

    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)


def softmax(x: Any) -> Any:
    import torch

    return torch.softmax(x, dim=-1)


def gemma_rmsnorm(x: Any, w: Any) -> Any:
    """Gemma's RMSNorm: the weight is an offset from one, applied in fp32 before the cast."""
    import torch

    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * (1.0 + w.float())).to(x.dtype)


def add_rmsnorm(x: Any, r: Any, w: Any) -> Any:
    """A transformer block's residual add and the next RMSNorm (Llama): the sum is the new
    residual stream, kept, and normalized."""
    h = x + r
    return h, rmsnorm(h, w)


def add_layernorm(x: Any, r: Any, w: Any, b: Any) -> Any:
    """The same with LayerNorm (GPT-2)."""
    h = x + r
    return h, layernorm(h, w, b)


def add_gemma_rmsnorm(x: Any, r: Any, w: Any) -> Any:
    """The same with Gemma's RMSNorm."""
    h = x + r
    return h, gemma_rmsnorm(h, w)


# the scales of the normalized rows' further readers: distinct outputs, so that each takes its own
# gradient (a projection's input gradient), and exact in every float type
FANOUT_SCALES = (0.5, 0.25)


def fanout(name: str) -> Callable[..., Any]:
    """A residual-fused norm (`FANOUT[name]`) whose normalized rows k projections read: returns the
    residual stream, the normalized rows and k - 1 scaled copies of them (as one projection's
    gradient is summed with the others', each copy's gradient is summed into the norm's)."""
    base, k = FANOUT[name]

    def fn(*args: Any) -> Any:
        h, y = FUNCTIONS[base](*args)
        return (h, y, *(y * s for s in FANOUT_SCALES[: k - 1]))

    fn.__name__ = name
    return fn


def cross_entropy(logits: Any, labels: Any) -> Any:
    """A language model's loss: the mean over the rows whose label is not ignored."""
    import torch

    return torch.nn.functional.cross_entropy(logits.float(), labels, ignore_index=IGNORE_INDEX)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "cross_entropy": cross_entropy,
    "rmsnorm": rmsnorm,
    "layernorm": layernorm,
    "softmax": softmax,
    "add_rmsnorm": add_rmsnorm,
    "add_layernorm": add_layernorm,
    "gemma_rmsnorm": gemma_rmsnorm,
    "add_gemma_rmsnorm": add_gemma_rmsnorm,
}
FUNCTIONS |= {name: fanout(name) for name in FANOUT}


def make_inputs(op: str, m: int, n: int, dtype: Any) -> list[Any]:
    """The op's inputs; a backward op's are its forward's and then each output's gradient."""
    import torch

    if op in BACKWARD:
        dys = [torch.randn(m, n, device="cuda", dtype=dtype) for _ in range(OUTPUTS.get(BACKWARD[op], 1))]
        return [*make_inputs(BACKWARD[op], m, n, dtype), *dys]
    x = torch.randn(m, n, device="cuda", dtype=dtype)
    if TRAIN.get(op, op) == "cross_entropy":
        labels = torch.randint(0, n, (m,), device="cuda")
        labels[::7] = IGNORE_INDEX  # padding
        return [x, labels]
    if op in FANOUT:
        return make_inputs(FANOUT[op][0], m, n, dtype)
    if op.startswith("add_"):
        return [x, torch.randn(m, n, device="cuda", dtype=dtype), *make_inputs(op[4:], 1, n, dtype)[1:]]
    if op in ("rmsnorm", "gemma_rmsnorm"):
        return [x, torch.randn(n, device="cuda", dtype=dtype)]
    if op == "layernorm":
        return [x, torch.randn(n, device="cuda", dtype=dtype), torch.randn(n, device="cuda", dtype=dtype)]
    return [x]


def reference(op: str, inputs: list[Any]) -> Any:
    if op in BACKWARD:  # in float64: the weight gradients sum M rows
        forward = BACKWARD[op]
        return tuple(g.float() for g in gradients(FUNCTIONS[forward], [t.double() for t in inputs], forward)())
    if op in TRAIN:  # in float32: a float64 copy of 8192 x 256000 logits and its gradient would not fit
        return train_step(FUNCTIONS[TRAIN[op]], [t.float() if t.is_floating_point() else t for t in inputs])()
    return FUNCTIONS[op](*[t.float() if t.is_floating_point() else t for t in inputs])


def gradients(forward: Callable[..., Any], inputs: list[Any], name: str = "") -> Callable[..., Any]:
    """A call that computes the gradients of every input of `forward` (the op `name`) but the last
    ones (a gradient per output, `OUTPUTS`) by the backward of one forward call made here (its
    graph kept, so each call runs the backward alone)."""
    import torch

    k = OUTPUTS.get(name, 1)
    args, dys = inputs[:-k], inputs[-k:]
    leaves = [a.detach().requires_grad_(True) for a in args]
    out = forward(*leaves)
    return lambda *_: torch.autograd.grad(out, leaves, dys, retain_graph=True)


def train_step(forward: Callable[..., Any], inputs: list[Any]) -> Callable[..., Any]:
    """A call that runs `forward` (a loss of its first input) and the backward of that input:
    returns the loss and the first input's gradient."""
    import torch

    first, *rest = inputs

    def call(*_: Any) -> tuple[Any, Any]:
        leaf = first.detach().requires_grad_(True)
        loss = forward(leaf, *rest)
        (grad,) = torch.autograd.grad(loss, leaf)
        return loss, grad

    return call


def model_bytes(op: str, m: int, n: int, itemsize: int) -> int:
    """Each input read once, each output written once: the residual-fused norms read x and r and
    write the sum and the normalized rows; a backward reads x and dy and writes dx (the weight
    gradients, N each, are not counted), the residual-fused one reads the sum and both outputs'
    gradients and writes one gradient (x's and r's are equal)."""
    if op in BACKWARD or op in TRAIN:
        return (3 + OUTPUTS.get(BACKWARD.get(op, ""), 1) - 1) * m * n * itemsize
    if op == "cross_entropy":
        return m * n * itemsize
    weights = {"rmsnorm": 1, "layernorm": 2, "softmax": 0, "add_rmsnorm": 1, "add_layernorm": 2, "gemma_rmsnorm": 1}[op]
    rows = 4 if op.startswith("add_") else 2
    return (rows * m * n + weights * n) * itemsize


# ---------------------------------------------------------------------------------------------
# Implementations: each returns a callable on the inputs, or raises Unavailable


class UnavailableError(Exception):
    """This implementation does not exist here (not installed, or refuses the op)."""


@dataclass
class Built:
    fn: Callable[..., Any]
    compile_s: float = 0.0
    note: str = ""  # e.g. which kernels tilec took
    warm_compile_s: float | None = None  # a second compile, Triton's caches warm
    report: list[dict[str, Any]] = field(default_factory=list)  # tilec's kernels (`models.kernel_rows`)


def own_code(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with a code object of its own. Dynamo keeps what it compiled on the code object it
    compiled, so two implementations compiled from one function share a cache: the later compile
    runs for both (a case's implementations are all held and timed in turn, `end_to_end`)."""
    import types

    return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def _compiled(op: str, inputs: list[Any], mode: str | None, tilec_emitter: str | None, warm: bool = False) -> Built:
    """torch.compile of the op (a function of its own, `own_code`), compiled by its first call
    (timed). `warm`: compile it once more, and time that too: Triton's kernel caches are then warm
    for stock and tilec alike (tilec's own memo of pipeline results is cleared), so the difference
    is the work tilec adds to Inductor's (lowering, passes, emitting), not which implementation met
    a cold cache first."""
    import torch

    import tilec

    if warm:
        from tilec.inductor import build

        first = _compiled(op, inputs, mode, tilec_emitter)
        build._built.clear()
        again = _compiled(op, inputs, mode, tilec_emitter)
        return Built(again.fn, first.compile_s, first.note, again.compile_s, first.report)
    tilec.reset_report()
    fn = own_code(FUNCTIONS[BACKWARD.get(op, TRAIN.get(op, op))])
    # "auto": the product's defaults (the chooser picks the emitter per kernel and declines where
    # stock measured faster); "autotune": the same with the autotuner timing the candidates and
    # stock; "gluon"/"triton": every kernel tilec can take, by that emitter
    if tilec_emitter in ("auto", "autotune"):
        settings = tilec.config.patch(
            enabled=True, emitter="auto", strict=False, decline=True, autotune=tilec_emitter == "autotune"
        )
    elif tilec_emitter:
        settings = tilec.config.patch(enabled=True, emitter=tilec_emitter, strict=False, decline=False, autotune=False)
    else:
        settings = tilec.config.patch(enabled=False)
    start = time.perf_counter()
    with settings, torch._inductor.config.patch(fx_graph_cache=False):
        compiled = torch.compile(fn, dynamic=False, mode=mode)
        if op in BACKWARD:  # the forward compiles here, the backward at its first call
            compiled = gradients(compiled, inputs, BACKWARD[op])
        elif op in TRAIN:  # both compile at the first call
            compiled = train_step(compiled, inputs)
        compiled(*inputs)  # compiles here, under the settings
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    note = ""
    report: list[dict[str, Any]] = []
    if tilec_emitter:
        records = tilec.report()
        report = _models_module().kernel_rows(records)
        taken = [r for r in records if r.taken]
        note = f"tilec took {len(taken)} of {len(records)} kernels"
        emitters = sorted({r.emitter for r in taken if r.emitter})
        if emitters:
            note += f" ({', '.join(emitters)})"
        reasons = sorted({r.reason for r in records if not r.taken and r.reason})
        if reasons:
            note += "; not taken: " + "; ".join(reasons)
        tuned = [f"{r.emitter}: {r.autotune}" for r in taken if r.autotune]
        if tuned:
            note += "; autotuned: " + "; ".join(tuned)
    return Built(compiled, elapsed, note, report=report)


def _liger(op: str, inputs: list[Any]) -> Callable[..., Any]:
    if op.startswith("add_"):
        raise UnavailableError("liger-kernel has no residual-fused norm with this interface")
    try:
        if op == "rmsnorm":
            from liger_kernel.ops.rms_norm import LigerRMSNormFunction

            # casting_mode "llama": normalize in fp32, cast, then scale by the weight (as rmsnorm above)
            return lambda x, w: LigerRMSNormFunction.apply(x, w, EPS, 0.0, "llama", False)
        if op == "gemma_rmsnorm":
            from liger_kernel.ops.rms_norm import LigerRMSNormFunction

            # offset 1 and casting_mode "gemma": everything in fp32, one cast at the end
            return lambda x, w: LigerRMSNormFunction.apply(x, w, EPS, 1.0, "gemma", False)
        if op == "layernorm":
            from liger_kernel.ops.layer_norm import LigerLayerNormFunction

            return lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, EPS)
        if op in ("cross_entropy", "cross_entropy_train"):
            from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction

            def liger_ce(logits: Any, labels: Any) -> Any:
                return LigerCrossEntropyFunction.apply(logits, labels, None, IGNORE_INDEX)[0]

            if op == "cross_entropy":  # without a gradient to compute it leaves the logits alone
                return liger_ce
            # it writes the gradient over the logits: a copy of its own, made once
            step = train_step(liger_ce, [inputs[0].clone(), inputs[1]])
            return lambda *_: step()
        from liger_kernel.ops.softmax import LigerSoftmaxFunction

        return lambda x: LigerSoftmaxFunction.apply(x)
    except ImportError as e:
        raise UnavailableError(f"liger-kernel is not importable ({e})") from None


def build(impl: str, op: str, inputs: list[Any]) -> Built:
    if impl == "tilec":
        return _compiled(op, inputs, None, "auto", warm=True)
    if impl == "tilec-autotune":
        return _compiled(op, inputs, None, "autotune")
    if impl == "tilec-gluon":
        return _compiled(op, inputs, None, "gluon")
    if impl == "tilec-triton":
        return _compiled(op, inputs, None, "triton")
    if impl == "compile":
        return _compiled(op, inputs, None, None, warm=True)
    if impl == "max-autotune":
        return _compiled(op, inputs, "max-autotune-no-cudagraphs", None)
    if impl == "eager":
        if op in TRAIN:
            return Built(train_step(FUNCTIONS[TRAIN[op]], inputs))
        return Built(gradients(FUNCTIONS[BACKWARD[op]], inputs, BACKWARD[op]) if op in BACKWARD else FUNCTIONS[op])
    if impl == "liger":
        if op in TRAIN:
            return Built(_liger(op, inputs))
        if op in BACKWARD:
            return Built(gradients(_liger(BACKWARD[op], inputs), inputs, BACKWARD[op]))
        return Built(_liger(op, inputs))
    raise ValueError(f"unknown implementation {impl!r}")


# ---------------------------------------------------------------------------------------------
# Measuring


@dataclass
class Result:
    op: str
    m: int
    n: int
    dtype: str
    impl: str
    ok: bool
    ms: float | None = None
    gbps: float | None = None
    pct_of_copy: float | None = None
    compile_s: float | None = None
    error: str = ""
    compile_warm_s: float | None = None  # compiled again, Triton's caches warm (tilec and compile)
    note: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    # device time (cold L2, host kept out; see the module docstring), and host time per call
    device_ms: float | None = None
    device_gbps: float | None = None
    device_pct: float | None = None
    host_us: float | None = None
    report: list[dict[str, Any]] = field(default_factory=list)  # tilec's kernels (`models.kernel_rows`)
    # the end-to-end milliseconds of each round (`end_to_end`), in order; `ms` is their median
    end_to_end_rounds: list[float] = field(default_factory=list)


def bench_ms(fn: Callable[[], Any]) -> float:
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median"))


def copy_ms(m: int, n: int, dtype: Any) -> float:
    import torch

    src = torch.randn(m, n, device="cuda", dtype=dtype)
    dst = torch.empty_like(src)
    return bench_ms(lambda: dst.copy_(src))


def device_ms(fn: Callable[[], Any], estimate_ms: float) -> float:
    """GPU time of one call on a cold L2, without the host (tilec.runtime.timing): 10-100 calls,
    about 25 ms of them."""
    from tilec.runtime.timing import device_ms as timed

    return timed(fn, reps=max(10, min(100, int(25.0 / max(estimate_ms, 1e-3)))))


def host_us(fn: Callable[[], Any], n: int = 30) -> float:
    """Host time per call: n calls queued without waiting for the GPU."""
    import torch

    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / n * 1e6


def copy_result(op: str, m: int, n: int, dtype_name: str, dtype: Any) -> tuple[Result, Callable[[], Any]]:
    """A device-to-device copy of the same MxN: its device and host times, and the call, which
    `end_to_end` times with the implementations'."""
    import torch

    src = torch.randn(m, n, device="cuda", dtype=dtype)
    dst = torch.empty_like(src)
    nbytes = 2 * src.numel() * src.element_size()
    call = lambda: dst.copy_(src)  # noqa: E731
    r = Result(op, m, n, dtype_name, "copy", True, pct_of_copy=100.0)
    r.device_ms = device_ms(call, bench_ms(call))
    r.device_gbps, r.device_pct = nbytes / r.device_ms / 1e6, 100.0
    r.host_us = host_us(call)
    return r, call


def warm_up(seconds: float = 3.0) -> None:
    """Copies for a few seconds before the first measurement: the first case of a run otherwise
    meets a GPU that has not reached its clocks (it measured 30-50% low)."""
    import torch

    src = torch.randn(64 * 2**20, device="cuda")
    dst = torch.empty_like(src)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(20):
            dst.copy_(src)
        torch.cuda.synchronize()


def check(op: str, out: Any, ref: Any, dtype: Any) -> None:
    from tilec.testing import assert_close

    outs, refs = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
    for i, (o, r) in enumerate(zip(outs, refs, strict=True)):
        assert_close(o, r, dtype, what=f"{op} output {i}")


def error_line(e: BaseException) -> str:
    """An implementation's failure as a result records it: the exception's type and first line."""
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def run_case(op: str, m: int, n: int, dtype_name: str, impls: list[str], log: Callable[[str], None]) -> list[Result]:
    """Every implementation of one op, shape and dtype: built and checked one after another, each
    timed on the device and the host alone, then end to end in turn (`end_to_end`)."""
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
    itemsize = torch.tensor([], dtype=dtype).element_size()
    nbytes = model_bytes(op, m, n, itemsize)
    case_start = time.perf_counter()
    copy, copy_call = copy_result(op, m, n, dtype_name, dtype)
    results = [copy]
    torch.manual_seed(m * 131 + n)
    inputs = make_inputs(op, m, n, dtype)
    ref = reference(op, inputs)
    timed: list[tuple[Result, Callable[[], Any]]] = [(copy, copy_call)]
    held: list[Built] = []  # every implementation's compiled function, alive until its last call
    torch.compiler.reset()
    for impl in impls:
        if impl == "copy":
            continue
        r = Result(op, m, n, dtype_name, impl, False)
        try:
            built = build(impl, op, inputs)
            r.compile_s, r.note, r.report = round(built.compile_s, 2), built.note, built.report
            if built.warm_compile_s is not None:
                r.compile_warm_s = round(built.warm_compile_s, 3)
            out = built.fn(*inputs)
            torch.cuda.synchronize()
            check(op, out, ref, dtype)
            call = lambda f=built.fn: f(*inputs)  # noqa: E731
            estimate = bench_ms(call)
            try:
                r.device_ms = device_ms(call, estimate)
                r.device_gbps = nbytes / r.device_ms / 1e6
                r.device_pct = 100.0 * r.device_gbps / copy.device_gbps  # type: ignore[operator]
            except Exception as e:  # the end-to-end figure stands; say why there is no other
                r.note = (r.note + "; " if r.note else "") + f"no device timing ({type(e).__name__}: {e})"[:200]
                torch.cuda.synchronize()
            r.host_us = host_us(call)
            r.ok = True
            timed.append((r, call))
            held.append(built)
        except UnavailableError as e:
            r.error = str(e)
            log(f"  {impl:13s} unavailable: {e}")
        except Exception as e:  # a failing implementation is a result, not the end of the run
            r.error = error_line(e)
            log(f"  {impl:13s} FAILED: {r.error}")
            log(traceback.format_exc(limit=4))
        results.append(r)
        torch.cuda.empty_cache()
    end_to_end(timed, log)
    copy.gbps = 2 * m * n * itemsize / copy.ms / 1e6  # type: ignore[operator]
    log(
        f"{op} {m}x{n} {dtype_name}: copy {copy.device_gbps:.0f} GB/s device, {copy.gbps:.0f} GB/s end to end, "
        f"host {copy.host_us:.0f} us"
    )
    for r, _ in timed[1:]:
        if not r.ok:
            continue
        r.gbps = nbytes / r.ms / 1e6  # type: ignore[operator]
        r.pct_of_copy = 100.0 * r.gbps / copy.gbps
        dev = f"{r.device_gbps:7.0f} GB/s {r.device_pct:5.1f}%" if r.device_pct else "   device -"
        log(
            f"  {r.impl:13s} {dev} device | {r.gbps:7.0f} GB/s {r.pct_of_copy:5.1f}% end to end | "
            f"host {r.host_us:5.0f} us | compile {r.compile_s or 0:.1f} s  {r.note}"
        )
    held.clear()
    torch.compiler.reset()
    torch.cuda.empty_cache()
    log(f"  ({time.perf_counter() - case_start:.0f} s)")
    return results


# end-to-end timings of a case: this many rounds, each timing every implementation once
E2E_ROUNDS = 4


def end_to_end(timed: list[tuple[Result, Callable[[], Any]]], log: Callable[[str], None]) -> None:
    """Each implementation's end-to-end time (`r.ms`): the median of E2E_ROUNDS `bench_ms`
    timings, the implementations taken in turn within a round and in reverse order every other
    round (ABBA). Where the host decides a call's time, it drifts within a run (the same stock
    kernel has read 46% and 100% of a copy); timed in turn, every implementation meets the same
    drift, where timed one after another each met its own."""
    samples: dict[int, list[float]] = {id(r): [] for r, _ in timed}
    for i in range(E2E_ROUNDS):
        for r, call in timed if i % 2 == 0 else timed[::-1]:
            if not r.ok:  # failed to build, or in a round before
                continue
            try:
                samples[id(r)].append(bench_ms(call))
            except Exception as e:
                r.ok = False
                r.error = error_line(e)
                log(f"  {r.impl:13s} FAILED end to end: {r.error}")
    for r, _ in timed:
        if r.ok:
            r.ms = statistics.median(samples[id(r)])
            r.end_to_end_rounds = [round(t, 5) for t in samples[id(r)]]


# ---------------------------------------------------------------------------------------------
# Reports


def environment() -> dict[str, str]:
    import torch
    import triton

    env = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    try:
        import tilec

        env["tilec"] = tilec.__version__
    except ImportError:
        pass
    with contextlib.suppress(Exception):
        import importlib.metadata

        env["liger-kernel"] = importlib.metadata.version("liger-kernel")
    return env


def _cell(r: Result | None, figure: str) -> str:
    if r is None or (not r.ok and r.error.startswith("liger-kernel is not")):
        return "-"
    if not r.ok:
        return "fail"
    if figure == "device":
        return f"{r.device_gbps:.0f} ({r.device_pct:.0f})" if r.device_pct is not None else "-"
    if figure == "end-to-end":
        return f"{r.gbps:.0f} ({r.pct_of_copy:.0f})" if r.gbps is not None else "-"
    return f"{r.host_us:.0f}" if r.host_us is not None else "-"


TABLES = {
    "device": "Device time (cold L2, the host kept out by a spin kernel): model GB/s and, in parentheses, % of a "
    "device-to-device copy of the same MxN in the same run. The targets are read here.",
    "end-to-end": "End to end (`do_bench` of the whole call, host included; host-bound where the host "
    "takes longer than the L2 flush): GB/s (% of the copy, timed the same way).",
    "host": "Host time per call, microseconds (Dynamo's guards, the wrapper, the launch).",
}


def markdown(results: list[Result], env: dict[str, str], impls: list[str]) -> str:
    lines = [
        "# tilec bench",
        "",
        ", ".join(f"{k} {v}" for k, v in env.items()),
        "",
        "`-`: not available; `fail`: wrong result or error (see results.jsonl).",
        "",
    ]
    cols = [i for i in impls if i != "copy"]
    keyed: dict[tuple[str, int, int, str], dict[str, Result]] = {}
    for r in results:
        keyed.setdefault((r.op, r.m, r.n, r.dtype), {})[r.impl] = r
    for figure, title in TABLES.items():
        if figure == "host" and not any(r.host_us is not None for r in results):
            continue
        lines += [f"## {figure}", "", title, ""]
        for dtype in sorted({r.dtype for r in results}, key=["bf16", "fp16", "fp32"].index):
            copy_col = "copy GB/s" if figure != "host" else "copy"
            lines += [
                f"### {dtype}",
                "",
                f"| op | MxN | {copy_col} | " + " | ".join(cols) + " |",
                "|---" * (3 + len(cols)) + "|",
            ]
            for (op, m, n, dt), row in keyed.items():
                if dt != dtype:
                    continue
                copy = row.get("copy")
                if figure == "device":
                    ceiling = f"{copy.device_gbps:.0f}" if copy and copy.device_gbps else "-"
                elif figure == "end-to-end":
                    ceiling = f"{copy.gbps:.0f}" if copy and copy.gbps else "-"
                else:
                    ceiling = f"{copy.host_us:.0f}" if copy and copy.host_us is not None else "-"
                cells = [_cell(row.get(impl), figure) for impl in cols]
                lines.append(f"| {op} | {m}x{n} | {ceiling} | " + " | ".join(cells) + " |")
            lines.append("")
    for figure in ("device", "end-to-end"):
        geo = geomean_speedups(results, figure)
        if geo:
            lines += [f"Geometric mean speedup over torch.compile default ({figure}), shapes where both ran:", ""]
            lines += [f"- {impl}: {v:.3f}x ({k} shapes)" for impl, (v, k) in geo.items()]
            lines.append("")
    compile_s: dict[str, float] = {}
    for r in results:
        if (
            r.ok
            and r.compile_s is not None
            and r.impl in ("tilec", "tilec-autotune", "tilec-gluon", "tilec-triton", "compile", "max-autotune")
        ):
            compile_s[r.impl] = compile_s.get(r.impl, 0.0) + r.compile_s
    if compile_s.get("compile"):
        lines += [
            "Compile time, all cases (first call, FX-graph cache off; each case compiles `tilec` first, so it "
            "meets Triton's cold caches where it declines to stock, and `compile` where tilec took the kernel):",
            "",
        ]
        lines += [
            f"- {impl}: {t:.1f} s"
            + (f" ({100 * (t / compile_s['compile'] - 1):+.0f}% over compile)" if impl != "compile" else "")
            for impl, t in compile_s.items()
        ]
        lines.append("")
    warm: dict[str, float] = {}
    for r in results:
        if r.ok and r.compile_warm_s is not None:
            warm[r.impl] = warm.get(r.impl, 0.0) + r.compile_warm_s
    if warm.get("compile") and warm.get("tilec"):
        lines += [
            "Compile time again, Triton's caches warm (a new function, tilec's memo cleared): the work tilec "
            "adds to Inductor's, all cases:",
            "",
            f"- tilec: {warm['tilec']:.1f} s ({100 * (warm['tilec'] / warm['compile'] - 1):+.0f}% over compile)",
            f"- compile: {warm['compile']:.1f} s",
            "",
        ]
    notes = sorted(
        {f"{r.op} {r.m}x{r.n} {r.dtype} {r.impl}: {r.note}" for r in results if r.note and "took 0" in r.note}
    )
    if notes:
        lines += ["tilec declined (stock Inductor ran):", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def geomean_speedups(results: list[Result], figure: str = "device") -> dict[str, tuple[float, int]]:
    by: dict[tuple[str, int, int, str], dict[str, float]] = {}
    for r in results:
        t = r.device_ms if figure == "device" else r.ms
        if r.ok and t:
            by.setdefault((r.op, r.m, r.n, r.dtype), {})[r.impl] = t
    out: dict[str, tuple[float, int]] = {}
    for impl in IMPLS:
        if impl in ("compile", "copy"):
            continue
        ratios = [row["compile"] / row[impl] for row in by.values() if "compile" in row and impl in row]
        if ratios:
            out[impl] = (math.exp(sum(math.log(x) for x in ratios) / len(ratios)), len(ratios))
    return out


def plot(results: list[Result], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    cases = []
    for r in results:
        key = (r.op, r.m, r.n, r.dtype)
        if key not in cases:
            cases.append(key)
    impls = [i for i in IMPLS if i != "copy" and any(r.impl == i and r.ok for r in results)]
    fig, ax = plt.subplots(figsize=(max(8, len(cases) * 0.45), 5))
    for impl in impls:
        ys = []
        for key in cases:
            match = [r for r in results if (r.op, r.m, r.n, r.dtype) == key and r.impl == impl and r.ok]
            pct = (match[0].device_pct if match[0].device_pct is not None else match[0].pct_of_copy) if match else None
            ys.append(pct if pct is not None else float("nan"))
        ax.plot(range(len(cases)), ys, marker="o", label=impl)
    ax.axhline(100, color="gray", linewidth=0.8)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([f"{o} {m}x{n} {d}" for o, m, n, d in cases], rotation=75, fontsize=7)
    ax.set_ylabel("% of same-size copy (device time)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


# ---------------------------------------------------------------------------------------------
# Command line


def cases(
    ops: list[str], shapes: list[tuple[int, int]] | None, dtypes: list[str]
) -> Iterator[tuple[str, int, int, str]]:
    for dtype in dtypes:
        for op in ops:
            if shapes is not None:
                chosen = shapes
            elif dtype == "bf16" and TRAIN.get(op, op) == "cross_entropy":
                chosen = CROSS_ENTROPY_SUITE
            elif dtype == "bf16" and op in BACKWARD:
                chosen = BWD_SUITE
            elif dtype == "bf16":
                chosen = SUITE + (SOFTMAX_EXTRA if op == "softmax" else [])
            else:
                chosen = OTHER_DTYPE_SHAPES
            for m, n in chosen:
                yield op, m, n, dtype


def parse_shapes(text: str) -> list[tuple[int, int]]:
    shapes = []
    for part in text.split(","):
        m, _, n = part.strip().lower().partition("x")
        if not (m.isdigit() and n.isdigit()):
            raise argparse.ArgumentTypeError(f"shapes are MxN, comma-separated (8192x4096); got {part!r}")
        shapes.append((int(m), int(n)))
    return shapes


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tilec bench", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--ops",
        help=f"comma-separated, of {', '.join(OPS)} (default: the first three; with --bwd: the backward ops)",
    )
    p.add_argument(
        "--bwd",
        action="store_true",
        help="the backward suite: each op's dx and weight gradients (autograd of the compiled forward), "
        f"on {', '.join(f'{m}x{n}' for m, n in BWD_SUITE)} (bf16), and cross-entropy's forward and backward "
        f"on {', '.join(f'{m}x{n}' for m, n in CROSS_ENTROPY_SUITE)}",
    )
    p.add_argument("--shapes", type=parse_shapes, help="MxN,... (default: the suite)")
    p.add_argument(
        "--dtype", default="all", help="bf16, fp16, fp32, or all (the suite: bf16 everywhere, fp16/fp32 on two shapes)"
    )
    p.add_argument(
        "--impls",
        default=",".join(DEFAULT_IMPLS),
        help=f"comma-separated, of {', '.join(IMPLS)} (default: all but tilec-autotune)",
    )
    p.add_argument("--out", default="bench-out", help="directory for results.md, results.jsonl, results.png")
    p.add_argument(
        "--report",
        nargs="+",
        metavar="JSONL",
        help="no GPU work: write results.md and results.png to --out from earlier runs' results.jsonl files",
    )
    p.add_argument(
        "--host",
        action="store_true",
        help="host time per kernel launch, tilec against stock (bench/host.py): writes host.md and host.jsonl",
    )
    p.add_argument(
        "--profile", action="store_true", help="with --host: list the costliest functions of tilec's launches"
    )
    p.add_argument(
        "--models",
        action="store_true",
        help="whole transformers models, tilec against stock torch.compile (bench/models.py): models.md, models.jsonl",
    )
    p.add_argument(
        "--size",
        default="default",
        choices=["default", "small", "tiny"],
        help="with --models or --distributed: the model and batch",
    )
    p.add_argument(
        "--device",
        default="cuda",
        choices=["cuda", "cpu"],
        help="with --models or --distributed: cpu runs size tiny (--models: no timing)",
    )
    p.add_argument(
        "--families", default="llama,gpt2,gemma", help="with --models: comma-separated, of llama, gpt2, gemma"
    )
    p.add_argument(
        "--modes",
        help="with --models: comma-separated, of infer, infer-ro, train, train-ro (default: all; on the CPU infer,train)",
    )
    p.add_argument("--repeats", type=int, default=20, help="with --models: timed steps per side")
    p.add_argument(
        "--vocab",
        type=int,
        help="with --models: every family's vocabulary (default: the size's; GPT-2 50257 but at size tiny)",
    )
    p.add_argument(
        "--distributed",
        action="store_true",
        help="under torchrun: data-parallel training of Llama on every rank, tilec against stock "
        "(bench/distributed.py): distributed.md, distributed.jsonl",
    )
    p.add_argument("--wrap", default="ddp,fsdp2", help="with --distributed: comma-separated, of ddp, fsdp2")
    p.add_argument("--steps", type=int, default=20, help="with --distributed: training steps per side")
    p.add_argument(
        "--dynamic",
        action="store_true",
        help="with --models on a GPU: dynamic=None, two other sequence lengths first (a symbolic length)",
    )
    p.add_argument(
        "--control",
        action="store_true",
        help="with --models on a GPU: stock against stock (the tilec column compiled without tilec): "
        "what the bench itself measures between two identical sides",
    )
    p.add_argument(
        "--stock-first",
        action="store_true",
        help="with --models on a GPU: make, compile and warm up the stock side first (default: tilec's first)",
    )
    p.add_argument(
        "--both-orders",
        action="store_true",
        help="with --models on a GPU: each row twice, tilec's side first and stock's first, and their geomean",
    )
    p.add_argument(
        "--dropout",
        type=float,
        default=0.0,
        help="with --models on a GPU: train with dropout P (errors then against stock's gradients, same seed)",
    )
    p.add_argument(
        "--autotune",
        action="store_true",
        help="with --models or --distributed: tilec's autotuner times each kernel against stock and keeps "
        "the faster (under torch.distributed, rank 0's choice on every rank)",
    )
    return p


def _has_transformers(what: str) -> bool:
    try:
        import transformers  # noqa: F401
    except ImportError:
        print(f"tilec bench {what}: needs transformers (pip install transformers)", file=sys.stderr)
        return False
    return True


def _models_module() -> Any:
    """bench/models.py (beside this file, which `tilec bench` loads by its path)."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import models

    return models


def _models(args: argparse.Namespace) -> int:
    models = _models_module()

    families = [f.strip() for f in args.families.split(",") if f.strip()]
    default_modes = models.CPU_MODES if args.device == "cpu" else models.MODES
    modes = [m.strip() for m in args.modes.split(",") if m.strip()] if args.modes else list(default_modes)
    bad = [f for f in families if f not in models.FAMILIES] + [m for m in modes if m not in models.MODES]
    if bad:
        print(f"tilec bench --models: unknown family or mode: {', '.join(bad)}", file=sys.stderr)
        return 2
    if args.device == "cpu":
        if args.size != "tiny":
            print("tilec bench --models: --device cpu runs --size tiny only", file=sys.stderr)
            return 2
        graphs = [m for m in modes if m not in models.CPU_MODES]
        if graphs:
            print(f"tilec bench --models: CUDA graphs need a GPU: {', '.join(graphs)}", file=sys.stderr)
            return 2
    else:
        import torch

        if not torch.cuda.is_available():
            print("tilec bench --models: needs a CUDA GPU (or --device cpu --size tiny)", file=sys.stderr)
            return 2
    if not _has_transformers("--models"):
        return 2
    if args.dynamic and args.device == "cpu":
        print("tilec bench --models: --dynamic needs a GPU", file=sys.stderr)
        return 2
    if args.dropout and args.device == "cpu":
        print(
            "tilec bench --models: --dropout needs a GPU (tilec leaves the CPU's random kernels to stock)",
            file=sys.stderr,
        )
        return 2
    if args.control and args.device == "cpu":
        print("tilec bench --models: --control needs a GPU", file=sys.stderr)
        return 2
    if not 0.0 <= args.dropout < 1.0:
        print("tilec bench --models: --dropout must be in [0, 1)", file=sys.stderr)
        return 2
    return int(
        models.main(
            Path(args.out),
            args.size,
            families,
            modes,
            args.repeats,
            args.device,
            args.autotune,
            args.dropout,
            args.dynamic,
            args.control,
            args.stock_first,
            args.vocab,
            args.both_orders,
        )
    )


def _distributed(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import distributed

    wraps = [w.strip() for w in args.wrap.split(",") if w.strip()]
    bad = [w for w in wraps if w not in distributed.WRAPS]
    if bad:
        print(f"tilec bench --distributed: unknown wrapper: {', '.join(bad)}", file=sys.stderr)
        return 2
    if args.device == "cpu" and args.size != "tiny":
        print("tilec bench --distributed: --device cpu runs --size tiny only", file=sys.stderr)
        return 2
    if args.steps < 1:
        print("tilec bench --distributed: --steps must be at least 1", file=sys.stderr)
        return 2
    if not _has_transformers("--distributed"):
        return 2
    rc = int(distributed.main(Path(args.out), wraps, args.size, args.steps, args.device, autotune=args.autotune))
    if "RANK" in os.environ:
        # a rank under torchrun leaves without the interpreter's teardown: its results are written
        # and its process group destroyed, and a C++ thread still joinable when static objects
        # are destroyed (seen once in CI, rank 0 on two busy cores) aborts the process
        # ("terminate called without an active exception") after the run has passed
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


def load_results(paths: list[str]) -> list[Result]:
    results = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                results.append(Result(**json.loads(line)))
    return results


def write_report(results: list[Result], out: Path, impls: list[str], note: str = "") -> bool:
    out.mkdir(parents=True, exist_ok=True)
    env = results[0].meta if results and results[0].meta else {}
    (out / "results.md").write_text(markdown(results, env, impls) + note)
    return plot(results, out / "results.png")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    ops = [o.strip() for o in (args.ops or ",".join(DEFAULT_BWD_OPS if args.bwd else DEFAULT_OPS)).split(",")]
    ops = [o for o in ops if o]
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    bad = [o for o in ops if o not in OPS] + [i for i in impls if i not in IMPLS]
    if bad:
        print(f"tilec bench: unknown op or implementation: {', '.join(bad)}", file=sys.stderr)
        return 2
    if args.report:
        results = load_results(args.report)
        present = [i for i in IMPLS if any(r.impl == i for r in results)]
        write_report(results, Path(args.out), present)
        print(f"wrote {Path(args.out) / 'results.md'} from {len(results)} results")
        return 0
    if args.distributed:
        return _distributed(args)
    if args.models:
        return _models(args)
    if args.host:
        import torch

        if not torch.cuda.is_available():
            print("tilec bench: needs a CUDA GPU", file=sys.stderr)
            return 2
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import host

        return host.main(Path(args.out), profile=args.profile)
    dtypes = ["bf16", "fp16", "fp32"] if args.dtype == "all" else [args.dtype]
    if any(d not in ("bf16", "fp16", "fp32") for d in dtypes):
        print(f"tilec bench: --dtype must be bf16, fp16, fp32 or all; got {args.dtype}", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("tilec bench: needs a CUDA GPU", file=sys.stderr)
        return 2
    import tilec

    tilec.install()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = environment()
    log_file = (out / "results.log").open("w")

    def log(line: str) -> None:
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    log(json.dumps(env))
    warm_up()
    results: list[Result] = []
    start = time.perf_counter()
    with (out / "results.jsonl").open("w") as jl:
        for op, m, n, dtype in cases(ops, args.shapes, dtypes):
            for r in run_case(op, m, n, dtype, impls, log):
                r.meta = env
                jl.write(json.dumps(asdict(r)) + "\n")
                jl.flush()
                results.append(r)
    plotted = write_report(results, out, impls, f"\nWall time: {time.perf_counter() - start:.0f} s\n")
    log(
        f"wrote {out / 'results.md'}, {out / 'results.jsonl'}"
        + (f", {out / 'results.png'}" if plotted else " (no matplotlib: no plot)")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
