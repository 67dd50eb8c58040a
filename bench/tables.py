"""A GPU's chooser table, derived from its runs and written into `tilec/passes/chooser.py`.

    python bench/tables.py H100                                  # rewrite the H100's table from its runs
    python bench/tables.py H200 --insert RUN [--after RUN] [--comment "..."]

A GPU's table (`chooser.TABLES`) is `bench/rules.py` on its runs, in the order
`bench/table_runs.json` lists them: plan surveys (`plans.jsonl`), `tilec bench` runs
(`results.jsonl`) and, named "kernels:RUN", runs whose kernels the autotuner timed in place
(`bench/rules.py --kernels`; "kernels[FAMILY,...]:RUN" for those families' kernels alone,
`--families`); each run's rules leave the row sizes earlier runs cover to them.
tests/passes/test_chooser.py checks the committed table is exactly that. This script writes it:
each run's block of `Rule(...)` entries in the table is replaced by what the run derives now
(the comments above a block are kept); `--insert` adds a run to the GPU's list (first, or after
`--after`) and its block to the table, under `--comment` (lines of text, each becoming a `#` line;
one `--comment` may hold several lines).
Run `ruff format tilec/passes/chooser.py` after it (the rules are written one a line).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RUNS = BENCH / "table_runs.json"
CHOOSER = ROOT / "tilec" / "passes" / "chooser.py"
TABLE_NAMES = {"H100": "RULES", "H200": "H200_RULES"}  # each GPU's tuple in chooser.py

sys.path.insert(0, str(BENCH))
import rules as tool  # noqa: E402  (bench/ is no package)


def runs(gpu: str) -> list[str]:
    """The GPU's runs, first first ("kernels:RUN" for a run of kernels timed in place)."""
    return list(json.loads(RUNS.read_text())[gpu])


def parse(named: str) -> tuple[str, bool, list[str] | None]:
    """A run as bench/table_runs.json names it: (its folder, whether its kernels were timed in
    place, the families its rules are derived for or None for all): "RUN", "kernels:RUN",
    "kernels[mix-order]:RUN" (`bench/rules.py --kernels RUN --families mix-order`)."""
    if not named.startswith("kernels"):
        return named, False, None
    head, _, run = named.partition(":")
    families = head.removeprefix("kernels").strip("[]")
    return run, True, families.split(",") if families else None


def derive(names: list[str], results: Path = ROOT / "bench" / "results") -> list[tuple[str, list[str]]]:
    """Each run's rules as Python source, in table order: (run, sources)."""
    from tilec.passes.chooser import Rule

    table: tuple[Any, ...] = ()
    out: list[tuple[str, list[str]]] = []
    for named in names:
        run, kernels, families = parse(named)
        folder = results / run
        if kernels:
            derived = tool.derive_models(tool.models_records(folder), table, families=families)
        else:
            survey, bench = folder / "plans.jsonl", folder / "results.jsonl"
            found = [
                json.loads(line) for line in (survey if survey.exists() else bench).read_text().splitlines() if line
            ]
            derived = (
                tool.derive([], plans=found, covered=table) if survey.exists() else tool.derive(found, covered=table)
            )
        sources = [d.source(run) for d in derived]
        table += tuple(r for s in sources for r in eval(s, {"Rule": Rule}))
        out.append((run, sources))
    return out


def rewrite(
    source: str, table: str, blocks: list[tuple[str, list[str]]], new: tuple[str, str | None, list[str]] | None
) -> str:
    """`source` (chooser.py's text) with `table`'s rules replaced run by run by `blocks`; `new`:
    (run, the run it follows or None for first, comment lines) for a run the table lacks."""
    lines = source.splitlines(keepends=True)
    node = next(
        n for n in ast.parse(source).body if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == table
    )
    assert isinstance(node.value, ast.Tuple)
    spans: dict[str, list[tuple[int, int]]] = {}
    for entry in node.value.elts:
        assert isinstance(entry, ast.Call) and entry.end_lineno is not None
        spans.setdefault(ast.literal_eval(entry.args[4]), []).append((entry.lineno, entry.end_lineno))
    derived = dict(blocks)
    edits: list[tuple[int, int, str]] = []  # (first line, last line, text), 1-based, inclusive
    for run, where in spans.items():
        between = [line for (_, end), (start, _) in pairwise(where) for line in lines[end : start - 1]]
        if any(line.strip() for line in between):
            raise SystemExit(f"bench/tables.py: {run}'s rules in {table} are not one block")
        if run not in derived:
            raise SystemExit(f"bench/tables.py: {table} holds rules of {run}, which the GPU's runs do not list")
        edits.append((where[0][0], where[-1][1], "".join(f"    {s}\n" for s in derived[run])))
    if new is not None:
        run, after, comment = new
        # each line of a comment a `#` line (one --comment may hold several)
        notes = "".join(f"    # {line}".rstrip() + "\n" for c in comment for line in c.splitlines())
        text = notes + "".join(f"    {s}\n" for s in derived[run])
        if after is None:
            edits.append((node.value.lineno + 1, node.value.lineno, text))  # before the table's first line
        else:
            end = spans[after][-1][1]
            edits.append((end + 1, end, text))
    for first, last, text in sorted(edits, reverse=True):
        lines[first - 1 : last] = [text]
    return "".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("gpu", choices=sorted(TABLE_NAMES), help="whose table")
    p.add_argument("--insert", help="a run under bench/results to add to the GPU's runs (a survey or bench run)")
    p.add_argument("--after", help="the run it follows (default: first)")
    p.add_argument("--comment", action="append", default=[], help="a line of the comment above its rules")
    args = p.parse_args(argv)
    names = runs(args.gpu)
    new = None
    if args.insert:
        if args.insert in names:
            p.error(f"{args.insert} is one of the {args.gpu}'s runs already")
        if args.after and args.after not in names:
            p.error(f"{args.after} is not one of the {args.gpu}'s runs")
        names.insert(names.index(args.after) + 1 if args.after else 0, args.insert)
        # the table names a run by its folder (`parse`: the rest says how its rules are derived)
        new = (parse(args.insert)[0], parse(args.after)[0] if args.after else None, args.comment)
    blocks = derive(names)
    empty = [run for run, sources in blocks if not sources]
    if empty:  # covered whole by the runs before them: their comments in the table would be stale
        p.error(f"these runs derive no rule now (the runs before them cover their rows): {', '.join(empty)}")
    CHOOSER.write_text(rewrite(CHOOSER.read_text(), TABLE_NAMES[args.gpu], blocks, new))
    if args.insert:
        listed = json.loads(RUNS.read_text())
        listed[args.gpu] = names
        RUNS.write_text(json.dumps(listed, indent=2) + "\n")
    print(f"{args.gpu}: {sum(len(s) for _, s in blocks)} rules from {len(blocks)} runs written to {CHOOSER}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
