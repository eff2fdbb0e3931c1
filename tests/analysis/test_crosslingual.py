"""BM25 terms of questions in a language the index does not hold (bilingual glossaries)."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.analysis import crosslingual
from service.analysis.chain import SYNONYM_WEIGHT, analyzer_for, analyzers_dir
from service.analysis.crosslingual import (
    UNTRANSLATED_WEIGHT,
    bm25_query_weights,
    translate_term_weights,
    translated_weights,
)
from service.analysis.synonyms import SynonymRules

pytestmark = pytest.mark.unit

SWISS = ("de", "fr", "it")


def _glossary(*lines: str) -> SynonymRules:
    return SynonymRules.parse(lines, analyzer_for("en").tokens, analyzer_for("de").tokens)


def test_glossary_targets_are_analysed_in_the_target_language() -> None:
    rules = _glossary("landlord => Vermieter", "security deposit => Mietzinsdepot")
    assert rules.expand(analyzer_for("en").tokens("my landlord keeps the security deposit")) == {
        "vermiet": 1, "mietzinsdepot": 1, "mietzin": 1, "depot": 1}


def test_a_question_in_a_language_of_the_index_is_analysed_as_before() -> None:
    question = "Mein Vermieter gibt mir die Kaution nicht zurück"
    assert bm25_query_weights(question, SWISS) == analyzer_for("de").query_weights(question)
    assert bm25_query_weights(question, SWISS, "de") == analyzer_for("de").query_weights(question)
    english = "My landlord does not return my deposit"
    assert bm25_query_weights(english, ("en",)) == analyzer_for("en").query_weights(english)


def test_an_english_question_is_translated_for_a_swiss_index() -> None:
    weights = bm25_query_weights("My landlord does not give back the deposit after I moved out.", SWISS)
    assert weights["vermiet"] == 1.0                  # landlord => Vermieter
    assert weights["sich"] == 1.0                     # deposit => Sicherheit
    assert weights["landlord"] == UNTRANSLATED_WEIGHT  # the question's own words stay
    # a given language that the index lacks is translated too
    assert bm25_query_weights("my landlord", SWISS, "en")["vermiet"] == 1.0


def test_a_term_that_shows_no_language_is_read_as_the_index_main_language() -> None:
    # "Verrechnung" has no function word and no umlaut: read as English (the detector's default) it
    # stayed unstemmed and matched no German article; it is the index's main language instead
    for term in ("Verrechnung", "Grundpfandverschreibung"):
        weights = bm25_query_weights(term, SWISS)
        assert weights == analyzer_for("de").query_weights(term)
        assert weights != analyzer_for("en").query_weights(term)
    assert "verrechn" in bm25_query_weights("Verrechnung", SWISS)
    assert bm25_query_weights("compensation", ("en",)) == analyzer_for("en").query_weights("compensation")
    # a sign of English still sends the question through the glossary, and so does a given language
    assert bm25_query_weights("the deposit", SWISS)["sich"] == 1.0
    assert bm25_query_weights("deposit", SWISS, "en")["sich"] == 1.0


def test_an_english_term_of_art_without_a_language_also_reads_through_the_glossary() -> None:
    # "deposit" shows no language, so it is read as German ("Depositen" of the SchKG) and also through
    # the English glossary, whose German terms (Sicherheit, Mietzinsdepot) find the tenancy article
    weights = bm25_query_weights("deposit", SWISS)
    assert weights["deposit"] == 1.0
    assert weights["sich"] == 1.0 and weights["mietzinsdepot"] == 1.0
    assert bm25_query_weights("landlord deposit", SWISS)["vermiet"] == 1.0
    assert crosslingual.glossary_readings("deposit", SWISS)["sich"] == 1.0
    assert crosslingual.glossary_sources(SWISS) == {"en"}
    assert crosslingual.glossary_sources(("en",)) == set()
    # a word of the German statutes stays German, though the glossary has an English look-alike
    assert bm25_query_weights("Rente", SWISS) == analyzer_for("de").query_weights("Rente")      # rent
    assert bm25_query_weights("Arrest", SWISS) == analyzer_for("de").query_weights("Arrest")    # arrest
    # a term no glossary entry matches is unchanged, and a given language is taken as given
    assert bm25_query_weights("Verrechnung", SWISS) == analyzer_for("de").query_weights("Verrechnung")
    assert bm25_query_weights("deposit", SWISS, "de") == analyzer_for("de").query_weights("deposit")


def test_longer_glossary_phrases_weigh_more_and_target_synonyms_apply() -> None:
    rules = _glossary("share => Teil", "share of the inheritance => Pflichtteil", "deposit => Kaution")
    weights = translated_weights("a share of the inheritance and a deposit", "en", "de", rules)
    assert weights["pflichtteil"] == 2.0              # a two-word trigger
    assert weights["teil"] == 2.0                     # the longest rule that gives a term decides
    assert weights["kaution"] == 1.0
    assert weights["mietzinsdepot"] == SYNONYM_WEIGHT  # German synonym rule of the translation


def test_translations_weigh_as_much_as_the_terms_they_translate() -> None:
    rules = _glossary("share of the inheritance => Pflichtteil", "deposit => Kaution")
    english = analyzer_for("en")
    text = "my share of the inheritance and my deposit"
    tokens = english.query_tokens(text)
    weights = {tok: 1.0 for tok in tokens} | {"deposit": 3.0}
    out = translate_term_weights(weights, tokens, english.word_stems(text), "de", rules)
    assert out["kaution"] == 3.0                     # one word, weighing 3
    assert out["pflichtteil"] == 2.0                 # two terms ("share", "inherit"), each weighing 1
    assert out["deposit"] == UNTRANSLATED_WEIGHT * 3.0
    # a short question's words weigh their counts, and their translations as much as one occurrence
    twice = "my deposit, the deposit"
    short = translated_weights(twice, "en", "de", rules)
    assert short["deposit"] == 2 * UNTRANSLATED_WEIGHT and short["kaution"] == 1.0


def test_without_a_glossary_the_question_is_analysed_as_the_closest_index_language(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for item in analyzers_dir().iterdir():
        if item.suffix == ".json" or item.name == "de-compound-words.txt":
            (tmp_path / item.name).write_bytes(item.read_bytes())
    monkeypatch.setenv("LEXSEARCH_ANALYZERS_DIR", str(tmp_path))
    crosslingual.forget_glossaries()
    try:
        question = "My landlord does not return the deposit"
        assert bm25_query_weights(question, SWISS) == analyzer_for("de").query_weights(question)
    finally:
        monkeypatch.undo()
        crosslingual.forget_glossaries()


def test_the_glossary_reads_a_story_of_false_rumours_as_defamation() -> None:
    weights = bm25_query_weights("A colleague tells everyone that I stole money, which is false.", SWISS)
    german = analyzer_for("de")
    assert weights[german.stem("Verleumdung")] >= 1.0
    assert weights[german.stem("Nachrede")] >= 1.0


def test_words_no_glossary_entry_holds_take_their_learned_translations(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for item in analyzers_dir().rglob("*"):
        if item.is_file() and not item.name.endswith(".learned.tsv"):
            target = tmp_path / item.relative_to(analyzers_dir())
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(item.read_bytes())
    (tmp_path / "glossary" / "en-de.learned.tsv").write_text(
        "# test table\nusufruct\tnutzniess\t0.6\nlandlord\tmiet\t0.3\n", encoding="utf-8")
    monkeypatch.setenv("LEXSEARCH_ANALYZERS_DIR", str(tmp_path))
    crosslingual.forget_glossaries()
    try:
        weights = bm25_query_weights("My landlord claims a usufruct over the garden.", SWISS)
        assert weights["nutzniess"] == pytest.approx(crosslingual.LEARNED_TRANSLATION_WEIGHT * 0.6)
        assert weights["usufruct"] == UNTRANSLATED_WEIGHT
        assert weights["vermiet"] == 1.0        # "landlord" is a glossary entry: its learned "miet" stays out
        assert "miet" not in weights
    finally:
        monkeypatch.undo()
        crosslingual.forget_glossaries()


@pytest.mark.parametrize("question, german", [
    ("Can the owner of the garden claim a usufruct?", "Nutzniessung"),
    ("easement", "Dienstbarkeit"),                 # a term of art alone: no language shown
    ("Does my lien on the car survive?", "Pfand"),
])
def test_terms_of_art_reach_the_german_articles_through_the_learned_translations(question: str,
                                                                                  german: str) -> None:
    assert crosslingual.term_translations("en", "de") is not None  # the shipped table
    stem = analyzer_for("de").stem(german)
    assert stem not in analyzer_for("en").tokens(question)
    assert bm25_query_weights(question, SWISS).get(stem, 0.0) > UNTRANSLATED_WEIGHT
