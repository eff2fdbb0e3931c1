"""The job queue as the service sees it: task names, the queue, and a configured Celery app.

The API enqueues jobs **by task name** (``app.send_task``) through the app built here; it never
imports the task code. The workers (``workers.celery_app``) build the same app and register the
tasks on it. Redis is broker and result backend, configured for jobs that are never lost:

* ``acks_late`` + ``reject_on_worker_lost`` + prefetch 1: a message is acknowledged only after its
  task has finished; a pool process that dies hands its message back at once, and the messages of
  a worker that dies entirely are redelivered after the visibility timeout (``jobs.visibility_timeout_s``,
  longer than the longest job, so a running job is never delivered twice while it runs).
* Soft and hard time limits (``jobs.soft_time_limit_s``, ``jobs.time_limit_s``).
* The broker connection retries forever, so workers ride out a Redis restart.

Example::

    app = celery_app(load_settings())
    app.send_task(TASK_RUN_JOB, args=[job_id], task_id=job_id, retry=True, retry_policy=PUBLISH_RETRY)
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from service.config import Settings

QUEUE = "lexsearch"
TASK_RUN_JOB = "lexsearch.run_job"
TASK_INGEST = "lexsearch.ingest"
TASK_REWRITE = "lexsearch.rewrite_step"
TASK_MERGE = "lexsearch.merge_round"
TASK_WEBHOOK = "lexsearch.deliver_webhook"
PUBLISH_RETRY = {"max_retries": 3, "interval_start": 0.0, "interval_step": 0.5, "interval_max": 2.0}
"""How long a producer (API or task) keeps trying to reach the broker before giving up."""


def celery_app(settings: Settings) -> Celery:
    """A Celery app for these settings, with no task registered (producers need none).

    The settings travel with the app (``app.lexsearch_settings``); worker processes build their
    runtime from them lazily, on their first task.
    """
    jobs = settings.jobs
    app = Celery("lexsearch", broker=jobs.redis_url, backend=jobs.redis_url, set_as_current=False)
    transport: dict[str, Any] = {
        "visibility_timeout": int(jobs.visibility_timeout_s),
        "unacked_restore_interval": max(1, int(jobs.restore_interval_s)),
        "unacked_restore_throttle": 1,
        "socket_timeout": 10,
        "socket_connect_timeout": 5,
        "socket_keepalive": True,
        "health_check_interval": 10,
        "retry_on_timeout": True,
    }
    app.conf.update(
        task_default_queue=QUEUE,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        worker_prefetch_multiplier=1,
        worker_concurrency=jobs.worker_concurrency,
        task_soft_time_limit=jobs.soft_time_limit_s,
        task_time_limit=jobs.time_limit_s,
        task_ignore_result=True,
        result_expires=86_400,  # only chord bookkeeping lives there; job results are in the JobStore
        broker_transport_options=transport,
        result_backend_transport_options={"visibility_timeout": int(jobs.visibility_timeout_s),
                                          "retry_policy": {"timeout": 5.0}},
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        broker_connection_timeout=5,
        redis_socket_timeout=10,
        redis_socket_connect_timeout=5,
        redis_retry_on_timeout=True,
        redis_socket_keepalive=True,
        redis_backend_health_check_interval=10,
        # A task cut off from the broker finishes anyway: its result is written once, and the
        # redelivered copy finds the job final and does nothing.
        worker_cancel_long_running_tasks_on_connection_loss=False,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        task_send_sent_event=False,
    )
    app.lexsearch_settings = settings  # type: ignore[attr-defined]
    return app
