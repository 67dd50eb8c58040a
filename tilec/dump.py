"""`tilec dump`: the kernels Inductor builds for a function or Module of a Python file, as tile IR,
and, with a pipeline and an emitter, what tilec's passes and emitters make of them.

    tilec dump --ir examples/rmsnorm.py                  # forward(), one 4096x8192 bf16 input
    tilec dump --ir model.py:layer --shape 64,1000 --dtype fp32 -p canonicalize
    tilec dump model.py:Block                            # a torch.nn.Module subclass

What is traced, and with which inputs: `tilec.frontend.entry`. This module sits above the
frontend, the passes and the emitters, beside the command line.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from tilec.frontend.entry import EntryError, load_entry, make_call, make_inputs

DEFAULT_SHAPE = (4096, 8192)
DEFAULT_DTYPE = "bf16"


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(p) for p in text.replace("x", ",").split(",") if p.strip())
    except ValueError:
        raise EntryError(f"--shape: expected sizes like 4096,8192, got '{text}'") from None
    if not shape or any(d < 1 for d in shape):
        raise EntryError(f"--shape: expected positive sizes like 4096,8192, got '{text}'")
    return shape


def parse_dtype(text: str) -> Any:
    from tilec.frontend.dtypes import DTYPE_ALIASES

    dtype = DTYPE_ALIASES.get(text.lower())
    if dtype is None:
        raise EntryError(f"--dtype: expected one of bf16, fp16, fp32, got '{text}'")
    return dtype


@contextlib.contextmanager
def _torch_logs_quiet() -> Iterator[None]:
    """torch logs a failed trace's error and traceback on stderr itself; `tilec dump` reports it as
    one located line (`--traceback` keeps torch's logs)."""
    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def dump(
    spec: str,
    shape: Sequence[int] = DEFAULT_SHAPE,
    dtype: str = DEFAULT_DTYPE,
    device: str = "cuda",
    ir: bool = False,
    pipeline: str = "",
    source: bool = False,
    dynamic: bool | Literal["all"] = False,
    strict: bool = False,
    emit: str | None = None,
    check: str | None = None,
    remarks: bool = False,
) -> tuple[str, int]:
    """The text `tilec dump` prints, and how many taken kernels failed to compile (with `check`)."""
    import torch

    from tilec.frontend.capture import CaptureError, capture

    entry = load_entry(spec)
    torch_dtype = parse_dtype(dtype)
    fn, args = make_call(entry, make_inputs(entry, tuple(shape), torch_dtype), torch_dtype)
    try:
        with contextlib.nullcontext() if strict else _torch_logs_quiet():
            kernels = capture(fn, args, device=device, dynamic=dynamic, strict=strict, fuse=table_fusion)
    except CaptureError as e:
        raise EntryError(f"{entry.path}: tracing {entry.func_name} failed: {e}") from None
    where = device if device == "cpu" or torch.cuda.is_available() else "cuda (fake H100)"
    shape_text = ",".join(str(d) for d in shape)
    header = (
        f"// {entry.path.name}:{entry.func_name}, shape {shape_text}, {dtype}, {where}: "
        f"{len(kernels)} Triton kernel{'s' if len(kernels) != 1 else ''}\n"
    )
    banded = ""
    if emit and not pipeline:
        pipeline = f"{emit}-default"
        header += f"// -p {pipeline} (the {emit} emitter's default pipeline)\n"
        if emit == "gluon" and any(getattr(k.result, "column_sums", None) for k in kernels):
            from tilec import config

            banded = config.banded_gluon_pipeline()
            header += f"// -p {banded} for a banded kernel (a norm's fused backward), as the hook builds it\n"
    text, failures = format_kernels(
        kernels,
        ir=ir,
        pipeline=pipeline,
        source=source,
        emit=emit,
        check=check,
        remarks=remarks,
        banded_pipeline=banded,
    )
    return header + text, failures


def table_fusion(device: Any, rows: int, row: int, elem_bytes: int, sums: int, row_inputs: int) -> bool:
    """Whether the hook fuses a norm's backward stock leaves unfused (`tilec.frontend.fusion`), by
    the table of the GPU (the H100 where it is faked) alone, with the Gluon emitter available."""
    import torch

    from tilec.passes.chooser import mix_order_fusion

    name = torch.cuda.get_device_properties(device).name
    return mix_order_fusion(name, rows, row, elem_bytes, sums, row_inputs) is not None


def format_kernels(
    kernels: Sequence[Any],
    ir: bool = True,
    pipeline: str = "",
    source: bool = False,
    emit: str | None = None,
    check: str | None = None,
    remarks: bool = False,
    banded_pipeline: str = "",
) -> tuple[str, int]:
    """Per captured kernel: Inductor's name, the summary line, (with `remarks` and a pipeline)
    why each pass left the kernel or part of it as it was, then (with `ir`) its tile IR and (with
    `emit`) the emitted source; with `check`, that source's ahead-of-time compile. A banded kernel
    (a mix-order reduction) runs `banded_pipeline` in place of `pipeline` where it is given.
    Returns the text and the number of kernels that failed to compile."""
    from tilec.frontend.result import Lowered
    from tilec.ir import Module, print_module, verify

    lines: list[str] = []
    failures = 0
    for k in kernels:
        lines.append("")
        lines.append(f"// {k.name}")
        lines.append(f"// {k.summary()}")
        if source and k.source:
            lines.extend(f"//   {line}" if line else "//" for line in k.source.strip("\n").splitlines())
        if not isinstance(k.result, Lowered) or not (ir or emit or remarks):
            continue
        module = Module([k.result.kernel])
        verify(module)
        own = banded_pipeline if banded_pipeline and k.result.column_sums else pipeline
        if own:
            from tilec.passes import run_pipeline
            from tilec.passes.base import collecting_remarks

            with collecting_remarks() as made:
                run_pipeline(module, own)
            if remarks:
                lines.extend(f"// {r}" for r in made)
        if ir:
            lines.append(print_module(module).rstrip("\n"))
        if emit is None:
            continue
        if emit == "triton":
            from tilec.emit.triton import emit_triton

            emitted: Any = emit_triton(module)
        else:
            from tilec.emit.gluon import emit_gluon

            emitted = emit_gluon(module)
        lines.append(emitted.source.rstrip("\n"))
        if check:
            from tilec.emit.check import check_compile

            report = check_compile(emitted, check)
            lines.append(f"# {k.name}: {report.summary()}")
            failures += 0 if report.ok else 1
    return "\n".join(lines) + "\n", failures
