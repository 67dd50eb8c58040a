"""Times a norm's backward fused into a mix-order reduction and not, beside each other: stock
torch.compile as it fuses ("stock") and with Inductor's size checks off
(`triton.mix_order_reduction_non_strict_mode`: "stock-fused"), and tilec taking every kernel,
the Triton emitter, with the checks off ("tilec-fused") and as tilec fuses
(`tilec.frontend.fusion`: "tilec"). Device time as `tilec bench --bwd` times it, % of a same-size
copy of the model bytes; one JSON line per op and shape. The data behind
`chooser.MIX_ORDER_FUSIONS` (docs/performance.md).

    python bench/fusion_probe.py 2048x4096,4096x8192 rmsnorm_bwd,layernorm_bwd
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bwd_variants import measure

import tilec
from bench import parse_shapes


@contextlib.contextmanager
def side(tilec_on: bool, fused: bool) -> Iterator[None]:
    """Stock (`tilec_on` False) or tilec taking every kernel with the Triton emitter, with
    Inductor's mix-order size checks on or off (`fused`)."""
    settings = (
        tilec.config.patch(enabled=True, emitter="triton", decline=False, autotune=False)
        if tilec_on
        else tilec.config.patch(enabled=False)
    )
    with settings, torch._inductor.config.patch({"triton.mix_order_reduction_non_strict_mode": fused}):
        yield


def main(argv: list[str]) -> int:
    tilec.install()
    sides = {
        "stock": functools.partial(side, False, False),
        "stock-fused": functools.partial(side, False, True),
        "tilec-fused": functools.partial(side, True, True),
        "tilec": functools.partial(side, True, False),
    }
    measure(parse_shapes(argv[0]), argv[1].split(","), sides)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
