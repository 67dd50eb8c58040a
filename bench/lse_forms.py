"""Where tilec's grouped log-sum-exp (`softmax-groups`) loses to the hand-written one of
bench/lse_probe.py: the cross-entropy forward's log-sum-exp kernel at rows of 50257, as tilec emits
it with a plan of `groups=8` (chunks of 4096 over 8 warps), and edited forms of that source, each
taking one difference away:

- `emitted`: as tilec emitted it before `align-rows{line=128}` (`line=16`; the pieces: the first vector, the whole chunks'
  loop, the rest's loop in chunks of 2048 with groups of its own, the last partial vector; the
  groups of each loop combined after it);
- `nonan`: maxima that do not propagate NaN (`tl.maximum` without `propagate_nan`);
- `noguard`: the whole chunks' loop without the guard of a group that saw only -inf;
- `joined`: the rest's loop in chunks of 4096 carrying the whole chunks' groups on, one combine
  after both;
- `sunk`: the first vector's statistics folded in after the loops (its load stays first);
- `joined-sunk`, and `all` (every edit);
- `ftz` and `all-ftz`: exp as one `ex2.approx.ftz` (bench/ce_bwd_forms.py), alone and with every
  other edit;
- `line128`, `line128-ftz`: emitted with `align-rows{line=128}` (the whole chunks on 128-byte
  cache lines), and with `ftz`;

beside the probe's hand-written kernel (chunks of 4096 over 8 warps, groups of 8). Device time, cold
L2; each result checked against torch.logsumexp in fp32 (a -inf logit and a row of -inf
included). Two rounds; one JSON line a form, also to $OUT/lse_forms.jsonl.

    python bench/lse_forms.py [ROWS]        # 8192 by default; on a CPU, Triton's interpreter, 3 rows
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812

V = 50257
PLAN = "xblock=1,chunk=4096,num_warps=8,max_rblock=16384,groups=8"


def emitted(line: int = 16) -> str:
    """The Triton source of the cross-entropy forward's log-sum-exp kernel at rows of V with PLAN
    (traced at 1024 rows: the kernel does not depend on the row count but for its grid)."""
    from tilec.emit.triton import emit_triton
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(x, y)

    x, y = torch.randn(1024, V, dtype=torch.bfloat16), torch.randint(0, V, (1024,))
    for k in capture(loss, [x, y], strict=True):
        if isinstance(k.result, Lowered) and "prepare_softmax_online" in k.result.kernel.name:
            module = parse(print_kernel(k.result.kernel))
            pipeline = with_plan("triton-default", PLAN)
            pipeline = re.sub(r"align-rows\{[^}]*\}", f"align-rows{{narrow=true,line={line}}}", pipeline)
            run_pipeline(module, pipeline)
            return emit_triton(module.kernels[0]).source
    raise SystemExit("lse_forms: no log-sum-exp kernel in the cross-entropy's forward")


def _replace(s: str, old: str, new: str) -> str:
    assert old in s, old
    return s.replace(old, new)


def nonan(s: str) -> str:
    return s.replace(", propagate_nan=tl.PropagateNan.ALL", "")


def noguard(s: str) -> str:
    return _replace(s, "group_base = tl.where(empty, zero, group_max_next)", "group_base = group_max_next")


def joined(s: str) -> str:
    a = s.index("    groups_max_flat = softmax_max_groups_1\n")
    b = s.index("    rrange_2 = tl.arange(0, 2048)")
    s = s[:a] + "    softmax_max = acc_softmax_max_next\n    softmax_sum = acc_softmax_sum_next\n" + s[b:]
    s = _replace(s, "rrange_2 = tl.arange(0, 2048)", "rrange_2 = tl.arange(0, 4096)")
    s = _replace(
        s, 'group_max_init_1 = tl.full([1, 256], float("-inf"), tl.float32)', "group_max_init_1 = softmax_max_groups_1"
    )
    s = _replace(s, "group_sum_init_1 = tl.full([1, 256], 0.0, tl.float32)", "group_sum_init_1 = softmax_sum_groups_1")
    s = _replace(s, "range(full, vectors_end_1, 2048)", "range(full, vectors_end_1, 4096)")
    return s.replace("[1, 2048]", "[1, 4096]").replace("[1, 256, 8]", "[1, 512, 8]").replace("[1, 256]", "[1, 512]")


def sunk(s: str) -> str:
    a = s.index("    wide = tl.cast(load, tl.float32)")
    b = s.index("    group_max_init = tl.full")
    head = s[a:b].replace("acc_softmax_max_next", "HEAD_MAX").replace("acc_softmax_sum_next", "HEAD_SUM")
    s = (s[:a] + s[b:]).replace("acc_softmax_max_next", "HEAD_MAX").replace("acc_softmax_sum_next", "HEAD_SUM")
    s = _replace(
        s,
        "    group_max_init = tl.full",
        "    HEAD_MAX = softmax_max_init\n    HEAD_SUM = softmax_sum_init\n    group_max_init = tl.full",
    )
    c = s.index("    softmax_max_row = tl.expand_dims(softmax_max_2, 1)")
    fold = (
        head.replace("softmax_max_init", "softmax_max_2")
        .replace("softmax_sum_init", "softmax_sum_2")
        .replace("HEAD_MAX", "softmax_max_3")
        .replace("HEAD_SUM", "softmax_sum_3")
    )
    return s[:c] + fold + "    softmax_max_2 = softmax_max_3\n    softmax_sum_2 = softmax_sum_3\n" + s[c:]


FORMS: dict[str, Callable[[str], str]] = {
    "emitted": lambda s: s,
    "nonan": nonan,
    "noguard": noguard,
    "joined": joined,
    "sunk": sunk,
    "joined-sunk": lambda s: sunk(joined(s)),
    "all": lambda s: nonan(noguard(sunk(joined(s)))),
    "ftz": lambda s: _ftz(s),
    "all-ftz": lambda s: _ftz(nonan(noguard(sunk(joined(s))))),
}


def _ftz(s: str) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ce_bwd_forms import ftz

    return ftz(s)


def main(argv: list[str]) -> None:
    from tilec.runtime import load_source

    gpu = torch.cuda.is_available()
    dev = "cuda" if gpu else "cpu"
    rows = int(argv[0]) if argv else (8192 if gpu else 3)
    torch.manual_seed(0)
    x = (torch.randn(rows, V, device=dev) * 3).bfloat16()
    x[1, 7] = float("-inf")
    x[2, :] = float("-inf")
    ref = torch.logsumexp(x.float(), -1)
    source = emitted()
    out_dir = Path(os.environ.get("OUT", "."))
    records: list[dict[str, Any]] = []

    def record(name: str, call: Callable[[], Any], result: Callable[[], torch.Tensor]) -> None:
        call()
        got = result()
        err = float((got - ref).abs().nan_to_num(0.0).max())
        assert torch.equal(torch.isinf(got), torch.isinf(ref)), name
        assert err < 1e-4, (name, err)
        us = None
        if gpu:
            from tilec.runtime.timing import device_ms

            us = device_ms(call, reps=40) * 1000
        rec = {"form": name, "rows": rows, "us": us, "read_tbs": x.numel() * 2 / us / 1e6 if us else None, "err": err}
        print(json.dumps(rec), flush=True)
        records.append(rec)

    for _ in range(2 if gpu else 1):
        forms = [(name, edit(source)) for name, edit in FORMS.items()]
        forms += [("line128", emitted(128)), ("line128-ftz", _ftz(emitted(128)))]
        for name, text in forms:
            kernel = load_source(text, interpret=not gpu).KERNEL
            mx, sm = torch.empty(rows, device=dev), torch.empty(rows, device=dev)

            def call(k: Any = kernel, mx: torch.Tensor = mx, sm: torch.Tensor = sm) -> Any:
                return k[(rows,)](x, mx, sm, 1, 4096, num_warps=8)

            record(name, call, lambda mx=mx, sm=sm: mx + torch.log(sm))
        if gpu:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import lse_probe

            o = torch.empty(rows, device=dev)
            record(
                "probe-grp-c4096-w8-g8",
                lambda o=o: lse_probe.lse_groups[(rows,)](x, o, V, 4096, 8, True, num_warps=8),
                lambda o=o: o,
            )
    with open(out_dir / "lse_forms.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


if __name__ == "__main__":
    main(sys.argv[1:])
