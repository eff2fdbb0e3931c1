"""Law names: every name of an act in an index's languages, and law filters widened to them."""

from __future__ import annotations

import pytest

from service.corpus.law_names import LawNames, known_law_names
from service.corpus.model import Filters

pytestmark = pytest.mark.unit


def _article(law_de: str, article: str, fr: str, it: str) -> list[tuple[str, str, str, str]]:
    """The (law, language, work id, id) rows of one article in three languages, German first."""
    work = f"{law_de}-{article}-de"
    return [(law_de, "de", work, work), (fr, "fr", work, f"{law_de}-{article}-fr"),
            (it, "it", work, f"{law_de}-{article}-it")]


ROWS = [
    *_article("OR", "1", "CO", "CO"),
    *_article("OR", "2", "CO", "CO"),
    *_article("ZGB", "1", "CC", "CC"),
    # Two acts sharing their Italian name, as FMG and PRG share "LTC" in the Swiss statutes.
    *_article("FMG", "1", "LTC", "LTC"),
    *_article("PRG", "1", "LRTV", "LTC"),
    # An article without its German version: its work starts with the French one.
    ("CO", "fr", "OR-3-fr", "OR-3-fr"), ("CO", "it", "OR-3-fr", "OR-3-it"),
]


def test_each_name_of_an_act_stands_for_all_of_them() -> None:
    names = LawNames.from_rows(ROWS)
    assert names.multilingual
    assert names.names_of("OR") == ("CO", "OR")
    assert names.names_of("CO") == ("CO", "OR")  # the French-first article does not make CO an act of its own
    assert names.names_of("CC") == ("CC", "ZGB")
    assert names.names_of("unknown") == ("unknown",)


def test_a_name_two_acts_share_never_lets_the_other_act_in() -> None:
    names = LawNames.from_rows(ROWS)
    assert names.names_of("FMG") == ("FMG",)  # not LTC: the Italian LTC is also PRG's
    assert names.names_of("PRG") == ("LRTV", "PRG")
    assert names.names_of("LTC") == ("FMG", "LRTV", "LTC", "PRG")  # the name itself means both acts


def test_widen_changes_only_the_law_values() -> None:
    names = LawNames.from_rows(ROWS)
    widened = names.widen(Filters.of(law=["OR", "CC"], lang="fr", date_from="2020-01-01"))
    assert widened == Filters.of(law=["CC", "CO", "OR", "ZGB"], lang="fr", date_from="2020-01-01")
    assert names.widen(Filters.of(kind="statute")) == Filters.of(kind="statute")
    assert names.widen(None) is None


def test_a_corpus_in_one_language_keeps_its_filters() -> None:
    names = LawNames.from_rows([("OR", "de", "a", "a"), ("ZGB", "de", "b", "b")])
    assert not names.multilingual
    filters = Filters.of(law="OR")
    assert names.widen(filters) is filters


def test_a_law_value_in_another_case_is_the_one_name_it_equals() -> None:
    known = {"OR", "ZGB", "CO", "Or", "SchKG"}
    assert known_law_names(["zgb", "schkg", "OR", "co"], known) == ("ZGB", "SchKG", "OR", "CO")
    assert known_law_names(["or"], known) == ("or",)  # two names, OR and Or: left as asked
    assert known_law_names(["nope", "Or"], known) == ("nope", "Or")
    assert known_law_names([], known) == ()
