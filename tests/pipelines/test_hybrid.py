"""The hybrid pipeline's probe: long questions (key-term BM25 and the combined passage vector), the
heading sections of the candidates that the fusion shares kNN evidence within, and the kNN query moved
toward BM25's first hits."""

from __future__ import annotations

import math

import pytest

from service.config import load_settings
from service.corpus.views import section_key
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime
from service.retrieval.feedback import feedback_vector
from service.retrieval.long_query import read_long_query
from service.retrieval.weights import fuse
from service.tracing import Stopwatch

pytestmark = pytest.mark.unit

CASE = ("M wohnt seit 2015 in einer Mietwohnung in Bern. "
        + "Die Wohnung liegt im dritten Stock und hat einen Balkon. " * 12
        + "Beim Einzug hat M eine Sicherheit von drei Monatszinsen geleistet. Nach der Kündigung gibt der Vermieter "
        "die Kaution nicht zurück. Kann M die Kaution zurückverlangen?")


def _runtime(mini_embedded, use_embedder, long_query_chars: int, **retrieval: float) -> Runtime:
    backend, _ = mini_embedded
    settings = load_settings(environ={}, overrides={"retrieval": {"long_query_chars": long_query_chars, **retrieval}})
    return Runtime(settings, backend=backend, embedder=use_embedder)


def test_long_questions_are_read_as_passages_and_question(mini_embedded, use_embedder) -> None:
    runtime = _runtime(mini_embedded, use_embedder, 500)
    request = SearchRequest(query=CASE, index="mini", k=5, lang="de")
    response = runtime.pipeline("hybrid").run(request)
    assert response.trace["long_query"]["chars"] == len(CASE)
    assert response.trace["long_query"]["passages"] >= 1
    assert "SR220_Art257e_de" in [h.doc_id for h in response.hits[:3]]
    bm25 = runtime.pipeline("bm25").run(request)
    assert "long_query" in bm25.trace and "SR220_Art257e_de" in [h.doc_id for h in bm25.hits[:3]]


def test_short_questions_and_a_zero_limit_keep_the_plain_probe(mini_embedded, use_embedder) -> None:
    short = SearchRequest(query="Mein Vermieter gibt die Kaution nicht zurück", index="mini", k=5)
    assert "long_query" not in _runtime(mini_embedded, use_embedder, 500).pipeline("hybrid").run(short).trace
    off = SearchRequest(query=CASE, index="mini", k=5)
    assert "long_query" not in _runtime(mini_embedded, use_embedder, 0).pipeline("hybrid").run(off).trace


def test_embedded_document_frequencies_cap_the_terms(mini_embedded, use_embedder) -> None:
    backend, index = mini_embedded
    freqs = backend.doc_freqs(index, ["kaution", "miet", "nichtda"])
    assert freqs["nichtda"] == 0 and freqs["miet"] >= freqs["kaution"] >= 1
    pipe = _runtime(mini_embedded, use_embedder, 500).pipeline("hybrid")
    weights = pipe.long_weights(read_long_query(CASE), index, "de")
    assert weights["kaution"] == pytest.approx(2 * (1 + math.log(2)))  # twice in the text, again in the question


def test_the_fusion_shares_knn_evidence_within_the_candidates_heading_sections(mini_embedded, use_embedder) -> None:
    backend, index = mini_embedded
    assert backend.metadata(index)["sections"] is True  # the Swiss articles of the mini corpus have headings
    runtime = _runtime(mini_embedded, use_embedder, 500)
    pipe = runtime.pipeline("hybrid")
    question = "Wie gross ist der Pflichtteil der Nachkommen am Nachlass?"
    probe = pipe.probe(question, index, k=100, filters=None, lang="de", watch=Stopwatch())
    candidates = {h.doc_id for h in probe.bm25} | {h.doc_id for h in probe.knn}
    docs = backend.fetch(index, sorted(candidates))
    assert probe.sections == {d: section_key(doc) for d, doc in docs.items() if section_key(doc) is not None}
    assert probe.sections["SR210_Art471_de"].startswith("ZGB\n")  # the law, then the headings above the title
    assert probe.sections["SR210_Art471_de"].endswith("\nA. Verfügbarer Teil\nI. Umfang der Verfügungsbefugnis")
    assert not any(doc.lang == "zh" for d, doc in docs.items() if d in probe.sections)  # no headings
    response = pipe.run(SearchRequest(query=question, index=index, k=10, lang="de"))
    assert response.trace["fusion_sections"] == {"share": 0.5, "candidates": len(probe.sections)}
    fused = fuse(probe.bm25, probe.knn, probe.weights.as_mapping(), runtime.settings.retrieval, probe.sections,
                 depth=100)
    assert [h.doc_id for h in response.hits] == [h.doc_id for h in fused[:10]]


def test_documents_that_match_no_term_of_a_short_question_follow_those_that_do(mini_embedded, use_embedder) -> None:
    # "Kaution" (with its German synonyms) matches 9 of the mini corpus's 54 documents: BM25 returns those
    # only (fewer than the 100 asked for), kNN every document. Read against the whole depth, the term
    # matches move up the fusion; centred on its own few matches (the rule before), BM25 held its weaker
    # matches back.
    _, index = mini_embedded
    runtime = _runtime(mini_embedded, use_embedder, 500)
    pipe = runtime.pipeline("hybrid")
    probe = pipe.probe("Kaution", index, k=100, filters=None, lang="de", watch=Stopwatch())
    assert probe.depth == 100 and 0 < len(probe.bm25) < 20 < len(probe.knn)
    matches = {h.doc_id for h in probe.bm25}
    hits = pipe.run(SearchRequest(query="Kaution", index=index, k=len(matches), lang="de")).hits
    fused = fuse(probe.bm25, probe.knn, probe.weights.as_mapping(), runtime.settings.retrieval, probe.sections,
                 depth=100)
    assert [h.doc_id for h in hits] == [h.doc_id for h in fused[: len(matches)]]
    before = fuse(probe.bm25, probe.knn, probe.weights.as_mapping(), runtime.settings.retrieval, probe.sections)

    def places(ranking: list) -> int:
        return sum(i for i, h in enumerate(ranking) if h.doc_id in matches)

    assert places(fused) < places(before)
    deeper = pipe.run(SearchRequest(query="Kaution", index=index, k=500, lang="de")).hits  # read against 100
    assert [h.doc_id for h in deeper[: len(matches)]] == [h.doc_id for h in hits]


def test_no_sections_without_a_share_or_outside_hybrid_linear_fusion(mini_embedded, use_embedder) -> None:
    _, index = mini_embedded
    question = "Wie gross ist der Pflichtteil der Nachkommen am Nachlass?"
    for runtime, name in ((_runtime(mini_embedded, use_embedder, 500, section_share=0.0), "hybrid"),
                          (_runtime(mini_embedded, use_embedder, 500, fusion="rrf"), "hybrid"),
                          (_runtime(mini_embedded, use_embedder, 500), "dense")):
        pipe = runtime.pipeline(name)
        assert pipe.probe(question, index, k=20, filters=None, lang="de", watch=Stopwatch()).sections is None
        assert "fusion_sections" not in pipe.run(SearchRequest(query=question, index=index, k=5)).trace


def test_a_long_questions_knn_side_searches_near_the_first_bm25_hits(mini_embedded, use_embedder) -> None:
    backend, index = mini_embedded
    runtime = _runtime(mini_embedded, use_embedder, 500, knn_feedback_docs=3, knn_feedback_weight=0.5)
    pipe = runtime.pipeline("hybrid")
    long = read_long_query(CASE)
    vector = long.vector(use_embedder)
    bm25 = backend.bm25_terms(index, pipe.long_weights(long, index, "de"), k=100)
    first = [h.doc_id for h in bm25[:3]]
    moved = feedback_vector(vector, [backend.vectors(index, first)[d] for d in first], 0.5)
    assert float(moved @ vector) < 0.999  # the query did move
    probe = pipe.probe(CASE, index, k=100, filters=None, lang="de", watch=Stopwatch(), feedback=True)
    assert probe.knn_feedback == 3
    assert [h.doc_id for h in probe.knn] == [h.doc_id for h in backend.knn(index, moved, k=100)]
    assert probe.vector is not None and float(probe.vector @ vector) == pytest.approx(1.0)  # the question's own
    response = pipe.run(SearchRequest(query=CASE, index=index, k=10, lang="de"))
    assert response.trace["knn_feedback"] == {"docs": 3, "weight": 0.5}
    fused = fuse(probe.bm25, probe.knn, probe.weights.as_mapping(), runtime.settings.retrieval, probe.sections,
                 depth=100)
    assert [h.doc_id for h in response.hits] == [h.doc_id for h in fused[:10]]


def test_short_questions_the_routed_and_agentic_probe_and_a_zero_setting_keep_the_vector(mini_embedded,
                                                                                          use_embedder) -> None:
    backend, index = mini_embedded
    pipe = _runtime(mini_embedded, use_embedder, 500).pipeline("hybrid")
    plain = [h.doc_id for h in backend.knn(index, pipe.query_vector(CASE, index), k=50)]
    probe = pipe.probe(CASE, index, k=50, filters=None, lang="de", watch=Stopwatch())  # as routed/agentic call it
    assert probe.knn_feedback == 0 and [h.doc_id for h in probe.knn] == plain
    for runtime, name in ((_runtime(mini_embedded, use_embedder, 500, knn_feedback_docs=0), "hybrid"),
                          (_runtime(mini_embedded, use_embedder, 500, knn_feedback_weight=0.0), "hybrid"),
                          (_runtime(mini_embedded, use_embedder, 500), "dense")):
        response = runtime.pipeline(name).run(SearchRequest(query=CASE, index=index, k=50, lang="de"))
        assert "knn_feedback" not in response.trace
        if name == "dense":
            assert [h.doc_id for h in response.hits] == plain
    short = "Der Vermieter behält die Sicherheit nach dem Auszug"
    probe = pipe.probe(short, index, k=50, filters=None, lang="de", watch=Stopwatch(), feedback=True)
    assert probe.knn_feedback == 0
    assert [h.doc_id for h in probe.knn] == [
        h.doc_id for h in backend.knn(index, use_embedder.embed_queries([short])[0], k=50)]
    assert "knn_feedback" not in pipe.run(SearchRequest(query=short, index=index, k=5, lang="de")).trace
