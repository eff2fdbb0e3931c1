"""The OpenAPI 3.1 document (``/openapi.json``) and a readable page of it (``/docs``).

The request schemas in it are the ones the API validates with (:mod:`service.api.schemas`), and
every status an operation can answer is listed, so property-based fuzzers (schemathesis) can
check the service against it.
"""

from __future__ import annotations

import html
import json
from typing import Any

from flask import Blueprint, Response, jsonify

from service.api.context import service
from service.api.schemas import ref

bp = Blueprint("openapi", __name__)

_DESCRIPTIONS = {
    200: "OK", 202: "Accepted: a job was queued; poll status_url", 400: "Invalid request (see error.code)",
    401: "Missing, unknown or revoked API key", 403: "The key's scope does not allow this",
    404: "Not found", 405: "Method not allowed", 409: "Conflict with the resource's state",
    413: "Body larger than the limit", 415: "Body is not application/json", 429: "Rate limit exceeded (Retry-After)",
    500: "Internal error (logged under the request id)",
    503: "A dependency is down: engine, index, Redis or queue (Retry-After)",
}


def _responses(ok: dict[int, str], errors: tuple[int, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for status, schema in ok.items():
        out[str(status)] = {"description": _DESCRIPTIONS[status],
                            "content": {"application/json": {"schema": ref(schema)}}}
    for status in errors:
        out[str(status)] = {"description": _DESCRIPTIONS[status],
                            "content": {"application/json": {"schema": ref("Error")}}}
    return out


def _body(schema: str, example: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": ref(schema), "example": example}}}


AUTHED = (401, 429, 500)
WITH_BODY = (400, 413, 415)


def build_spec(components: dict[str, Any], *, search_pipeline: str, job_pipeline: str,
               sync_budget_s: float) -> dict[str, Any]:
    """The OpenAPI document for the given schemas and defaults."""
    job_id = {"name": "job_id", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 64}}
    index = {"name": "name", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 100}}
    secured = [{"bearer": []}, {"apiKey": []}]
    example_search = {"query": "Mein Vermieter gibt die Kaution nicht zurück", "index": "swiss", "k": 5,
                      "filters": {"law": ["OR"]}, "explain": False}
    paths: dict[str, Any] = {
        "/v1/search": {"post": {
            "operationId": "search", "tags": ["search"], "security": secured,
            "summary": f"Search now (pipeline {search_pipeline!r} by default)",
            "description": f"Answers 200 with results within {sync_budget_s:g} s; a search that needs longer "
                           "(an agentic tier) continues as a job and the answer is 202 with its status URL.",
            "requestBody": _body("SearchRequest", example_search),
            "responses": _responses({200: "SearchResult", 202: "JobAccepted"}, (*WITH_BODY, 403, 404, 503, *AUTHED)),
        }},
        "/v1/jobs": {"post": {
            "operationId": "createJob", "tags": ["jobs"], "security": secured,
            "summary": f"Submit an asynchronous search (pipeline {job_pipeline!r} by default)",
            "requestBody": _body("JobRequest", {**example_search,
                                                "callback_url": "https://cms.example.org/hooks/lexsearch"}),
            "responses": _responses({202: "JobAccepted"}, (*WITH_BODY, 403, 503, *AUTHED)),
        }},
        "/v1/jobs/{job_id}": {
            "get": {"operationId": "getJob", "tags": ["jobs"], "security": secured, "parameters": [job_id],
                    "summary": "Job status: queued, running (with progress), succeeded (with result), failed, "
                               "cancelled or expired",
                    "responses": _responses({200: "Job"}, (404, 503, *AUTHED))},
            "delete": {"operationId": "cancelJob", "tags": ["jobs"], "security": secured, "parameters": [job_id],
                       "summary": "Cancel a queued or running job",
                       "responses": _responses({200: "Job"}, (404, 409, 503, *AUTHED))},
        },
        "/v1/indices": {"get": {
            "operationId": "listIndices", "tags": ["indices"], "security": secured,
            "summary": "The indices this key may use, with statistics",
            "responses": _responses({200: "IndexList"}, (503, *AUTHED)),
        }},
        "/v1/indices/{name}/laws": {"get": {
            "operationId": "listLaws", "tags": ["indices"], "security": secured, "parameters": [index],
            "summary": "The index's law names, sorted: the values of the law filter",
            "responses": _responses({200: "LawList"}, (400, 403, 404, 503, *AUTHED)),
        }},
        "/v1/indices/{name}/documents": {"post": {
            "operationId": "ingestDocuments", "tags": ["indices"], "security": secured, "parameters": [index],
            "summary": "Add or replace documents, as a job (needs a key created with --ingest)",
            "requestBody": _body("IngestRequest", {"documents": [{"id": "or-257", "citation": "Art. 257 OR",
                                                                  "text": "Der Mieter muss ...", "law": "OR",
                                                                  "lang": "de"}]}),
            "responses": _responses({202: "JobAccepted"}, (*WITH_BODY, 403, 503, *AUTHED)),
        }},
        "/health": {"get": {"operationId": "health", "tags": ["operations"], "summary": "Liveness",
                            "responses": _responses({200: "Health"}, ())}},
        "/ready": {"get": {"operationId": "ready", "tags": ["operations"],
                           "summary": "Readiness: the engine and Redis answer",
                           "responses": {"200": {"description": "Ready",
                                                 "content": {"application/json": {"schema": ref("Ready")}}},
                                         "503": {"description": "Not ready",
                                                 "content": {"application/json": {"schema": ref("Ready")}}}}}},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "lexsearch", "version": "1",
                 "description": "Legal search: citations for everyday questions. Errors are JSON "
                                "{\"error\": {\"code\", \"message\", \"request_id\"}}. See docs/API.md."},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer lsk_..."},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            },
        },
    }


@bp.get("/openapi.json")
def openapi_json() -> Response:
    return jsonify(service().spec)


@bp.get("/docs")
def docs_page() -> Response:
    """The spec as one self-contained HTML page (no scripts, no external assets)."""
    spec = service().spec
    parts = [f"<h1>{html.escape(spec['info']['title'])} API</h1>",
             f"<p>{html.escape(spec['info']['description'])}</p>",
             '<p>Machine-readable: <a href="/openapi.json">/openapi.json</a></p>']
    for path, operations in spec["paths"].items():
        for method, op in operations.items():
            parts.append(f"<h2><code>{method.upper()} {html.escape(path)}</code></h2>"
                         f"<p>{html.escape(op.get('summary', ''))}</p>")
            if op.get("description"):
                parts.append(f"<p>{html.escape(op['description'])}</p>")
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                schema_name = body["schema"]["$ref"].rsplit("/", 1)[-1]
                parts.append(f"<p>Request body: <a href='#{schema_name}'>{schema_name}</a>, e.g.</p>"
                             f"<pre>{html.escape(json.dumps(body['example'], ensure_ascii=False, indent=2))}</pre>")
            codes = ", ".join(f"{code} {html.escape(r['description'])}" for code, r in op["responses"].items())
            parts.append(f"<p>Responses: {codes}</p>")
    parts.append("<h2>Schemas</h2>")
    for name, schema in spec["components"]["schemas"].items():
        parts.append(f"<h3 id='{name}'>{name}</h3>"
                     f"<pre>{html.escape(json.dumps(schema, ensure_ascii=False, indent=2))}</pre>")
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>lexsearch API</title>"
            "<style>body{font-family:sans-serif;max-width:60em;margin:auto}pre{background:#f4f4f4;padding:.5em;"
            "overflow:auto}</style></head><body>" + "".join(parts) + "</body></html>")
    return Response(page, mimetype="text/html")
