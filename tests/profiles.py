"""Hypothesis profiles (docs/testing.md): `ci` in CI, `dev` by default elsewhere, `explore` on request.

    python -m pytest -q                                # CI=true: ci; otherwise dev
    python -m pytest -q --hypothesis-profile=explore   # more examples, new random seeds

- ci: a fixed seed per test (derandomize), no deadline, no example database, and the
  reproduction blob printed with a failure: every CI run draws the same examples, and a failure
  found there is replayed exactly.
- dev: random seeds (a new draw each run), no deadline, the blob printed on failure.
- explore: like dev with `explore_factor` times the examples of each test.

Tests set their own budget with `examples(n)`, which the profile scales.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

DEFAULT_MAX_EXAMPLES = 100  # hypothesis's own default, which ci and dev keep
EXPLORE_FACTOR = 10

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True, database=None)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.register_profile(
    "explore",
    deadline=None,
    print_blob=True,
    max_examples=DEFAULT_MAX_EXAMPLES * EXPLORE_FACTOR,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def examples(n: int) -> int:
    """A test's example budget `n`, scaled by the active profile (explore: EXPLORE_FACTOR times)."""
    return n * max(1, settings().max_examples // DEFAULT_MAX_EXAMPLES)
