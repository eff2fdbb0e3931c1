"""Signed webhooks: the POST a job sends to its ``callback_url`` when it ends.

Every delivery carries::

    Content-Type: application/json
    X-Lexsearch-Event: job.succeeded | job.failed | job.cancelled | job.expired
    X-Lexsearch-Delivery: <job id>.<event>          (the same on every retry: deduplicate on it)
    X-Lexsearch-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>

A receiver recomputes the HMAC over the timestamp, a dot and the raw body bytes with the shared
secret (``jobs.webhook_secret``), compares in constant time, and rejects timestamps more than a
few minutes old (replays). :func:`verify_signature` does exactly that.

Example (receiver side)::

    if not verify_signature(secret, request.headers["X-Lexsearch-Signature"], request.get_data()):
        abort(401)
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
import time
from urllib.parse import urlsplit

import requests

from service.errors import InvalidInput

SIGNATURE_HEADER = "X-Lexsearch-Signature"
EVENT_HEADER = "X-Lexsearch-Event"
DELIVERY_HEADER = "X-Lexsearch-Delivery"
DEFAULT_TOLERANCE_S = 300
MAX_URL_CHARS = 2048


class WebhookError(Exception):
    """One delivery attempt failed; ``retryable`` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The ``X-Lexsearch-Signature`` value for ``body`` at ``timestamp`` (default: now)."""
    ts = int(time.time()) if timestamp is None else int(timestamp)
    mac = hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={ts},v1={mac}"


def verify_signature(secret: str, header: str, body: bytes, *, tolerance_s: float = DEFAULT_TOLERANCE_S,
                     now: float | None = None) -> bool:
    """Whether ``header`` is a valid signature of ``body`` made less than ``tolerance_s`` ago.

    Args:
        secret: the shared webhook secret.
        header: the ``X-Lexsearch-Signature`` value (``t=...,v1=...``; several ``v1`` may appear
            while secrets are rotated; any match counts).
        body: the raw request body, byte for byte as received.
        tolerance_s: the largest accepted clock difference, against replays.
        now: the current Unix time (tests).
    """
    parts: dict[str, list[str]] = {}
    for item in header.split(","):
        name, sep, value = item.strip().partition("=")
        if sep:
            parts.setdefault(name, []).append(value)
    try:
        ts = int(parts["t"][0])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - ts) > tolerance_s:
        return False
    expected = sign(secret, body, ts).split("v1=", 1)[1]
    return any(hmac.compare_digest(expected, candidate) for candidate in parts.get("v1", []))


def check_callback_url(url: str, *, allow_private: bool) -> None:
    """Refuse callback URLs that are malformed or (unless allowed) point into private networks.

    Loopback, private, link-local and reserved addresses are refused by default, so a client
    cannot make the workers POST to services inside the deployment (SSRF).

    Raises:
        InvalidInput: naming what is wrong with the URL.
    """
    if len(url) > MAX_URL_CHARS:
        raise InvalidInput(f"callback_url is longer than {MAX_URL_CHARS} characters", code="invalid_callback_url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("callback_url must be an absolute http:// or https:// URL", code="invalid_callback_url")
    if allow_private:
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)
    except (OSError, ValueError):
        raise InvalidInput(f"callback_url host {parts.hostname!r} cannot be resolved",
                           code="invalid_callback_url") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise InvalidInput(f"callback_url points to a non-public address ({address}); "
                               "webhooks only go to public hosts", code="invalid_callback_url")


def deliver(url: str, body: bytes, *, secret: str, event: str, delivery_id: str, timeout_s: float,
            allow_private: bool) -> int:
    """POST one signed delivery; returns the receiver's 2xx status.

    Redirects are not followed (a redirect could lead into a private network).

    Raises:
        WebhookError: for a refused URL, a transport error or a non-2xx answer; 4xx other than
            408/429 are final (``retryable=False``), everything else may be retried.
    """
    try:
        check_callback_url(url, allow_private=allow_private)
    except InvalidInput as exc:
        raise WebhookError(str(exc), retryable=False) from None
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "lexsearch-webhook/1",
        EVENT_HEADER: event,
        DELIVERY_HEADER: delivery_id,
        SIGNATURE_HEADER: sign(secret, body),
    }
    try:
        response = requests.post(url, data=body, headers=headers, timeout=timeout_s, allow_redirects=False)
    except requests.RequestException as exc:
        raise WebhookError(f"{type(exc).__name__}: {exc}") from None
    if 200 <= response.status_code < 300:
        return response.status_code
    final = 400 <= response.status_code < 500 and response.status_code not in (408, 429)
    raise WebhookError(f"the receiver answered HTTP {response.status_code}", retryable=not final)
