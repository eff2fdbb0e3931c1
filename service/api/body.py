"""Reading a request body: JSON only, within the size limit, valid against its published schema."""

from __future__ import annotations

from typing import Any

from flask import request

from service.api.auth import require_index
from service.api.context import service
from service.api.errors import UnsupportedMediaType
from service.api.schemas import ref
from service.api.validation import parse_json_body, validate
from service.pipelines.base import SearchRequest
from service.search_json import request_from_json


def json_body(schema: str) -> dict[str, Any]:
    """The request's JSON object, checked against ``components.schemas[schema]``.

    Raises:
        UnsupportedMediaType: the body is not ``application/json``.
        InvalidInput: malformed JSON (``invalid_json``) or a schema violation (``invalid_request``).
        RequestEntityTooLarge: the body exceeds ``api.max_body_bytes`` (answered as 413).
    """
    if request.mimetype != "application/json":
        raise UnsupportedMediaType(f"send the body as application/json, not {request.mimetype or 'nothing'}")
    value = parse_json_body(request.get_data(cache=False))
    validate(value, ref(schema), service().components)
    return value


def search_body(schema: str) -> tuple[dict[str, Any], SearchRequest]:
    """The body of a search (``SearchRequest`` or ``JobRequest``) and its validated request.

    Raises:
        Forbidden: when the caller's key may not use the index.
        InvalidInput: as :func:`json_body`, or for a request the pipelines refuse (empty, too long).
    """
    body = json_body(schema)
    svc = service()
    search = request_from_json(body, default_index=svc.settings.index.name)
    require_index(search.index)
    return body, search.validated(svc.settings.retrieval.max_query_chars)
