"""Grid searches behind ``lexsearch calibrate``: routing thresholds and gamma, and the cut's parameters.

Pure functions over per-query measurements of a training split (see :class:`FitData`); nothing
here runs a search, so the search is exhaustive and exact over the grid.

Routing objective, with the reference "always run the last tier's strategy, without routing" (recall
``R*``, latency ``L*``: the probe and the strategy, but no complexity estimate):

1. among the configurations ``(gamma, t1 <= t2 <= t3)`` of the grid that keep at least ``recall_target``
   of ``R*`` (on a bootstrap lower confidence bound, see :func:`search_routing`) with a mean latency
   <= ``latency_budget`` x ``L*`` (on a bootstrap upper confidence bound), the fastest one whose
   Recall@10 is within one standard error of the highest (the one-standard-error rule of model
   selection; the error is that of the per-query recall difference). Recall differences smaller
   than that are noise of the calibration queries, and buying them with latency would put the
   choice on the edge of the budget;
2. if none meets both, rule 1 again with the bounds taken at a lower confidence, in steps of 0.1 down
   to ``min_confidence`` (rule ``both-relaxed``; the confidence reached is reported): a setting that
   meets both targets with 80% confidence serves the user better than one that gives up the budget;
3. if none meets both even then, the fastest one that keeps the recall floor at the requested
   confidence (the budget cannot be met: the shared probe alone may already cost more than it);
4. if none keeps the floor, the highest Recall@10.

Ties after that go to the configuration closest to the defaults. The rule used is reported.
Cut objective: the ``(sigma, min_k, max_k)`` whose gain in mean set F1 over the default cut (0.2,
1, 10) on the routed rankings has the highest lower bound at one standard error (of the per-query
gain); the default itself scores 0, so the cut moves only as far as the evidence carries. The grid
has about 90 points and a training split may have 100 questions, where the highest F1 is mostly the
luckiest point: on the Swiss folds the highest-F1 cut lost set F1 on the held-out fold every time
it was not the default (docs/BENCHMARKS.md, "The cut's calibration").

Example::

    choice = search_routing(data, recall_target=0.95, latency_budget=0.5)
    choice.thresholds, choice.recall, choice.latency_ms, choice.rule
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from service.config import RoutingNumbers
from service.errors import InvalidInput
from service.evaluation.metrics import set_scores
from service.retrieval.cut import cliff_cut

DEFAULT_GAMMAS: tuple[float, ...] = tuple(round(x * 0.1, 1) for x in range(11))
DEFAULT_GRID: tuple[float, ...] = tuple(round(x * 0.05, 2) for x in range(21))
DEFAULT_SIGMAS: tuple[float, ...] = (0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
DEFAULT_MIN_KS: tuple[int, ...] = (1, 2, 3)
DEFAULT_MAX_KS: tuple[int, ...] = (5, 10, 20)
_DEFAULTS = RoutingNumbers()


@dataclass
class FitData:
    """Per-query measurements on a training split, for ``n`` queries and ``T`` tiers.

    Attributes:
        c_intrinsic: shape ``(n,)``, intrinsic complexity per query.
        c_consistency: shape ``(n,)``, retrieval-consistency complexity per query.
        recall: shape ``(T, n)``, Recall@10 of each tier's strategy per query.
        latency_ms: shape ``(T, n)``, end-to-end latency if the query were routed to that tier
            (shared probe and complexity included).
        rankings: ``rankings[t][i]`` = the tier's ranked ``(doc_id, score)`` list for query ``i``.
        relevant: the relevant ids per query.
        reference_latency_ms: shape ``(n,)``, the latency of running the last tier's strategy directly,
            without routing (no complexity estimate); ``latency_ms[-1]`` when not given.
    """

    c_intrinsic: np.ndarray
    c_consistency: np.ndarray
    recall: np.ndarray
    latency_ms: np.ndarray
    rankings: list[list[list[tuple[str, float]]]] = field(default_factory=list)
    relevant: list[set[str]] = field(default_factory=list)
    reference_latency_ms: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.c_intrinsic)
        if len(self.c_consistency) != n or self.recall.shape[1:] != (n,) or self.latency_ms.shape != self.recall.shape:
            raise ValueError("FitData arrays disagree on the number of queries or tiers")
        if self.reference_latency_ms is None:
            self.reference_latency_ms = self.latency_ms[-1]
        elif self.reference_latency_ms.shape != (n,):
            raise ValueError("FitData reference latencies disagree on the number of queries")

    @classmethod
    def concat(cls, parts: Sequence[FitData]) -> FitData:
        """The measurements of several query sets (e.g. calibration folds) as one, in order.

        Raises:
            ValueError: for no parts, or parts with different numbers of tiers.
        """
        if not parts or len({p.tiers for p in parts}) != 1:
            raise ValueError("FitData.concat needs at least one part, all with the same tiers")
        tiers = parts[0].tiers
        return cls(c_intrinsic=np.concatenate([p.c_intrinsic for p in parts]),
                   c_consistency=np.concatenate([p.c_consistency for p in parts]),
                   recall=np.concatenate([p.recall for p in parts], axis=1),
                   latency_ms=np.concatenate([p.latency_ms for p in parts], axis=1),
                   rankings=[[r for p in parts for r in p.rankings[t]] for t in range(tiers)],
                   relevant=[r for p in parts for r in p.relevant],
                   reference_latency_ms=np.concatenate([np.asarray(p.reference_latency_ms) for p in parts]))

    @property
    def queries(self) -> int:
        return len(self.c_intrinsic)

    @property
    def tiers(self) -> int:
        return int(self.recall.shape[0])


@dataclass(frozen=True)
class RoutingChoice:
    """The best routing configuration found, with its fit-split scores."""

    gamma: float
    thresholds: tuple[float, float, float]
    recall: float
    latency_ms: float
    tier_shares: tuple[float, ...]
    reference_recall: float
    reference_latency_ms: float
    recall_target: float
    latency_budget: float
    recall_lower: float = math.nan
    """Lower confidence bound of the share of the reference's Recall@10 kept (see :func:`search_routing`)."""
    latency_upper: float = math.nan
    """Upper confidence bound of the mean latency as a share of the reference's."""
    confidence: float | None = None
    """The confidence of ``recall_lower`` and ``latency_upper`` (lower than the requested one for ``both-relaxed``)."""
    rule: str = ""
    """``both`` (recall floor and latency budget met), ``both-relaxed`` (met at a lower confidence),
    ``recall-floor`` (budget missed) or ``best-recall``."""
    requested_confidence: float | None = None

    @property
    def feasible(self) -> bool:
        """Whether both the recall floor and the latency budget are met (at ``confidence``)."""
        return self.rule in ("both", "both-relaxed")

    def to_dict(self) -> dict[str, Any]:
        return {"gamma": self.gamma, "thresholds": list(self.thresholds), "fit_recall@10": round(self.recall, 4),
                "fit_latency_ms": round(self.latency_ms, 2), "tier_shares": [round(s, 4) for s in self.tier_shares],
                "reference_recall@10": round(self.reference_recall, 4),
                "reference_latency_ms": round(self.reference_latency_ms, 2), "recall_target": self.recall_target,
                "kept_share_lower_bound": round(self.recall_lower, 4),
                "latency_share_upper_bound": round(self.latency_upper, 4), "confidence": self.confidence,
                "requested_confidence": self.requested_confidence,
                "latency_budget": self.latency_budget, "rule": self.rule, "feasible": self.feasible}


@dataclass(frozen=True)
class CutChoice:
    """The cut parameters chosen, with their fit-split set scores, those of a fixed top-10, and the
    grid point with the highest set F1 (``best``, ``best_f1``: what picking the highest F1 would have chosen)."""

    sigma: float
    min_k: int
    max_k: int
    precision: float
    recall: float
    f1: float
    fixed10_f1: float
    best: tuple[float, int, int]
    best_f1: float

    def to_dict(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "min_k": self.min_k, "max_k": self.max_k,
                "fit_set": {"precision": round(self.precision, 4), "recall": round(self.recall, 4),
                            "f1": round(self.f1, 4)},
                "fit_fixed10_f1": round(self.fixed10_f1, 4), "rule": "gain-lower-bound",
                "fit_best": {"sigma": self.best[0], "min_k": self.best[1], "max_k": self.best[2],
                             "f1": round(self.best_f1, 4)}}


@dataclass(frozen=True)
class CalibrationTargets:
    """What a routing calibration aims at, relative to always running the top tier (see
    :func:`search_routing`): the share of its Recall@10 to keep, the share of its mean latency
    allowed, and the confidence of the bootstrap bounds both must hold on (``None``: fit means),
    down to ``min_confidence`` before the budget is given up (``None``: only ``confidence``)."""

    recall_target: float = 0.95
    latency_budget: float = 0.5
    confidence: float | None = 0.9
    min_confidence: float | None = 0.7

    def problems(self) -> list[str]:
        out = []
        if not 0.0 < self.recall_target <= 1.0 or not 0.0 < self.latency_budget <= 1.0:
            out.append("the recall target and the latency budget must be in (0, 1]")
        if self.confidence is not None and not 0.0 < self.confidence < 1.0:
            out.append("the confidence must be in (0, 1)")
        if self.confidence is not None and self.min_confidence is not None \
                and not 0.0 < self.min_confidence <= self.confidence:
            out.append("the minimum confidence must be in (0, confidence]")
        return out

    def check(self) -> None:
        """Raise :class:`InvalidInput` naming the options when :meth:`problems` finds any."""
        if self.problems():
            raise InvalidInput("; ".join(self.problems())
                               + " (--recall-target, --latency-budget, --confidence, --min-confidence)")


def fit_calibration(data: FitData, targets: CalibrationTargets, *, calibrated_on: dict[str, Any]) -> dict[str, Any]:
    """Choose thresholds and gamma (:func:`search_routing`), then the cut on the rankings they route
    to (:func:`search_cut`), and return the stored calibration entry.

    ``calibrated_on`` says what the measurements came from (dataset, split, models ...); the number
    of queries and the date are added.

    Raises:
        ValueError: for no queries or invalid targets.
    """
    routing = search_routing(data, recall_target=targets.recall_target, latency_budget=targets.latency_budget,
                             confidence=targets.confidence, min_confidence=targets.min_confidence)
    cut = search_cut(routed_rankings(data, routing), data.relevant)
    return {
        "thresholds": list(routing.thresholds),
        "gamma": routing.gamma,
        "cut": {"sigma": cut.sigma, "min_k": cut.min_k, "max_k": cut.max_k},
        "fit": {"routing": routing.to_dict(), "cut": cut.to_dict()},
        "calibrated_on": {**calibrated_on, "queries": data.queries, "date": time.strftime("%Y-%m-%dT%H:%M:%S")},
        "method": "grid-v1",
    }


def assign_tiers(scores: np.ndarray, thresholds: Sequence[float]) -> np.ndarray:
    """Tier per query: how many thresholds are at or below its score (as :func:`router.tier_for`)."""
    return np.searchsorted(np.asarray(thresholds, dtype=np.float64), scores, side="right")


def search_routing(data: FitData, *, recall_target: float = 0.95, latency_budget: float = 0.5,
                   confidence: float | None = 0.9, min_confidence: float | None = None, resamples: int = 200,
                   seed: int = 0, gammas: Sequence[float] = DEFAULT_GAMMAS, grid: Sequence[float] = DEFAULT_GRID,
                   one_standard_error: bool = True) -> RoutingChoice:
    """The routing configuration chosen by the objective in the module docstring.

    The recall floor is checked on a lower confidence bound, not on the fit mean: the share of the
    reference's Recall@10 that a configuration keeps is recomputed on ``resamples`` bootstrap
    resamples of the fit queries, and its ``1 - confidence`` quantile must reach ``recall_target``.
    The latency budget is checked the same way, on the ``confidence`` quantile of the latency share.
    Picking the configuration that just touches a bound on the fit queries would otherwise miss
    it on new ones (the winner's curse of a grid search). ``confidence=None`` uses the fit means.
    When no setting meets both bounds, they are taken again at confidences 0.1 lower, down to
    ``min_confidence`` (``None``: no such step), before the budget is given up.
    ``one_standard_error=False`` takes the highest Recall@10 among the settings that meet both
    bounds instead of the fastest one within a standard error of it.

    Raises:
        ValueError: for an empty fit set, or a target, budget or confidence outside (0, 1].
    """
    if data.queries == 0:
        raise ValueError("no fit queries to calibrate on")
    if not 0.0 < latency_budget <= 1.0 or not 0.0 < recall_target <= 1.0:
        raise ValueError("recall_target and latency_budget must be in (0, 1]")
    if confidence is not None and not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    if confidence is not None and min_confidence is not None and not 0.0 < min_confidence <= confidence:
        raise ValueError("min_confidence must be in (0, confidence]")
    tiers, n = data.tiers, data.queries
    reference_recall = float(data.recall[-1].mean())
    reference_latency_ms = np.asarray(data.reference_latency_ms, dtype=np.float64)
    reference_latency = float(reference_latency_ms.mean())
    columns = np.arange(n)
    configs: list[tuple[float, tuple[float, float, float], np.ndarray]] = []
    for gamma in gammas:
        scores = gamma * data.c_intrinsic + (1.0 - gamma) * data.c_consistency
        for triple in itertools.combinations_with_replacement(sorted(grid), tiers - 1):
            tier = np.minimum(assign_tiers(scores, triple), tiers - 1)
            configs.append((gamma, (tuple(triple) + (1.0,) * 3)[:3], tier))  # type: ignore[arg-type]
    per_query = np.stack([data.recall[tier, columns] for _, _, tier in configs]).astype(np.float32)
    recall = per_query.mean(axis=1)
    per_query_latency = np.stack([data.latency_ms[tier, columns] for _, _, tier in configs])
    kept_shares = _ShareBounds(per_query, data.recall[-1], resamples, seed, lower=True)
    latency_shares = _ShareBounds(per_query_latency, reference_latency_ms, resamples, seed, lower=False)
    latency = per_query_latency.mean(axis=1)
    distances = [abs(gamma - _DEFAULTS.gamma) + sum(abs(a - b) for a, b in zip(padded, _DEFAULTS.thresholds,
                                                                               strict=True))
                 for gamma, padded, _ in configs]
    shares = [tuple(float(np.mean(tier == t)) for t in range(tiers)) for _, _, tier in configs]

    def candidates(level: float | None) -> list[tuple[RoutingChoice, float, int]]:
        """(choice, distance to the defaults, row in per_query) of every setting, bounds at ``level``."""
        kept_share, latency_share = kept_shares.at(level), latency_shares.at(level)
        return [(RoutingChoice(gamma, padded, float(recall[i]), float(latency[i]),
                               shares[i], reference_recall,
                               reference_latency, recall_target, latency_budget,
                               recall_lower=float(kept_share[i]), latency_upper=float(latency_share[i]),
                               confidence=level, requested_confidence=confidence), distances[i], i)
                for i, (gamma, padded, _) in enumerate(configs)]

    def best_recall(c: tuple[RoutingChoice, float, int]) -> tuple[float, float, float]:
        return -round(c[0].recall, 9), round(c[0].latency_ms, 6), c[1]

    def fastest(c: tuple[RoutingChoice, float, int]) -> tuple[float, float, float]:
        return round(c[0].latency_ms, 6), -round(c[0].recall, 9), c[1]

    floor = recall_target - 1e-9
    for level in _confidence_steps(confidence, min_confidence):
        choices = candidates(level)
        both = [c for c in choices if c[0].recall_lower >= floor and c[0].latency_upper <= latency_budget + 1e-9]
        if both:
            top = min(both, key=best_recall)
            if one_standard_error:
                close = _within_one_standard_error(per_query, [c[2] for c in both], top[2])
                top = min((c for c, ok in zip(both, close, strict=True) if ok), key=fastest)
            return replace(top[0], rule="both" if level == confidence else "both-relaxed")
    choices = candidates(confidence)
    kept = [c for c in choices if c[0].recall_lower >= floor]
    if kept:
        return replace(min(kept, key=fastest)[0], rule="recall-floor")
    return replace(min(choices, key=best_recall)[0], rule="best-recall")


def _confidence_steps(confidence: float | None, min_confidence: float | None) -> list[float | None]:
    """``confidence``, then 0.1 lower each step down to ``min_confidence`` (``[None]`` for fit means)."""
    if confidence is None or min_confidence is None:
        return [confidence]
    steps = [confidence]
    while round(steps[-1] - 0.1, 6) >= min_confidence - 1e-9:
        steps.append(round(steps[-1] - 0.1, 6))
    return steps


def _within_one_standard_error(per_query: np.ndarray, rows: Sequence[int], best: int) -> np.ndarray:
    """For each configuration in ``rows``: whether its mean per-query recall is at most one standard
    error of the paired difference below that of configuration ``best``."""
    mean, error = _paired_difference(per_query, rows, best)
    return mean >= -error - 1e-12


def _paired_difference(per_query: np.ndarray, rows: Sequence[int], reference: int) -> tuple[np.ndarray, np.ndarray]:
    """For each configuration in ``rows``: the mean of its per-query values minus those of configuration
    ``reference``, and the standard error of that mean (0 with a single query)."""
    diff = per_query[list(rows)].astype(np.float64) - per_query[reference].astype(np.float64)
    n = diff.shape[1]
    error = diff.std(axis=1, ddof=1) / math.sqrt(n) if n > 1 else np.zeros(len(rows))
    return diff.mean(axis=1), error


class _ShareBounds:
    """Per configuration: confidence bounds (lower or upper) of its mean over the reference's mean
    (1 when the reference is 0), from one set of bootstrap resamples shared by every confidence."""

    def __init__(self, per_query: np.ndarray, reference: np.ndarray, resamples: int, seed: int, *,
                 lower: bool) -> None:
        n = per_query.shape[1]
        total = float(reference.sum())
        self.means = per_query.sum(axis=1) / total if total > 0 else np.ones(per_query.shape[0])
        self.lower = lower
        rng = np.random.default_rng(seed)
        counts = np.zeros((resamples, n), dtype=np.float32)
        np.add.at(counts, (np.repeat(np.arange(resamples), n), rng.integers(0, n, size=resamples * n)), 1.0)
        boot = per_query.astype(np.float32) @ counts.T    # (configs, resamples): summed values per resample
        ref = reference.astype(np.float32) @ counts.T     # (resamples,)
        self.shares = np.where(ref > 0, boot / np.maximum(ref, 1e-12), 1.0)

    def at(self, confidence: float | None) -> np.ndarray:
        """The bound at ``confidence`` (the ratio of the fit means for ``None``)."""
        if confidence is None:
            return self.means
        return np.quantile(self.shares, 1.0 - confidence if self.lower else confidence, axis=1)


def routed_rankings(data: FitData, choice: RoutingChoice) -> list[list[tuple[str, float]]]:
    """Each query's ranking from the tier ``choice`` sends it to."""
    scores = choice.gamma * data.c_intrinsic + (1.0 - choice.gamma) * data.c_consistency
    tier = np.minimum(assign_tiers(scores, choice.thresholds), data.tiers - 1)
    return [data.rankings[int(t)][i] for i, t in enumerate(tier)]


def search_cut(rankings: Sequence[Sequence[tuple[str, float]]], relevant: Sequence[set[str]], *,
               sigmas: Sequence[float] = DEFAULT_SIGMAS, min_ks: Sequence[int] = DEFAULT_MIN_KS,
               max_ks: Sequence[int] = DEFAULT_MAX_KS) -> CutChoice:
    """The cut parameters for the fit rankings: the grid point (or the default cut) whose per-query
    set-F1 gain over the default cut has the highest mean minus one standard error (ties: the one
    closer to the default, see :func:`_distance_from_defaults`).

    Raises:
        ValueError: for mismatched inputs or no rankings.
    """
    if len(rankings) != len(relevant) or not rankings:
        raise ValueError("search_cut needs one relevant set per ranking, and at least one ranking")
    fixed = [set_scores([d for d, _ in r[:10]], rel)[2] for r, rel in zip(rankings, relevant, strict=True)]
    default = (_DEFAULTS.cut_sigma, _DEFAULTS.cut_min_k, _DEFAULTS.cut_max_k)
    grid = [default] + [(sigma, min_k, max_k) for sigma, min_k, max_k in itertools.product(sigmas, min_ks, max_ks)
                        if min_k <= max_k and (sigma, min_k, max_k) != default]
    scores = np.zeros((len(grid), len(rankings), 3))
    for g, (sigma, min_k, max_k) in enumerate(grid):
        for q, (ranking, rel) in enumerate(zip(rankings, relevant, strict=True)):
            cut = cliff_cut([s for _, s in ranking], sigma=sigma, min_k=min_k, max_k=max_k)
            scores[g, q] = set_scores([d for d, _ in ranking[: cut.returned]], rel)
    f1 = scores[:, :, 2]
    gain, error = _paired_difference(f1, range(len(grid)), 0)  # row 0 is the default cut
    bound = gain - error
    chosen = min(range(len(grid)), key=lambda g: (-round(float(bound[g]), 9), _distance_from_defaults(*grid[g])))
    precision, recall, mean_f1 = scores[chosen].mean(axis=0)
    sigma, min_k, max_k = grid[chosen]
    best = int(f1.mean(axis=1).argmax())
    return CutChoice(sigma, min_k, max_k, float(precision), float(recall), float(mean_f1), _mean(fixed),
                     best=grid[best], best_f1=float(f1[best].mean()))


def _distance_from_defaults(sigma: float, min_k: int, max_k: int) -> tuple[int, float]:
    """How far a cut is from the defaults: how many of its three numbers differ, then how far sigma is."""
    differ = (not math.isclose(sigma, _DEFAULTS.cut_sigma)) + (min_k != _DEFAULTS.cut_min_k) \
        + (max_k != _DEFAULTS.cut_max_k)
    return differ, abs(sigma - _DEFAULTS.cut_sigma)


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan
