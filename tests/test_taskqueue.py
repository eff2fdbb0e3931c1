"""The job queue as the API sees it: names and a configured app, with no task code."""

from __future__ import annotations

import pytest

from service.config import load_settings
from service.taskqueue import QUEUE, TASK_INGEST, TASK_MERGE, TASK_REWRITE, TASK_RUN_JOB, TASK_WEBHOOK, celery_app
from workers.tasks import make_celery

pytestmark = pytest.mark.unit
NAMES = {TASK_RUN_JOB, TASK_INGEST, TASK_REWRITE, TASK_MERGE, TASK_WEBHOOK}


def test_the_service_app_is_configured_but_holds_no_task_code() -> None:
    app = celery_app(load_settings(environ={}))
    assert app.conf.task_default_queue == QUEUE and app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1
    assert not NAMES & set(app.tasks)


def test_the_workers_register_every_task_on_the_same_configuration() -> None:
    app = make_celery(load_settings(environ={}))
    assert set(app.tasks) >= NAMES
    assert app.conf.task_default_queue == QUEUE and app.conf.task_acks_late
