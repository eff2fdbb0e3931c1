"""Sense rules: an everyday word read in its everyday sense where the question's context says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.analysis.chain import analyzer_for
from service.analysis.crosslingual import bm25_query_weights
from service.analysis.senses import SenseRules
from service.analysis.synonyms import SynonymRules
from service.retrieval.long_query import read_long_query

pytestmark = pytest.mark.unit

DEPOSIT = "caution, cautions | bailleur, loyer, état des lieux => sûretés, garantie"


def _rules(*lines: str) -> SenseRules:
    return SenseRules.parse(lines, analyzer_for("fr").tokens)


def _weights(rules: SenseRules, text: str) -> dict[str, float]:
    tokens = analyzer_for("fr").tokens(text)
    return rules.reweigh(tokens, {t: 1.0 for t in tokens})


def test_the_word_gives_way_to_its_reading_when_the_context_is_there() -> None:
    weights = _weights(_rules(DEPOSIT, "# a comment", ""), "Mon bailleur garde mes cautions")
    assert "caution" not in weights
    assert weights["sûret"] == weights["garant"] == 1.0
    assert weights["bailleur"] == 1.0


def test_without_its_context_the_word_keeps_its_statute_sense() -> None:
    rules = _rules(DEPOSIT)
    text = "J'ai signé comme caution pour le prêt de mon frère"
    tokens = analyzer_for("fr").tokens(text)
    weights = {t: 1.0 for t in tokens}
    assert rules.reweigh(tokens, weights) is weights


def test_a_context_of_several_words_must_occur_as_a_sequence() -> None:
    rules = _rules(DEPOSIT)
    assert "caution" not in _weights(rules, "La caution a été retenue après l'état des lieux")
    assert "caution" in _weights(rules, "La caution a été retenue après l'état de sortie des lieux")


def test_the_reading_weighs_at_least_what_the_word_did_and_never_less_than_it_had() -> None:
    rules = _rules(DEPOSIT)
    tokens = analyzer_for("fr").tokens("bailleur caution")
    weights = rules.reweigh(tokens, {"bailleur": 1.0, "caution": 2.0, "garant": 3.0})
    assert weights == {"bailleur": 1.0, "sûret": 2.0, "garant": 3.0}


@pytest.mark.parametrize("line", ["caution => sûretés", "caution | bailleur", " | bailleur => sûretés",
                                  "caution | le => sûretés"])
def test_a_malformed_rule_names_its_line(line: str) -> None:
    with pytest.raises(ValueError, match="line 2"):
        _rules("# first line", line)


def test_a_missing_file_holds_no_rules_and_a_bad_file_is_named(tmp_path: Path) -> None:
    assert SenseRules.load(tmp_path / "xx.txt", analyzer_for("fr").tokens).rules == ()
    bad = tmp_path / "fr.txt"
    bad.write_text("caution => sûretés\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"fr\.txt: sense rule on line 1"):
        SenseRules.load(bad, analyzer_for("fr").tokens)


def test_the_shipped_sense_files_parse() -> None:
    for lang in ("de", "fr", "it"):
        assert analyzer_for(lang).senses.rules


def test_query_weights_read_the_tenants_deposit_in_french_and_italian() -> None:
    french = analyzer_for("fr").query_weights("Mon bailleur ne me rend pas ma caution.")
    assert "caution" not in french and french["sûret"] >= 1.0
    guarantor = analyzer_for("fr").query_weights("La caution doit-elle payer la dette de mon frère ?")
    assert guarantor["caution"] == 1.0
    italian = analyzer_for("it").query_weights("Il padrone di casa non mi restituisce la cauzione.")
    assert "cauzion" not in italian and italian["garanz"] >= 1.0
    worker = analyzer_for("it").query_weights("Il datore di lavoro non mi restituisce la cauzione.")
    assert worker["cauzion"] == 1.0


def test_long_questions_read_senses_too() -> None:
    facts = "Nous avons loué un appartement pendant six ans et l'avons rendu propre. " * 12
    long = read_long_query(facts + "Le bailleur peut-il garder la caution ?")
    weights = long.term_weights("fr")
    assert "caution" not in weights and weights["sûret"] > 0


def test_a_word_read_in_another_sense_fires_none_of_its_synonym_rules() -> None:
    analyze = analyzer_for("de").tokens
    senses = SenseRules.parse(["krank | gekündigt => unzeit"], analyze)
    synonyms = SynonymRules.parse(["krank => lohnfortzahlung", "chef => arbeitgeber"], analyze)
    dismissed = analyze("Der Chef hat gekündigt, ich bin krank")
    assert senses.read_terms(dismissed) == {"krank"}
    assert set(synonyms.expand(dismissed, read=senses.read_terms(dismissed))) == {"arbeitgeb", "arbeit", "geb"}
    ill = analyze("Der Chef zahlt nicht, ich bin krank")
    assert senses.read_terms(ill) == frozenset()
    assert "lohnfortzahl" in synonyms.expand(ill, read=senses.read_terms(ill))


@pytest.mark.parametrize("lang, dismissed, ill", [
    ("de", "Darf mir der Arbeitgeber kündigen, während ich krank bin?",
     "Ich bin seit zwei Wochen krank. Muss mein Arbeitgeber mir den Lohn weiterzahlen?"),
    ("fr", "Mon employeur peut-il me licencier pendant que je suis malade ?",
     "Je suis en congé maladie depuis deux semaines. Mon employeur doit-il continuer à payer mon salaire ?"),
    ("it", "Il datore di lavoro può licenziarmi mentre sono in malattia?",
     "Sono in malattia da due settimane. Il datore di lavoro deve continuare a pagarmi lo stipendio?"),
])
def test_illness_beside_a_dismissal_is_the_untimely_dismissal_not_the_wage(lang: str, dismissed: str,
                                                                         ill: str) -> None:
    untimely = {"de": "unzeit", "fr": "inopportun", "it": "inopportun"}[lang]
    wage = {"de": "lohnfortzahl", "fr": "salair", "it": "salari"}[lang]
    analyzer = analyzer_for(lang)
    read = analyzer.query_weights(dismissed)
    assert analyzer.stem(untimely) in read and analyzer.stem(wage) not in read
    kept = analyzer.query_weights(ill)
    assert analyzer.stem(untimely) not in kept and analyzer.stem(wage) in kept


def test_the_index_languages_rules_read_an_english_questions_translation() -> None:
    weights = bm25_query_weights("Can my employer dismiss me while I am on sick leave?", ["de", "fr", "it"])
    german = analyzer_for("de")
    assert german.stem("unzeit") in weights and german.stem("lohnfortzahlung") not in weights
    assert german.stem("fristlos") not in weights  # "dismissed" is any dismissal, not the summary one
    wages = bm25_query_weights("I have been ill for two weeks. Does my employer have to keep paying my wages?",
                               ["de", "fr", "it"])
    assert german.stem("unzeit") not in wages and german.stem("krankheit") in wages


def test_a_keeping_rule_adds_its_reading_and_leaves_the_word_and_its_synonyms() -> None:
    analyze = analyzer_for("de").tokens
    senses = SenseRules.parse(["testament | nichts bekommen, mindestens += pflichtteil"], analyze)
    tokens = analyze("Im Testament steht, wir sollen nichts bekommen")
    assert senses.read_terms(tokens) == frozenset()
    weights = senses.reweigh(tokens, {t: 1.0 for t in tokens})
    assert weights["testament"] == 1.0 and weights["pflichtteil"] == 1.0
    form = analyze("Muss ein Testament von Hand geschrieben sein?")
    assert "pflichtteil" not in senses.reweigh(form, {t: 1.0 for t in form})


def test_the_compulsory_share_is_read_where_a_will_leaves_someone_nothing() -> None:
    german = analyzer_for("de")
    share = german.query_weights("Im Testament hat meine Mutter alles ihrem Mann vermacht, wir sollen nichts bekommen.")
    assert german.stem("pflichtteil") in share and german.stem("testament") in share
    assert german.stem("pflichtteil") not in german.query_weights("Muss ein Testament von Hand geschrieben sein?")
    english = bm25_query_weights("In her will my mother left everything to her husband and we get nothing.",
                                 ["de", "fr", "it"])
    assert german.stem("pflichtteil") in english


def test_no_will_is_the_intestate_succession_not_the_wills_articles() -> None:
    german = analyzer_for("de")
    none = german.query_weights("Mein Vater ist gestorben und hat kein Testament gemacht. Wer erbt jetzt?")
    assert german.stem("testament") not in none and german.stem("verfügung") not in none
    assert german.stem("nachkommen") in none
    will = german.query_weights("Mein Vater hat ein Testament gemacht. Ist es gültig?")
    assert german.stem("testament") in will and german.stem("nachkommen") not in will
