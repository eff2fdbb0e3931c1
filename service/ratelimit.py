"""Per-key rate limits in Redis, shared by every API process (generic cell rate algorithm).

A limit of N requests per minute allows a burst of N, then one more request every 60/N seconds.
GCRA keeps one timestamp per key (the "theoretical arrival time"), so it is exact, needs no
background cleanup and never lets two windows' worth of requests through at a window boundary,
unlike fixed-window counters. The clock is Redis's own (``TIME``), so API hosts with skewed
clocks agree.

Example::

    limiter = RateLimiter(connect(url))
    decision = limiter.hit("key:3f2a", per_minute=60)
    if not decision.allowed:
        ...  # 429 with Retry-After: decision.retry_after_s
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import redis

from service.redisconn import store_errors

PREFIX = "lexsearch:rate:"

GCRA_FUNCTION = """
local function gcra(key, period, limit)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local interval = period / limit
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  local new_tat = tat + interval
  local allow_at = new_tat - period
  if allow_at > now then
    return {0, 0, math.ceil(allow_at - now)}
  end
  redis.call('SET', key, tostring(new_tat), 'PX', math.ceil(new_tat - now) + 1)
  return {1, math.floor((now + period - new_tat) / interval), 0}
end
"""
"""Lua: ``gcra(key, period ms, limit per period)`` counts one request and returns {allowed, remaining,
retry ms}; other scripts (:mod:`service.apikeys`) call it to count in the same round trip."""

PERIOD_MS = 60_000

# KEYS: the limiter key. ARGV: period ms, limit per period.
_GCRA = GCRA_FUNCTION + "return gcra(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))\n"


@dataclass(frozen=True)
class RateDecision:
    """Whether one request may pass, how many more may follow at once, and when to retry if not."""

    allowed: bool
    limit: int
    remaining: int
    retry_after_s: float

    @classmethod
    def from_script(cls, result: list[int], per_minute: int) -> RateDecision:
        """The decision from the Lua ``gcra``'s {allowed, remaining, retry ms}."""
        allowed, remaining, retry_ms = result
        return cls(allowed=bool(allowed), limit=per_minute, remaining=int(remaining),
                   retry_after_s=int(retry_ms) / 1000)

    def headers(self) -> dict[str, str]:
        """``X-RateLimit-*`` (and ``Retry-After`` when refused) response headers."""
        out = {"X-RateLimit-Limit": str(self.limit), "X-RateLimit-Remaining": str(self.remaining)}
        if not self.allowed:
            out["Retry-After"] = str(max(1, math.ceil(self.retry_after_s)))
        return out


class RateLimiter:
    """GCRA limits keyed by name; raises :class:`~service.errors.StoreUnavailable` when Redis is down."""

    def __init__(self, client: redis.Redis) -> None:
        self._script = client.register_script(_GCRA)

    def hit(self, name: str, *, per_minute: int) -> RateDecision:
        """Count one request against ``name``'s limit of ``per_minute`` requests per minute."""
        with store_errors("the rate limiter"):
            result = self._script(keys=[PREFIX + name], args=[PERIOD_MS, per_minute])
        return RateDecision.from_script(result, per_minute)
