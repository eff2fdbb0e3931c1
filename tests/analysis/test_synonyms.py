"""Query-side legal synonyms."""

from __future__ import annotations

import pytest

from service.analysis.chain import SYNONYM_WEIGHT, analyzer_for
from service.analysis.synonyms import SynonymRules

pytestmark = pytest.mark.unit


def _rules(*lines: str) -> SynonymRules:
    return SynonymRules.parse(lines, analyzer_for("en").tokens)


def test_one_way_rules_add_the_legal_words() -> None:
    rules = _rules("deposit, rent deposit => security", "# a comment", "")
    assert rules.expand(["landlord", "deposit"]) == {"secur": 1}
    assert rules.expand(["landlord"]) == {}


def test_equivalence_groups_expand_both_ways_and_phrases_must_be_contiguous() -> None:
    rules = _rules("boss, line manager")
    assert rules.expand(["boss"]) == {"line": 1, "manag": 1}
    assert rules.expand(["line", "manag"]) == {"boss": 1}
    assert rules.expand(["manag", "line"]) == {}


def test_targets_of_one_rule_count_once_even_when_they_share_a_stem() -> None:
    assert _rules("fired => termination, terminate").expand(["fire"]) == {"termin": 1}


def test_query_weights_keep_the_users_words_at_full_weight() -> None:
    weights = analyzer_for("de").query_weights("Der Vermieter gibt die Kaution nicht zurück")
    assert weights["kaution"] == 1.0
    assert weights["mietzinsdepot"] == SYNONYM_WEIGHT
    chinese = analyzer_for("zh")
    assert chinese.query_weights("房东不退押金") == {t: 1.0 for t in chinese.tokens("房东不退押金")}
