"""The SearchBackend on an Elasticsearch or OpenSearch cluster, composed of the engine parts.

:class:`EngineBackend` answers searches itself (BM25 over lexsearch's analysed tokens, filtered
kNN, both in one ``_msearch``) and hands everything else to its parts:

* :class:`~service.backends.engine.client.EngineClient`: the connection and the product adapter
  (:class:`~service.backends.opensearch.OpenSearchApi`, :class:`~service.backends.elasticsearch.ElasticsearchApi`),
  with error translation (:mod:`service.backends.engine.errors`);
* :class:`~service.backends.engine.facts.IndexCatalog`: mapping facts and languages, cached;
* :class:`~service.backends.engine.lifecycle.IndexLifecycle`: versions behind aliases;
* :class:`~service.backends.engine.bulk.BulkWriter`: bulk writes and deletes with retries.

The product backends (:class:`~service.backends.opensearch.OpenSearchBackend`,
:class:`~service.backends.elasticsearch.ElasticsearchBackend`) only name their adapter.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, ClassVar

import numpy as np

from service.analysis.crosslingual import bm25_query_weights
from service.backends import _requests as req
from service.backends._requests import CorpusKind
from service.backends.base import ChunkWriter, IndexReport, IndexStats
from service.backends.engine.bulk import BulkWriter
from service.backends.engine.client import EngineApi, EngineClient
from service.backends.engine.facts import IndexCatalog, IndexInfo, check_name
from service.backends.engine.lifecycle import IndexLifecycle
from service.backends.fieldmap import FieldMap, load_field_map, lookup
from service.config import BackendSettings, EngineSettings, Settings
from service.corpus.model import Filters, Hit, LegalDoc
from service.corpus.works import collapse
from service.errors import EngineUnavailable, IndexCorrupt, InvalidInput

log = logging.getLogger(__name__)

NOT_SYSTEM = "*,-.*"
"""Every index but those whose names start with a dot (the engine's own; lexsearch refuses such names)."""
REINDEX_BATCH = 4096
"""Documents per write when :meth:`EngineBackend.reindex` copies an index into a new version."""


class EngineBackend:
    """A :class:`~service.backends.base.SearchBackend` on an Elasticsearch or OpenSearch cluster.

    A product backend sets :attr:`api_type`. Construction is cheap; the client connects on first
    use and checks once that the node is the right product.

    Args:
        url, username, password, api_key, ca_cert, verify_certs, timeout_s: where the cluster is and how
            to log in, as in :class:`~service.config.BackendSettings` (``timeout_s`` is that of one search;
            bulk and admin requests use ``options.bulk_timeout_s``).
        options: index layout, bulk and kNN settings.
        field_maps: attach maps for indices lexsearch did not create.

    Example::

        backend = OpenSearchBackend("http://127.0.0.1:9200")
        rebuild_engine(backend, "lexsearch-stard", embedder, docs, language="zh")   # name-v1 behind the alias
        bm25_hits, knn_hits = backend.probe("lexsearch-stard", question, vector, k=100)
    """

    api_type: ClassVar[type[EngineApi]]
    kind: ClassVar[str] = ""

    def __init__(self, url: str, *, username: str = "", password: str = "", api_key: str = "", ca_cert: str = "",
                 verify_certs: bool = True, timeout_s: float = 10.0, options: EngineSettings | None = None,
                 field_maps: Sequence[FieldMap] = ()) -> None:
        urls = BackendSettings(url=url).urls
        for one in urls or (url,):
            if not one.startswith(("http://", "https://")):
                raise InvalidInput(f"{self.api_type.product} URL must start with http:// or https://, got {one!r}")
        self.connection = BackendSettings(kind=self.kind, url=",".join(urls), username=username, password=password,
                                          api_key=api_key, ca_cert=ca_cert, verify_certs=verify_certs,
                                          timeout_s=timeout_s)
        self.options = options or EngineSettings()
        self.client = EngineClient(self.api_type(self.connection, self.options))
        self.catalog = IndexCatalog(self.client, field_maps)
        self.lifecycle = IndexLifecycle(self.client, self.catalog, self.options)
        self.writer = BulkWriter(self.client, self.options)

    @classmethod
    def from_config(cls, settings: Settings) -> EngineBackend:
        """The backend of ``settings`` (its ``backend`` and ``engine`` sections); the table rule of
        :data:`service.plugins.BACKENDS`."""
        return cls.from_settings(settings.backend, settings.engine)

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

    @property
    def url(self) -> str:
        """The node URL (without a trailing slash); several, comma-separated, for a cluster."""
        return self.connection.url

    @property
    def engine(self) -> req.Engine:
        """Which engine the request bodies are written for."""
        return self.api_type.engine

    @property
    def api(self) -> EngineApi:
        """The product adapter (raw requests, no error translation)."""
        return self.client.api

    # ----- SearchBackend: lifecycle ------------------------------------------------------------------

    def exists(self, name: str) -> bool:
        """Whether an index or alias called ``name`` exists."""
        return self.lifecycle.exists(name)

    def versions(self, name: str) -> list[str]:
        """The physical versions ``name-vN`` that exist, oldest first."""
        return self.lifecycle.versions(name)

    def alias_targets(self, name: str) -> list[str]:
        """The indices the alias ``name`` points at ([] when ``name`` is no alias)."""
        return self.lifecycle.alias_targets(name)

    def supports_synonyms(self) -> bool:
        """Whether the node has the ``synonym_graph`` token filter."""
        return self.lifecycle.supports_synonyms()

    def ensure_index(self, name: str, *, language: str, dim: int, embedder: str,
                     kind: CorpusKind | str = CorpusKind.DECISIONS) -> None:
        """Create ``name`` (as ``name-v1`` behind the alias), or check that the existing one matches."""
        self.lifecycle.ensure_index(name, language=language, dim=dim, embedder=embedder, kind=kind)

    def create_version(self, name: str, *, language: str, dim: int, embedder: str,
                       kind: CorpusKind | str = CorpusKind.DECISIONS) -> str:
        """Create the next version ``name-vN`` for bulk loading; see :meth:`IndexLifecycle.create_version`."""
        return self.lifecycle.create_version(name, language=language, dim=dim, embedder=embedder, kind=kind)

    def publish(self, name: str, physical: str) -> list[str]:
        """Make ``physical`` live behind ``name``; returns the older versions deleted."""
        return self.lifecycle.publish(name, physical)

    def discard(self, physical: str) -> None:
        """Delete an unpublished version (after a failed build)."""
        self.lifecycle.discard(physical)

    def drop(self, name: str) -> None:
        """Delete the alias ``name`` with every version behind it (or the plain index ``name``)."""
        self.lifecycle.drop(name)

    def reindex(self, name: str) -> IndexReport:
        """Rebuild ``name`` from its own documents and vectors into a new version, then swap (zero downtime).

        Use it after a mapping or analyzer change; no corpus or embedder is needed.
        """
        meta = self.catalog.managed(name, "reindex it").meta or {}
        physical = self.create_version(name, language=meta.get("language", ""), dim=int(meta["dim"]),
                                       embedder=meta["embedder"], kind=meta.get("corpus_kind", "decisions"))
        report = IndexReport()
        try:
            batch: list[tuple[LegalDoc, np.ndarray]] = []
            for pair in self.scan_vectors(name):
                batch.append(pair)
                if len(batch) >= REINDEX_BATCH:
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
        """Insert or replace documents by id (bulk, with retries); see :meth:`BulkWriter.write`.

        Raises:
            InvalidInput: for vectors of the wrong shape or an attached (read-only) index.
            IndexCorrupt: for documents with versions and an index created before versions were stored.
        """
        info = self.catalog.managed(name, "write to it")
        if not info.field_map.work and any(doc.versions for doc in docs):
            raise IndexCorrupt(f"index {name!r} was created before lexsearch kept the versions of a work (e.g. the "
                               "languages of an article) together; rebuild it with `lexsearch index`")
        meta = info.meta or {}
        report = self.writer.write(name, docs, vectors, dim=int(meta.get("dim") or info.dim),
                                   default_language=meta.get("language") or "")
        if report.sent:
            self._after_write(name)
        return report

    @contextmanager
    def bulk(self, name: str) -> Iterator[ChunkWriter]:
        """Each chunk is written (and refreshed) as it comes; see :meth:`SearchBackend.bulk`."""
        yield partial(self.write, name)

    def delete(self, name: str, ids: Sequence[str]) -> int:
        """Remove documents by id; returns how many existed.

        Raises:
            EngineUnavailable: when the engine failed to delete some of them.
        """
        self.catalog.managed(name, "delete from it")
        if not ids:
            return 0
        outcome = self.writer.delete(name, ids)
        self._after_write(name)
        if outcome.failed:
            first = next(iter(outcome.failed.items()))
            raise EngineUnavailable(f"{self.api_type.product} failed to delete {len(outcome.failed)} documents from "
                                    f"{name!r}, e.g. {first[0]}: {first[1]}")
        return len(outcome.done)

    def _after_write(self, name: str) -> None:
        self.catalog.forget_languages(name)
        if not self.lifecycle.is_building(name):  # a version being bulk-loaded is refreshed when it is published
            self.client.call("refresh", self.api.refresh, name, index=name)

    # ----- SearchBackend: reading ----------------------------------------------------------------------

    def bm25(self, name: str, query: str, *, k: int, filters: Filters | None = None, lang: str = "") -> list[Hit]:
        """BM25 over the same analysed tokens as the embedded engine (lexsearch indices), or the engine's
        analysis of the field map's ``search`` fields (attached indices)."""
        info = self.catalog.info(name)
        if k <= 0:
            return []
        body = self._bm25_body(name, info, query, k=k * self.max_versions(name, info), filters=filters, lang=lang)
        if body is None:
            return []
        return self._bm25_hits(name, body, info, k)

    def bm25_terms(self, name: str, weights: dict[str, float], *, k: int,
                   filters: Filters | None = None) -> list[Hit]:
        """BM25 for already-analysed terms with per-term weights (query expansion by agents)."""
        info = self.catalog.info(name)
        if k <= 0 or not any(w > 0 for w in weights.values()):
            return []
        body = req.bm25_body(weights, k=k * self.max_versions(name, info), filters=filters, fields=info.field_map)
        return self._bm25_hits(name, body, info, k)

    def _bm25_hits(self, name: str, body: Mapping[str, Any], info: IndexInfo, k: int) -> list[Hit]:
        response = self.client.call_complete("search", self.api.search, name, body, self._bm25_search_type(info),
                                             index=name)
        return engine_hits(response, "bm25", info, k)

    def _bm25_search_type(self, info: IndexInfo) -> str:
        """'' (the engine's query_then_fetch) or ``dfs_query_then_fetch``, which scores with the statistics of
        all shards, as one shard (and the embedded engine) would."""
        wanted = self.options.search_type
        if wanted == "dfs_query_then_fetch" or (wanted == "auto" and info.shards > 1):
            return "dfs_query_then_fetch"
        return ""

    def knn(self, name: str, vector: np.ndarray, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """Nearest neighbours by cosine (HNSW, filter applied inside the graph search)."""
        info = self.catalog.info(name)
        if k <= 0:
            return []
        body = self._knn_body(info, vector, k=k * self.max_versions(name, info), filters=filters)
        response = self.client.call_complete("kNN search", self.api.search, name, body, index=name)
        return engine_hits(response, "knn", info, k)

    def probe(self, name: str, query: str, vector: np.ndarray, *, k: int, filters: Filters | None = None,
              lang: str = "") -> tuple[list[Hit], list[Hit]]:
        """BM25 and kNN in one ``_msearch`` round trip."""
        info = self.catalog.info(name)
        if k <= 0:
            return [], []
        fetch = k * self.max_versions(name, info)
        knn_body = self._knn_body(info, vector, k=fetch, filters=filters)
        bm25_body = self._bm25_body(name, info, query, k=fetch, filters=filters, lang=lang)
        if bm25_body is None:
            lines = req.msearch_body(name, [knn_body])
        else:
            lines = req.msearch_body(name, [bm25_body, knn_body], [self._bm25_search_type(info), ""])
        responses = self.client.call_complete("search", self.api.msearch, lines, index=name)
        for item in responses:
            if "error" in item:
                raise self.client.errors.item_error(item, "search", name)
        knn_hits = engine_hits(responses[-1], "knn", info, k)
        bm25_hits = engine_hits(responses[0], "bm25", info, k) if bm25_body is not None else []
        return bm25_hits, knn_hits

    def max_versions(self, name: str, info: IndexInfo) -> int:
        """The most versions one work has in the index (1 without versions): retrievers fetch ``k`` times
        this many hits, so ``k`` works remain after :func:`~service.corpus.works.collapse`.

        lexsearch indices store it in their metadata when written; an attached index with a work field
        is assumed to hold at most one version per language.
        """
        if not info.field_map.work:
            return 1
        if info.meta is not None:
            return max(1, int((info.meta.get("meta") or {}).get("max_versions") or 1))
        return max(1, len(self.catalog.languages(name)))

    def _bm25_body(self, name: str, info: IndexInfo, query: str, *, k: int, filters: Filters | None,
                   lang: str) -> dict[str, Any] | None:
        fm = info.field_map
        if not fm.bm25_tokens:
            return req.match_body(query, k=k, filters=filters, fields=fm) if query.strip() else None
        # the same weighted terms as the embedded engine: token counts plus synonym expansions (or glossary
        # translations of a question in a language the index lacks)
        weights = bm25_query_weights(query, self.catalog.query_languages(name), lang)
        if not any(w > 0 for w in weights.values()):
            return None
        return req.bm25_body(weights, k=k, filters=filters, fields=fm)

    def _knn_body(self, info: IndexInfo, vector: np.ndarray, *, k: int, filters: Filters | None,
                  only: Sequence[str] = ()) -> dict[str, Any]:
        if not info.field_map.vector:
            raise InvalidInput("this index has no vector field in its field map, so kNN cannot run")
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if info.dim and query.shape[0] != info.dim:
            raise InvalidInput(f"query vector has dimension {query.shape[0]}, the index {info.dim}")
        return req.knn_body(self.engine, query, k=k, candidates=self.options.knn_candidates, filters=filters,
                            fields=info.field_map, only=only)

    def similarities(self, name: str, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """The kNN score of ``vector`` with each document or work of ``ids`` (a work: its best version),
        scored exactly: a kNN search restricted to them, with ``k`` as large as their versions."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        info = self.catalog.info(name)
        fetch = len(wanted) * self.max_versions(name, info)
        body = self._knn_body(info, vector, k=fetch, filters=None, only=wanted)
        response = self.client.call_complete("kNN scores", self.api.search, name, body, index=name)
        return {hit.doc_id: hit.score for hit in engine_hits(response, "knn", info, fetch)}

    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of each document or work of ``ids`` (a work: one row per version), read
        from ``_source`` by one search."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        info = self.catalog.info(name)
        fm = info.field_map
        if not fm.vector:
            return {}
        body = req.vectors_body(wanted, fm, size=len(wanted) * self.max_versions(name, info))
        response = self.client.call_complete("read vectors", self.api.search, name, body, index=name)
        rows: dict[str, list[np.ndarray]] = {}
        asked = set(wanted)
        for raw in response["hits"]["hits"]:
            vector = lookup((raw.get("_source") or {}), fm.vector)
            if not vector:
                continue
            doc_id = fm.doc_id(raw)
            owner = doc_id if doc_id in asked else fm.work_id(raw)
            if owner in asked:
                rows.setdefault(owner, []).append(np.asarray(vector, dtype=np.float32))
        return {doc_id: np.stack(rows[doc_id]) for doc_id in wanted if doc_id in rows}

    def fetch(self, name: str, ids: Sequence[str]) -> dict[str, LegalDoc]:
        """Documents by id (missing ids are absent); the vector and token fields are not transferred."""
        info = self.catalog.info(name)
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        fm = info.field_map
        excludes = _heavy_fields(fm)
        if fm.id == "_id":
            docs = self.client.call_complete("fetch documents", self.api.mget, name, wanted, excludes, index=name)
            found = [d for d in docs if d.get("found")]
        else:
            body = req.ids_body(wanted, fm, excludes=excludes)
            response = self.client.call_complete("fetch documents", self.api.search, name, body, index=name)
            found = response["hits"]["hits"]
        out: dict[str, LegalDoc] = {}
        for raw in found:
            doc = _to_doc(fm, raw)
            if doc is not None:
                out[doc.id] = doc
        return out

    def scan(self, name: str) -> Iterator[LegalDoc]:
        """Every document, in no particular order (a scroll over the index)."""
        fm = self.catalog.info(name).field_map
        body = {"query": {"match_all": {}}, "_source": {"excludes": _heavy_fields(fm)}}
        for raw in self.client.stream("scan", self.api.scan, name, body, index=name):
            doc = _to_doc(fm, raw)
            if doc is not None:
                yield doc

    def scan_vectors(self, name: str) -> Iterator[tuple[LegalDoc, np.ndarray]]:
        """Every document with its stored vector (for :meth:`reindex`)."""
        fm = self.catalog.managed(name, "read its vectors").field_map
        body = {"query": {"match_all": {}}, "_source": {"excludes": [fm.bm25_tokens]}}
        for raw in self.client.stream("scan", self.api.scan, name, body, index=name):
            vector = np.asarray((raw.get("_source") or {}).get(fm.vector) or [], dtype=np.float32)
            doc = _to_doc(fm, raw)
            if doc is not None and vector.size:
                yield doc, vector

    def count(self, name: str) -> int:
        """Number of documents (as of the last refresh, which every lexsearch write performs)."""
        check_name(name)
        return int(self.client.call("count", self.api.count, name, index=name))

    def doc_freqs(self, name: str, terms: Sequence[str]) -> dict[str, int]:
        """Documents holding each analysed term, counted over all shards by one ``filters`` aggregation
        (``{}`` for attached indices, which have no token field)."""
        info = self.catalog.info(name)
        field = info.field_map.bm25_tokens
        if not field or not terms:
            return {}
        body = req.doc_freqs_body(field, terms)
        response = self.client.call_complete("count terms", self.api.search, name, body, index=name)
        buckets = response["aggregations"]["df"]["buckets"]
        return {term: int(buckets[term]["doc_count"]) for term in terms if term in buckets}

    def query_languages(self, name: str) -> tuple[str, ...]:
        """The languages a question's BM25 terms are analysed in (the catalog's, cached for a minute)."""
        check_name(name)
        return self.catalog.query_languages(name)

    def law_names(self, name: str) -> tuple[str, ...]:
        """The distinct law names, read a page at a time (``()`` when the index maps no law field)."""
        return self._field_values(name, "law")

    def kinds(self, name: str) -> tuple[str, ...]:
        """The distinct document kinds (``()`` when the index maps no kind field)."""
        return self._field_values(name, "kind")

    def _field_values(self, name: str, filter_name: str) -> tuple[str, ...]:
        """The distinct non-empty values of the filter field ``filter_name``, sorted, a page at a time."""
        field = self.catalog.info(name).field_map.filter_field(filter_name)
        if not field:
            return ()
        values: list[str] = []
        after = None
        while True:
            resp = self.client.call(f"read the {filter_name} values", self.api.search, name,
                                    req.field_values_body(field, after), index=name)
            agg = (resp.get("aggregations") or {}).get("values") or {}
            buckets = agg.get("buckets") or []
            values.extend(str(b["key"]["value"]) for b in buckets if b["key"].get("value"))
            after = agg.get("after_key")
            if not buckets or not after:
                return tuple(sorted(set(values)))

    def stats(self, name: str) -> IndexStats:
        """Documents, dimension, embedder, languages and distinct laws of the index."""
        info = self.catalog.info(name)
        resp = self.client.call("read statistics", self.api.search, name, req.stats_body(info.field_map), index=name)
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
        info = self.catalog.info(name, fresh=True)
        return dict((info.meta or {}).get("meta") or {})

    def update_metadata(self, name: str, **fields: Any) -> None:
        """Store or replace top-level entries of the index's metadata (in the mapping ``_meta``)."""
        self.catalog.managed(name, "store metadata")
        mappings = self.client.call("read the mapping", self.api.get_mapping, name, index=name)
        for index, body in mappings.items():
            meta = dict((body.get("mappings") or {}).get("_meta") or {})
            ours = dict(meta.get("lexsearch") or {})
            ours["meta"] = {**(ours.get("meta") or {}), **fields}
            meta["lexsearch"] = ours
            self.client.call("store metadata", self.api.put_meta, index, meta, index=index)
        self.catalog.forget(name)

    def list_indices(self) -> list[str]:
        """Names of the lexsearch indices on the node (aliases where there is one, else the index)."""
        # not the engine's own indices: .tasks holds the results of force-merge tasks, and touching it
        # draws a system-index warning on OpenSearch 2.x
        mappings = self.client.call("list indices", self.api.get_mapping, NOT_SYSTEM, index=None)
        aliases = self.client.call("list indices", self.api.get_aliases, NOT_SYSTEM, index=None)
        names = set()
        for index, body in mappings.items():
            if ((body.get("mappings") or {}).get("_meta") or {}).get("lexsearch") is None:
                continue
            names.update(aliases.get(index) or [index])
        return sorted(names)

    def ping(self) -> bool:
        """Whether the node answers (and is the expected product)."""
        return self.client.ping()


def engine_hits(response: Mapping[str, Any], label: str, info: IndexInfo, k: int) -> list[Hit]:
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


def _heavy_fields(fm: FieldMap) -> list[str]:
    """Fields left out when documents are read: the vector and the BM25 tokens."""
    return [f for f in (fm.vector, fm.bm25_tokens) if f]


def _to_doc(fm: FieldMap, raw: Mapping[str, Any]) -> LegalDoc | None:
    try:
        return fm.to_doc(raw)
    except (ValueError, TypeError) as exc:
        log.warning("skipping document %s: it does not form a LegalDoc (%s)", raw.get("_id"), exc)
        return None
