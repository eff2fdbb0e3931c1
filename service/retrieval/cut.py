"""Score-cliff truncation: turn a ranking into a returned set by cutting where the scores fall off.

The ranking's scores are first made comparable across pipelines (BM25, RRF, z-scores and reranker
scores live on different scales): they are forced non-increasing with a running minimum and then
min-max normalised over the whole ranking, so the best hit scores 1 and the last one 0. The cut is
after the first rank ``i`` (``min_k <= i < max_k``) whose next score drops by more than ``sigma``
relative to it::

    n_i = (s_i - s_last) / (s_1 - s_last)
    drop_i = (n_i - n_{i+1}) / n_i   > sigma   -> return the first i hits

With no such drop the set holds ``min(max_k, len)`` hits. Normalising over a deep ranking (the
routed pipeline scores 50 hits) keeps the reference stable: the floor is a score far below the
answer set, so a drop near the top is measured against the top score, not against its neighbour.

Example::

    result = cliff_cut([9.1, 8.7, 4.2, 4.0, 1.0], sigma=0.2, min_k=1, max_k=10)
    result.returned, result.reason   # 2, 'cliff'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_TOLERANCE = 1e-9
"""A drop must exceed sigma by more than rounding noise (0.16 / 0.8 is not quite 0.2 in floating point)."""


@dataclass(frozen=True)
class CutResult:
    """Where a ranking was cut and why.

    Attributes:
        returned: how many hits form the answer set (0 only for an empty ranking).
        reason: ``cliff`` (a drop above ``sigma``), ``max_k`` (no cliff before the upper bound),
            ``end`` (no cliff and the ranking is shorter than ``max_k``), ``flat`` (all scores equal),
            ``single`` (one hit), ``empty`` (no hits), ``disabled`` (a fixed cut was asked for), or
            ``issues`` (the routed pipeline kept one hit per issue of a question of several issues).
        drop: the relative drop after the last returned hit (``None`` when there is no next hit
            or the scores are flat).
        sigma, min_k, max_k: the parameters used.
        ties_at_cut: the hit after the cut has the same score as the last returned one (only
            possible at the ``max_k`` bound, which is hard; a cliff never splits a tie).
    """

    returned: int
    reason: str
    drop: float | None
    sigma: float
    min_k: int
    max_k: int
    ties_at_cut: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"returned": self.returned, "reason": self.reason,
                "drop": None if self.drop is None else round(self.drop, 4),
                "sigma": self.sigma, "min_k": self.min_k, "max_k": self.max_k, "ties_at_cut": self.ties_at_cut}


def normalized_scores(scores: Sequence[float]) -> list[float]:
    """The ranking's scores made non-increasing (running minimum) and min-max scaled to [0, 1].

    A non-finite score (no score at all) counts as below every finite one: it and everything
    after it map to 0. The finite part is scaled on its own; a flat one maps to all ones.

    Example::

        normalized_scores([10.0, 6.0, 7.0, 2.0])   # [1.0, 0.5, 0.5, 0.0]
    """
    monotone: list[float] = []
    for s in scores:
        value = s if s is not None and math.isfinite(s) else -math.inf
        monotone.append(value if not monotone else min(monotone[-1], value))
    finite = [s for s in monotone if s > -math.inf]
    if not finite:
        return [1.0] * len(scores)
    top, floor = finite[0], finite[-1]
    if math.isclose(top, floor, rel_tol=1e-12, abs_tol=1e-12):
        return [1.0 if s > -math.inf else 0.0 for s in monotone]
    return [(s - floor) / (top - floor) if s > -math.inf else 0.0 for s in monotone]


def cliff_cut(scores: Sequence[float], *, sigma: float = 0.2, min_k: int = 1, max_k: int = 10) -> CutResult:
    """Cut a ranking at its first score cliff (see the module docstring for the formula).

    Args:
        scores: the ranking's scores, best first (the whole ranking, not only the top ``max_k``).
        sigma: the relative drop that counts as a cliff (0 < sigma < 1).
        min_k: never return fewer hits than this (when the ranking has them).
        max_k: never return more hits than this.

    Returns:
        A :class:`CutResult`; ``returned`` is in ``[min(min_k, len), min(max_k, len)]``.

    Raises:
        ValueError: for ``sigma`` outside (0, 1) or bounds with ``1 <= min_k <= max_k`` violated.

    Example::

        cliff_cut([1.0, 1.0, 1.0]).reason   # 'flat'
    """
    if not 0.0 < sigma < 1.0:
        raise ValueError(f"sigma must be between 0 and 1, got {sigma}")
    if not 1 <= min_k <= max_k:
        raise ValueError(f"cut bounds need 1 <= min_k <= max_k, got min_k={min_k}, max_k={max_k}")
    n = len(scores)
    if n == 0:
        return CutResult(0, "empty", None, sigma, min_k, max_k)
    if n == 1:
        return CutResult(1, "single", None, sigma, min_k, max_k)
    norm = normalized_scores(scores)
    upper = min(max_k, n)
    if norm[0] == norm[-1]:
        return CutResult(upper, "flat", None, sigma, min_k, max_k, ties_at_cut=upper < n)
    for i in range(min(min_k, n), upper):  # candidate: keep the first i hits, drop hit i+1 onwards
        before, after = norm[i - 1], norm[i]
        drop = 0.0 if before <= 0 else (before - after) / before
        if drop > sigma + _TOLERANCE:
            return CutResult(i, "cliff", drop, sigma, min_k, max_k)
    if upper == n:
        return CutResult(n, "end", None, sigma, min_k, max_k)
    before, after = norm[upper - 1], norm[upper]
    drop = 0.0 if before <= 0 else (before - after) / before
    return CutResult(upper, "max_k", drop, sigma, min_k, max_k, ties_at_cut=before == after)


def fixed_cut(length: int, k: int) -> CutResult:
    """The answer set of a fixed top-``k`` (used by the "without dynamic cut" ablation)."""
    if k < 1:
        raise ValueError("fixed cut k must be >= 1")
    return CutResult(min(k, length), "disabled", None, 0.0, k, k)
