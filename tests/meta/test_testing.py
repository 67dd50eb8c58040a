"""tilec.testing: the comparison every test and the benchmark rely on, checked against itself."""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

import tilec.testing as tt


@settings(max_examples=examples(40), deadline=None)
@example(n=1, chunk=1, seed=2359, special=None)  # found by the explore profile: |r| = 0.06 and a 1e-3 offset
@given(
    n=st.integers(0, 60),
    chunk=st.integers(1, 17),
    seed=st.integers(0, 2**16),
    special=st.sampled_from([None, "nan", "inf"]),
)
def test_chunked_comparison_is_the_whole_tensor_comparison(n: int, chunk: int, seed: int, special: str | None) -> None:
    g = torch.Generator().manual_seed(seed)
    r = torch.randn(n, generator=g, dtype=torch.float64)
    # a relative perturbation: an absolute one is not small next to a lone small value (n=1)
    a = r * (1 + 1e-3 * torch.randn(n, generator=g, dtype=torch.float64))
    if special and n:
        a[n // 2] = r[n // 2] = float(special)
    finite = torch.isfinite(r)
    num, den = float((a[finite] - r[finite]).norm()), float(r[finite].norm())
    whole = num / den if den else num
    with pytest.MonkeyPatch.context() as m:
        m.setattr(tt, "CHUNK", chunk)
        assert tt.relative_error(a, r) == pytest.approx(whole, rel=1e-9)
        tt.assert_close(a.float(), r, torch.bfloat16)


@pytest.mark.parametrize("chunk", [1, 4, tt.CHUNK])
def test_mismatches_are_reported_wherever_they_fall(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tt, "CHUNK", chunk)
    r = torch.linspace(1, 2, 10)
    a = r.clone()
    a[7] = float("nan")
    with pytest.raises(AssertionError, match="NaN in 1 places, the reference has 0"):
        tt.assert_close(a, r)
    a[7] = float("inf")
    with pytest.raises(AssertionError, match="±Inf do not match"):
        tt.assert_close(a, r)
    r[7] = float("-inf")
    with pytest.raises(AssertionError, match="±Inf do not match"):
        tt.assert_close(a, r)
    r[7] = float("inf")
    tt.assert_close(a, r)
    with pytest.raises(AssertionError, match=r"relative error 0\.1 exceeds"):
        tt.assert_close(a * 1.1, r)
    with pytest.raises(AssertionError, match="shape"):
        tt.assert_close(a[:5], r)
    with pytest.raises(AssertionError, match="integer results differ"):
        tt.assert_close(torch.arange(3), torch.tensor([0, 1, 3]))
