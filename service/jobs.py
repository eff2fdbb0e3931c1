"""The job store: one record per asynchronous job, in Redis, shared by the API and the workers.

A job moves ``queued → running → succeeded | failed``, or to ``cancelled`` or ``expired`` from
any state that is not final. Every transition is one Lua script, so it is atomic across API
processes and workers, and a final state is never left again: :meth:`JobStore.complete` writes
the result once per job id, and every later call (a redelivered task, a duplicated chord
callback) is refused and counted in ``duplicate_completions``.

Records live ``jobs.ttl_days`` after they finish. After that the job reads as ``expired`` (the
result is dropped) for another ``jobs.tombstone_days``, and only then answers 404. A job that
waited longer than ``jobs.queue_timeout_s`` for a worker expires instead of running.

Redis layout (``lexsearch:`` prefix)::

    job:{id}                 hash: status, kind, owner, request, stage, progress, error, timestamps
    job:{id}:result          the result JSON, written once
    job:{id}:state:{round}   the state of a step-wise pipeline after ``round`` rounds
    job:{id}:steps:{round}   hash: agent -> that agent's step result in the round

Example::

    store = JobStore(connect(settings.jobs.redis_url), settings.jobs)
    job = store.create(JobKind.SEARCH, {"query": "deposit", "index": "swiss"}, owner="k1")
    store.mark_running(job.id, "search")
    store.complete(job.id, {"hits": []})     # True
    store.complete(job.id, {"hits": []})     # False: already succeeded
"""

from __future__ import annotations

import enum
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import redis

from service.config import JobsSettings
from service.errors import InvalidInput
from service.redisconn import store_errors

PREFIX = "lexsearch:"
DAY_S = 86_400.0


class JobStatus(enum.StrEnum):
    """Where a job stands. ``succeeded``, ``failed``, ``cancelled`` and ``expired`` are final."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"

    @property
    def final(self) -> bool:
        return self not in (JobStatus.QUEUED, JobStatus.RUNNING)


class JobKind(enum.StrEnum):
    """What a job does: answer a search, or index a batch of documents."""

    SEARCH = "search"
    INGEST = "ingest"


_OPEN = f"{JobStatus.QUEUED},{JobStatus.RUNNING}"

# KEYS: job hash, result key. ARGV: new status, allowed current statuses (comma list), now,
# result JSON ('' = none), error JSON ('' = none), result ttl ms, record ttl ms.
_FINISH = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return -1 end
if not string.find(',' .. ARGV[2] .. ',', ',' .. status .. ',', 1, true) then
  if ARGV[1] == 'succeeded' then redis.call('HINCRBY', KEYS[1], 'duplicate_completions', 1) end
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'finished_at', ARGV[3], 'updated_at', ARGV[3],
           'expires_at', tostring(tonumber(ARGV[3]) + tonumber(ARGV[6]) / 1000))
if ARGV[4] ~= '' then
  if redis.call('SET', KEYS[2], ARGV[4], 'NX', 'PX', ARGV[6]) then
    redis.call('HINCRBY', KEYS[1], 'result_writes', 1)
  end
end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[5]) end
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return 1
"""

# KEYS: job hash. ARGV: now, stage, progress JSON, lifetime s. Only while the job is open; the
# first start replaces the queue deadline by the job's lifetime.
_RUNNING = """
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' and status ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'running', 'stage', ARGV[2], 'progress', ARGV[3], 'updated_at', ARGV[1])
if not redis.call('HGET', KEYS[1], 'started_at') then
  redis.call('HSET', KEYS[1], 'started_at', ARGV[1], 'expires_at', tostring(tonumber(ARGV[1]) + tonumber(ARGV[4])))
end
return 1
"""


@dataclass(frozen=True)
class JobRecord:
    """A snapshot of one job. ``status`` already accounts for expiry (see the module docstring).

    Times are Unix seconds; ``expires_at`` is when the job turns (or turned) ``expired``.
    ``result_writes`` counts accepted results (1 for a succeeded job, never more);
    ``duplicate_completions`` counts refused attempts to complete it again.
    """

    id: str
    kind: JobKind
    status: JobStatus
    owner: str
    request: dict[str, Any]
    created_at: float
    updated_at: float
    expires_at: float
    started_at: float | None = None
    finished_at: float | None = None
    stage: str = ""
    progress: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    callback_url: str = ""
    attempts: int = 0
    result_writes: int = 0
    duplicate_completions: int = 0
    webhook: dict[str, Any] | None = None

    def to_public(self, status_url: str) -> dict[str, Any]:
        """The JSON view clients see (``GET /v1/jobs/{id}``, webhooks)."""
        out: dict[str, Any] = {
            "job_id": self.id,
            "kind": self.kind.value,
            "status": self.status.value,
            "status_url": status_url,
            "created_at": _iso(self.created_at),
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "expires_at": _iso(self.expires_at),
        }
        if self.status == JobStatus.RUNNING:
            out["progress"] = {"stage": self.stage, **self.progress}
        if self.status == JobStatus.SUCCEEDED:
            out["result"] = self.result
        if self.error is not None and self.status != JobStatus.SUCCEEDED:
            out["error"] = self.error
        if self.callback_url:
            out["webhook"] = self.webhook or {"state": "pending"}
        return out


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _float(value: str | None) -> float | None:
    return float(value) if value not in (None, "") else None


def new_job_id() -> str:
    """A random, URL-safe job id (32 hex digits)."""
    return uuid.uuid4().hex


def valid_job_id(job_id: str) -> bool:
    """Whether ``job_id`` has the shape :func:`new_job_id` produces (so it can be used in a key)."""
    return len(job_id) == 32 and all(ch in "0123456789abcdef" for ch in job_id)


class JobStore:
    """Job records in Redis. Cheap to construct; every method is one or two round trips.

    Args:
        client: a client from :func:`service.redisconn.connect` (``decode_responses=True``).
        settings: retention (``ttl_days``, ``tombstone_days``) and ``queue_timeout_s``.

    Every method raises :class:`~service.errors.StoreUnavailable` when Redis cannot be reached.
    """

    def __init__(self, client: redis.Redis, settings: JobsSettings) -> None:
        self.client = client
        self.settings = settings
        self._finish = client.register_script(_FINISH)
        self._running = client.register_script(_RUNNING)

    # ----- keys and lifetimes --------------------------------------------------------------------

    @staticmethod
    def _key(job_id: str, *parts: str | int) -> str:
        return PREFIX + ":".join(("job", job_id, *map(str, parts)))

    @property
    def _ttl_ms(self) -> int:
        return max(1, int(self.settings.ttl_days * DAY_S * 1000))

    @property
    def _record_ttl_ms(self) -> int:
        return self._ttl_ms + int(self.settings.tombstone_days * DAY_S * 1000)

    # ----- lifecycle -----------------------------------------------------------------------------

    def create(self, kind: JobKind, request: dict[str, Any], *, owner: str = "", callback_url: str = "",
               job_id: str | None = None) -> JobRecord:
        """Record a new ``queued`` job and return it.

        Args:
            kind: search or ingest.
            request: the validated request as plain JSON (the worker rebuilds everything from it).
            owner: the API key id that may see the job ('' when authentication is off).
            callback_url: where the webhook goes when the job ends ('' = none).
            job_id: a chosen id (tests); by default a fresh random one.
        """
        job_id = job_id or new_job_id()
        now = time.time()
        fields = {
            "id": job_id, "kind": kind.value, "status": JobStatus.QUEUED.value, "owner": owner,
            "request": json.dumps(request, ensure_ascii=False), "callback_url": callback_url,
            "created_at": repr(now), "updated_at": repr(now),
            "expires_at": repr(now + self.settings.queue_timeout_s), "stage": "queued", "progress": "{}",
            "attempts": "0", "result_writes": "0", "duplicate_completions": "0",
        }
        key = self._key(job_id)
        with store_errors("the job store"):
            if not self.client.hsetnx(key, "id", job_id):
                raise InvalidInput(f"job {job_id} exists already")
            pipe = self.client.pipeline()
            pipe.hset(key, mapping=fields)
            pipe.pexpire(key, self._record_ttl_ms + int(self.settings.queue_timeout_s * 1000))
            pipe.execute()
        return JobRecord(id=job_id, kind=kind, status=JobStatus.QUEUED, owner=owner, request=request,
                         created_at=now, updated_at=now, expires_at=now + self.settings.queue_timeout_s,
                         stage="queued", callback_url=callback_url)

    def get(self, job_id: str) -> JobRecord | None:
        """The job, or ``None`` when there is no record (never existed, or past its tombstone)."""
        if not valid_job_id(job_id):
            return None
        with store_errors("the job store"):
            pipe = self.client.pipeline()
            pipe.hgetall(self._key(job_id))
            pipe.get(self._key(job_id, "result"))
            raw, result = pipe.execute()
        if not raw or "status" not in raw:
            return None
        status = JobStatus(raw["status"])
        expires_at = float(raw.get("expires_at") or 0)
        if status != JobStatus.EXPIRED and time.time() > expires_at:
            # Past its lifetime: the queued job missed its start, or the result's retention ended.
            status, result = JobStatus.EXPIRED, None
            error = {"code": "expired", "message": _expiry_message(raw["status"])}
        else:
            error = json.loads(raw["error"]) if raw.get("error") else None
        return JobRecord(
            id=raw.get("id", job_id), kind=JobKind(raw.get("kind", "search")), status=status,
            owner=raw.get("owner", ""), request=json.loads(raw.get("request") or "{}"),
            created_at=float(raw["created_at"]), updated_at=float(raw.get("updated_at") or raw["created_at"]),
            expires_at=expires_at, started_at=_float(raw.get("started_at")),
            finished_at=_float(raw.get("finished_at")), stage=raw.get("stage", ""),
            progress=json.loads(raw.get("progress") or "{}"), error=error,
            result=json.loads(result) if result and status == JobStatus.SUCCEEDED else None,
            callback_url=raw.get("callback_url", ""), attempts=int(raw.get("attempts") or 0),
            result_writes=int(raw.get("result_writes") or 0),
            duplicate_completions=int(raw.get("duplicate_completions") or 0),
            webhook=json.loads(raw["webhook"]) if raw.get("webhook") else None,
        )

    def begin_attempt(self, job_id: str) -> int:
        """Count one more delivery of the job to a worker; returns the count (1 on the first)."""
        with store_errors("the job store"):
            return int(self.client.hincrby(self._key(job_id), "attempts", 1))

    def mark_running(self, job_id: str, stage: str, progress: dict[str, Any] | None = None) -> bool:
        """Set ``running`` with the current stage and progress.

        Returns:
            ``False`` when the job is already final (cancelled, expired...): the caller stops.
        """
        with store_errors("the job store"):
            return bool(self._running(keys=[self._key(job_id)],
                                      args=[repr(time.time()), stage, json.dumps(progress or {}),
                                            self._ttl_ms / 1000]))

    def complete(self, job_id: str, result: dict[str, Any]) -> bool:
        """Store the result and mark the job ``succeeded``, once.

        Returns:
            ``True`` for the one call that completed the job; ``False`` when it was already final
            (the attempt is counted in ``duplicate_completions`` and the stored result is kept).
        """
        return self._transition(job_id, JobStatus.SUCCEEDED, result=result)

    def fail(self, job_id: str, code: str, message: str) -> bool:
        """Mark the job ``failed`` with a machine-readable ``code`` and a sentence for people."""
        return self._transition(job_id, JobStatus.FAILED, error={"code": code, "message": message})

    def cancel(self, job_id: str) -> bool:
        """Mark a queued or running job ``cancelled``; ``False`` when it had already ended."""
        return self._transition(job_id, JobStatus.CANCELLED,
                                error={"code": "cancelled", "message": "the job was cancelled by the client"})

    def expire(self, job_id: str, message: str = "") -> bool:
        """Mark a queued or running job ``expired`` (it waited too long to start)."""
        return self._transition(job_id, JobStatus.EXPIRED, error={
            "code": "expired", "message": message or _expiry_message(JobStatus.QUEUED.value)})

    def _transition(self, job_id: str, status: JobStatus, *, result: dict[str, Any] | None = None,
                    error: dict[str, Any] | None = None) -> bool:
        with store_errors("the job store"):
            done = self._finish(
                keys=[self._key(job_id), self._key(job_id, "result")],
                args=[status.value, _OPEN, repr(time.time()),
                      json.dumps(result, ensure_ascii=False) if result is not None else "",
                      json.dumps(error, ensure_ascii=False) if error is not None else "",
                      self._ttl_ms, self._record_ttl_ms],
            )
        return int(done) == 1

    def set_webhook(self, job_id: str, info: dict[str, Any]) -> None:
        """Record the webhook delivery state (``pending``, ``delivered``, ``failed``) of a job."""
        with store_errors("the job store"):
            self.client.hset(self._key(job_id), "webhook", json.dumps(info))

    # ----- step-wise pipelines -------------------------------------------------------------------

    def save_state(self, job_id: str, round_: int, state: dict[str, Any]) -> None:
        """Keep a step-wise pipeline's state after ``round_`` rounds (read by the next round's tasks)."""
        with store_errors("the job store"):
            self.client.set(self._key(job_id, "state", round_), json.dumps(state, ensure_ascii=False),
                            px=self._ttl_ms)

    def load_state(self, job_id: str, round_: int) -> dict[str, Any] | None:
        with store_errors("the job store"):
            raw = self.client.get(self._key(job_id, "state", round_))
        return json.loads(raw) if raw else None

    def save_step(self, job_id: str, round_: int, agent: str, step: dict[str, Any]) -> bool:
        """Keep one agent's step result of a round; ``False`` when a result was already stored."""
        key = self._key(job_id, "steps", round_)
        with store_errors("the job store"):
            pipe = self.client.pipeline()
            pipe.hsetnx(key, agent, json.dumps(step, ensure_ascii=False))
            pipe.pexpire(key, self._ttl_ms)
            stored, _ = pipe.execute()
        return bool(stored)

    def load_steps(self, job_id: str, round_: int) -> dict[str, dict[str, Any]]:
        """Every stored step result of a round, by agent."""
        with store_errors("the job store"):
            raw = self.client.hgetall(self._key(job_id, "steps", round_))
        return {agent: json.loads(blob) for agent, blob in raw.items()}


def _expiry_message(previous_status: str) -> str:
    if previous_status == JobStatus.QUEUED:
        return "the job waited longer than the queue timeout for a worker and was not run; submit it again"
    return "the job's record passed its retention period; its result is no longer kept"
