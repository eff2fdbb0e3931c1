"""Indices of statutes and decisions: each group searched on its own, the rankings interleaved by rank,
statutes first (service/pipelines/kinds.py)."""

from __future__ import annotations

import pytest

from service.backends.embedded import EmbeddedBackend
from service.config import load_settings
from service.corpus.model import DocKind, Filters, Hit, LegalDoc, kind_groups
from service.fusion_calibration import GROUPS_KEY
from service.indexing import index_documents
from service.pipelines.base import IndexRetrieval, SearchRequest, SearchResponse
from service.pipelines.build import Runtime
from service.pipelines.kinds import merge_groups, with_kinds
from service.retrieval.weights import FusionWeights

pytestmark = pytest.mark.unit

QUESTION = "the employer dismissed the worker without notice and kept his wages"


def _statute(n: int, text: str) -> LegalDoc:
    return LegalDoc(id=f"S{n}", text=text, citation=f"Section {n} Labour Act", law="LA", lang="en",
                    kind=DocKind.STATUTE)


def _decision(n: int, text: str) -> LegalDoc:
    return LegalDoc(id=f"C{n}", text=text, citation=f"Case {n}", lang="en", kind=DocKind.DECISION)


def _mixed_corpus() -> list[LegalDoc]:
    """Short statutes and long decisions that repeat the question's words, as judgments do."""
    statutes = [
        _statute(1, "An employer shall not dismiss a worker without notice of one month or wages in lieu of notice."),
        _statute(2, "Wages shall be paid to the worker before the expiry of the seventh day of the wage period."),
        _statute(3, "A trade union may be registered by seven or more members."),
        _statute(4, "The appropriate government may fix minimum rates of wages for scheduled employment."),
    ]
    facts = ("The appellant worker was employed by the respondent employer. The employer dismissed the worker "
             "without notice and kept his wages for the month. The tribunal held the dismissal bad. ")
    decisions = [_decision(n, f"Case {n}. " + facts * (8 + n) + "Appeal dismissed.") for n in range(1, 9)]
    return statutes + decisions


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, use_embedder) -> tuple[EmbeddedBackend, str]:
    backend = EmbeddedBackend(tmp_path_factory.mktemp("indices"))
    report = index_documents(backend, use_embedder, "mixed", _mixed_corpus(), language="en")
    assert report.ok, report.failed
    return backend, "mixed"


def _runtime(backend: EmbeddedBackend, use_embedder, **retrieval: object) -> Runtime:
    settings = load_settings(environ={}, overrides={"retrieval": retrieval} if retrieval else None)
    return Runtime(settings, backend=backend, embedder=use_embedder)


def test_the_kinds_of_an_index_are_read_from_its_documents(mixed) -> None:
    backend, name = mixed
    assert backend.kinds(name) == ("decision", "statute")
    assert kind_groups(backend.kinds(name)) == {"statutes": ("statute",), "decisions": ("decision",)}
    assert kind_groups(("leading_decision", "decision")) == {"decisions": ("leading_decision", "decision")}


@pytest.mark.parametrize("pipeline", ["bm25", "hybrid", "agentic", "routed"])
def test_statutes_are_not_crowded_out_by_long_decisions(mixed, use_embedder, pipeline: str) -> None:
    backend, name = mixed
    runtime = _runtime(backend, use_embedder)
    request = SearchRequest(QUESTION, index=name, k=6, lang="en")
    one = runtime.search_pipeline(pipeline).run(SearchRequest(QUESTION, index=name, k=6, lang="en",
                                                              options={"one_ranking": True}))
    assert all(h.doc_id.startswith("C") for h in one.hits), "the long decisions take every place of one ranking"
    merged = runtime.search_pipeline(pipeline).run(request)
    ids = [h.doc_id for h in merged.hits]
    assert "S1" in ids[:3] and any(i.startswith("C") for i in ids[:3]), ids
    assert set(merged.trace["groups"]) == {"statutes", "decisions"}
    assert all("kind_balance" in h.scores and h.ranks["kind_balance"] == i for i, h in enumerate(merged.hits, 1))
    # the same request without the step (the runtime's plain pipeline) is one ranking
    assert [h.doc_id for h in runtime.pipeline(pipeline).run(request).hits] == [h.doc_id for h in one.hits]


def test_a_kind_filter_or_the_setting_off_search_as_asked(mixed, use_embedder) -> None:
    backend, name = mixed
    runtime = _runtime(backend, use_embedder)
    statutes = runtime.search_pipeline("hybrid").run(
        SearchRequest(QUESTION, index=name, k=3, filters=Filters.of(kind="statute")))
    assert statutes.hits and all(h.doc_id.startswith("S") for h in statutes.hits)
    assert "groups" not in statutes.trace
    off = _runtime(backend, use_embedder, balance_kinds=False).search_pipeline("hybrid")
    assert off.groups_to_balance(SearchRequest(QUESTION, index=name)) == {}
    assert all(h.doc_id.startswith("C") for h in off.run(SearchRequest(QUESTION, index=name, k=4)).hits)


def test_an_index_of_statutes_alone_goes_to_the_pipeline_as_it_is(trilingual_embedded, use_embedder) -> None:
    backend, name = trilingual_embedded
    runtime = _runtime(backend, use_embedder)
    request = SearchRequest("Mein Vermieter gibt die Kaution nicht zurück", index=name, k=3)
    assert runtime.search_pipeline("bm25").groups_to_balance(request) == {}
    balanced = runtime.search_pipeline("bm25").run(request)
    assert [h.doc_id for h in balanced.hits] == [h.doc_id for h in runtime.pipeline("bm25").run(request).hits]
    assert "groups" not in balanced.trace


def test_leading_and_other_decisions_are_one_group(mini_embedded, use_embedder) -> None:
    backend, name = mini_embedded
    pipe = _runtime(backend, use_embedder).search_pipeline("bm25")
    assert pipe.groups_to_balance(SearchRequest("Testament", index=name)) == {
        "statutes": ("statute",), "decisions": ("leading_decision", "decision")}
    assert pipe.groups_to_balance(SearchRequest("Testament", index=name, options={"one_ranking": "1"})) == {}


def _hit(doc_id: str, score: float) -> Hit:
    return Hit(doc_id=doc_id, score=score)


def test_merging_interleaves_the_groups_by_rank_statutes_first() -> None:
    statutes = SearchResponse(hits=[_hit("S1", 9.0), _hit("S2", 5.0), _hit("S3", 4.0), _hit("S4", 2.0)])
    decisions = SearchResponse(hits=[_hit("C1", 300.0), _hit("C2", 290.0), _hit("C3", 280.0)])
    hits, returned = merge_groups({"decisions": decisions, "statutes": statutes}, k=5)
    assert [h.doc_id for h in hits] == ["S1", "C1", "S2", "C2", "S3"]
    assert returned is None
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].score == hits[0].scores["kind_balance"] == pytest.approx(1 / 61)
    assert hits[1].scores["group_score"] == 300.0 and hits[1].ranks["kind_balance"] == 2


def test_each_groups_answer_set_comes_first_and_the_answer_is_their_union() -> None:
    statutes = SearchResponse(hits=[_hit("S1", 9.0), _hit("S2", 5.0), _hit("S3", 4.9)], returned=1)
    decisions = SearchResponse(hits=[_hit("C1", 3.0), _hit("C2", 2.9), _hit("C3", 1.0)], returned=2)
    hits, returned = merge_groups({"statutes": statutes, "decisions": decisions}, k=6)
    assert returned == 3 and [h.doc_id for h in hits[:3]] == ["S1", "C1", "C2"]
    assert [h.doc_id for h in hits[3:]] == ["S2", "S3", "C3"]
    twice = SearchResponse(hits=[_hit("C1", 9.0), _hit("S9", 1.0)])
    hits, returned = merge_groups({"statutes": twice, "decisions": decisions}, k=6)
    assert [h.doc_id for h in hits] == ["C1", "S9", "C2", "C3"] and returned == 3  # C1 once, in its first place
    assert [h.ranks["kind_balance"] for h in hits] == [1, 2, 3, 4]


def test_a_kind_filter_is_added_to_the_others() -> None:
    assert with_kinds(Filters.of(law="LA"), ("statute",)) == Filters.of(law="LA", kind="statute")
    assert with_kinds(None, ("leading_decision", "decision")).values("kind") == ("leading_decision", "decision")


def test_each_group_fuses_with_its_own_label_free_weights(mixed, use_embedder) -> None:
    backend, name = mixed
    runtime = _runtime(backend, use_embedder)
    merged = runtime.search_pipeline("hybrid").run(SearchRequest(QUESTION, index=name, k=6, explain=True))
    stored = backend.metadata(name)[GROUPS_KEY]
    for group in ("statutes", "decisions"):
        used = merged.trace["groups"][group]["fusion_weights"]
        assert used["bm25"] == pytest.approx(stored[group]["bm25"], abs=1e-4) and used["source"] == "index"
    fixed = _runtime(backend, use_embedder, bm25_weight=0.3, knn_weight=0.7)
    assert fixed.retrieval(name).group_weights == {}  # weights fixed by the settings hold for every search


def test_a_kind_filter_picks_the_weights_of_its_group(use_embedder) -> None:
    statutes, decisions, index = (FusionWeights(0.6, 0.4, "index"), FusionWeights(0.9, 0.1, "index"),
                                  FusionWeights(0.8, 0.2, "index"))
    retrieval = IndexRetrieval(use_embedder, index, group_weights={"statutes": statutes, "decisions": decisions})
    assert retrieval.weights_for(Filters.of(kind="statute")) is statutes
    assert retrieval.weights_for(Filters.of(kind=["leading_decision"], law="OR")) is decisions
    assert retrieval.weights_for(Filters.of(kind=["statute", "decision"])) is index  # both groups: the index's
    assert retrieval.weights_for(Filters.of(law="OR")) is index and retrieval.weights_for(None) is index
    assert IndexRetrieval(use_embedder, index).weights_for(Filters.of(kind="statute")) is index
