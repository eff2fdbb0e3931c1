"""Long-question processing: sentences, question proper, passages, BM25 weights, the combined vector."""

from __future__ import annotations

import math

import numpy as np
import pytest

from service.analysis import crosslingual
from service.analysis.chain import analyzer_for
from service.retrieval import long_query
from service.retrieval.long_query import bm25_idf, passages_of, question_of, read_long_query, sentences

pytestmark = pytest.mark.unit

FACTS = ("A vermietet B eine Wohnung in Zürich. B leistet gemäss Art. 257e Abs. 1 OR eine Kaution von CHF 3000. "
         "Dr. Meier verwaltet das Haus für A. Nach dem Auszug verlangt B die Kaution zurück; A weigert sich. ")
QUESTION = "Kann B die Kaution zurückfordern, und bei wem?"
FILLER = "Der weitere Sachverhalt " + "ist lang und " * 40 + "ohne Bedeutung. "
"""One sentence longer than the question window: what precedes it is facts only."""


def test_sentences_split_at_ends_but_not_after_legal_abbreviations() -> None:
    assert sentences(FACTS + QUESTION) == [
        "A vermietet B eine Wohnung in Zürich.",
        "B leistet gemäss Art. 257e Abs. 1 OR eine Kaution von CHF 3000.",
        "Dr. Meier verwaltet das Haus für A.",
        "Nach dem Auszug verlangt B die Kaution zurück;",
        "A weigert sich.",
        QUESTION,
    ]
    assert sentences("法院如何判决？请说明。") == ["法院如何判决？", "请说明。"]


def test_question_is_the_trailing_sentences_that_fit() -> None:
    parts = sentences(FACTS + QUESTION)
    assert question_of(parts, max_chars=60) == QUESTION
    assert question_of(parts, max_chars=80) == "A weigert sich. " + QUESTION
    long_last = "wort " * 400
    assert len(question_of(["Vorher.", long_last.strip()], max_chars=100)) <= 100


def test_passages_cover_the_whole_input_and_stay_bounded() -> None:
    text = " ".join(f"Satz Nummer {i} handelt vom Mietrecht und vom Vertrag." for i in range(2000))
    parts = sentences(text)
    passages = passages_of(parts, target=1000, most=24)
    assert " ".join(passages) == " ".join(parts)  # nothing dropped, the end included
    assert len(passages) <= 26
    assert passages[-1].endswith("Satz Nummer 1999 handelt vom Mietrecht und vom Vertrag.")


def test_term_weights_are_sublinear_and_count_the_question_twice() -> None:
    long = read_long_query("Miete " * 20 + "Vertrag. " + FILLER + QUESTION)
    assert long.question == QUESTION
    weights = long.term_weights("de")
    stem = analyzer_for("de").stem
    assert weights[stem("Miete")] == pytest.approx(1 + math.log(20))
    assert weights[stem("Kaution")] == pytest.approx(2.0)  # once in the whole text, once in the question


def test_term_weights_are_capped_by_tf_idf_but_keep_the_question(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(long_query, "MAX_TERMS", 3)
    long = read_long_query("Alpha Beta Gamma Delta Epsilon Zeta. " + FILLER + QUESTION)
    rare = {"alpha": 50.0, "zeta": 40.0, "gamma": 30.0}
    weights = long.term_weights("en", lambda terms: {t: rare.get(t, 0.1) for t in terms})
    facts = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
    assert {t for t in weights if t in facts} == {"alpha", "zeta", "gamma"}
    assert all(t in weights for t in analyzer_for("en").query_tokens(QUESTION))


def test_term_weights_leave_out_the_parties_letters() -> None:
    long = read_long_query("A verkauft B ein Auto. B zahlt A nicht. " * 10 + FILLER + QUESTION)
    weights = long.term_weights("de")
    assert "a" not in weights and "b" not in weights
    assert analyzer_for("de").stem("Auto") in weights


def test_term_weights_of_a_question_in_a_language_the_index_lacks_are_translated() -> None:
    case = ("K rented a flat from V for six years and paid a deposit. " * 6
            + "My landlord keeps my deposit: what can I do?")
    long = read_long_query(case)
    english = long.term_weights("en")
    translated = long.term_weights("en", None, ("de", "fr", "it"))
    german = analyzer_for("de").stem
    assert german("Vermieter") in translated and german("Vermieter") not in english
    # the English words stay at half their weight (names and shared words still match)
    assert translated["deposit"] == pytest.approx(crosslingual.UNTRANSLATED_WEIGHT * english["deposit"])
    # a language the index holds is not translated
    assert long.term_weights("en", None, ("en", "de")) == english


def test_bm25_idf_matches_the_formula() -> None:
    idf = bm25_idf({"a": 0, "b": 10}, 100)
    assert idf["a"] == pytest.approx(math.log(1 + 100.5 / 0.5))
    assert idf["b"] == pytest.approx(math.log(1 + 90.5 / 10.5))


class _Recorder:
    name = "fake"
    dim = 2

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        return np.asarray([[1.0, 0.0]] + [[0.0, 1.0]] * (len(texts) - 1), dtype=np.float32)


def test_vector_is_the_passage_mean_with_an_optional_share_of_the_question() -> None:
    long = read_long_query(FACTS + QUESTION)
    embedder = _Recorder()
    vector = long.vector(embedder, question_share=0.5)  # type: ignore[arg-type]
    assert embedder.seen == [long.question, *long.passages]
    assert np.allclose(vector, np.asarray([1.0, 1.0]) / math.sqrt(2))
    embedder.seen.clear()
    assert np.allclose(long.vector(embedder), [1.0, 0.0])  # type: ignore[arg-type]
    assert embedder.seen == list(long.passages)
