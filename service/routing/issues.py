"""Routing's count of the issues a question raises, by the same segmentation as the agentic search.

Only the last tier searches each issue on its own (the decomposition agent, issue quotas, each
issue answered alone), while the complexity score is calibrated on single questions. A question
that raises two or more issues therefore goes to the last tier whatever its score
(``routing.escalate_issues``).

Example::

    count = IssueCounter(runtime.models)
    count("公司辞退我不给补偿。另外我下班路上被车撞了，对方不赔医药费，怎么办？", "zh")   # 2 with a STARD folder
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from service.agents.issues import segment_issues, topic_of
from service.analysis.language import detect_language


class IssueCounter:
    """``(question, lang) -> count`` of its issues (:func:`~service.agents.issues.segment_issues`).

    With a trained model folder, the law classifier is the topic model and the folder's language
    stands in for a missing ``lang``; without one, questions are cut at their questions only.

    Args:
        models: gives the trained models (a ``service.models.TrainedModels``, or ``None``), the
            runtime's, so the folder is loaded once for every pipeline.
    """

    def __init__(self, models: Callable[[], Any]) -> None:
        self.models = models

    def __call__(self, question: str, lang: str) -> int:
        models = self.models()
        language = lang or (models.language if models is not None else "") or detect_language(question)
        topic = topic_of(models.law_classifier, language) if models is not None else None
        return len(segment_issues(question, language, topic))
