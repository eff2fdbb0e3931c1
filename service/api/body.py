"""Reading a request body: JSON only, within the size limit, valid against its published schema."""

from __future__ import annotations

from typing import Any

from flask import request

from service.api.context import service
from service.api.errors import UnsupportedMediaType
from service.api.schemas import ref
from service.api.validation import parse_json_body, validate


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
