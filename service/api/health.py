"""``/health`` (liveness: the process answers) and ``/ready`` (the engine and Redis answer).

``/ready`` runs both checks side by side, each bounded by ``api.ready_timeout_s``, and answers
200 ``{"ready": true, ...}`` or 503 ``{"ready": false, ...}`` with what failed. Load balancers
route on ``/ready``; orchestrators restart on ``/health``.
"""

from __future__ import annotations

import time
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from flask import Blueprint, Response, jsonify

from service.api.context import ServiceContext, service
from service.taskqueue import QUEUE

bp = Blueprint("health", __name__)


@bp.get("/health")
def health() -> Response:
    """Liveness only: no dependency is consulted."""
    return jsonify({"status": "ok"})


def check_engine(svc: ServiceContext) -> dict[str, Any]:
    """The engine answers and the default index can be opened."""
    backend = svc.runtime.backend
    index = svc.settings.index.name
    if not backend.ping():
        return {"ok": False, "message": "the search engine does not answer"}
    if not backend.exists(index):
        return {"ok": False, "message": f"the default index {index!r} does not exist"}
    documents = backend.count(index)  # opens the index: an unreadable one fails here
    return {"ok": True, "index": index, "documents": documents}


def check_redis(svc: ServiceContext) -> dict[str, Any]:
    """Redis (queue, job records, keys) answers; reports the queue length."""
    svc.client.ping()
    return {"ok": True, "queued": int(svc.client.llen(QUEUE))}


@bp.get("/ready")
def ready() -> Response:
    """Whether this process can serve searches and jobs right now."""
    svc = service()
    timeout = svc.settings.api.ready_timeout_s
    started = time.perf_counter()
    futures = {"engine": svc.probes.submit(check_engine, svc), "redis": svc.probes.submit(check_redis, svc)}
    checks: dict[str, dict[str, Any]] = {}
    for name, future in futures.items():
        remaining = max(0.0, timeout - (time.perf_counter() - started))
        try:
            result = future.result(timeout=remaining)
        except FutureTimeout:
            result = {"ok": False, "message": f"no answer within {timeout:g} s"}
        except Exception as exc:
            message = str(exc) or type(exc).__name__
            result = {"ok": False, "message": f"{getattr(exc, 'code', type(exc).__name__)}: {message}"[:500]}
        checks[name] = result
    ok = all(c["ok"] for c in checks.values())
    response = jsonify({"ready": ok, "checks": checks})
    response.status_code = 200 if ok else 503
    return response
