"""Metrics on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from service.evaluation.metrics import mean, mrr_at, ndcg_at, percentile, recall_at, set_scores
from service.evaluation.runs import read_run, write_run

pytestmark = pytest.mark.unit


def test_recall() -> None:
    assert recall_at(["a", "x", "b"], {"a", "b", "c", "d"}, 2) == 0.25
    assert recall_at(["a", "x", "b"], {"a", "b", "c", "d"}, 3) == 0.5
    assert recall_at(["a"], set(), 10) == 0.0


def test_mrr() -> None:
    assert mrr_at(["x", "y", "a"], {"a"}, 10) == pytest.approx(1 / 3)
    assert mrr_at(["x", "y", "a"], {"a"}, 2) == 0.0


def test_ndcg_binary() -> None:
    assert ndcg_at(["a", "b"], {"a", "b"}, 10) == pytest.approx(1.0)
    expected = (1 / math.log2(3)) / (1 / math.log2(2) + 1 / math.log2(3))
    assert ndcg_at(["x", "a"], {"a", "b"}, 10) == pytest.approx(expected)


def test_set_scores() -> None:
    assert set_scores(["a", "b", "x", "y"], {"a", "b", "c"}) == pytest.approx((0.5, 2 / 3, 4 / 7))
    assert set_scores([], {"a"}) == (0.0, 0.0, 0.0)


def test_percentile_and_mean() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10], 95) == 10
    assert percentile([], 50) == 0.0
    assert mean([]) == 0.0


def test_run_files_round_trip(tmp_path) -> None:
    run = {"q1": [("d1", 2.5), ("d2", 1.0)], "q2": [("d3", 0.5)]}
    write_run(tmp_path / "x.run", run, tag="hybrid")
    assert read_run(tmp_path / "x.run") == run
