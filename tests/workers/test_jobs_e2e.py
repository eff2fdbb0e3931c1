"""Jobs end to end: real Redis, the API over real HTTP, two real Celery worker processes.

Covers the load acceptance test (200 concurrent jobs, each succeeding exactly once, counted from
the idempotent result records), step-wise pipelines as chords with LLM calls bounded across
workers, signed webhooks with retries, ingest jobs, cancellation and failures.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from service.jobs import JobStatus
from service.webhooks import verify_signature
from tests.support.corpus import long_question
from tests.support.openai_server import OpenAITestServer
from tests.support.service import wait_for
from tests.support.webhook_receiver import WebhookReceiver
from tests.workers.conftest import Deployment

pytestmark = pytest.mark.engine

QUERY = "Der Vermieter gibt die Kaution nach dem Ende der Miete nicht zurück"
LLM_SLOTS = 2


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAITestServer]:
    """An OpenAI-compatible test server whose answers take a moment, so concurrency is visible."""
    server = OpenAITestServer().start()

    def slow_answer(request: dict) -> dict:
        threading.Event().wait(0.3)
        return {"queries": ["Mietkaution Rückerstattung"]}

    server.default_chat = slow_answer
    yield server
    server.stop()


@pytest.fixture(scope="module")
def dep(deploy: Callable[..., Deployment], llm: OpenAITestServer) -> Deployment:
    deployment = deploy(env={"LEXSEARCH_TEST_SLOW_S": "3", "LEXSEARCH_TEST_STEP_S": "0.3"},
                        llm={"base_url": llm.base_url, "model": "test-model", "max_retries": 0},
                        jobs={"llm_concurrency": LLM_SLOTS}, api={"sync_budget_s": 1.0})
    deployment.worker("w1")
    deployment.worker("w2")
    return deployment


def test_200_concurrent_jobs_each_succeed_exactly_once(dep: Deployment) -> None:
    bodies = [{"query": f"{QUERY} {n}", "pipeline": "hybrid", "k": 5} for n in range(200)]
    with ThreadPoolExecutor(16) as pool:
        job_ids = list(pool.map(dep.submit, bodies))
    assert len(set(job_ids)) == 200
    store = dep.store

    def all_final() -> bool:
        return all(store.get(j).status.final for j in job_ids)  # type: ignore[union-attr]

    wait_for(all_final, timeout_s=180, interval_s=0.5, what="200 jobs to finish")
    records = [store.get(j) for j in job_ids]
    assert [r.status for r in records] == [JobStatus.SUCCEEDED] * 200  # type: ignore[union-attr]
    assert [r.result_writes for r in records] == [1] * 200  # type: ignore[union-attr]
    assert sum(r.duplicate_completions for r in records) == 0  # type: ignore[union-attr]
    result_keys = list(store.client.scan_iter("lexsearch:job:*:result", count=1000))
    assert len([k for k in result_keys if k.split(":")[2] in set(job_ids)]) == 200
    assert {r.result["job_id"] for r in records} == set(job_ids)  # type: ignore[union-attr, index]
    for n, record in enumerate(records):
        assert record.result["query"] == bodies[n]["query"] and record.result["hits"]  # type: ignore[index]


def test_a_job_answers_a_30000_character_question_whole(dep: Deployment) -> None:
    question = long_question(30_000)
    job = dep.wait(dep.submit({"query": question, "pipeline": "agentic", "k": 5}), timeout_s=120)
    assert job["status"] == "succeeded", job
    assert job["result"]["query"] == question and job["result"]["hits"]


def test_a_stepwise_job_runs_its_rounds_as_parallel_tasks(dep: Deployment, llm: OpenAITestServer) -> None:
    llm.max_in_flight = 0
    job_id = dep.submit({"query": QUERY, "pipeline": "test-steps", "k": 5, "explain": True,
                         "options": {"one_ranking": True}})  # the mini index holds decisions too
    seen_running = dep.wait(job_id, until=lambda job: job["status"] == "running" and
                            job["progress"]["stage"].startswith("round"))
    assert set(seen_running["progress"]["agents"]) <= {"terminology", "conditions", "supportive", "repair",
                                                         "decompose"}
    job = dep.wait(job_id)
    assert job["status"] == "succeeded", job
    trace = job["result"]["trace"]
    assert trace["rounds"] == 2
    assert trace["agents"] == [["terminology", "conditions", "supportive"], ["repair", "decompose"]]
    steps = dep.store.load_steps(job_id, 0)
    assert sorted(steps) == ["conditions", "supportive", "terminology"]
    assert {s["data"]["llm"] for s in steps.values()} == {"llm"}
    assert len({s["data"]["pid"] for s in steps.values()}) >= 2, "the round's rewrites ran in several processes"
    assert 1 <= llm.max_in_flight <= LLM_SLOTS, "LLM requests are bounded across all workers"


def test_webhooks_are_signed_and_retried_with_backoff(dep: Deployment) -> None:
    with WebhookReceiver() as receiver:
        receiver.script(500, 503)
        job_id = dep.submit({"query": QUERY, "pipeline": "hybrid", "callback_url": receiver.url})
        deliveries = receiver.wait(3)
        job = dep.wait(job_id, until=lambda j: j.get("webhook", {}).get("state") == "delivered")
    assert [d.status for d in deliveries] == [500, 503, 200]
    secret = dep.overrides["jobs"]["webhook_secret"]
    for delivery in deliveries:
        assert verify_signature(secret, delivery.headers["X-Lexsearch-Signature"], delivery.body)
        assert delivery.headers["X-Lexsearch-Delivery"] == f"{job_id}.job.succeeded"
    payload = json.loads(deliveries[-1].body)
    assert payload["event"] == "job.succeeded" and payload["job"]["job_id"] == job_id
    assert payload["job"]["result"]["hits"] and payload["job"]["status_url"].endswith(job_id)
    assert job["webhook"]["attempts"] == 3


def test_an_ingest_job_indexes_valid_documents_and_reports_the_rest(dep: Deployment) -> None:
    docs = [{"id": "ing-1", "citation": "Art. 1 TestG", "text": "Die Kaution ist nach Mietende zurückzuzahlen.",
             "law": "TestG", "lang": "de"},
            {"id": "ing-2", "citation": "Art. 2 TestG", "text": "Der Mieter darf kündigen.", "law": "TestG"},
            {"id": "bad id", "text": "x"}]
    response = requests.post(dep.api.url + "/v1/indices/ingested/documents", json={"documents": docs,
                             "language": "de"}, headers=dep.auth, timeout=30)
    assert response.status_code == 202, response.text
    job = dep.wait(response.json()["job_id"])
    assert job["status"] == "succeeded" and job["kind"] == "ingest", job
    result = job["result"]
    assert (result["sent"], result["indexed"], result["failed"]) == (3, 2, {})
    assert [r["position"] for r in result["rejected"]] == [2]
    found = requests.post(dep.api.url + "/v1/search", json={"query": "Kaution zurückzahlen", "index": "ingested",
                                                            "pipeline": "bm25"}, headers=dep.auth, timeout=30)
    assert found.json()["hits"][0]["doc_id"] == "ing-1"


def test_cancelling_a_running_job_keeps_it_cancelled(dep: Deployment) -> None:
    job_id = dep.submit({"query": QUERY, "pipeline": "test-slow"})
    dep.wait(job_id, until=lambda job: job["status"] == "running")
    cancelled = requests.delete(f"{dep.api.url}/v1/jobs/{job_id}", headers=dep.auth, timeout=30)
    assert cancelled.json()["status"] == "cancelled"
    wait_for(lambda: dep.store.get(job_id).duplicate_completions == 1,  # type: ignore[union-attr]
             timeout_s=30, what="the running search to finish and be refused")
    record = dep.store.get(job_id)
    assert record is not None and record.status == JobStatus.CANCELLED and record.result_writes == 0


def test_a_job_that_cannot_run_fails_with_a_reason(dep: Deployment) -> None:
    job = dep.wait(dep.submit({"query": QUERY, "index": "no-such-index", "pipeline": "hybrid"}))
    assert job["status"] == "failed" and job["error"]["code"] == "index_not_found"
    assert "no-such-index" in job["error"]["message"]


def test_a_search_over_its_budget_finishes_as_a_job(dep: Deployment) -> None:
    # LEXSEARCH_TEST_SLOW_S is read at search time: the in-process API sleeps past its 1 s budget.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LEXSEARCH_TEST_SLOW_S", "2")
        response = requests.post(dep.api.url + "/v1/search", json={"query": QUERY, "pipeline": "test-slow"},
                                 headers=dep.auth, timeout=30)
    assert response.status_code == 202 and response.json()["reason"] == "sync_budget_exceeded"
    job = dep.wait(response.json()["job_id"])
    assert job["status"] == "succeeded" and job["result"]["pipeline"] == "test-slow"
