"""What the views share within one server process: settings, runtime, stores, queue, traces."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import redis
from celery import Celery
from flask import current_app, g, request

from service.apikeys import ApiKeyStore
from service.config import Settings
from service.jobs import JobStore
from service.pipelines.build import Runtime
from service.trace_sink import TraceSink

EXTENSION = "lexsearch"


@dataclass
class ServiceContext:
    """The objects behind the API, built once per server process by ``create_app``."""

    settings: Settings
    runtime: Runtime
    client: redis.Redis
    jobs: JobStore
    keys: ApiKeyStore
    celery: Celery
    traces: TraceSink
    searches: ThreadPoolExecutor
    """Runs synchronous searches, so a search past its time budget can be handed over to a job."""
    probes: ThreadPoolExecutor
    """Runs the /ready checks, each with its own timeout."""
    pipelines: list[str]
    search_pipeline: str
    job_pipeline: str
    components: dict[str, Any] = field(default_factory=dict)
    spec: dict[str, Any] = field(default_factory=dict)

    def status_url(self, job_id: str) -> str:
        """The absolute URL of a job's status (``api.public_url``, else the URL the client used)."""
        base = self.settings.api.public_url or request.host_url
        return f"{base.rstrip('/')}/v1/jobs/{job_id}"


def service() -> ServiceContext:
    """The context of the current app."""
    return current_app.extensions[EXTENSION]


def request_id() -> str:
    return getattr(g, "request_id", "")
