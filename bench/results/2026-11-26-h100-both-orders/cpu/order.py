"""Which side comes first: two copies of bench/models.py's tiny Llama, made in the order given,
side `a` compiled first; prints the median over 1500 alternating pairs of a's call time over b's.

    cd bench && python results/2026-11-26-h100-both-orders/cpu/order.py a,b inductor   # or b,a; eager: no compile
"""
import sys, time, statistics, copy, torch
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
import models
torch.manual_seed(0)
base = models.build("llama", "tiny").eval()
ids = torch.randint(0, 500, (2, 16))
create, mode = sys.argv[1], sys.argv[2]
ms = {}
for s in create.split(","):
    ms[s] = copy.deepcopy(base)
if mode == "eager":
    fns = {s: models.entry(s) for s in "ab"}
else:
    fns = {s: torch.compile(models.entry(s), dynamic=False, backend=mode) for s in "ab"}
with torch.no_grad():
    for s in "ab":  # a compiled (and warmed) first
        for _ in range(3):
            fns[s](ms[s], ids, None)
    ratios = []
    for i in range(1500):
        t = {}
        for s in ("ab" if i % 2 == 0 else "ba"):
            t0 = time.perf_counter(); fns[s](ms[s], ids, None); t[s] = time.perf_counter() - t0
        ratios.append(t["a"] / t["b"])
print(create, mode, "median a/b", round(statistics.median(ratios), 4))
