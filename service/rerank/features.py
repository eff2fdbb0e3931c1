"""Features of pool candidates for the learned reranker.

One row per candidate. The columns (:data:`FEATURE_NAMES`) come from:

- the first retrieval of the question: BM25 and kNN scores (raw, per-query z-score, rank) and the
  fused hybrid rank (``hit.scores``/``hit.ranks`` keys ``bm25``, ``knn``, ``hybrid``, ``prefilter``);
- the agents: how many agents, rounds and rewrites found it, at what best rank, and which agents
  (``hit.provenance`` entries with ``round >= 1``), and each agent's z-scored retrieval score of it
  (``hit.scores["agent:<name>"]``, also for candidates that were already in the pool);
- citation links to the best pool members and neighbourhood in the law (:class:`CorpusGraph`);
- priors learned on training questions: predicted-law and section probability, the article's gold
  frequency, and the votes of similar training questions;
- the article itself: relative position in its law, number, law size, length.

Missing signals get fixed values outside the observed range (documented per column), so the
trees can tell "not found" from "found low".

Example::

    matrix = pool_features(hits, FeatureContext(graph=graph, law_probabilities={"BGB": 0.9}))
    matrix.shape      # (len(hits), len(FEATURE_NAMES))
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from service.corpus.graph import CorpusGraph
from service.corpus.model import Hit
from service.rerank.light import zscore
from service.rerank.priors import ArticlePrior, MemoryVote

AGENT_COLUMNS: tuple[str, ...] = ("terminology", "conditions", "decompose", "supportive", "repair", "hyde")
FEATURE_NAMES: tuple[str, ...] = (
    "bm25", "bm25_z", "bm25_rank_log", "knn", "knn_z", "knn_rank_log", "hybrid_rank_log", "rrf",
    "prefilter_rank_log", "memory_vote", "memory_best", "memory_rank_log", "prior_log", "prior_law_share",
    "law_logp", "law_rank", "section_logp", "law_prior_log",
    "n_agents", "n_rounds", "n_rewrites", "best_agent_rank_log", "agent_rrf",
    *(f"agent_{a}" for a in AGENT_COLUMNS), *(f"agent_{a}_z" for a in AGENT_COLUMNS), "agent_z_max",
    "cites_top", "cited_by_top", "neighbour_of_top", "same_law_top10",
    "article_position", "article_number_log", "law_size_log", "doc_length_log",
    "query_terms", "law_top_p", "memory_top_sim",
)
"""Column names, in order. Changing them invalidates trained rerankers (their manifest keeps the list)."""

AGENT_Z_FLOOR = -4.0
"""The ``agent_<name>_z`` value of a candidate that agent's rewrites did not retrieve (or that did not run)."""
TOP_LINKS = 10
"""Citation features count links to the best this-many candidates of the first retrieval."""
_EPS = 1e-4


@dataclass
class FeatureContext:
    """Query-level inputs of the features (all optional; missing ones give neutral values).

    Attributes:
        graph: the corpus structure.
        law_probabilities: predicted probability per law.
        section_probabilities: predicted probability per section (``ArticleInfo.block``).
        prior: gold frequencies of the training questions.
        memory: votes of similar training questions, by document id.
        memory_top_sim: similarity of the most similar training question.
        query_terms: number of analysed terms in the question.
        depth: retrieval depth of the first pass (rank given to candidates it did not find is 2x).
    """

    graph: CorpusGraph | None = None
    law_probabilities: Mapping[str, float] = field(default_factory=dict)
    section_probabilities: Mapping[str, float] = field(default_factory=dict)
    prior: ArticlePrior | None = None
    memory: Mapping[str, MemoryVote] = field(default_factory=dict)
    memory_top_sim: float = 0.0
    query_terms: int = 0
    depth: int = 100


def zscores_of(hits: Sequence[Hit], key: str) -> tuple[dict[str, float], float]:
    """The z-scores of ``hit.scores[key]`` by document id, over the hits that have that score, and a
    floor (one below the lowest) for the hits that do not; ``({}, 0.0)`` when none has it."""
    values = [(h.doc_id, h.scores[key]) for h in hits if key in h.scores]
    if not values:
        return {}, 0.0
    z = zscore([v for _, v in values])
    return {doc_id: float(s) for (doc_id, _), s in zip(values, z, strict=True)}, float(z.min()) - 1.0


def pool_features(hits: Sequence[Hit], ctx: FeatureContext) -> np.ndarray:
    """The feature matrix of the pool, ``(len(hits), len(FEATURE_NAMES))`` float32."""
    if not hits:
        return np.zeros((0, len(FEATURE_NAMES)), dtype=np.float32)
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    missing_rank = math.log(2 * max(1, ctx.depth))
    bm25_z, bm25_floor = zscores_of(hits, "bm25")
    knn_z, knn_floor = zscores_of(hits, "knn")
    knn_min = min((h.scores["knn"] for h in hits if "knn" in h.scores), default=0.0) - 0.05
    law_ranked = sorted(ctx.law_probabilities.items(), key=lambda kv: -kv[1])
    law_rank = {law: r for r, (law, _) in enumerate(law_ranked, start=1)}
    law_top_p = law_ranked[0][1] if law_ranked else 0.0
    graph = ctx.graph

    first_pass = sorted((h for h in hits if "hybrid" in h.ranks), key=lambda h: h.ranks["hybrid"])
    top_ids = [h.doc_id for h in first_pass[:TOP_LINKS]]
    top_set = set(top_ids)
    top_laws = [graph.law_of(d) for d in top_ids] if graph is not None else []
    near_top: set[str] = set()
    if graph is not None:
        for d in top_ids[:5]:
            near_top.update(graph.neighbours(d))

    width = len(FEATURE_NAMES)
    rows = []
    for hit in hits:
        row = [0.0] * width  # a Python list: element writes into a numpy row cost several times more
        rows.append(row)
        d = hit.doc_id
        row[col["bm25"]] = hit.scores.get("bm25", 0.0)
        row[col["bm25_z"]] = bm25_z.get(d, bm25_floor)
        row[col["bm25_rank_log"]] = math.log(hit.ranks["bm25"]) if "bm25" in hit.ranks else missing_rank
        row[col["knn"]] = hit.scores.get("knn", knn_min)
        row[col["knn_z"]] = knn_z.get(d, knn_floor)
        row[col["knn_rank_log"]] = math.log(hit.ranks["knn"]) if "knn" in hit.ranks else missing_rank
        row[col["hybrid_rank_log"]] = math.log(hit.ranks["hybrid"]) if "hybrid" in hit.ranks else missing_rank
        row[col["rrf"]] = sum(1.0 / (60 + hit.ranks[key]) for key in ("bm25", "knn") if key in hit.ranks)
        row[col["prefilter_rank_log"]] = (math.log(hit.ranks["prefilter"]) if "prefilter" in hit.ranks
                                          else missing_rank)
        vote = ctx.memory.get(d)
        row[col["memory_vote"]] = vote.vote if vote else 0.0
        row[col["memory_best"]] = vote.best if vote else 0.0
        row[col["memory_rank_log"]] = math.log(vote.rank) if vote else missing_rank

        info = graph.info(d) if graph is not None else None
        law = info.law if info else ""
        if ctx.prior is not None:
            row[col["prior_log"]] = ctx.prior.log_count(d)
            row[col["prior_law_share"]] = ctx.prior.law_share(d, law)
            row[col["law_prior_log"]] = ctx.prior.law_log_count(law)
        row[col["law_logp"]] = math.log(ctx.law_probabilities.get(law, 0.0) + _EPS)
        row[col["law_rank"]] = law_rank.get(law, 50)
        row[col["section_logp"]] = math.log(ctx.section_probabilities.get(info.block, 0.0) + _EPS) if info \
            else math.log(_EPS)

        agents: dict[str, int] = {}
        rounds: set[int] = set()
        rewrites = 0
        agent_rrf = 0.0
        for p in hit.provenance:
            if p.round < 1:
                continue
            rewrites += 1
            rounds.add(p.round)
            agents[p.agent] = min(agents.get(p.agent, p.rank), p.rank)
            agent_rrf += 1.0 / (10 + p.rank)
        row[col["n_agents"]] = len(agents)
        row[col["n_rounds"]] = len(rounds)
        row[col["n_rewrites"]] = rewrites
        row[col["best_agent_rank_log"]] = math.log(min(agents.values())) if agents else missing_rank
        row[col["agent_rrf"]] = agent_rrf
        best_z = AGENT_Z_FLOOR
        for name in AGENT_COLUMNS:
            if name in agents:
                row[col[f"agent_{name}"]] = 1.0 / agents[name]
            z = hit.scores.get(f"agent:{name}", AGENT_Z_FLOOR)
            row[col[f"agent_{name}_z"]] = z
            best_z = max(best_z, z)
        row[col["agent_z_max"]] = best_z

        if graph is not None and info is not None:
            row[col["cites_top"]] = sum(1 for t in graph.cites(d) if t in top_set)
            row[col["cited_by_top"]] = sum(1 for s in graph.cited_by(d) if s in top_set)
            row[col["neighbour_of_top"]] = 1.0 if d in near_top else 0.0
            row[col["same_law_top10"]] = (sum(1 for x in top_laws if x == law) / len(top_laws)) if top_laws else 0.0
            row[col["article_position"]] = info.position / max(1, info.law_size - 1)
            row[col["article_number_log"]] = math.log1p(info.number)
            row[col["law_size_log"]] = math.log1p(info.law_size)
            row[col["doc_length_log"]] = math.log1p(info.length)
        row[col["query_terms"]] = ctx.query_terms
        row[col["law_top_p"]] = law_top_p
        row[col["memory_top_sim"]] = ctx.memory_top_sim
    return np.asarray(rows, dtype=np.float32)
