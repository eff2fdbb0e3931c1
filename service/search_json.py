"""The JSON form of a search, shared by ``POST /v1/search`` and the job workers.

A request arrives as JSON (already checked against the API schema), becomes a
:class:`~service.pipelines.base.SearchRequest`, travels through Redis as JSON again when it runs
as a job, and its :class:`~service.pipelines.base.SearchResponse` leaves as the JSON documented in
docs/API.md: citations, scores per stage, snippets with highlights, the tier, and the trace on
request.

Example::

    request = request_from_json({"query": "Kaution", "index": "swiss", "k": 5}, default_index="swiss")
    body = render_response(backend, request, pipeline.run(request), pipeline="hybrid", took_ms=12.5)
"""

from __future__ import annotations

import html
from typing import Any

from service.analysis.language import detect_language
from service.backends.base import SearchBackend
from service.corpus.model import FILTER_FIELDS, Filters, Hit, LegalDoc, UnknownFilterField
from service.errors import InvalidInput
from service.pipelines.base import SearchRequest, SearchResponse
from service.retrieval.snippets import make_snippet


def filters_from_json(data: dict[str, Any] | None) -> Filters | None:
    """``{"law": ["ZGB"], "date_from": "2020-01-01"}`` as :class:`Filters` (``None`` when empty).

    Raises:
        InvalidInput: for an unknown field, an empty value list or a malformed date.
    """
    if not data:
        return None
    terms = {name: values for name, values in data.items() if name not in ("date_from", "date_to")}
    try:
        filters = Filters.of(date_from=data.get("date_from"), date_to=data.get("date_to"), **terms)
    except UnknownFilterField as exc:
        raise InvalidInput(str(exc), code="invalid_filter") from None
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"invalid filter: {exc}", code="invalid_filter") from None
    return filters or None


def request_from_json(data: dict[str, Any], *, default_index: str) -> SearchRequest:
    """The :class:`SearchRequest` of a search body (fields as in the ``SearchRequest`` schema).

    Raises:
        InvalidInput: for bad filters.
    """
    return SearchRequest(
        query=data["query"],
        index=data.get("index") or default_index,
        k=int(data.get("k", 10)),
        filters=filters_from_json(data.get("filters")),
        lang=data.get("lang", ""),
        explain=bool(data.get("explain", False)),
        qid=data.get("qid", ""),
        options=dict(data.get("options") or {}),
    )


def request_to_json(request: SearchRequest) -> dict[str, Any]:
    """The inverse of :func:`request_from_json` (for job records)."""
    out: dict[str, Any] = {"query": request.query, "index": request.index, "k": request.k,
                           "lang": request.lang, "explain": request.explain, "options": dict(request.options)}
    if request.filters:
        out["filters"] = request.filters.to_dict()
    if request.qid:
        out["qid"] = request.qid
    return out


def tier_of(trace: dict[str, Any]) -> int | None:
    """The routing tier recorded in a trace (``None`` for pipelines that do not route)."""
    routing = trace.get("routing")
    tier = routing.get("tier") if isinstance(routing, dict) else trace.get("tier")
    return tier if isinstance(tier, int) else None


def _snippet(doc: LegalDoc, query: str, lang: str) -> dict[str, Any]:
    snippet = make_snippet(doc.text, query, doc.lang or lang)
    return {"text": snippet.text, "highlights": [list(span) for span in snippet.spans],
            "html": snippet.render("<em>", "</em>", escape=html.escape)}


def _hit_json(rank: int, hit: Hit, doc: LegalDoc | None, query: str, lang: str) -> dict[str, Any]:
    base = hit.to_dict(with_doc=False)
    return {
        "rank": rank,
        "doc_id": hit.doc_id,
        "citation": doc.citation if doc else hit.doc_id,
        "law": doc.law if doc else "",
        "title": doc.title if doc else "",
        "kind": doc.kind.value if doc else "",
        "score": base["score"],
        "scores": base["scores"],
        "ranks": base["ranks"],
        "provenance": base["provenance"],
        "snippet": _snippet(doc, query, lang) if doc else None,
    }


def render_response(backend: SearchBackend, request: SearchRequest, response: SearchResponse, *, pipeline: str,
                    took_ms: float) -> dict[str, Any]:
    """The response body of a search: hits with citations and snippets, the tier, and the trace if asked.

    ``returned`` is the size of the answer set after a score-cliff cut (the first ``returned`` hits);
    it equals ``len(hits)`` for pipelines that do not cut.
    """
    docs = backend.fetch(request.index, [h.doc_id for h in response.hits])
    lang = request.lang or detect_language(request.query)
    hits = [_hit_json(rank, hit, hit.doc or docs.get(hit.doc_id), request.query, lang)
            for rank, hit in enumerate(response.hits, start=1)]
    body: dict[str, Any] = {
        "query": request.query,
        "index": request.index,
        "pipeline": pipeline,
        "tier": tier_of(response.trace),
        "k": request.k,
        "returned": len(hits) if response.returned is None else min(response.returned, len(hits)),
        "hits": hits,
        "took_ms": round(took_ms, 2),
    }
    if request.explain:
        body["trace"] = response.trace
    return body


FILTER_KEYS: tuple[str, ...] = (*FILTER_FIELDS, "date_from", "date_to")
"""Every key a ``filters`` object may hold."""
