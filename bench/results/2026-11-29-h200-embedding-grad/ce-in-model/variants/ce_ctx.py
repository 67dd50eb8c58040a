"""CE backward kernel variants: alone and right after the lm_head GEMM, device time per launch; clocks."""
import json, os, subprocess, sys, time, statistics
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
from tilec.runtime import load_source
out = os.environ.get("OUT", ".")
M, N = 4096, 32000
torch.manual_seed(0)
logits = (torch.randn(M, N, device="cuda") * 3).bfloat16()
x = logits.float()
amax = x.amax(1); lse = torch.log(torch.exp(x - amax[:, None]).sum(1))
labels = torch.randint(0, N, (M,), device="cuda"); labels[::7] = -100
ne = labels != -100
tang = torch.tensor(1.0, device="cuda"); cnt = ne.sum().float()
a = torch.randn(M, 2048, device="cuda").bfloat16(); w = torch.randn(N, 2048, device="cuda").bfloat16()
gemm_out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
ref = None
res = []
def kernels_us(fn, reps):
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps): fn()
        torch.cuda.synchronize()
    d = {}
    for e in prof.events():
        if e.device_type == DeviceType.CUDA:
            d.setdefault(e.name[:40], []).append(e.time_range.elapsed_us())
    return {k: statistics.median(v) for k, v in d.items()}
smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader", "-lms", "20"], stdout=open(f"{out}/clocks.csv", "w"))
for name in sys.argv[1:]:
    m = load_source(open(f".exp/{name}.py").read())
    o = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    args = (labels, ne, tang.item(), cnt.item(), logits, amax, lse, o)
    run = lambda: m.launch(*args)
    run(); torch.cuda.synchronize()
    if ref is None: ref = o.clone()
    diff = (o.float() - ref.float()).abs().max().item(); same = (o == ref).float().mean().item()
    for _ in range(3): run()
    t0 = time.time()
    alone = kernels_us(run, 30)
    t1 = time.time()
    ctx = kernels_us(lambda: (torch.mm(a, w.t(), out=gemm_out), run()), 30)
    t2 = time.time()
    r = {"variant": name, "max_abs_diff_vs_first": diff, "frac_equal": same, "alone": alone, "after_gemm": ctx, "t": [t0, t1, t2]}
    res.append(r); print(json.dumps(r), flush=True)
smi.terminate()
json.dump(res, open(f"{out}/ce_ctx.json", "w"))
