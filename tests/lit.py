"""A small lit: runs the `// RUN:` lines of golden `.tile` tests in-process.

Supported commands, joined by pipes: `tilec ARGS` (reads stdin when its file is `-`),
`not tilec ARGS` (must fail), `filecheck %s [filecheck options]`, and `2>&1` after a tilec
command to send its stderr down the pipe. `%s` is the test file, `%S` its folder.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import sys
import tempfile
from pathlib import Path


class LitError(AssertionError):
    pass


def run_lines(path: Path) -> list[str]:
    """The RUN commands of a file (a trailing backslash continues a line)."""
    commands, cur = [], ""
    for line in path.read_text().splitlines():
        if "RUN:" not in line:
            continue
        part = line.split("RUN:", 1)[1].strip()
        if part.endswith("\\"):
            cur += part[:-1] + " "
            continue
        commands.append((cur + part).strip())
        cur = ""
    return commands


def _tilec(argv: list[str], stdin: str) -> tuple[int, str, str]:
    from tilec.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse usage errors
                code = int(e.code or 0)
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


def _filecheck(argv: list[str], text: str) -> tuple[int, str]:
    from filecheck.matcher import Matcher
    from filecheck.options import parse_argv_options

    with tempfile.NamedTemporaryFile("w", suffix=".out", delete=False) as f:
        f.write(text)
        name = f.name
    buf = io.StringIO()
    try:
        opts = parse_argv_options(["filecheck", *argv, "--input-file", name])
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            code = Matcher.from_opts(opts).run()
    finally:
        Path(name).unlink()
    return code, buf.getvalue()


def run_command(command: str, path: Path) -> None:
    command = command.replace("%s", str(path)).replace("%S", str(path.parent))
    stdin = ""
    for stage in (s.strip() for s in command.split("|")):
        words = shlex.split(stage)
        expect_fail = bool(words) and words[0] == "not"
        if expect_fail:
            words = words[1:]
        merge_stderr = "2>&1" in words
        words = [w for w in words if w != "2>&1"]
        if not words:
            raise LitError(f"empty stage in RUN line: {command}")
        if words[0] == "tilec":
            code, out, err = _tilec(words[1:], stdin)
            failed = code != 0
            if failed != expect_fail:
                what = "succeeded but should have failed" if expect_fail else f"failed with status {code}"
                raise LitError(f"`{stage}` {what}\n--- stdout\n{out}\n--- stderr\n{err}")
            stdin = out + (err if merge_stderr else "")
        elif words[0] == "filecheck":
            code, report = _filecheck(words[1:], stdin)
            if code != 0:
                raise LitError(f"filecheck failed for `{command}`:\n{report}\n--- input\n{stdin}")
        else:
            raise LitError(f"unknown command '{words[0]}' in RUN line")


def run_file(path: Path) -> None:
    commands = run_lines(path)
    if not commands:
        raise LitError(f"{path} has no RUN lines")
    for c in commands:
        run_command(c, path)
