"""A counting semaphore in Redis: bounds LLM requests in flight across every worker process.

The LLM client already bounds concurrency inside one process; workers are many processes on many
hosts, so the bound that protects the LLM endpoint (and its rate limit) lives in Redis. Holders
are members of a sorted set scored by the time they acquired; a holder that dies without
releasing (``kill -9``) is dropped once its lease has passed, so slots are never lost for good.

Example::

    slots = RedisSemaphore(client, "llm", limit=4, lease_s=300)
    with slots.hold(timeout_s=30):
        ...  # at most 4 of these run at once, cluster-wide
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from service.errors import LexsearchError
from service.redisconn import store_errors

PREFIX = "lexsearch:semaphore:"

# KEYS: the holders' sorted set. ARGV: lease ms, limit, token. Clock: Redis TIME.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
return 0
"""


class SlotsBusy(LexsearchError):
    """No slot became free in time (the task is retried later)."""

    code = "llm_busy"
    http_status = 503


class RedisSemaphore:
    """At most ``limit`` holders of ``name`` at once, across processes and hosts.

    Args:
        client: a Redis client (``service.redisconn.connect``).
        name: what is bounded (one semaphore per name).
        limit: the number of slots.
        lease_s: a holder is presumed dead after this long (set it above the longest hold).
    """

    def __init__(self, client: redis.Redis, name: str, *, limit: int, lease_s: float) -> None:
        if limit < 1:
            raise ValueError("a semaphore needs at least one slot")
        self.client = client
        self.key = PREFIX + name
        self.limit = limit
        self.lease_ms = int(lease_s * 1000)
        self._acquire = client.register_script(_ACQUIRE)

    def try_acquire(self) -> str | None:
        """A holder token when a slot is free now, else ``None``."""
        token = uuid.uuid4().hex
        with store_errors("the LLM semaphore"):
            got = self._acquire(keys=[self.key], args=[self.lease_ms, self.limit, token])
        return token if got else None

    def acquire(self, timeout_s: float) -> str:
        """Wait up to ``timeout_s`` for a slot.

        Raises:
            SlotsBusy: when none became free in time.
        """
        deadline = time.monotonic() + timeout_s
        pause = 0.02
        while True:
            token = self.try_acquire()
            if token is not None:
                return token
            if time.monotonic() >= deadline:
                raise SlotsBusy(f"all {self.limit} slots of {self.key} stayed busy for {timeout_s:.0f} s")
            time.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 2, 0.5)

    def release(self, token: str) -> None:
        with store_errors("the LLM semaphore"):
            self.client.zrem(self.key, token)

    def holders(self) -> int:
        """How many slots are held now (including holders past their lease not yet swept)."""
        with store_errors("the LLM semaphore"):
            return int(self.client.zcard(self.key))

    @contextmanager
    def hold(self, timeout_s: float) -> Iterator[None]:
        """Hold one slot for the duration of the block."""
        token = self.acquire(timeout_s)
        try:
            yield
        finally:
            self.release(token)
