"""``/v1/jobs``: submit an asynchronous search, poll it, cancel it.

``POST /v1/jobs`` answers 202 with the job id and its status URL; a Celery worker runs the search
(the full agentic pipeline by default) and the result stays available for ``jobs.ttl_days``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from flask import Blueprint, Response, jsonify

from service.api.auth import principal
from service.api.body import search_body
from service.api.context import ServiceContext, request_id, service
from service.api.errors import Conflict
from service.errors import InvalidInput, JobNotFound, StoreUnavailable
from service.jobs import JobKind, JobRecord, new_job_id
from service.search_json import request_from_json, request_to_json
from service.taskqueue import PUBLISH_RETRY, TASK_RUN_JOB, TASK_WEBHOOK
from service.webhooks import check_callback_url

bp = Blueprint("jobs", __name__)


class QueueUnavailable(StoreUnavailable):
    """The job could not be handed to the queue (the broker is down)."""

    code = "queue_unavailable"


def checked_callback(svc: ServiceContext, body: dict[str, Any]) -> str:
    """The request's ``callback_url`` ('' when none), refused when webhooks are off or the URL is unsafe."""
    url = body.get("callback_url") or ""
    if not url:
        return ""
    if not svc.settings.jobs.webhook_secret:
        raise InvalidInput("this server sends no webhooks (jobs.webhook_secret is not set); poll the status URL",
                           code="webhooks_disabled")
    check_callback_url(url, allow_private=svc.settings.jobs.webhook_allow_private)
    return url


def enqueue(svc: ServiceContext, task: str, job_id: str) -> None:
    """Hand a created job to the workers; a broker outage fails the job and answers 503.

    Raises:
        QueueUnavailable: when the broker cannot be reached.
    """
    try:
        svc.celery.send_task(task, args=[job_id], task_id=job_id, retry=True, retry_policy=PUBLISH_RETRY)
    except Exception as exc:  # kombu and redis raise several unrelated types for an unreachable broker
        with contextlib.suppress(StoreUnavailable):
            svc.jobs.fail(job_id, "queue_unavailable", "the job could not be queued; submit it again")
        raise QueueUnavailable(f"the job queue is unavailable ({type(exc).__name__}); try again shortly") from None


def submit_search_job(svc: ServiceContext, body: dict[str, Any], pipeline: str, callback_url: str) -> JobRecord:
    """Create and queue a search job for a validated request body."""
    search = request_to_json(request_from_json(body, default_index=svc.settings.index.name))
    job_id = new_job_id()
    job = svc.jobs.create(JobKind.SEARCH, {"search": search, "pipeline": pipeline, "request_id": request_id(),
                                           "status_url": svc.status_url(job_id)},
                          owner=principal().key_id, callback_url=callback_url, job_id=job_id)
    enqueue(svc, TASK_RUN_JOB, job_id)
    return job


def accepted(svc: ServiceContext, job: JobRecord, **extra: Any) -> Response:
    """The 202 answer for a queued job (``Location`` points to its status)."""
    url = svc.status_url(job.id)
    response = jsonify({"job_id": job.id, "status": job.status.value, "status_url": url,
                        "request_id": request_id(), **extra})
    response.status_code = 202
    response.headers["Location"] = url
    return response


def _owned(svc: ServiceContext, job_id: str) -> JobRecord:
    job = svc.jobs.get(job_id)
    # Another key's job is reported as missing, so job ids leak nothing across keys.
    if job is None or (svc.settings.api.auth and job.owner != principal().key_id):
        raise JobNotFound(f"there is no job {job_id[:64]!r} (or it belongs to another API key, "
                          "or its record has been deleted after its retention period)")
    return job


@bp.post("/v1/jobs")
def create_job() -> Response:
    """Submit an asynchronous search."""
    svc = service()
    body, _ = search_body("JobRequest")
    callback = checked_callback(svc, body)
    job = submit_search_job(svc, body, body.get("pipeline") or svc.job_pipeline, callback)
    return accepted(svc, job)


@bp.get("/v1/jobs/<job_id>")
def get_job(job_id: str) -> Response:
    """The job's status, progress, and result or error."""
    svc = service()
    job = _owned(svc, job_id)
    return jsonify(job.to_public(svc.status_url(job.id)))


@bp.delete("/v1/jobs/<job_id>")
def cancel_job(job_id: str) -> Response:
    """Cancel a queued or running job."""
    svc = service()
    job = _owned(svc, job_id)
    if not svc.jobs.cancel(job.id):
        current = svc.jobs.get(job.id)
        status = current.status.value if current else "gone"
        raise Conflict(f"the job has already ended ({status}); nothing to cancel", code="job_finished")
    # Best effort: a queued task is dropped; a running one notices the cancellation at its next step,
    # and a task that starts anyway finds the job final and does nothing.
    with contextlib.suppress(Exception):
        svc.celery.control.revoke(job.id)
    if job.callback_url:
        svc.jobs.set_webhook(job.id, {"state": "pending", "attempts": 0})
        try:
            svc.celery.send_task(TASK_WEBHOOK, args=[job.id], retry=True, retry_policy=PUBLISH_RETRY)
        except Exception:
            svc.jobs.set_webhook(job.id, {"state": "failed", "attempts": 0, "last_error": "queue unavailable"})
    cancelled = svc.jobs.get(job.id)
    return jsonify((cancelled or job).to_public(svc.status_url(job.id)))

