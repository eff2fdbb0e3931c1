"""Waiting for an engine task (service/backends/engine/tasks.py): the polling loop on a simulated
clock, and how a finished task's failure is read. The real force-merge task of both engines is
exercised in tests/backends/engine_acceptance.py."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from service.backends.engine.tasks import POLL_CAP_S, task_failure, wait_for_task
from service.errors import EngineUnavailable


class SimulatedTime:
    """A clock that advances only when the loop sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def running_until(done_at: float, time: SimulatedTime) -> Callable[[], dict[str, object]]:
    """A task status source whose task completes at ``done_at`` simulated seconds."""
    def fetch() -> dict[str, object]:
        if time.now >= done_at:
            return {"completed": True, "response": {"_shards": {"total": 3, "successful": 3, "failed": 0}}}
        return {"completed": False, "task": {"action": "indices:admin/forcemerge"}}
    return fetch


def test_polls_with_growing_pauses_until_the_task_completes() -> None:
    time = SimulatedTime()
    status = wait_for_task(running_until(100.0, time), timeout_s=3600, what="the merge",
                           clock=time.clock, sleep=time.sleep)
    assert status["completed"] and task_failure(status) == ""
    assert time.pauses[:4] == [0.25, 0.5, 1.0, 2.0]
    assert max(time.pauses) == POLL_CAP_S
    assert 100.0 <= time.now < 100.0 + POLL_CAP_S


def test_a_task_done_at_once_is_not_waited_for() -> None:
    time = SimulatedTime()
    wait_for_task(running_until(0.0, time), timeout_s=1, what="the merge", clock=time.clock, sleep=time.sleep)
    assert time.pauses == []


def test_a_task_still_running_at_the_deadline_raises_and_says_what_goes_on(caplog) -> None:
    time = SimulatedTime()
    with caplog.at_level(logging.INFO, logger="service.backends.engine.tasks"), \
            pytest.raises(EngineUnavailable) as raised:
        wait_for_task(running_until(10_000.0, time), timeout_s=600, what="the force-merge of laws-v2 (task n:1)",
                      advice="Nothing was published.", clock=time.clock, sleep=time.sleep)
    message = str(raised.value)
    assert message == ("the force-merge of laws-v2 (task n:1) was still running after 600 s; the cluster goes on "
                       "with it. Nothing was published.")
    assert time.now == 600.0  # the last pause stops at the deadline, not past it
    assert any("still running after" in r.getMessage() for r in caplog.records)  # progress while waiting


@pytest.mark.parametrize(("status", "problem"), [
    ({"completed": True, "response": {"_shards": {"total": 2, "successful": 2, "failed": 0}}}, ""),
    ({"completed": True, "error": {"type": "index_not_found_exception", "reason": "no such index [x]"}},
     "no such index [x]"),
    ({"completed": True, "response": {"_shards": {"total": 2, "successful": 1, "failed": 1, "failures": [
        {"shard": 0, "reason": {"type": "io_exception", "reason": "disk full"}}]}}},
     "1 shard(s) failed: disk full"),
])
def test_reads_why_a_completed_task_failed(status, problem) -> None:
    assert task_failure(status) == problem
