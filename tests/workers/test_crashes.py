"""Faults with real processes: kill -9 of a worker or of its pool child, time limits, a Redis restart.

The deployment here has short limits (soft 10 s, hard 12 s, visibility timeout 15 s), so the
redelivery after a dead worker happens within the test's time; they stay well above the 2 s a
test job sleeps plus a cold worker's first-task start-up on a busy machine.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest
import requests

from service.jobs import JobStatus
from tests.workers.conftest import Deployment

pytestmark = pytest.mark.engine

QUERY = "Der Vermieter gibt die Kaution nicht zurück"


@pytest.fixture(scope="module")
def dep(deploy: Callable[..., Deployment]) -> Deployment:
    return deploy(env={"LEXSEARCH_TEST_SLOW_S": "2", "LEXSEARCH_TEST_STUCK_S": "60"},
                  jobs={"soft_time_limit_s": 10, "time_limit_s": 12, "visibility_timeout_s": 15,
                        "retry_backoff_max_s": 2, "webhook_backoff_max_s": 1, "restore_interval_s": 1})


def running(job: dict) -> bool:
    return job["status"] == "running"


def test_kill_9_of_a_worker_mid_job_still_gives_exactly_one_result(dep: Deployment) -> None:
    first = dep.worker("doomed", concurrency=1)
    job_id = dep.submit({"query": QUERY, "pipeline": "test-slow"})
    dep.wait(job_id, until=running)
    first.kill()  # main process and pool child, SIGKILL: nothing is acknowledged or cleaned up
    dep.workers.remove(first)
    assert dep.store.get(job_id).status == JobStatus.RUNNING  # type: ignore[union-attr]
    dep.worker("rescuer", concurrency=1)
    job = dep.wait(job_id, timeout_s=60)
    assert job["status"] == "succeeded", job
    record = dep.store.get(job_id)
    assert record is not None and record.result_writes == 1 and record.duplicate_completions == 0
    assert record.attempts == 2


def test_kill_9_of_a_pool_process_requeues_its_job_at_once(dep: Deployment) -> None:
    worker = dep.workers[0]
    job_id = dep.submit({"query": QUERY, "pipeline": "test-slow"})
    dep.wait(job_id, until=running)
    (child,) = worker.children()
    os.kill(child, signal.SIGKILL)  # reject_on_worker_lost hands the message back without waiting
    job = dep.wait(job_id, timeout_s=30)
    assert job["status"] == "succeeded", job
    record = dep.store.get(job_id)
    assert record is not None and record.result_writes == 1 and record.attempts == 2


def test_a_job_past_its_time_limit_fails_with_a_reason(dep: Deployment) -> None:
    job = dep.wait(dep.submit({"query": QUERY, "pipeline": "test-stuck"}), timeout_s=40)
    assert job["status"] == "failed" and job["error"]["code"] == "time_limit", job
    assert "10 s soft" in job["error"]["message"]


def test_the_service_recovers_from_a_redis_restart_without_restarting(dep: Deployment) -> None:
    before = dep.wait(dep.submit({"query": QUERY, "pipeline": "hybrid"}))
    assert before["status"] == "succeeded"
    dep.redis.restart()  # while idle; the append-only file keeps keys and job records
    assert dep.job(before["job_id"])["status"] == "succeeded"
    assert requests.get(dep.api.url + "/ready", timeout=10).json()["ready"]
    after = dep.wait(dep.submit({"query": QUERY, "pipeline": "hybrid"}), timeout_s=60)
    assert after["status"] == "succeeded", after
