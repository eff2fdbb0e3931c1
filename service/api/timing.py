"""``Server-Timing``: where a request's milliseconds went inside the server.

Every answer carries a ``Server-Timing`` header (W3C Server Timing) with the stages the request
went through, e.g. ``auth;dur=0.4, queue;dur=0.1, embed;dur=3.2, retrieve;dur=1.1, fuse;dur=0.3,
search;dur=4.9, render;dur=2.0, json;dur=0.2, app;dur=8.1``. ``app`` is the whole time inside the
application; what a client measures beyond it went to HTTP parsing, the server's hand-offs
between threads, and the network. Browsers' developer tools show the header;
``scripts/bench_api.py`` adds it up per stage.

Example::

    with timed("render"):
        body = render_response(...)
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from flask import g


def record(name: str, ms: float) -> None:
    """Add ``ms`` milliseconds to stage ``name`` of the current request."""
    stages: dict[str, float] = g.setdefault("server_timing", {})
    stages[name] = stages.get(name, 0.0) + ms


@contextmanager
def timed(name: str) -> Iterator[None]:
    """Time the block as stage ``name`` of the current request."""
    start = time.perf_counter()
    try:
        yield
    finally:
        record(name, (time.perf_counter() - start) * 1000)


def record_pipeline_stages(timings: Mapping[str, object]) -> None:
    """The pipeline's own stages (``embed``, ``retrieve``, ``fuse``...) from its trace, without its total."""
    for name, ms in timings.items():
        if name != "total" and isinstance(ms, int | float) and not isinstance(ms, bool):
            record(name, float(ms))


def header(app_ms: float) -> str:
    """The ``Server-Timing`` value of the current request, ending with the whole ``app`` time."""
    stages = {**g.get("server_timing", {}), "app": app_ms}
    return ", ".join(f"{_token(name)};dur={ms:.2f}" for name, ms in stages.items())


def _token(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name)
