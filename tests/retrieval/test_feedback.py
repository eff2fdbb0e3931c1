"""Vector pseudo-relevance feedback: where the moved query points."""

from __future__ import annotations

import numpy as np
import pytest

from service.retrieval.feedback import feedback_vector
from service.vectors import l2_normalize

pytestmark = pytest.mark.unit


def unit(vector: np.ndarray) -> np.ndarray:
    return l2_normalize(vector)[0]


def test_the_query_moves_toward_the_documents_centroid() -> None:
    q = np.array([1.0, 0.0, 0.0])
    docs = [np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.6, 0.8])]
    moved = feedback_vector(q, docs, 1.0)
    centroid = unit(np.array([0.0, 0.8, 0.4]))
    assert moved == pytest.approx(unit(q + centroid), abs=1e-6)
    assert np.linalg.norm(moved) == pytest.approx(1.0) and moved.dtype == np.float32
    assert feedback_vector(q, docs, 3.0) @ centroid > moved @ centroid  # a larger weight moves further


def test_no_documents_or_no_weight_leave_the_question_as_it_is() -> None:
    q = np.array([3.0, 4.0])
    assert feedback_vector(q, [], 0.5) == pytest.approx([0.6, 0.8])
    assert feedback_vector(q, [np.array([1.0, 0.0])], 0.0) == pytest.approx([0.6, 0.8])


def test_a_work_is_represented_by_its_version_nearest_the_question() -> None:
    q = np.array([1.0, 0.0, 0.0])
    versions = np.array([[0.0, 0.0, 1.0], [0.6, 0.8, 0.0]])  # the second is nearer the question
    moved = feedback_vector(q, [versions], 1.0)
    assert moved == pytest.approx(unit(q + versions[1]), abs=1e-6)
    assert moved[2] == 0.0
