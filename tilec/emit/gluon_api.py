"""The Gluon API names of the installed Triton.

tilec targets Triton 3.6's Gluon; a few calls were renamed later (3.7: `gl.thread_barrier` →
`gl.barrier`, `mbarrier.expect`'s byte argument renamed; 3.8: `tma.async_copy_global_to_shared` →
`tma.async_load`, `..._shared_to_global` → `tma.async_store`, cp.async's
`async_copy.async_copy_global_to_shared` → `async_copy.async_load`, the old names raise from 3.9;
`worker_num_regs` optional from 3.7). The emitter asks here which spelling to print.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class GluonAPI:
    cta_barrier: str
    tma_load: str
    tma_store: str
    cp_async: str = "async_copy.async_copy_global_to_shared"


@functools.cache
def gluon_api() -> GluonAPI:
    try:
        from triton.experimental.gluon import language as gl
        from triton.experimental.gluon.language.nvidia.ampere import async_copy
        from triton.experimental.gluon.language.nvidia.hopper import tma
    except ImportError:  # a Triton without Gluon: print the 3.6 names
        return GluonAPI("gl.thread_barrier", "tma.async_copy_global_to_shared", "tma.async_copy_shared_to_global")
    return GluonAPI(
        cta_barrier="gl.barrier" if hasattr(gl, "barrier") else "gl.thread_barrier",
        tma_load="tma.async_load" if hasattr(tma, "async_load") else "tma.async_copy_global_to_shared",
        tma_store="tma.async_store" if hasattr(tma, "async_store") else "tma.async_copy_shared_to_global",
        cp_async="async_copy.async_load"
        if hasattr(async_copy, "async_load")
        else "async_copy.async_copy_global_to_shared",
    )
