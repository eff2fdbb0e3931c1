"""What the job tasks do, kept apart from Celery so it reads (and is tested) as plain code.

A search job runs its pipeline in one of two ways:

* **step-wise** (pipelines with ``start/plan/rewrite/merge/finish``, such as ``agentic``): the
  state after each round is kept in the job store, each agent of a round is one task
  (:meth:`JobRunner.rewrite`), and a chord calls :meth:`JobRunner.merge` when all of them have
  stored their step, which plans and schedules the next round or finishes. No task ever waits
  for another; LLM requests are bounded across all workers by a Redis semaphore;
* **whole**: ``pipeline.run(request)`` in one task, for every other pipeline.

Every task is idempotent, keyed by job id: it reloads the job, does nothing when the job is
already final, and the result is written once (:meth:`JobStore.complete`). A redelivered or
duplicated task therefore costs time, never a second result.

Example::

    runner = JobRunner(WorkerContext(settings), scheduler)
    runner.run_search(job_id)
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import threading
import time
from contextlib import nullcontext
from typing import Any, Protocol

import redis

from service.backoff import backoff_s
from service.config import Settings
from service.corpus.model import LegalDoc
from service.errors import LexsearchError
from service.heap import settle_heap
from service.indexing import index_documents
from service.jobs import JobKind, JobRecord, JobStatus, JobStore
from service.lazy import built_once
from service.pipelines.base import SearchResponse, StepwisePipeline
from service.pipelines.build import Runtime
from service.redisconn import connect
from service.search_json import render_response, request_from_json
from service.trace_sink import TraceSink, build_trace_sink, trace_record
from service.webhooks import WebhookError, deliver
from workers.semaphore import RedisSemaphore

log = logging.getLogger("lexsearch.worker")

RETRIEVAL_ONLY = frozenset({"bm25", "dense", "hybrid"})
"""Pipelines that never call an LLM, so their jobs take no LLM slot."""


class Scheduler(Protocol):
    """How the runner starts follow-up work (Celery in production)."""

    def round(self, job_id: str, round_: int, agents: list[str]) -> None:
        """Run ``rewrite`` for every agent in parallel, then ``merge``."""

    def webhook(self, job_id: str) -> None:
        """Deliver the job's webhook (with retries)."""


class WorkerContext:
    """Everything one worker process needs, built lazily on first use (after the fork).

    ``settle_heap``: after the process's first search work (when its models are loaded), keep what it
    holds out of the garbage collector's full passes (:meth:`settle_once`), as the API does after
    its warm-up.
    """

    def __init__(self, settings: Settings, *, runtime: Runtime | None = None, settle_heap: bool = True) -> None:
        self.settings = settings
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._runtime: Runtime | None = runtime
        self._settle_heap = settle_heap
        self._frozen: int | None = None
        self._client: redis.Redis | None = None
        self._store: JobStore | None = None
        self._traces: TraceSink | None = None

    def _check_fork(self) -> None:
        # A context inherited through fork() must not reuse the parent's sockets.
        if os.getpid() != self._pid:
            self.__init__(self.settings, settle_heap=self._settle_heap)  # type: ignore[misc]  # no shared sockets

    @property
    def runtime(self) -> Runtime:
        self._check_fork()
        return built_once(self, "_runtime", self._lock, lambda: Runtime(self.settings))

    @property
    def client(self) -> redis.Redis:
        self._check_fork()
        return built_once(self, "_client", self._lock, lambda: connect(self.settings.jobs.redis_url))

    @property
    def store(self) -> JobStore:
        client = self.client
        return built_once(self, "_store", self._lock, lambda: JobStore(client, self.settings.jobs))

    @property
    def traces(self) -> TraceSink:
        self._check_fork()
        return built_once(self, "_traces", self._lock, lambda: build_trace_sink(self.settings))

    def settle_once(self) -> None:
        """Settle the heap (:func:`service.heap.settle_heap`) the first time this process calls it.

        The runner calls it after each piece of search work; the first call comes after the models
        and the index's resources have loaded lazily, so they leave the collector's full passes
        (0.2–0.3 s each with STARD's models) instead of one landing on a later job now and then.
        """
        self._check_fork()
        if self._settle_heap:
            built_once(self, "_frozen", self._lock, self._settle)

    @property
    def settled(self) -> bool:
        """Whether :meth:`settle_once` has settled this process's heap."""
        return self._frozen is not None

    @staticmethod
    def _settle() -> int:
        frozen = settle_heap()
        log.info("heap settled after the first search work; %d long-lived objects kept out of garbage collection",
                 frozen)
        return frozen

    def llm_slot(self) -> Any:
        """A context manager holding one cluster-wide LLM slot (a no-op when no LLM is configured)."""
        if not self.settings.llm.enabled:
            return nullcontext()
        jobs = self.settings.jobs
        slots = RedisSemaphore(self.client, "llm", limit=jobs.llm_concurrency or self.settings.llm.max_concurrency,
                               lease_s=jobs.soft_time_limit_s)
        return slots.hold(timeout_s=jobs.soft_time_limit_s / 2)


def encode_state(obj: Any) -> dict[str, Any]:
    """A step-wise state or step result as JSON, with its class so another process can rebuild it."""
    cls = type(obj)
    return {"type": f"{cls.__module__}:{cls.__qualname__}", "data": obj.to_json()}


def decode_state(envelope: dict[str, Any], settings: Settings) -> Any:
    """The object :func:`encode_state` described.

    Only classes from the ``service`` package or from ``api.pipeline_modules`` are rebuilt, so a
    record in Redis cannot make a worker import arbitrary code.

    Raises:
        LexsearchError: for a class outside those modules or without ``from_json``.
    """
    module_name, _, qualname = str(envelope.get("type", "")).partition(":")
    allowed = module_name == "service" or module_name.startswith("service.") or any(
        module_name == m or module_name.startswith(m + ".") for m in settings.api.pipeline_modules)
    if not allowed:
        raise LexsearchError(f"refusing to rebuild a pipeline state of type {envelope.get('type')!r}")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not callable(getattr(target, "from_json", None)):
        raise LexsearchError(f"{envelope.get('type')} has no from_json")
    return target.from_json(envelope["data"])


class JobRunner:
    """Runs job steps; see the module docstring. Every method is safe to call twice for one job."""

    def __init__(self, context: WorkerContext, scheduler: Scheduler) -> None:
        self.ctx = context
        self.scheduler = scheduler

    @property
    def store(self) -> JobStore:
        return self.ctx.store

    # ----- entry points --------------------------------------------------------------------------

    def run_search(self, job_id: str, *, first_delivery: bool = True) -> str:
        """Run (or, step-wise, start) a search job. Returns what happened, for the task log.

        ``first_delivery`` is false for retries after transient errors, which do not count as
        attempts (only deliveries after a dead worker do; see ``jobs.max_attempts``).
        """
        job = self._claim(job_id, count_attempt=first_delivery)
        if job is None:
            return "skipped"
        name = job.request["pipeline"]
        request = request_from_json(job.request["search"], default_index=self.ctx.settings.index.name)
        pipeline = self.ctx.runtime.search_pipeline(name)
        stepwise = pipeline.inner
        # A search of statutes and decisions runs whole: the two are searched one after the other; so
        # does one deeper than the retrieval depth (its head and its tail are two searches).
        if (isinstance(stepwise, StepwisePipeline) and self.ctx.settings.jobs.parallel_steps
                and not pipeline.runs_whole(request)):
            state = stepwise.start(request)
            self.store.save_state(job_id, 0, encode_state(state))
            self._advance(job_id, 0, stepwise, state)
            self.ctx.settle_once()
            return "started"
        # A whole run holds one LLM slot unless its pipeline never asks an LLM (a coarse bound; the
        # step-wise path bounds each rewrite on its own).
        slot = nullcontext() if name in RETRIEVAL_ONLY else self.ctx.llm_slot()
        with slot:
            response = pipeline.run(request)
        self._succeed(job_id, job, response)
        self.ctx.settle_once()
        return "succeeded"

    def rewrite(self, job_id: str, round_: int, agent: str, agents: list[str]) -> str:
        """One agent's rewrites of a round; stored once per (job, round, agent)."""
        job = self.store.get(job_id)
        if job is None or job.status.final:
            return "skipped"
        if agent in self.store.load_steps(job_id, round_):
            return "done before"
        pipeline = self.ctx.runtime.pipeline(job.request["pipeline"])
        envelope = self.store.load_state(job_id, round_)
        if envelope is None:
            raise LexsearchError(f"job {job_id}: the state of round {round_} is missing")
        state = decode_state(envelope, self.ctx.settings)
        with self.ctx.llm_slot():
            step = pipeline.rewrite(state, agent)
        self.store.save_step(job_id, round_, agent, encode_state(step))
        done = sorted(self.store.load_steps(job_id, round_))
        self.store.mark_running(job_id, f"round {round_ + 1}",
                                {"round": round_ + 1, "agents": agents, "agents_done": done})
        self.ctx.settle_once()
        return "stored"

    def merge(self, job_id: str, round_: int, agents: list[str]) -> str:
        """Merge a round's steps into the state, then plan the next round or finish."""
        job = self.store.get(job_id)
        if job is None or job.status.final:
            return "skipped"
        pipeline = self.ctx.runtime.pipeline(job.request["pipeline"])
        envelope = self.store.load_state(job_id, round_)
        if envelope is None:
            raise LexsearchError(f"job {job_id}: the state of round {round_} is missing")
        steps = self.store.load_steps(job_id, round_)
        missing = [a for a in agents if a not in steps]
        if missing:
            raise LexsearchError(f"job {job_id}: round {round_ + 1} has no step of {', '.join(missing)}")
        state = decode_state(envelope, self.ctx.settings)
        results = [decode_state(steps[agent], self.ctx.settings) for agent in agents]
        state = pipeline.merge(state, results)
        self.store.save_state(job_id, round_ + 1, encode_state(state))
        self._advance(job_id, round_ + 1, pipeline, state)
        self.ctx.settle_once()
        return "merged"

    def ingest(self, job_id: str, *, first_delivery: bool = True) -> str:
        """Index a batch of documents; the result reports indexed, failed and rejected documents."""
        job = self._claim(job_id, count_attempt=first_delivery)
        if job is None:
            return "skipped"
        req = job.request
        docs = [LegalDoc.from_dict(d) for d in req["documents"]]
        self.store.mark_running(job_id, "indexing", {"documents": len(docs)})
        runtime = self.ctx.runtime
        embedder = runtime.index_embedder(req["index"], req.get("language", ""))
        report = index_documents(runtime.backend, embedder, req["index"], docs,
                                 language=req.get("language", ""))
        result = {"index": req["index"], "sent": report.sent + len(req.get("rejected", [])),
                  "indexed": report.indexed, "failed": report.failed, "rejected": req.get("rejected", [])}
        if self.store.complete(job_id, result):
            self._finalised(job_id)
        return "succeeded"

    def fail(self, job_id: str, code: str, message: str) -> None:
        """Mark the job failed (final errors, time limits) and send its webhook."""
        if self.store.fail(job_id, code, message):
            self._finalised(job_id)

    def deliver_webhook(self, job_id: str, attempt: int) -> str:
        """Send the job's webhook once.

        Raises:
            WebhookError: when the attempt failed and may be retried (the task retries with backoff).
        """
        job = self.store.get(job_id)
        if job is None or not job.callback_url:
            return "no webhook"
        if job.webhook and job.webhook.get("state") in ("delivered", "failed"):
            return "done before"
        cfg = self.ctx.settings.jobs
        event = f"job.{job.status.value}"
        body = _dumps({"event": event, "job": job.to_public(job.request.get("status_url", ""))})
        try:
            status = deliver(job.callback_url, body, secret=cfg.webhook_secret, event=event,
                             delivery_id=f"{job_id}.{event}", timeout_s=cfg.webhook_timeout_s,
                             allow_private=cfg.webhook_allow_private)
        except WebhookError as exc:
            final = not exc.retryable or attempt + 1 >= cfg.webhook_max_attempts
            self.store.set_webhook(job_id, {"state": "failed" if final else "retrying", "attempts": attempt + 1,
                                            "last_error": str(exc)[:300]})
            if final:
                return "failed"
            raise
        self.store.set_webhook(job_id, {"state": "delivered", "attempts": attempt + 1, "http_status": status,
                                        "delivered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        return "delivered"

    def webhook_backoff_s(self, attempt: int) -> float:
        """Seconds before retry number ``attempt + 1`` (:func:`service.backoff.backoff_s`)."""
        cfg = self.ctx.settings.jobs
        return backoff_s(attempt, base_s=cfg.webhook_backoff_s, cap_s=cfg.webhook_backoff_max_s)

    # ----- internals -----------------------------------------------------------------------------

    def _claim(self, job_id: str, *, count_attempt: bool) -> JobRecord | None:
        """Load the job and mark it running; ``None`` when there is nothing (more) to do."""
        job = self.store.get(job_id)
        if job is None:
            log.warning("job %s has no record (expired or never created); skipping", job_id)
            return None
        if job.status == JobStatus.EXPIRED and self.store.expire(job_id):
            self._finalised(job_id)
            return None
        if job.status.final:
            if job.callback_url and job.webhook is None:
                self._finalised(job_id)  # the previous delivery of this task died before scheduling it
            return None
        attempts = self.store.begin_attempt(job_id) if count_attempt else max(1, job.attempts)
        limit = self.ctx.settings.jobs.max_attempts
        if attempts > limit:
            self.fail(job_id, "worker_lost", f"the job was interrupted {attempts - 1} times (its worker died); "
                                             "it is not retried again")
            return None
        stage = "search" if job.kind == JobKind.SEARCH else "indexing"
        if not self.store.mark_running(job_id, stage, {"attempt": attempts}):
            return None
        return job

    def _advance(self, job_id: str, round_: int, pipeline: Any, state: Any) -> None:
        agents = pipeline.plan(state)
        if not agents:
            self.store.mark_running(job_id, "finish", {"rounds": round_})
            response = pipeline.finish(state)
            job = self.store.get(job_id)
            if job is not None:
                self._succeed(job_id, job, response)
            return
        agents = list(dict.fromkeys(agents))
        if self.store.mark_running(job_id, f"round {round_ + 1}",
                                   {"round": round_ + 1, "agents": agents, "agents_done": []}):
            self.scheduler.round(job_id, round_, agents)

    def _succeed(self, job_id: str, job: JobRecord, response: SearchResponse) -> None:
        request = request_from_json(job.request["search"], default_index=self.ctx.settings.index.name)
        took_ms = (time.time() - (job.started_at or job.created_at)) * 1000
        body = render_response(self.ctx.runtime.backend, request, response, pipeline=job.request["pipeline"],
                               took_ms=took_ms, embedder=self.ctx.runtime.embedder_or_none(request.index))
        body["job_id"] = job_id
        if self.store.complete(job_id, body):
            self._finalised(job_id)
            self.ctx.traces.emit(trace_record(
                kind="job", request_id=job.request.get("request_id", ""), job_id=job_id, key_id=job.owner,
                index=request.index, pipeline=body["pipeline"], trace=response.trace, latency_ms=took_ms,
                hits=len(body["hits"]), returned=body["returned"], status="succeeded",
                query_chars=len(request.query), lang=request.lang))

    def _finalised(self, job_id: str) -> None:
        """Log the job's end (one JSON line with its ids) and schedule its webhook."""
        job = self.store.get(job_id)
        if job is None:
            return
        end = job.finished_at or time.time()
        log.info("job finished", extra={"fields": {
            "job_id": job_id, "request_id": job.request.get("request_id", ""), "kind": job.kind.value,
            "status": job.status.value, "error": (job.error or {}).get("code", ""), "attempts": job.attempts,
            "ms": round((end - job.created_at) * 1000, 1), "key_id": job.owner}})
        if job.callback_url:
            self.store.set_webhook(job_id, {"state": "pending", "attempts": 0})
            self.scheduler.webhook(job_id)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

