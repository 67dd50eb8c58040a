"""A probe of tilec's cluster row kernels (the `cluster` plans): what their reads of the inputs
they never write (a norm's weight and bias, read from L2 for every row) cost, and whether a
persistent form that holds them wins it back. For each OP:MxN:PLAN, the Gluon source tilec emits
for that plan is timed as emitted (`as-is`), with those reads replaced by constants (`no-weights`:
wrong values, the reads' cost measured), and rewritten persistent (`persistent-G`: G clusters,
one an SM's worth, each looping over rows pid, pid + G, ...; the weights' slices loaded into
registers once; each row's slice double-buffered in shared memory, the next row's copies issued
as a row is finished; its outputs must equal the emitted kernel's). Device time, cold L2, % of a
same-size copy; one JSON line each, also to $OUT/weights_probe.jsonl.

    python bench/weights_probe.py layernorm:2048x262144:xblock=1,chunk=4096,num_warps=16,cluster=8,exchange=push

Hand-rewritten source, not a tilec form: bench/results/2026-11-27-h100-weight-reads.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

WEIGHT_READ = r"gl\.load\((in_ptr\d+) \+ (rindex(?:_\d+)?), eviction_policy=\"evict_last\"\)"


def without_weights(src: str) -> str:
    """`src` with each read of a never-written input replaced by a tile of ones."""
    shape = re.search(r"gl\.allocate_shared_memory\(gl\.bfloat16, (\[\d+, \d+\])", src)
    assert shape is not None
    return re.sub(WEIGHT_READ, f"gl.full({shape.group(1)}, 1.0, gl.bfloat16, layout=BLOCKED)", src)


def persistent(src: str) -> str:
    """The emitted cluster kernel `src` rewritten persistent (the module docstring); its kernel
    takes three more arguments: the rows M, the clusters G and the loop's trips (rows / G / 2)."""
    head, rest = src.split("@gluon.jit\n", 1)
    sig, rest = rest.split("\n", 1)
    m = re.match(r"def (\w+)\((.*)\):", sig)
    assert m is not None
    start, end = rest.index("    async_copy.wait_group("), rest.index("\n\nKERNEL = ")
    prologue, body = rest[:start], rest[start:end]
    slices = re.findall(r"(\w+) = gl\.allocate_shared_memory\(gl\.bfloat16, \[(\d+), (\d+)\], SWIZZLED\)", prologue)
    k, ctas, chunk = len(slices), int(slices[0][1]), int(slices[0][2])
    copies = re.findall(r"async_copy\.async_copy_global_to_shared\((\w+), (\w+) \+ (\w+), mask=rmask\)", prologue)
    x_ptr, slice_offs = copies[0][1], {s: o for s, _, o in copies}
    offs_of = dict(re.findall(r"(offs(?:_\d+)?) = bcast \+ (rindex(?:_\d+)?)", prologue))
    # the prologue without its copies and buffers, and without the row's own values (made in the
    # loop, so they are not carried by it)
    keep = [
        line
        for line in prologue.split("\n")
        if not re.search(r"async_copy|allocate_shared_memory", line)
        and not re.match(r"\s+(xrow|xindex|idx|bcast|offs(_\d+)?) = ", line)
    ]
    held: dict[str, str] = {}

    def hold(read: re.Match[str]) -> str:
        name = f"held_{read.group(1)}_{read.group(2)}"
        held[name] = read.group(0)
        return name

    body = re.sub(WEIGHT_READ, hold, body)
    body = re.sub(r"async_copy\.wait_group\((\d+)\)", lambda w: f"async_copy.wait_group({int(w.group(1)) + k})", body)
    body = re.sub(r"gl\.store\((out_ptr\d+) \+ (offs(?:_\d+)?), (\w+)\)", r"gl.store(\1 + \2, \3, mask=rowmask)", body)

    def row_values(row: str, t: str = "") -> list[str]:
        lines = [
            f"    xrow{t} = xrange + {row}",
            f"    xindex{t} = gl.expand_dims(xrow{t}, 1)",
            f"    idx{t} = xindex{t} * rnumel",
            f"    bcast{t} = tl.broadcast_to(idx{t}, [{ctas}, {chunk}])",
            f"    rowmask{t} = tl.broadcast_to(xindex{t} < M, [{ctas}, {chunk}])",
        ]
        return lines + [f"    {o}{t} = bcast{t} + {r}" for o, r in offs_of.items()]

    def issue(buffers: int, row: str, t: str) -> list[str]:
        lines = row_values(row, t)
        for s, _, _ in slices:
            target = f"set{buffers}_{s}, {x_ptr} + {slice_offs[s]}{t}, mask=rowmask{t}"
            lines += [f"    async_copy.async_copy_global_to_shared({target})", "    async_copy.commit_group()"]
        return lines

    def finish(buffers: int, row: str) -> list[str]:
        b = body
        for s, _, _ in slices:
            b = re.sub(rf"\b{s}\.load", f"set{buffers}_{s}.load", b)
        return row_values(row) + b.split("\n")

    out = [head + "@gluon.jit", f"def {m.group(1)}({m.group(2)}, M, G, ITER):", *keep]
    out += [f"    {name} = {read}" for name, read in held.items()]
    for buffers in (0, 1):
        out += [
            f"    set{buffers}_{s} = gl.allocate_shared_memory(gl.bfloat16, [{ctas}, {chunk}], SWIZZLED)"
            for s, _, _ in slices
        ]
    out += issue(0, "pid", "_i0") + issue(1, "pid + G", "_i1")
    loop = ["for j in range(0, ITER):", "    row_a = pid + 2 * j * G", "    row_b = row_a + G"]
    loop += finish(0, "row_a") + ["    gl.thread_barrier()"] + issue(0, "row_a + 2 * G", "_l0")
    loop += finish(1, "row_b") + ["    gl.thread_barrier()"] + issue(1, "row_b + 2 * G", "_l1")
    out += ["    " + line for line in loop] + ["    async_copy.wait_group(0)", ""]
    return "\n".join(out) + rest[end:].split("\n\ndef GRID")[0] + "\n"


def main(argv: list[str]) -> int:
    import torch
    from variants import arguments

    from bench import FUNCTIONS, make_inputs, model_bytes
    from tilec.emit.gluon import emit_gluon
    from tilec.frontend.capture import capture
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan
    from tilec.runtime import load_source
    from tilec.runtime.timing import device_ms

    log = (Path(os.environ.get("OUT", ".")) / "weights_probe.jsonl").open("a")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for spec in argv:
        op, shape, plan = spec.split(":")
        m, n = map(int, shape.split("x"))
        torch.manual_seed(0)
        inputs = make_inputs(op, m, n, torch.bfloat16)
        lowered = capture(FUNCTIONS[op], inputs)[0].result
        module = parse(print_kernel(lowered.kernel))
        run_pipeline(module, with_plan("gluon-default", plan))
        src = emit_gluon(module.kernels[0]).source
        s = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        d = torch.empty_like(s)
        copy_ms = device_ms(lambda s=s, d=d: d.copy_(s), reps=30)

        def pct(ms: float, op: str = op, m: int = m, n: int = n, copy_ms: float = copy_ms) -> float:
            return round(100 * model_bytes(op, m, n, 2) / ms / (2 * m * n * 2 / copy_ms), 1)

        args, outs = arguments(lowered, inputs)
        ctas = int(re.search(r"NUM_CTAS = (\d+)", src).group(1))  # type: ignore[union-attr]
        warps = int(re.search(r"NUM_WARPS = (\d+)", src).group(1))  # type: ignore[union-attr]
        want: dict[str, Any] = {}
        clusters = sms // ctas
        trips = (m + 2 * clusters - 1) // (2 * clusters)  # two rows a trip
        forms = {"as-is": src, "no-weights": without_weights(src), f"persistent-G{clusters}": persistent(src)}
        for name, text in forms.items():
            rec: dict[str, Any] = {"op": op, "shape": shape, "plan": plan, "variant": name}
            try:
                mod = load_source(text)
                if name.startswith("persistent"):
                    launch = (
                        mod.KERNEL[(clusters,)],
                        (*args, m, clusters, trips),
                        {"num_warps": warps, "num_ctas": ctas},
                    )
                else:
                    launch = (mod.launch, tuple(args), {})

                def call(launch: Any = launch) -> None:
                    launch[0](*launch[1], **launch[2])

                for v in outs.values():
                    v.fill_(float("nan"))
                call()
                torch.cuda.synchronize()
                if name == "as-is":
                    want = {k: v.clone() for k, v in outs.items()}
                elif name.startswith("persistent"):
                    rec["equal"] = all(torch.equal(outs[k], want[k]) for k in outs)
                rec["pct"] = pct(device_ms(call, reps=30))
            except Exception as e:
                rec["error"] = str(e)[-400:]
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
