"""Orders that do not depend on the process: ties broken by the key itself.

Python randomises the hash of strings per process (``PYTHONHASHSEED``), so the iteration order of a
``set`` of strings, and with it the insertion order of anything counted from one, changes from run
to run. ``Counter.most_common`` and ``sorted(..., key=score)`` keep that order among equal scores,
which made trained models and a few rankings differ between two runs on the same data. Rank by
these helpers instead wherever ties can occur.

Example::

    best_first({"b": 1.0, "a": 1.0, "c": 2.0}, 2)   # [("c", 2.0), ("a", 1.0)]
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=str)
V = TypeVar("V", int, float)


def best_first(scores: Mapping[K, V] | Iterable[tuple[K, V]], n: int | None = None) -> list[tuple[K, V]]:
    """``(key, score)`` pairs by descending score, equal scores by ascending key; the first ``n``."""
    items = scores.items() if isinstance(scores, Mapping) else scores
    if n is None:
        return sorted(items, key=_descending)
    return heapq.nsmallest(n, items, key=_descending)


def _descending(item: tuple[K, V]) -> tuple[float, K]:
    return -item[1], item[0]
