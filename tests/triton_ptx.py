"""PTX of an emitted Triton kernel compiled for sm_90 on this machine (no GPU needed): Triton
compiles ahead of time in a child process, outside the interpreter the tests run in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tilec.emit.triton import emit_triton
from tilec.ir.core import Kernel


def triton_ptx(kernel: Kernel, workdir: Path) -> str:
    """The PTX of `kernel` (planned) emitted as Triton and compiled for sm_90, its pointers 16-byte
    aligned as Triton specializes them at launch (integer parameters: unspecialized, as the
    emitters compile them)."""
    source = workdir / "kernel.py"
    source.write_text(emit_triton(kernel).source)
    ptx = workdir / "kernel.ptx"
    script = rf"""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from tilec.runtime import load_source
m = load_source(open({str(source)!r}).read(), interpret=False)
names = list(m.SIGNATURE)
attrs = {{(names.index(p),): [["tt.divisibility", 16]] for p in m.DIVISIBLE}}
k = triton.compile(ASTSource(m.KERNEL, m.SIGNATURE, constexprs=m.CONSTEXPRS, attrs=attrs),
                   target=GPUTarget("cuda", 90, 32), options={{"num_warps": m.NUM_WARPS}})
open({str(ptx)!r}, "w").write(k.asm["ptx"])
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return ptx.read_text()
