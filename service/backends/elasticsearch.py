"""The Elasticsearch backend: the requests of :class:`~service.backends.engine.backend.EngineBackend` on
elasticsearch-py 8.x.

Vectors live in a ``dense_vector`` field (HNSW, cosine, no quantisation). elasticsearch-py checks
that the server is Elasticsearch, which is why OpenSearch has its own adapter. The 8.x client is
used because it talks to 8.x nodes; the 9.x client sends ``compatible-with=9`` headers that 8.x
nodes refuse.

Example::

    backend = ElasticsearchBackend("http://127.0.0.1:9201")
    backend.knn("lexsearch-statutes", vector, k=10, filters=Filters.of(law="OR"))
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from service.backends._requests import Engine
from service.backends.engine.backend import EngineBackend
from service.backends.engine.client import ProductApi
from service.backends.engine.errors import Failure, FailureKind, error_parts, short_text


class ElasticsearchApi(ProductApi):
    """The :class:`~service.backends.engine.client.EngineApi` of Elasticsearch 8.x, on elasticsearch-py 8.x."""

    engine = Engine.ELASTICSEARCH
    kind = "elasticsearch"
    product = "Elasticsearch"
    start_hint = "`scripts/elasticsearch-local start`"

    def _new_client(self) -> Any:
        from elasticsearch import Elasticsearch

        conn = self.connection
        return Elasticsearch(
            list(conn.urls),
            basic_auth=(conn.username, conn.password) if conn.username else None,
            api_key=conn.api_key or None,
            request_timeout=conn.timeout_s,
            **self._common_client_options(),
        )

    def slow(self) -> Any:
        """The client with the timeout of bulk and admin requests."""
        return self.client.options(request_timeout=self.options.bulk_timeout_s)

    def info(self, timeout: float) -> Mapping[str, Any]:
        return self.client.options(request_timeout=timeout).info().body

    def check_product(self, info: Mapping[str, Any]) -> str:
        number = str((info.get("version") or {}).get("number", "0"))
        major = number.split(".")[0]
        if not major.isdigit() or int(major) < 8:
            return f"runs Elasticsearch {number}; lexsearch needs 8.x (dense_vector kNN with filters)"
        return ""

    def classify(self, exc: Exception) -> Failure | None:
        import elasticsearch as es

        if isinstance(exc, es.UnsupportedProductError):
            return Failure(FailureKind.PRODUCT, getattr(exc.meta, "status", ""), str(exc))
        if isinstance(exc, es.ConnectionTimeout):
            return Failure(FailureKind.TIMEOUT, "TIMEOUT", str(exc))
        if isinstance(exc, es.ConnectionError):  # includes SSLError
            return Failure(FailureKind.UNREACHABLE, "N/A", short_text(exc))
        if isinstance(exc, es.ApiError):
            status = exc.meta.status
            error_type, reason = error_parts(exc.body, exc.message)
            return Failure.from_http(status, error_type, reason)
        if isinstance(exc, es.TransportError):
            return Failure(FailureKind.UNREACHABLE, "N/A", str(exc))
        return None

    def search(self, index: str, body: Mapping[str, Any], search_type: str = "") -> Mapping[str, Any]:
        return self.client.search(index=index, body=dict(body), search_type=search_type or None).body

    def msearch(self, lines: list[dict[str, Any]]) -> list[Mapping[str, Any]]:
        return self.client.msearch(searches=lines).body["responses"]

    def mget(self, index: str, ids: list[str], excludes: list[str]) -> list[Mapping[str, Any]]:
        return self.client.mget(index=index, ids=ids, source_excludes=excludes or None).body["docs"]

    def create_index(self, index: str, body: Mapping[str, Any]) -> None:
        self.slow().indices.create(index=index, settings=body.get("settings"), mappings=body.get("mappings"),
                                    aliases=body.get("aliases"))

    def delete_indices(self, indices: list[str]) -> None:
        self.slow().indices.delete(index=indices)

    def alias_targets(self, alias: str) -> list[str]:
        from elasticsearch import NotFoundError

        try:
            return list(self.client.indices.get_alias(name=alias).body)
        except NotFoundError:
            return []

    def get_aliases(self, pattern: str) -> dict[str, list[str]]:
        found = self.client.indices.get_alias(index=pattern, allow_no_indices=True, ignore_unavailable=True,
                                                expand_wildcards="open").body
        return {index: list((body or {}).get("aliases") or {}) for index, body in found.items()}

    def update_aliases(self, actions: list[dict[str, Any]]) -> None:
        self.slow().indices.update_aliases(actions=actions)

    def get_mapping(self, index: str) -> dict[str, Any]:
        return dict(self.client.indices.get_mapping(index=index).body)

    def shard_count(self, index: str) -> int:
        found = self.client.indices.get_settings(index=index, name="index.number_of_shards", flat_settings=True).body
        return max((int(body["settings"]["index.number_of_shards"]) for body in found.values()), default=1)

    def put_meta(self, index: str, meta: Mapping[str, Any]) -> None:
        self.client.indices.put_mapping(index=index, meta=dict(meta))

    def put_settings(self, index: str, settings: Mapping[str, Any]) -> None:
        self.client.indices.put_settings(index=index, settings=dict(settings))

    def refresh(self, index: str) -> None:
        self.slow().indices.refresh(index=index)

    def start_forcemerge(self, index: str) -> str:
        started = self.slow().indices.forcemerge(index=index, max_num_segments=1, wait_for_completion=False).body
        return str(started["task"])

    def task(self, task_id: str) -> Mapping[str, Any]:
        from elasticsearch.exceptions import GeneralAvailabilityWarning

        with warnings.catch_warnings():
            # the client marks the tasks API "technical preview"; GET _tasks/<id> has been stable since 5.x
            warnings.simplefilter("ignore", GeneralAvailabilityWarning)
            return dict(self.slow().tasks.get(task_id=task_id).body)

    def wait_for_green(self, index: str, timeout_s: float) -> str:
        health = self.client.options(request_timeout=timeout_s + 10.0).cluster.health(
            index=index, wait_for_status="green", timeout=f"{int(timeout_s)}s").body
        return str(health["status"])

    def analyze(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.client.indices.analyze(**body).body

    def bulk(self, actions: list[dict[str, Any]]) -> Iterable[tuple[bool, dict[str, Any]]]:
        from elasticsearch.helpers import streaming_bulk

        return streaming_bulk(self.slow(), actions, chunk_size=self.options.bulk_chunk, raise_on_error=False,
                              raise_on_exception=False, max_retries=0)

    def scan(self, index: str, body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
        from elasticsearch.helpers import scan

        return scan(self.slow(), query=dict(body), index=index, size=500, scroll="5m")


class ElasticsearchBackend(EngineBackend):
    """A :class:`~service.backends.base.SearchBackend` on Elasticsearch 8.x (args as :class:`EngineBackend`)."""

    api_type = ElasticsearchApi
    kind = ElasticsearchApi.kind
