"""API keys on every ``/v1/*`` request: who is calling, which indices they may use, how fast.

The key comes as ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``. A missing, unknown or
revoked key is 401; a key over its rate limit is 429 with ``Retry-After``; an index outside the
key's scope is 403, as is ingesting with a key that may not write. With ``api.auth = false``
(development only) every caller may do everything, unlimited.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import g, request

from service.api.context import service
from service.api.errors import Forbidden, RateLimited, Unauthorized
from service.apikeys import ALL_INDICES


@dataclass(frozen=True)
class Principal:
    """The caller: the key id ('' when authentication is off) and what it may do."""

    key_id: str
    indices: tuple[str, ...]
    ingest: bool

    def allows(self, index: str) -> bool:
        return ALL_INDICES in self.indices or index in self.indices


ANONYMOUS = Principal(key_id="", indices=(ALL_INDICES,), ingest=True)


def _presented_key() -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return request.headers.get("X-API-Key", "").strip()


def authenticate() -> Principal:
    """Identify the caller and count the request against its rate limit; sets ``g.principal``.

    Raises:
        Unauthorized: no key, or an unknown or revoked one.
        RateLimited: the key is over its limit.
        StoreUnavailable: the key store (Redis) cannot be reached.
    """
    svc = service()
    if not svc.settings.api.auth:
        g.principal = ANONYMOUS
        return ANONYMOUS
    presented = _presented_key()
    if not presented:
        raise Unauthorized("this endpoint needs an API key: send 'Authorization: Bearer <key>' "
                           "(create one with `lexsearch keys create`)", code="missing_api_key")
    found = svc.keys.authenticate_and_count(presented)  # one Redis round trip for both
    if found is None:
        raise Unauthorized("the API key is unknown or has been revoked")
    key, decision = found
    principal = Principal(key_id=key.id, indices=key.indices, ingest=key.ingest)
    g.principal = principal
    g.rate_headers = decision.headers()  # added to every response, errors included (app._after)
    if not decision.allowed:
        raise RateLimited(f"this key may send {key.rate_per_min} requests per minute; "
                          f"retry in {decision.retry_after_s:.1f} s", retry_after_s=decision.retry_after_s)
    return principal


def principal() -> Principal:
    """The authenticated caller of the current request."""
    return getattr(g, "principal", ANONYMOUS)


def require_index(index: str) -> None:
    """Raises :class:`Forbidden` unless the caller's key may use ``index``."""
    if not principal().allows(index):
        raise Forbidden(f"this API key may not use index {index!r}")


def require_ingest(index: str) -> None:
    """Raises :class:`Forbidden` unless the caller's key may add documents to ``index``."""
    require_index(index)
    if not principal().ingest:
        raise Forbidden("this API key may search but not add documents (create one with --ingest)",
                        code="ingest_forbidden")
