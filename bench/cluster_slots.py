"""How many thread-block clusters of C CTAs a GPU runs at once (`Target.cluster_slots`).

    python bench/cluster_slots.py [--sizes 2,4,8,16] [--per-sm 1,2]   # on a Hopper GPU: JSON lines

A cluster's CTAs run on SMs of one GPC (graphics processing cluster), so a GPU whose GPCs have SMs
left over after their clusters runs fewer than SMs / C clusters at once: a grid of more clusters
runs its last ones in a second wave, and a banded kernel whose bands were counted from the SMs
takes twice as long (the H100's LayerNorm backward in clusters of 4 over 33 bands: 0.70 ms against
0.34 in clusters of 2; bench/results/2026-11-28-h100-cluster-bands). For each C the driver's
`cuOccupancyMaxActiveClusters` is asked for a kernel of C CTAs a cluster whose shared memory lets
one (or `--per-sm`) CTA run on an SM; the figure at one CTA an SM is what `Target.cluster_slots`
records.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from typing import Any

CLUSTER_DIMENSION = 4  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
NON_PORTABLE_CLUSTER_SIZE = 14  # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED


class LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_ubyte * 64)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("shared_bytes", ctypes.c_uint),
        ("stream", ctypes.c_void_p),
        ("attrs", ctypes.POINTER(LaunchAttribute)),
        ("num_attrs", ctypes.c_uint),
    ]


def max_active_clusters(function: int, ctas: int, threads: int, shared_bytes: int) -> int:
    """cuOccupancyMaxActiveClusters for the CUfunction `function` launched in clusters of `ctas`
    CTAs of `threads` threads with `shared_bytes` of dynamic shared memory each."""
    cuda = ctypes.CDLL("libcuda.so.1")
    fn = ctypes.c_void_p(function)
    settings = [(MAX_DYNAMIC_SHARED, shared_bytes)] + ([(NON_PORTABLE_CLUSTER_SIZE, 1)] if ctas > 8 else [])
    for attribute, value in settings:
        err = cuda.cuFuncSetAttribute(fn, attribute, value)
        if err:
            raise RuntimeError(f"cuFuncSetAttribute({attribute}, {value}): CUDA error {err}")
    attr = LaunchAttribute(id=CLUSTER_DIMENSION)
    dims = (ctypes.c_uint * 3).from_buffer(attr.value)
    dims[0], dims[1], dims[2] = ctas, 1, 1
    config = LaunchConfig((ctas, 1, 1), (threads, 1, 1), shared_bytes, None, ctypes.pointer(attr), 1)
    count = ctypes.c_int(0)
    err = cuda.cuOccupancyMaxActiveClusters(ctypes.byref(count), fn, ctypes.byref(config))
    if err:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters: CUDA error {err}")
    return count.value


def empty_kernel() -> Any:
    """A compiled kernel that does nothing (its CUfunction is what the driver is asked about)."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def nothing(x_ptr):  # type: ignore[no-untyped-def]
        tl.store(x_ptr + tl.program_id(0), 0)

    x = torch.empty(1, device="cuda", dtype=torch.int32)
    compiled = nothing[(1,)](x)
    compiled._init_handles()
    return compiled


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="2,4,8,16", help="cluster sizes (CTAs), comma-separated")
    p.add_argument("--per-sm", default="1,2", help="CTAs an SM, comma-separated")
    args = p.parse_args(argv)
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    smem = props.shared_memory_per_multiprocessor if hasattr(props, "shared_memory_per_multiprocessor") else 233472
    kernel = empty_kernel()
    threads = 32 * kernel.metadata.num_warps  # (its PTX bounds the block: .maxntid)
    for per_sm in (int(v) for v in args.per_sm.split(",")):
        shared = smem // per_sm - 2048  # (the CTA's reserved shared memory aside)
        for ctas in (int(v) for v in args.sizes.split(",")):
            row: dict[str, Any] = {"gpu": props.name, "sms": props.multi_processor_count, "ctas": ctas}
            row |= {"ctas_per_sm": per_sm, "shared_bytes": shared, "threads": threads}
            try:
                row["clusters"] = max_active_clusters(kernel.function, ctas, threads, shared)
                row["sms_per_cta_layer"] = row["clusters"] * ctas // per_sm
            except RuntimeError as e:
                row["error"] = str(e)
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
