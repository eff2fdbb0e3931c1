"""GCRA rate limits against a real Redis."""

from __future__ import annotations

import time

import pytest

from service.ratelimit import RateLimiter
from service.redisconn import connect

pytestmark = pytest.mark.engine


def test_a_burst_of_the_limit_passes_then_requests_are_refused(redis_url: str) -> None:
    limiter = RateLimiter(connect(redis_url))
    decisions = [limiter.hit("k", per_minute=5) for _ in range(6)]
    assert [d.allowed for d in decisions] == [True] * 5 + [False]
    assert [d.remaining for d in decisions[:5]] == [4, 3, 2, 1, 0]
    refused = decisions[-1]
    assert 11 <= refused.retry_after_s <= 12.1  # one request every 60/5 s
    assert refused.headers()["Retry-After"] == "12"


def test_the_limit_refills_evenly(redis_url: str) -> None:
    limiter = RateLimiter(connect(redis_url))
    per_minute = 60  # one request a second after the burst
    while limiter.hit("slow", per_minute=per_minute).allowed:
        pass
    time.sleep(1.05)
    assert limiter.hit("slow", per_minute=per_minute).allowed
    assert not limiter.hit("slow", per_minute=per_minute).allowed


def test_keys_are_limited_independently(redis_url: str) -> None:
    limiter = RateLimiter(connect(redis_url))
    assert limiter.hit("a", per_minute=1).allowed
    assert not limiter.hit("a", per_minute=1).allowed
    assert limiter.hit("b", per_minute=1).allowed
