"""Pipelines: parsing `-p` text, named pipelines, and running passes with the verifier between them."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tilec.ir.core import Module
from tilec.ir.errors import TilecError
from tilec.ir.printer import print_kernel, print_module
from tilec.ir.target import DEFAULT
from tilec.ir.verify import verify
from tilec.passes.base import Pass, PipelineError, Remark, collecting_remarks, make_pass

# Named pipelines expand in place; they are filled in by tilec.passes.pipelines.
NAMED_PIPELINES: dict[str, str] = {}

_ITEM = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*(?:\{(.*)\})?\s*$", re.S)


def _split_top(text: str) -> list[str]:
    """Splits on commas outside braces."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced '}}' in pipeline '{text}'")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise PipelineError(f"unbalanced '{{' in pipeline '{text}'")
    parts.append("".join(cur))
    return [p for p in (s.strip() for s in parts) if p]


def parse_pipeline(text: str, _depth: int = 0) -> list[Pass]:
    """`canonicalize,cse,reuse{cache=smem}` → pass objects; named pipelines expand in place."""
    if _depth > 8:
        raise PipelineError("named pipelines nest too deeply")
    passes: list[Pass] = []
    for item in _split_top(text):
        m = _ITEM.match(item)
        if not m:
            raise PipelineError(f"cannot read pipeline item '{item}' (expected name or name{{key=value,...}})")
        name, opts_text = m.group(1), m.group(2)
        if name in NAMED_PIPELINES:
            if opts_text:
                raise PipelineError(f"named pipeline '{name}' takes no options; set them on its passes")
            passes.extend(parse_pipeline(NAMED_PIPELINES[name], _depth + 1))
            continue
        options: dict[str, str] = {}
        for kv in _split_top(opts_text or ""):
            if "=" not in kv:
                raise PipelineError(f"option '{kv}' of pass '{name}' needs the form key=value")
            k, v = kv.split("=", 1)
            if k.strip() in options:
                raise PipelineError(f"option '{k.strip()}' of pass '{name}' given twice")
            options[k.strip()] = v.strip()
        passes.append(make_pass(name, options))
    return passes


@dataclass
class PassTiming:
    name: str
    seconds: float


@dataclass
class PassManager:
    passes: Sequence[Pass]
    verify_each: bool = True
    smem_budget: int = DEFAULT.smem_per_block
    print_after_all: Callable[[str], None] | None = None
    timings: list[PassTiming] = field(default_factory=list)
    # a list: why passes left kernels as they were is appended to it (None: not collected)
    remarks: list[Remark] | None = None

    def run(self, module: Module) -> Module:
        for p in self.passes:
            start = time.perf_counter()
            if self.remarks is None:
                p.run(module)
            else:
                self._run_remarked(p, module, self.remarks)
            self.timings.append(PassTiming(p.describe(), time.perf_counter() - start))
            if self.verify_each:
                try:
                    verify(module, self.smem_budget)
                except TilecError as e:
                    raise type(e)(f"after pass '{p.describe()}': {e.message}", e.loc) from None
            if self.print_after_all is not None:
                self.print_after_all(f"// -----// IR after {p.describe()} //----- //\n{print_module(module)}")
        return module

    @staticmethod
    def _run_remarked(p: Pass, module: Module, out: list[Remark]) -> None:
        """Runs `p`, collecting its remarks; a kernel it left unchanged without one gets `p.unchanged`."""
        before = {k.name: print_kernel(k) for k in module.kernels}
        with collecting_remarks() as remarks:
            p.run(module)
        said = {r.kernel for r in remarks}
        for k in module.kernels:
            if k.name not in said and before.get(k.name) == print_kernel(k):
                remarks.append(Remark(p.name, k.name, p.unchanged))
        out.extend(remarks)


def run_pipeline(
    module: Module, pipeline: str | Sequence[Pass], verify_each: bool = True, remarks: list[Remark] | None = None
) -> Module:
    """Runs the passes on `module`; with `remarks`, appends why passes left kernels as they were."""
    passes = parse_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
    return PassManager(passes, verify_each, remarks=remarks).run(module)
