"""Citation-set choices: fixed K, the score cliff, the predicted count, and their parsing."""

from __future__ import annotations

import pytest

from service.corpus.model import Hit
from service.errors import InvalidInput
from service.retrieval.sets import CliffSet, CountSet, FixedSet, parse_set_choices

pytestmark = pytest.mark.unit

HITS = [Hit(doc_id=str(i), score=s) for i, s in enumerate([9.0, 8.8, 4.0, 3.9, 3.8, 1.0, 0.9, 0.5])]


class _Counter:
    fixed_k = 2

    def set_size(self, text: str, scores: list[float] = ()) -> int:
        assert len(scores) == len(HITS)  # the count may be cut at the ranking's score cliff
        return 1 if "richtig" in text else 12


def test_each_choice_sizes_the_set() -> None:
    assert FixedSet(3, "top3").size("q", HITS) == 3 and FixedSet(10, "top10").size("q", HITS) == 8
    assert CliffSet().size("q", HITS) == 2
    assert CountSet(_Counter()).size("Ist das richtig?", HITS) == 1
    assert CountSet(_Counter()).size("Prüfen Sie", HITS) == 8  # never more than the ranking holds


def test_parse_names_and_leaves_out_what_needs_a_model() -> None:
    choices, skipped = parse_set_choices("top1, top10,cliff,fixed,count")
    assert [c.name for c in choices] == ["top1", "top10", "cliff"] and skipped == ["fixed", "count"]
    choices, skipped = parse_set_choices("fixed,count", counter=_Counter())
    assert [c.name for c in choices] == ["fixed", "count"] and not skipped
    assert choices[0].size("q", HITS) == 2
    assert parse_set_choices("") == ([], [])


@pytest.mark.parametrize("spec, message", [("topx", "top<K>"), ("top0", "between 1"), ("best", "unknown set")])
def test_bad_choices_are_clear_errors(spec: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_set_choices(spec)
