"""One LightGBM model text that scores the mean of several."""

from __future__ import annotations

import lightgbm
import numpy as np
import pytest

from service.rerank.tree_average import average_boosters, average_model_text

pytestmark = pytest.mark.unit


def _booster(seed: int, features: int = 3, rounds: int = 15) -> lightgbm.Booster:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((400, features))
    y = (x[:, 0] + 0.5 * rng.standard_normal(400) > 0).astype(float)
    params = {"objective": "lambdarank", "num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1, "seed": seed}
    return lightgbm.train(params, lightgbm.Dataset(x, label=y, group=[20] * 20), num_boost_round=rounds)


def test_the_average_model_scores_the_mean_of_its_members() -> None:
    boosters = [_booster(1), _booster(2, rounds=9), _booster(3)]
    merged = average_boosters(boosters)
    x = np.random.default_rng(9).standard_normal((100, 3))
    assert merged.num_trees() == 15 + 9 + 15
    expected = np.mean([b.predict(x) for b in boosters], axis=0)
    np.testing.assert_allclose(merged.predict(x), expected, rtol=0, atol=1e-12)
    again = lightgbm.Booster(model_str=merged.model_to_string())
    np.testing.assert_allclose(again.predict(x), expected, rtol=0, atol=1e-12)


def test_one_model_is_its_own_average_and_bad_inputs_are_refused() -> None:
    one = _booster(1)
    assert average_boosters([one]) is one
    text = one.model_to_string()
    assert average_model_text([text]) == text
    with pytest.raises(ValueError, match="at least one"):
        average_model_text([])
    with pytest.raises(ValueError, match="end of trees"):
        average_model_text([text, "tree\nversion=v4\n"])
    with pytest.raises(ValueError, match="header"):
        average_model_text([text, _booster(2, features=4).model_to_string()])
