"""The marker word lists: every language's lists load from markers.toml, and malformed tables are refused."""

from __future__ import annotations

import pytest

from service.routing.markers import _DOMAIN_NAMES, _ROLES, _marker_set, markers_for

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("lang", ["zh", "de", "en", "fr", "it"])
def test_every_language_fills_every_role_and_domain(lang: str) -> None:
    markers = markers_for(lang)
    assert all(getattr(markers, role) for role in _ROLES)
    assert list(markers.domains) == list(_DOMAIN_NAMES) and all(markers.domains.values())
    assert markers is not markers_for("en") or lang == "en"


def test_lists_keep_phrases_and_the_chinese_negation_rules() -> None:
    assert "es sei denn" in markers_for("de").conditional
    assert "如果" in markers_for("zh").conditional
    assert markers_for("zh").negation_prefixes == ("不", "没", "未")
    assert "不动产" in markers_for("zh").not_negations
    assert markers_for("en").negation_prefixes == () and not markers_for("en").not_negations


def test_a_table_with_a_missing_role_or_an_unknown_domain_is_refused() -> None:
    lists = {role: ["x"] for role in _ROLES if role != "party"}
    lists["domains"] = {**{name: ["y"] for name in _DOMAIN_NAMES}, "sports": ["z"]}
    with pytest.raises(ValueError, match=r"markers.toml \[xx\]: no party, unknown domain sports"):
        _marker_set("xx", lists)
