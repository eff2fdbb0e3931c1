"""Error translation for the engine backends: a client exception becomes one sentence that says what to check.

The product adapters reduce their client library's exceptions to a :class:`Failure` (what kind of
trouble, the HTTP status, the engine's reason); :class:`ErrorTranslator` turns a failure into the
:class:`~service.errors.LexsearchError` the user sees (``EngineUnavailable`` with a code, or
``IndexNotFound``). Nothing here talks to a server.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from service.errors import EngineUnavailable, IndexNotFound, LexsearchError


class FailureKind(enum.StrEnum):
    """What went wrong talking to a node, as far as the user is concerned."""

    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    AUTH = "auth"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    PRODUCT = "product"
    HTTP = "http"


@dataclass(frozen=True)
class Failure:
    """A client exception reduced to what the user needs to hear."""

    kind: FailureKind
    status: int | str = ""
    reason: str = ""
    error_type: str = ""

    @classmethod
    def from_http(cls, status: int | str, error_type: str, reason: str) -> Failure:
        """The failure for an HTTP error answer of the engine (a whole request or one ``_msearch`` item)."""
        if status == 401:
            kind = FailureKind.AUTH
        elif status == 403:
            kind = FailureKind.FORBIDDEN
        elif status == 404 and error_type == "index_not_found_exception":
            kind = FailureKind.NOT_FOUND
        else:
            kind = FailureKind.HTTP
        return cls(kind, status, reason, error_type)


def short_text(value: Any) -> str:
    """``value`` as one line of at most 300 characters, for error messages."""
    return " ".join(str(value).split())[:300]


def error_parts(body: Any, fallback: Any) -> tuple[str, str]:
    """(error type, reason) from an Elasticsearch/OpenSearch error body; ``fallback`` is the client's
    own error name, used when the body has no type."""
    if isinstance(body, Mapping):
        err = body.get("error")
        if isinstance(err, Mapping):
            root = (err.get("root_cause") or [{}])[0] if isinstance(err.get("root_cause"), list) else {}
            reason = str(err.get("reason") or root.get("reason") or err)
            return str(err.get("type", fallback or "")), reason
        if err:
            return str(fallback or ""), str(err)
    return str(fallback or ""), short_text(body)


@dataclass(frozen=True)
class ErrorTranslator:
    """Turns :class:`Failure` values into user-facing errors naming the node and what to check.

    Args:
        product: ``OpenSearch`` or ``Elasticsearch``.
        url: the node URL(s), as configured.
        kind: the ``--backend`` name, for the hint on creating a missing index.
        start_hint: how to start a local node, for the "cannot reach" message.
    """

    product: str
    url: str
    kind: str
    start_hint: str

    def error(self, failure: Failure, what: str, index: str | None) -> LexsearchError:
        """The error for ``failure`` while doing ``what`` (on ``index``, when there is one)."""
        where = f"{self.product} at {self.url}"
        on = f" on {index!r}" if index else ""
        if failure.kind is FailureKind.UNREACHABLE:
            return EngineUnavailable(f"cannot reach {where} ({failure.reason[:300]}); is it running and is --url "
                                     f"right? A local node starts with {self.start_hint}")
        if failure.kind is FailureKind.TIMEOUT:
            return EngineUnavailable(f"{where} did not answer {what}{on} in time ({failure.reason[:200]})",
                                     code="engine_timeout")
        if failure.kind is FailureKind.AUTH:
            return EngineUnavailable(f"{where} refused the credentials (HTTP 401); check --username/--password "
                                     "or --api-key", code="engine_auth")
        if failure.kind is FailureKind.FORBIDDEN:
            return EngineUnavailable(f"{where} denied {what}{on} (HTTP 403: {failure.reason[:200]}); the user "
                                     "lacks a permission", code="engine_forbidden")
        if failure.kind is FailureKind.PRODUCT:
            return EngineUnavailable(f"the server at {self.url} is not {self.product} ({failure.reason[:200]}); "
                                     "choose the matching --backend")
        if failure.kind is FailureKind.NOT_FOUND and index:
            return self.not_found(index, hint=True)
        return EngineUnavailable(f"{where} failed {what}{on}: HTTP {failure.status} "
                                 f"{failure.error_type + ': ' if failure.error_type else ''}{failure.reason[:500]}")

    def not_found(self, index: str, *, hint: bool = False) -> IndexNotFound:
        """The error for a missing index or alias (``hint``: say how to create it)."""
        message = f"no index or alias named {index!r} on {self.product} at {self.url}"
        if hint:
            message += (f"; create it with `lexsearch index --backend {self.kind} --url {self.url} "
                        f"--index {index} ...`")
        return IndexNotFound(message)

    def item_error(self, item: Mapping[str, Any], what: str, index: str) -> LexsearchError:
        """The error of one failed ``_msearch`` item (it carries its own error and status)."""
        error = item.get("error") or {}
        if not isinstance(error, Mapping):
            error = {"reason": str(error)}
        return self.error(Failure.from_http(item.get("status", ""), str(error.get("type", "")),
                                            str(error.get("reason", error))), what, index)

    def wrong_server(self, failure: Failure) -> EngineUnavailable:
        """The error for a URL whose ``GET /`` does not answer like the product."""
        return EngineUnavailable(f"the server at {self.url} does not answer like {self.product} "
                                 f"(GET / gave HTTP {failure.status} {failure.reason[:200]}); check --url")
