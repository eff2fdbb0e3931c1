"""The agentic pipelines on a real OpenSearch node: the same answers as on the embedded engine."""

from __future__ import annotations

import pytest

from service.backends.embedded import EmbeddedBackend
from service.backends.opensearch import OpenSearchBackend
from service.config import load_settings
from service.indexing import index_documents, rebuild_engine
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime
from tests.support.engines import unique_index

pytestmark = pytest.mark.engine

QUESTIONS = ["用人单位辞退员工未通知工会是否属于违法解除？另外，劳动者违法解除劳动合同要赔偿吗？",
             "Mein Vermieter gibt die Kaution nicht zurück", "Testament unter Drohung errichtet, ist es gültig?"]


@pytest.fixture(scope="module")
def engines(opensearch_url, mini_docs, use_embedder, tmp_path_factory):  # type: ignore[no-untyped-def]
    settings = load_settings(environ={})
    engine = OpenSearchBackend(opensearch_url)
    name = unique_index("agentic")
    assert rebuild_engine(engine, name, use_embedder, mini_docs, language="").ok
    embedded = EmbeddedBackend(tmp_path_factory.mktemp("agentic-engine"))
    assert index_documents(embedded, use_embedder, name, mini_docs, language="").ok
    yield (Runtime(settings, backend=engine, embedder=use_embedder),
           Runtime(settings, backend=embedded, embedder=use_embedder), name)
    engine.drop(name)


@pytest.mark.parametrize("question", QUESTIONS)
def test_agentic_agrees_with_the_embedded_engine(engines, question: str) -> None:  # type: ignore[no-untyped-def]
    engine_rt, embedded_rt, name = engines
    request = SearchRequest(query=question, index=name, k=5)
    on_engine = engine_rt.pipeline("agentic").run(request)
    on_embedded = embedded_rt.pipeline("agentic").run(request)
    assert on_engine.hits and on_engine.trace["rounds"] == on_embedded.trace["rounds"]
    assert on_engine.hits[0].doc_id == on_embedded.hits[0].doc_id
    overlap = {h.doc_id for h in on_engine.hits} & {h.doc_id for h in on_embedded.hits}
    assert len(overlap) >= 3
