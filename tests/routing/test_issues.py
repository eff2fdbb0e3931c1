"""Routing's issue count: the agentic segmentation, with or without a trained topic model."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from service.routing.issues import IssueCounter

pytestmark = pytest.mark.unit

TWO = "公司辞退我能要经济补偿吗？房东不退押金怎么办？"


def test_without_a_model_folder_questions_are_counted_by_what_they_ask() -> None:
    count = IssueCounter(lambda: None)
    assert count(TWO, "zh") == 2 and count(TWO, "") == 2  # the language is detected
    assert count("公司辞退我不给补偿怎么办？", "zh") == 1
    assert count("Mein Vermieter behält die Kaution. Darf er das?", "de") == 1


def test_the_model_folder_gives_the_language_and_the_topic() -> None:
    class Classifier:
        """Term evidence for two sections: dismissal words and tenancy words."""

        def term_evidence(self, terms: list[str]) -> np.ndarray:
            text = "".join(terms)
            return np.array([text.count("辞退") + text.count("补偿"), text.count("押金") + text.count("房东")], float)

    folder = SimpleNamespace(language="zh", law_classifier=Classifier())
    count = IssueCounter(lambda: folder)
    told = "公司把我辞退了也不给经济补偿。另外房东不退押金还不接电话，我该怎么办？"
    assert count(told, "") == 2  # statements on two topics (folder language zh)
    assert IssueCounter(lambda: None)(told, "zh") == 1  # no topic model: one question, one issue
