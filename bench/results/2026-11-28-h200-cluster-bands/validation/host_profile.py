"""Host profile of one call, stock torch.compile and tilec, in one process (a probe, run from the
repository root, tilec installed: python3 bench/results/2026-11-28-h200-cluster-bands/validation/host_profile.py
OP:MxN ...): host us per call (50 calls queued), then cProfile of 200 calls, by own and cumulative time."""
import cProfile, io, pstats, sys, time
sys.path.insert(0, "bench")
import torch
import bench as B
import tilec
tilec.install()

def host_us(fn, n=50):
    fn(); torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n): fn()
    e = time.perf_counter() - t
    torch.cuda.synchronize()
    return e / n * 1e6

for spec in sys.argv[1:]:
    op, shape = spec.split(":")
    m, n = map(int, shape.split("x"))
    inputs = B.make_inputs(op, m, n, torch.bfloat16)
    for impl in ("tilec", "compile"):
        built = B.build(impl, op, inputs)
        fn = lambda: built.fn(*inputs)
        for _ in range(5): fn()
        torch.cuda.synchronize()
        print(f"== {op} {shape} {impl}: host {host_us(fn):.1f} us; {built.note[:150]}")
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(200):
            fn()
        pr.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        st = pstats.Stats(pr, stream=s)
        st.sort_stats("tottime").print_stats(25)
        print(s.getvalue()[:6000])
        s = io.StringIO()
        st = pstats.Stats(pr, stream=s)
        st.sort_stats("cumulative").print_stats(45)
        print(s.getvalue()[:8000])
