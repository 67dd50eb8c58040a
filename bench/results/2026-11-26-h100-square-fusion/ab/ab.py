"""A/B: the emitted chunked LayerNorm banded kernel vs the hand-written probe form, alone."""
import importlib.util, sys, json, os, re
import torch, triton
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "2026-11-26-h100-band-chunks", "probe"))  # chunked.py
from chunked import gen
def load_text(text, name):
    path = f"/tmp/{name}.py"; open(path, "w").write(text)
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
m, n = 4096, 16384
emitted = open(f"{HERE}/emitted.py").read()
variants = {"emitted": emitted,
  "no-evict": re.sub(r', eviction_policy="evict_(last|first)"', "", emitted),
  "no-mask": emitted.replace(", mask=bcast_2, other=0", "").replace(", mask=bcast_2)", ")"),
  "both": re.sub(r', eviction_policy="evict_(last|first)"', "", emitted).replace(", mask=bcast_2, other=0", "").replace(", mask=bcast_2)", ")"),
  "s1": emitted.replace("num_stages=2", "num_stages=1"),
  "s3": emitted.replace("num_stages=2", "num_stages=3"),
  "probe": gen(m, n, 2, 2, True) + "NUM_WARPS = 8\n",
}
x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16); dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
xf = x.float(); mean = xf.mean(1); rstd = torch.rsqrt(xf.var(1, unbiased=False) + 1e-6)
P = 128; dx = torch.empty_like(x); ws = torch.empty(2 * P, n, device="cuda", dtype=torch.float32)
args = (dy, w, x, mean, rstd, dx, ws)
src = torch.empty(m, n, device="cuda", dtype=torch.bfloat16); dst = torch.empty_like(src)
tc = triton.testing.do_bench(lambda: dst.copy_(src), return_mode="median")
ref = None
for name, text in variants.items():
    try:
        mod = load_text(text, "v_" + name.replace("-", "_"))
        k = mod.KERNEL
        fn = lambda: k[(P,)](*args, 1, 8192, 32, num_warps=8)
        dx.zero_(); fn(); torch.cuda.synchronize()
        if ref is None: ref = (dx.clone(), ws.clone())
        ok = bool(torch.allclose(dx.float(), ref[0].float(), atol=2e-2, rtol=2e-2) and torch.allclose(ws, ref[1], atol=1e-2, rtol=1e-3))
        t = triton.testing.do_bench(fn, return_mode="median")
        c = k.warmup(*args, 1, 8192, 32, num_warps=8, grid=(P,)) if False else None
        print(json.dumps(dict(variant=name, us=round(t * 1e3, 1), pct=round(150 * tc / t, 1), ok=ok)), flush=True)
    except Exception as e:
        print(json.dumps(dict(variant=name, error=str(e)[:300])), flush=True)
