"""The job runner without Celery: step-wise rounds, idempotency, expiry, attempts, webhooks.

The scheduler here runs follow-up steps inline, in the order Celery would; Redis and the index
are real. The same runner under real Celery workers is tested in test_jobs_e2e.py.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from service.backends.embedded import EmbeddedBackend
from service.embeddings.cache import CachedEmbedder
from service.errors import LexsearchError
from service.jobs import JobKind, JobStatus
from service.pipelines.base import StepwisePipeline
from service.pipelines.build import Runtime
from tests.support.service import service_overrides, settings_for
from tests.support.webhook_receiver import WebhookReceiver
from workers.runner import JobRunner, WorkerContext, decode_state, encode_state

pytestmark = pytest.mark.engine

QUERY = "Der Vermieter gibt die Kaution nicht zurück"


class InlineScheduler:
    """Runs a round's rewrites one after the other, then the merge; records webhook requests."""

    def __init__(self) -> None:
        self.runner: JobRunner | None = None
        self.rounds: list[tuple[str, int, list[str]]] = []
        self.webhooks: list[str] = []

    def round(self, job_id: str, round_: int, agents: list[str]) -> None:
        assert self.runner is not None
        self.rounds.append((job_id, round_, agents))
        for agent in agents:
            self.runner.rewrite(job_id, round_, agent, agents)
        self.runner.merge(job_id, round_, agents)

    def webhook(self, job_id: str) -> None:
        self.webhooks.append(job_id)


@pytest.fixture
def setup(redis_url: str, mini_embedded: tuple[EmbeddedBackend, str], use_embedder: CachedEmbedder,
          embedding_cache_dir: Path) -> tuple[JobRunner, InlineScheduler]:
    backend, name = mini_embedded
    settings = settings_for(service_overrides(redis_url=redis_url, index_root=backend.root, index_name=name,
                                              cache_dir=embedding_cache_dir))
    import tests.support.slow_pipeline  # noqa: F401 - registers test-steps

    scheduler = InlineScheduler()
    # settle_heap=False: the tests share one process, whose heap one test freezing would change for the rest
    runner = JobRunner(WorkerContext(settings, runtime=Runtime(settings, backend=backend, embedder=use_embedder),
                                     settle_heap=False), scheduler)
    scheduler.runner = runner
    return runner, scheduler


def search_job(runner: JobRunner, pipeline: str, *, one_ranking: bool = True, k: int = 5, **extra: Any) -> str:
    """A search job on the mini index. The index holds statutes and decisions, whose searches run whole
    unless the job asks for one ranking (``one_ranking``), as these tests of the steps do by default."""
    search = {"query": QUERY, "index": "mini", "k": k, "explain": True,
              "options": {"one_ranking": True} if one_ranking else {}}
    request = {"search": search, "pipeline": pipeline, "status_url": "http://api/v1/jobs/x"}
    return runner.store.create(JobKind.SEARCH, request, **extra).id


def test_a_stepwise_job_runs_round_by_round(setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, scheduler = setup
    job_id = search_job(runner, "test-steps")
    assert runner.run_search(job_id) == "started"
    assert [(r, a) for _, r, a in scheduler.rounds] == [(0, ["terminology", "conditions", "supportive"]),
                                                        (1, ["repair", "decompose"])]
    job = runner.store.get(job_id)
    assert job is not None and job.status == JobStatus.SUCCEEDED and job.result_writes == 1
    assert job.result["trace"]["rounds"] == 2 and len(job.result["hits"]) == 5  # type: ignore[index]
    assert runner.store.load_state(job_id, 2)["data"]["round"] == 2  # type: ignore[index]


def test_repeated_steps_are_harmless(setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, _scheduler = setup
    job_id = search_job(runner, "test-steps")
    runner.run_search(job_id)
    assert runner.run_search(job_id) == "skipped"
    assert runner.rewrite(job_id, 0, "terminology", ["terminology"]) == "skipped"
    assert runner.merge(job_id, 0, ["terminology", "conditions", "supportive"]) == "skipped"
    job = runner.store.get(job_id)
    assert job is not None and job.result_writes == 1 and job.duplicate_completions == 0


def test_a_whole_pipeline_runs_in_one_step(setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, scheduler = setup
    job_id = search_job(runner, "hybrid")
    assert runner.run_search(job_id) == "succeeded" and not scheduler.rounds
    job = runner.store.get(job_id)
    assert job is not None and job.result["pipeline"] == "hybrid" and job.result["hits"][0]["snippet"]  # type: ignore


def test_the_heap_is_settled_once_after_the_first_search_work(setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, scheduler = setup
    runner.run_search(search_job(runner, "hybrid"))
    assert not runner.ctx.settled  # turned off for the fixture's runner
    context = WorkerContext(runner.ctx.settings, runtime=runner.ctx.runtime)
    settling = JobRunner(context, scheduler)
    frozen_before = gc.get_freeze_count()
    try:
        assert settling.run_search(search_job(settling, "hybrid")) == "succeeded"
        frozen = gc.get_freeze_count()
        assert context.settled and frozen > frozen_before
        assert settling.run_search(search_job(settling, "hybrid")) == "succeeded"
        assert gc.get_freeze_count() == frozen  # once per process
    finally:
        if frozen_before == 0:
            gc.unfreeze()


def test_states_are_only_rebuilt_from_trusted_modules(setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, _ = setup
    from tests.support.slow_pipeline import StepOutcome

    step = StepOutcome(agent="a", hits={"d": 1.0})
    assert decode_state(encode_state(step), runner.ctx.settings) == step
    with pytest.raises(LexsearchError, match="refusing"):
        decode_state({"type": "os:system", "data": {}}, runner.ctx.settings)
    assert isinstance(runner.ctx.runtime.pipeline("test-steps"), StepwisePipeline)
    assert not isinstance(runner.ctx.runtime.pipeline("hybrid"), StepwisePipeline)


def test_a_job_past_its_queue_deadline_expires_instead_of_running(
        setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, scheduler = setup
    job_id = search_job(runner, "hybrid", callback_url="http://hook")
    runner.store.client.hset(f"lexsearch:job:{job_id}", "expires_at", "1")
    assert runner.run_search(job_id) == "skipped"
    job = runner.store.get(job_id)
    assert job is not None and job.status == JobStatus.EXPIRED and job.result is None
    assert scheduler.webhooks == [job_id]


def test_a_job_whose_workers_keep_dying_fails(setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, _scheduler = setup
    job_id = search_job(runner, "hybrid")
    for _ in range(runner.ctx.settings.jobs.max_attempts):
        runner.store.begin_attempt(job_id)
    assert runner.run_search(job_id) == "skipped"
    job = runner.store.get(job_id)
    assert job is not None and job.status == JobStatus.FAILED and job.error["code"] == "worker_lost"  # type: ignore


def test_webhook_delivery_states(setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, scheduler = setup
    with WebhookReceiver() as receiver:
        job_id = search_job(runner, "hybrid", callback_url=receiver.url)
        runner.run_search(job_id)
        assert scheduler.webhooks == [job_id]
        assert runner.store.get(job_id).webhook == {"state": "pending", "attempts": 0}  # type: ignore[union-attr]
        receiver.script(500)
        from service.webhooks import WebhookError

        with pytest.raises(WebhookError):
            runner.deliver_webhook(job_id, attempt=0)
        assert runner.store.get(job_id).webhook["state"] == "retrying"  # type: ignore[union-attr,index]
        assert runner.deliver_webhook(job_id, attempt=1) == "delivered"
        assert runner.deliver_webhook(job_id, attempt=2) == "done before"
        assert len(receiver.deliveries) == 2
        other = search_job(runner, "hybrid", callback_url=receiver.url)
        runner.run_search(other)
        receiver.script(410)
        assert runner.deliver_webhook(other, attempt=0) == "failed"
        assert runner.store.get(other).webhook["state"] == "failed"  # type: ignore[union-attr,index]


def test_backoff_grows_and_is_capped(setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, _ = setup
    cfg = runner.ctx.settings.jobs
    waits = [runner.webhook_backoff_s(n) for n in range(12)]
    assert all(0 < w <= cfg.webhook_backoff_max_s for w in waits)
    assert waits[0] <= cfg.webhook_backoff_s


def test_the_agentic_pipeline_gives_the_same_answer_step_by_step(setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, scheduler = setup
    pipeline = runner.ctx.runtime.pipeline("agentic")
    assert isinstance(pipeline, StepwisePipeline)
    job_id = search_job(runner, "agentic")
    runner.run_search(job_id)
    job = runner.store.get(job_id)
    assert job is not None and job.status == JobStatus.SUCCEEDED, job.error
    assert scheduler.rounds, "the agentic pipeline planned at least one round"
    from service.pipelines.base import SearchRequest

    direct = pipeline.run(SearchRequest(QUERY, index="mini", k=5, options={"one_ranking": True}))
    assert [h["doc_id"] for h in job.result["hits"]] == [h.doc_id for h in direct.hits]  # type: ignore[index]
    assert job.result["trace"]["rounds"] == len(scheduler.rounds)  # type: ignore[index]


def test_a_search_of_statutes_and_decisions_runs_whole_and_merges_them(
        setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, scheduler = setup
    job_id = search_job(runner, "agentic", one_ranking=False)
    assert runner.run_search(job_id) == "succeeded"  # not "started": the two groups run one after the other
    assert not scheduler.rounds
    job = runner.store.get(job_id)
    assert job is not None and job.status == JobStatus.SUCCEEDED, job.error
    from service.pipelines.base import SearchRequest

    direct = runner.ctx.runtime.search_pipeline("agentic").run(SearchRequest(QUERY, index="mini", k=5))
    assert [h["doc_id"] for h in job.result["hits"]] == [h.doc_id for h in direct.hits]  # type: ignore[index]
    assert set(job.result["trace"]["groups"]) == {"statutes", "decisions"}  # type: ignore[index]


def test_a_search_deeper_than_the_retrieval_depth_runs_whole(setup: tuple[JobRunner, InlineScheduler]) -> None:
    runner, scheduler = setup
    deep = runner.ctx.settings.retrieval.depth + 20
    job_id = search_job(runner, "agentic", k=deep)
    assert runner.run_search(job_id) == "succeeded"  # not "started": head and tail are two searches
    assert not scheduler.rounds
    job = runner.store.get(job_id)
    assert job is not None and job.status == JobStatus.SUCCEEDED, job.error
    assert job.result["trace"]["deepened"]["depth"] == runner.ctx.settings.retrieval.depth  # type: ignore[index]
