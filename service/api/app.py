"""The Flask application factory.

Example::

    app = create_app(load_settings())          # or create_app() to read LEXSEARCH_* and the config file
    app.run()                                  # development only; production: `lexsearch serve`
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from flask import Flask, Response, g, request
from flask.json.provider import DefaultJSONProvider

from service.api import health, indices, jobs, openapi, search
from service.api.auth import authenticate, principal
from service.api.context import EXTENSION, ServiceContext
from service.api.errors import register_error_handlers
from service.api.schemas import build_components
from service.api.timing import header as server_timing
from service.api.timing import timed
from service.apikeys import ApiKeyStore
from service.config import Settings, load_settings
from service.cpu import resolve
from service.heap import settle_heap
from service.jobs import JobStore
from service.pipelines.build import Runtime, import_pipeline_modules, pipeline_names
from service.redisconn import connect
from service.taskqueue import celery_app
from service.trace_sink import build_trace_sink

log = logging.getLogger("lexsearch.api")

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class _JsonProvider(DefaultJSONProvider):
    """JSON that also writes numpy scalars and arrays (scores and traces may hold them)."""

    ensure_ascii = False
    sort_keys = False

    @staticmethod
    def default(o: Any) -> Any:
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        return DefaultJSONProvider.default(o)


def default_pipelines(settings: Settings, names: list[str]) -> tuple[str, str]:
    """The pipelines of ``POST /v1/search`` and ``POST /v1/jobs`` when a request names none.

    Search: ``api.default_pipeline``, else ``routed`` when registered, else ``hybrid``.
    Jobs: ``api.job_pipeline``, else ``agentic`` when registered, else the search default.
    """
    search_default = settings.api.default_pipeline or ("routed" if "routed" in names else "hybrid")
    job_default = settings.api.job_pipeline or ("agentic" if "agentic" in names else search_default)
    for name in (search_default, job_default):
        if name not in names:
            from service.errors import ConfigError

            raise ConfigError(f"pipeline {name!r} is not registered; known: {', '.join(names)}")
    return search_default, job_default


def create_app(settings: Settings | None = None) -> Flask:
    """The lexsearch HTTP API for ``settings`` (read from the environment and config file when ``None``).

    Nothing connects at creation: Redis, the engine and the models are reached on first use, so
    the app starts even while a dependency is down (``/ready`` says so).

    Raises:
        ConfigError: for invalid settings or an unknown default pipeline.
    """
    # One server process among api.workers: its share of the cores (service/cpu.py).
    settings = resolve(settings or load_settings(), role="serve")
    import_pipeline_modules(settings)
    names = pipeline_names()
    search_default, job_default = default_pipelines(settings, names)
    components = build_components(settings, pipelines=names, search_pipeline=search_default,
                                  job_pipeline=job_default)
    client = connect(settings.jobs.redis_url)
    svc = ServiceContext(
        settings=settings, runtime=Runtime(settings), client=client, jobs=JobStore(client, settings.jobs),
        keys=ApiKeyStore(client), celery=celery_app(settings),
        traces=build_trace_sink(settings),
        searches=ThreadPoolExecutor(settings.api.sync_threads, thread_name_prefix="search"),
        probes=ThreadPoolExecutor(8, thread_name_prefix="ready"),
        pipelines=names, search_pipeline=search_default, job_pipeline=job_default, components=components,
    )
    svc.spec = openapi.build_spec(components, search_pipeline=search_default, job_pipeline=job_default,
                                  sync_budget_s=settings.api.sync_budget_s)

    app = Flask("lexsearch")
    app.json = _JsonProvider(app)
    app.config["MAX_CONTENT_LENGTH"] = settings.api.max_body_bytes
    app.extensions[EXTENSION] = svc
    for blueprint in (search.bp, jobs.bp, indices.bp, health.bp, openapi.bp):
        app.register_blueprint(blueprint)
    register_error_handlers(app)
    app.before_request(_before)
    app.after_request(_after)
    return app


def warm_up(app: Flask) -> None:
    """Load now what the first search of the default index would (its query embedder, the trained
    models, the corpus graph), so the first request is not slow; then settle the heap
    (:func:`service.heap.settle_heap`), so full garbage collections stop traversing all of that.

    Failures are logged, not raised: a dependency that is down shows up in ``/ready``.
    """
    svc: ServiceContext = app.extensions[EXTENSION]
    try:
        index = svc.settings.index.name
        if svc.runtime.backend.exists(index):
            svc.runtime.preload(index)
        else:
            svc.runtime.embedder.embed_queries(["warm-up"])
    except Exception as exc:
        log.warning("warm-up incomplete: %s: %s", type(exc).__name__, exc)
    frozen = settle_heap()
    log.info("warm-up done; %d long-lived objects kept out of garbage collection", frozen)


def _before() -> None:
    g.started = time.perf_counter()
    g.method = request.method
    incoming = request.headers.get("X-Request-Id", "")
    g.request_id = incoming if _REQUEST_ID.match(incoming) else uuid.uuid4().hex
    # Unknown paths and methods answer 404/405 before any key check; matched /v1 endpoints need a key.
    if request.routing_exception is None and request.path.startswith("/v1/"):
        with timed("auth"):
            authenticate()


def _after(response: Response) -> Response:
    ms = (time.perf_counter() - g.get("started", time.perf_counter())) * 1000
    response.headers["X-Request-Id"] = g.get("request_id", "")
    response.headers["Server-Timing"] = server_timing(ms)
    for name, value in (g.get("rate_headers") or {}).items():
        response.headers.setdefault(name, value)
    fields = {
        "request_id": g.get("request_id", ""), "method": request.method, "path": request.path,
        "status": response.status_code, "ms": round(ms, 2), "key_id": principal().key_id,
    }
    if g.get("job_id"):
        fields["job_id"] = g.job_id
    log.info("request", extra={"fields": fields})
    return response
