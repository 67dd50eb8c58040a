"""Emit the cluster form for an op/shape/options and write timing variants of its source."""
import re, sys, os
sys.path.insert(0, "tests/frontend"); sys.path.insert(0, "tests")
from test_mix_order import fused_backward
from tilec.ir import parse, print_kernel
from tilec.passes import run_pipeline
from tilec.passes.pipelines import with_options
from tilec.emit.gluon import emit_gluon

def variants(src):
    out = {"base": src}
    lines = src.split("\n")
    loop = next(i for i, l in enumerate(lines) if l.strip().startswith("for xoffset in range(band_start"))
    ind = " " * 8
    scal = [i for i, l in enumerate(lines) if i > loop and re.match(r"\s+(\w+) = gl\.load\((in_ptr\d+) \+ xindex_1, eviction_policy=\"evict_last\"\)", l)]
    pre = list(lines)
    init, body, nxt = [], [], []
    for k, i in enumerate(scal):
        name, ptr = re.match(r"\s+(\w+) = gl\.load\((in_ptr\d+) \+", lines[i]).groups()
        init.append(f"    pre_{k} = gl.load({ptr} + xindex, mask=xindex < band_end, other=0.0)")
        pre[i] = f"{ind}{name} = pre_{k}"
        nxt.append(f"{ind}pre_{k} = gl.load({ptr} + (xindex_1 + 1), mask=(xindex_1 + 1) < band_end, other=0.0)")
    # next row's scalars issued right after this row's are taken
    last = max(scal)
    pre = pre[: last + 1] + nxt + pre[last + 1 :]
    pre = pre[:loop] + init + pre[loop:]
    out["pre"] = "\n".join(pre)
    def nox(s):
        def rep(m):
            outs = [v.strip() for v in m.group(1).split(",")]
            ins = m.group(2).rsplit("], dtype", 1)[0]
            vals = [v.strip() for v in ins.split("gl.SliceLayout(1, BLOCKED)),")[-1].split(",")]
            n = len(outs) // len(vals)
            return f"{' '.join(['']) }" + ", ".join(outs) + " = " + ", ".join(v for v in vals for _ in range(n))
        return re.sub(r"^(?:\s*)([\w, ]+) = gl\.inline_asm_elementwise\(CLUSTER_PUSH, CLUSTER_PUSH_C, \[(.*)\], dtype=.*$", lambda m: ind + rep(m).strip(), s, flags=re.M)
    out["nox"] = nox(src)
    out["prenox"] = nox(out["pre"])
    out["nobar"] = src.replace("gl.thread_barrier()", "pass")
    return out

op, m, n, opts, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
k = fused_backward(m, n, op)[3]
module = parse(print_kernel(k.result.kernel))
run_pipeline(module, with_options("gluon-cluster-ring", "band-cluster", opts))
src = emit_gluon(module.kernels[0]).source
ONLY = os.environ.get("ONLY", "").split(",")
for name, s in variants(src).items():
    if ONLY != [""] and name not in ONLY: continue
    open(f"bench/results/2026-11-28-h100-cluster-bands/probe/variants/{tag}_{name}.py", "w").write(s)
    print(tag, name, len(s))
if os.environ.get("CHECK"):
    import dataclasses
    from tilec.emit.check import check_compile
    gm = emit_gluon(module.kernels[0])
    for name, s in variants(src).items():
        rep = check_compile(dataclasses.replace(gm, source=s), "sm_90")
        print(tag, name, rep.summary() if rep.ok else rep.error[:500])
