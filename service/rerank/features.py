"""Features of pool candidates for the learned reranker.

One row per candidate. The columns (:data:`FEATURE_NAMES`) come from:

- the first retrieval of the question: BM25 and kNN scores (raw, per-query z-score, rank) and the
  fused hybrid rank (``hit.scores``/``hit.ranks`` keys ``bm25``, ``knn``, ``hybrid``, ``prefilter``),
  and whether the question cites the article itself (``cited``: "Art. 725 Abs. 2 OR");
- the agents: how many agents, rounds and rewrites found it, at what best rank, and which agents
  (``hit.provenance`` entries with ``round >= 1``), and each agent's z-scored retrieval score of it
  (``hit.scores["agent:<name>"]``, also for candidates that were already in the pool);
- citation links to the best pool members, neighbourhood in the law, and the share of the first
  retrieval's best ten that sit under the same headings (:class:`CorpusGraph`);
- priors learned on training questions: predicted-law and section probability, the article's gold
  frequency, and the votes of similar training questions;
- the article itself: relative position in its law, number, law size, length;
- the issues of a multi-issue question (:mod:`service.pipelines.issue_pool`): per candidate, the
  best evidence of any one issue: its rank in the issue's hybrid, memory and prefiltered lists, the
  issue's law, section and memory priors, and the share of issues that found it (and the rank in the
  section pass, ``section``, for the whole question). A question with
  one issue gets the whole question's values, so single- and multi-issue pools share one scale;
- co-citation (:mod:`service.rerank.cocitation`): how strongly the best candidates' training
  companions call for the candidate (summed and strongest weight);
- the article classifier (:mod:`service.rerank.article_classifier`): its score of the candidate, the
  score's z-value over all training articles, and its rank among them.

Missing signals get fixed values outside the observed range (documented per column), so the
trees can tell "not found" from "found low".

Example::

    matrix = pool_features(hits, FeatureContext(graph=graph, law_probabilities={"BGB": 0.9}))
    matrix.shape      # (len(hits), len(FEATURE_NAMES))
"""

from __future__ import annotations

import functools
import math
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from service.corpus.graph import CorpusGraph
from service.corpus.model import Hit
from service.rerank.light import zscore
from service.rerank.priors import ArticlePrior, MemoryVote

AGENT_COLUMNS: tuple[str, ...] = ("terminology", "conditions", "decompose", "supportive", "repair", "hyde")
ISSUE_COLUMNS: tuple[str, ...] = (
    "issue_count", "issue_rank_log", "issue_cover", "issue_law_logp", "issue_section_logp", "issue_memory_vote",
    "issue_memory_rank_log", "issue_prefilter_rank_log", "issue_section_rank_log",
)
"""The best evidence any one issue of the question has for a candidate (see :class:`IssueContext`)."""
FEATURE_NAMES: tuple[str, ...] = (
    "bm25", "bm25_z", "bm25_rank_log", "knn", "knn_z", "knn_rank_log", "hybrid_rank_log", "rrf",
    "prefilter_rank_log", "section_rank_log", "memory_vote", "memory_best", "memory_rank_log", "prior_log",
    "prior_law_share", "law_logp", "law_rank", "section_logp", "law_prior_log",
    "n_agents", "n_rounds", "n_rewrites", "best_agent_rank_log", "agent_rrf",
    *(f"agent_{a}" for a in AGENT_COLUMNS), *(f"agent_{a}_z" for a in AGENT_COLUMNS), "agent_z_max",
    "cites_top", "cited_by_top", "neighbour_of_top", "same_law_top10", "same_heading_top10",
    "article_position", "article_number_log", "law_size_log", "doc_length_log",
    "query_terms", "law_top_p", "memory_top_sim", "cited_in_question",
    *ISSUE_COLUMNS, "cocite_support", "cocite_max", "dense_sim", "dense_sim_z",
    "article_score", "article_z", "article_rank_log",
)
"""Column names, in order. Changing them invalidates trained rerankers (their manifest keeps the list)."""

ARTICLE_SCORE_FLOOR = -3.0
"""``article_score`` of a candidate that is no training article (the classifier's scores lie above -2)."""
ARTICLE_Z_FLOOR = -10.0
"""``article_z`` of a candidate that is no training article."""
AGENT_Z_FLOOR = -4.0
"""The ``agent_<name>_z`` value of a candidate that agent's rewrites did not retrieve (or that did not run)."""
TOP_LINKS = 10
"""Citation features count links to the best this-many candidates of the first retrieval."""
_EPS = 1e-4


@dataclass
class IssueContext:
    """The priors of one issue of the question (law, section and memory, as for the whole question)."""

    law_probabilities: Mapping[str, float] = field(default_factory=dict)
    section_probabilities: Mapping[str, float] = field(default_factory=dict)
    memory: Mapping[str, MemoryVote] = field(default_factory=dict)


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
        issues: the issues searched one by one (empty: the question is one issue).
        cocitation: per candidate, (summed, strongest) companion weight from the best candidates.
        agents_ran: whether any agent round merged into the pool (``None``: look at the hits). Only
            a shortcut: a pool without agent evidence gets the same rows either way.
        similarities: the question vector's kNN score with every candidate's stored vector, also
            for the candidates the kNN list did not return (empty: unknown).
        articles: the article classifier's (score, z-value, rank) of the candidates that are
            training articles (:meth:`ArticleClassifier.evidence`).
        article_count: how many articles the classifier knows (0: no classifier); a candidate it
            does not know gets rank twice that.
    """

    graph: CorpusGraph | None = None
    law_probabilities: Mapping[str, float] = field(default_factory=dict)
    section_probabilities: Mapping[str, float] = field(default_factory=dict)
    prior: ArticlePrior | None = None
    memory: Mapping[str, MemoryVote] = field(default_factory=dict)
    memory_top_sim: float = 0.0
    query_terms: int = 0
    depth: int = 100
    issues: Sequence[IssueContext] = ()
    cocitation: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    agents_ran: bool | None = None
    similarities: Mapping[str, float] = field(default_factory=dict)
    articles: Mapping[str, tuple[float, float, int]] = field(default_factory=dict)
    article_count: int = 0


def zscores_of(hits: Sequence[Hit], key: str) -> tuple[dict[str, float], float]:
    """The z-scores of ``hit.scores[key]`` by document id, over the hits that have that score, and a
    floor (one below the lowest) for the hits that do not; ``({}, 0.0)`` when none has it."""
    values = [(h.doc_id, h.scores[key]) for h in hits if key in h.scores]
    if not values:
        return {}, 0.0
    z = zscore([v for _, v in values])
    return {doc_id: float(s) for (doc_id, _), s in zip(values, z, strict=True)}, float(z.min()) - 1.0


_COL = {name: i for i, name in enumerate(FEATURE_NAMES)}
_PRIOR_COLUMNS = tuple(_COL[n] for n in ("prior_log", "prior_law_share", "law_prior_log"))
_ARTICLE_COLUMNS = tuple(_COL[n] for n in ("article_position", "article_number_log", "law_size_log", "doc_length_log"))
_FIXED_COLUMNS = {(has_prior, has_info): (_PRIOR_COLUMNS if has_prior else ()) + (_ARTICLE_COLUMNS if has_info else ())
                  for has_prior in (False, True) for has_info in (False, True)}
_AGENT_COLUMNS = tuple((name, _COL[f"agent_{name}"], _COL[f"agent_{name}_z"], f"agent:{name}")
                       for name in AGENT_COLUMNS)


@dataclass(frozen=True, slots=True)
class DocumentColumns:
    """The query-independent part of one document's row: its law, section and fixed column values."""

    law: str
    block: str | None
    heading: str
    known: bool
    columns: tuple[int, ...]
    """Where :attr:`values` go in the row (one of a few shared tuples)."""
    values: tuple[float, ...]


class StaticColumns:
    """Per-document columns that do not depend on the question (article facts and gold priors).

    They are the same for every query against one corpus graph and prior, so they are computed for
    every document of the graph when the table is built (0.3 s for the 58,625 STARD articles, about
    27 MB) and kept; :func:`static_columns` shares one table per graph and prior, for the four most
    recent pairs. Ids outside the graph get theirs on first use.
    """

    def __init__(self, graph: CorpusGraph | None, prior: ArticlePrior | None) -> None:
        self.graph = graph
        self.prior = prior
        self._rows: dict[str, DocumentColumns] = {}
        self._lock = threading.Lock()
        for doc_id in graph.ids() if graph is not None else ():
            self.of(doc_id)

    def of(self, doc_id: str) -> DocumentColumns:
        """The document's fixed columns (computed once, then cached)."""
        cached = self._rows.get(doc_id)
        if cached is not None:
            return cached
        info = self.graph.info(doc_id) if self.graph is not None else None
        law = info.law if info else ""
        values: tuple[float, ...] = ()
        if self.prior is not None:
            values += (self.prior.log_count(doc_id), self.prior.law_share(doc_id, law),
                       self.prior.law_log_count(law))
        if info is not None:
            values += (info.position / max(1, info.law_size - 1), math.log1p(info.number),
                       math.log1p(info.law_size), math.log1p(info.length))
        columns = _FIXED_COLUMNS[(self.prior is not None, info is not None)]
        row = DocumentColumns(law, info.block if info else None, info.heading if info else "", info is not None,
                              columns, values)
        with self._lock:
            self._rows[doc_id] = row
        return row


@functools.lru_cache(maxsize=4)
def static_columns(graph: CorpusGraph | None, prior: ArticlePrior | None) -> StaticColumns:
    """The shared :class:`StaticColumns` of one graph and prior (both are read-only once built)."""
    return StaticColumns(graph, prior)


def pool_features(hits: Sequence[Hit], ctx: FeatureContext, *, rows: Sequence[Hit] | None = None) -> np.ndarray:
    """The feature matrix of the pool, ``(len(hits), len(FEATURE_NAMES))`` float32.

    ``rows`` builds the rows of those hits only, ``(len(rows), ...)``; the pool-level values (z-scores,
    the first pass's best candidates) still come from all of ``hits``, so each row is the one the
    whole pool would give it.
    """
    if not hits or (rows is not None and not rows):
        return np.zeros((0, len(FEATURE_NAMES)), dtype=np.float32)
    col = _COL
    log = math.log
    missing_rank = log(2 * max(1, ctx.depth))
    bm25_z, bm25_floor = zscores_of(hits, "bm25")
    knn_z, knn_floor = zscores_of(hits, "knn")
    knn_min = min((h.scores["knn"] for h in hits if "knn" in h.scores), default=0.0) - 0.05
    law_ranked = sorted(ctx.law_probabilities.items(), key=lambda kv: -kv[1])
    law_rank = {law: r for r, (law, _) in enumerate(law_ranked, start=1)}
    law_top_p = law_ranked[0][1] if law_ranked else 0.0
    law_probabilities = ctx.law_probabilities
    section_probabilities = ctx.section_probabilities
    memory = ctx.memory
    graph = ctx.graph
    fixed = static_columns(graph, ctx.prior)

    first_pass = sorted((h for h in hits if "hybrid" in h.ranks), key=lambda h: h.ranks["hybrid"])
    top_ids = [h.doc_id for h in first_pass[:TOP_LINKS]]
    top_laws = [graph.law_of(d) for d in top_ids] if graph is not None else []
    top_headings = Counter(info.heading for info in (graph.info(d) for d in top_ids) if info and info.heading) \
        if graph is not None else Counter()
    near_top: set[str] = set()
    # Link counts to the top candidates, looked up per candidate: links are unique per pair, so
    # "d cites k top candidates" is "d is cited by k of them" read from the other side.
    cites_top: Counter[str] = Counter()
    cited_by_top: Counter[str] = Counter()
    if graph is not None:
        for d in top_ids[:5]:
            near_top.update(graph.neighbours(d))
        for t in top_ids:
            cites_top.update(graph.cited_by(t))
            cited_by_top.update(graph.cites(t))
    top_law_share = {law: n / len(top_laws) for law, n in Counter(top_laws).items()}
    issues = ctx.issues if len(ctx.issues) > 1 else ()
    cocitation = ctx.cocitation
    agents_ran = ctx.agents_ran
    similarities = ctx.similarities
    scored = [h.doc_id for h in hits if h.doc_id in similarities]
    sim_z = dict(zip(scored, zscore([similarities[d] for d in scored]).tolist(), strict=True))
    if agents_ran is None:
        agents_ran = any(p.round >= 1 for h in hits for p in h.provenance) or any(
            key.startswith("agent:") for h in hits for key in h.scores)
    no_section = log(_EPS)

    # One template row holds the columns equal for every candidate; rows are Python lists because
    # element writes into a numpy row cost several times more.
    template = [0.0] * len(FEATURE_NAMES)
    template[col["query_terms"]] = ctx.query_terms
    template[col["law_top_p"]] = law_top_p
    template[col["memory_top_sim"]] = ctx.memory_top_sim
    template[col["article_score"]] = ARTICLE_SCORE_FLOOR
    template[col["article_z"]] = ARTICLE_Z_FLOOR
    template[col["article_rank_log"]] = log(2 * max(1, ctx.article_count))
    articles = ctx.articles
    if not agents_ran:  # the agent columns of a pool no agent added to
        _agent_columns(template, Hit(doc_id="", score=0.0), missing_rank)
    matrix = []
    for hit in hits if rows is None else rows:
        row = template.copy()
        matrix.append(row)
        d = hit.doc_id
        scores, ranks = hit.scores, hit.ranks
        bm25_rank, knn_rank, hybrid_rank = ranks.get("bm25"), ranks.get("knn"), ranks.get("hybrid")
        row[col["bm25"]] = scores.get("bm25", 0.0)
        row[col["bm25_z"]] = bm25_z.get(d, bm25_floor)
        row[col["bm25_rank_log"]] = log(bm25_rank) if bm25_rank is not None else missing_rank
        row[col["knn"]] = scores.get("knn", knn_min)
        row[col["knn_z"]] = knn_z.get(d, knn_floor)
        row[col["knn_rank_log"]] = log(knn_rank) if knn_rank is not None else missing_rank
        row[col["hybrid_rank_log"]] = log(hybrid_rank) if hybrid_rank is not None else missing_rank
        rrf = 0.0
        if bm25_rank is not None:
            rrf += 1.0 / (60 + bm25_rank)
        if knn_rank is not None:
            rrf += 1.0 / (60 + knn_rank)
        row[col["rrf"]] = rrf
        if "cited" in ranks:
            row[col["cited_in_question"]] = 1.0
        prefilter_rank = ranks.get("prefilter")
        row[col["prefilter_rank_log"]] = log(prefilter_rank) if prefilter_rank is not None else missing_rank
        section_rank = ranks.get("section")
        row[col["section_rank_log"]] = log(section_rank) if section_rank is not None else missing_rank
        vote = memory.get(d)
        if vote:
            row[col["memory_vote"]] = vote.vote
            row[col["memory_best"]] = vote.best
            row[col["memory_rank_log"]] = log(vote.rank)
        else:
            row[col["memory_rank_log"]] = missing_rank

        doc = fixed.of(d)
        law = doc.law
        for column, value in zip(doc.columns, doc.values, strict=True):
            row[column] = value
        row[col["law_logp"]] = log(law_probabilities.get(law, 0.0) + _EPS)
        row[col["law_rank"]] = law_rank.get(law, 50)
        row[col["section_logp"]] = (log(section_probabilities.get(doc.block, 0.0) + _EPS) if doc.block is not None
                                    else no_section)

        if agents_ran:
            _agent_columns(row, hit, missing_rank)

        if graph is not None and doc.known:
            row[col["cites_top"]] = cites_top[d]
            row[col["cited_by_top"]] = cited_by_top[d]
            row[col["neighbour_of_top"]] = 1.0 if d in near_top else 0.0
            row[col["same_law_top10"]] = top_law_share.get(law, 0.0)
            if top_headings and doc.heading:
                row[col["same_heading_top10"]] = top_headings[doc.heading] / len(top_ids)
        if issues:
            _issue_columns(row, hit, issues, law, doc.block, missing_rank)
        else:
            _single_issue_columns(row, hit)
        cocited = cocitation.get(d)
        if cocited is not None:
            row[col["cocite_support"]], row[col["cocite_max"]] = cocited
        sim = similarities.get(d)
        if sim is None:  # unknown: what the kNN list says
            row[col["dense_sim"]], row[col["dense_sim_z"]] = row[col["knn"]], row[col["knn_z"]]
        else:
            row[col["dense_sim"]], row[col["dense_sim_z"]] = sim, sim_z[d]
        article = articles.get(d)
        if article is not None:
            row[col["article_score"]], row[col["article_z"]] = article[0], article[1]
            row[col["article_rank_log"]] = log(article[2])
    return np.asarray(matrix, dtype=np.float32)


_ISSUE_COPIES = tuple((_COL[a], _COL[b]) for a, b in (
    ("issue_rank_log", "hybrid_rank_log"), ("issue_law_logp", "law_logp"), ("issue_section_logp", "section_logp"),
    ("issue_memory_vote", "memory_vote"), ("issue_memory_rank_log", "memory_rank_log"),
    ("issue_prefilter_rank_log", "prefilter_rank_log"), ("issue_section_rank_log", "section_rank_log")))
_ISSUE_LISTS = {"": _COL["issue_rank_log"], "_memory": _COL["issue_memory_rank_log"],
                "_prefilter": _COL["issue_prefilter_rank_log"], "_section": _COL["issue_section_rank_log"]}
"""Suffix of an issue's list in ``hit.ranks`` (``issue<j><suffix>``) → the column of its best rank."""
_ISSUE_COUNT = _COL["issue_count"]
_ISSUE_COVER = _COL["issue_cover"]


def _single_issue_columns(row: list[float], hit: Hit) -> None:
    """The issue columns of a one-issue question: the whole question's own values."""
    for target, source in _ISSUE_COPIES:
        row[target] = row[source]
    row[_ISSUE_COUNT] = 1.0
    row[_ISSUE_COVER] = 1.0 if "hybrid" in hit.ranks else 0.0


def _issue_columns(row: list[float], hit: Hit, issues: Sequence[IssueContext], law: str, block: str | None,
                   missing_rank: float) -> None:
    """The issue columns of a multi-issue question: per column, the best value over the issues."""
    col = _COL
    log = math.log
    ranks = hit.ranks
    best: dict[str, int] = {}
    found = 0
    law_logp = section_logp = -math.inf
    vote = 0.0
    for j, issue in enumerate(issues):
        if f"issue{j}" in ranks:
            found += 1
        for kind in _ISSUE_LISTS:
            rank = ranks.get(f"issue{j}{kind}")
            if rank is not None and rank < best.get(kind, rank + 1):
                best[kind] = rank
        law_logp = max(law_logp, log(issue.law_probabilities.get(law, 0.0) + _EPS))
        section_p = issue.section_probabilities.get(block, 0.0) if block is not None else 0.0
        section_logp = max(section_logp, log(section_p + _EPS))
        memory_vote = issue.memory.get(hit.doc_id)
        if memory_vote is not None:
            vote = max(vote, memory_vote.vote)
    row[col["issue_count"]] = float(len(issues))
    row[col["issue_cover"]] = found / len(issues)
    row[col["issue_law_logp"]] = law_logp
    row[col["issue_section_logp"]] = section_logp
    row[col["issue_memory_vote"]] = vote
    for kind, column in _ISSUE_LISTS.items():
        rank = best.get(kind)
        row[column] = log(rank) if rank is not None else missing_rank


def _agent_columns(row: list[float], hit: Hit, missing_rank: float) -> None:
    """Fill the agent columns of ``row`` from the hit's provenance and agent scores."""
    col = _COL
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
    for name, column, z_column, score_key in _AGENT_COLUMNS:
        if name in agents:
            row[column] = 1.0 / agents[name]
        z = hit.scores.get(score_key, AGENT_Z_FLOOR)
        row[z_column] = z
        best_z = max(best_z, z)
    row[col["agent_z_max"]] = best_z
