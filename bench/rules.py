"""The chooser's rules for a GPU, derived from measurements on it.

    python bench/rules.py --plans bench/results/RUN/plans.jsonl [--margin 0.01] [--after bench/results/LONG/plans.jsonl]
    python bench/rules.py bench/results/RUN/results.jsonl [--plans bench/results/RUN/long.jsonl]
    python bench/rules.py --kernels bench/results/RUN      # every models.jsonl and results.jsonl under RUN
    python bench/rules.py --kernels bench/results/RUN --families mix-order    # those kernels alone

prints a table of `tilec.passes.chooser.Rule`s (Python source) for the GPU the run measured, to
be reviewed and committed as that GPU's entry of `chooser.TABLES`. Per reduction family (rmsnorm:
`sum`, layernorm: `mean-var`, softmax; the residual-fused norms: two row inputs; the norms'
backward, `tilec bench --bwd`, at the shapes Inductor fuses: `mix-order`), element size
(bf16: 2, fp32: 4) and row size (the bytes of a row): where one of tilec's candidates beats stock
`torch.compile` by the margin on device time at every shape of that row size, the fastest
(geometric mean) of the candidates no slower than stock at any of them (`chosen`), else stock (a
tie goes to stock, whose launch costs less). Neighbouring row sizes with the same action become
one rule, from the smallest row size of the group to the next group's; the first starts at 0 (at
its own row size for a survey of chosen shapes or long rows, `bench/plans.py --shapes` or
`--min-row`, listed in a table before the survey of every shape, whose rules then decide the
rest), the last runs on (for a survey of chosen shapes, to the power of two past its longest
row: the rows it measured, not the longer ones the runs after it decide). Each rule quotes the
figures it rests on (device time, % of a same-size copy: "MxN tilec vs compile") and names the
run, as tests/passes/test_chooser.py checks.

The candidates come from a `tilec bench` run with `tilec-gluon` and/or `tilec-triton` beside
`compile` (`tilec bench --impls tilec-gluon,tilec-triton,compile,copy`), from a plan survey
(`bench/plans.py`, one row input: each emitter under each of its plans, with `compile` timed
beside them), or both (a shape of both: the bench's figures for the emitters' heuristic
plans and for compile). Shapes where compile or every candidate failed are left out. A rule
whose action is a surveyed plan sets `plan=` and quotes that plan's figure ("MxN 99.8 vs 69.6");
any other rule over surveyed shapes quotes tilec's fastest candidate there.

`--kernels` (or `--models`) derives rules for the kernels no suite op's family measures (pointwise
kernels, norms read with more rows, cross-entropy, weight gradients, ...) from the autotuner's
timings in a `tilec bench --models --autotune` run or a `tilec bench --impls tilec-autotune,...`
run: each kernel tilec could take was timed in place against stock Inductor's (device time, cold
L2: `tilec.inductor.autotune`), and the run's models.jsonl or results.jsonl records its signature
and those timings (each row's `report`). Kernels the GPU's table already covers (its rules from
other runs) are left out; the rest are grouped by family, row inputs, element size and row bytes
(mix-order kernels also by their column sums where the run measured more than one number of them:
RMSNorm's backward and LayerNorm's, `Rule.column_sums`), and a row size takes the candidate that
beat stock by the margin at every kernel of that size (the same choice as above), else stock. A rule covers only the row sizes measured: the power-of-two
range holding each (pointwise kernels: every size), clipped where the table's other rules begin.
Its figures are device microseconds, "MxN tilec vs stock us" per kernel (a pointwise kernel: its
elements x 1): a rule taking tilec quotes every kernel it rests on, one keeping stock the kernels
where stock won by most (at most `QUOTED`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilec.inductor.autotune import split
from tilec.ir.expr import pow2_floor

FAMILIES = {"rmsnorm": ("sum", 1), "layernorm": ("mean-var", 1), "softmax": ("softmax", 1)}
FAMILIES |= {f"add_{op}": (family, 2) for op, (family, _) in list(FAMILIES.items()) if op != "softmax"}
# a norm's backward (`tilec bench --bwd`), at the shapes Inductor fuses into one mix-order kernel
# (`fused`): its dx and weight gradients in one banded kernel, reading x and dy as rows
FAMILIES |= {"rmsnorm_bwd": ("mix-order", 2), "layernorm_bwd": ("mix-order", 2), "gemma_rmsnorm_bwd": ("mix-order", 2)}
FAMILIES |= {
    "add_rmsnorm_bwd": ("mix-order", 3),
    "add_layernorm_bwd": ("mix-order", 3),
}  # the sum, dy and the residual's dy
# the same with the normalized rows read by two projections (gate and up) or three (q, k, v): a dy
# for each
FAMILIES |= {
    "add_rmsnorm_mlp_bwd": ("mix-order", 4),
    "add_gemma_rmsnorm_mlp_bwd": ("mix-order", 4),
    "add_layernorm_mlp_bwd": ("mix-order", 4),
    "add_rmsnorm_qkv_bwd": ("mix-order", 5),
    "add_gemma_rmsnorm_qkv_bwd": ("mix-order", 5),
}


def fused(op: str, m: int, n: int) -> bool:
    """Whether a shape measures the op's family: a backward op only where Inductor fuses its dx
    and weight gradients into a mix-order reduction (at least 4096 rows and twice as many rows as
    columns, rows of at most 16384, 5 Mi elements: docs/hook.md); every other op always."""
    if not op.endswith("_bwd"):
        return True
    return m >= 4096 and m >= 2 * n and n <= 16384 and m * n >= 5 * 2**20


ELEM_BYTES = {"bf16": 2, "fp32": 4}  # fp16 rows are bf16's size: the bf16 measurements stand for both
EMITTERS = {"tilec-gluon": "gluon", "tilec-triton": "triton"}
RESULTS = Path(__file__).resolve().parent / "results"
END = 2**62


@dataclass
class Shape:
    m: int
    n: int
    ms: dict[str, float]  # impl (or "triton{plan}") -> device ms
    pct: dict[str, float]  # impl (or "triton{plan}") -> device % of copy

    def candidates(self) -> dict[str, str]:
        """The tilec candidates measured: key in `ms` -> action ("gluon", "triton{plan}")."""
        found = {i: e for i, e in EMITTERS.items() if i in self.ms}
        return found | {k: k for k in self.ms if planned(k)}

    def fastest(self) -> str:
        """The key in `ms` of tilec's fastest candidate."""
        return min(self.candidates(), key=lambda k: self.ms[k])

    def figures(self, chosen: str | None = None) -> str:
        """ "MxN tilec vs compile": with a plan survey, the `chosen` candidate's figure (where
        none is, tilec's fastest candidate's); else each emitter's ("gluon/triton")."""
        if any(planned(k) for k in self.ms):
            mine = f"{self.pct[chosen or self.fastest()]:.1f}"
        else:
            mine = "/".join(f"{self.pct[i]:.1f}" for i in EMITTERS if i in self.pct)
        return f"{self.m}x{self.n} {mine} vs {self.pct['compile']:.1f}"


def chosen(measured: list[Shape], margin: float | Callable[[Shape], float]) -> str | None:
    """The candidate a row size takes, from its shapes (each candidate measured at every one):
    None where none is faster than compile by `margin` (a fraction, or a shape's own) at every
    shape; else tilec is taken, and the candidate is the fastest over them all (the geometric mean
    of its speedups; of equals, the first measured) of those no slower than compile at any shape —
    one that ties compile at a shape and wins by most at another beats one that clears the margin
    everywhere by less (the H200's RMSNorm rows of 16384: 98.2 / 99.2% of a copy at 4096 / 16384
    rows against compile's 94.7 / 98.7, where the plan clearing the margin at both read 96.8 /
    99.7; bench/results/2026-11-27-h200-chain-sums)."""
    need = margin if callable(margin) else (lambda _: margin)
    keys = [k for k in measured[0].candidates() if all(k in s.ms for s in measured)]  # in the order measured
    if not any(all(s.ms[k] <= (1 - need(s)) * s.ms["compile"] for s in measured) for k in keys):
        return None
    fair = [k for k in keys if all(s.ms[k] <= s.ms["compile"] for s in measured)]
    return max(fair, key=lambda k: sum(math.log(s.ms["compile"] / s.ms[k]) for s in measured))


@dataclass
class Derived:
    family: str
    row_inputs: int
    elem_bytes: int
    lo: int
    hi: int
    action: str
    figures: str
    symbolic: bool = False  # a rule for rows of symbolic length (`Rule.symbolic`)
    column_sums: int = 0  # a mix-order rule's column sums (`Rule.column_sums`; 0: any)
    # rows of symbolic length: (candidate, below) of the shorter rows, ascending (`Rule.shorter`)
    shorter: tuple[tuple[str, int], ...] = ()

    def source(self, run: str) -> str:
        emitter, plan = split(self.action)  # "triton{chunk=...}": the emitter and its plan options
        extra = f", plan={plan!r}" if plan else ""
        extra += f", elem_bytes={self.elem_bytes}" if self.elem_bytes != 2 else ""
        extra += f", row_inputs={self.row_inputs}" if self.row_inputs != 1 else ""
        extra += ", symbolic=True" if self.symbolic else ""
        extra += f", column_sums={self.column_sums}" if self.column_sums else ""
        if self.shorter:
            pairs = ", ".join(f"({split(key)[1]!r}, {below})" for key, below in self.shorter)
            extra += f", shorter=({pairs},)"
        hi = "2**62" if self.hi == END else str(self.hi)
        return f"Rule({self.family!r}, {self.lo}, {hi}, {emitter!r}, {run!r}, {self.figures!r}{extra}),"


def planned(key: str) -> bool:
    """Whether `key` names an emitter with plan options ("triton{xblock=1,...}")."""
    return split(key)[0] in EMITTERS.values() and bool(split(key)[1])


# the plan names of a survey written before its records named their emitter and plan: the Triton
# pipeline's heuristic plan, and one row a program in chunks of C over W warps
OLD_PLAN = re.compile(r"c(\d+)-w(\d+)")


def surveyed(record: dict[str, Any]) -> str:
    """A plan survey record's key among a shape's implementations: "compile", an emitter's
    heuristic plan ("tilec-gluon") or an emitter with plan options ("triton{xblock=1,...}")."""
    if record["variant"] == "compile":
        return "compile"
    if "emitter" in record:
        emitter, plan = record["emitter"], record["plan"]
    elif record["variant"] == "def":
        emitter, plan = "triton", ""
    else:
        c, w = OLD_PLAN.fullmatch(record["variant"]).groups()  # type: ignore[union-attr]
        emitter, plan = "triton", f"xblock=1,chunk={c},num_warps={w}"
    return f"{emitter}{{{plan}}}" if plan else f"tilec-{emitter}"


def shapes(
    records: list[dict[str, Any]], plans: Sequence[dict[str, Any]] = ()
) -> dict[tuple[str, int, int], dict[int, list[Shape]]]:
    """(family, row inputs, element bytes) -> row bytes -> the shapes measured, each with every
    implementation the rules compare: a bench run's `records` and a plan survey's `plans` (the
    bench's figure first where both measured one; a survey record without a dtype is bf16)."""
    by_case: dict[tuple[str, int, int, str], dict[str, dict[str, float]]] = defaultdict(dict)
    for r in records:
        if (
            r.get("ok")
            and r.get("device_ms")
            and r["op"] in FAMILIES
            and r["dtype"] in ELEM_BYTES
            and fused(r["op"], r["m"], r["n"])
        ):
            by_case[(r["op"], r["m"], r["n"], r["dtype"])][r["impl"]] = {"ms": r["device_ms"], "pct": r["device_pct"]}
    for r in plans:
        if r.get("ms") and "error" not in r and r.get("op") in FAMILIES:
            case = (r["op"], r["m"], r["n"], r.get("dtype", "bf16"))
            if case[3] in ELEM_BYTES:
                by_case[case].setdefault(surveyed(r), {"ms": r["ms"], "pct": r["pct"]})
    out: dict[tuple[str, int, int], dict[int, list[Shape]]] = defaultdict(lambda: defaultdict(list))
    for (op, m, n, dtype), impls in sorted(by_case.items()):
        shape = Shape(m, n, {i: v["ms"] for i, v in impls.items()}, {i: v["pct"] for i, v in impls.items()})
        if "compile" not in impls or not shape.candidates():
            continue
        family, inputs = FAMILIES[op]
        out[(family, inputs, ELEM_BYTES[dtype])][n * ELEM_BYTES[dtype]].append(shape)
    return out


def derive(
    records: list[dict[str, Any]],
    margin: float = 0.01,
    plans: Sequence[dict[str, Any]] = (),
    covered: Sequence[Any] = (),
) -> list[Derived]:
    """The rules a run's measurements give. `covered`: rules a table holds before these (each with
    `family`, `row_inputs`, `elem_bytes`, `lo`, `hi`; a survey of the long rows alone, `--after`):
    the row sizes they cover are left to them — left out of the groups, and each rule's range
    cut around theirs (a rule may so become two)."""
    rules = []
    # a survey of chosen shapes (`bench/plans.py --shapes`) covers the rows from its shortest on:
    # rules before it in a table decide the shorter ones
    partial = any("shapes" in r.get("meta", {}) or "min_row" in r.get("meta", {}) for r in plans)
    # ... and up to the power of two past its longest row (a survey of long rows runs on)
    bounded = any("shapes" in r.get("meta", {}) for r in plans)
    for (family, inputs, elem), by_row in sorted(shapes(records, plans).items()):
        taken = [(r.lo, r.hi) for r in _of_group(covered, (family, inputs, elem))]
        groups: list[tuple[int, str, list[tuple[Shape, str | None]]]] = []  # (smallest row bytes, action, shapes)
        for row_bytes in sorted(by_row):
            if any(lo <= row_bytes < hi for lo, hi in taken):
                continue
            measured = by_row[row_bytes]
            key = chosen(measured, margin)
            action = measured[0].candidates()[key] if key else "stock"
            if groups and groups[-1][1] == action:
                groups[-1][2].extend((s, key) for s in measured)
            else:
                groups.append((row_bytes, action, [(s, key) for s in measured]))
        for k, (lo, action, shaped) in enumerate(groups):
            hi = groups[k + 1][0] if k + 1 < len(groups) else (1 << max(by_row).bit_length() if bounded else END)
            figures = "; ".join(s.figures(key) for s, key in shaped)
            for a, b in _cut(0 if k == 0 and not partial else lo, hi, taken):
                rules.append(Derived(family, inputs, elem, a, b, action, figures))
    return rules


def _of_group(rules: Sequence[Any], group: tuple[Any, ...], symbolic: bool = False) -> list[Any]:
    """The rules (`Rule`s or `Derived`) of `group` (family, row inputs, element bytes, and column
    sums where it names them), over rows of symbolic length or (`symbolic` false) of static ones:
    of a group of k column sums, the rules of k or of any number (0); of a group whose sums are
    not known (0), the rules of any."""
    sums = group[3] if len(group) > 3 else 0
    return [
        r
        for r in rules
        if (r.family, r.row_inputs, r.elem_bytes, r.symbolic) == (*group[:3], symbolic)
        and (sums == 0 or r.column_sums in (0, sums))
    ]


def _cut(lo: int, hi: int, taken: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """[lo, hi) less the ranges `taken`: the pieces left, in order."""
    pieces = [(lo, hi)]
    for t_lo, t_hi in taken:
        pieces = [p for a, b in pieces for p in ((a, min(b, t_lo)), (max(a, t_hi), b)) if p[0] < p[1]]
    return sorted(pieces)


# candidates as the autotuner names them -> keys of a Shape's implementations
AUTOTUNED = {"stock": "compile", "gluon": "tilec-gluon", "triton": "tilec-triton"}
QUOTED = 4  # kernels a rule keeping stock quotes
# A models run times each kernel once, in place, among microseconds-long kernels: a rule from it
# takes tilec where it won by 3% at every kernel of the size, beyond that timing's noise — by 1%
# (the suites' margin, at least a microsecond there) at a kernel stock runs in 100 us or more.
MODELS_MARGIN = 0.03
LONG_KERNEL_US = 100.0
LONG_MARGIN = 0.01


# the column sums of each backward op's mix-order kernel (its weights' gradients: the norm's
# weight; LayerNorm's weight and bias), for runs whose kernels' signatures do not carry them
# (recorded before they did)
COLUMN_SUMS = dict.fromkeys(
    (
        "rmsnorm_bwd",
        "gemma_rmsnorm_bwd",
        "add_rmsnorm_bwd",
        "add_rmsnorm_qkv_bwd",
        "add_rmsnorm_mlp_bwd",
        "add_gemma_rmsnorm_qkv_bwd",
        "add_gemma_rmsnorm_mlp_bwd",
    ),
    1,
) | dict.fromkeys(("layernorm_bwd", "add_layernorm_bwd", "add_layernorm_mlp_bwd"), 2)


def _column_sums(sig: Sequence[Any], op: str) -> int:
    """A kernel's column sums: its signature's (the sixth field), else, for a mix-order kernel
    recorded before signatures carried them, its op's (`COLUMN_SUMS`); 0 where neither says."""
    if len(sig) > 5:
        return int(sig[5])
    return COLUMN_SUMS.get(op, 0) if sig[0] == "mix-order" else 0


SYMBOLIC = -1  # the row bytes `model_kernels` gives a row of symbolic length (a rotary: a symbolic size)


def model_kernels(records: list[dict[str, Any]]) -> list[tuple[tuple[str, int, int, int], int, Shape]]:
    """The kernels of a run's rows (`tilec bench --models --autotune`, or `tilec bench` with
    tilec-autotune) the autotuner timed against stock:
    ((family, row inputs, element bytes, column sums: `_column_sums`), row bytes, Shape) each — the
    row bytes `SYMBOLIC` where the row length (a `pointwise-repeats` kernel: its size) is symbolic (`--dynamic`), the Shape then the sizes the graph was traced with,
    which the autotuner timed at — the same kernel timed once (a kernel read from the autotuner's
    cache repeats its timings: counted once). `Shape.ms` and `Shape.pct` both hold device
    microseconds (a kernel has no copy to compare with)."""
    out, seen = [], set()
    for row in records:
        for k in row.get("report", []):
            sig, timings = k.get("signature"), k.get("timings")
            if not sig or not timings:
                continue
            family, inputs, elem, rows, n = sig[:5]
            sums = _column_sums(sig, row.get("op", ""))
            traced = k.get("traced") or (None, None)
            m, length = rows if rows is not None else traced[0], n if n is not None else traced[1]
            if m is None or (length is None and not family.startswith("pointwise")):
                continue  # symbolic sizes the record does not resolve
            us = {AUTOTUNED.get(c, c): ms * 1000 for c, ms in timings}
            ident = (tuple(sig), m, length, tuple(sorted(us.items())))
            if "compile" not in us or ident in seen:
                continue
            seen.add(ident)
            shape = Shape(m, length or 1, us, us)  # a pointwise kernel: its elements x 1
            if shape.candidates():
                if family == "pointwise-repeats":  # by the kernel's bytes (tilec.passes.chooser.signature)
                    row_bytes = SYMBOLIC if rows is None else m * elem
                elif n is None and family != "pointwise":
                    row_bytes = SYMBOLIC
                else:
                    row_bytes = (n or 0) * elem
                out.append(((family, inputs, elem, sums), row_bytes, shape))
    return out


def _model_figure(shape: Shape, key: str) -> str:
    return f"{shape.m}x{shape.n} {shape.ms[key]:.1f} vs {shape.ms['compile']:.1f} us"


def _model_range(family: str, row_bytes: int, others: Sequence[Any]) -> tuple[int, int, bool]:
    """The rule range (lo, hi, symbolic) a models kernel's row size falls in: every size for
    pointwise kernels and for rows of symbolic length (a rule of their own), else the power-of-two
    range holding it (a `pointwise-repeats` kernel's: of its bytes), clipped where `others` (the
    static rules of its group) begin."""
    if row_bytes == SYMBOLIC:
        return 0, END, True
    if family == "pointwise":
        return 0, END, False
    lo = pow2_floor(row_bytes)
    lo, hi = max([lo, *(r.hi for r in others if r.hi <= row_bytes)]), 2 * lo
    return lo, min([hi, *(r.lo for r in others if r.lo > row_bytes)]), False


def derive_models(
    records: list[dict[str, Any]],
    base: Sequence[Any] = (),
    margin: float = MODELS_MARGIN,
    families: Sequence[str] | None = None,
) -> list[Derived]:
    """Rules for the kernels of a models run (`model_kernels`) that no rule of `base` (the GPU's
    table from other runs: `tilec.passes.chooser.Rule`s) covers; of `families` alone where given
    (a run made to measure one kind of kernel, whose others' timings are left to other runs).
    Kernels of different column sums (`Rule.column_sums`) get rules of their own where the run
    measured more than one number of sums of their family, row inputs and element size; else
    their rules hold for any number, as one measured kernel's do."""
    by: dict[tuple[str, int, int, int], dict[tuple[int, int, bool], list[Shape]]] = defaultdict(
        lambda: defaultdict(list)
    )
    kernels = model_kernels(records)
    sums_measured: dict[tuple[str, int, int], set[int]] = defaultdict(set)
    for (family, inputs, elem, sums), _, _ in kernels:
        sums_measured[family, inputs, elem].add(sums)
    kernels = [((*g[:3], g[3] if len(sums_measured[g[:3]]) > 1 else 0), b, s) for g, b, s in kernels]
    # by row size, each size's kernels in the order measured
    for group, row_bytes, shape in sorted(kernels, key=lambda k: (k[0], k[1])):
        if families is not None and group[0] not in families:
            continue
        symbolic = row_bytes == SYMBOLIC
        same = _of_group(base, group, symbolic)
        if any(symbolic or r.lo <= row_bytes < r.hi for r in same):
            continue  # the table's other rules cover it
        by[group][_model_range(group[0], row_bytes, same)].append(shape)
    rules: list[Derived] = []
    need = _models_margin(margin)
    for group, buckets in sorted(by.items()):
        # (lo, hi, symbolic, action, quoted, the shorter rows' (candidate, below), ascending)
        ranges: list[tuple[int, int, bool, str, list[tuple[Shape, str]], tuple[tuple[str, int], ...]]] = []
        for (lo, hi, symbolic), measured in sorted(buckets.items()):
            key = chosen(measured, need)
            quoted = [(s, key or s.fastest()) for s in measured]
            shorter: tuple[tuple[str, int], ...] = ()
            parts = by_length(measured, need) if key is None and symbolic else None
            if parts is not None:  # rows of symbolic length: a plan for each range of lengths
                shorter, key = parts
                quoted = [(s, next((k for k, below in shorter if s.n < below), key)) for s in measured]
            action = measured[0].candidates()[key] if key else "stock"
            last = ranges[-1] if ranges else None
            if last is not None and (last[1], last[2], last[3], last[5]) == (lo, symbolic, action, shorter):
                ranges[-1] = (last[0], hi, symbolic, action, last[4] + quoted, shorter)
            else:
                ranges.append((lo, hi, symbolic, action, quoted, shorter))
        for lo, hi, symbolic, action, quoted, shorter in ranges:
            if action == "stock":  # where stock won by most
                quoted = sorted(quoted, key=lambda sk: sk[0].ms["compile"] / sk[0].ms[sk[1]])[:QUOTED]
            figures = "; ".join(_model_figure(s, k) for s, k in quoted)
            family, inputs, elem, sums = group
            rules.append(
                Derived(
                    family,
                    inputs,
                    elem,
                    lo,
                    hi,
                    action,
                    figures,
                    symbolic=symbolic,
                    column_sums=sums,
                    shorter=shorter,
                )
            )
    return rules


def _models_margin(margin: float) -> Callable[[Shape], float]:
    """The margin a kernel of the models' runs must win by: `margin`, `LONG_MARGIN` for a kernel
    stock takes `LONG_KERNEL_US` or more on."""
    return lambda s: min(margin, LONG_MARGIN) if s.ms["compile"] >= LONG_KERNEL_US else margin


# the most plans a kernel over rows of symbolic length takes by length (each one more variant
# built, compiled when a row of its range first comes): on the H200's survey
# (bench/results/2026-11-28-h200-symbolic-survey) the geometric mean speedup over stock across nine
# lengths is, with one plan for the short rows and one for the rest, 1.76x for softmax and 1.59x
# for LayerNorm; with three plans 1.92x and 1.71x, but softmax's rows of 8192 13% slower than with
# two; with four 1.95x and 1.73x, no length slower than with two
MOST_PLANS_BY_LENGTH = 4


def by_length(
    measured: list[Shape], need: Callable[[Shape], float], most: int = MOST_PLANS_BY_LENGTH
) -> tuple[tuple[tuple[str, int], ...], str] | None:
    """For kernels over rows of symbolic length that no one plan takes (`chosen`: it must win at
    every length measured, and short rows want small chunks, long rows wide programs): the lengths
    measured cut into at most `most` ranges, each with a Triton plan `chosen` takes there (the
    kernel launches one of them by its row length: tilec.runtime.launch's `split`), the cut of
    the most speedup (the sum of the log speedups over every length measured): ((the shorter
    ranges' candidates, each with the length its range ends below), the longest range's
    candidate); None where no cut has a plan for every range."""
    lengths = sorted({s.n for s in measured})
    best: tuple[float, tuple[tuple[str, int], ...], str] | None = None
    for parts in range(2, most + 1):
        for cuts in itertools.combinations(lengths[1:], parts - 1):
            bounds = [0, *cuts, END]
            keys = []
            for lo, hi in itertools.pairwise(bounds):
                key = chosen([s for s in measured if lo <= s.n < hi], need)
                if key is None or not planned(key) or split(key)[0] != "triton":
                    break
                keys.append(key)
            if len(keys) < parts or any(a == b for a, b in itertools.pairwise(keys)):
                continue
            gain = sum(math.log(s.ms["compile"] / s.ms[keys[sum(s.n >= c for c in cuts)]]) for s in measured)
            if best is None or gain > best[0]:
                best = (gain, tuple(zip(keys[:-1], cuts)), keys[-1])
    return best[1:] if best is not None else None


def read(path: str | None) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()] if path else []


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="?", help="a tilec bench run's results.jsonl")
    p.add_argument("--plans", help="a plan survey's plans.jsonl (bench/plans.py) from the same GPU")
    p.add_argument(
        "--after",
        action="append",
        default=[],
        help="a plan survey whose rules come first in the table (a survey of the long rows alone): "
        "this run's rules leave the row sizes it covers to it",
    )
    p.add_argument(
        "--kernels",
        "--models",
        dest="models",
        help="a folder of runs with the autotuner on: each models.jsonl (tilec bench --models --autotune) and "
        "results.jsonl (tilec bench --impls tilec-autotune,...) under it",
    )
    p.add_argument(
        "--families",
        help="with --kernels: the kernels of these families alone (comma-separated: mix-order,...)",
    )
    p.add_argument(
        "--margin",
        type=float,
        help=f"how much faster tilec must be (device time; default 0.01, with --kernels {MODELS_MARGIN})",
    )
    args = p.parse_args(argv)
    if args.models:
        if args.results or args.plans:
            p.error("--kernels derives rules from the runs under its folder alone")
        families = args.families.split(",") if args.families else None
        return _main_models(Path(args.models), MODELS_MARGIN if args.margin is None else args.margin, families)
    if not args.results and not args.plans:
        p.error("give a tilec bench run's results.jsonl, a plan survey (--plans), or both")
    records, plans = read(args.results), read(args.plans)
    args.margin = 0.01 if args.margin is None else args.margin
    gpu = one_gpu([*records, *plans])
    if gpu is None:
        return 2
    run = run_name(Path(args.results or args.plans).resolve().parent)
    before: list[Derived] = []
    for path in args.after:
        before += derive([], args.margin, read(path), before)
    derived = derive(records, args.margin, plans, before)
    if not derived:
        print("bench/rules.py: no shape holds compile and a tilec candidate", file=sys.stderr)
        return 2
    print(f"# {gpu}: derived by bench/rules.py from {run} (margin {args.margin:g})")
    for d in derived:
        print(d.source(run))
    return 0


def one_gpu(records: list[dict[str, Any]]) -> str | None:
    """The one GPU the records name (their `meta`), or None (said on stderr) where they name none
    or several."""
    gpus = {r.get("meta", {}).get("gpu") for r in records} - {None}
    if len(gpus) != 1:
        print(f"bench/rules.py: the run must come from one GPU, not {sorted(gpus) or 'none named'}", file=sys.stderr)
        return None
    return str(gpus.pop())


def run_name(folder: Path) -> str:
    """A run's name as rules cite it: its folder relative to bench/results/ (a folder elsewhere,
    not committed yet, by its path: name it under bench/results/ before committing)."""
    try:
        return str(folder.resolve().relative_to(RESULTS))
    except ValueError:
        return str(folder.resolve())


def models_records(folder: Path) -> list[dict[str, Any]]:
    """The rows of every models.jsonl (one per size run) and results.jsonl under `folder`."""
    paths = sorted([*folder.rglob("models.jsonl"), *folder.rglob("results.jsonl")])
    return [r for path in paths for r in read(str(path))]


def _main_models(folder: Path, margin: float, families: Sequence[str] | None = None) -> int:
    from tilec.passes.chooser import TABLES

    records = models_records(folder)
    gpu = one_gpu(records)
    if gpu is None:
        return 2
    run = run_name(folder)
    base = [r for r in TABLES.get(gpu, ()) if r.run != run]
    derived = derive_models(records, base, margin, families)
    if not derived:
        print("bench/rules.py: no kernel of the run was timed against stock outside the table", file=sys.stderr)
        return 2
    print(f"# {gpu}: derived by bench/rules.py --kernels from {run} (margin {margin:g}), after its other runs' rules")
    for d in derived:
        print(d.source(run))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
