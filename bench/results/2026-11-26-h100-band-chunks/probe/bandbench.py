"""LayerNorm's banded backward kernel alone: tilec's one-tile kernel (gen/, written by genbase.py
before band-chunks existed) against the hand-written chunked forms of chunked.py, on the GPU."""
import importlib.util, sys, json, os
import torch, triton
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from chunked import gen

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

out = open(os.environ.get("OUT", "/tmp") + "/bands.jsonl", "a")
torch.manual_seed(0)
for m, n in [(4096, 16384), (8192, 16384), (32768, 16384), (4096, 8192), (16384, 8192)]:
    base = load(f"{HERE}/gen/base_{m}_{n}.py", f"base_{m}_{n}")
    grid = base.GRID(*[None] * 7)
    rs = base.launch_args(*[None] * 7)[1][-1]
    P = grid[0]
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    xf = x.float(); mean = xf.mean(1); rstd = torch.rsqrt(xf.var(1, unbiased=False) + 1e-6)
    dx = torch.empty_like(x); ws = torch.empty(2 * P, n, device="cuda", dtype=torch.float32)
    args = (dy, w, x, mean, rstd, dx, ws)
    src = torch.empty(m, n, device="cuda", dtype=torch.bfloat16); dst = torch.empty_like(src)
    tc = triton.testing.do_bench(lambda: dst.copy_(src), return_mode="median")
    def run_base():
        base.KERNEL[grid](*args, 1, n, rs, num_warps=base.NUM_WARPS)
    run_base(); torch.cuda.synchronize()
    ref_dx, ref_ws = dx.clone(), ws.clone()
    variants = [("base", run_base)]
    ks = (2, 4, 8) if n == 16384 else (2, 4)
    for K in ks:
        for stages in (2, 3):
            for warps in (8, 16):
                name = f"K{K}-s{stages}-w{warps}"
                path = f"/tmp/v_{m}_{n}_{name}.py".replace("-", "_")
                open(path, "w").write(gen(m, n, K, stages, True))
                mod = load(path, os.path.basename(path)[:-3])
                def run(mod=mod, warps=warps):
                    mod.kern[grid](*args, 1, n, rs, num_warps=warps)
                variants.append((name, run))
    for name, fn in variants:
        try:
            dx.zero_(); ws.zero_(); fn(); torch.cuda.synchronize()
            ok = bool(torch.allclose(dx.float(), ref_dx.float(), atol=2e-2, rtol=2e-2) and torch.allclose(ws, ref_ws, atol=1e-2, rtol=1e-3))
            t = triton.testing.do_bench(fn, return_mode="median")
            rec = dict(m=m, n=n, variant=name, ms=t, pct=round(150 * tc / t, 1), ok=ok)
        except Exception as e:
            rec = dict(m=m, n=n, variant=name, error=str(e)[:200])
        print(json.dumps(rec), flush=True); out.write(json.dumps(rec) + "\n")
