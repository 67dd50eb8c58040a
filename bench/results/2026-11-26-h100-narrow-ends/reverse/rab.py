"""Second pass forward (as emitted) against reversed (the row's last chunk first: still in L2)."""
import glob, importlib.util, json, os, re, sys
import torch
import torch.nn.functional as F

def load_text(text, name):
    path = f"/tmp/{name}.py"; open(path, "w").write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

def reverse_last_loop(text):
    loops = list(re.finditer(r"^    for (roffset_\d+) in range\(0, (\d+), (\d+)\):\n", text, re.M))
    m = loops[-1]
    var, n, c = m.group(1), int(m.group(2)), int(m.group(3))
    new = f"    for rev_i in range(0, {n // c}):\n        {var} = tl.multiple_of({n - c} - rev_i * {c}, {c})\n"
    return text[: m.start()] + new + text[m.end():]

dev = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
if dev == "cpu":
    from tilec.runtime.loader import _scalar_index; _scalar_index()
rows_limit = int(os.environ.get("ROWS", "0"))
for path in sorted(glob.glob(".exp/r/fwd_*.py")):
    op, shape = os.path.basename(path)[4:-3].split("_")
    m, n = map(int, shape.split("x"))
    text = open(path).read()
    grid_rows = m
    if rows_limit:
        m = rows_limit
    torch.manual_seed(0)
    x = torch.randn(m, n, device=dev, dtype=torch.bfloat16) * 3
    w = torch.randn(n, device=dev, dtype=torch.bfloat16); b = torch.randn(n, device=dev, dtype=torch.bfloat16)
    args = {"softmax": [x], "rmsnorm": [x, w], "layernorm": [x, w, b]}[op]
    if dev == "cuda":
        from tilec.runtime.timing import device_ms
        dst = torch.empty_like(x); copy = device_ms(lambda: dst.copy_(x))
    outs = {}
    for variant, t in (("fwd", text), ("rev", reverse_last_loop(text))):
        mod = load_text(t, f"{variant}_{op}_{shape}")
        y = torch.empty_like(x)
        k = mod.KERNEL
        fn = lambda: k[(m,)](*args, y, 1, mod.CONSTEXPRS["RBLOCK"], num_warps=mod.NUM_WARPS)
        fn()
        outs[variant] = y
        res = dict(op=op, shape=shape, variant=variant, equal=bool(torch.equal(y, outs["fwd"])))
        if dev == "cuda":
            res["pct"] = round(100 * copy / device_ms(fn), 1)
        print(json.dumps(res), flush=True)
    del x, outs
