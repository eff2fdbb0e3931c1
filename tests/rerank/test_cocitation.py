"""CoCitation: companions from shared gold sets, support from anchors, and the stored form."""

from __future__ import annotations

import pytest

from service.rerank.cocitation import CoCitation

pytestmark = pytest.mark.unit

GOLDS = [{"a", "b"}, {"a", "b", "c"}, {"a"}, {"d"}]


def test_companions_are_smoothed_conditional_shares() -> None:
    cocite = CoCitation.fit(GOLDS)
    # "a" is gold for 3 questions; "b" shares 2 of them, "c" one: 2 / (3 + 1), 1 / (3 + 1).
    assert cocite.companions("a") == [("b", 0.5), ("c", 0.25)]
    assert cocite.companions("c") == [("a", 0.5), ("b", 0.5)]
    assert cocite.companions("d") == [] and cocite.companions("unknown") == []
    assert len(cocite) == 3


def test_support_sums_the_anchors_companions() -> None:
    cocite = CoCitation.fit(GOLDS)
    assert cocite.support(["a", "c"]) == pytest.approx({"b": 1.0, "c": 0.25, "a": 0.5})
    assert cocite.support(["a"], [2.0]) == pytest.approx({"b": 1.0, "c": 0.5})
    assert cocite.support([]) == {}


def test_keep_limits_companions_and_json_round_trips() -> None:
    cocite = CoCitation.fit([{"x", "y", "z"}, {"x", "y"}], keep=1)
    assert cocite.companions("x") == [("y", pytest.approx(2 / 3))]
    again = CoCitation.from_json(cocite.to_json())
    assert again.companions("x") == [("y", pytest.approx(2 / 3, abs=1e-6))]
