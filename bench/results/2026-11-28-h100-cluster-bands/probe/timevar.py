"""Time the variant kernels in probe/variants/ (written by mkvar.py) (device time, cold L2), check pre against base."""
import importlib.util, sys, re, glob, json
import torch
from tilec.runtime.timing import device_ms

def load(path):
    spec = importlib.util.spec_from_file_location(path.replace("/", "_").replace(".", "_"), path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); return mod

def args_for(mod, m, n, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    args = []
    names = list(mod.SIGNATURE)
    for name, ty in mod.SIGNATURE.items():
        if ty == "constexpr": continue
        if name.startswith("ws"):
            grid = mod.GRID(*([None] * (len(names) - 1)))[0]
            args.append(torch.zeros(4 * grid * n, device="cuda", dtype=torch.float32))
        elif ty == "*fp32":
            args.append((torch.rand(m, device="cuda", generator=g) * 0.5 + 0.75) if name != "in_ptr3" or "in_ptr4" not in mod.SIGNATURE else torch.randn(m, device="cuda", generator=g) * 0.1)
        elif name.startswith("out"):
            args.append(torch.empty(m, n, device="cuda", dtype=torch.bfloat16))
        else:
            args.append(torch.randn(m, n, device="cuda", generator=g).to(torch.bfloat16))
    return args

res = []
for tag, shape in [a.split("=") for a in sys.argv[1:]]:
    m, n = map(int, shape.split("x"))
    copy_src = torch.empty(m * n * 3 // 2, device="cuda", dtype=torch.bfloat16); copy_dst = torch.empty_like(copy_src)
    copy = device_ms(lambda: copy_dst.copy_(copy_src), reps=30)
    base_out = None
    for path in sorted(glob.glob(f"bench/results/2026-11-28-h100-cluster-bands/probe/variants/{tag}_*.py"), key=lambda p: (not p.endswith("_base.py"), p)):
        name = path.rsplit("_", 1)[1][:-3]
        try:
            mod = load(path)
            args = args_for(mod, m, n)
            mod.launch(*args); torch.cuda.synchronize()
            outs = [a.clone() for a in args if a.dtype != torch.bfloat16 or a.data_ptr() == 0] 
            o = [a.clone() for i, a in enumerate(args) if list(mod.SIGNATURE)[i].startswith(("out", "ws"))]
            if name == "base": base_out = o
            same = None
            if name == "pre" and base_out is not None:
                same = all(torch.equal(a, b) for a, b in zip(o, base_out))
            ms = device_ms(lambda: mod.launch(*args), reps=30)
            r = dict(tag=tag, var=name, us=round(ms * 1000, 1), pct_copy=round(100 * copy / ms, 1), same_as_base=same)
            try:
                sys.path.insert(0, "bench/results/2026-11-28-h100-cluster-bands/probe"); import clusters
                ck = clusters.compiled_of(mod.KERNEL)
                r["regs"] = ck.n_regs; r["smem"] = ck.metadata.shared
                r["grid"] = mod.GRID(*([None] * (len(mod.SIGNATURE) - 1)))[0]
                r["max_clusters"] = clusters.max_active_clusters(ck, mod.NUM_CTAS, r["grid"] * mod.NUM_CTAS)
            except Exception as e:
                r["occ_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        except Exception as e:
            r = dict(tag=tag, var=name, error=f"{type(e).__name__}: {str(e)[:300]}")
        print(json.dumps(r), flush=True); res.append(r)
