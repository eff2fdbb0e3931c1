"""The one retry-delay rule (pure function)."""

from __future__ import annotations

import pytest

from service.backoff import backoff_s

pytestmark = pytest.mark.unit


def test_without_jitter_the_wait_doubles_up_to_the_cap() -> None:
    assert [backoff_s(r, base_s=1.0, cap_s=5.0, jitter=False) for r in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_equal_jitter_stays_in_the_upper_half_of_the_nominal_wait() -> None:
    for retry, nominal in ((0, 0.5), (2, 2.0), (10, 8.0)):
        waits = [backoff_s(retry, base_s=0.5, cap_s=8.0) for _ in range(200)]
        assert all(nominal / 2 <= w <= nominal for w in waits)
        assert len(set(waits)) > 1


def test_a_negative_retry_counts_as_the_first() -> None:
    assert backoff_s(-1, base_s=2.0, jitter=False) == 2.0


def test_a_very_late_retry_waits_the_cap_instead_of_overflowing() -> None:
    assert backoff_s(5000, base_s=1.0, cap_s=30.0, jitter=False) == 30.0
    assert 15.0 <= backoff_s(5000, base_s=1.0, cap_s=30.0) <= 30.0
