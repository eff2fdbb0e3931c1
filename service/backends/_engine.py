"""What the OpenSearch and Elasticsearch backends share: the whole SearchBackend behaviour.

:class:`EngineBackend` implements the :class:`~service.backends.base.SearchBackend` protocol on
top of a dozen small client calls (``_search``, ``_msearch``, ``_bulk`` ...). The two adapters,
:mod:`service.backends.opensearch` and :mod:`service.backends.elasticsearch`, only supply those
calls for their client library and translate the client's exceptions into a :class:`Failure`.

Index lifecycle: lexsearch writes versioned indices ``name-vN`` behind the alias ``name``.
:meth:`EngineBackend.create_version` makes the next version (refresh off), documents are written
into it, and :meth:`EngineBackend.publish` swaps the alias in one atomic request and deletes the
older versions, so searches on ``name`` never see a half-built index.

Errors: every client call goes through :meth:`EngineBackend._call`, which turns an unreachable
engine, refused credentials, a missing index or an engine error into
:class:`~service.errors.EngineUnavailable` or :class:`~service.errors.IndexNotFound` with a
sentence saying what to check.
"""

from __future__ import annotations

import enum
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

import numpy as np

from service.analysis.chain import analyzer_for
from service.analysis.language import detect_language
from service.backends import _requests as req
from service.backends._analyzers import language_analyses
from service.backends._requests import CorpusKind, Engine, HnswParams
from service.backends.base import IndexReport, IndexStats
from service.backends.fieldmap import FieldMap, load_field_map
from service.config import BackendSettings, EngineSettings
from service.corpus.model import Filters, Hit, LegalDoc
from service.corpus.views import bm25_text
from service.corpus.works import collapse
from service.errors import EngineUnavailable, IndexCorrupt, IndexNotFound, InvalidInput, LexsearchError

log = logging.getLogger(__name__)
T = TypeVar("T")

INFO_TTL_S = 60.0
"""How long the mapping facts and the language list of an index are reused before being read again."""
VERIFY_TIMEOUT_S = 5.0
"""The first request to a node gives up after this long, so a wrong host fails fast."""
_BAD_NAME = re.compile(r'[\\/*?"<>| ,#:A-Z]')


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
class IndexInfo:
    """Facts read from an index mapping: which field map applies, lexsearch's ``_meta``, the vector field."""

    field_map: FieldMap
    meta: Mapping[str, Any] | None
    dim: int
    similarity: str
    indices: tuple[str, ...]

    def score_to_similarity(self, score: float) -> float:
        """Turn an engine kNN score back into the cosine the embedded engine reports.

        Both engines report ``(1 + cos) / 2`` for cosine fields; other similarities stay as scored.
        """
        if self.similarity in ("cosine", "cosinesimil"):
            return 2.0 * score - 1.0
        return score


@dataclass
class BulkOutcome:
    """Per-document result of a bulk run: ids done, ids missing (deletes), ids failed with the reason."""

    done: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


class EngineBackend:
    """A :class:`~service.backends.base.SearchBackend` on an Elasticsearch or OpenSearch cluster.

    Subclasses provide the client calls (see the ``_`` methods at the end). Construction is
    cheap; the client connects on first use and checks once that the node is the right product.

    Args:
        url: the node URL, e.g. ``http://127.0.0.1:9200``.
        username, password: basic-auth credentials ('' = none).
        api_key: an API key, sent as ``Authorization: ApiKey <key>`` ('' = none).
        ca_cert: a CA bundle for TLS ('' = system default).
        verify_certs: check the node's TLS certificate.
        timeout_s: timeout of one search request (bulk and admin requests use ``options.bulk_timeout_s``).
        options: index layout, bulk and kNN settings.
        field_maps: attach maps for indices lexsearch did not create.

    Example::

        backend = OpenSearchBackend("http://127.0.0.1:9200")
        rebuild_engine(backend, "lexsearch-stard", embedder, docs, language="zh")   # name-v1 behind the alias
        bm25_hits, knn_hits = backend.probe("lexsearch-stard", question, vector, k=100)
    """

    kind: ClassVar[str] = ""
    engine: ClassVar[Engine]
    product: ClassVar[str] = ""
    start_hint: ClassVar[str] = ""

    def __init__(self, url: str, *, username: str = "", password: str = "", api_key: str = "", ca_cert: str = "",
                 verify_certs: bool = True, timeout_s: float = 10.0, options: EngineSettings | None = None,
                 field_maps: Sequence[FieldMap] = ()) -> None:
        if not url.startswith(("http://", "https://")):
            raise InvalidInput(f"{self.product} URL must start with http:// or https://, got {url!r}")
        self.url = url.rstrip("/")
        self.username = username
        self.password = password
        self.api_key = api_key
        self.ca_cert = ca_cert
        self.verify_certs = verify_certs
        self.timeout_s = timeout_s
        self.options = options or EngineSettings()
        self.field_maps = tuple(field_maps)
        self._client: Any = None
        self._verified = False
        self._lock = threading.RLock()
        self._infos: dict[str, tuple[float, IndexInfo]] = {}
        self._languages: dict[str, tuple[float, tuple[str, ...]]] = {}
        self._building: set[str] = set()
        self._synonyms_supported: bool | None = None

    @classmethod
    def from_settings(cls, backend: BackendSettings, engine: EngineSettings | None = None) -> EngineBackend:
        """The backend described by the ``backend`` (and optional ``engine``) settings sections.

        Raises:
            ConfigError: when ``engine.field_map`` names an invalid file.
        """
        engine = engine or EngineSettings()
        maps = (load_field_map(engine.field_map),) if engine.field_map else ()
        return cls(backend.url, username=backend.username, password=backend.password, api_key=backend.api_key,
                   ca_cert=backend.ca_cert, verify_certs=backend.verify_certs, timeout_s=backend.timeout_s,
                   options=engine, field_maps=maps)

    # ----- connection and errors -----------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The client library's object (built on first use)."""
        with self._lock:
            if self._client is None:
                _quiet_client_loggers()
                self._client = self._new_client()
            return self._client

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, index: str | None = None, **kwargs: Any) -> Any:
        """Run one client call, translating its failures into LexsearchErrors."""
        if not self._verified:
            self._verify()
        try:
            return fn(*args, **kwargs)
        except LexsearchError:
            raise
        except Exception as exc:
            error = self._translate(exc, what, index)
            if error is None:
                raise
            raise error from None

    def _stream(self, what: str, fn: Callable[..., Iterable[Any]], *args: Any,
                index: str | None = None) -> Iterator[Any]:
        """Like :meth:`_call` for a lazy client helper (scroll, streaming bulk): failures while iterating too."""
        if not self._verified:
            self._verify()
        try:
            yield from fn(*args)
        except LexsearchError:
            raise
        except Exception as exc:
            error = self._translate(exc, what, index)
            if error is None:
                raise
            raise error from None

    def _translate(self, exc: Exception, what: str, index: str | None) -> LexsearchError | None:
        """The LexsearchError for a client exception, or None for an exception that is a bug."""
        failure = self._classify(exc)
        return None if failure is None else self._error(failure, what, index)

    def _verify(self) -> None:
        """Check once that the URL answers as the expected product (fails fast on a wrong host)."""
        try:
            info = self._info_request(min(self.timeout_s, VERIFY_TIMEOUT_S))
        except Exception as exc:
            failure = self._classify(exc)
            if failure is None:
                raise
            if failure.kind not in (FailureKind.HTTP, FailureKind.NOT_FOUND):
                raise self._error(failure, "the first request", None) from None
            raise EngineUnavailable(
                f"the server at {self.url} does not answer like {self.product} "
                f"(GET / gave HTTP {failure.status} {failure.reason[:200]}); check --url"
            ) from None
        problem = self._check_product(info)
        if problem:
            raise EngineUnavailable(f"the server at {self.url} {problem}")
        self._verified = True

    def _error(self, failure: Failure, what: str, index: str | None) -> LexsearchError:
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
            return IndexNotFound(f"no index or alias named {index!r} on {where}; create it with "
                                 f"`lexsearch index --backend {self.kind} --url {self.url} --index {index} ...`")
        return EngineUnavailable(f"{where} failed {what}{on}: HTTP {failure.status} "
                                 f"{failure.error_type + ': ' if failure.error_type else ''}{failure.reason[:500]}")

    def _raise_item_error(self, item: Mapping[str, Any], what: str, index: str) -> None:
        """Raise for one failed ``_msearch`` item (it carries its own error and status)."""
        error = item.get("error") or {}
        raise self._error(Failure.from_http(item.get("status", ""), str(error.get("type", "")),
                                            str(error.get("reason", error))), what, index)

    # ----- index facts -----------------------------------------------------------------------------

    @staticmethod
    def check_name(name: str) -> None:
        """Refuse names the engines cannot use as index or alias names.

        Raises:
            InvalidInput: naming the rule that was broken.
        """
        if not name or name in (".", "..") or name[0] in "-_+" or _BAD_NAME.search(name) or len(name) > 200:
            raise InvalidInput(f"invalid engine index name {name!r}: use lowercase letters, digits, '-' and '_', "
                               "not starting with '-', '_' or '+'")

    def field_map_for(self, name: str, meta: Mapping[str, Any] | None) -> FieldMap:
        """The field map of index ``name``: an attach map naming it, lexsearch's layout, or a catch-all attach map.

        Raises:
            IndexCorrupt: for an index lexsearch did not create and no field map describes.
        """
        explicit = [fm for fm in self.field_maps if fm.index == name]
        if explicit:
            return explicit[0]
        if meta is not None:
            return FieldMap.lexsearch()
        catch_all = [fm for fm in self.field_maps if not fm.index]
        if catch_all:
            return catch_all[0]
        raise IndexCorrupt(f"index {name!r} on {self.url} was not created by lexsearch (its mapping has no "
                           "_meta.lexsearch); describe its fields in a field map (engine.field_map, see "
                           "docs/BACKENDS.md) to search it without re-indexing")

    def info(self, name: str, *, fresh: bool = False) -> IndexInfo:
        """Mapping facts of ``name`` (cached for a minute).

        Raises:
            IndexNotFound: when no index or alias has that name.
            IndexCorrupt: when the index has an unknown lexsearch format or no usable field map.
        """
        now = time.monotonic()
        with self._lock:
            cached = self._infos.get(name)
        if cached and not fresh and now - cached[0] < INFO_TTL_S:
            return cached[1]
        self.check_name(name)
        mappings = self._call("read the mapping", self._get_mapping, name, index=name)
        if not mappings:
            raise IndexNotFound(f"no index or alias named {name!r} on {self.product} at {self.url}")
        indices = tuple(sorted(mappings))
        mapping = mappings[indices[0]].get("mappings") or {}
        meta = (mapping.get("_meta") or {}).get("lexsearch")
        if meta is not None and meta.get("format") != req.FORMAT_VERSION:
            raise IndexCorrupt(f"index {name!r} has lexsearch format {meta.get('format')!r}; this lexsearch "
                               f"reads format {req.FORMAT_VERSION}. Rebuild it with `lexsearch index`.")
        fm = self.field_map_for(name, meta)
        if fm.managed and fm.work and not _property(mapping, fm.work):
            fm = replace(fm, work="")  # created before lexsearch kept versions of a work together
        vector_prop = _property(mapping, fm.vector) if fm.vector else {}
        dim = int(vector_prop.get("dimension") or vector_prop.get("dims") or (meta or {}).get("dim") or 0)
        method = vector_prop.get("method") or {}
        similarity = str(vector_prop.get("similarity") or method.get("space_type") or vector_prop.get("space_type")
                         or "")
        info = IndexInfo(field_map=fm, meta=meta, dim=dim, similarity=similarity, indices=indices)
        with self._lock:
            self._infos[name] = (now, info)
        return info

    def _forget(self, *names: str) -> None:
        with self._lock:
            for name in names:
                self._infos.pop(name, None)
                self._languages.pop(name, None)

    def _managed(self, name: str, action: str) -> IndexInfo:
        info = self.info(name)
        if not info.field_map.managed:
            raise InvalidInput(f"index {name!r} is attached read-only (lexsearch did not create it); cannot {action}")
        return info

    def languages(self, name: str) -> tuple[str, ...]:
        """The document languages present in the index (sorted), cached for a minute."""
        now = time.monotonic()
        with self._lock:
            cached = self._languages.get(name)
        if cached and now - cached[0] < INFO_TTL_S:
            return cached[1]
        info = self.info(name)
        field_name = info.field_map.filter_field("lang")
        found: tuple[str, ...] = ()
        if field_name:
            body = {"size": 0, "aggs": {"languages": {"terms": {"field": field_name, "size": 100}}}}
            resp = self._call("list languages", self._search, name, body, index=name)
            found = tuple(sorted(b["key"] for b in resp["aggregations"]["languages"]["buckets"] if b["key"]))
        with self._lock:
            self._languages[name] = (now, found)
        return found

    def query_language(self, name: str, query: str, lang: str = "") -> str:
        """The analysis language of a query: the given one, else detected among the index's languages."""
        if lang:
            return lang
        info = self.info(name)
        default = (info.meta or {}).get("language") or info.field_map.language or "en"
        languages = self.languages(name) or (default,)
        return detect_language(query, candidates=languages, default=languages[0])

    # ----- SearchBackend: lifecycle ------------------------------------------------------------------

    def exists(self, name: str) -> bool:
        """Whether an index or alias called ``name`` exists."""
        self.check_name(name)
        return bool(self._call("check the index", self._exists, name, index=name))

    def versions(self, name: str) -> list[str]:
        """The physical versions ``name-vN`` that exist, oldest first."""
        pattern = re.compile(re.escape(name) + r"-v(\d+)")
        found = self._call("list versions", self._get_aliases, f"{name}-v*", index=name)
        numbered = sorted((int(m.group(1)), idx) for idx in found if (m := pattern.fullmatch(idx)))
        return [idx for _, idx in numbered]

    def alias_targets(self, name: str) -> list[str]:
        """The indices the alias ``name`` points at ([] when ``name`` is no alias)."""
        return sorted(self._call("read the alias", self._alias_targets, name, index=name))

    def _next_version(self, name: str) -> str:
        existing = self.versions(name)
        last = int(existing[-1].rsplit("-v", 1)[1]) if existing else 0
        return req.version_name(name, last + 1)

    def _body(self, *, dim: int, embedder: str, language: str, kind: CorpusKind | str,
              bulk_loading: bool) -> dict[str, Any]:
        languages = language_analyses(self.options.synonyms_path)
        if any(la.synonyms or la.synonyms_path for la in languages) and not self.supports_synonyms():
            log.warning("%s at %s has no synonym_graph filter (analysis-common module); the body_* fields of "
                        "new indices get no synonyms (query-side synonyms still apply)", self.product, self.url)
            languages = [replace(la, synonyms=(), synonyms_path="") for la in languages]
        return req.index_body(
            self.engine, dim=dim, embedder=embedder, language=language, kind=CorpusKind(kind),
            languages=languages,
            hnsw=HnswParams(self.options.hnsw_m, self.options.hnsw_ef_construction),
            shards=self.options.shards, replicas=self.options.replicas, bulk_loading=bulk_loading,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
        )

    def supports_synonyms(self) -> bool:
        """Whether the node has the ``synonym_graph`` token filter (checked once with ``_analyze``)."""
        with self._lock:
            known = self._synonyms_supported
        if known is None:
            probe = {"tokenizer": "standard", "filter": [{"type": "synonym_graph", "synonyms": ["a => b"]}],
                     "text": "a"}
            try:
                self._call("check analysis", self._analyze, probe)
                known = True
            except EngineUnavailable as exc:
                if "HTTP 400" not in str(exc):
                    raise
                known = False
            with self._lock:
                self._synonyms_supported = known
        return known

    def ensure_index(self, name: str, *, language: str, dim: int, embedder: str,
                     kind: CorpusKind | str = CorpusKind.DECISIONS) -> None:
        """Create ``name`` (as ``name-v1`` behind the alias ``name``), or check that the existing one matches.

        Raises:
            IndexCorrupt: when the existing index has another dimension or embedder.
            InvalidInput: when ``name`` exists but lexsearch did not create it.
        """
        self.check_name(name)
        if self.exists(name):
            self._check_compatible(name, dim=dim, embedder=embedder)
            return
        physical = self._next_version(name)
        body = self._body(dim=dim, embedder=embedder, language=language, kind=kind, bulk_loading=False)
        body["aliases"] = {name: {}}
        try:
            self._call("create the index", self._create_index, physical, body, index=physical)
        except EngineUnavailable as exc:
            if "resource_already_exists" not in str(exc):
                raise
        self._forget(name)
        self._check_compatible(name, dim=dim, embedder=embedder)

    def _check_compatible(self, name: str, *, dim: int, embedder: str) -> None:
        info = self.info(name, fresh=True)
        if not info.field_map.managed:
            raise InvalidInput(f"index {name!r} exists but lexsearch did not create it; search it through a field "
                               "map, or index into another name")
        meta = info.meta or {}
        if meta.get("dim") != dim or meta.get("embedder") != embedder:
            raise IndexCorrupt(
                f"index {name!r} was built with embedder {meta.get('embedder')} (dim {meta.get('dim')}), but the "
                f"settings use {embedder} (dim {dim}); rebuild it (`lexsearch index`) or change the embedder")

    def create_version(self, name: str, *, language: str, dim: int, embedder: str,
                       kind: CorpusKind | str = CorpusKind.DECISIONS) -> str:
        """Create the next version ``name-vN`` (not yet behind the alias; refresh off for bulk loading).

        Returns:
            The physical index name; write into it, then :meth:`publish` or :meth:`discard`.

        Raises:
            InvalidInput: when ``name`` is a concrete index rather than an alias.
        """
        self.check_name(name)
        if self.exists(name) and not self.alias_targets(name):
            raise InvalidInput(f"{name!r} on {self.url} is an index, not an alias; lexsearch swaps versions "
                               "behind an alias, so rebuild under another name or delete that index")
        physical = self._next_version(name)
        body = self._body(dim=dim, embedder=embedder, language=language, kind=kind, bulk_loading=True)
        self._call("create the index", self._create_index, physical, body, index=physical)
        with self._lock:
            self._building.add(physical)
        return physical

    def publish(self, name: str, physical: str) -> list[str]:
        """Make ``physical`` live: refresh (and force-merge), swap the alias atomically, delete older versions.

        Returns:
            The indices deleted.
        """
        self._call("apply live settings", self._put_settings, physical, {"index": req.LIVE_SETTINGS}, index=physical)
        self._call("refresh", self._refresh, physical, index=physical)
        if self.options.force_merge:
            self._call("force-merge", self._forcemerge, physical, index=physical)
        current = self.alias_targets(name)
        self._call("swap the alias", self._update_aliases, req.alias_swap_actions(name, physical, current),
                   index=name)
        with self._lock:
            self._building.discard(physical)
        new_version = int(physical.rsplit("-v", 1)[1])
        stale = sorted(set(current) | {v for v in self.versions(name) if int(v.rsplit("-v", 1)[1]) < new_version})
        stale = [s for s in stale if s != physical]
        if stale:
            self._call("delete old versions", self._delete_indices, stale, index=name)
        self._forget(name, physical)
        return stale

    def discard(self, physical: str) -> None:
        """Delete an unpublished version (after a failed build)."""
        with self._lock:
            self._building.discard(physical)
        if self.exists(physical):
            self._call("delete the index", self._delete_indices, [physical], index=physical)
        self._forget(physical)

    def drop(self, name: str) -> None:
        """Delete the alias ``name`` with every version behind it (or the plain index ``name``)."""
        targets = set(self.alias_targets(name)) | set(self.versions(name))
        if not targets and self.exists(name):
            targets = {name}
        if targets:
            self._call("delete the index", self._delete_indices, sorted(targets), index=name)
        self._forget(name)

    def reindex(self, name: str) -> IndexReport:
        """Rebuild ``name`` from its own documents and vectors into a new version, then swap (zero downtime).

        Use it after a mapping or analyzer change; no corpus or embedder is needed.
        """
        info = self._managed(name, "reindex it")
        meta = info.meta or {}
        physical = self.create_version(name, language=meta.get("language", ""), dim=int(meta["dim"]),
                                       embedder=meta["embedder"], kind=meta.get("corpus_kind", "decisions"))
        report = IndexReport()
        try:
            batch: list[tuple[LegalDoc, np.ndarray]] = []
            for pair in self.scan_vectors(name):
                batch.append(pair)
                if len(batch) >= 4096:
                    report.merge(self.write(physical, [d for d, _ in batch], np.stack([v for _, v in batch])))
                    batch = []
            if batch:
                report.merge(self.write(physical, [d for d, _ in batch], np.stack([v for _, v in batch])))
        except BaseException:
            self.discard(physical)
            raise
        self.publish(name, physical)
        return report

    # ----- SearchBackend: writing ----------------------------------------------------------------------

    def write(self, name: str, docs: Sequence[LegalDoc], vectors: np.ndarray) -> IndexReport:
        """Insert or replace documents by id (bulk, with retries); see :meth:`SearchBackend.write`.

        A document the engine rejects (e.g. a value that violates the mapping) is reported in
        ``IndexReport.failed`` with the engine's reason; the others are indexed.

        Raises:
            InvalidInput: for vectors of the wrong shape or an attached (read-only) index.
            IndexCorrupt: for documents with versions and an index created before versions were stored.
        """
        info = self._managed(name, "write to it")
        if not info.field_map.work and any(doc.versions for doc in docs):
            raise IndexCorrupt(f"index {name!r} was created before lexsearch kept the versions of a work (e.g. the "
                               "languages of an article) together; rebuild it with `lexsearch index`")
        meta = info.meta or {}
        report = IndexReport(sent=len(docs))
        if len(docs) == 0:
            return report
        dim = int(meta.get("dim") or info.dim)
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(docs), dim):
            raise InvalidInput(f"expected vectors of shape ({len(docs)}, {dim}), got {vectors.shape}")
        latest = {doc.id: position for position, doc in enumerate(docs)}

        def actions() -> Iterator[dict[str, Any]]:
            for position, doc in enumerate(docs):
                if latest[doc.id] != position:
                    continue  # a later line of the same batch replaces this one
                try:
                    source = self._source(doc, vectors[position], meta)
                except Exception as exc:  # one bad document must not sink the batch
                    report.failed[doc.id] = f"{type(exc).__name__}: {exc}"
                    continue
                yield req.index_action(name, doc.id, source)

        # Analysis (jieba, stemming) runs in a helper thread while the previous chunk is on the wire.
        outcome = self._bulk_with_retries(name, _prefetched(actions(), 2 * self.options.bulk_chunk))
        report.indexed = len(outcome.done)
        report.failed.update(outcome.failed)
        self._after_write(name)
        return report

    @staticmethod
    def _source(doc: LegalDoc, vector: np.ndarray, meta: Mapping[str, Any]) -> dict[str, Any]:
        if not np.all(np.isfinite(vector)):
            raise ValueError("vector has non-finite values")
        lang = doc.lang or meta.get("language") or detect_language(doc.text)
        text = bm25_text(doc)
        tokens = analyzer_for(lang).tokens(text)
        # Chinese has no engine analyzer: its body field gets the jieba segmentation, space-joined.
        body = " ".join(tokens) if lang == "zh" else text
        return req.document_source(doc.to_dict(), lang=lang, vector=vector, tokens=tokens, body=body)

    def delete(self, name: str, ids: Sequence[str]) -> int:
        """Remove documents by id; returns how many existed.

        Raises:
            EngineUnavailable: when the engine failed to delete some of them.
        """
        self._managed(name, "delete from it")
        actions = [req.delete_action(name, doc_id) for doc_id in dict.fromkeys(ids)]
        if not actions:
            return 0
        outcome = self._bulk_with_retries(name, actions)
        self._after_write(name)
        if outcome.failed:
            first = next(iter(outcome.failed.items()))
            raise EngineUnavailable(f"{self.product} failed to delete {len(outcome.failed)} documents from {name!r}, "
                                    f"e.g. {first[0]}: {first[1]}")
        return len(outcome.done)

    def _after_write(self, name: str) -> None:
        with self._lock:
            building = name in self._building
            self._languages.pop(name, None)
        if not building:  # a version being bulk-loaded is refreshed once, when it is published
            self._call("refresh", self._refresh, name, index=name)

    def _bulk_with_retries(self, name: str, actions: Iterable[dict[str, Any]]) -> BulkOutcome:
        """Send actions through the client's streaming bulk helper; re-send 429/5xx/connection failures.

        Each retry round waits ``bulk_backoff_s * 2**(round-1)``; documents still failing after
        ``bulk_retries`` rounds, and every non-retryable rejection, are reported with the reason.
        """
        outcome = BulkOutcome()
        by_id: dict[str, dict[str, Any]] = {}

        def remembered(items: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
            for action in items:
                by_id[action["_id"]] = action
                yield action

        pending: Iterable[dict[str, Any]] = remembered(actions)
        retries = self.options.bulk_retries
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(self.options.bulk_backoff_s * 2 ** (attempt - 1))
            again = []
            results = self._stream("bulk-index", self._bulk, pending, index=name)
            for ok, item in results:
                op, result = next(iter(item.items()))
                doc_id = str(result.get("_id"))
                status = result.get("status")
                if ok:
                    outcome.done.append(doc_id)
                elif op == "delete" and status == 404:
                    outcome.missing.append(doc_id)
                elif _retryable(status) and attempt < retries and doc_id in by_id:
                    again.append(by_id[doc_id])
                else:
                    outcome.failed[doc_id] = _bulk_reason(result)
            if not again:
                break
            log.warning("%s: retrying %d documents after transient bulk failures", name, len(again))
            pending = again
        return outcome

    # ----- SearchBackend: reading ----------------------------------------------------------------------

    def bm25(self, name: str, query: str, *, k: int, filters: Filters | None = None, lang: str = "") -> list[Hit]:
        """BM25 over the same analysed tokens as the embedded engine (lexsearch indices), or the engine's
        analysis of the field map's ``search`` fields (attached indices)."""
        info = self.info(name)
        if k <= 0:
            return []
        fetch = k * self.max_versions(name, info)
        body = self._bm25_body(name, info, query, k=fetch, filters=filters, lang=lang)
        if body is None:
            return []
        return self._hits(self._call("search", self._search, name, body, index=name), "bm25", info, k)

    def bm25_terms(self, name: str, weights: dict[str, float], *, k: int,
                   filters: Filters | None = None) -> list[Hit]:
        """BM25 for already-analysed terms with per-term weights (query expansion by agents)."""
        info = self.info(name)
        if k <= 0 or not any(w > 0 for w in weights.values()):
            return []
        body = req.bm25_body(weights, k=k * self.max_versions(name, info), filters=filters, fields=info.field_map)
        return self._hits(self._call("search", self._search, name, body, index=name), "bm25", info, k)

    def _bm25_body(self, name: str, info: IndexInfo, query: str, *, k: int, filters: Filters | None,
                   lang: str) -> dict[str, Any] | None:
        fm = info.field_map
        if not fm.bm25_tokens:
            return req.match_body(query, k=k, filters=filters, fields=fm) if query.strip() else None
        # the same weighted terms as the embedded engine: token counts plus half-weight synonym expansions
        weights = analyzer_for(self.query_language(name, query, lang)).query_weights(query)
        if not any(w > 0 for w in weights.values()):
            return None
        return req.bm25_body(weights, k=k, filters=filters, fields=fm)

    def _knn_body(self, info: IndexInfo, vector: np.ndarray, *, k: int, filters: Filters | None) -> dict[str, Any]:
        if not info.field_map.vector:
            raise InvalidInput("this index has no vector field in its field map, so kNN cannot run")
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if info.dim and query.shape[0] != info.dim:
            raise InvalidInput(f"query vector has dimension {query.shape[0]}, the index {info.dim}")
        return req.knn_body(self.engine, query, k=k, candidates=self.options.knn_candidates, filters=filters,
                            fields=info.field_map)

    def knn(self, name: str, vector: np.ndarray, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """Nearest neighbours by cosine (HNSW, filter applied inside the graph search)."""
        info = self.info(name)
        if k <= 0:
            return []
        body = self._knn_body(info, vector, k=k * self.max_versions(name, info), filters=filters)
        return self._hits(self._call("kNN search", self._search, name, body, index=name), "knn", info, k)

    def probe(self, name: str, query: str, vector: np.ndarray, *, k: int, filters: Filters | None = None,
              lang: str = "") -> tuple[list[Hit], list[Hit]]:
        """BM25 and kNN in one ``_msearch`` round trip."""
        info = self.info(name)
        if k <= 0:
            return [], []
        fetch = k * self.max_versions(name, info)
        knn_body = self._knn_body(info, vector, k=fetch, filters=filters)
        bm25_body = self._bm25_body(name, info, query, k=fetch, filters=filters, lang=lang)
        bodies = [knn_body] if bm25_body is None else [bm25_body, knn_body]
        responses = self._call("search", self._msearch, req.msearch_body(name, bodies), index=name)
        for item in responses:
            if "error" in item:
                self._raise_item_error(item, "search", name)
        knn_hits = self._hits(responses[-1], "knn", info, k)
        bm25_hits = self._hits(responses[0], "bm25", info, k) if bm25_body is not None else []
        return bm25_hits, knn_hits

    def max_versions(self, name: str, info: IndexInfo) -> int:
        """The most versions one work has in the index (1 without versions): retrievers fetch ``k`` times
        this many hits, so ``k`` works remain after :func:`~service.corpus.works.collapse`.

        lexsearch indices store it in their metadata when written; an attached index with a work field
        is assumed to hold at most one version per language.
        """
        if not info.field_map.work:
            return 1
        stored = ((info.meta or {}).get("meta") or {}).get("max_versions")
        if info.meta is not None:
            return max(1, int(stored or 1))
        return max(1, len(self.languages(name)))

    @staticmethod
    def _hits(response: Mapping[str, Any], label: str, info: IndexInfo, k: int) -> list[Hit]:
        """The engine's hits as lexsearch hits, one per work (at most ``k``)."""
        hits = []
        works: dict[str, str] = {}
        for rank, raw in enumerate(response["hits"]["hits"], start=1):
            score = float(raw["_score"])
            if label == "knn":
                score = info.score_to_similarity(score)
            doc_id = info.field_map.doc_id(raw)
            work = info.field_map.work_id(raw)
            if work:
                works[doc_id] = work
            hits.append(Hit(doc_id=doc_id, score=score, scores={label: score}, ranks={label: rank}))
        return collapse(hits, works.get, k=k, label=label) if works else hits[:k]

    def fetch(self, name: str, ids: Sequence[str]) -> dict[str, LegalDoc]:
        """Documents by id (missing ids are absent); the vector and token fields are not transferred."""
        info = self.info(name)
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        fm = info.field_map
        excludes = [f for f in (fm.vector, fm.bm25_tokens) if f]
        out: dict[str, LegalDoc] = {}
        if fm.id == "_id":
            docs = self._call("fetch documents", self._mget, name, wanted, excludes, index=name)
            found = [d for d in docs if d.get("found")]
        else:
            body = req.ids_body(wanted, fm, excludes=excludes)
            found = self._call("fetch documents", self._search, name, body, index=name)["hits"]["hits"]
        for raw in found:
            doc = _to_doc(fm, raw)
            if doc is not None:
                out[doc.id] = doc
        return out

    def scan(self, name: str) -> Iterator[LegalDoc]:
        """Every document, in no particular order (a scroll over the index)."""
        info = self.info(name)
        fm = info.field_map
        excludes = [f for f in (fm.vector, fm.bm25_tokens) if f]
        body = {"query": {"match_all": {}}, "_source": {"excludes": excludes}}
        for raw in self._stream("scan", self._scan, name, body, index=name):
            doc = _to_doc(fm, raw)
            if doc is not None:
                yield doc

    def scan_vectors(self, name: str) -> Iterator[tuple[LegalDoc, np.ndarray]]:
        """Every document with its stored vector (for :meth:`reindex`)."""
        info = self._managed(name, "read its vectors")
        fm = info.field_map
        body = {"query": {"match_all": {}}, "_source": {"excludes": [fm.bm25_tokens]}}
        for raw in self._stream("scan", self._scan, name, body, index=name):
            vector = np.asarray((raw.get("_source") or {}).get(fm.vector) or [], dtype=np.float32)
            doc = _to_doc(fm, raw)
            if doc is not None and vector.size:
                yield doc, vector

    def count(self, name: str) -> int:
        """Number of documents (as of the last refresh, which every lexsearch write performs)."""
        self.check_name(name)
        return int(self._call("count", self._count, name, index=name))

    def stats(self, name: str) -> IndexStats:
        """Documents, dimension, embedder, languages and distinct laws of the index."""
        info = self.info(name)
        resp = self._call("read statistics", self._search, name, req.stats_body(info.field_map), index=name)
        aggs = resp.get("aggregations") or {}
        languages = tuple(sorted(b["key"] for b in (aggs.get("languages") or {}).get("buckets", []) if b["key"]))
        laws = int(((aggs.get("laws") or {}).get("distinct") or {}).get("value", 0))
        total = resp["hits"]["total"]
        meta = info.meta or {}
        return IndexStats(
            name=name, documents=int(total["value"] if isinstance(total, Mapping) else total), dim=info.dim,
            embedder=str(meta.get("embedder", "")), languages=languages, laws=laws,
            extra={"backend": self.kind, "url": self.url, "indices": list(info.indices),
                   "corpus_kind": meta.get("corpus_kind", ""), "attached": not info.field_map.managed},
        )

    def metadata(self, name: str) -> dict[str, Any]:
        """The ``meta`` entry of the index's ``_meta.lexsearch`` ({} for attached indices)."""
        info = self.info(name, fresh=True)
        return dict((info.meta or {}).get("meta") or {})

    def update_metadata(self, name: str, **fields: Any) -> None:
        """Store or replace top-level entries of the index's metadata (in the mapping ``_meta``)."""
        self._managed(name, "store metadata")
        mappings = self._call("read the mapping", self._get_mapping, name, index=name)
        for index, body in mappings.items():
            meta = dict((body.get("mappings") or {}).get("_meta") or {})
            ours = dict(meta.get("lexsearch") or {})
            ours["meta"] = {**(ours.get("meta") or {}), **fields}
            meta["lexsearch"] = ours
            self._call("store metadata", self._put_meta, index, meta, index=index)
        self._forget(name)

    def list_indices(self) -> list[str]:
        """Names of the lexsearch indices on the node (aliases where there is one, else the index)."""
        mappings = self._call("list indices", self._get_mapping, "*", index=None)
        aliases = self._call("list indices", self._get_aliases, "*", index=None)
        names = set()
        for index, body in mappings.items():
            if ((body.get("mappings") or {}).get("_meta") or {}).get("lexsearch") is None:
                continue
            names.update(aliases.get(index) or [index])
        return sorted(names)

    def ping(self) -> bool:
        """Whether the node answers (and is the expected product)."""
        try:
            self._verified = False
            self._verify()
            return True
        except LexsearchError:
            return False

    # ----- client calls, supplied by the adapters -------------------------------------------------------

    def _new_client(self) -> Any:
        raise NotImplementedError

    def _info_request(self, timeout: float) -> Mapping[str, Any]:
        raise NotImplementedError

    def _check_product(self, info: Mapping[str, Any]) -> str:
        """'' when ``info`` (GET /) describes a supported node, else what is wrong with it."""
        raise NotImplementedError

    def _classify(self, exc: Exception) -> Failure | None:
        """The :class:`Failure` for a client exception, or None for an exception that is a bug."""
        raise NotImplementedError

    def _search(self, index: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        raise NotImplementedError

    def _msearch(self, lines: list[dict[str, Any]]) -> list[Mapping[str, Any]]:
        raise NotImplementedError

    def _count(self, index: str) -> int:
        raise NotImplementedError

    def _mget(self, index: str, ids: list[str], excludes: list[str]) -> list[Mapping[str, Any]]:
        raise NotImplementedError

    def _exists(self, name: str) -> bool:
        raise NotImplementedError

    def _create_index(self, index: str, body: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def _delete_indices(self, indices: list[str]) -> None:
        raise NotImplementedError

    def _alias_targets(self, alias: str) -> list[str]:
        """Indices behind ``alias``; [] when there is no such alias."""
        raise NotImplementedError

    def _get_aliases(self, pattern: str) -> dict[str, list[str]]:
        """index -> its aliases, for the indices matching ``pattern`` ({} when none)."""
        raise NotImplementedError

    def _update_aliases(self, actions: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def _get_mapping(self, index: str) -> dict[str, Any]:
        """index -> {"mappings": ...} for ``index`` (a name, alias or pattern)."""
        raise NotImplementedError

    def _put_meta(self, index: str, meta: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def _put_settings(self, index: str, settings: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def _refresh(self, index: str) -> None:
        raise NotImplementedError

    def _forcemerge(self, index: str) -> None:
        raise NotImplementedError

    def _analyze(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """``POST _analyze`` with an ad-hoc chain."""
        raise NotImplementedError

    def _bulk(self, actions: list[dict[str, Any]]) -> Iterable[tuple[bool, dict[str, Any]]]:
        """The client's ``helpers.streaming_bulk`` over ``actions``, reporting every item, raising nothing."""
        raise NotImplementedError

    def _scan(self, index: str, body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
        raise NotImplementedError


class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _prefetched(items: Iterable[T], size: int) -> Iterator[T]:
    """Iterate ``items`` in a helper thread, up to ``size`` ahead of the consumer.

    Exceptions of the producer are re-raised in the consumer; a consumer that stops early stops
    the producer.
    """
    buffer: queue.Queue[Any] = queue.Queue(maxsize=max(1, size))
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        buffer.put(item, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            buffer.put(done)
        except BaseException as exc:  # handed to the consumer
            buffer.put(_Raised(exc))

    thread = threading.Thread(target=produce, name="lexsearch-bulk-prepare", daemon=True)
    thread.start()
    try:
        while True:
            item = buffer.get()
            if item is done:
                return
            if isinstance(item, _Raised):
                raise item.exc
            yield item
    finally:
        stop.set()


def _quiet_client_loggers() -> None:
    """The client libraries log every failed request with a traceback at WARNING; lexsearch reports
    failures itself, in one sentence, so keep them at ERROR unless logging was configured for them."""
    for name in ("opensearch", "elastic_transport.transport", "elasticsearch"):
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.ERROR)


def _property(mapping: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """The mapping of a (dotted) field, or {}."""
    props: Any = mapping.get("properties") or {}
    parts = path.split(".")
    for i, part in enumerate(parts):
        prop = props.get(part) if isinstance(props, Mapping) else None
        if prop is None:
            return {}
        if i == len(parts) - 1:
            return prop
        props = prop.get("properties") or {}
    return {}


def _to_doc(fm: FieldMap, raw: Mapping[str, Any]) -> LegalDoc | None:
    try:
        return fm.to_doc(raw)
    except (ValueError, TypeError) as exc:
        log.warning("skipping document %s: it does not form a LegalDoc (%s)", raw.get("_id"), exc)
        return None


def _retryable(status: Any) -> bool:
    if isinstance(status, int):
        return status == 429 or status >= 500
    return True  # "N/A" / "TIMEOUT": the request never got an HTTP answer


def _bulk_reason(result: Mapping[str, Any]) -> str:
    """One line saying why the engine rejected a document."""
    error = result.get("error")
    status = result.get("status")
    if isinstance(error, Mapping):
        text = f"{error.get('type', 'error')}: {error.get('reason', '')}"
        cause = error.get("caused_by")
        if isinstance(cause, Mapping) and cause.get("reason"):
            text += f" ({cause.get('type', '')}: {cause['reason']})"
    else:
        text = str(error or "rejected")
    return f"HTTP {status}: {text}" if status not in (None, "") else text
