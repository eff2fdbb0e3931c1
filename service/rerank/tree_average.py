"""One LightGBM model that scores the mean of several: the trees of all, each leaf divided by their number.

A boosted model's score is the sum of its trees' leaf values, so the mean of ``m`` models is the sum
of all their trees with every leaf value divided by ``m``. Written as one model, the average loads,
saves, compiles (:mod:`service.rerank.compiled`) and scores exactly like a single model: nothing
downstream knows it is an ensemble.

The text format is LightGBM's own (``Booster.model_to_string``): a header, ``Tree=<i>`` blocks, then
``end of trees`` and the feature importances and parameters. The header's ``tree_sizes`` line is
dropped (LightGBM then reads the trees one after the other); the trees are renumbered; the
``feature_infos`` line (the value ranges seen in training) and the tail are the first model's.

Example::

    merged = average_boosters([booster_a, booster_b])
    merged.predict(rows)      # == (booster_a.predict(rows) + booster_b.predict(rows)) / 2, to ~1e-15
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_TREE = re.compile(r"^Tree=\d+\n", re.MULTILINE)
_END = "end of trees"
_SCALED = ("leaf_value=", "internal_value=")
"""Lines whose numbers are outputs (scaled); weights and counts are statistics of the data (kept)."""


def average_model_text(texts: Sequence[str]) -> str:
    """The model text of the mean of the models ``texts`` (see the module docstring).

    Raises:
        ValueError: for no models, or models with more than one tree per iteration or other features.
    """
    if not texts:
        raise ValueError("average_model_text needs at least one model")
    if len(texts) == 1:
        return texts[0]
    headers, trees, tails = [], [], []
    for text in texts:
        body, end, tail = text.partition(_END)
        if not end:
            raise ValueError("not a LightGBM model text: no 'end of trees'")
        starts = [m.start() for m in _TREE.finditer(body)]
        if not starts:
            raise ValueError("not a LightGBM model text: no trees")
        headers.append(body[:starts[0]])
        trees.extend(body[a:b] for a, b in zip(starts, [*starts[1:], len(body)], strict=True))
        tails.append(tail)
    header = headers[0]
    for other in headers[1:]:
        if _model_kind(other) != _model_kind(header):
            raise ValueError("the models differ in their header (features, objective or classes)")
    if "num_tree_per_iteration=1\n" not in header:
        raise ValueError("only models with one tree per iteration can be averaged")
    scale = 1.0 / len(texts)
    merged = [_scaled_tree(tree, i, scale) for i, tree in enumerate(trees)]
    return _without(header, "tree_sizes=") + "".join(merged) + _END + tails[0]


def average_boosters(boosters: Sequence[Any]) -> Any:
    """One ``lightgbm.Booster`` whose scores are the mean of ``boosters``' (the first one if alone)."""
    import lightgbm

    if len(boosters) == 1:
        return boosters[0]
    return lightgbm.Booster(model_str=average_model_text([b.model_to_string() for b in boosters]))


def _without(header: str, key: str) -> str:
    return "".join(line for line in header.splitlines(keepends=True) if not line.startswith(key))


def _model_kind(header: str) -> str:
    """The header lines that must agree for trees to be summed (all but sizes and value ranges)."""
    return _without(_without(header, "tree_sizes="), "feature_infos=")


def _scaled_tree(tree: str, number: int, scale: float) -> str:
    lines = tree.splitlines(keepends=True)
    lines[0] = f"Tree={number}\n"
    for i, line in enumerate(lines):
        for key in _SCALED:
            if line.startswith(key):
                values = line[len(key):].split()
                lines[i] = key + " ".join(format(float(v) * scale, ".17g") for v in values) + "\n"
    return "".join(lines)
