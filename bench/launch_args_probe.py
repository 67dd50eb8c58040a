"""The bound launch's buffers passed to Triton's C launcher as addresses (integers) against as
tensors, in one process on the same compiled kernels: `tilec bench --host`'s function of 16
independent small RMSNorm kernels, every one taken by tilec (Triton, then Gluon), called `calls`
times a round without waiting for the GPU (which keeps up: each kernel is a few microseconds);
the rounds alternate between the two forms of `_Bound.launch` (ABAB), so that the machine's drift
falls on both. Of a tensor, Triton's C launcher calls data_ptr() and asks the driver whether the
address is device memory (cuPointerGetAttribute), at every launch; of an integer, nothing.

    python bench/launch_args_probe.py        # one JSON line per emitter: us per launch, each form
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import host

import tilec
from tilec.runtime import launch


def launch_passing_tensors(self: Any, args: tuple[Any, ...], stream: int) -> bool:
    """`_Bound.launch` as it was: each buffer passed as its tensor."""
    if launch.knobs_hooked() or launch._current_device() != self.device:
        return False
    kernel_args: list[Any] = []
    encoded = None
    if self.desc_source:
        ptrs = tuple(args[i].data_ptr() for i in self.desc_source)
        if any(p & 15 for p in ptrs):
            return False
        encoded = self.encoded.get(ptrs)
        if encoded is None:
            encoded = self.encoded[ptrs] = self._encode(args)
    if self.size_args and tuple(launch._size_spec(args[i]) for i in self.size_args) != self.size_spec:
        return False
    for kind, v in self.layout:
        if kind == "arg":
            a = args[v]
            if a.data_ptr() & 15:
                return False
            kernel_args.append(a)
        elif kind == "size":
            i, m = v
            kernel_args.append(args[i] // m if m > 1 else args[i])
        elif kind == "desc":
            kernel_args.extend(encoded[v[0]])  # type: ignore[index]
        else:
            kernel_args.append(v)
    gx, gy, gz = self.grid
    if self.grid_of is not None:
        g = self.grid_of(args)
        gx, gy, gz = g[0], g[1] if len(g) > 1 else 1, g[2] if len(g) > 2 else 1
    self.c_launch(gx, gy, gz, stream, self.function, *self.head, None, None, None, *kernel_args)
    return True


def main(k: int = 16, calls: int = 200, rounds: int = 20) -> None:
    tilec.install()
    forms = {"addresses": launch._Bound.launch, "tensors": launch_passing_tensors}
    sizes = [host.SHAPE[1] + 64 * i for i in range(k)]
    xs = [torch.randn(host.SHAPE[0], n, device="cuda", dtype=torch.bfloat16) for n in sizes]
    ws = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for n in sizes]
    for impl in ("tilec-triton", "tilec-gluon"):
        torch._dynamo.reset()
        tilec.reset_report()
        with host._settings(impl), torch._inductor.config.patch(fx_graph_cache=False):
            fn = torch.compile(host._model(impl), dynamic=False)
            for _ in range(3):
                fn(ws, xs)
            torch.cuda.synchronize()
            taken = sum(r.taken for r in tilec.report())
            times: dict[str, list[float]] = {name: [] for name in forms}
            for r in range(2 * rounds):
                name = ("addresses", "tensors")[r % 2]
                launch._Bound.launch = forms[name]  # type: ignore[method-assign]
                torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in range(calls):
                    fn(ws, xs)
                times[name].append((time.perf_counter() - start) / calls / k * 1e6)
                torch.cuda.synchronize()
            launch._Bound.launch = forms["addresses"]  # type: ignore[method-assign]
        row = {
            "impl": impl,
            "taken": taken,
            "kernels": k,
            **{f"{name}_median_us": statistics.median(v) for name, v in times.items()},
            **{f"{name}_min_us": min(v) for name, v in times.items()},
            "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__,
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
