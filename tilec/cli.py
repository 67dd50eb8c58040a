"""The `tilec` command line.

    tilec opt FILE.tile [-p PIPELINE] [--print-ir-after-all] [--remarks] [--no-verify] [-o OUT]
    tilec dump [--ir] PATH.py[:NAME] [--shape 4096,8192] [--dtype bf16] [-p PIPELINE] [--device cuda|cpu]
    tilec demo                       # also: torch.compile(backend="tilec") on examples/, checked against eager

User errors (bad input, unknown passes, verifier failures) print one located message and exit
with status 2; no traceback unless --traceback. Nothing is written to -o on failure.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tilec import __version__

EXIT_COMPILE_FAILED = 1
EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 3


class UsageError(Exception):
    """Wrong use of the command line (a file that does not exist, conflicting flags)."""


def write_output(text: str, out: str | None) -> None:
    """Writes `text` to `out` atomically (or to stdout)."""
    if out is None or out == "-":
        sys.stdout.write(text)
        return
    target = Path(out)
    fd, tmp = tempfile.mkstemp(dir=target.parent or Path("."), prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_module(path: str):
    from tilec.ir import parse, parse_file

    if path == "-":
        return parse(sys.stdin.read(), "<stdin>")
    if not Path(path).is_file():
        raise UsageError(f"{path}: no such file")
    return parse_file(path)


# ---------------------------------------------------------------------------------------------
# Commands


def cmd_opt(args: argparse.Namespace) -> int:
    from tilec.ir import print_module, verify
    from tilec.passes import PassManager, parse_pipeline

    passes = parse_pipeline(args.pipeline) if args.pipeline else []
    module = read_module(args.file)
    if not args.no_verify:
        verify(module)

    def dump(text: str) -> None:
        sys.stderr.write(text)

    pm = PassManager(
        passes,
        verify_each=not args.no_verify,
        print_after_all=dump if args.print_ir_after_all else None,
        remarks=[] if args.remarks else None,
    )
    pm.run(module)
    for remark in pm.remarks or []:
        sys.stderr.write(f"{remark}\n")
    if args.timing:
        total = sum(t.seconds for t in pm.timings)
        sys.stderr.write("// pass timing\n")
        for t in pm.timings:
            sys.stderr.write(f"//   {t.seconds * 1e3:9.3f} ms  {t.name}\n")
        sys.stderr.write(f"//   {total * 1e3:9.3f} ms  total\n")
    write_output(print_module(module, generic=args.generic), args.output)
    return 0


def cmd_emit(args: argparse.Namespace) -> int:
    from tilec.ir import verify
    from tilec.passes import run_pipeline

    module = read_module(args.file)
    verify(module)
    if args.pipeline:
        run_pipeline(module, args.pipeline)
    sources = []
    for kernel in module.kernels:
        if args.target == "triton":
            from tilec.emit.triton import emit_triton

            emitted: Any = emit_triton(kernel)
        else:
            from tilec.emit.gluon import emit_gluon

            emitted = emit_gluon(kernel)
        sources.append(emitted.source)
        if args.check:
            from tilec.emit.check import check_compile

            report = check_compile(emitted, args.check)
            sys.stderr.write(report.summary() + "\n")
            if not report.ok:
                return EXIT_USER_ERROR
    write_output("\n\n".join(sources), args.output)
    return 0


def cmd_dump(args: argparse.Namespace) -> int:
    # torch is imported here only: `tilec opt` must not pay for it
    if args.check and args.emit is None:
        raise UsageError("--check compiles the emitted source; add --emit gluon or --emit triton")
    if args.remarks and not (args.pipeline or args.emit):
        raise UsageError("--remarks prints what the passes say; add -p PIPELINE or --emit gluon/triton")
    from tilec.dump import dump, parse_shape
    from tilec.frontend.entry import EntryError

    try:
        text, failures = dump(
            args.target,
            shape=parse_shape(args.shape),
            dtype=args.dtype,
            device=args.device,
            ir=args.ir or (bool(args.pipeline) and not args.emit),  # -p alone: show what it made
            pipeline=args.pipeline,
            source=args.source,
            dynamic="all" if args.dynamic_length else args.dynamic,
            strict=args.traceback,
            emit=args.emit,
            check=args.check,
            remarks=args.remarks,
        )
    except EntryError as e:
        raise UsageError(str(e)) from e
    sys.stdout.write(text)
    if failures:
        sys.stderr.write(f"tilec: {failures} kernel(s) failed to compile for {args.check}\n")
        return EXIT_COMPILE_FAILED
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    import shutil

    if shutil.which("nvidia-smi") is None:  # no GPU: Triton's interpreter, chosen before triton loads
        from tilec.runtime import enable_interpreter

        enable_interpreter()
    from tilec.demo import run_demo

    return run_demo(sys.stdout)


# ---------------------------------------------------------------------------------------------
def cmd_bench(args: argparse.Namespace) -> int:
    """Runs bench/bench.py of the source checkout (the suite is not part of the installed package)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / "bench.py"
    if not path.is_file():
        raise UsageError(f"tilec bench runs from a source checkout: {path} is missing")
    spec = importlib.util.spec_from_file_location("tilec_bench_suite", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return int(module.main(args.args))


# Entry point


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tilec",
        description="tilec: a tile-IR compiler for memory-bound GPU kernels (RMSNorm, LayerNorm, softmax).",
    )
    p.add_argument("--version", action="version", version=f"tilec {__version__}")
    p.add_argument("--traceback", action="store_true", help="show Python tracebacks for errors")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    opt = sub.add_parser("opt", help="parse, verify, transform and print a .tile file")
    opt.add_argument("file", help="input .tile file ('-' for stdin)")
    opt.add_argument("-p", "--pipeline", default="", help="passes to run, e.g. 'canonicalize,cse,dce'")
    opt.add_argument("--print-ir-after-all", action="store_true", help="print the IR after each pass (to stderr)")
    opt.add_argument("--no-verify", action="store_true", help="do not run the verifier")
    opt.add_argument("--timing", action="store_true", help="print the time each pass took (to stderr)")
    opt.add_argument(
        "--remarks", action="store_true", help="print why each pass left a kernel (or part of it) as it was (to stderr)"
    )
    opt.add_argument("--generic", action="store_true", help="print every op in the generic form")
    opt.add_argument("-o", "--output", help="output file (default: stdout)")
    opt.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    opt.set_defaults(func=cmd_opt)

    emit = sub.add_parser("emit", help="print Triton or Gluon source for planned .tile kernels")
    emit.add_argument("file", help="input .tile file ('-' for stdin)")
    emit.add_argument("--target", choices=["triton", "gluon"], required=True, help="the language to print")
    emit.add_argument("-p", "--pipeline", default="", help="passes to run first (the IR must end up planned)")
    emit.add_argument(
        "--check",
        choices=["sm_90", "sm_100"],
        help="compile to a cubin (no GPU needed) and report registers, spills and shared memory",
    )
    emit.add_argument("-o", "--output", help="output file (default: stdout)")
    emit.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    emit.set_defaults(func=cmd_emit)

    dump = sub.add_parser("dump", help="show the kernels Inductor builds for a PyTorch function or Module, as tile IR")
    dump.add_argument(
        "target",
        metavar="PATH.py[:NAME]",
        help="the file, and the function or torch.nn.Module subclass to trace (NAME: the file's only "
        "function or Module subclass, or forward among several)",
    )
    dump.add_argument(
        "--ir",
        action="store_true",
        help="print each kernel's tile IR (logical form; after -p, its result: -p alone implies --ir)",
    )
    dump.add_argument("--shape", default="4096,8192", help="input shape, passed to example_inputs (default 4096,8192)")
    dump.add_argument("--dtype", default="bf16", help="bf16, fp16 or fp32 (default bf16)")
    dump.add_argument("-p", "--pipeline", default="", help="passes to run on each kernel before printing")
    dump.add_argument(
        "--emit",
        choices=["gluon", "triton"],
        help="also print each taken kernel's source (default -p: the emitter's pipeline)",
    )
    dump.add_argument("--check", choices=["sm_90", "sm_100"], help="with --emit: compile each kernel (no GPU needed)")
    dump.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cuda (fake H100 without a GPU) or cpu")
    dump.add_argument("--source", action="store_true", help="also print Inductor's own Triton source, as comments")
    dump.add_argument(
        "--remarks",
        action="store_true",
        help="with -p or --emit: print, under each kernel, why each pass left it (or part of it) as it was",
    )
    dump.add_argument(
        "--dynamic", action="store_true", help="trace with every input's leading dimensions symbolic (the last static)"
    )
    dump.add_argument(
        "--dynamic-length",
        action="store_true",
        help="trace with every dimension symbolic, the row length too (as torch.compile(dynamic=True))",
    )
    dump.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    dump.set_defaults(func=cmd_dump)

    demo = sub.add_parser(
        "demo", help="show tilec on a built-in RMSNorm kernel, then torch.compile the examples with the hook"
    )
    demo.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    demo.set_defaults(func=cmd_demo)

    bench = sub.add_parser(
        "bench",
        help="time tilec against eager, torch.compile, Liger-Kernel and a copy on the GPU (bench/bench.py --help)",
        add_help=False,
    )
    bench.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    bench.set_defaults(func=cmd_bench)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "command", None) == "bench":
        args.args = extra + args.args  # bench/bench.py parses its own options
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return EXIT_USER_ERROR
    from tilec.ir.errors import TilecError

    try:
        return func(args)
    except (TilecError, UsageError) as e:
        if args.traceback:
            traceback.print_exc()
        print(f"tilec: {e}" if isinstance(e, UsageError) else str(e), file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if args.traceback:
            traceback.print_exc()
        print(f"tilec: internal error: {type(e).__name__}: {e} (run with --traceback for details)", file=sys.stderr)
        return EXIT_INTERNAL_ERROR


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
