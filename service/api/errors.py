"""Every error of the API as JSON: ``{"error": {"code", "message", "request_id"}}``.

Bad input is a 4xx with a stable ``code``; Flask's own 404/405/413/415 come out the same way;
engine and store outages are 503 with a message saying what is down; anything unexpected is a
500 whose body says only ``internal_error`` and the request id (the traceback goes to the log,
never to the client).
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, g, jsonify
from werkzeug.exceptions import HTTPException

from service.api.validation import RequestInvalid
from service.errors import IndexCorrupt, LexsearchError

log = logging.getLogger("lexsearch.api")


class Unauthorized(LexsearchError):
    """No API key, or one that is unknown or revoked."""

    code = "invalid_api_key"
    http_status = 401


class Forbidden(LexsearchError):
    """The key is valid but its scope does not include what was asked."""

    code = "index_forbidden"
    http_status = 403


class RateLimited(LexsearchError):
    """The key sent more requests than its rate limit allows."""

    code = "rate_limited"
    http_status = 429

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Conflict(LexsearchError):
    """The request conflicts with the state of the resource (cancelling a finished job)."""

    code = "conflict"
    http_status = 409


class UnsupportedMediaType(LexsearchError):
    """The body is not ``application/json``."""

    code = "unsupported_media_type"
    http_status = 415


_HTTP_CODES = {
    400: "bad_request", 404: "not_found", 405: "method_not_allowed", 406: "not_acceptable",
    413: "body_too_large", 415: "unsupported_media_type", 429: "rate_limited",
}


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """The JSON error envelope, with the current request id."""
    return {"error": {"code": code, "message": message, "request_id": getattr(g, "request_id", ""), **extra}}


def error_response(status: int, code: str, message: str, *, headers: dict[str, str] | None = None,
                   **extra: Any) -> Response:
    response = jsonify(error_body(code, message, **extra))
    response.status_code = status
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def _lexsearch_error(exc: LexsearchError) -> Response:
    status = exc.http_status
    code = exc.code
    message = str(exc)
    extra: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if isinstance(exc, IndexCorrupt):
        # For a client an unreadable index is an outage of that index, not a bug of the request.
        status, code = 503, "index_unavailable"
    if isinstance(exc, RequestInvalid):
        extra["path"] = exc.path
    if isinstance(exc, RateLimited):
        extra["retry_after_s"] = exc.retry_after_s
    if status >= 500:
        log.warning("request failed: %s: %s", code, message)
        headers.setdefault("Retry-After", "5")
    return error_response(status, code, message, headers=headers, **extra)


def _http_error(exc: HTTPException) -> Response:
    status = exc.code or 500
    code = _HTTP_CODES.get(status, "http_error")
    messages = {
        404: "there is no such endpoint; see /openapi.json for the API",
        405: f"this endpoint does not accept {getattr(g, 'method', 'this method')}; see /openapi.json",
        413: "the request body is larger than the limit",
    }
    response = error_response(status, code, messages.get(status, exc.description or exc.name))
    if status == 405 and exc.get_response().headers.get("Allow"):
        response.headers["Allow"] = exc.get_response().headers["Allow"]
    return response


def _unexpected(exc: Exception) -> Response:
    log.exception("internal error on request %s", getattr(g, "request_id", ""))
    return error_response(500, "internal_error", "the server failed to answer this request; "
                          "it has been logged under this request id")


def register_error_handlers(app: Flask) -> None:
    """Make every error of ``app`` a JSON response."""
    app.register_error_handler(LexsearchError, _lexsearch_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)
