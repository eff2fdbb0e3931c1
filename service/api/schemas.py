"""The JSON schemas of every request and response, built from the settings (limits, pipeline names).

They are published in ``/openapi.json`` (``components.schemas``) and used by
:mod:`service.api.validation` to check requests, so the document and the checks agree. No engine
query DSL can pass: every request field is listed, typed and bounded, and unknown fields are
refused.

Example::

    components = build_components(settings, pipelines=["bm25", "hybrid"])
    components["SearchRequest"]["properties"]["k"]["maximum"]    # settings.api.max_k
"""

from __future__ import annotations

from typing import Any

from service.agents.base import REWRITING_AGENTS
from service.analysis.chain import LANGUAGES as ANALYSED_LANGUAGES
from service.apikeys import INDEX_NAME
from service.config import Settings
from service.corpus.model import FILTER_FIELDS, DocKind
from service.plugins import RERANKERS

LANGUAGES = ("", *ANALYSED_LANGUAGES)
JOB_STATUSES = ("queued", "running", "succeeded", "failed", "cancelled", "expired")
MAX_FILTER_VALUES = 50
MAX_TEXT_CHARS = 200_000
ERROR_CODES_DOC = (
    "invalid_json, invalid_request, empty_query, query_too_long, invalid_filter, unknown_pipeline, "
    "invalid_callback_url, webhooks_disabled, unsupported_media_type, body_too_large, missing_api_key, "
    "invalid_api_key, index_forbidden, ingest_forbidden, rate_limited, not_found, method_not_allowed, "
    "index_not_found, job_not_found, job_finished, engine_unavailable, engine_timeout, index_unavailable, "
    "store_unavailable, "
    "queue_unavailable, internal_error"
)


def ref(name: str) -> dict[str, str]:
    """A JSON-schema reference to the component schema ``name``."""
    return {"$ref": f"#/components/schemas/{name}"}


def _object(properties: dict[str, Any], *, required: list[str] | None = None, **keywords: Any) -> dict[str, Any]:
    """A JSON-schema object with ``properties`` (``required`` among them) and any further ``keywords``."""
    return {"type": "object", **({"required": required} if required is not None else {}), "properties": properties,
            **keywords}


def _strings(max_items: int, max_chars: int = 200) -> dict[str, Any]:
    return {"type": "array", "minItems": 1, "maxItems": max_items,
            "items": {"type": "string", "minLength": 1, "maxLength": max_chars}}


def _search_properties(settings: Settings, pipelines: list[str], default_pipeline: str) -> dict[str, Any]:
    filters: dict[str, Any] = {name: _strings(MAX_FILTER_VALUES) for name in FILTER_FIELDS}
    filters["kind"] = {"type": "array", "minItems": 1, "maxItems": len(DocKind), "uniqueItems": True,
                       "items": {"type": "string", "enum": [k.value for k in DocKind]}}
    filters["lang"] = {"type": "array", "minItems": 1, "maxItems": 5, "uniqueItems": True,
                       "items": {"type": "string", "enum": [lang for lang in LANGUAGES if lang]}}
    filters["date_from"] = {"type": "string", "format": "date", "example": "2020-01-01"}
    filters["date_to"] = {"type": "string", "format": "date", "example": "2024-12-31"}
    options = {
        "reranker": {"type": "string", "enum": list(RERANKERS.choices()),
                     "description": "Reranker of agentic pipelines (auto: llm with an LLM, else learned)."},
        "agents": {"type": "array", "maxItems": len(REWRITING_AGENTS), "uniqueItems": True,
                   "items": {"type": "string", "enum": list(REWRITING_AGENTS)},
                   "description": "Rewriting agents the agentic pipeline may use."},
        "max_rounds": {"type": "integer", "minimum": 0, "maximum": 4},
        "prefilter": {"type": "boolean", "description": "Law prefilter (agentic)."},
        "hyde": {"type": "boolean", "description": "Hypothetical answer passages (agentic, LLM mode only)."},
        "citations": {"type": "boolean", "description": "Citation-graph expansion (agentic)."},
        "tier": {"type": "integer", "minimum": 0, "maximum": 3, "description": "Force a routing tier (routed)."},
        "no_cliff": {"type": "boolean", "description": "Return a fixed top-k instead of the score-cliff cut."},
        "one_ranking": {"type": "boolean", "description": "Rank an index of statutes and decisions as one corpus "
                                                          "instead of each group on its own, merged."},
    }
    return {
        "query": {"type": "string", "minLength": 1, "maxLength": settings.retrieval.max_query_chars,
                  "x-error-codes": {"minLength": "empty_query", "maxLength": "query_too_long"},
                  "description": "The question, in everyday words; long case files (facts first, the question "
                                 "last) are searched whole, never cut.",
                  "example": "Mein Vermieter gibt die Kaution nicht zurück"},
        "index": {"type": "string", "pattern": INDEX_NAME.pattern, "maxLength": 100,
                  "description": f"Index to search (default {settings.index.name!r})."},
        "k": {"type": "integer", "minimum": 1, "maximum": settings.api.max_k, "default": 10},
        "filters": _object(filters, additionalProperties=False,
                           description="Exact-match metadata restrictions, applied inside every retriever."),
        "lang": {"type": "string", "enum": list(LANGUAGES), "description": "The question's language ('' = detect)."},
        "explain": {"type": "boolean", "default": False, "description": "Include the full trace."},
        "pipeline": {"type": "string", "enum": pipelines, "default": default_pipeline},
        "options": _object(options, additionalProperties=False),
    }


def build_components(settings: Settings, *, pipelines: list[str], search_pipeline: str,
                     job_pipeline: str) -> dict[str, Any]:
    """Every schema of the API, keyed by name (the ``components.schemas`` of the OpenAPI document)."""
    search = _search_properties(settings, pipelines, search_pipeline)
    job = {**_search_properties(settings, pipelines, job_pipeline),
           "callback_url": {"type": "string", "format": "uri", "maxLength": 2048,
                            "description": "Receives a signed POST when the job ends (see Webhooks)."}}
    document = _object(required=["id", "text"], additionalProperties=False, properties={
        "id": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"^\S+$"},
        "text": {"type": "string", "maxLength": MAX_TEXT_CHARS},
        "citation": {"type": "string", "maxLength": 500},
        "title": {"type": "string", "maxLength": 1000},
        "lang": {"type": "string", "maxLength": 10},
        "law": {"type": "string", "maxLength": 500},
        "kind": {"type": "string", "enum": [k.value for k in DocKind]},
        "date": {"type": ["string", "null"], "format": "date"},
        "court": {"type": "string", "maxLength": 200},
        "division": {"type": "string", "maxLength": 200},
        "chamber": {"type": "string", "maxLength": 200},
        "case_type": {"type": "string", "maxLength": 200},
        "cites": {"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 200}},
        "meta": {"type": "object"},
    })
    error_fields = _object(required=["code", "message", "request_id"], properties={
        "code": {"type": "string", "description": f"One of: {ERROR_CODES_DOC}."},
        "message": {"type": "string", "description": "A complete sentence for people."},
        "request_id": {"type": "string"},
        "path": {"type": "string", "description": "For invalid_request: the offending value."},
        "retry_after_s": {"type": "number"},
    })
    pinpoint = _object(required=["paragraph", "citation"], properties={
        "paragraph": {"type": "string", "example": "3"},
        "citation": {"type": "string", "example": "Art. 257e Abs. 3 OR"}})
    version = _object(required=["doc_id", "lang", "citation"], properties={
        "doc_id": {"type": "string"}, "lang": {"type": "string"}, "citation": {"type": "string"}})
    hit = _object(required=["rank", "doc_id", "citation", "score", "scores"], properties={
        "rank": {"type": "integer"},
        "doc_id": {"type": "string", "description": "The hit's id; for an article in several languages, the "
                                                     "id of the work (its first version), in every language."},
        "citation": {"type": "string", "description": "Citation of the version shown."},
        "law": {"type": "string"}, "title": {"type": "string"}, "kind": {"type": "string"},
        "lang": {"type": "string", "description": "Language of the version shown: the question's (or the lang "
                                                  "filter's) when the work has it, else its first version's."},
        "pinpoint": {"type": "array", "description": "The best-matching paragraph(s) of a statute article, e.g. "
                                                     "Art. 257e Abs. 3 OR; empty when it has one paragraph.",
                     "items": pinpoint},
        "version": {"type": "string", "description": "Only for works in several versions: the id of the "
                                                     "version shown (citation, title, snippet)."},
        "versions": {"type": "array", "description": "Only for works in several versions: every version "
                                                     "with its language and citation, the work's first first.",
                     "items": version},
        "score": {"type": ["number", "null"]},
        "scores": {"type": "object", "additionalProperties": {"type": ["number", "null"]},
                   "description": "The score of every stage (bm25, knn, fusion, reranker)."},
        "ranks": {"type": "object", "additionalProperties": {"type": "integer"}},
        "provenance": {"type": "array", "items": {"type": "object"}},
        "snippet": {"type": ["object", "null"], "properties": {
            "text": {"type": "string"},
            "highlights": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}},
                           "description": "[start, end) character spans of snippet.text that matched."},
            "html": {"type": "string", "description": "The snippet, HTML-escaped, matches in <em>."},
        }},
    })
    result = _object(required=["query", "index", "pipeline", "tier", "k", "returned", "hits", "took_ms"], properties={
        "query": {"type": "string"}, "index": {"type": "string"}, "pipeline": {"type": "string"},
        "tier": {"type": ["integer", "null"], "description": "Routing tier 0-3 (null when not routed)."},
        "k": {"type": "integer"},
        "returned": {"type": "integer", "description": "Size of the answer set: the first `returned` hits."},
        "hits": {"type": "array", "items": ref("Hit")},
        "took_ms": {"type": "number"},
        "trace": {"type": "object", "description": "Only with explain=true."},
        "request_id": {"type": "string"},
    })
    job_view = _object(required=["job_id", "kind", "status", "status_url", "created_at"], properties={
        "job_id": {"type": "string"},
        "kind": {"type": "string", "enum": ["search", "ingest"]},
        "status": {"type": "string", "enum": list(JOB_STATUSES)},
        "status_url": {"type": "string"},
        "created_at": {"type": "string"}, "started_at": {"type": ["string", "null"]},
        "finished_at": {"type": ["string", "null"]}, "expires_at": {"type": ["string", "null"]},
        "progress": {"type": "object", "description": "While running: stage and stage details."},
        "result": {"description": "When succeeded: a SearchResult or an IngestReport."},
        "error": {"type": "object", "description": "When failed, cancelled or expired: code and message."},
        "webhook": {"type": "object", "description": "Delivery state when a callback_url was given."},
    })
    ingest = _object(required=["documents"], additionalProperties=False, properties={
        "documents": {"type": "array", "minItems": 1, "maxItems": settings.api.max_documents,
                      "items": {"type": "object"},
                      "description": "Documents in the corpus line format (see Document); each is "
                                     "checked on its own and invalid ones are reported, not indexed."},
        "language": {"type": "string", "enum": list(LANGUAGES),
                     "description": "Language of documents that name none ('' = detect)."},
        "callback_url": job["callback_url"],
    })
    return {
        "SearchRequest": _object(search, required=["query"], additionalProperties=False),
        "JobRequest": _object(job, required=["query"], additionalProperties=False),
        "Document": document,
        "IngestRequest": ingest,
        "Hit": hit,
        "SearchResult": result,
        "JobAccepted": _object(required=["job_id", "status", "status_url"], properties={
            "job_id": {"type": "string"}, "status": {"type": "string"}, "status_url": {"type": "string"},
            "request_id": {"type": "string"}, "reason": {"type": "string"}, "message": {"type": "string"}}),
        "Job": job_view,
        "IndexList": _object({"indices": {"type": "array", "items": {"type": "object"}}}, required=["indices"]),
        "LawList": _object({"index": {"type": "string"}, "laws": {"type": "array", "items": {"type": "string"}},
                            "request_id": {"type": "string"}}, required=["index", "laws"]),
        "Ready": _object({"ready": {"type": "boolean"}, "checks": {"type": "object"}}, required=["ready", "checks"]),
        "Health": _object({"status": {"type": "string"}}, required=["status"]),
        "Error": _object(required=["error"], properties={"error": error_fields}),
    }
