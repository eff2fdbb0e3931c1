"""The candidate pool of an agentic search: who joins it, its heuristic order, and the texts of its members.

The pool maps document ids to hits. Every source that adds candidates (the hybrid fusion, the
memory of training questions, the law-prefiltered pass, each agent's rewrites) leaves its
provenance on the hit, so the trace says how every result was found. The heuristic ("light")
order ranks the pool before any trained reranker: the z-scored hybrid score, plus agent finds, memory
votes, the prefilter rank and the priors; a search without a trained reranker answers in it, with the
articles the question cites ahead (:func:`answer_order`).

Example::

    pool = seed_pool(hybrid.fuse(probe))
    add_ranked(pool, memory_ids, "memory")
    pool_order(state, resources.graph)[:10]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

from service.backends.base import SearchBackend
from service.corpus.graph import CorpusGraph
from service.corpus.model import Hit, LegalDoc, Provenance
from service.pipelines.agentic_state import AgenticState
from service.rerank.features import zscores_of
from service.rerank.light import Priors

AGENT_WEIGHT = 2.0
"""Pool order: weight of an agent find (``1 / (10 + rank)`` per rewrite) next to the z-scored hybrid score."""

CITED_WEIGHT = 10.0
"""Answer order without a trained reranker: the bonus of an article the question names ("nach § 535",
"Art. 41 OR"), which puts those articles ahead of the rest (z-scored fusion scores stay within a few
units). Without a trained reranker the question's own citations are the surest evidence there is: on
the Swiss exam questions that cite articles, label-free agentic R@10 / MRR@10 0.30 / 0.21 -> 0.41 / 0.42
(docs/BENCHMARKS.md, "Articles the question names")."""


@functools.lru_cache(maxsize=4096)
def _hybrid_provenance(rank: int) -> Provenance:
    # Provenance is frozen, so one instance per rank serves every pool (building it costs more than a Hit).
    return Provenance("hybrid", 0, rank, "")


def seed_pool(fused: Sequence[Hit]) -> dict[str, Hit]:
    """The first pool: the hybrid fusion, each hit with its ``hybrid`` score, rank and provenance."""
    pool: dict[str, Hit] = {}
    for rank, hit in enumerate(fused, start=1):
        scores = hit.scores.copy()
        scores["hybrid"] = hit.score
        ranks = hit.ranks.copy()
        ranks["hybrid"] = rank
        pool[hit.doc_id] = Hit(hit.doc_id, hit.score, scores, ranks, [_hybrid_provenance(rank)])
    return pool


def member(pool: dict[str, Hit], doc_id: str) -> tuple[Hit, bool]:
    """The pool's hit for ``doc_id``, added (with score 0) when missing; and whether it is new."""
    hit = pool.get(doc_id)
    if hit is None:
        hit = pool[doc_id] = Hit(doc_id=doc_id, score=0.0)
        return hit, True
    return hit, False


def add_ranked(pool: dict[str, Hit], ids: Sequence[str], source: str) -> None:
    """Add ``ids`` found by ``source`` before the rounds (``memory``, ``prefilter``), best first: each
    hit gets the source's rank and provenance."""
    for rank, doc_id in enumerate(ids, start=1):
        hit, _ = member(pool, doc_id)
        hit.ranks[source] = rank
        hit.provenance.append(Provenance(source, 0, rank, ""))


def by_rank(pool: Mapping[str, Hit], key: str) -> list[str]:
    """The ids of the hits ranked by ``key``, best first."""
    ranked = sorted((h for h in pool.values() if key in h.ranks), key=lambda h: h.ranks[key])
    return [h.doc_id for h in ranked]


def pool_order(state: AgenticState, graph: CorpusGraph) -> list[str]:
    """The pool's heuristic order, computed once per pool state (``merge`` clears it)."""
    if state.order is None:
        state.order = _pool_order_ids(state, graph)
    return state.order


def _pool_order_ids(state: AgenticState, graph: CorpusGraph) -> list[str]:
    """The pool in its heuristic order: z-scored hybrid score, agent finds, memory, prefilter and priors.

    Each hit's ``score`` becomes its heuristic score (the ``none`` reranker keeps them).
    """
    hits = list(state.pool.values())
    z, floor = zscores_of(hits, "hybrid")
    priors = Priors(graph=graph, law_probabilities=state.law_prediction(), memory=state.memory_votes())
    scores = []
    for h in hits:
        value = z.get(h.doc_id, floor)
        value += AGENT_WEIGHT * sum(10.0 / (10 + p.rank) for p in h.provenance if p.round >= 1) / 10.0
        if "prefilter" in h.ranks:
            value += 1.0 / math.sqrt(h.ranks["prefilter"])
        value += priors.bonus(h.doc_id)
        scores.append(value)
    for h, s in zip(hits, scores, strict=True):
        h.score = s
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    return [hits[i].doc_id for i in order]


def answer_order(state: AgenticState, graph: CorpusGraph) -> list[str]:
    """The order a search answers in when no trained reranker ranks its pool: the heuristic order
    (:func:`pool_order`, which the agents read as their evidence) with the articles the question cites
    ahead. Their light scores rise by :data:`CITED_WEIGHT`, so the scores still descend and a score-cliff
    cut sees the gap (every such call sets the scores anew, so a second call raises nothing twice)."""
    cited = [d for d, hit in state.pool.items() if "cited" in hit.ranks]
    if not cited:
        return pool_order(state, graph)
    order = _pool_order_ids(state, graph)
    for doc_id in cited:
        state.pool[doc_id].score += CITED_WEIGHT
    return sorted(order, key=lambda d: -state.pool[d].score)


def links(state: AgenticState, graph: CorpusGraph) -> int:
    """Citation links (both ways) of the pool's five best members in the heuristic order (a planner feature)."""
    return sum(len(graph.cites(d)) + len(graph.cited_by(d)) for d in pool_order(state, graph)[:5])


def fetch(backend: SearchBackend, state: AgenticState, ids: Sequence[str]) -> dict[str, LegalDoc]:
    """The documents of ``ids`` (fetched once per search and kept in ``state.docs``)."""
    missing = [d for d in ids if d not in state.docs]
    if missing:
        state.docs.update(backend.fetch(state.request["index"], missing))
    return {d: state.docs[d] for d in ids if d in state.docs}


def allowed(backend: SearchBackend, state: AgenticState, ids: Sequence[str]) -> list[str]:
    """``ids`` that pass the request's filters (documents fetched only when there are filters)."""
    filters = state.search_request().filters
    if not filters or not ids:
        return list(ids)
    docs = fetch(backend, state, ids)
    return [d for d in ids if d in docs and filters.matches(docs[d])]
