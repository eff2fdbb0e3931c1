"""Law prediction and the recall-safe prefilter; the LLM law predictor through the test server."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from service.agents.prefilter import (
    LawClassifier,
    LawPrediction,
    LlmLawPredictor,
    _features,
    prefilter_laws,
    prefilter_sections,
    section_filter,
)
from service.config import LlmSettings
from service.corpus.graph import CorpusGraph
from service.corpus.model import Filters, LegalDoc
from service.llm.budget import CallBudget
from service.llm.client import LlmClient
from tests.support.openai_server import OpenAITestServer, Reply

pytestmark = pytest.mark.unit

TOKENS = [["miete", "kaution"], ["miete", "kündigung"], ["erbe", "testament"], ["testament", "pflichtteil"],
          ["hund", "biss"], ["miete", "mangel"], ["erbe", "ausschlagung"]] * 3
SECTIONS = [["BGB#13"], ["BGB#14"], ["BGB#48"], ["BGB#57"], ["BGB#20"], ["BGB#13"], ["BGB#48"]] * 3


def test_classifier_predicts_sections_and_laws() -> None:
    clf = LawClassifier.fit(TOKENS, None, SECTIONS, {s: "BGB" for labs in SECTIONS for s in labs})
    probs = clf.section_probabilities(["testament", "erbe"])
    assert clf.sections[int(np.argmax(probs))] == "BGB#48" and probs.sum() == pytest.approx(1.0)
    assert clf.law_probabilities(["miete"]) == [("BGB", pytest.approx(1.0))]
    again = LawClassifier.from_arrays(clf.to_arrays())
    np.testing.assert_allclose(again.section_probabilities(["miete"]), clf.section_probabilities(["miete"]),
                               atol=1e-3)


def test_classifier_sums_sections_per_law_and_uses_vectors() -> None:
    labels = [["OR#0"], ["OR#1"], ["ZGB#10"], ["ZGB#10"], ["StGB#2"], ["OR#0"], ["ZGB#10"]] * 3
    law_of = {s: s.split("#")[0] for labs in labels for s in labs}
    vectors = np.eye(7, 4, dtype=np.float32)[[0, 0, 1, 1, 2, 0, 1] * 3]
    clf = LawClassifier.fit(TOKENS, vectors, labels, law_of)
    laws = clf.law_probabilities(["erbe"], vectors[2])
    assert laws[0][0] == "ZGB" and sum(p for _, p in laws) == pytest.approx(1.0)
    assert clf.vector_dim == 4 and clf.law_probabilities(["miete"])[0][0] == "OR"  # no vector: terms only
    single = LawClassifier.fit(TOKENS[:2], None, [["A#0"], ["A#0"]], {"A#0": "A"})
    assert single.law_probabilities(["x"]) == [("A", pytest.approx(1.0))]
    with pytest.raises(ValueError):
        LawClassifier.fit(TOKENS[:2], None, [[], []], {})


def test_many_sections_for_few_questions_train_without_warnings() -> None:
    labels = [[f"OR#{i}"] for i in range(len(TOKENS))]  # every question its own section
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = LawClassifier.fit(TOKENS, None, labels, {s: "OR" for labs in labels for s in labs})
    assert len(clf.sections) == len(TOKENS)


def test_one_question_scores_as_the_sparse_feature_matrix_does() -> None:
    labels = [["OR#0"], ["OR#1"], ["ZGB#10"], ["ZGB#10"], ["StGB#2"], ["OR#0"], ["ZGB#10"]] * 3
    vectors = np.random.default_rng(1).standard_normal((len(TOKENS), 4)).astype(np.float32)
    clf = LawClassifier.fit(TOKENS, vectors, labels, {s: s.split("#")[0] for labs in labels for s in labs})
    for tokens, vector in ((["erbe", "testament", "erbe"], vectors[2]), (["miete"], None), ([], vectors[0]),
                           (["unbekannt"], None)):
        x = _features(clf.space, [tokens], None if vector is None else vector[None, :], clf.vector_dim)
        expected = np.asarray(x @ clf.coef.T).ravel() + clf.intercept
        np.testing.assert_allclose(clf._linear_scores(tokens, vector), expected, rtol=1e-5, atol=1e-6)


def test_recent_predictions_are_reused_until_forgotten() -> None:
    clf = LawClassifier.fit(TOKENS, None, SECTIONS, {s: "BGB" for labs in SECTIONS for s in labs})
    first = clf.section_probabilities(["testament", "erbe"])
    assert clf.section_probabilities(["testament", "erbe"]) is first  # served from the recent predictions
    clf.forget_recent()
    again = clf.section_probabilities(["testament", "erbe"])
    assert again is not first
    np.testing.assert_array_equal(again, first)


def test_prefilter_takes_laws_up_to_the_mass_and_widens_when_unsure() -> None:
    assert prefilter_laws([("A", 0.8), ("B", 0.15), ("C", 0.05)]) == (["A", "B"], False)
    assert prefilter_laws([("A", 0.5), ("B", 0.2), ("C", 0.2), ("D", 0.1)]) == (["A", "B", "C"], False)
    wide = prefilter_laws([(c, 0.1) for c in "ABCDEFGHIJ"])
    assert wide == (list("ABCDEF"), True)
    assert prefilter_laws([("", 0.9)]) == ([], False)


def _client(server: OpenAITestServer) -> LlmClient:
    return LlmClient(LlmSettings(base_url=server.base_url, model="m", timeout_s=2, max_retries=0))


def test_section_pass_takes_sections_up_to_the_mass_and_filters_by_citation() -> None:
    assert prefilter_sections({"BGB#13": 0.4, "BGB#14": 0.3, "BGB#2": 0.1}) == ["BGB#13", "BGB#14"]
    assert prefilter_sections({"a": 0.1, "b": 0.1, "c": 0.1, "d": 0.1}) == ["a", "b", "c"]
    assert prefilter_sections({}) == []
    graph = CorpusGraph.build([LegalDoc(id=f"b{i}", citation=f"§ {i} BGB", text="T", law="BGB") for i in range(1, 45)])
    narrowed = section_filter(graph, ["BGB#1"], Filters.of(lang="de"))
    assert narrowed is not None and dict(narrowed.terms)["lang"] == ("de",)
    assert dict(narrowed.terms)["citation"] == tuple(f"§ {i} BGB" for i in range(41, 45))
    assert section_filter(graph, ["BGB#7"], None) is None


def test_llm_law_prediction_reweights_the_offline_ranking(openai_server: OpenAITestServer) -> None:
    openai_server.script_chat(Reply(json={"codes": ["L2"]}))
    offline = [("OR", 0.7), ("ZGB", 0.3)]
    prediction = LlmLawPredictor(_client(openai_server)).predict("Erbschaft", offline, ["StGB"], CallBudget(5, 9_999))
    assert prediction.mode == "llm" and prediction.laws[0][0] == "ZGB"
    assert prediction.probability("StGB") == 0.0 and "L3" in openai_server.chat_requests[0].json["messages"][1][
        "content"]


def test_llm_law_prediction_unknown_codes_fall_back(openai_server: OpenAITestServer) -> None:
    openai_server.script_chat(*[Reply(json={"codes": ["L9"]})] * 3)
    offline = [("OR", 0.7), ("ZGB", 0.3)]
    prediction = LlmLawPredictor(_client(openai_server)).predict("Erbschaft", offline, [], CallBudget(5, 9_999))
    assert prediction.mode == "offline" and prediction.laws == offline and prediction.fallback.startswith("rejected")
    trace = prediction.to_trace()
    assert trace["fallback"] and trace["laws"][0] == ["OR", 0.7]
    assert LawPrediction([("A", 1.0)]).probability("A") == 1.0
