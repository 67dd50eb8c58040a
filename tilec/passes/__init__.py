"""IR → IR passes, their registry and named pipelines."""

from tilec.passes import (  # noqa: F401  (register the passes)
    accumulate,
    align_rows,
    band_chunks,
    band_cluster,
    band_ring,
    canonicalize,
    cluster_rows,
    cse,
    dce,
    early_loads,
    fp32_at_use,
    onehot_sums,
    peel,
    persistent,
    pipeline,
    pipelines,
    plan,
    repeats,
    reread,
    reuse,
    separate_reads,
    softmax_groups,
    softmax_lanes,
    specialize,
    split_rows,
    warp_specialize,
    welford_lanes,
)
from tilec.passes.base import PASSES, Pass, PipelineError, Remark, register
from tilec.passes.manager import NAMED_PIPELINES, PassManager, parse_pipeline, run_pipeline

__all__ = [
    "NAMED_PIPELINES",
    "PASSES",
    "Pass",
    "PassManager",
    "PipelineError",
    "Remark",
    "parse_pipeline",
    "register",
    "run_pipeline",
]
