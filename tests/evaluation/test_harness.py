"""The evaluation harness: scores overall and per question language, and no question is ever cut."""

from __future__ import annotations

import pytest

from service.corpus.model import Hit, Query
from service.errors import InvalidInput
from service.evaluation.harness import evaluate, format_table
from service.pipelines.base import SearchRequest, SearchResponse

pytestmark = pytest.mark.unit


class Answers:
    """A pipeline that answers each question with fixed ids and remembers what it was asked."""

    name = "fixed"

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def run(self, request: SearchRequest) -> SearchResponse:
        self.asked.append(request.query)
        ids = self.answers[request.qid]
        return SearchResponse(hits=[Hit(doc_id=d, score=1.0 / (i + 1)) for i, d in enumerate(ids)])


def test_results_are_reported_per_question_language() -> None:
    queries = [Query("Der Vermieter gibt die Kaution nicht zurück", qid="a"),
               Query("Le bailleur ne rend pas la garantie", qid="b"),
               Query("Il locatore non restituisce la garanzia", qid="c", lang="it"),
               Query("Wer haftet für den Hund?", qid="d")]
    pipeline = Answers({"a": ["x", "y"], "b": ["z", "y"], "c": ["w"], "d": ["v"]})
    result, run = evaluate(pipeline, queries, {"a": {"y"}, "b": {"y"}, "c": {"w"}, "d": {"q"}}, index="i")
    by_language = result.extra["by_language"]
    assert set(by_language) == {"de", "fr", "it"}
    german = by_language["de"]
    assert (german["queries"], german["recall@10"], german["mrr@10"]) == (2, 0.5, 0.25)
    assert by_language["it"]["mrr@10"] == 1.0 and result.queries == 4
    table = format_table([result])
    assert "\n  de " in table and "\n  it " in table
    assert run["c"] == [("w", 1.0)]
    single, _ = evaluate(pipeline, queries[:1], {"a": {"y"}}, index="i")
    assert "by_language" not in single.extra


def test_a_question_over_the_limit_stops_the_run_before_any_search() -> None:
    pipeline = Answers({"a": ["x"], "b": ["x"]})
    queries = [Query("kurz", qid="a"), Query("lang " * 30, qid="b")]
    with pytest.raises(InvalidInput, match=r"b \(150 characters\)") as caught:
        evaluate(pipeline, queries, {}, index="i", max_query_chars=100)
    assert caught.value.code == "query_too_long" and pipeline.asked == []
    evaluate(pipeline, queries, {}, index="i", max_query_chars=150)
    assert pipeline.asked == [q.text for q in queries]  # searched whole


def test_results_are_reported_per_kind_of_gold_when_the_gold_holds_several() -> None:
    queries = [Query("theft by a servant", qid="a", lang="en"), Query("wrongful dismissal", qid="b", lang="en")]
    pipeline = Answers({"a": ["C1", "S1", "S2"], "b": ["S3", "C2"]})
    qrels = {"a": {"S2", "C1"}, "b": {"S3"}}
    kinds = {"S2": "statute", "S3": "statute", "C1": "decision"}
    result, _ = evaluate(pipeline, queries, qrels, index="i", gold_kinds=kinds)
    by_kind = result.extra["by_kind"]
    assert by_kind["statute"]["queries"] == 2
    assert by_kind["statute"]["mrr@10"] == pytest.approx((1 / 3 + 1) / 2, abs=1e-4)
    assert by_kind["decision"]["queries"] == 1 and by_kind["decision"]["mrr@10"] == 1.0  # b has no decision gold
    assert result.recall_10 == 1.0 and "\n  statute gold " in format_table([result])
    one_kind, _ = evaluate(pipeline, queries, qrels, index="i", gold_kinds={"S2": "statute", "S3": "statute"})
    assert "by_kind" not in one_kind.extra
