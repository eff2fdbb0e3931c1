"""Connecting to Redis: bounded timeouts, reconnects with backoff, and one user-facing error.

The job store, the API keys, the rate limiter and the LLM semaphore all connect through
:func:`connect`, so they behave alike when Redis restarts: the next command reconnects, a few
retries bridge a short outage, and a longer one surfaces as :class:`~service.errors.StoreUnavailable`.

Example::

    client = connect("redis://127.0.0.1:6379/0")
    with store_errors():
        client.ping()
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from service.errors import StoreUnavailable

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError)
"""Errors that mean 'Redis is unreachable right now' rather than 'the command was wrong'."""


def connect(url: str, *, timeout_s: float = 5.0, retries: int = 3) -> redis.Redis:
    """A client for ``url`` that decodes replies to ``str`` and reconnects on its own.

    Args:
        url: ``redis://[:password@]host:port/db``, ``rediss://...`` or ``unix:///path.sock?db=0``.
        timeout_s: read timeout of each command (connecting gives up after at most 2 s).
        retries: reconnect attempts (exponential backoff, capped at 1 s) before a command fails.

    Returns:
        A lazily connecting client; nothing is sent until the first command.
    """
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout_s,
        socket_connect_timeout=min(2.0, timeout_s),
        health_check_interval=30,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries),
        retry_on_error=list(TRANSIENT_ERRORS),
    )


@contextmanager
def store_errors(what: str = "Redis") -> Iterator[None]:
    """Turn connection-level Redis failures into :class:`StoreUnavailable` with a clear message.

    Raises:
        StoreUnavailable: when Redis cannot be reached or does not answer in time.
    """
    try:
        yield
    except TRANSIENT_ERRORS as exc:
        raise StoreUnavailable(f"{what} is unavailable ({type(exc).__name__}: {exc}); try again shortly") from None
    except redis.ResponseError as exc:
        # LOADING (replaying the append-only file after a restart) and MISCONF are transient too.
        if str(exc).startswith(("LOADING", "MISCONF", "READONLY", "MASTERDOWN")):
            raise StoreUnavailable(f"{what} is not ready ({exc}); try again shortly") from None
        raise
