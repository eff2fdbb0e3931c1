"""The OpenSearch backend: the requests of :class:`~service.backends.engine.backend.EngineBackend` on opensearch-py.

Vectors live in a ``knn_vector`` field with the Lucene HNSW engine (the only k-NN engine that
works with the k-NN plugin published on Maven Central, which has no native libraries).

Example::

    backend = OpenSearchBackend("http://127.0.0.1:9200")
    backend.ensure_index("lexsearch-statutes", language="de", dim=512, embedder="use-m3")
    backend.write("lexsearch-statutes", docs, vectors)
    backend.probe("lexsearch-statutes", "Kaution zurück", vector, k=10)
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, cast

import numpy as np

from service.backends import _requests as req
from service.backends._requests import Engine
from service.backends.engine.backend import EngineBackend, engine_hits
from service.backends.engine.client import ProductApi
from service.backends.engine.errors import Failure, FailureKind, error_parts, short_text
from service.config import RetrievalSettings
from service.corpus.model import Filters, Hit
from service.errors import EngineUnavailable


class OpenSearchApi(ProductApi):
    """The :class:`~service.backends.engine.client.EngineApi` of OpenSearch 2.x, on opensearch-py."""

    engine = Engine.OPENSEARCH
    kind = "opensearch"
    product = "OpenSearch"
    start_hint = "`scripts/opensearch-local start`"

    def _new_client(self) -> Any:
        from opensearchpy import OpenSearch

        conn = self.connection
        headers = {"Authorization": f"ApiKey {conn.api_key}"} if conn.api_key else None
        return OpenSearch(
            hosts=list(conn.urls),
            http_auth=(conn.username, conn.password) if conn.username else None,
            headers=headers,
            timeout=conn.timeout_s,
            **self._common_client_options(),
        )

    def info(self, timeout: float) -> Mapping[str, Any]:
        return self.client.info(request_timeout=timeout)

    def check_product(self, info: Mapping[str, Any]) -> str:
        version = info.get("version") or {}
        if version.get("distribution") != "opensearch":
            tagline = info.get("tagline") or version.get("number") or "no version"
            return f"is not OpenSearch (it says {tagline!r}); for Elasticsearch use --backend elasticsearch"
        major = str(version.get("number", "0")).split(".")[0]
        if not major.isdigit() or int(major) < 2:
            return f"runs OpenSearch {version.get('number')}; lexsearch needs 2.4 or later (filtered Lucene kNN)"
        return ""

    def classify(self, exc: Exception) -> Failure | None:
        from opensearchpy import exceptions as E

        if isinstance(exc, E.ConnectionTimeout):
            return Failure(FailureKind.TIMEOUT, "TIMEOUT", str(exc.info if exc.info else exc))
        if isinstance(exc, E.ConnectionError):  # includes SSLError
            return Failure(FailureKind.UNREACHABLE, "N/A", short_text(exc.info) if exc.info else str(exc))
        if isinstance(exc, E.TransportError):
            status = exc.status_code
            error_type, reason = error_parts(exc.info, exc.error)
            return Failure.from_http(status, error_type, reason)
        return None

    def search(self, index: str, body: Mapping[str, Any], search_type: str = "",
               pipeline: str = "") -> Mapping[str, Any]:
        """``POST index/_search``, optionally through the search pipeline ``pipeline``."""
        params = {"search_type": search_type} if search_type else {}
        if pipeline:
            params["search_pipeline"] = pipeline
        return self.client.search(index=index, body=body, params=params or None)

    def put_search_pipeline(self, name: str, body: Mapping[str, Any]) -> None:
        """``PUT _search/pipeline/<name>`` (create or replace)."""
        self.client.transport.perform_request("PUT", f"/_search/pipeline/{name}", body=dict(body))

    def msearch(self, lines: list[dict[str, Any]]) -> list[Mapping[str, Any]]:
        return self.client.msearch(body=lines)["responses"]

    def mget(self, index: str, ids: list[str], excludes: list[str]) -> list[Mapping[str, Any]]:
        params = {"_source_excludes": ",".join(excludes)} if excludes else {}
        return self.client.mget(index=index, body={"ids": ids}, params=params)["docs"]

    def create_index(self, index: str, body: Mapping[str, Any]) -> None:
        self.client.indices.create(index=index, body=body, request_timeout=self.options.bulk_timeout_s)

    def delete_indices(self, indices: list[str]) -> None:
        self.client.indices.delete(index=",".join(indices), request_timeout=self.options.bulk_timeout_s)

    def alias_targets(self, alias: str) -> list[str]:
        from opensearchpy import NotFoundError

        try:
            return list(self.client.indices.get_alias(name=alias))
        except NotFoundError:
            return []

    def get_aliases(self, pattern: str) -> dict[str, list[str]]:
        found = self.client.indices.get_alias(index=pattern, params={"allow_no_indices": "true",
                                                                      "ignore_unavailable": "true"})
        return {index: list((body or {}).get("aliases") or {}) for index, body in found.items()}

    def update_aliases(self, actions: list[dict[str, Any]]) -> None:
        self.client.indices.update_aliases(body={"actions": actions}, request_timeout=self.options.bulk_timeout_s)

    def get_mapping(self, index: str) -> dict[str, Any]:
        return dict(self.client.indices.get_mapping(index=index))

    def shard_count(self, index: str) -> int:
        found = self.client.indices.get_settings(index=index, name="index.number_of_shards",
                                                 params={"flat_settings": "true"})
        return max((int(body["settings"]["index.number_of_shards"]) for body in found.values()), default=1)

    def put_meta(self, index: str, meta: Mapping[str, Any]) -> None:
        self.client.indices.put_mapping(index=index, body={"_meta": dict(meta)})

    def put_settings(self, index: str, settings: Mapping[str, Any]) -> None:
        self.client.indices.put_settings(index=index, body=dict(settings))

    def refresh(self, index: str) -> None:
        self.client.indices.refresh(index=index, request_timeout=self.options.bulk_timeout_s)

    def start_forcemerge(self, index: str) -> str:
        started = self.client.indices.forcemerge(index=index, max_num_segments=1, wait_for_completion=False,
                                                 request_timeout=self.options.bulk_timeout_s)
        return str(started["task"])

    def task(self, task_id: str) -> Mapping[str, Any]:
        from opensearchpy.exceptions import OpenSearchWarning

        with warnings.catch_warnings():
            # a finished task is read from the .tasks system index, which 2.x reports as "access to system
            # indices"; GET _tasks/<id> is the documented way to read it
            warnings.simplefilter("ignore", OpenSearchWarning)
            return dict(self.client.tasks.get(task_id=task_id, request_timeout=self.options.bulk_timeout_s))

    def wait_for_green(self, index: str, timeout_s: float) -> str:
        health = self.client.cluster.health(index=index, params={"wait_for_status": "green",
                                                                 "timeout": f"{int(timeout_s)}s"},
                                            request_timeout=timeout_s + 10.0)
        return str(health["status"])

    def analyze(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.client.indices.analyze(body=dict(body))

    def bulk(self, actions: list[dict[str, Any]]) -> Iterable[tuple[bool, dict[str, Any]]]:
        from opensearchpy.helpers import streaming_bulk

        return streaming_bulk(self.client, actions, chunk_size=self.options.bulk_chunk, raise_on_error=False,
                              raise_on_exception=False, max_retries=0, request_timeout=self.options.bulk_timeout_s)

    def scan(self, index: str, body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
        from opensearchpy.helpers import scan

        return scan(self.client, query=dict(body), index=index, size=500, scroll="5m",
                    request_timeout=self.options.bulk_timeout_s)


class OpenSearchBackend(EngineBackend):
    """A :class:`~service.backends.base.SearchBackend` on OpenSearch 2.x (see :class:`EngineBackend` for the args).

    It is also a :class:`~service.backends.base.NativeFusion`: with the neural-search plugin,
    :meth:`hybrid` fuses BM25 and kNN on the engine (``engine.fusion = engine``).
    """

    api_type = OpenSearchApi
    kind = OpenSearchApi.kind

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self._pipelines: set[str] = set()

    @property
    def api(self) -> OpenSearchApi:
        """The OpenSearch adapter (raw requests, no error translation)."""
        return cast(OpenSearchApi, self.client.api)

    def hybrid(self, name: str, query: str, vector: np.ndarray, *, k: int, fusion: RetrievalSettings,
               weights: Mapping[str, float], filters: Filters | None = None, lang: str = "") -> list[Hit]:
        """BM25 and kNN (``k`` hits each) in one ``hybrid`` query, fused by a search pipeline on the engine.

        Raises:
            EngineUnavailable: when the node lacks the neural-search plugin (with what to do).
        """
        info = self.catalog.info(name)
        if k <= 0:
            return []
        fetch = k * self.max_versions(name, info)  # k works remain after collapsing their versions
        knn_body = self._knn_body(info, vector, k=fetch, filters=filters)
        bm25_body = self._bm25_body(name, info, query, k=fetch, filters=filters, lang=lang)
        pipeline = self._fusion_pipeline(fusion, weights)
        body = req.hybrid_body(bm25_body, knn_body, size=fetch, fields=info.field_map)
        # query_then_fetch: with dfs_query_then_fetch, OpenSearch 2.19 skips the search pipeline on indices
        # of several shards and returns the hybrid query's raw per-shard lists (seen on a 3-shard index)
        response = self.client.call_complete("hybrid search", self.api.search, name, body, "", pipeline, index=name)
        return engine_hits(response, "hybrid", info, k)

    def _fusion_pipeline(self, fusion: RetrievalSettings, weights: Mapping[str, float]) -> str:
        """The name of the search pipeline for ``fusion`` with ``weights``, created on the node on first use."""
        name, body = req.fusion_pipeline(fusion.fusion, rrf_k=fusion.rrf_k,
                                         weights=(weights["bm25"], weights["knn"]))
        if name not in self._pipelines:
            try:
                self.client.call("create the fusion pipeline", self.api.put_search_pipeline, name, body)
            except EngineUnavailable as exc:
                if "HTTP 400" not in str(exc):
                    raise
                raise EngineUnavailable(
                    f"OpenSearch at {self.url} cannot fuse natively ({str(exc)[:200]}); it needs the neural-search "
                    "plugin (scripts/opensearch-local installs it), or set engine.fusion = client") from None
            self._pipelines.add(name)
        return name
