"""How many laws a question touches, according to the trained law classifier (when one is loaded).

Knowledge integration counts the laws a question needs. With a trained model folder
(``lexsearch train``; ``settings.index.model_dir``) the agents' law classifier predicts a
probability per law; the count is the number of top laws needed to cover ``MASS`` of the
probability, capped at ``MAX_LAWS``. Without a model there is no count and the dimension uses
explicit citations and the number of questions only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

MASS = 0.8
MAX_LAWS = 5


def laws_covering(probabilities: Sequence[float], *, mass: float = MASS, cap: int = MAX_LAWS) -> int:
    """The smallest number of top laws whose probabilities sum to at least ``mass`` (at most ``cap``).

    Example::

        laws_covering([0.5, 0.2, 0.2, 0.1])   # 3 (0.5 + 0.2 + 0.2 >= 0.8)
    """
    if not probabilities:
        return 0
    total = 0.0
    for count, p in enumerate(sorted(probabilities, reverse=True), start=1):
        total += max(0.0, p)
        if total >= mass or count >= cap:
            return count
    return min(cap, len(probabilities))




class ClassifierLawCounter:
    """``(question, lang, vector) -> count`` over the law classifier of the trained models.

    For a corpus with a single law (GerLayQA: only the BGB) the classifier's sections (blocks of
    consecutive articles) are counted instead, so the count still says how spread the question is.
    It answers ``None`` when the folder has no law classifier.

    Example::

        count = ClassifierLawCounter(runtime.models)
        count("公司辞退我不给补偿，还拖欠工资怎么办？", "zh", None)   # e.g. 2

    Args:
        models: gives the trained models (a ``service.models.TrainedModels``, or ``None``), the
            runtime's, so the folder is loaded once for every pipeline.
    """

    def __init__(self, models: Callable[[], Any]) -> None:
        self.models = models

    def __call__(self, question: str, lang: str, vector: np.ndarray | None) -> int | None:
        """The count for one question.

        Raises:
            ConfigError: when the model folder holds no readable models.
        """
        models = self.models()
        classifier = models.law_classifier if models is not None else None
        if classifier is None:
            return None
        usable = vector if vector is not None and classifier.vector_dim == len(vector) else None
        if len(set(classifier.laws)) <= 1:
            probabilities = classifier.section_probabilities(models.terms(question, lang), usable)
            return laws_covering([float(p) for p in probabilities])
        return laws_covering([p for _, p in models.law_probabilities(question, lang, usable)])
