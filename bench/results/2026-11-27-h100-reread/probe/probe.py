"""Probe: long-row Triton loops with source edits (the first loop software-pipelined, the second
loop reversed, the row's stores evict-first), timed against the plan as emitted: the probe behind
NOTES.md, run from the repository root on a GPU
(`python3 bench/results/2026-11-27-h100-reread/probe/probe.py OUT [ops [shapes]]`)."""
import json, re, sys, itertools, time
from pathlib import Path
sys.path.insert(0, "bench")
import torch
from bench import FUNCTIONS, make_inputs, model_bytes, reference, warm_up, environment
from variants import arguments
from plans import check_written, compile_all
from tilec.frontend.capture import capture
from tilec.frontend.dtypes import DTYPE_ALIASES
from tilec.ir import parse, print_kernel
from tilec.passes import run_pipeline
from tilec.passes.pipelines import with_plan
from tilec.emit.triton import emit_triton
from tilec.runtime import load_source
from tilec.runtime.timing import device_ms

HEAD = re.compile(r"^(\s*)for (\w+) in range\((\d+), (\d+), (\d+)\):(?:\s*#.*)?$")

def edit(src, stages=0, rev=False, store=""):
    lines = src.split("\n")
    heads = [i for i, l in enumerate(lines) if HEAD.match(l)]
    if len(heads) < 2:
        raise ValueError("no two loops: " + " | ".join(l.strip() for l in lines if "for " in l or "range" in l))
    first, last = heads[0], heads[-1]
    out = []
    for i, l in enumerate(lines):
        m = HEAD.match(l)
        if m and i == first and stages:
            ind, v, lo, hi, st = m.groups()[:5]
            out.append(f"{ind}for {v} in tl.range({lo}, {hi}, {st}, num_stages={stages}):")
            continue
        if m and i == last and rev:
            ind, v, lo, hi, st = m.groups()[:5]
            lo, hi, st = int(lo), int(hi), int(st)
            assert (hi - lo) % st == 0
            out.append(f"{ind}for _k in range({lo}, {hi}, {st}):")
            out.append(f"{ind}    {v} = {hi - st + lo} - _k")
            continue
        if store and i > last and "tl.store(" in l:
            code, _, note = l.partition("  #")
            l = code.rstrip()[:-1] + f", {store})"
        out.append(l)
    return "\n".join(out)

EDITS = {
    "base": {},
    "s2": dict(stages=2),
    "s3": dict(stages=3),
    "rev": dict(rev=True),
    "ef": dict(store='eviction_policy="evict_first"'),

    "rev-ef": dict(rev=True, store='eviction_policy="evict_first"'),
    "s2-rev-ef": dict(stages=2, rev=True, store='eviction_policy="evict_first"'),
}
PLANS = ["xblock=1,chunk=16384,num_warps=16", "xblock=1,chunk=32768,num_warps=32", "xblock=1,chunk=8192,num_warps=32"]
SHAPES = [(4096, 32768), (8192, 65536), (4096, 131072), (2048, 262144)]
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
ops = sys.argv[2].split(",") if len(sys.argv) > 2 else ["rmsnorm", "layernorm", "softmax"]
if len(sys.argv) > 3: SHAPES = [tuple(map(int, s.split("x"))) for s in sys.argv[3].split(",")]
warm_up()
t0 = time.time()
with (out / "probe.jsonl").open("w") as jl:
    jl.write(json.dumps({"meta": environment()}) + "\n")
    for op in ops:
        for m, n in SHAPES:
            dt = torch.bfloat16
            torch.manual_seed(0)
            inputs = make_inputs(op, m, n, dt)
            expected = reference(op, inputs)
            refs = [t.to(dt) for t in (expected if isinstance(expected, tuple) else (expected,))]
            (captured,) = capture(FUNCTIONS[op], inputs, strict=True)
            lowered = captured.result
            text = print_kernel(lowered.kernel)
            written = [a.param for a in lowered.args if a.is_written]
            src = torch.empty(m, n, device="cuda", dtype=dt); dst = torch.empty_like(src)
            copy_gbps = 2 * 2 * m * n / device_ms(lambda: dst.copy_(src), reps=20) / 1e6
            del src, dst
            nb = model_bytes(op, m, n, 2)
            built = {}
            for plan in PLANS:
                module = parse(text)
                run_pipeline(module, with_plan("triton-default", plan))
                source = emit_triton(module.kernels[0]).source
                for name, kw in EDITS.items():
                    try:
                        built[(plan, name)] = (None, load_source(edit(source, **kw)))
                    except Exception as e:
                        built[(plan, name)] = e
            compile_all(built, lowered, inputs, 16)
            for (plan, name), b in built.items():
                rec = {"op": op, "m": m, "n": n, "plan": plan, "edit": name}
                try:
                    if isinstance(b, Exception):
                        raise b
                    args, outs = arguments(lowered, inputs)
                    b[1].launch(*args); torch.cuda.synchronize()
                    check_written(outs, written, refs, dt, name)
                    ms = device_ms(lambda a=args, l=b[1]: l.launch(*a), reps=20)
                    rec.update(ms=ms, pct=100 * nb / ms / 1e6 / copy_gbps)
                except Exception as e:
                    rec["error"] = f"{type(e).__name__}: {str(e)[:600]}"
                jl.write(json.dumps(rec) + "\n"); jl.flush()
            print(f"# {op} {m}x{n} at {time.time()-t0:.0f}s", flush=True)
