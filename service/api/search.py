"""``POST /v1/search``: a synchronous search, routed by default.

The search runs with a time budget (``api.sync_budget_s``). Fast tiers answer 200 with the
results. When the question needs longer (an agentic tier, a slow LLM), the answer is **202**: the
same request continues as a job, and the body says so and where to poll::

    {"job_id": "…", "status": "queued", "status_url": ".../v1/jobs/…",
     "reason": "sync_budget_exceeded", "message": "…use POST /v1/jobs for questions like this…"}
"""

from __future__ import annotations

import time
from concurrent.futures import TimeoutError as FutureTimeout

from flask import Blueprint, Response, jsonify

from service.api.auth import principal
from service.api.body import search_body
from service.api.context import request_id, service
from service.api.jobs import accepted, submit_search_job
from service.api.timing import record, record_pipeline_stages, timed
from service.pipelines.base import SearchResponse
from service.search_json import render_response
from service.trace_sink import trace_record

bp = Blueprint("search", __name__)


@bp.post("/v1/search")
def search() -> Response:
    """Answer a question now, or hand it over to a job when it needs more than the time budget."""
    svc = service()
    with timed("body"):
        body, request = search_body("SearchRequest")
    name = body.get("pipeline") or svc.search_pipeline
    pipeline = svc.runtime.search_pipeline(name)
    budget = svc.settings.api.sync_budget_s
    started = time.perf_counter()
    began: list[float] = []

    def run() -> SearchResponse:
        began.append(time.perf_counter())
        return pipeline.run(request)

    future = svc.searches.submit(run)
    try:
        response = future.result(timeout=budget)
    except FutureTimeout:
        future.cancel()  # never started (all search threads busy): drop it; a started one runs out unobserved
        job = submit_search_job(svc, body, name, callback_url="")
        return accepted(svc, job, reason="sync_budget_exceeded", message=(
            f"this question needs more than the synchronous time budget of {budget:g} s (usually an agentic "
            "tier); it continues as a job: poll status_url, and send questions like this to POST /v1/jobs"))
    took_ms = (time.perf_counter() - started) * 1000
    record("queue", (began[0] - started) * 1000)
    record_pipeline_stages(response.trace.get("timings_ms") or {})
    record("search", took_ms)
    with timed("render"):
        out = render_response(svc.runtime.backend, request, response, pipeline=name, took_ms=took_ms,
                              embedder=svc.runtime.embedder_or_none(request.index))
    out["request_id"] = request_id()
    svc.traces.emit(trace_record(
        kind="search", request_id=request_id(), key_id=principal().key_id, index=request.index, pipeline=name,
        trace=response.trace, latency_ms=took_ms, hits=len(out["hits"]), returned=out["returned"],
        query_chars=len(request.query), lang=request.lang))
    with timed("json"):
        return jsonify(out)
