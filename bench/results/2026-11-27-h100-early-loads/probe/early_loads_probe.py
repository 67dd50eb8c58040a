"""The probe behind early-loads: the cluster form's global loads after the exchange moved `distance` chunks
ahead by hand (`prefetch`, the pass's first form), each plan built by the Gluon pipeline, checked against
the reference and timed twice. Run from the repository root: `python PATH gpu OUT.jsonl`."""
import sys, json, itertools
sys.path.insert(0, "bench")


def prefetch(kernel, distance):
    ops = kernel.body.ops
    gi = next(i for i, o in enumerate(ops) if o.name == "tile.cluster_gather")
    gather = ops[gi]
    after = ops[gi + 1:]
    stores = [o for o in after if o.name == "tile.store"]
    starts = []  # the first op of each chunk's part of phase 2
    prev = gi + 1
    for s in stores:
        starts.append(ops[prev])
        prev = ops.index(s) + 1
    moved = 0
    for ld in [o for o in after if o.name == "tile.load"]:
        pos = ops.index(ld)
        k = sum(1 for s in stores if ops.index(s) < pos)
        t = k - distance
        anchor = gather if t < 0 else starts[t]
        ai = ops.index(anchor)
        if ai >= pos:
            continue
        defs = [v.op for v in ld.operands if hasattr(v, "op")]
        if any(d.parent is kernel.body and ops.index(d) >= ai for d in defs):
            continue
        ops.remove(ld)
        kernel.body.insert_before(anchor, ld)
        moved += 1
    return moved


def cpu(op, n, plan, distance):
    sys.path.insert(0, "tests")
    from bench_scripts import meta_kernel
    from tilec.ir import Module, parse, print_module
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan
    from tilec.emit.gluon import emit_gluon
    from tilec.emit.check import check_compile
    module = parse(print_module(Module([meta_kernel(op, 2048, n).kernel])))
    run_pipeline(module, with_plan("gluon-default", plan))
    k = module.kernels[0]
    print("moved", prefetch(k, distance))
    from tilec.ir import print_kernel
    parse(print_module(module))  # verifies
    print(check_compile(emit_gluon(k)).summary())


def gpu(out):
    import torch
    from plans import FUNCTIONS, make_inputs, reference, model_bytes, check_written
    from variants import arguments
    from tilec.frontend.capture import capture
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan
    from tilec.emit.gluon import emit_gluon
    from tilec.runtime import load_source
    from tilec.runtime.timing import device_ms
    cases = [
        ("rmsnorm", 2048, 262144, ["xblock=1,chunk=16384,num_warps=16,cluster=4,exchange=push", "xblock=1,chunk=4096,num_warps=16,cluster=8", "xblock=1,chunk=8192,num_warps=16,cluster=8,exchange=push"]),
        ("layernorm", 2048, 262144, ["xblock=1,chunk=4096,num_warps=16,cluster=8,exchange=push", "xblock=1,chunk=16384,num_warps=16,cluster=4,exchange=push", "xblock=1,chunk=8192,num_warps=8,cluster=8,exchange=push", "xblock=1,chunk=4096,num_warps=16,cluster=8,exchange=push,maxnreg=40"]),
        ("layernorm", 4096, 131072, ["xblock=1,chunk=4096,num_warps=16,cluster=4,exchange=push", "xblock=1,chunk=8192,num_warps=8,cluster=4,exchange=push"]),
    ]
    with open(out, "w") as f:
        for op, m, n, plans in cases:
            torch.manual_seed(0)
            inputs = make_inputs(op, m, n, torch.bfloat16)
            expected = reference(op, inputs)
            refs = [t.to(torch.bfloat16) for t in (expected if isinstance(expected, tuple) else (expected,))]
            (captured,) = capture(FUNCTIONS[op], inputs, strict=True)
            lowered = captured.result
            text = print_kernel(lowered.kernel)
            written = [a.param for a in lowered.args if a.is_written]
            src = torch.empty(m, n, device="cuda", dtype=torch.bfloat16); dst = torch.empty_like(src)
            copy_gbps = 2 * 2 * m * n / device_ms(lambda: dst.copy_(src), reps=20) / 1e6
            del src, dst
            nbytes = model_bytes(op, m, n, 2)
            for plan in plans:
                built = {}
                for d in (0, 1, 2, 99):
                    module = parse(text)
                    run_pipeline(module, with_plan("gluon-default", plan))
                    k = module.kernels[0]
                    moved = prefetch(k, d) if d else 0
                    try:
                        built[d] = (moved, load_source(emit_gluon(k).source))
                        args, outs = arguments(lowered, inputs)
                        built[d][1].launch(*args); torch.cuda.synchronize()
                        check_written(outs, written, refs, torch.bfloat16, plan)
                    except Exception as e:
                        built[d] = (moved, e)
                for rep in range(2):
                    for d, (moved, launched) in built.items():
                        rec = dict(op=op, m=m, n=n, plan=plan, distance=d, moved=moved, rep=rep)
                        if isinstance(launched, Exception):
                            rec["error"] = f"{type(launched).__name__}: {str(launched)[:300]}"
                        else:
                            args, outs = arguments(lowered, inputs)
                            ms = device_ms(lambda: launched.launch(*args), reps=20)
                            rec.update(ms=ms, pct=100 * nbytes / ms / 1e6 / copy_gbps)
                        print(json.dumps(rec), flush=True); f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "cpu":
        cpu(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
    else:
        gpu(sys.argv[2])
