"""Compiling emitted Gluon or Triton to a cubin without a GPU, in a subprocess, and reporting
resources: registers, spills (a kernel whose live values exceed the registers keeps them in local
memory, which costs bandwidth), shared memory, warps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

from tilec.emit.gluon import GluonModule
from tilec.emit.triton import TritonModule

ARCHS = ("sm_90", "sm_100")


@dataclass
class CompileReport:
    arch: str
    ok: bool
    registers: int = 0
    spills: int = 0
    stack_bytes: int = 0
    shared_bytes: int = 0
    num_warps: int = 0
    num_ctas: int = 1
    cluster_exchange: bool = False
    cp_async_bytes: tuple[int, ...] = ()  # the sizes of its cp.async copies
    cp_async_arrives: bool = False  # threads arrive on mbarriers once their copies land
    error: str = ""
    detail: str = ""

    def summary(self) -> str:
        if not self.ok:
            return f"{self.arch}: does not compile: {self.error}"
        return (
            f"{self.arch}: {self.registers} registers, {self.spills} spilled words ({self.stack_bytes} bytes of stack), "
            f"{self.shared_bytes} bytes of shared memory, {self.num_warps} warps"
            + (f", clusters of {self.num_ctas} CTAs" if self.num_ctas > 1 else "")
        )


def check_compile(module: GluonModule | TritonModule, arch: str = "sm_90", timeout: float = 600) -> CompileReport:
    """Compiles `module` for `arch` in a fresh Python process (never in interpreter mode)."""
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    with tempfile.TemporaryDirectory(prefix="tilec-aot-") as d:
        path = os.path.join(d, f"{module.kernel_name}.py")
        with open(path, "w") as f:
            f.write(module.source)
        r = subprocess.run(
            [sys.executable, "-m", "tilec.emit.aot", path, arch],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = (r.stderr or r.stdout).strip().splitlines()
        reason = next((t for t in reversed(tail) if "ERROR" in t or "Error" in t), tail[-1] if tail else "no output")
        return CompileReport(
            arch, False, error=f"the compiler process died (status {r.returncode}): {reason}", detail=r.stderr[-4000:]
        )
    data: dict[str, Any] = json.loads(lines[-1])
    if not data.get("ok"):
        # the compiler's own diagnostic ("<file>:<line>:<col>: error: ...") says more than the exception
        diag = next((t for t in r.stderr.splitlines() if ": error: " in t), "")
        if diag:
            data["error"] = f"{data.get('error', '')}: {diag.split(': error: ', 1)[1]}"
    return CompileReport(
        arch=arch,
        ok=bool(data.get("ok")),
        registers=int(data.get("registers", 0)),
        spills=int(data.get("spills", 0)),
        stack_bytes=int(data.get("stack_bytes", 0)),
        shared_bytes=int(data.get("shared_bytes", 0)),
        num_warps=int(data.get("num_warps", 0)),
        num_ctas=int(data.get("num_ctas", 1)),
        cluster_exchange=bool(data.get("cluster_exchange", False)),
        cp_async_bytes=tuple(data.get("cp_async_bytes", ())),
        cp_async_arrives=bool(data.get("cp_async_arrives", False)),
        error=str(data.get("error", "")),
        detail=str(data.get("detail", "")),
    )
