"""The weights of BM25 and kNN in the hybrid fusion, and where each index gets them.

In order of precedence:

1. ``retrieval.bm25_weight`` / ``retrieval.knn_weight`` when the settings give them;
2. the weights fitted on labelled questions by ``lexsearch train`` (stored in the model folder);
3. the weights chosen for the index without labels (:func:`calibrate_fusion`, stored with the index);
4. 0.5 / 0.5.

Both fits score the same grid of weights with the pipeline's own fusion over the same kind of
lists (each retriever's top ``depth``) and keep the best; they differ in their questions and gold:
training uses its labelled questions, the label-free calibration uses known-item pseudo-queries
generated from the corpus (see :func:`calibrate_fusion`).

Example::

    weights = FusionWeights(0.7, 0.3, "index")
    weights.as_mapping()      # {'bm25': 0.7, 'knn': 0.3}
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from service.corpus.model import Hit
from service.evaluation.metrics import mean, mrr_at, recall_at
from service.retrieval import fusion

log = logging.getLogger(__name__)

FUSION_KEY = "fusion"
"""The index-metadata entry (and model-manifest entry) holding fusion weights."""
GRID = tuple(round(0.05 * i, 2) for i in range(21))
"""BM25 weights tried (the kNN weight is one minus it)."""


class RetrievalSettings(Protocol):
    """The fields of :class:`service.config.RetrievalSettings` that fusion reads."""

    fusion: str
    normalization: str
    rrf_k: int
    depth: int
    section_share: float
    bm25_weight: float | None
    knn_weight: float | None


@dataclass(frozen=True)
class FusionWeights:
    """The weights of the two retrievers' normalised scores, and where they came from.

    Attributes:
        bm25, knn: non-negative weights, not both 0 (they need not sum to 1).
        source: ``settings``, ``model`` (trained), ``index`` (label-free, stored with the index) or
            ``default``.
        fusion: the fusion they were fitted for (:func:`fusion_method`); '' = any.
    """

    bm25: float
    knn: float
    source: str = "default"
    fusion: str = ""

    def as_mapping(self) -> dict[str, float]:
        return {"bm25": self.bm25, "knn": self.knn}

    def to_dict(self) -> dict[str, Any]:
        return {"bm25": round(self.bm25, 4), "knn": round(self.knn, 4), "source": self.source,
                "fusion": self.fusion}

    def suits(self, settings: RetrievalSettings) -> bool:
        """Whether they were fitted for the fusion the settings use."""
        return not self.fusion or self.fusion == fusion_method(settings)

    @staticmethod
    def from_settings(settings: RetrievalSettings) -> FusionWeights | None:
        """The weights the settings fix, or ``None`` when they leave them to the index."""
        if settings.bm25_weight is None or settings.knn_weight is None:
            return None
        return FusionWeights(settings.bm25_weight, settings.knn_weight, "settings")

    @staticmethod
    def from_entry(entry: Any, source: str) -> FusionWeights | None:
        """Weights from a stored entry (:meth:`FusionFit.to_dict`); ``None`` when absent or malformed."""
        if not isinstance(entry, Mapping):
            return None
        try:
            bm25, knn = float(entry["bm25"]), float(entry["knn"])
        except (KeyError, TypeError, ValueError):
            log.warning("ignoring malformed fusion weights %r", entry)
            return None
        if bm25 < 0 or knn < 0 or bm25 + knn <= 0:
            log.warning("ignoring fusion weights %r: they must be >= 0 and not both 0", entry)
            return None
        return FusionWeights(bm25, knn, source, str(entry.get("fusion", "")))


DEFAULT_WEIGHTS = FusionWeights(0.5, 0.5, "default")


def with_trained(weights: FusionWeights, trained: FusionWeights | None, settings: RetrievalSettings
                 ) -> FusionWeights:
    """``trained`` (the weights of the model folder in use) in place of ``weights`` that rank below it
    (the index's label-free ones or the default), when it was fitted for the settings' fusion."""
    if trained is not None and weights.source in ("index", "default") and trained.suits(settings):
        return trained
    return weights


def fusion_method(settings: RetrievalSettings) -> str:
    """The fusion a weight was fitted for: ``linear-zscore``, ``linear-minmax`` or ``rrf-<k>``."""
    return f"rrf-{settings.rrf_k}" if settings.fusion == "rrf" else f"linear-{settings.normalization}"


def fuse(bm25: Sequence[Hit], knn: Sequence[Hit], weights: Mapping[str, float],
         settings: RetrievalSettings, sections: Mapping[str, str] | None = None, depth: int = 0) -> list[Hit]:
    """The hybrid ranking of two lists, by the settings' fusion (the hybrid pipeline's own rule).

    ``sections`` (candidate id -> heading section, :func:`service.corpus.views.section_key`) let the
    kNN side speak for the section of what it found (``retrieval.section_share``; linear fusion only).
    ``depth`` is the number of hits each retriever was asked for (0: unknown): a BM25 list that came
    back shorter holds every match, and the documents it lacks score 0 (z-score fusion,
    :func:`service.retrieval.fusion.zscore_within_depth`). The list is read against that depth, at most
    ``retrieval.depth``, so that asking for more hits than the configured depth does not rescale a list
    that holds every match (and reorder the first hits).
    """
    lists = {"bm25": bm25, "knn": knn}
    if settings.fusion == "rrf":
        return fusion.rrf(lists, k=settings.rrf_k, weights=weights)
    return fusion.linear(lists, weights=weights, normalization=settings.normalization, sections=sections,
                         shared={"knn": settings.section_share}, depths={"bm25": min(depth, settings.depth)})


@dataclass(frozen=True)
class FusionFit:
    """Fitted weights, what they were fitted on (``method``: ``trained`` or the label-free
    pseudo-queries) and the evidence (the scores that chose them)."""

    bm25: float
    knn: float
    questions: int
    method: str
    fusion: str
    evidence: dict[str, Any]
    created: str = ""

    def weights(self, source: str) -> FusionWeights:
        return FusionWeights(self.bm25, self.knn, source, self.fusion)

    def to_dict(self) -> dict[str, Any]:
        return {"bm25": round(self.bm25, 4), "knn": round(self.knn, 4), "questions": self.questions,
                "method": self.method, "fusion": self.fusion, "created": self.created, **self.evidence}


def fit_weights(lists: Sequence[tuple[Sequence[Hit], Sequence[Hit]]], golds: Sequence[set[str]],
                settings: RetrievalSettings, *, method: str, depth: int = 0) -> FusionFit:
    """The BM25 weight of :data:`GRID` (kNN: one minus it) whose fusion ranks the gold best
    (Recall@10 plus MRR@10), the one nearest 0.5 among equals; the evidence is each weight's scores.

    Args:
        lists: per question, the BM25 and the kNN hits (each retriever's top ``depth``).
        golds: per question, the relevant document ids.
        settings: the fusion to fit (linear with its normalisation, or RRF with its k).
        method: what the questions were, recorded with the fit.
        depth: the number of hits each retriever was asked for (see :func:`fuse`).

    Raises:
        ValueError: without any question that has gold.
    """
    rows = [(b, k, g) for (b, k), g in zip(lists, golds, strict=True) if g]
    if not rows:
        raise ValueError("no question with relevant documents to fit fusion weights on")
    curve: dict[float, tuple[float, float]] = {}
    for w in GRID:
        ranked = [[h.doc_id for h in fuse(b, k, {"bm25": w, "knn": 1.0 - w}, settings, depth=depth)]
                  for b, k, _ in rows]
        curve[w] = (mean(recall_at(r, g, 10) for r, (_, _, g) in zip(ranked, rows, strict=True)),
                    mean(mrr_at(r, g, 10) for r, (_, _, g) in zip(ranked, rows, strict=True)))
    best = max(GRID, key=lambda w: (round(sum(curve[w]), 6), -abs(w - 0.5)))
    evidence = {"curve": {f"{w:.2f}": [round(r, 4), round(m, 4)] for w, (r, m) in curve.items()}}
    return FusionFit(best, round(1.0 - best, 4), len(rows), method, fusion_method(settings), evidence)
