"""The resampled interval of a ratio of two means (service/evaluation/bootstrap.py)."""

from __future__ import annotations

import numpy as np
import pytest

from service.evaluation.bootstrap import ratio_interval

pytestmark = pytest.mark.unit


def test_the_ratio_is_that_of_the_means_and_its_interval_holds_it() -> None:
    rng = np.random.default_rng(1)
    top10 = rng.uniform(0.0, 0.2, 120)
    best = top10 * 1.4 + rng.normal(0.0, 0.05, 120).clip(-0.05, 0.2)
    interval = ratio_interval(best, top10, draws=2000)
    assert interval.ratio == pytest.approx(best.mean() / top10.mean())
    assert interval.low < interval.ratio < interval.high
    assert interval.groups == 120 and len(interval.draws) == 2000
    assert ratio_interval(best, top10, draws=2000) == interval, "the same seed gives the same interval"
    assert 0.0 < interval.share_at_least(interval.median) <= 1.0
    assert interval.to_dict(bar=1.5)["share_at_least_1.5"] == round(interval.share_at_least(1.5), 4)


def test_a_group_is_drawn_whole() -> None:
    # Within each group the two scores sum to a ratio of exactly 2, so every draw of whole groups
    # gives 2; drawn question by question, the ratio would vary.
    num, den = [0.3, 0.1, 0.0, 0.4], [0.1, 0.1, 0.1, 0.1]
    whole = ratio_interval(num, den, groups=["a", "a", "b", "b"], draws=500)
    assert whole.groups == 2 and whole.low == whole.high == pytest.approx(2.0)
    single = ratio_interval(num, den, draws=500)
    assert single.low < 2.0 < single.high


@pytest.mark.parametrize(("num", "den", "groups", "message"), [
    ([], [], None, "same number"),
    ([0.1], [0.1, 0.2], None, "same number"),
    ([0.1, 0.2], [0.0, 0.0], None, "undefined"),
    ([0.1, 0.2], [0.1, 0.2], ["a"], "one group per question"),
])
def test_bad_input_is_refused_with_a_message(num, den, groups, message) -> None:
    with pytest.raises(ValueError, match=message):
        ratio_interval(num, den, groups=groups)
