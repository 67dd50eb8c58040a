"""Is the loss's backward slower inside Llama's training step than alone? One process: the step
under the profiler (the hook's kernel, its source copied from the tilec cache), then the loss's
backward as it is without the logits' zero gradient (`loss-backward-alone.py`, the hook's
kernel for `F.cross_entropy` over the lm_head's output, emitted on a CPU) on the model's own
logits. As run (from the repository root, this file and that one in .exp/ as ce_inmodel.py and
ce_now.py): `python .exp/ce_inmodel.py`; output in NOTES.md. A first call also timed the alone
kernel before the model was built (134.9 us on randn * 3 logits, 135.3 on randn * 0.05)."""
import copy, json, os, subprocess, sys, statistics
sys.path.insert(0, "bench"); sys.path.insert(0, ".exp")
import torch
import models as M
import tilec
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
from tilec.runtime import load_source
out = os.environ.get("OUT", ".")
def prof(fn, reps, key):
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(reps): fn()
        torch.cuda.synchronize()
    v = [e.time_range.elapsed_us() for e in p.events() if e.device_type == DeviceType.CUDA and key in e.name]
    return statistics.median(v) if v else None, len(v)
smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu", "--format=csv,noheader", "-lms", "20"], stdout=open(f"{out}/clocks2.csv", "w"))
M_, N = 4096, 32000
m = load_source(open(".exp/ce_now.py").read())
def standalone(scale):
    torch.manual_seed(0)
    logits = (torch.randn(M_, N, device="cuda") * scale).bfloat16()
    x = logits.float(); amax = x.amax(1); lse = torch.log(torch.exp(x - amax[:, None]).sum(1))
    labels = torch.randint(0, N, (M_,), device="cuda"); ne = labels != -100
    o = torch.empty(M_, N, device="cuda", dtype=torch.bfloat16)
    args = (labels, ne, 1.0, float(M_), logits, amax, lse, o)
    m.launch(*args)
    return prof(lambda: m.launch(*args), 20, "triton_red")
base = M.build("llama", "default")
ids = torch.randint(0, base.config.vocab_size, (4, 1024), generator=torch.Generator().manual_seed(1)).cuda()
model = base.to("cuda", torch.bfloat16)
comp = torch.compile(M.entry("tilec"), backend="tilec", dynamic=False)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
def step():
    model.train(); o = comp(model, ids, ids); o.loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
for _ in range(3): step()
print("in model:", prof(step, 5, "log_softmax_backward"), flush=True)
import glob, shutil
MODS = []
cache = os.environ.get("TILEC_CACHE_DIR", "/tmp/tilec-cache")
for f in glob.glob(cache + "/**/*.py", recursive=True):
    t = open(f).read()
    if "log_softmax_backward" in t or ("tl.exp(" in t and "32000" in t and "out_ptr1" in t):
        shutil.copy(f, out + "/inmodel_" + os.path.basename(f)); print("copied", f, flush=True)
        try:
            mm = load_source(t); MODS.append(mm)
            print("  grid/warps", mm.CONSTEXPRS, mm.NUM_WARPS, flush=True)
        except Exception as e:
            print("  load failed", e)
# the in-model kernel's own inputs: grab logits from a forward
with torch.no_grad():
    lg = model(ids).logits.view(-1, N)
print("model logits std", lg.float().std().item(), flush=True)
x = lg.float(); amax = x.amax(1); lse = torch.log(torch.exp(x - amax[:, None]).sum(1))
labels = ids.view(-1).clone(); ne = labels != -100
o = torch.empty(M_, N, device="cuda", dtype=torch.bfloat16)
args = (labels, ne, 1.0, float(M_), lg.contiguous(), amax, lse, o)
m.launch(*args)
print("standalone on the model's logits:", prof(lambda: m.launch(*args), 20, "triton_red"), flush=True)
for mm in MODS:
    try:
        print("in-model source standalone:", mm.CONSTEXPRS, mm.NUM_WARPS, prof(lambda: mm.launch(*args), 20, "triton_red"), flush=True)
    except Exception as e:
        print("launch failed", e)
smi.terminate()
