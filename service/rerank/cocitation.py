"""Co-citation: articles that the answers to training questions cite together.

A question about dismissal is answered with the article on dismissal *and* the one on severance
pay; a question's gold set is such a group. Counting, over the training questions, how often two
articles share a gold set gives each article its companions, with the smoothed conditional
share ``c(a, b) / (c(a) + SMOOTHING)``: of the questions answered with ``a``, the share also
answered with ``b``.

The agentic pipeline adds the companions of its best first-pass candidates (:func:`anchors_of`) to
the pool (:func:`expand_pool`), and the reranker sees, per candidate, how strongly the anchors call
for it.

Example::

    cocite = CoCitation.fit([{"a", "b"}, {"a", "b", "c"}, {"a"}])
    cocite.companions("a")         # [('b', 0.5), ('c', 0.25)]
    cocite.support(["a"])          # {'b': 0.5, 'c': 0.25}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from service.corpus.model import Hit, Provenance

SMOOTHING = 1.0
"""Added to an article's gold count, so that one shared question is weak evidence."""
MAX_COMPANIONS = 20
"""Companions kept per article, strongest first."""


class CoCitation:
    """Companions of each article, from the gold sets of training questions.

    Args:
        companions: ``{doc_id: [(companion_id, weight), ...]}``, strongest first.
    """

    def __init__(self, companions: Mapping[str, Sequence[tuple[str, float]]]) -> None:
        self._companions = {d: [(c, float(w)) for c, w in pairs] for d, pairs in companions.items()}

    @classmethod
    def fit(cls, golds: Iterable[Iterable[str]], *, smoothing: float = SMOOTHING,
            keep: int = MAX_COMPANIONS) -> CoCitation:
        """Count shared gold sets; articles never cited with another get no entry."""
        counts: Counter[str] = Counter()
        pairs: dict[str, Counter[str]] = {}
        for gold in golds:
            ids = sorted(set(gold))
            counts.update(ids)
            if len(ids) < 2:
                continue
            for a in ids:
                row = pairs.setdefault(a, Counter())
                row.update(b for b in ids if b != a)
        companions = {}
        for a, row in pairs.items():
            scored = sorted(((b, n / (counts[a] + smoothing)) for b, n in row.items()), key=lambda x: (-x[1], x[0]))
            companions[a] = scored[:keep]
        return cls(companions)

    def __len__(self) -> int:
        return len(self._companions)

    def companions(self, doc_id: str) -> list[tuple[str, float]]:
        """The article's companions with their weights, strongest first (empty when it has none)."""
        return list(self._companions.get(doc_id, ()))

    def support(self, anchors: Sequence[str], weights: Sequence[float] | None = None) -> dict[str, float]:
        """How strongly the ``anchors`` call for each other article: the (weighted) sum of their
        companion weights. Anchors themselves are included when another anchor calls for them."""
        out: dict[str, float] = {}
        for i, anchor in enumerate(anchors):
            scale = 1.0 if weights is None else float(weights[i])
            for doc_id, w in self._companions.get(anchor, ()):
                out[doc_id] = out.get(doc_id, 0.0) + scale * w
        return out

    def to_json(self) -> dict[str, Any]:
        return {"companions": {d: [[c, round(w, 6)] for c, w in pairs] for d, pairs in self._companions.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CoCitation:
        return cls({d: [(str(c), float(w)) for c, w in pairs] for d, pairs in data["companions"].items()})


ANCHOR_RANKS: dict[str, int] = {"hybrid": 5, "memory": 5, "prefilter": 3}
"""Pool lists whose best candidates are anchors, and how deep: the first retrieval, the memory of
similar questions and the law-prefiltered pass; each issue's lists (``issue<j>…``) up to rank 3."""
ISSUE_ANCHOR_RANK = 3
EXPANSION = 10
"""Companions of the anchors that join the pool, strongest first."""
MIN_SUPPORT = 0.1


def anchors_of(pool: Mapping[str, Hit]) -> list[str]:
    """The pool's anchors: the best candidates of its first-pass lists (see :data:`ANCHOR_RANKS`)."""
    out = []
    for hit in pool.values():
        for key, rank in hit.ranks.items():
            limit = ANCHOR_RANKS.get(key, ISSUE_ANCHOR_RANK if key.startswith("issue") else 0)
            if rank <= limit:
                out.append(hit.doc_id)
                break
    return sorted(out)


def expand_pool(pool: dict[str, Hit], cocitation: CoCitation, *, allowed: Callable[[Sequence[str]], list[str]],
                limit: int = EXPANSION, min_support: float = MIN_SUPPORT) -> dict[str, list[float]]:
    """Add the anchors' strongest companions to ``pool`` (rank under ``"cocitation"``) and return,
    for every article the anchors call for, ``[summed, strongest]`` companion weight (the reranker's
    co-citation columns). ``allowed`` filters the ids that may join (the request's filters)."""
    anchors = anchors_of(pool)
    support = cocitation.support(anchors)
    strongest: dict[str, float] = {}
    for anchor in anchors:
        for doc_id, w in cocitation.companions(anchor):
            strongest[doc_id] = max(strongest.get(doc_id, 0.0), w)
    fresh = sorted((d for d, s in support.items() if s >= min_support and d not in pool),
                   key=lambda d: (-support[d], d))
    for rank, doc_id in enumerate(allowed(fresh[:limit]), start=1):
        hit = pool[doc_id] = Hit(doc_id=doc_id, score=0.0)
        hit.ranks["cocitation"] = rank
        hit.provenance.append(Provenance("cocitation", 0, rank, ""))
    return {d: [round(s, 6), round(strongest[d], 6)] for d, s in support.items()}
