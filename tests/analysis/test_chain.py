"""The analysis chain: language detection, segmentation, stopwords, stemming."""

from __future__ import annotations

import json

import pytest

from service.analysis.chain import (
    CACHED_TEXT_CHARS,
    LANGUAGES,
    analyze,
    analyzer_for,
    analyzers_dir,
    forget_cached_terms,
    is_label_letter,
)
from service.analysis.language import detect_language, detected_language, question_language

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("text, lang", [
    ("我的房东不退押金怎么办？", "zh"),
    ("用人单位辞退员工未通知工会是否属于违法解除？", "zh"),
    ("Mein Vermieter gibt die Kaution nicht zurück", "de"),
    ("Kann ich das Testament anfechten, wenn mein Vater bedroht wurde?", "de"),
    ("My landlord won't return my deposit", "en"),
    ("A person who has been declared missing may be presumed dead", "en"),
    ("Mon propriétaire ne me rend pas la caution", "fr"),
    ("Il mio padrone di casa non restituisce la cauzione", "it"),
])
def test_detects_the_language(text: str, lang: str) -> None:
    assert detect_language(text) == lang


@pytest.mark.parametrize("text, lang", [
    ("Comment écrire un testament valable sans passer chez le notaire ?", "fr"),  # "é" is not Italian
    ("J'ai reçu une ordonnance pénale et je ne suis pas d'accord.", "fr"),
    ("La formation professionnelle supérieure vise à transmettre", "fr"),
    ("Mio padre ha lasciato soltanto debiti. Posso rinunciare all'eredità?", "it"),
    ("Il Tribunale federale giudica i ricorsi in materia", "it"),  # "in" is no sign of English
    ("Wer gewerbsmässig Motorfahrzeuge an Selbstfahrer vermietet", "de"),  # nor is "an"
    ("Posso fare testamento a mano, senza notaio?", "it"),  # no article or preposition, but "posso", "senza"
    ("Recours contre un acte normatif", "fr"),  # "contre" is French only ("un" is French and Italian)
    ("Gesuch um Zwangsmassnahmen", "de"),
])
def test_french_italian_and_german_short_texts_are_told_apart(text: str, lang: str) -> None:
    assert detect_language(text) == lang


def test_elided_words_count_only_before_an_apostrophe() -> None:
    assert detected_language("c. Bewährung") == "de"  # a heading's enumerator is not Italian "c'"
    assert detected_language("d. Einreden") is None
    assert detected_language("J. Rechtsschutz") is None
    assert detected_language("qu'il") == "fr" and detected_language("dell'anno") == "it"
    assert detected_language("A. Verlobung") is None  # a heading's "A." is not English
    assert detected_language("e. Bekanntgabe") is None  # nor its "e." Italian
    assert detected_language("Il locatore e il conduttore") == "it"
    assert detected_language("But", candidates=("de", "fr", "it", "en")) is None  # a French heading ("purpose")
    assert detected_language("C's credit against D", candidates=("de", "fr", "it")) is None  # a possessive
    assert detected_language("Kapitel I Anwendungsbereich") is None  # a Roman one is neither "I" nor "i"


def test_detection_respects_candidates_and_default() -> None:
    assert detect_language("Art. 41", candidates=("de", "en"), default="de") == "de"
    assert detect_language("", default="en") == "en"
    assert detect_language("whatever", candidates=("zh",)) == "zh"


def test_a_text_without_a_sign_of_its_language_is_told_apart() -> None:
    assert detected_language("deposit") is None
    assert detected_language("Verrechnung", candidates=("de", "fr", "it")) is None
    assert detected_language("Kündigung") == "de"  # an umlaut is a sign
    assert detected_language("the deposit") == "en"
    assert detected_language("押金") == "zh"
    assert detect_language("deposit", default="fr") == "fr"  # what detect_language falls back on


def test_the_statutes_word_list_tells_which_words_the_language_knows() -> None:
    german = analyzer_for("de")
    assert german.knows("Rente") and german.knows("arrest")
    assert not german.knows("deposit") and not german.knows("landlord")
    assert not analyzer_for("en").knows("deposit")  # no word list: nothing is known


def test_a_questions_language_is_its_own_then_the_trained_one_then_detected_among_the_index() -> None:
    assert question_language("Kaution Vermieter", "fr", trained="de") == "fr"
    assert question_language("Kaution Vermieter", "", trained="de", candidates=("it",)) == "de"
    assert question_language("Kaution Vermieter") == "en"  # no signal: English
    assert question_language("Kaution Vermieter", candidates=("de", "fr", "it")) == "de"  # the index's first
    assert question_language("Mein Vermieter gibt die Kaution nicht zurück", candidates=("fr", "de")) == "de"


def test_chinese_is_segmented_by_jieba_and_stopwords_dropped() -> None:
    tokens = analyze("用人单位辞退员工应该提前多久告知？", "zh")
    assert "用人单位" in tokens and "辞退" in tokens and "员工" in tokens
    assert "？" not in tokens
    assert "的" not in analyze("房东的押金", "zh")


def test_german_is_stemmed_and_stopwords_dropped() -> None:
    tokens = analyze("Der Vermieter gibt die Kaution nicht zurück", "de")
    assert "der" not in tokens and "die" not in tokens
    assert "vermiet" in tokens
    assert analyze("Kündigungen", "de") == analyze("Kündigung", "de")


@pytest.mark.parametrize("lang, a, b", [
    ("en", "contracts", "contract"),
    ("fr", "contrats", "contrat"),
    ("it", "contratti", "contratto"),
])
def test_inflected_forms_meet(lang: str, a: str, b: str) -> None:
    assert analyze(a, lang) == analyze(b, lang)


def test_article_numbers_survive() -> None:
    assert "257e" in analyze("Art. 257e OR", "de")
    assert "573b" in analyze("§ 573b BGB", "de")


def test_a_questions_lone_latin_letters_are_not_searched() -> None:
    german = analyzer_for("de")
    assert german.query_tokens("K kauft von V ein Auto, lit. b") == ["kauft", "auto", "lit"]
    # documents keep them
    assert german.tokens("K kauft von V ein Auto, lit. b") == ["k", "kauft", "v", "auto", "lit", "b"]
    assert "k" not in german.query_weights("K kauft von V ein Auto. V verlangt von K den Preis.")
    assert analyzer_for("fr").query_tokens("K a vendu à B") == ["a", "vendu"]  # French "a" (has) is a word
    assert "7" in german.query_tokens("Art. 7 ZGB")       # a digit is not a letter
    assert is_label_letter("k") and is_label_letter("é") and not is_label_letter("7")
    assert not is_label_letter("法")                       # one Chinese character is a word


def test_unknown_language_gets_a_plain_chain() -> None:
    assert analyzer_for("nl").tokens("De Huurder Betaalt") == ["de", "huurder", "betaalt"]


def test_every_language_has_a_definition_file() -> None:
    for lang in LANGUAGES:
        data = json.loads((analyzers_dir() / f"{lang}.json").read_text(encoding="utf-8"))
        assert data["language"] == lang and data["stopwords"]


def test_analyzer_is_thread_safe() -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = ["Die Kündigungen der Mietverträge"] * 200
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: tuple(analyze(t, "de")), texts))
    assert len(set(results)) == 1


def test_german_compounds_keep_the_word_and_add_its_parts() -> None:
    tokens = analyze("Mietkaution", "de")
    assert tokens[0] == "mietkaution"
    assert {"miet", "kaution"} <= set(tokens)
    assert "kaution" in analyze("Kündigungsfrist der Mietkaution", "de")
    assert analyze("Kaution", "de") == ["kaution"]  # not a compound: unchanged


def test_cached_terms_are_a_fresh_list_each_time() -> None:
    analyzer = analyzer_for("de")
    first = analyzer.tokens("Die Kündigung des Mietvertrags")
    first.append("verändert")
    assert analyzer.tokens("Die Kündigung des Mietvertrags") == analyzer.terms(
        analyzer.raw_tokens("Die Kündigung des Mietvertrags"))
    assert "verändert" not in analyzer.tokens("Die Kündigung des Mietvertrags")


def test_long_texts_are_analysed_like_short_ones() -> None:
    analyzer = analyzer_for("de")
    long_text = "Die Kündigung des Mietvertrags " * (CACHED_TEXT_CHARS // 10)
    assert len(long_text) > CACHED_TEXT_CHARS
    assert analyzer.tokens(long_text) == analyzer.tokens("Die Kündigung des Mietvertrags") * (CACHED_TEXT_CHARS // 10)


def test_cached_terms_can_be_forgotten() -> None:
    analyzer = analyzer_for("de")
    analyzer.tokens("Die Kaution des Mieters")
    assert analyzer._cached_tokens.cache_info().currsize > 0
    forget_cached_terms()
    assert analyzer._cached_tokens.cache_info().currsize == 0
    assert analyzer.tokens("Die Kaution des Mieters") == analyzer.terms(analyzer.raw_tokens("Die Kaution des Mieters"))
