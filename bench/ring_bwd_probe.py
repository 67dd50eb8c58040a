"""A probe: RMSNorm's backward over long rows as one persistent Gluon kernel, its row cached in a
ring of shared-memory chunks that is also the next row's prefetch. Each of P programs (one an SM)
owns rows pid, pid + P, ...; its weight's slice sits in shared memory (copied once), and dW's
column sums in registers (fp32, one tile a chunk) across its rows. Per row: the statistic
sum(dy·w·x) over the chunks as their copies land (cp.async, a group a chunk), then dx and the
column sums chunk by chunk from shared memory, each chunk's slot refilled with the next row's
chunk (after a CTA barrier) as soon as it is read: x and dy come from HBM once, and the next row
streams in while this one is finished. The column sums go to a P x N fp32 workspace a torch sum
adds up. Hand-written, not a tilec form: whether the one-pass backward reaches issue [backward]'s
85% of a copy at rows of 32768 without a cluster (past that, dW's sums outgrow one CTA's
registers). Device time, cold L2 (triton.testing.do_bench), % of a copy of the model bytes
(3·M·N·2), beside torch.compile of the same formula.

    python bench/ring_bwd_probe.py 4096x32768,8192x32768,4096x16384 [rms,ln]    # JSON lines, also $OUT/ring_bwd.jsonl

tilec's own form (the `gluon-ring` pipeline, `band-ring`) is timed beside the hand-written kernel,
checked against the backward graph itself (`RING_HAND=0`: tilec's alone; `RING_TILEC=0`: not
tilec's). `RING_CLUSTERS=1` adds the hand-written kernel with each row split across a cluster
(`cluster_source`): the form for rows whose column sums outgrow one CTA's registers
(`RING_EXCHANGE`: a comma-separated list of its exchanges, `barriers` (the default), `push`, and
`none`: without one, a wrong result timed to show what the exchange costs; `RING_CTAS`: the
cluster sizes to time, comma-separated).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


GLUON_IMPORTS = [
    "import triton",
    "from triton.experimental import gluon",
    "from triton.experimental.gluon import language as gl",
    "from triton.experimental.gluon.language.nvidia.ampere import async_copy",
    "",
]


def statistic_lines(ln: bool, x: str, dy: str, w: str) -> list[str]:
    """A chunk's part of the row's statistics, from its slots `x`, `dy` and the weight's `w`:
    RMSNorm's sum(dy·w·x) in `acc`; LayerNorm's sum(dy·w) in `acc1` and sum(dy·w·(x - mean)) in
    `acc`."""
    lines = [f"        g = {dy}.load(L).to(gl.float32) * {w}.load(L).to(gl.float32)"]
    if ln:
        return lines + ["        acc1 += g", f"        acc += g * ({x}.load(L).to(gl.float32) - mean)"]
    return lines + [f"        acc += g * {x}.load(L).to(gl.float32)"]


def gradient_lines(ln: bool, x: str, dy: str, w: str, c: int, scale: str = "") -> list[str]:
    """A chunk's dx (in `dx`) and its column sums' terms (added to `dw{c}`, and LayerNorm's
    `db{c}`), from its slots, the row's statistics (`s`; `m1`, `m2`) and `rstd`; dy times
    `scale` where given."""
    lines = [f"        xv = {x}.load(L).to(gl.float32)", f"        dyv = {dy}.load(L).to(gl.float32){scale}"]
    lines += [f"        g = dyv * {w}.load(L).to(gl.float32)"]
    if ln:
        return lines + [
            "        xh = (xv - mean) * rstd",
            "        dx = rstd * (g - m1 - xh * m2)",
            f"        dw{c} += dyv * xh",
            f"        db{c} += dyv",
        ]
    return lines + ["        dx = rstd * g - xv * s", f"        dw{c} += dyv * xv * rstd"]


def refill_lines(x: str, dy: str, at: str, mask: str) -> list[str]:
    """Once every thread has read a chunk's slots `x` and `dy` (a CTA barrier), the copies of the
    next row's chunk (at offset `at`) into them, committed as a group."""
    return [
        "        gl.thread_barrier()",
        f"        async_copy.async_copy_global_to_shared({x}, X + {at}, mask={mask})",
        f"        async_copy.async_copy_global_to_shared({dy}, DY + {at}, mask={mask})",
        "        async_copy.commit_group()",
    ]


def workspace_lines(sums: list[str], k: int, n: int, chunk: int) -> list[str]:
    """After the band: each column sum's k chunks stored in its rows of the workspace (sum j in
    rows j·P to (j + 1)·P - 1, this program's)."""
    return [
        f"    gl.store(WS + ({j} * P + pid) * {n} + {c * chunk} + cols, {a}{c})"
        for j, a in enumerate(sums)
        for c in range(k)
    ]


def kernel_source(n: int, chunk: int, warps: int, op: str = "rms") -> str:
    """The kernel for rows of `n` in chunks of `chunk` over `warps` warps, unrolled over the
    chunks: RMSNorm's backward (`op` "rms": dW) or LayerNorm's ("ln": the saved mean too; dW, and
    dB in the workspace's rows P to 2P - 1)."""
    ln = op == "ln"
    k = n // chunk
    spt = chunk // (32 * warps)
    assert k * chunk == n and spt * 32 * warps == chunk and spt >= 1
    sums = ["dw", "db"] if ln else ["dw"]
    lines = [
        *GLUON_IMPORTS,
        f"L = gl.constexpr(gl.BlockedLayout([{spt}], [32], [{warps}], [0]))",
        "S = gl.constexpr(gl.SwizzledSharedLayout(1, 1, 1, [0]))",
        "",
        "",
        "@gluon.jit",
        "def ring_bwd(X, DY, W, RSTD, DX, WS, M, P, MEAN):",
        "    pid = gl.program_id(0)",
        f"    cols = gl.arange(0, {chunk}, layout=L)",
    ]
    for c in range(k):
        lines += [
            f"    w{c} = gl.allocate_shared_memory(gl.bfloat16, [{chunk}], S)",
            f"    x{c} = gl.allocate_shared_memory(gl.bfloat16, [{chunk}], S)",
            f"    dy{c} = gl.allocate_shared_memory(gl.bfloat16, [{chunk}], S)",
            f"    async_copy.async_copy_global_to_shared(w{c}, W + {c * chunk} + cols)",
        ]
        lines += [f"    {a}{c} = gl.zeros([{chunk}], gl.float32, layout=L)" for a in sums]
    lines += ["    async_copy.commit_group()", "    okc = (cols * 0 + pid) < M"]
    for c in range(k):
        at = f"pid.to(gl.int64) * {n} + {c * chunk} + cols, mask=okc)"
        lines += [
            f"    async_copy.async_copy_global_to_shared(x{c}, X + {at}",
            f"    async_copy.async_copy_global_to_shared(dy{c}, DY + {at}",
            "    async_copy.commit_group()",
        ]
    lines += ["    trips = (M - pid + P - 1) // P", "    for i in range(0, trips):", "        r = pid + i * P"]
    lines += [f"        base = r.to(gl.int64) * {n}", f"        nxt = base + P * {n}"]
    lines += ["        more = (cols * 0 + r + P) < M", "        rstd = gl.load(RSTD + r)"]
    lines += [f"        acc = gl.zeros([{chunk}], gl.float32, layout=L)"]
    if ln:
        lines += ["        mean = gl.load(MEAN + r)", f"        acc1 = gl.zeros([{chunk}], gl.float32, layout=L)"]
    for c in range(k):
        lines += [f"        async_copy.wait_group({k - 1 - c})", *statistic_lines(ln, f"x{c}", f"dy{c}", f"w{c}")]
    if ln:
        lines += [f"        m1 = gl.sum(acc1, 0) / {n}", f"        m2 = gl.sum(acc, 0) * rstd / {n}"]
    else:
        lines += [f"        s = gl.sum(acc, 0) * rstd * rstd * rstd / {n}"]
    for c in range(k):
        lines += gradient_lines(ln, f"x{c}", f"dy{c}", f"w{c}", c)
        lines += [f"        gl.store(DX + base + {c * chunk} + cols, dx.to(gl.bfloat16))"]
        lines += refill_lines(f"x{c}", f"dy{c}", f"nxt + {c * chunk} + cols", "more")
    lines += ["    async_copy.wait_group(0)", *workspace_lines(sums, k, n, chunk)]
    return "\n".join(lines) + "\n"


def cluster_source(
    n: int, chunk: int, warps: int, op: str = "rms", ctas: int = 2, ahead: bool = False, exchange: str = "barriers"
) -> str:
    """`kernel_source`'s kernel with each row split across a cluster of `ctas` CTAs: CTA r owns
    columns [r * n/ctas, (r + 1) * n/ctas) of every row of its cluster's band, in chunks of `chunk`
    (tiles [ctas, chunk], CTA r's row r of them), its slice's ring, weights and column sums its
    own; per row each CTA's partial statistics are exchanged (`tile.cluster_gather`'s barriers
    form) and added in CTA order, so every CTA has the row's. The grid counts clusters.

    `ahead`: two sets of the ring's slots, the cluster's rows alternating between them (two rows a
    trip), so that the next row's copies are in flight through this row's exchange (with one set,
    the next row's chunk is copied only once this row's is read after the exchange: nothing is in
    flight while the CTAs wait for each other). `exchange`: "barriers", "push"
    (`tilec.emit.gluon.push_per_use_asm`, tile.cluster_gather's push in a loop: one wait for the
    data a row), or "none": no exchange, each CTA taking its own partial statistics for
    every CTA's (a wrong result: what the exchange costs, timed)."""
    from tilec.emit.gluon import cluster_gather_asm, push_per_use_asm
    from tilec.ir.dtypes import f32

    ln = op == "ln"
    width = n // ctas
    k = width // chunk
    spt = chunk // (32 * warps)
    assert k * chunk * ctas == n and spt * 32 * warps == chunk and spt >= 1 and ctas & (ctas - 1) == 0
    bases = [[1 << i, 0] for i in range(ctas.bit_length() - 1)]
    if exchange == "push":
        asm, constraints = push_per_use_asm(ctas, [f32, f32] if ln else [f32])
    else:
        asm, constraints = cluster_gather_asm(ctas, [f32, f32] if ln else [f32], "barriers")
    sums = ["dw", "db"] if ln else ["dw"]
    sets = ["a", "b"] if ahead else ["a"]
    step = len(sets)  # rows a trip: the next copy into a set is of the row `step` rows on
    tile = f"[{ctas}, {chunk}]"
    lines = [
        *GLUON_IMPORTS,
        f"L = gl.constexpr(gl.BlockedLayout([1, {spt}], [1, 32], [1, {warps}], [1, 0], cga_layout={bases}))",
        f"S = gl.constexpr(gl.SwizzledSharedLayout(1, 1, 1, [1, 0], cga_layout={bases}))",
        f"ASM = gl.constexpr({asm!r})",
        f"CON = gl.constexpr({constraints!r})",
        "",
        "",
        "@gluon.jit",
        "def ring_bwd(X, DY, W, RSTD, DX, WS, M, P, MEAN):",
        "    pid = gl.program_id(0)",
        f"    rr = gl.arange(0, {ctas}, layout=gl.SliceLayout(1, L))",
        f"    cc = gl.arange(0, {chunk}, layout=gl.SliceLayout(0, L))",
        f"    cols = gl.expand_dims(rr * {width}, 1) + gl.expand_dims(cc, 0)",
    ]
    for c in range(k):
        lines += [f"    w{c} = gl.allocate_shared_memory(gl.bfloat16, {tile}, S)"]
        for t in sets:
            lines += [f"    x{t}{c} = gl.allocate_shared_memory(gl.bfloat16, {tile}, S)"]
            lines += [f"    dy{t}{c} = gl.allocate_shared_memory(gl.bfloat16, {tile}, S)"]
        lines += [f"    async_copy.async_copy_global_to_shared(w{c}, W + {c * chunk} + cols)"]
        lines += [f"    {a}{c} = gl.zeros({tile}, gl.float32, layout=L)" for a in sums]
    lines += ["    async_copy.commit_group()"]
    for j, t in enumerate(sets):  # the cluster's first rows, a group a chunk
        lines += [f"    ok{t} = (cols * 0 + pid + {j} * P) < M"]
        for c in range(k):
            at = f"(pid + {j} * P).to(gl.int64) * {n} + {c * chunk} + cols, mask=ok{t})"
            lines += [
                f"    async_copy.async_copy_global_to_shared(x{t}{c}, X + {at}",
                f"    async_copy.async_copy_global_to_shared(dy{t}{c}, DY + {at}",
                "    async_copy.commit_group()",
            ]
    lines += ["    trips = (M - pid + P - 1) // P", f"    for i in range(0, trips, {step}):"]
    parts = ["gl.sum(acc1, 1)", "gl.sum(acc, 1)"] if ln else ["gl.sum(acc, 1)"]
    outs = [f"o{j}" for j in range(len(parts) * ctas)]
    total = [" + ".join(outs[j * ctas : (j + 1) * ctas]) for j in range(len(parts))]  # in CTA order
    later = (step - 1) * k  # groups committed after this set's: the other set's row
    for j, t in enumerate(sets):
        lines += [f"        r = pid + (i + {j}) * P", "        ok = r < M", "        okf = ok.to(gl.float32)"]
        lines += [f"        base = r.to(gl.int64) * {n}", f"        nxt = base + {step} * P * {n}"]
        lines += [f"        more = (cols * 0 + r + {step} * P) < M", "        okc = (cols * 0 + r) < M"]
        lines += ["        rstd = gl.load(RSTD + r, mask=ok, other=0.0)"]
        lines += [f"        acc = gl.zeros({tile}, gl.float32, layout=L)"]
        if ln:
            lines += ["        mean = gl.load(MEAN + r, mask=ok, other=0.0)"]
            lines += [f"        acc1 = gl.zeros({tile}, gl.float32, layout=L)"]
        for c in range(k):
            lines += [f"        async_copy.wait_group({k - 1 - c + later})"]
            lines += statistic_lines(ln, f"x{t}{c}", f"dy{t}{c}", f"w{c}")
        if exchange == "none":  # each CTA's own partials in every CTA's place: a wrong result, timed only
            lines += [f"        {o} = {parts[q // ctas]}" for q, o in enumerate(outs)]
        else:
            use = f"(i // {step})"  # this site's use: the push's parity and its mbarrier's phase
            flags = [f"rr * 0 + ({use} == 0).to(gl.int32)", f"rr * 0 + {use} % 2", f"rr * 0 + ({use} // 2) % 2"]
            inputs = (flags if exchange == "push" else []) + parts
            lines += [
                f"        {', '.join(outs)}, = gl.inline_asm_elementwise(ASM, CON, [{', '.join(inputs)}], "
                f"dtype=[{', '.join(['gl.float32'] * len(outs))}], is_pure=False, pack=1)"
            ]
        if ln:
            lines += [f"        m1 = gl.expand_dims({total[0]}, 1) / {n}"]
            lines += [f"        m2 = gl.expand_dims({total[1]}, 1) * rstd / {n}"]
        else:
            lines += [f"        s = gl.expand_dims({total[0]}, 1) * rstd * rstd * rstd / {n}"]
        for c in range(k):
            lines += gradient_lines(ln, f"x{t}{c}", f"dy{t}{c}", f"w{c}", c, " * okf")
            lines += [f"        gl.store(DX + base + {c * chunk} + cols, dx.to(gl.bfloat16), mask=okc)"]
            lines += refill_lines(f"x{t}{c}", f"dy{t}{c}", f"nxt + {c * chunk} + cols", "more")
    lines += ["    async_copy.wait_group(0)"]
    if exchange == "push":  # no CTA leaves while a peer's pushes may still be on their way
        lines += [
            "    gl.inline_asm_elementwise('barrier.cluster.arrive.release.aligned;\\n"
            "barrier.cluster.wait.acquire.aligned;\\nmov.u32 $0, $1;', '=r,r', [rr], dtype=gl.int32, "
            "is_pure=False, pack=1)"
        ]
    return "\n".join(lines + workspace_lines(sums, k, n, chunk)) + "\n"


def load(source: str) -> Any:
    """The kernel of `source` (written to a file: Gluon reads a kernel's source from it)."""
    path = Path(tempfile.mkdtemp(prefix="ring-bwd-")) / "ring_bwd_kernel.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("ring_bwd_kernel", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ring_bwd


def backward_graph(op: str, m: int, n: int) -> Any:
    """RMSNorm's ("rms") or LayerNorm's ("ln") backward graph as AOT autograd partitions it for
    Inductor, traced on the meta device (`tilec.frontend.capture.backward_graph`)."""
    import torch

    from tilec.frontend.capture import backward_graph as aot_backward_graph

    def rms(x: Any, w: Any) -> Any:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w

    def ln(x: Any, w: Any, b: Any) -> Any:
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-6)

    meta = {"dtype": torch.bfloat16, "device": "meta", "requires_grad": True}
    weights = [torch.empty(n, **meta) for _ in range(2 if op == "ln" else 1)]
    return aot_backward_graph(rms if op == "rms" else ln, [torch.empty(m, n, **meta), *weights])


def tilec_ring(
    op: str, m: int, n: int, plan: str = "", device: str = "cuda", pipeline: str = "gluon-ring", launcher: Any = None
) -> dict[str, Any]:
    """tilec's `gluon-ring` form of the op's fused backward (Inductor's mix-order kernel, fused
    whatever the row length), with `plan` on its plan pass, emitted, on seeded inputs (x, w, dy
    normal; the saved statistics 0.5 to 1.5): {"run": a function launching it that returns dx and
    each column sum (the workspace's rows added up), its outputs first filled with NaN, "timed":
    the launch and the sums alone (what the probe times), "want": the backward graph's own dx and weight
    gradients on the same inputs, in the same order, "kernel": the kernel after the pipeline}.
    `launcher(kernel)` (tilec's interpreter, say, with `device` "cpu") stands in for the emitted
    kernel's launch."""
    import torch
    import triton

    from tilec.emit.gluon import emit_gluon
    from tilec.frontend.capture import capture, input_order
    from tilec.frontend.logical import WORKSPACE
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan
    from tilec.runtime import load_source

    gm = backward_graph(op, m, n)
    vals = [p.meta["val"] for p in gm.graph.nodes if p.op == "placeholder"]
    shapes = [torch.empty_strided(v.shape, v.stride(), dtype=v.dtype) for v in vals]
    with torch._inductor.config.patch({"triton.mix_order_reduction_non_strict_mode": True}):
        kernels = capture(gm, shapes, strict=False, fuse=lambda *_: True)
    banded = [k for k in kernels if getattr(k.result, "column_sums", None)]
    if len(banded) != 1:
        raise RuntimeError(f"no fused kernel: {[k.summary() for k in kernels]}")
    lowered = banded[0].result
    module = parse(print_kernel(lowered.kernel))
    run_pipeline(module, with_plan(pipeline, plan) if plan else pipeline)
    kernel = module.kernels[0]
    launch = launcher(kernel) if launcher is not None else load_source(emit_gluon(kernel).source).launch
    torch.manual_seed(0)
    inputs = [
        torch.rand(t.shape, dtype=t.dtype, device=device) + 0.5
        if t.dtype == torch.float32
        else torch.randn(t.shape, dtype=t.dtype, device=device)
        for t in shapes
    ]
    outs = [t for t in gm(*inputs) if t is not None]
    want = [next(t for t in outs if t.dim() == 2), *(t for t in outs if t.dim() == 1)]
    programs = triton.cdiv(m, kernel.constexprs["RSPLIT"])
    ws = torch.empty(len(lowered.column_sums) * programs * n, dtype=torch.float32, device=device)
    dx = torch.empty(m, n, dtype=torch.bfloat16, device=device)
    order = input_order(gm)  # Inductor's numbering of the graph's inputs (`arg{i}_1`)
    args = [
        inputs[order[int(a.buffer[3:].split("_")[0])]]
        if a.buffer.startswith("arg")
        else ws
        if a.buffer == WORKSPACE
        else dx
        for a in lowered.args
    ]

    def timed() -> list[Any]:
        launch(*args)
        return [dx, *ws.view(-1, programs, n).sum(1)]

    def run() -> list[Any]:
        ws.fill_(float("nan"))
        dx.fill_(float("nan"))
        got = timed()
        return [got[0].clone(), *got[1:]]

    return {"run": run, "timed": timed, "want": want, "kernel": kernel}


def ring_errors(got: list[Any], want: list[Any]) -> list[float]:
    """The relative error in norm of each of `got` against `want` (tilec's tests' measure: the
    eager graph rounds some products to bf16 that the fused kernel keeps in fp32)."""
    from tilec.testing import relative_error

    assert len(got) == len(want)
    return [round(relative_error(g.float(), w.float()), 5) for g, w in zip(got, want)]


# tilec's `gluon-ring` pipeline's plans timed beside the hand-written kernel: chunks (band-chunks)
# and warps
TILEC_PLANS = ("num_warps=16", "num_warps=8")

# the cluster form's plans (RING_CLUSTERS=1): CTAs a cluster, chunk, warps, CTAs an SM the grid
# is sized for (clusters = SMs x that / CTAs), two sets of slots (`ahead`)
CLUSTER_PLANS = (
    (2, 4096, 16, 1, False),
    (2, 2048, 8, 1, False),
    (2, 4096, 16, 1, True),
    (2, 2048, 8, 1, True),
    (4, 2048, 8, 2, False),
    (4, 2048, 8, 1, True),
    (4, 2048, 16, 1, True),
    (4, 2048, 8, 2, True),
    (8, 1024, 8, 2, False),
    (8, 2048, 8, 2, True),
)


def main(argv: list[str]) -> int:
    import torch
    from column_sums_probe import measure, norm_case, ref_ln, ref_rms

    out = (Path(os.environ.get("OUT", ".")) / "ring_bwd.jsonl").open("a")
    shapes = [tuple(map(int, s.split("x"))) for s in argv[0].split(",")]
    ops = argv[1].split(",") if len(argv) > 1 else ["rms", "ln"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    stock = {"rms": torch.compile(ref_rms), "ln": torch.compile(ref_ln)}
    hand = ((4096, 16), (2048, 8), (4096, 8), (2048, 16), (4096, 32)) if os.environ.get("RING_HAND", "1") != "0" else ()
    for m, n in shapes:
        cases, copy_ms = norm_case(m, n)
        x, w, dy = cases["rms"][:3]
        mean = cases["ln"][3]
        dx = torch.empty_like(x)
        for op in ops:
            args = cases[op]
            want = ref_rms(*args) if op == "rms" else ref_ln(*args)

            def rec(
                variant: str,
                fn: Any,
                ok: bool | None = None,
                op: str = op,
                want: Any = want,
                m: int = m,
                n: int = n,
                copy_ms: float = copy_ms,
            ) -> None:
                """`fn` timed and checked against `want` (or `ok` as its maker checked it), recorded."""
                r = {"op": f"{op}_bwd", "m": m, "n": n, "variant": variant, **measure(fn, want, copy_ms, ok)}
                print(json.dumps(r), flush=True)
                out.write(json.dumps(r) + "\n")

            rec("stock", lambda op=op, args=args: stock[op](*args))
            for chunk, warps in hand:
                if n % chunk or chunk < 32 * warps:
                    continue
                ws = torch.empty(2 * sms, n, device="cuda", dtype=torch.float32)
                try:
                    kernel = load(kernel_source(n, chunk, warps, op))
                except Exception as e:
                    print(json.dumps({"variant": f"c{chunk}-w{warps}", "error": str(e)[-300:]}), flush=True)
                    continue

                def run(
                    kernel: Any = kernel,
                    ws: Any = ws,
                    warps: int = warps,
                    a: Any = (x, dy, w, args[-1], dx, mean),
                    op: str = op,
                ) -> Any:
                    kernel[(sms,)](*a[:5], ws, a[0].shape[0], sms, a[5], num_warps=warps)
                    sums = ws.view(2, sms, -1).sum(1).to(a[2].dtype)
                    return (a[4], sums[0]) if op == "rms" else (a[4], sums[0], sums[1])

                rec(f"c{chunk}-w{warps}", run)
            sizes = os.environ.get("RING_CTAS")  # the cluster sizes to time (all of CLUSTER_PLANS' if unset)
            clusters = [
                c
                for c in (CLUSTER_PLANS if os.environ.get("RING_CLUSTERS") == "1" else ())
                if sizes is None or str(c[0]) in sizes.split(",")
            ]
            exchanges = os.environ.get("RING_EXCHANGE", "barriers").split(",")
            for (ctas, chunk, warps, per_sm, ahead), exchange in itertools.product(clusters, exchanges):
                if n % (ctas * chunk) or chunk < 32 * warps:
                    continue
                variant = f"cl{ctas}-c{chunk}-w{warps}-s{per_sm}" + ("-ahead" if ahead else "")
                variant += "" if exchange == "barriers" else f"-{exchange}"
                try:
                    kernel = load(cluster_source(n, chunk, warps, op, ctas, ahead, exchange))
                except Exception as e:
                    print(json.dumps({"variant": variant, "error": str(e)[-300:]}), flush=True)
                    continue
                programs = sms * per_sm // ctas  # clusters
                ws = torch.empty(2 * programs, n, device="cuda", dtype=torch.float32)

                def run_cluster(
                    kernel: Any = kernel,
                    ws: Any = ws,
                    warps: int = warps,
                    ctas: int = ctas,
                    programs: int = programs,
                    a: Any = (x, dy, w, args[-1], dx, mean),
                    op: str = op,
                ) -> Any:
                    kernel[(programs,)](*a[:5], ws, a[0].shape[0], programs, a[5], num_warps=warps, num_ctas=ctas)
                    sums = ws.view(2, programs, -1).sum(1).to(a[2].dtype)
                    return (a[4], sums[0]) if op == "rms" else (a[4], sums[0], sums[1])

                rec(variant, run_cluster)
            for plan in TILEC_PLANS if os.environ.get("RING_TILEC", "1") != "0" else ():
                try:
                    made = tilec_ring(op, m, n, plan)
                    errors = ring_errors(made["run"](), made["want"])
                except Exception as e:
                    print(
                        json.dumps(
                            {"op": f"{op}_bwd", "m": m, "n": n, "variant": f"tilec {plan}", "error": str(e)[-300:]}
                        )
                    )
                    continue
                rec(f"tilec {plan} {errors}", made["timed"], ok=max(errors) <= 0.01)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
