"""Where the cross-entropy backward over rows of 50257 loses to rows of 32000: the kernel as tilec
emits it with the H200's rule (examples/cross_entropy_backward.py, Triton, one row a program in
chunks of 8192), edited forms of that source, and the same kernel at row lengths whose rows start
on 16-byte boundaries (50264) and on 128-byte ones (50304, 50176), which `align-rows` leaves whole.

At 50257 `align-rows` splits the row into four pieces: the first vector (an element at a time), the
whole chunks (16-byte vectors), the rest in chunks of 2048 and the last partial vector. Each piece
is a load, arithmetic and a store, so each waits a round trip to memory of its own. The forms:

- `emitted`: as tilec emitted it with its whole chunks on 16-byte vectors (`align-rows{line=16}`,
  the pipelines' form before `line=128`; the edits below are made to this source);
- `ends-early`: the first and last vectors' loads issued before the whole chunks' loop, their
  arithmetic and stores after it (their round trips overlapping the loop's);
- `rest-early`: also the rest's first chunk of 2048 so (one chunk of 2048 at 50257);
- `i32cmp`: the column compared with the label in 32 bits (the label narrowed once a row), where
  the emitted kernel widens each column to 64 bits to compare it with the int64 label;
- `ftz`: exp as one `ex2.approx.ftz` (subnormal results flushed to zero);
- `i32cmp-ftz`, and `all` (`rest-early` with both);
- `w32`: `emitted` over 32 warps (the autotuner's fastest plan at 50257);
- `line128`: emitted with `align-rows{line=128}` (the pipelines' form now), the whole chunks
  starting on 128-byte cache lines (at 50257, and at 50264 with `vector_rows=true`: its rows start
  on 16-byte boundaries), also with `ftz` and over 32 warps.

`i32cmp` and `ftz` take instructions away from every element (16.4 SASS instructions an element
in the whole chunks' loop as emitted: 5 for the 64-bit compare and its select, 5 for the exp);
the others take round trips away from every row. Controls at the other row lengths are `emitted`
(and `i32cmp-ftz` at 32000).

Device time, cold L2; each result checked against the function in fp32 (labels ignored and out of
the row included). Two rounds; one JSON line a form, also to $OUT/ce_bwd_forms.jsonl.

    python bench/ce_bwd_forms.py [ROWS]        # 8192 by default; on a CPU, Triton's interpreter, 3 rows
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
PLAN = "target_elems=8192"
MAIN = "    for roffset_1_1 in range(8, full, 8192):"


def emitted(vocab: int, rows: int, plan: str = PLAN, line: int = 16) -> str:
    """The Triton source of the backward kernel over `rows` rows of `vocab`, with the Triton
    pipeline and `plan`, its whole chunks starting on `line`-byte boundaries (`align-rows`)."""
    from tilec.emit.triton import emit_triton
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.frontend.entry import load_entry, make_inputs
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan

    target = load_entry(str(ROOT / "examples" / "cross_entropy_backward.py"))
    (k,) = capture(target.func, make_inputs(target, (rows, vocab), torch.bfloat16), strict=True)
    assert isinstance(k.result, Lowered)
    module = parse(print_kernel(k.result.kernel))
    pipeline = with_plan("triton-default", plan)
    rows_on_vectors = ",vector_rows=true" if line == 128 else ""  # 50264 split too, as measured
    pipeline = re.sub(r"align-rows\{[^}]*\}", f"align-rows{{narrow=true,line={line}{rows_on_vectors}}}", pipeline)
    run_pipeline(module, pipeline)
    return emit_triton(module.kernels[0]).source


def _body_end(lines: list[str]) -> int:
    """The index past the kernel function's last line."""
    start = next(i for i, s in enumerate(lines) if s.startswith("def triton_"))
    return next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" "))


def _split(block: list[str]) -> tuple[list[str], list[str]]:
    """A piece's lines up to its load of the logits, and the rest (arithmetic and store)."""
    at = next(i for i, s in enumerate(block) if "tl.load(in_ptr1" in s)
    return block[: at + 1], block[at + 1 :]


def _hoist(s: str, pieces: list[tuple[list[str], list[str]]]) -> str:
    """Each piece's load before the whole chunks' loop, its arithmetic and store at the end."""
    lines = s.split("\n")
    main = next(i for i, line in enumerate(lines) if line.startswith(MAIN))
    end = _body_end(lines)
    loads = [line for pre, _ in pieces for line in pre]
    rest = [line for _, post in pieces for line in post]
    while end > 0 and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[:main] + loads + lines[main:end] + rest + lines[end:])


def _loop_as_trip(lines: list[str], header: str, start: str, keep: str | None = None) -> tuple[list[str], list[str]]:
    """The first trip of the loop whose header starts with `header` as straight-line code (its
    induction variable `start`; the body's masks must cover a loop of no trip), and the lines
    without the loop or, with `keep`, with the loop's range starting at `keep`."""
    a = next(i for i, s in enumerate(lines) if s.startswith(header))
    b = a + 1
    while b < len(lines) and lines[b].startswith("        "):
        b += 1
    var = re.match(r"\s*for (\w+) in", lines[a]).group(1)  # type: ignore[union-attr]
    trip = [f"    {var} = {start}"] + [s[4:] for s in lines[a + 1 : b]]
    if keep is not None:  # the loop runs on with the same names: the trip's own
        names = {m.group(1) for line in trip if (m := re.match(r"\s*(\w+) = ", line))}
        trip = [re.sub(r"\b(" + "|".join(sorted(names)) + r")\b", r"\1_first", line) for line in trip]
    if keep is None:
        return trip, lines[:a] + lines[b:]
    lines = list(lines)
    lines[a] = lines[a].replace(f"range({start},", f"range({keep},")
    return trip, lines


def ends_early(s: str) -> str:
    lines = s.split("\n")
    # the first vector: its load stays, its arithmetic and store move (the broadcasts it defines
    # for the last vector stay where they are)
    a = next(i for i, s in enumerate(lines) if s.startswith("    load_2 = tl.load(in_ptr1"))
    b = next(i for i in range(a, len(lines)) if lines[i].startswith("    tl.store(out_ptr1 + offs_1,"))
    kept = [s for s in lines[a + 1 : b + 1] if s.startswith(("    bcast_10 =", "    bcast_11 ="))]
    moved = [s for s in lines[a + 1 : b + 1] if s not in kept]
    lines = lines[: a + 1] + kept + lines[b + 1 :]
    # the last partial vector: a loop of at most one trip, masked at the row's end
    trip, lines = _loop_as_trip(lines, "    for roffset_1_5 in range(vectors_end_1, span, 8):", "vectors_end_1")
    pre, post = _split(trip)
    return _hoist("\n".join(lines), [(pre, moved + post)])


def rest_early(s: str) -> str:
    lines = ends_early(s).split("\n")
    trip, lines = _loop_as_trip(
        lines, "    for roffset_1_3 in range(full, vectors_end_1, 2048):", "full", "full + 2048"
    )
    pre, post = _split(
        ["    rrange_2_first = tl.arange(0, 2048)", *[t.replace("rrange_2", "rrange_2_first") for t in trip]]
    )
    return _hoist("\n".join(lines), [(pre, post)])


def i32cmp(s: str) -> str:
    """The column compared with the label in 32 bits: the label narrowed once a row (-1 where it is
    outside the row: the only columns that can equal it are masked off)."""
    at = s.index("    cst = -0.5")
    s = s[:at] + "    label32 = tl.where((load >= 0) & (load < rnumel), load, -1).to(tl.int32)\n" + s[at:]
    s = re.sub(r"tl\.cast\((rindex_\w+), tl\.int64\)", r"\1", s)
    return s.replace("tl.broadcast_to(load, ", "tl.broadcast_to(label32, ")


FAST_EXP = """
_FAST_EXP_INTERPRETED = tl.constexpr(triton.knobs.runtime.interpret)


@triton.jit
def _fast_exp(x):
    if _FAST_EXP_INTERPRETED:  # no inline assembly in Triton's interpreter
        return tl.exp(x)
    return tl.inline_asm_elementwise(
        "ex2.approx.ftz.f32 $0, $1;", "=f,f", [x * 1.4426950408889634], dtype=tl.float32, is_pure=True, pack=1
    )

"""


def ftz(s: str) -> str:
    """exp as one ex2.approx.ftz (results below 2^-126 flushed to zero): tl.exp's ex2.approx.f32
    scales its argument around the instruction to keep subnormal results."""
    s = re.sub(r"tl\.exp\((\w+)\)", r"_fast_exp(\1)", s)
    at = s.index("@triton.jit\ndef triton_")
    return s[:at] + FAST_EXP.lstrip("\n") + "\n" + s[at:]


FORMS: dict[str, Callable[[str], str]] = {
    "emitted": lambda s: s,
    "ends-early": ends_early,
    "rest-early": rest_early,
    "i32cmp": i32cmp,
    "ftz": ftz,
    "i32cmp-ftz": lambda s: ftz(i32cmp(s)),
    "all": lambda s: ftz(i32cmp(rest_early(s))),
}


def main(argv: list[str]) -> None:
    from tilec.runtime import load_source

    sys.path.insert(0, str(ROOT / "examples"))
    from cross_entropy_backward import forward

    gpu = torch.cuda.is_available()
    dev = "cuda" if gpu else "cpu"
    rows = int(argv[0]) if argv else (8192 if gpu else 3)
    out_dir = Path(os.environ.get("OUT", "."))
    records: list[dict[str, Any]] = []
    cases: list[tuple[str, int, str]] = [(name, 50257, edit(emitted(50257, rows))) for name, edit in FORMS.items()]
    cases.append(("w32", 50257, emitted(50257, rows, "target_elems=8192,num_warps=32")))
    cases += [("line128", v, emitted(v, rows, line=128)) for v in (50257, 50264)]
    cases.append(("line128-ftz", 50257, ftz(emitted(50257, rows, line=128))))
    cases.append(("line128-w32", 50257, emitted(50257, rows, "target_elems=8192,num_warps=32", line=128)))
    cases += [("emitted", v, emitted(v, rows)) for v in (50264, 50304, 50176, 32000)]
    cases.append(("i32cmp-ftz", 32000, ftz(i32cmp(emitted(32000, rows)))))
    for round_ in range(2 if gpu else 1):
        for name, vocab, source in cases:
            torch.manual_seed(vocab)
            x = (torch.randn(rows, vocab, device=dev) * 3).bfloat16()
            lse = torch.logsumexp(x.float(), 1)
            labels = torch.randint(0, vocab, (rows,), device=dev)
            labels[::5] = -100
            labels[1] = vocab
            want = forward(x.float(), lse, labels)
            mod = load_source(source, interpret=not gpu)
            out = torch.empty_like(x)

            def call(m: Any = mod, args: tuple[torch.Tensor, ...] = (labels, x, lse, out)) -> Any:
                return m.KERNEL[(rows,)](*args, 1, m.CONSTEXPRS["RBLOCK"], num_warps=m.NUM_WARPS)

            call()
            err = float((out.float() - want).abs().max())
            assert err < 2e-2, (name, vocab, err)
            us = None
            if gpu:
                from tilec.runtime.timing import device_ms

                us = device_ms(call, reps=40) * 1000
            moved = 2 * x.numel() * 2
            rec = {
                "form": name,
                "vocab": vocab,
                "rows": rows,
                "round": round_,
                "us": us,
                "err": err,
                "tbs": moved / us / 1e6 if us else None,
            }
            print(json.dumps(rec), flush=True)
            records.append(rec)
            del x, out
    if gpu:
        for vocab in sorted({v for _, v, _ in cases}):
            src = torch.empty(rows, vocab, dtype=torch.bfloat16, device=dev)
            dst = torch.empty_like(src)
            from tilec.runtime.timing import device_ms

            us = device_ms(lambda s=src, d=dst: d.copy_(s), reps=40) * 1000
            rec = {"form": "copy", "vocab": vocab, "rows": rows, "us": us, "tbs": 2 * src.numel() * 2 / us / 1e6}
            print(json.dumps(rec), flush=True)
            records.append(rec)
    with open(out_dir / "ce_bwd_forms.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


if __name__ == "__main__":
    main(sys.argv[1:])
