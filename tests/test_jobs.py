"""The job store against a real Redis: transitions, complete-once, expiry, step state."""

from __future__ import annotations

import threading
import time

import pytest

from service.config import JobsSettings
from service.errors import InvalidInput, StoreUnavailable
from service.jobs import JobKind, JobStatus, JobStore, new_job_id, valid_job_id
from service.redisconn import connect

pytestmark = pytest.mark.engine


@pytest.fixture
def store(redis_url: str) -> JobStore:
    return JobStore(connect(redis_url), JobsSettings(redis_url=redis_url))


def test_a_new_job_is_queued_and_readable(store: JobStore) -> None:
    job = store.create(JobKind.SEARCH, {"query": "Kaution"}, owner="k1", callback_url="https://x.example/h")
    got = store.get(job.id)
    assert got is not None
    assert (got.status, got.kind, got.owner, got.request) == (JobStatus.QUEUED, JobKind.SEARCH, "k1",
                                                               {"query": "Kaution"})
    public = got.to_public("https://api/v1/jobs/" + job.id)
    assert public["status"] == "queued" and public["webhook"] == {"state": "pending"}
    assert "result" not in public and "error" not in public


def test_running_reports_stage_and_progress(store: JobStore) -> None:
    job = store.create(JobKind.SEARCH, {})
    assert store.mark_running(job.id, "round 1", {"agents": ["terminology"]})
    got = store.get(job.id)
    assert got is not None and got.status == JobStatus.RUNNING and got.started_at is not None
    assert got.to_public("u")["progress"] == {"stage": "round 1", "agents": ["terminology"]}


def test_complete_writes_the_result_once(store: JobStore) -> None:
    job = store.create(JobKind.SEARCH, {})
    assert store.complete(job.id, {"hits": [1]})
    assert not store.complete(job.id, {"hits": [2]})
    assert not store.fail(job.id, "x", "y")
    got = store.get(job.id)
    assert got is not None
    assert (got.status, got.result, got.result_writes, got.duplicate_completions) == (
        JobStatus.SUCCEEDED, {"hits": [1]}, 1, 1)


def test_concurrent_completions_have_one_winner(store: JobStore) -> None:
    job = store.create(JobKind.SEARCH, {})
    wins: list[bool] = []
    barrier = threading.Barrier(8)

    def finish(n: int) -> None:
        barrier.wait()
        wins.append(store.complete(job.id, {"by": n}))

    threads = [threading.Thread(target=finish, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = store.get(job.id)
    assert wins.count(True) == 1 and got is not None and got.result_writes == 1
    assert got.duplicate_completions == 7


def test_cancel_only_while_open(store: JobStore) -> None:
    job = store.create(JobKind.SEARCH, {})
    assert store.cancel(job.id)
    assert not store.mark_running(job.id, "search")
    assert not store.complete(job.id, {})
    got = store.get(job.id)
    assert got is not None and got.status == JobStatus.CANCELLED and got.error["code"] == "cancelled"
    done = store.create(JobKind.SEARCH, {})
    store.complete(done.id, {})
    assert not store.cancel(done.id)


def test_failure_keeps_code_and_message(store: JobStore) -> None:
    job = store.create(JobKind.INGEST, {})
    assert store.fail(job.id, "engine_unavailable", "the engine is down")
    got = store.get(job.id)
    assert got is not None and got.to_public("u")["error"] == {"code": "engine_unavailable",
                                                              "message": "the engine is down"}


def test_a_job_that_waits_too_long_expires(redis_url: str) -> None:
    store = JobStore(connect(redis_url), JobsSettings(redis_url=redis_url, queue_timeout_s=0.2))
    job = store.create(JobKind.SEARCH, {})
    time.sleep(0.3)
    got = store.get(job.id)
    assert got is not None and got.status == JobStatus.EXPIRED and "queue timeout" in got.error["message"]
    assert store.expire(job.id)
    assert not store.mark_running(job.id, "search")


def test_results_expire_then_the_record_disappears(redis_url: str) -> None:
    seconds = 0.4 / 86_400
    store = JobStore(connect(redis_url), JobsSettings(redis_url=redis_url, ttl_days=seconds,
                                                      tombstone_days=seconds))
    job = store.create(JobKind.SEARCH, {})
    store.mark_running(job.id, "search")
    store.complete(job.id, {"hits": []})
    assert store.get(job.id).status == JobStatus.SUCCEEDED  # type: ignore[union-attr]
    time.sleep(0.5)
    expired = store.get(job.id)
    assert expired is not None and expired.status == JobStatus.EXPIRED and expired.result is None
    time.sleep(0.5)
    assert store.get(job.id) is None


def test_default_retention_is_at_least_seven_days(store: JobStore) -> None:
    job = store.create(JobKind.SEARCH, {})
    store.complete(job.id, {})
    got = store.get(job.id)
    assert got is not None and got.expires_at - time.time() >= 7 * 86_400 - 5
    assert store.client.pttl(f"lexsearch:job:{job.id}:result") >= 7 * 86_400_000 - 5000


def test_step_state_and_steps_roundtrip(store: JobStore) -> None:
    job = store.create(JobKind.SEARCH, {})
    store.save_state(job.id, 0, {"type": "m:C", "data": {"pool": {"a": 1.0}}})
    assert store.load_state(job.id, 0) == {"type": "m:C", "data": {"pool": {"a": 1.0}}}
    assert store.load_state(job.id, 1) is None
    assert store.save_step(job.id, 0, "terminology", {"x": 1})
    assert not store.save_step(job.id, 0, "terminology", {"x": 2})
    assert store.load_steps(job.id, 0) == {"terminology": {"x": 1}}


def test_ids_and_duplicates(store: JobStore) -> None:
    assert valid_job_id(new_job_id()) and not valid_job_id("../etc") and store.get("nope") is None
    job = store.create(JobKind.SEARCH, {})
    with pytest.raises(InvalidInput):
        store.create(JobKind.SEARCH, {}, job_id=job.id)


def test_an_unreachable_redis_is_a_clear_error() -> None:
    store = JobStore(connect("redis://127.0.0.1:1/0", timeout_s=0.5, retries=0), JobsSettings())
    with pytest.raises(StoreUnavailable, match="job store is unavailable"):
        store.create(JobKind.SEARCH, {})
