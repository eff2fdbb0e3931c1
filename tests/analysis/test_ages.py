"""A person's age under 18 read as the word for a minor."""

from __future__ import annotations

import pytest

from service.analysis.ages import mentions_minor
from service.analysis.chain import analyzer_for
from service.analysis.crosslingual import bm25_query_weights

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("lang, text", [
    ("de", "Mein 15-jähriger Sohn hat ein Handy gekauft."),
    ("de", "Der 16-jährige N kauft ein E-Bike."),
    ("de", "eine jetzt 13jährige Tochter aus dieser Ehe"),
    ("de", "Unser Sohn ist jetzt 12 Jahre alt."),
    ("de", "meine Tochter (13) ist im Urlaub"),
    ("fr", "Ma fille de 15 ans a acheté un téléphone."),
    ("fr", "N, âgé de 16 ans, achète un vélo."),
    ("fr", "Elle a 16 ans."),
    ("it", "Mio figlio di 15 anni ha comprato un telefono."),
    ("it", "Lei ha 17 anni."),
    ("en", "My 15-year-old son bought a phone."),
    ("en", "I am 17 and want to sign a contract."),
    ("en", "My daughter is now 16 years old."),
])
def test_an_age_under_18_that_belongs_to_a_person_names_a_minor(lang: str, text: str) -> None:
    assert mentions_minor(text, lang)


@pytest.mark.parametrize("lang, text", [
    ("de", "Die 10-jährige Frist ist abgelaufen."),
    ("de", "Mein Auto ist 5 Jahre alt."),
    ("de", "Mein 19-jähriger Sohn hat ein Handy gekauft."),
    ("fr", "J'habite ici depuis 3 ans."),
    ("fr", "J'ai acheté cette voiture il y a 3 ans."),
    ("it", "Abito qui da 3 anni."),
    ("en", "The car is 5 years old."),
    ("en", "A 5-year-old car broke down."),
    ("en", "My son was 12 days late with the rent."),
    ("en", "I was 3 years in prison and he was 10 minutes late."),
    ("zh", "我儿子15岁买了手机"),
])
def test_other_numbers_and_adults_name_no_minor(lang: str, text: str) -> None:
    assert not mentions_minor(text, lang)


def test_the_question_holds_the_word_for_a_minor_and_its_rules_fire() -> None:
    german = analyzer_for("de")
    assert german.stem("minderjährig") in german.query_tokens("Mein 15-jähriger Sohn hat ein Handy gekauft.")
    assert german.stem("minderjährig") not in german.query_tokens("Mein Sohn hat ein Handy gekauft.")
    buys = german.query_weights("Mein 15-jähriger Sohn hat ohne unsere Erlaubnis ein Handy gekauft.")
    assert german.stem("handlungsunfähige") in buys and german.stem("zustimmung") in buys
    breaks = german.query_weights("Mein 15-jähriger Sohn hat eine Scheibe eingeschlagen. Hafte ich?")
    assert german.stem("handlungsunfähige") not in breaks


@pytest.mark.parametrize("lang, question, capacity", [
    ("fr", "Ma fille de 15 ans a acheté un téléphone cher sans notre accord. La vente est-elle valable ?",
     "discernement"),
    ("it", "Mio figlio di 15 anni ha comprato un telefono costoso senza il nostro permesso. È valido?",
     "discernimento"),
    ("it", "N, sedicenne, acquista una bicicletta elettrica all'insaputa dei genitori.", "discernimento"),
])
def test_a_minor_who_buys_raises_the_capacity_to_act_in_french_and_italian(lang: str, question: str,
                                                                           capacity: str) -> None:
    analyzer = analyzer_for(lang)
    assert analyzer.stem(capacity) in analyzer.query_weights(question)


def test_an_english_minor_who_buys_reaches_the_german_capacity_to_act() -> None:
    weights = bm25_query_weights("My 15-year-old son bought an expensive phone without our permission.",
                                 ["de", "fr", "it"])
    assert analyzer_for("de").stem("handlungsunfähige") in weights
