"""From a question and its side-by-side probe to a complexity score, a tier and a strategy.

:class:`RoutingParams` resolves the numbers (settings, replaced by the calibration stored with the
model folder or the index), :class:`ComplexityEstimator` computes the score with its components, and
:class:`Router` maps the score to a tier (thresholds 0.25 / 0.45 / 0.7 by default) and the tier to
a strategy: a pipeline name plus its ``SearchRequest.options``.

Example::

    params = RoutingParams.resolve(settings.routing, backend.metadata("stard"))
    report = ComplexityEstimator().assess(question, "zh", probe.bm25, probe.knn, params)
    router = Router.from_settings(settings.routing, llm_enabled=settings.llm.enabled)
    strategy = router.strategy(router.tier(report.score, params))
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from service.config import RoutingNumbers, RoutingSettings
from service.corpus.model import Hit
from service.plugins import resolve_reranker
from service.routing import complexity as cx

if TYPE_CHECKING:
    import numpy as np

    from service.llm.budget import CallBudget
    from service.llm.client import LlmClient

log = logging.getLogger(__name__)

TIER_LABELS: tuple[str, ...] = ("hybrid", "hybrid+rerank", "agentic", "agentic-full")
"""A short human name per tier, for traces and pictures."""

CALIBRATION_KEY = "routing"
"""The index-metadata entry written by ``lexsearch calibrate`` (thresholds, gamma, cut)."""
QSI_KEY = "qsi"
"""The index-metadata entry with the label-free QSI calibration (``a``, ``b``)."""


def tier_for(score: float, thresholds: Sequence[float]) -> int:
    """The tier of a complexity score: the number of thresholds at or below it.

    A score equal to a threshold belongs to the higher tier.

    Example::

        tier_for(0.25, (0.25, 0.45, 0.7))   # 1
        tier_for(0.69, (0.25, 0.45, 0.7))   # 2
    """
    return bisect.bisect_right(list(thresholds), score)


@dataclass(frozen=True)
class RoutingParams(RoutingNumbers):
    """Every number routing uses for one index, and where each group came from.

    ``sources`` maps ``"qsi"`` to ``"calibrated"`` (the index's label-free QSI calibration) or
    ``"paper-default"``, and ``"thresholds"`` and ``"cut"`` to ``"model"`` (the calibration stored
    with the model folder by ``lexsearch train``), ``"index"`` (stored with the index by
    ``lexsearch calibrate``) or ``"settings"``.
    """

    sources: dict[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def resolve(cls, settings: RoutingSettings, metadata: Mapping[str, Any] | None = None,
                model_calibration: Mapping[str, Any] | None = None) -> RoutingParams:
        """The settings' numbers, replaced by stored calibrations where allowed.

        QSI's ``a``/``b`` always come from the index when it has them (they describe its score
        scale, not a preference). Thresholds, gamma and the cut come, while ``use_calibration``,
        from the model folder's calibration (``model_calibration``), else from the index's
        (metadata entry ``routing``). A malformed stored entry is ignored with a warning, never fatal.
        """
        params = cls(**_as_values(settings),
                     sources={"qsi": "paper-default", "thresholds": "settings", "cut": "settings"})
        metadata = metadata or {}
        stored = metadata.get(QSI_KEY) or {}
        if stored:
            try:
                qsi = replace(params, qsi_a=float(stored["a"]), qsi_b=float(stored["b"]))
                if not qsi.problems():
                    params = replace(qsi, sources={**params.sources, "qsi": "calibrated"})
                else:
                    log.warning("ignoring qsi calibration %r: %s", stored, "; ".join(qsi.problems()))
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("ignoring malformed qsi calibration %r: %s", stored, exc)
        if not settings.use_calibration:
            return params
        for source, calibration in (("model", model_calibration), ("index", metadata.get(CALIBRATION_KEY))):
            if calibration:
                try:
                    return _apply_calibration(params, calibration, source)
                except (KeyError, TypeError, ValueError) as exc:
                    log.warning("ignoring malformed routing calibration of the %s: %s", source, exc)
        return params

    def to_dict(self) -> dict[str, Any]:
        return {**_as_values(self), "thresholds": list(self.thresholds), "qsi_a": round(self.qsi_a, 6),
                "qsi_b": round(self.qsi_b, 6), "sources": dict(self.sources)}


def _as_values(numbers: RoutingNumbers) -> dict[str, Any]:
    return {f.name: getattr(numbers, f.name) for f in fields(RoutingNumbers)}


def _apply_calibration(params: RoutingParams, stored: Mapping[str, Any], source: str) -> RoutingParams:
    """``params`` with a stored calibration's thresholds, gamma and cut (each group optional).

    Raises:
        ValueError: (or KeyError, TypeError) when the entry is malformed or its numbers are invalid.
    """
    sources = dict(params.sources)
    if "thresholds" in stored:
        params = replace(params, thresholds=tuple(float(x) for x in stored["thresholds"]),
                         gamma=float(stored.get("gamma", params.gamma)))
        sources["thresholds"] = source
    cut = stored.get("cut")
    if cut:
        max_k = int(cut["max_k"])
        params = replace(params, cut_sigma=float(cut["sigma"]), cut_min_k=int(cut["min_k"]), cut_max_k=max_k,
                         cut_depth=max(params.cut_depth, max_k))
        sources["cut"] = source
    problems = params.problems()
    if problems:
        raise ValueError("; ".join(problems))
    return replace(params, sources=sources)


@dataclass
class ComplexityReport:
    """The complexity score of one question and every component that made it.

    ``None`` marks a part that was switched off (ablations) or could not be computed.
    """

    score: float
    c_intrinsic: float | None = None
    c_base: float | None = None
    c_5d: float | None = None
    dimensions: cx.Dimensions | None = None
    dimensions_source: str = ""
    features: cx.QuestionFeatures | None = None
    c_consistency: float | None = None
    bm25_top1: float | None = None
    qsi: float | None = None
    rdi: float | None = None
    llm: dict[str, Any] | None = None
    llm_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(float(x), 4)

        return {
            "score": r(self.score),
            "intrinsic": None if self.c_intrinsic is None else {
                "value": r(self.c_intrinsic), "c_base": r(self.c_base), "c_5d": r(self.c_5d),
                "dimensions": self.dimensions.to_dict() if self.dimensions else None,
                "dimensions_source": self.dimensions_source,
                "features": self.features.to_dict() if self.features else None,
                **({"llm": self.llm} if self.llm else {}),
            },
            "consistency": None if self.c_consistency is None else {
                "value": r(self.c_consistency), "bm25_top1": r(self.bm25_top1), "qsi": r(self.qsi),
                "rdi": r(self.rdi),
            },
        }


LawCounter = Callable[[str, str, "np.ndarray | None"], "int | None"]
"""``(question, lang, query_vector) -> number of laws the classifier predicts``, or ``None`` without a model."""


class ComplexityEstimator:
    """Computes a :class:`ComplexityReport` from a question and its BM25/kNN probe.

    Args:
        llm: when given (an LLM is configured), the ``complexity`` prompt rates the five
            dimensions; on any failure the offline counts are used and the reason is traced.
        law_count: the law classifier's count of predicted laws (knowledge integration); without
            it the dimension uses explicit citations and the number of questions only.

    Example::

        report = ComplexityEstimator().assess("Kaution nicht zurück?", "de", bm25_hits, knn_hits,
                                              RoutingParams())
        report.score, report.to_dict()["consistency"]["rdi"]
    """

    def __init__(self, *, llm: LlmClient | None = None, law_count: LawCounter | None = None) -> None:
        self.llm = llm
        self.law_count = law_count

    def assess(self, question: str, lang: str, bm25_hits: Sequence[Hit], knn_hits: Sequence[Hit],
               params: RoutingParams, *, use_intrinsic: bool = True, use_consistency: bool = True,
               budget: CallBudget | None = None, vector: np.ndarray | None = None) -> ComplexityReport:
        """Score one question; at least one of ``use_intrinsic`` / ``use_consistency`` must be true.

        ``vector`` is the probe's query embedding, passed on to the law classifier.

        Raises:
            ValueError: when both parts are switched off.
        """
        if not (use_intrinsic or use_consistency):
            raise ValueError("routing needs at least one of intrinsic complexity and retrieval consistency")
        report = ComplexityReport(score=0.0)
        if use_intrinsic:
            self._intrinsic(question, lang, params, report, budget, vector)
        if use_consistency:
            top1 = bm25_hits[0].scores.get("bm25", bm25_hits[0].score) if bm25_hits else None
            report.bm25_top1 = top1
            report.qsi = cx.qsi(top1, a=params.qsi_a, b=params.qsi_b)
            report.rdi = cx.rdi([h.doc_id for h in bm25_hits], [h.doc_id for h in knn_hits], k=params.rdi_k,
                                jaccard_weight=params.rdi_jaccard_weight)
            report.c_consistency = cx.consistency(report.qsi, report.rdi, p=params.gate_p, q=params.gate_q)
        report.score = cx.fuse(report.c_intrinsic, report.c_consistency, gamma=params.gamma)
        return report

    def _intrinsic(self, question: str, lang: str, params: RoutingParams, report: ComplexityReport,
                   budget: CallBudget | None, vector: np.ndarray | None) -> None:
        laws = None
        if self.law_count is not None:
            try:
                laws = self.law_count(question, lang, vector)
            except Exception as exc:  # the classifier is optional evidence; never fail the search on it
                log.warning("law prediction for complexity failed: %s", exc)
        features = cx.question_features(question, lang, laws=laws)
        dims, source = cx.dimensions(features), "offline"
        if self.llm is not None and budget is not None:
            llm_dims, trace = self._llm_dimensions(question, budget)
            report.llm, report.llm_calls = trace, int(trace.get("calls", 0))
            if llm_dims is not None:
                dims, source = llm_dims, "llm"
        report.features, report.dimensions, report.dimensions_source = features, dims, source
        report.c_base = cx.base_complexity(features)
        report.c_5d = dims.mean()
        report.c_intrinsic = cx.intrinsic(report.c_base, report.c_5d, base_weight=params.base_weight)

    def _llm_dimensions(self, question: str, budget: CallBudget) -> tuple[cx.Dimensions | None, dict[str, Any]]:
        from service.llm.schemas import OUTPUT_SCHEMAS

        assert self.llm is not None
        outcome = self.llm.complete_json("complexity", {"question": question}, OUTPUT_SCHEMAS["complexity"],
                                         budget=budget)
        trace = outcome.to_trace()
        if not outcome.ok:
            return None, trace
        try:
            return cx.Dimensions.from_dict(outcome.value), trace
        except (TypeError, ValueError) as exc:  # the schema guarantees the shape; stay safe anyway
            trace["fallback_reason"] = f"rejected: {exc}"
            return None, trace


@dataclass(frozen=True)
class Strategy:
    """What a tier runs: a registered pipeline and the ``SearchRequest.options`` it gets."""

    tier: int
    pipeline: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return TIER_LABELS[self.tier] if 0 <= self.tier < len(TIER_LABELS) else f"tier{self.tier}"

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "label": self.label, "pipeline": self.pipeline, "options": dict(self.options)}


class Router:
    """Maps a complexity score to a tier and a tier to its :class:`Strategy`.

    Args:
        strategies: one strategy per tier, tier 0 first.
        llm_enabled: resolves ``reranker=auto`` to ``llm`` (an LLM is configured) or ``learned``.

    Example::

        router = Router.from_settings(RoutingSettings(), llm_enabled=False)
        router.strategy(3).options["reranker"]   # 'learned'
    """

    def __init__(self, strategies: Sequence[Strategy], *, llm_enabled: bool = False) -> None:
        if not strategies:
            raise ValueError("a router needs at least one strategy")
        self.strategies = tuple(strategies)
        self.llm_enabled = llm_enabled

    @classmethod
    def from_settings(cls, settings: RoutingSettings, *, llm_enabled: bool) -> Router:
        return cls([Strategy(i, tier.pipeline, tier.option_dict()) for i, tier in enumerate(settings.tiers)],
                   llm_enabled=llm_enabled)

    def tier(self, score: float, params: RoutingParams) -> int:
        """The tier for ``score`` under ``params.thresholds``, capped at the last strategy."""
        return min(tier_for(score, params.thresholds), len(self.strategies) - 1)

    def strategy(self, tier: int) -> Strategy:
        """The strategy of ``tier`` with ``reranker=auto`` resolved.

        Raises:
            ValueError: for a tier outside ``0 .. len(strategies) - 1``.
        """
        if not 0 <= tier < len(self.strategies):
            raise ValueError(f"tier must be between 0 and {len(self.strategies) - 1}, got {tier}")
        chosen = self.strategies[tier]
        if chosen.options.get("reranker") == "auto":
            options = {**chosen.options, "reranker": resolve_reranker("auto", llm_enabled=self.llm_enabled)}
            return Strategy(chosen.tier, chosen.pipeline, options)
        return chosen
