"""The weights of BM25 and kNN in the hybrid fusion, and where each index gets them.

In order of precedence:

1. ``retrieval.bm25_weight`` / ``retrieval.knn_weight`` when the settings give them;
2. the weights fitted on labelled questions by ``lexsearch train`` (stored in the model folder);
3. the weights chosen for the index without labels when it was built (stored with the index);
4. 0.5 / 0.5.

Example::

    weights = FusionWeights(0.7, 0.3, "index")
    weights.as_mapping()      # {'bm25': 0.7, 'knn': 0.3}
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from service.config import RetrievalSettings

log = logging.getLogger(__name__)

FUSION_KEY = "fusion"
"""The index-metadata entry (and model-manifest entry) holding fusion weights."""


@dataclass(frozen=True)
class FusionWeights:
    """The weights of the two retrievers' normalised scores, and where they came from.

    Attributes:
        bm25, knn: non-negative weights (they need not sum to 1).
        source: ``settings``, ``model`` (trained), ``index`` (label-free, stored with the index) or
            ``default``.
    """

    bm25: float
    knn: float
    source: str = "default"

    def as_mapping(self) -> dict[str, float]:
        return {"bm25": self.bm25, "knn": self.knn}

    def to_dict(self) -> dict[str, Any]:
        return {"bm25": round(self.bm25, 4), "knn": round(self.knn, 4), "source": self.source}

    @staticmethod
    def from_settings(settings: RetrievalSettings) -> FusionWeights | None:
        """The weights the settings fix, or ``None`` when they leave them to the index."""
        if settings.bm25_weight is None or settings.knn_weight is None:
            return None
        return FusionWeights(settings.bm25_weight, settings.knn_weight, "settings")

    @staticmethod
    def read(entry: Any, source: str) -> FusionWeights | None:
        """Weights from a stored ``{"bm25": .., "knn": ..}`` entry; ``None`` when absent or malformed."""
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
        return FusionWeights(bm25, knn, source)


DEFAULT_WEIGHTS = FusionWeights(0.5, 0.5, "default")
