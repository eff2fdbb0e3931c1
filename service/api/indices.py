"""``/v1/indices``: the indices a key may use, an index's law names, and batch ingest as a job."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, g, jsonify

from service.api.auth import principal, require_index, require_ingest
from service.api.body import json_body
from service.api.context import request_id, service
from service.api.jobs import accepted, checked_callback, enqueue
from service.api.schemas import ref
from service.api.validation import RequestInvalid, validate
from service.apikeys import INDEX_NAME
from service.corpus.model import LegalDoc
from service.errors import InvalidInput, LexsearchError
from service.indexing import citation_links_current
from service.jobs import JobKind, new_job_id
from service.taskqueue import TASK_INGEST

bp = Blueprint("indices", __name__)


def _names() -> list[str]:
    svc = service()
    backend = svc.runtime.backend
    names = backend.list_indices()
    scope = principal().indices
    if "*" not in scope:
        names = sorted(set(names) & set(scope))
    return [n for n in names if not n.startswith(".")]


@bp.get("/v1/indices")
def list_indices() -> Response:
    """Every index the key may use, with its statistics."""
    backend = service().runtime.backend
    out: list[dict[str, Any]] = []
    for name in _names():
        try:
            entry = backend.stats(name).to_dict()
            current = citation_links_current(backend.metadata(name))
            out.append({**entry, "citation_links": "current" if current else "outdated"})
        except LexsearchError as exc:
            out.append({"name": name, "error": {"code": exc.code, "message": str(exc)}})
    return jsonify({"indices": out, "request_id": request_id()})


@bp.get("/v1/indices/<name>/laws")
def list_laws(name: str) -> Response:
    """The law names of an index: the values its ``law`` filter takes (any case)."""
    _check_index_name(name)
    require_index(name)
    laws = service().runtime.backend.law_names(name)
    return jsonify({"index": name, "laws": list(laws), "request_id": request_id()})


def _check_index_name(name: str) -> None:
    """Refuse an index name in the URL that no index can have (400), before any key or engine is asked."""
    if not INDEX_NAME.match(name):
        raise InvalidInput(f"invalid index name {name[:100]!r}: use letters, digits, '.', '_' and '-'",
                           code="invalid_request")


def split_documents(raw: list[Any], components: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Valid documents (as dicts) and the rejected ones (position, id, reason), each checked on its own."""
    valid: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    for position, item in enumerate(raw):
        doc_id = item.get("id") if isinstance(item, dict) and isinstance(item.get("id"), str) else None
        try:
            validate(item, ref("Document"), components, path=f"$.documents[{position}]")
            valid.append(LegalDoc.from_dict(item).to_dict())
        except RequestInvalid as exc:
            rejected.append({"position": position, "id": doc_id, "reason": str(exc)})
        except (ValueError, TypeError) as exc:
            rejected.append({"position": position, "id": doc_id, "reason": f"$.documents[{position}]: {exc}"})
    return valid, rejected


@bp.post("/v1/indices/<name>/documents")
def ingest(name: str) -> Response:
    """Queue a batch of documents for indexing (created when the index is missing)."""
    svc = service()
    _check_index_name(name)
    require_ingest(name)
    body = json_body("IngestRequest")
    valid, rejected = split_documents(body["documents"], svc.components)
    if not valid:
        first = rejected[0]["reason"] if rejected else "no documents"
        raise InvalidInput(f"none of the {len(rejected)} documents is valid, e.g. {first}", code="invalid_request")
    callback = checked_callback(svc, body)
    job_id = new_job_id()
    job = svc.jobs.create(JobKind.INGEST, {"index": name, "documents": valid, "rejected": rejected,
                                           "language": body.get("language", ""), "request_id": request_id(),
                                           "status_url": svc.status_url(job_id)},
                          owner=principal().key_id, callback_url=callback, job_id=job_id)
    enqueue(svc, TASK_INGEST, job.id)
    g.job_id = job.id
    return accepted(svc, job, documents=len(valid), rejected=len(rejected))
