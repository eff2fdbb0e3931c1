"""Waiting for an engine task: an operation the cluster runs in the background (``_tasks``).

A force-merge of a large index takes minutes to hours on small nodes (45 minutes for 1,000,000
documents on three 1 GB nodes, docs/SCALING.md). Held open as one HTTP request, it outlives the
client's timeout while the cluster goes on merging. Started with ``wait_for_completion=false``
instead, it returns a task id at once, and :func:`wait_for_task` polls ``GET _tasks/<id>`` until the
task has ended, with growing pauses and a deadline of its own.

Example::

    task_id = api.start_forcemerge("statutes-v2")
    status = wait_for_task(lambda: api.task(task_id), timeout_s=14_400, what="the force-merge of statutes-v2")
    problem = task_failure(status)      # '' when it succeeded
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from service.backoff import backoff_s
from service.errors import EngineUnavailable

log = logging.getLogger(__name__)

FIRST_POLL_S = 0.25
"""Pause before the second poll; it doubles up to :data:`POLL_CAP_S` (a small index merges in well under a second)."""
POLL_CAP_S = 15.0
"""Longest pause between two polls."""
PROGRESS_EVERY_S = 60.0
"""How often a task still running is logged."""


def wait_for_task(fetch: Callable[[], Mapping[str, Any]], *, timeout_s: float, what: str, advice: str = "",
                  clock: Callable[[], float] = time.monotonic,
                  sleep: Callable[[float], None] = time.sleep) -> Mapping[str, Any]:
    """Poll a task until its status says ``completed``, and return that status.

    Args:
        fetch: one ``GET _tasks/<id>`` (the engine's answer as a mapping).
        timeout_s: how long to wait in all.
        what: the operation, for the log and the error ("the force-merge of statutes-v2").
        advice: what the caller's user can do when the time runs out, appended to the error.
        clock, sleep: time sources (the loop's own tests pass a simulated clock).

    Raises:
        EngineUnavailable: when the task is still running after ``timeout_s``. The cluster goes on
            with it; the error says so.
    """
    started = clock()
    logged = started
    polls = 0
    while True:
        status = fetch()
        if status.get("completed"):
            return status
        now = clock()
        if now - started >= timeout_s:
            raise EngineUnavailable(f"{what} was still running after {now - started:.0f} s; the cluster goes "
                                    f"on with it" + (f". {advice}" if advice else ""))
        if now - logged >= PROGRESS_EVERY_S:
            log.info("%s still running after %.0f s", what, now - started)
            logged = now
        sleep(min(backoff_s(polls, base_s=FIRST_POLL_S, cap_s=POLL_CAP_S, jitter=False),
                  max(0.0, started + timeout_s - now)))
        polls += 1


def task_failure(status: Mapping[str, Any]) -> str:
    """Why a completed task failed (its ``error``, or shards that failed in its response); '' when it
    succeeded."""
    error = status.get("error")
    if error:
        if isinstance(error, Mapping):
            return str(error.get("reason") or error.get("type") or error)
        return str(error)
    shards = (status.get("response") or {}).get("_shards") or {}
    failed = int(shards.get("failed") or 0)
    if failed:
        reasons = "; ".join(str((f.get("reason") or {}).get("reason") or f.get("reason"))
                            for f in shards.get("failures") or [] if isinstance(f, Mapping))
        return f"{failed} shard(s) failed" + (f": {reasons}" if reasons else "")
    return ""
