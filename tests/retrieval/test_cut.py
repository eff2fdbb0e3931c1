"""Score-cliff truncation: hand-computed cuts, bounds, ties, flat scores, single and empty rankings."""

from __future__ import annotations

import math

import pytest

from service.retrieval.cut import cliff_cut, fixed_cut, normalized_scores

pytestmark = pytest.mark.unit


def test_normalisation_is_monotone_min_max() -> None:
    assert normalized_scores([10.0, 6.0, 7.0, 2.0]) == [1.0, 0.5, 0.5, 0.0]  # 7 after 6 is capped at 6
    assert normalized_scores([-1.0, -2.0, -3.0]) == [1.0, 0.5, 0.0]
    assert normalized_scores([3.0, float("nan"), 1.0]) == [1.0, 0.0, 0.0]  # no score ranks below every score
    assert normalized_scores([3.0, 1.0, float("-inf")]) == [1.0, 0.0, 0.0]
    assert normalized_scores([2.0, 2.0]) == [1.0, 1.0]
    assert normalized_scores([]) == []


def test_cut_at_the_first_cliff_hand_computed() -> None:
    # normalised: [1, 0.95, 0.4, 0.375, 0] -> drops 0.05, 0.579, ...: cut after 2
    scores = [9.0, 8.6, 4.2, 4.0, 1.0]
    result = cliff_cut(scores, sigma=0.2)
    assert (result.returned, result.reason) == (2, "cliff")
    assert result.drop == pytest.approx((0.95 - 0.4) / 0.95)


def test_first_cliff_wins_over_a_later_bigger_one() -> None:
    # normalised [1, 0.7, 0.69, 0.1, 0]: the 30% drop after rank 1 comes first
    assert cliff_cut([1.0, 0.7, 0.69, 0.1, 0.0], sigma=0.2).returned == 1


def test_sigma_is_strict() -> None:
    # normalised [1, 0.8, 0.64, 0]: drops of exactly 20% are not cliffs; the last one is
    result = cliff_cut([1.0, 0.8, 0.64, 0.0], sigma=0.2)
    assert (result.returned, result.reason) == (3, "cliff")


def test_min_k_skips_early_cliffs() -> None:
    scores = [10.0, 5.0, 4.9, 4.8, 1.0, 0.0]
    assert cliff_cut(scores, sigma=0.2, min_k=1).returned == 1
    result = cliff_cut(scores, sigma=0.2, min_k=2)
    assert result.returned == 4 and result.reason == "cliff"


def test_max_k_bounds_the_set() -> None:
    scores = [10.0 - 0.1 * i for i in range(30)] + [0.0]  # no cliff in the first 30 ranks
    result = cliff_cut(scores, sigma=0.2, max_k=10)
    assert (result.returned, result.reason) == (10, "max_k")
    assert result.drop is not None and result.drop < 0.2


def test_a_ranking_shorter_than_max_k_without_cliff_is_returned_whole() -> None:
    # normalised [1, 0.5, 0]: with min_k = 3 no cut position is left, so the whole list is the set
    result = cliff_cut([3.0, 2.9, 2.8], sigma=0.2, min_k=3, max_k=10)
    assert (result.returned, result.reason) == (3, "end")
    # with min_k = 2 the drop from 0.5 to 0 is a cliff
    assert cliff_cut([3.0, 2.9, 2.8], sigma=0.2, min_k=2, max_k=10).returned == 2


def test_ties_are_never_split_by_a_cliff() -> None:
    scores = [5.0, 5.0, 5.0, 1.0, 0.0]
    result = cliff_cut(scores, sigma=0.2)
    assert (result.returned, result.reason) == (3, "cliff")
    assert not result.ties_at_cut


def test_ties_at_the_max_k_bound_are_reported() -> None:
    result = cliff_cut([5.0, 4.0, 4.0, 4.0, 0.0], sigma=0.9, max_k=2)
    assert (result.returned, result.reason, result.ties_at_cut) == (2, "max_k", True)


def test_flat_scores() -> None:
    result = cliff_cut([0.7] * 25, sigma=0.2, max_k=10)
    assert (result.returned, result.reason, result.drop) == (10, "flat", None)
    assert result.ties_at_cut
    assert cliff_cut([0.7] * 4, max_k=10).returned == 4


def test_single_and_empty_rankings() -> None:
    assert (cliff_cut([3.2]).returned, cliff_cut([3.2]).reason) == (1, "single")
    empty = cliff_cut([])
    assert (empty.returned, empty.reason, empty.drop) == (0, "empty", None)


def test_non_finite_scores_do_not_break_the_cut() -> None:
    result = cliff_cut([2.0, float("-inf"), math.nan], sigma=0.2)
    assert result.returned == 1


def test_report_is_json_ready() -> None:
    report = cliff_cut([9.0, 8.6, 4.2, 4.0, 1.0]).to_dict()
    assert report == {"returned": 2, "reason": "cliff", "drop": pytest.approx(0.5789, abs=1e-4), "sigma": 0.2,
                      "min_k": 1, "max_k": 10, "ties_at_cut": False}


def test_fixed_cut() -> None:
    assert fixed_cut(50, 10).returned == 10 and fixed_cut(50, 10).reason == "disabled"
    assert fixed_cut(3, 10).returned == 3
    with pytest.raises(ValueError):
        fixed_cut(3, 0)


@pytest.mark.parametrize("kwargs", [{"sigma": 0.0}, {"sigma": 1.0}, {"min_k": 0}, {"min_k": 5, "max_k": 3}])
def test_bad_parameters_raise(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        cliff_cut([1.0, 0.5], **kwargs)
