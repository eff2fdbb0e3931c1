"""The Celery tasks: thin wrappers that pass a job id to :class:`workers.runner.JobRunner`.

=========================  =======================================  =====================================
task                       arguments                                does
=========================  =======================================  =====================================
``lexsearch.run_job``      job id                                   run a search job (or start its rounds)
``lexsearch.rewrite_step`` job id, round, agent, the round's agents  one agent's rewrites (chord header)
``lexsearch.merge_round``  job id, round, the round's agents        merge, then next round or finish
``lexsearch.ingest``       job id                                   index a batch of documents
``lexsearch.deliver_webhook`` job id                                POST the signed webhook, with backoff
=========================  =======================================  =====================================

Transient errors (engine unavailable, Redis lost, all LLM slots busy) are retried with
exponential backoff and jitter; when retries run out, or on any other error or a time limit,
:meth:`JobTask.on_failure` marks the job ``failed`` with a code and a message.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from billiard.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from celery import Celery, Task, chord
from kombu.exceptions import OperationalError

from service.config import Settings
from service.errors import EngineUnavailable, LexsearchError, StoreUnavailable
from service.pipelines.build import import_pipeline_modules
from service.taskqueue import (
    PUBLISH_RETRY,
    TASK_INGEST,
    TASK_MERGE,
    TASK_REWRITE,
    TASK_RUN_JOB,
    TASK_WEBHOOK,
    celery_app,
)
from service.webhooks import WebhookError
from workers.runner import JobRunner, WorkerContext
from workers.semaphore import SlotsBusy

log = logging.getLogger("lexsearch.worker")

TRANSIENT: tuple[type[Exception], ...] = (
    EngineUnavailable, StoreUnavailable, SlotsBusy, redis.ConnectionError, redis.TimeoutError, OperationalError,
)
"""Errors worth retrying: the engine, Redis or the LLM slots may be back in a moment."""


class CeleryScheduler:
    """Starts follow-up work as Celery tasks: a chord per round, a task per webhook."""

    def __init__(self, app: Celery) -> None:
        self.app = app

    def round(self, job_id: str, round_: int, agents: list[str]) -> None:
        header = [self.app.signature(TASK_REWRITE, args=(job_id, round_, agent, agents), immutable=True)
                  for agent in agents]
        merge = self.app.signature(TASK_MERGE, args=(job_id, round_, agents), immutable=True)
        chord(header, merge, app=self.app).apply_async(retry=True, retry_policy=PUBLISH_RETRY)

    def webhook(self, job_id: str) -> None:
        self.app.send_task(TASK_WEBHOOK, args=[job_id], retry=True, retry_policy=PUBLISH_RETRY)


def runner_of(app: Celery) -> JobRunner:
    """The process's runner (built once per app; its context rebuilds itself after a fork)."""
    runner = getattr(app, "_lexsearch_runner", None)
    if runner is None:
        runner = JobRunner(WorkerContext(app.lexsearch_settings), CeleryScheduler(app))  # type: ignore[attr-defined]
        app._lexsearch_runner = runner  # type: ignore[attr-defined]
    return runner


def describe_failure(exc: BaseException, task: Task) -> tuple[str, str]:
    """The job error ``(code, message)`` for a task's final exception."""
    if isinstance(exc, TimeLimitExceeded | SoftTimeLimitExceeded):
        conf = task.app.conf
        return "time_limit", (f"the job ran longer than its time limit ({conf.task_soft_time_limit:g} s soft, "
                              f"{conf.task_time_limit:g} s hard) and was stopped")
    if isinstance(exc, TRANSIENT):
        code = exc.code if isinstance(exc, LexsearchError) else "store_unavailable"
        return code, f"{exc} (still failing after {task.max_retries} retries)"
    if isinstance(exc, LexsearchError):
        return exc.code, str(exc)
    return "internal_error", f"the job failed unexpectedly ({type(exc).__name__}); see the worker log"


class JobTask(Task):
    """Base of the job tasks: a final failure marks the job failed (and sends its webhook)."""

    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        job_id = args[0] if args else kwargs.get("job_id")
        if not job_id:
            return
        code, message = describe_failure(exc, self)
        if code == "internal_error":
            log.error("job %s: task %s failed: %r", job_id, self.name, exc, exc_info=exc)
        try:
            runner_of(self.app).fail(job_id, code, message)
        except Exception:  # Redis itself may be what failed; the job then expires on its own
            log.exception("job %s: could not record the failure", job_id)


def make_celery(settings: Settings) -> Celery:
    """The service's Celery app (:func:`service.taskqueue.celery_app`) with every lexsearch task
    registered, after importing the extra pipeline modules (``api.pipeline_modules``)."""
    app = celery_app(settings)
    import_pipeline_modules(settings)
    register(app)
    return app


def register(app: Celery) -> None:
    """Register every lexsearch task on ``app``."""
    jobs = app.lexsearch_settings.jobs  # type: ignore[attr-defined]
    retrying: dict[str, Any] = {
        "bind": True, "base": JobTask, "autoretry_for": TRANSIENT, "max_retries": jobs.max_retries,
        "retry_backoff": max(1, int(jobs.retry_backoff_s)), "retry_backoff_max": int(jobs.retry_backoff_max_s),
        "retry_jitter": True,
    }

    @app.task(name=TASK_RUN_JOB, **retrying)
    def run_job(self: Task, job_id: str) -> str:
        return runner_of(self.app).run_search(job_id, first_delivery=self.request.retries == 0)

    @app.task(name=TASK_INGEST, **retrying)
    def ingest(self: Task, job_id: str) -> str:
        return runner_of(self.app).ingest(job_id, first_delivery=self.request.retries == 0)

    @app.task(name=TASK_REWRITE, ignore_result=False, **retrying)
    def rewrite_step(self: Task, job_id: str, round_: int, agent: str, agents: list[str]) -> str:
        return runner_of(self.app).rewrite(job_id, round_, agent, agents)

    @app.task(name=TASK_MERGE, **retrying)
    def merge_round(self: Task, job_id: str, round_: int, agents: list[str]) -> str:
        return runner_of(self.app).merge(job_id, round_, agents)

    @app.task(name=TASK_WEBHOOK, bind=True, max_retries=jobs.webhook_max_attempts - 1)
    def deliver_webhook(self: Task, job_id: str) -> str:
        runner = runner_of(self.app)
        try:
            return runner.deliver_webhook(job_id, self.request.retries)
        except WebhookError as exc:
            raise self.retry(countdown=runner.webhook_backoff_s(self.request.retries), exc=exc) from None
