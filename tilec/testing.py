"""How tilec decides that two results agree (docs/numerics.md explains the choice).

Low-precision results are compared with a float32 (or float64) reference computed from the same
inputs, by relative norm error over the finite elements; NaN and ±Inf must sit in the same places
and agree exactly.
"""

from __future__ import annotations

import torch

# Relative norm error allowed, by the dtype of the result being checked.
TOLERANCE: dict[torch.dtype, float] = {
    torch.bfloat16: 1e-2,
    torch.float16: 2e-3,
    torch.float32: 1e-5,
    torch.float64: 1e-12,
}


def tolerance(dtype: torch.dtype) -> float:
    return TOLERANCE.get(dtype, 0.0)  # integers and booleans: exact


def relative_error(actual: torch.Tensor, reference: torch.Tensor) -> float:
    """‖actual - reference‖ / ‖reference‖ over the finite elements of the reference (in float64)."""
    a, r = actual.double(), reference.double()
    finite = torch.isfinite(r)
    num = (a[finite] - r[finite]).norm()
    den = r[finite].norm()
    if float(den) == 0.0:
        return float(num)
    return float(num / den)


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
    a, r = actual.detach().cpu(), reference.detach().cpu()
    if not a.is_floating_point():
        if not torch.equal(a, r.to(a.dtype)):
            raise AssertionError(f"{what}: integer results differ from the reference")
        return
    a64, r64 = a.double(), r.double()
    nan_a, nan_r = torch.isnan(a64), torch.isnan(r64)
    if not torch.equal(nan_a, nan_r):
        raise AssertionError(f"{what}: NaN in {int(nan_a.sum())} places, the reference has {int(nan_r.sum())}")
    inf_r = torch.isinf(r64)
    if not torch.equal(torch.isinf(a64), inf_r) or not torch.equal(a64[inf_r], r64[inf_r]):
        raise AssertionError(f"{what}: ±Inf do not match the reference")
    err = relative_error(a, r)
    tol = tolerance(dtype)
    if not err <= tol:
        raise AssertionError(f"{what}: relative error {err:.3g} exceeds the {dtype} tolerance {tol:g}")
