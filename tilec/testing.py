"""How tilec decides that two results agree (docs/numerics.md explains the choice).

Low-precision results are compared with a float32 (or float64) reference computed from the same
inputs, by relative norm error over the finite elements; NaN and ±Inf must sit in the same places
and agree exactly. The comparison runs on the device of the result (a GPU result is not copied to
the host), in float64, `CHUNK` elements at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

# Relative norm error allowed, by the dtype of the result being checked.
TOLERANCE: dict[torch.dtype, float] = {
    torch.bfloat16: 1e-2,
    torch.float16: 2e-3,
    torch.float32: 1e-5,
    torch.float64: 1e-12,
}

CHUNK = 1 << 24  # elements compared at once (float64 copies of both: 256 MiB)


def tolerance(dtype: torch.dtype) -> float:
    return TOLERANCE.get(dtype, 0.0)  # integers and booleans: exact


def _slices(actual: torch.Tensor, reference: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Both tensors, flattened on actual's device, as float64 slices of at most CHUNK elements."""
    a = actual.detach().reshape(-1)
    r = reference.detach().to(a.device).reshape(-1)
    for i in range(0, a.numel(), CHUNK):
        yield a[i : i + CHUNK].double(), r[i : i + CHUNK].double()


def relative_error(actual: torch.Tensor, reference: torch.Tensor) -> float:
    """‖actual - reference‖ / ‖reference‖ over the finite elements of the reference (in float64)."""
    num2 = den2 = None
    for a, r in _slices(actual, reference):
        finite = torch.isfinite(r)
        d = torch.where(finite, a - r, 0.0)
        rf = torch.where(finite, r, 0.0)
        n2, r2 = (d * d).sum(), (rf * rf).sum()
        num2 = n2 if num2 is None else num2 + n2
        den2 = r2 if den2 is None else den2 + r2
    if num2 is None or den2 is None:  # no elements
        return 0.0
    num, den = float(num2.sqrt()), float(den2.sqrt())
    if den == 0.0:
        return num
    return num / den


def assert_close(
    actual: torch.Tensor, reference: torch.Tensor, dtype: torch.dtype | None = None, what: str = "result"
) -> None:
    """Raises AssertionError unless `actual` matches `reference` within the tolerance of `dtype`
    (default: actual's dtype). Shapes must agree; NaN and ±Inf must match position for position."""
    dtype = dtype or actual.dtype
    if actual.shape != reference.shape:
        raise AssertionError(
            f"{what}: shape {tuple(actual.shape)} differs from the reference's {tuple(reference.shape)}"
        )
    if not actual.is_floating_point():
        if not torch.equal(actual.detach(), reference.detach().to(actual.device, actual.dtype)):
            raise AssertionError(f"{what}: integer results differ from the reference")
        return
    for a, r in _slices(actual, reference):
        if not torch.equal(torch.isnan(a), torch.isnan(r)):
            counts = [sum(int(torch.isnan(t).sum()) for t in pair) for pair in zip(*_slices(actual, reference))]
            raise AssertionError(f"{what}: NaN in {counts[0]} places, the reference has {counts[1]}")
        inf_r = torch.isinf(r)
        if not torch.equal(torch.isinf(a), inf_r) or not torch.equal(a[inf_r], r[inf_r]):
            raise AssertionError(f"{what}: ±Inf do not match the reference")
    err = relative_error(actual, reference)
    tol = tolerance(dtype)
    if not err <= tol:
        raise AssertionError(f"{what}: relative error {err:.3g} exceeds the {dtype} tolerance {tol:g}")
