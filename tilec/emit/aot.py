"""Ahead-of-time compilation of an emitted Gluon or Triton module, run as a subprocess:

    python -m tilec.emit.aot MODULE.py sm_90

prints one JSON object: ok, and either the resources (registers, spilled words, stack and spill
bytes, shared memory, warps) or the error. Triton compiles without a GPU; a subprocess keeps an
LLVM abort (some invalid layouts abort the process) from killing the caller.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
from typing import Any

EIATTR_REGCOUNT = 0x2F
CP_ASYNC = re.compile(r"cp\.async\.c[ag]\.shared\.global(?:\.L2::\w+)? \[[^\]]*\], \[[^\]]*\], (0x[0-9a-f]+|\d+)")
EIFMT_SVAL = 4


def _sections(elf: bytes) -> dict[str, tuple[int, int]]:
    """Section name -> (file offset, size) of a 64-bit little-endian ELF file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not a 64-bit ELF cubin")
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx][4]

    def name(off: int) -> str:
        start = strtab + off
        return elf[start : elf.index(b"\0", start)].decode()

    return {name(h[0]): (h[4], h[5]) for h in headers}


def cubin_registers(cubin: bytes) -> int:
    """The register count ptxas recorded in the cubin (`.nv.info`, attribute EIATTR_REGCOUNT)."""
    off, size = _sections(cubin)[".nv.info"]
    end = off + size
    while off < end:
        fmt, attr, length = struct.unpack_from("<BBH", cubin, off)
        if fmt == EIFMT_SVAL:
            if attr == EIATTR_REGCOUNT:
                return int(struct.unpack_from("<II", cubin, off + 4)[1])
            off += 4 + length
        else:
            off += 4
    raise ValueError("the cubin records no register count")


def ptxas_report(ptx: str, arch: int) -> dict[str, int]:
    """Stack frame and spill bytes, from the ptxas Triton uses, run again with -v."""
    from triton import knobs

    tool = (knobs.nvidia.ptxas_blackwell if arch >= 100 else knobs.nvidia.ptxas).path
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "kernel.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        r = subprocess.run(
            [tool, "-v", f"--gpu-name=sm_{arch}a", path, "-o", path + ".o"], capture_output=True, text=True
        )
    log = r.stdout + r.stderr
    if r.returncode:
        raise RuntimeError(log)

    def grab(pattern: str) -> int:
        m = re.search(pattern, log)
        return int(m.group(1)) if m else 0

    return {
        "stack_bytes": grab(r"(\d+) bytes stack frame"),
        "spill_store_bytes": grab(r"(\d+) bytes spill stores"),
        "spill_load_bytes": grab(r"(\d+) bytes spill loads"),
    }


def compile_module(path: str, arch_name: str) -> dict[str, Any]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource, GluonJITFunction

    arch = int(arch_name.removeprefix("sm_"))
    spec = importlib.util.spec_from_file_location("tilec_aot_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tilec_aot_module"] = module
    spec.loader.exec_module(module)
    names = list(module.SIGNATURE)
    attrs = {(names.index(p),): [["tt.divisibility", 16]] for p in module.DIVISIBLE}
    kind = GluonASTSource if isinstance(module.KERNEL, GluonJITFunction) else ASTSource
    source = kind(module.KERNEL, module.SIGNATURE, constexprs=module.CONSTEXPRS, attrs=attrs)
    options: dict[str, Any] = {"num_warps": module.NUM_WARPS}
    if getattr(module, "MAXNREG", None) is not None:  # the Gluon emitter's register cap
        options["maxnreg"] = module.MAXNREG
    if getattr(module, "NUM_CTAS", 1) != 1:  # a thread-block cluster a program
        options["num_ctas"] = module.NUM_CTAS
    if getattr(module.KERNEL, "debug", None):  # a kernel with asserts compiles them
        options["debug"] = True
    k = triton.compile(source, target=GPUTarget("cuda", arch, 32), options=options)
    report = ptxas_report(k.asm["ptx"], arch)
    return {
        "ok": True,
        "arch": arch_name,
        "registers": cubin_registers(k.asm["cubin"]),
        "spills": report["stack_bytes"] // 4,  # what Triton reports as n_spills on a GPU
        **report,
        "shared_bytes": int(k.metadata.shared),
        "num_warps": int(k.metadata.num_warps),
        "num_ctas": int(k.metadata.num_ctas),
        # a cluster kernel's exchange: the peers' shared memory read between cluster barriers, or
        # written into (st.async onto their mbarriers) after one
        "cluster_exchange": "barrier.cluster.wait" in k.asm["ptx"]
        and ("ld.shared::cluster" in k.asm["ptx"] or "st.async.shared::cluster" in k.asm["ptx"]),
        # the bytes each cp.async copies (4, 8 or 16), and whether threads arrive on mbarriers
        # once their copies land (cp.async.mbarrier.arrive)
        "cp_async_bytes": sorted({int(n, 0) for n in CP_ASYNC.findall(k.asm["ptx"])}),
        "cp_async_arrives": "cp.async.mbarrier.arrive" in k.asm["ptx"],
    }


def main(argv: list[str]) -> int:
    path, arch = argv
    try:
        result = compile_module(path, arch)
    except Exception as e:
        first = str(e).strip().splitlines()
        result = {
            "ok": False,
            "arch": arch,
            "error": f"{type(e).__name__}: {first[-1] if first else ''}",
            "detail": str(e)[-4000:],
        }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
