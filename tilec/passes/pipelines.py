"""The named pipelines, each one list of passes with the reason for its place.

`-p gluon-default` and `-p triton-default` expand to these; options of the passes in them can be
changed by writing the passes out instead.
"""

from __future__ import annotations

from tilec.passes.manager import NAMED_PIPELINES

GLUON_DEFAULT = [
    # a pointwise kernel's costly values that repeat across its block (a rotary embedding's cos and
    # sin, the same for every head of a token) computed once a column: it binds XBLOCK, so first
    "repeats",
    # a row's sum of a one-hot function of the column (the cross-entropy backward's one-hot
    # gradient, made from the label) computed from the label once a row: no loop over the row
    # that loads none of it (on the logical form, before the plan chunks it)
    "onehot-sums",
    # concrete block sizes, warps and layouts first: every later pass works on real shapes; a row
    # block's rows fit in shared memory (128 KiB), so reuse can cache them
    "plan{row_block_bytes=131072}",
    # running sums whose chunk sums cross warps (a column reduction's; a row spread over several
    # warps) carried as whole tiles: one cross-warp reduction per loop, not one per chunk; the
    # same over a cluster CTA's unrolled chunks (RMSNorm 2048x262144 in clusters of 8 on the H200:
    # 84.3% of a copy against 82.7, with the plans re-surveyed no loss elsewhere;
    # bench/results/2026-11-27-h200-chain-sums)
    "accumulate",
    # a row that starts off a 16-byte boundary (a vocabulary of 50257), one row per program: the
    # chunks start on a 128-byte line, the head and the rest masked, the chunks between them
    # 16-byte vectors. On a line, not only a vector: softmax 32768x50257 on the H200 in chunks of
    # 8192 over 8 warps 80.4% of a copy against 76.3 (bench/results/2026-11-29-h200-line-rows).
    # Rows that start on 16 bytes stay whole: TMA reads them (softmax 4096x50264: 83.4% whole,
    # 80.8 split)
    "align-rows{line=128}",
    "canonicalize",  # loops of one chunk inline, masks the plan made trivial fold
    "peel",  # a partial last chunk: a full-chunk main loop and a masked tail
    "canonicalize",  # the main loop's masks fold; the tail inlines
    # Welford statistics (LayerNorm's) of the main loop's chunks, or of a cluster CTA's unrolled
    # chunks, kept per lane where a chunk's reductions cross warps: one update an element, not two
    # reductions across the warps a chunk (LayerNorm 4096x131072 in clusters of 4 on the H100:
    # 94.2% of a copy against 90.8; bench/results/2026-11-27-h100-welford-lanes)
    "welford-lanes",
    "cse",  # equal index math and masks merge, so equal loads look equal
    # a plan's `row_cache` (a row past shared memory, or a smaller cache for more programs an
    # SM): the loops over the row split at the cached columns, the rest read again
    "split-rows",
    # each input row read from HBM once: TMA into shared memory, every phase reads it (rows TMA
    # cannot describe, a vocabulary of 50257, by cp.async in align-rows' aligned chunks)
    "reuse{cache=auto}",
    "cse",  # the constants reuse created merge
    # softmax's statistics kept per lane over chunks in shared memory: each lane's maximum over
    # the chunks, then its sum of exp over them read again, one reduction across the warps each,
    # not two a chunk. A cluster CTA's unrolled chunks (softmax 2048x262144 in the H200's cluster
    # plan: 80.7% of a copy against 74.8; bench/results/2026-11-27-h200-softmax-lanes), and loops
    # over a row cached by reuse (after it: the loops' chunks must come from shared memory)
    "softmax-lanes",
    # a plan's `reverse` and `stream`: the loops still reading a row again (past a partial cache)
    # run from its last chunk back, the rows written are stored evict-first (after reuse, which
    # matches sibling loops' loads by their offsets)
    "reread",
    # the cache's copies become a ring with all chunks resident. Not `persistent` nor
    # `warp-specialize`: on the H100 one program per row block, several per SM, measured faster
    # (bench/results/2026-11-22-variants.md); both stay available by writing the passes out
    "pipeline",
    "canonicalize",  # the index math the pass wrote folds
    "cse",  # and merges
    "fp32-at-use",  # after the last CSE (it would merge the copies): casts at each use, caches stay narrow
    "dce",  # what the rewrites left unused goes
    # a cluster plan's `prefetch`: each chunk after the exchange reads its other inputs (a norm's
    # weight) that many chunks ahead (after the last cse and dce: nothing merges the moved reads'
    # index math back after them)
    "early-loads",
    # last, once no pass moves or merges the reads any more: a CTA barrier between two reads of one
    # shared-memory buffer, or Triton's CSE would merge the second into the first and keep the row
    # in registers between phases
    "separate-reads",
]

TRITON_DEFAULT = [
    # as in the Gluon pipeline: Llama's rotary embedding at 4x1024x16x128 on the H100 13.6 us, stock's
    # 24.4, this pipeline's without it 27.3 (bench/results/2026-11-26-h100-rotary)
    "repeats",
    # as in the Gluon pipeline: the cross-entropy backward's one-hot sums from the label. Its load-free
    # loop also kept align-rows from narrowing the logits' loop's first and last pieces
    "onehot-sums",
    # a banded kernel's row past 8192 elements in chunks of 8192, each with its own column sums and
    # reading its chunk again for dx, where its column sums hold more than 16384 values: as one
    # tile, LayerNorm's two (dW, dB) beside the whole row spill (its backward at rows of 16384 on
    # the H100: 61.6-67.5% of a copy in chunks, 52.1-56.1% as one tile); RMSNorm's one column sum
    # measured as fast or faster as one tile (bench/results/2026-11-26-h100-band-chunks)
    "band-chunks{chunk=8192,column_elems=16384}",
    # whole rows in one tile where registers allow (the register cache needs it); longer rows loop
    # over chunks of 8192, one row per program, 16 warps: on the H100 that measured 65-88% of a copy
    # where chunks of 2048 over two rows measured 64-65% (bench/results/2026-11-22-triton-long-rows.md);
    # the chooser's rules and the autotuner give long rows other chunks and warps per op and length
    # (bench/results/2026-11-25-long-rows)
    "plan{max_rblock=16384,chunk=8192}",
    "accumulate",  # as in the Gluon pipeline: sums across warps reduced once per loop (long rows)
    # as in the Gluon pipeline, misaligned rows read in aligned chunks; the first piece, the rest
    # and the last partial vector as tiles of their own width, not whole chunks: softmax over rows
    # of 50257 on the H100 from 68.0 to 74.9% of a copy at the heuristic plan, LayerNorm 39.9 to
    # 60.2 (bench/results/2026-11-26-h100-narrow-ends). Running sums that `accumulate` carries
    # across the pieces as whole chunks keep the chunk's width. The whole chunks start on a
    # 128-byte line: the cross-entropy backward at 8192x50257 on the H200 451 us against 470
    # (rows on lines, 50304: 423; bench/results/2026-11-29-h200-line-rows). Rows on 16 bytes stay
    # whole, as the rules measured them (`reread` turns their second read around)
    "align-rows{narrow=true,line=128}",
    "canonicalize",  # loops of one chunk inline, masks the plan made trivial fold
    # a banded kernel's column sums (a norm's weight gradients) carried as the row block's tile
    # across its band, reduced over the block's rows once after it, not through shared memory
    # every row block (its row's one-chunk loop inlined first)
    "accumulate{where=bands}",
    "peel",  # a partial last chunk: a full-chunk main loop and a masked tail
    "canonicalize",  # the main loop's masks fold; the tail inlines
    # the main loop's Welford statistics (LayerNorm's, a row over several warps) kept per lane:
    # one update an element and one combine after the loop, not two reductions across the warps
    # a chunk (LayerNorm 4096x32768 on the H200: 91.3% of a copy against 83.7;
    # bench/results/2026-11-27-h200-welford-lanes)
    "welford-lanes",
    "cse",  # equal index math and masks merge, so equal loads look equal
    "reuse{cache=registers}",  # a row loaded twice is loaded once and kept in registers
    # a plan's `lanes_reread`: softmax's statistics of a row in chunks kept per lane, a loop of
    # maxima and one of sums of exp each reading the chunks again (from L1 while the rows in flight
    # fit there), no reduction across warps inside a loop. Softmax 4096x16384 on the H200 97.9% of
    # a copy in a probe against 95.7 for the one-tile plan (bench/results/2026-11-28-h200-lanes)
    "softmax-lanes",
    # a plan's `groups`: a loop's softmax statistics kept per group of a thread's consecutive
    # elements, one exp an element and no reduction across threads inside the loop (a
    # hand-written log-sum-exp of this form read 4.07 TB/s of logits on the H200 against tilec's
    # 3.1: bench/results/2026-11-29-h200-lse-probe). After softmax-lanes: its per-lane form, where
    # a plan asks for it, takes the loops first
    "softmax-groups",
    # a plan's `reverse` and `stream`, for a row read twice: its second loop from the last chunk
    # back, the rows written evict-first, so more of the row is still in L2 when read again. On
    # the H200 RMSNorm 2048x262144 from 66.3 to 73.7% of a copy, softmax 8192x65536 75.4 to 80.1;
    # elsewhere slower, so the chooser's rules take them per op and length (docs/performance.md)
    "reread",
    "fp32-at-use",  # after CSE: the kept row stays bf16/fp16, each phase widens it
    "dce",  # what the rewrites left unused goes
]


def gluon_form(
    plan: str = "row_block_bytes=131072",
    cache: str = "smem",
    persistent: bool = False,
    stages: int | None = None,
    specialize: bool = False,
    pipelined: bool = True,
) -> str:
    """A form of the Gluon pipeline with its choices open (the passes and their order as in
    GLUON_DEFAULT, which is `gluon_form(cache="auto")`): the plan pass's options, the cache,
    `persistent`, the ring's `stages` (None: the pass chooses), `warp-specialize`, and whether
    the cache becomes a ring at all. Every form ends with `separate-reads`, as GLUON_DEFAULT does.
    The tests and the variant survey name their forms with it."""
    parts = [
        "repeats",
        "onehot-sums",
        f"plan{{{plan}}}",
        "accumulate,align-rows{line=128},canonicalize,peel,canonicalize,welford-lanes,cse,split-rows",
        f"reuse{{cache={cache}}}",
        "cse",
        "softmax-lanes",
        "reread",
    ]
    if not pipelined:
        return ",".join([*parts, "fp32-at-use,dce,early-loads,separate-reads"])
    if persistent:
        parts.append("persistent")
    parts.append("pipeline" if stages is None else f"pipeline{{stages={stages}}}")
    if specialize:
        parts.append("warp-specialize")
    return ",".join([*parts, "canonicalize,cse,fp32-at-use,dce,early-loads,separate-reads"])


NAMED_PIPELINES["gluon-default"] = ",".join(GLUON_DEFAULT)
# A banded kernel (a norm's backward with its weights' gradients) as one program a band, its row
# in chunks of 4096 cached in a ring of shared-memory slots that is also the next row's prefetch
# (`band-ring`), one row a step over 16 warps: the Gluon pipeline with `band-chunks` before its
# plan and `band-ring` after its cache (bench/results/2026-11-27-h100-ring-backward)
GLUON_RING = [
    "band-chunks{chunk=4096,column_elems=0}",
    *(
        "plan{row_block_bytes=131072,xblock=1,num_warps=16}" if p.startswith("plan{") else p
        for p in GLUON_DEFAULT
        if not p.startswith("reuse{")
    ),
]
GLUON_RING.insert(GLUON_RING.index("split-rows") + 1, "band-ring")
NAMED_PIPELINES["gluon-ring"] = ",".join(GLUON_RING)
# A banded kernel whose column sums outgrow one CTA (RMSNorm's at rows past 32768, LayerNorm's two
# past 16384): each row split across a cluster of 2 CTAs, each CTA's slice in a ring of
# shared-memory buffers that is also the next row's prefetch, the row's statistics exchanged by the
# push form of tile.cluster_gather (`band-cluster`, which lays every tile out itself); `accumulate`
# before `canonicalize` (which would fold the chunk sums' chain's zero start away): the statistics'
# chunk sums carried as one tile, one reduction across the warps a row. The form of
# bench/ring_bwd_probe.py's cluster kernels that measured best on the H100 and the H200, clusters
# of 2, 8 warps, chunks of 2048 (bench/results/2026-11-28-h100-cluster-ring, -h200-cluster-ring)
GLUON_CLUSTER_RING = [
    "band-cluster{ctas=2,chunk=2048,warps=8,exchange=push}",
    "accumulate",
    "canonicalize",
    "cse",
    "fp32-at-use",
    "dce",
]
NAMED_PIPELINES["gluon-cluster-ring"] = ",".join(GLUON_CLUSTER_RING)
NAMED_PIPELINES["triton-default"] = ",".join(TRITON_DEFAULT)


def with_plan(pipeline: str, options: str) -> str:
    """`pipeline` (a name or a pipeline string) written out, with `options` ("xblock=1,num_warps=4")
    set on its first `plan` pass, over that pass's own (the chooser's and the autotuner's plan
    variants). The options are checked as any pipeline's are."""
    return with_options(pipeline, "plan", options)


def with_options(pipeline: str, name: str, options: str) -> str:
    """`pipeline` written out, with `options` set on its first pass `name` (`with_plan` for any
    pass: "band-chunks", "chunk=0")."""
    from tilec.passes.base import PipelineError
    from tilec.passes.manager import parse_pipeline

    passes = parse_pipeline(pipeline)
    where = next((n for n, p in enumerate(passes) if p.name == name), None)
    if where is None:
        raise PipelineError(f"pipeline '{pipeline}' has no {name} pass to set {options} on")
    given = parse_pipeline(f"{name}{{{options}}}")[0]
    keys = [kv.split("=", 1)[0].strip() for kv in options.split(",") if kv.strip()]
    old = passes[where]
    passes[where] = type(old)(**{**old.options(), **{k: getattr(given, k) for k in keys}})
    return ",".join(p.describe() for p in passes)
