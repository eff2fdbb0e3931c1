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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from service.analysis.language import detect_language
from service.backends.base import SearchBackend
from service.corpus.model import FILTER_FIELDS, Filters, Hit, LegalDoc, UnknownFilterField
from service.embeddings.base import Embedder
from service.errors import InvalidInput
from service.pipelines.base import SearchRequest, SearchResponse, tier_of
from service.retrieval.pinpoint import pinpoint
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


def _snippet(doc: LegalDoc, query: str, lang: str) -> dict[str, Any]:
    snippet = make_snippet(doc.text, query, doc.lang or lang)
    return {"text": snippet.text, "highlights": [list(span) for span in snippet.spans],
            "html": snippet.render("<em>", "</em>", escape=html.escape)}


def shown_version(doc: LegalDoc, docs: dict[str, LegalDoc], lang: str) -> LegalDoc:
    """The version of ``doc``'s work to show: the one in ``lang``, else the work's first version."""
    for version_id in doc.versions:
        version = docs.get(version_id)
        if version is not None and version.lang == lang:
            return version
    return docs.get(doc.work, doc)


def display_language(request: SearchRequest) -> str:
    """The language hits are shown in: a single ``lang`` filter's, else the question's (given or detected)."""
    wanted = request.filters.values("lang") if request.filters else None
    if wanted and len(wanted) == 1:
        return wanted[0]
    return request.lang or detect_language(request.query)


def _hit_json(rank: int, hit: Hit, doc: LegalDoc | None, docs: dict[str, LegalDoc], query: str, lang: str,
              query_vector: np.ndarray | None, embed: Callable[[Sequence[str]], np.ndarray] | None) -> dict[str, Any]:
    base = hit.to_dict(with_doc=False)
    shown = shown_version(doc, docs, lang) if doc else None
    out = {
        "rank": rank,
        "doc_id": hit.doc_id,
        "citation": shown.citation if shown else hit.doc_id,
        "law": shown.law if shown else "",
        "title": shown.title if shown else "",
        "kind": shown.kind.value if shown else "",
        "lang": shown.lang if shown else "",
        "pinpoint": ([p.to_dict() for p in pinpoint(shown, query, query_vector=query_vector, embed=embed)]
                     if shown else []),
        "score": base["score"],
        "scores": base["scores"],
        "ranks": base["ranks"],
        "provenance": base["provenance"],
        "snippet": _snippet(shown, query, lang) if shown else None,
    }
    if doc is not None and doc.versions:
        out["version"] = shown.id if shown else doc.id
        out["versions"] = [{"doc_id": v.id, "lang": v.lang, "citation": v.citation}
                           for v in (docs.get(i) for i in doc.versions) if v is not None]
    return out


def render_response(backend: SearchBackend, request: SearchRequest, response: SearchResponse, *, pipeline: str,
                    took_ms: float, embedder: Embedder | None = None) -> dict[str, Any]:
    """The response body of a search: hits with citations and snippets, the tier, and the trace if asked.

    ``returned`` is the size of the answer set after a score-cliff cut (the first ``returned`` hits);
    it equals ``len(hits)`` for pipelines that do not cut. A hit whose work has several versions (an
    article in German, French and Italian) is shown in the question's language (or a ``lang``
    filter's), else in the work's first version, and lists every version with its citation.
    ``pinpoint`` names the best-matching paragraph(s) of statute articles that list their
    paragraphs; the ``embedder`` (optional) lets the paragraphs be compared by meaning.
    """
    docs = backend.fetch(request.index, [h.doc_id for h in response.hits])
    missing = [v for d in docs.values() for v in d.versions if v not in docs]
    if missing:
        docs.update(backend.fetch(request.index, missing))
    lang = display_language(request)
    vector = embedder.embed_queries([request.query])[0] if embedder is not None and docs else None
    embed = embedder.embed_documents if embedder is not None else None
    hits = [_hit_json(rank, hit, hit.doc or docs.get(hit.doc_id), docs, request.query, lang, vector, embed)
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
