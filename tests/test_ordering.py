"""Process-independent orders: equal scores ranked by key, whatever the insertion order."""

from __future__ import annotations

from collections import Counter

import pytest

from service.ordering import best_first

pytestmark = pytest.mark.unit


def test_equal_scores_are_ranked_by_key_not_by_insertion() -> None:
    forwards = Counter({"b": 2, "a": 2, "c": 3, "d": 1})
    backwards = Counter(dict(reversed(list(forwards.items()))))
    assert best_first(forwards) == best_first(backwards) == [("c", 3), ("a", 2), ("b", 2), ("d", 1)]
    assert forwards.most_common(2) != backwards.most_common(2)  # what the helper is for


def test_the_first_n_of_pairs_or_a_mapping() -> None:
    pairs = [("x", 0.5), ("y", 0.9), ("w", 0.5)]
    assert best_first(pairs, 2) == [("y", 0.9), ("w", 0.5)]
    assert best_first(dict(pairs), 0) == []
    assert best_first({}, 3) == []
