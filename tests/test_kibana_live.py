"""kibana/*.ndjson against the live mappings of the real OpenSearch and Elasticsearch nodes: every field
that an index pattern, saved search or visualization names exists, with a type that fits its use, in
an index that lexsearch created there (a corpus index, and the API's traces index)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from fnmatch import fnmatchcase
from typing import Any

import pytest

from service.backends.elasticsearch import ElasticsearchBackend
from service.backends.opensearch import OpenSearchBackend
from service.indexing import rebuild_engine
from service.trace_sink import EngineTraceSink, trace_record
from tests.support.engines import unique_index
from tests.support.saved_objects import FILES, field_problems, field_uses, load, mapped_fields

pytestmark = pytest.mark.engine


def matches(pattern: str, index: str) -> bool:
    """Whether a Kibana index pattern (``a-*,-a-b*``: comma-separated, ``-`` excludes) covers ``index``."""
    parts = pattern.split(",")
    return any(fnmatchcase(index, p) for p in parts if not p.startswith("-")) and \
        not any(fnmatchcase(index, p[1:]) for p in parts if p.startswith("-"))


@pytest.fixture(scope="module", params=["opensearch", "elasticsearch"])
def engine(request, mini_docs, use_embedder) -> Iterator[dict[str, Any]]:
    """One engine: the live mappings of a lexsearch corpus index and of a traces index, by index name."""
    if request.param == "opensearch":
        from opensearchpy import OpenSearch

        url = request.getfixturevalue("opensearch_url")
        backend: Any = OpenSearchBackend(url)
        client: Any = OpenSearch([url], timeout=30)
    else:
        from elasticsearch import Elasticsearch

        url = request.getfixturevalue("elasticsearch_url")
        credentials = request.getfixturevalue("elasticsearch_credentials")
        backend = ElasticsearchBackend(url, **credentials.kwargs)
        client = Elasticsearch(url, basic_auth=(credentials.username, credentials.password), request_timeout=30)
    corpus = unique_index("kibana")
    traces = f"lexsearch-traces-test-{uuid.uuid4().hex[:8]}"
    sink = EngineTraceSink(client, traces, engine=request.param)
    try:
        report = rebuild_engine(backend, corpus, use_embedder, mini_docs, language="")
        assert report.ok, report.failed
        sink.emit(trace_record(kind="search", request_id="r1", index=corpus, pipeline="routed",
                               trace={"routing": {"tier": 1, "label": "reranked"}, "timings_ms": {"embed": 1.0}},
                               latency_ms=12.5, hits=10, returned=5))
        sink.flush()
        assert sink.sent == 1, "the trace reached the engine"
        mappings = {}
        for name in (corpus, traces):
            live = client.indices.get_mapping(index=name)
            mappings[name] = next(iter(dict(live).values()))["mappings"]  # the alias's concrete index
        yield {"engine": request.param, "mappings": mappings, "corpus": corpus, "traces": traces}
    finally:
        sink.close()
        backend.drop(corpus)
        client.indices.delete(index=traces, ignore_unavailable=True)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_saved_object_fields_exist_in_the_live_mappings(engine, path) -> None:
    uses = list(field_uses(load(path)))
    assert uses
    checked = set()
    for pattern in sorted({u.pattern for u in uses}):
        if pattern == "eval-*":  # the evaluation indices: lexsearch creates them with the corpus mapping
            index = engine["corpus"]
        else:
            index = next(name for name in (engine["corpus"], engine["traces"]) if matches(pattern, name))
        mapping = engine["mappings"][index]
        excludes = (mapping.get("_source") or {}).get("excludes", [])
        problems = field_problems([u for u in uses if u.pattern == pattern], mapped_fields(mapping), excludes)
        assert problems == [], f"{engine['engine']} {index}: {problems}"
        checked.add(pattern)
    assert checked == {u.pattern for u in uses}


def test_the_patterns_cover_the_indices_lexsearch_creates(engine) -> None:
    patterns = {o["attributes"]["title"] for path in FILES for o in load(path) if o["type"] == "index-pattern"}
    covering = {name: {p for p in patterns if matches(p, name)} for name in (engine["corpus"], engine["traces"])}
    assert covering == {engine["corpus"]: {"lexsearch-*,-lexsearch-traces*"},
                        engine["traces"]: {"lexsearch-traces*"}}
