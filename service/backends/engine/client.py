"""The engine client: one connection to an Elasticsearch or OpenSearch cluster, every request guarded.

A product adapter implements :class:`EngineApi`: the dozen requests lexsearch sends, written for its
client library (opensearch-py, elasticsearch-py), plus how to read that library's exceptions.
:class:`EngineClient` wraps an adapter: it checks once that the node is the expected product
(fails fast on a wrong URL) and runs every request through :meth:`EngineClient.call`, which turns
client exceptions into the user-facing errors of :class:`~service.backends.engine.errors.ErrorTranslator`.

Example::

    client = EngineClient(OpenSearchApi(BackendSettings(url="http://127.0.0.1:9200"), EngineSettings()))
    hits = client.call("search", client.api.search, "lexsearch-stard", body, index="lexsearch-stard")
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, Protocol

from service.backends._requests import Engine
from service.backends.engine.errors import ErrorTranslator, Failure, FailureKind
from service.backoff import backoff_s
from service.config import BackendSettings, EngineSettings
from service.errors import EngineUnavailable, LexsearchError

VERIFY_TIMEOUT_S = 5.0
"""The first request to a node gives up after this long, so a wrong host fails fast."""
INCOMPLETE_RETRIES = 3
"""How often a search answered from only some shards is asked again (a node was lost mid-search)."""
INCOMPLETE_BACKOFF_S = 0.25
"""The first wait before asking again; doubled every time."""


class ProductApi:
    """Base of the product adapters: the connection settings, the engine options, and the library's client
    built from them (:meth:`_new_client`)."""

    def __init__(self, connection: BackendSettings, options: EngineSettings) -> None:
        self.connection = connection
        self.options = options
        self.client = self._new_client()

    def _new_client(self) -> Any:
        raise NotImplementedError

    def _common_client_options(self) -> dict[str, Any]:
        """The client arguments both libraries name alike: TLS, and the retry policy. One immediate retry
        covers a dropped keep-alive connection, and on a cluster every other node gets a try (connection
        errors and 502/503/504, with elasticsearch-py also 429); timeouts are not retried."""
        conn = self.connection
        return {"ca_certs": conn.ca_cert or None, "verify_certs": conn.verify_certs,
                "ssl_show_warn": conn.verify_certs, "max_retries": max(1, len(conn.urls)), "retry_on_timeout": False}

    # The requests both libraries send alike (see :class:`EngineApi` for what each does).

    def count(self, index: str) -> int:
        return int(self.client.count(index=index)["count"])

    def exists(self, name: str) -> bool:
        return bool(self.client.indices.exists(index=name))


class EngineApi(Protocol):
    """The requests lexsearch sends, implemented once per product for its client library.

    An adapter is built as ``Api(connection, options)`` (:class:`~service.config.BackendSettings`,
    :class:`~service.config.EngineSettings`) and makes its client library's client right away (that
    connects nothing). Every method may raise the library's exceptions; :meth:`classify` reduces them
    to a :class:`Failure` (or None for an exception that is a bug). Responses are plain mappings.
    """

    engine: ClassVar[Engine]
    connection: BackendSettings
    """Where the cluster is and how to log in (``kind`` and ``hnsw_min_docs`` do not apply)."""
    kind: ClassVar[str]
    """The ``--backend`` name."""
    product: ClassVar[str]
    start_hint: ClassVar[str]
    """How a user starts a local node, for the "cannot reach" message."""

    def info(self, timeout: float) -> Mapping[str, Any]:
        """``GET /``."""

    def check_product(self, info: Mapping[str, Any]) -> str:
        """'' when ``info`` (``GET /``) describes a supported node, else what is wrong with it."""

    def classify(self, exc: Exception) -> Failure | None:
        """The :class:`Failure` for a client exception, or None for an exception that is a bug."""

    def search(self, index: str, body: Mapping[str, Any], search_type: str = "") -> Mapping[str, Any]:
        """``POST index/_search`` (``search_type`` '' = the engine's default)."""

    def msearch(self, lines: list[dict[str, Any]]) -> list[Mapping[str, Any]]:
        """``POST _msearch``: the ``responses`` list."""

    def count(self, index: str) -> int:
        """``GET index/_count``."""

    def mget(self, index: str, ids: list[str], excludes: list[str]) -> list[Mapping[str, Any]]:
        """``GET index/_mget`` without the ``excludes`` source fields: the ``docs`` list."""

    def exists(self, name: str) -> bool:
        """Whether an index or alias ``name`` exists."""

    def create_index(self, index: str, body: Mapping[str, Any]) -> None:
        """``PUT index`` with settings, mappings and aliases."""

    def delete_indices(self, indices: list[str]) -> None:
        """``DELETE a,b,c``."""

    def alias_targets(self, alias: str) -> list[str]:
        """Indices behind ``alias``; [] when there is no such alias."""

    def get_aliases(self, pattern: str) -> dict[str, list[str]]:
        """index -> its aliases, for the indices matching ``pattern`` ({} when none)."""

    def update_aliases(self, actions: list[dict[str, Any]]) -> None:
        """``POST _aliases`` (one atomic request)."""

    def get_mapping(self, index: str) -> dict[str, Any]:
        """index -> {"mappings": ...} for ``index`` (a name, alias or pattern)."""

    def shard_count(self, index: str) -> int:
        """The most primary shards among the indices ``index`` names."""

    def put_meta(self, index: str, meta: Mapping[str, Any]) -> None:
        """Replace the mapping ``_meta`` of ``index``."""

    def put_settings(self, index: str, settings: Mapping[str, Any]) -> None:
        """``PUT index/_settings``."""

    def refresh(self, index: str) -> None:
        """``POST index/_refresh``."""

    def start_forcemerge(self, index: str) -> str:
        """``POST index/_forcemerge?max_num_segments=1&wait_for_completion=false``: the id of the task
        that merges (:mod:`service.backends.engine.tasks` waits for it)."""

    def task(self, task_id: str) -> Mapping[str, Any]:
        """``GET _tasks/<task_id>``: ``completed``, and once it is, ``response`` or ``error``."""

    def wait_for_green(self, index: str, timeout_s: float) -> str:
        """``GET _cluster/health/index?wait_for_status=green``: the index's health once every copy of
        its shards is allocated, or when ``timeout_s`` ran out (then ``yellow`` or ``red``)."""

    def analyze(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """``POST _analyze`` with an ad-hoc chain."""

    def bulk(self, actions: Iterable[dict[str, Any]]) -> Iterable[tuple[bool, dict[str, Any]]]:
        """The client's ``helpers.streaming_bulk`` over ``actions``, reporting every item, raising nothing."""

    def scan(self, index: str, body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
        """Every hit of ``body`` (a scroll)."""


class EngineClient:
    """An :class:`EngineApi` whose requests fail with user-facing errors.

    The first request checks that the URL answers as the expected product; after that each call
    costs nothing extra.
    """

    def __init__(self, api: EngineApi) -> None:
        self.api = api
        self.url = api.connection.url
        self.errors = ErrorTranslator(api.product, self.url, api.kind, api.start_hint)
        self._verified = False
        _quiet_client_loggers()

    def call(self, what: str, fn: Callable[..., Any], *args: Any, index: str | None = None, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` (a method of :attr:`api`), translating its failures.

        Args:
            what: the action, for messages ("search", "create the index").
            fn: the request.
            index: the index the request is about, for messages and "not found".
        """
        self.verify()
        try:
            return fn(*args, **kwargs)
        except LexsearchError:
            raise
        except Exception as exc:
            raise self._translated(exc, what, index) from None

    def call_complete(self, what: str, fn: Callable[..., Any], *args: Any, index: str | None = None) -> Any:
        """Like :meth:`call`, for searches: an answer that is not complete is asked for again.

        A cluster that loses a node can answer a search from the remaining shards only (HTTP 200,
        ``_shards.failed`` > 0), fail one ``_msearch`` item with a 5xx, or fail to read a document
        of an ``_mget``. Until the cluster has moved on to the other copies, such answers are asked
        for again, :data:`INCOMPLETE_RETRIES` times with backoff.

        Raises:
            EngineUnavailable: when the answer is still incomplete after the retries.
        """
        for attempt in range(INCOMPLETE_RETRIES + 1):
            response = self.call(what, fn, *args, index=index)
            problem = incomplete(response)
            if not problem:
                return response
            if attempt < INCOMPLETE_RETRIES:
                time.sleep(backoff_s(attempt, base_s=INCOMPLETE_BACKOFF_S, jitter=False))
        on = f" on {index!r}" if index else ""
        raise EngineUnavailable(f"{self.api.product} at {self.url} answered {what}{on} incompletely: {problem}")

    def stream(self, what: str, fn: Callable[..., Iterable[Any]], *args: Any,
               index: str | None = None) -> Iterator[Any]:
        """Like :meth:`call` for a lazy helper (scroll, streaming bulk): failures while iterating too."""
        self.verify()
        try:
            yield from fn(*args)
        except LexsearchError:
            raise
        except Exception as exc:
            raise self._translated(exc, what, index) from None

    def verify(self) -> None:
        """Check (once) that the URL answers as the expected product.

        Raises:
            EngineUnavailable: for an unreachable node, refused credentials or another kind of server.
        """
        if self._verified:
            return
        try:
            info = self.api.info(min(self.api.connection.timeout_s, VERIFY_TIMEOUT_S))
        except Exception as exc:
            failure = self.api.classify(exc)
            if failure is None:
                raise
            if failure.kind not in (FailureKind.HTTP, FailureKind.NOT_FOUND):
                raise self.errors.error(failure, "the first request", None) from None
            raise self.errors.wrong_server(failure) from None
        problem = self.api.check_product(info)
        if problem:
            raise EngineUnavailable(f"the server at {self.url} {problem}")
        self._verified = True

    def ping(self) -> bool:
        """Whether the node answers (and is the expected product)."""
        self._verified = False
        try:
            self.verify()
            return True
        except LexsearchError:
            return False

    def _translated(self, exc: Exception, what: str, index: str | None) -> LexsearchError:
        """The LexsearchError for a client exception; an exception that is a bug is raised again."""
        failure = self.api.classify(exc)
        if failure is None:
            raise exc
        return self.errors.error(failure, what, index)


def incomplete(response: Any) -> str:
    """Why a search, ``_msearch`` or ``_mget`` answer is incomplete ('' when it is complete)."""
    for item in response if isinstance(response, list) else [response]:
        shards = item.get("_shards") or {}
        if shards.get("failed"):
            first = (shards.get("failures") or [{}])[0]
            reason = (first.get("reason") or {}).get("type", "") if isinstance(first.get("reason"), dict) else ""
            return f"{shards['failed']} of {shards.get('total', '?')} shards failed{f' ({reason})' if reason else ''}"
        error = item.get("error")
        status = item.get("status")
        if error and isinstance(status, int) and (status == 429 or status >= 500):
            return f"HTTP {status} for one search"
        if error and "_id" in item:
            return f"document {item['_id']} could not be read"
    return ""


def _quiet_client_loggers() -> None:
    """The client libraries log every failed request with a traceback at WARNING; lexsearch reports
    failures itself, in one sentence, so keep them at ERROR unless logging was configured for them."""
    for name in ("opensearch", "elastic_transport.transport", "elasticsearch"):
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.ERROR)
