"""The named pipelines, each one list of passes with the reason for its place.

`-p gluon-default` and `-p triton-default` expand to these; options of the passes in them can be
changed by writing the passes out instead.
"""

from __future__ import annotations

from tilec.passes.manager import NAMED_PIPELINES

GLUON_DEFAULT = [
    # concrete block sizes, warps and layouts first: every later pass works on real shapes; a row
    # block's rows fit in shared memory (128 KiB), so reuse can cache them
    "plan{row_block_bytes=131072}",
    "canonicalize",  # loops of one chunk inline, masks the plan made trivial fold
    "peel",  # a partial last chunk: a full-chunk main loop and a masked tail
    "canonicalize",  # the main loop's masks fold; the tail inlines
    "cse",  # equal index math and masks merge, so equal loads look equal
    "reuse{cache=auto}",  # each input row read from HBM once: TMA into shared memory, every phase reads it
    "cse",  # the constants reuse created merge
    # the cache's copies become a ring with all chunks resident. Not `persistent` nor
    # `warp-specialize`: on the H100 one program per row block, several per SM, measured faster
    # (bench/results/2026-11-22-variants.md); both stay available by writing the passes out
    "pipeline",
    "canonicalize",  # the index math the pass wrote folds
    "cse",  # and merges
    "fp32-at-use",  # after the last CSE (it would merge the copies): casts at each use, caches stay narrow
    "dce",  # what the rewrites left unused goes
]

TRITON_DEFAULT = [
    # whole rows in one tile where registers allow (the register cache needs it); longer rows loop
    # over chunks of 8192, one row per program, 16 warps: on the H100 that measured 65-88% of a copy
    # where chunks of 2048 over two rows measured 64-65% (bench/results/2026-11-22-triton-long-rows.md)
    "plan{max_rblock=16384,chunk=8192}",
    "canonicalize",  # loops of one chunk inline, masks the plan made trivial fold
    "peel",  # a partial last chunk: a full-chunk main loop and a masked tail
    "canonicalize",  # the main loop's masks fold; the tail inlines
    "cse",  # equal index math and masks merge, so equal loads look equal
    "reuse{cache=registers}",  # a row loaded twice is loaded once and kept in registers
    "fp32-at-use",  # after CSE: the kept row stays bf16/fp16, each phase widens it
    "dce",  # what the rewrites left unused goes
]

NAMED_PIPELINES["gluon-default"] = ",".join(GLUON_DEFAULT)
NAMED_PIPELINES["triton-default"] = ",".join(TRITON_DEFAULT)


def with_plan(pipeline: str, options: str) -> str:
    """`pipeline` (a name or a pipeline string) written out, with `options` ("xblock=1,num_warps=4")
    set on its first `plan` pass, over that pass's own (the chooser's and the autotuner's plan
    variants)."""
    from tilec.passes.manager import PipelineError, _split_top

    items = _split_top(NAMED_PIPELINES.get(pipeline.strip(), pipeline))
    while any(i.strip() in NAMED_PIPELINES for i in items):
        items = [p for i in items for p in _split_top(NAMED_PIPELINES.get(i.strip(), i))]
    for n, item in enumerate(items):
        name, _, rest = item.strip().partition("{")
        if name.strip() != "plan":
            continue
        merged: dict[str, str] = {}
        for kv in [*rest.rstrip("}").split(","), *options.split(",")]:
            if "=" in kv:
                k, v = kv.split("=", 1)
                merged[k.strip()] = v.strip()
        items[n] = "plan{" + ",".join(f"{k}={v}" for k, v in merged.items()) + "}"
        return ",".join(i.strip() for i in items)
    raise PipelineError(f"pipeline '{pipeline}' has no plan pass to set {options} on")
