"""Vector arithmetic of the foundation layer."""

from __future__ import annotations

import numpy as np
import pytest

from service.vectors import l2_normalize

pytestmark = pytest.mark.unit


def test_l2_normalize_leaves_zero_rows() -> None:
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])
