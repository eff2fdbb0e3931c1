"""Per-issue retrieval with pool quotas: every issue of a multi-issue question gets its own
candidates, so that the strongest issue cannot crowd out the others.

For a question with two or more issues (:mod:`service.agents.issues`, or the LLM's sub-questions)
each issue is searched as a question of its own:

- a hybrid pass (BM25 + kNN, fused) whose top :data:`ISSUE_QUOTA` join the pool;
- the law/section classifier and the question memory on the issue alone; the memory's top
  :data:`ISSUE_MEMORY` join the pool;
- a law-prefiltered pass over the issue's predicted laws and a pass over its most likely sections,
  whose top :data:`ISSUE_PREFILTER` each join.

Each issue's quota is its own: the whole question's first retrieval (the hybrid top 100) stays in
the pool, and the issues add to it. A candidate records its rank in each issue's lists
(``hit.ranks["issue<j>"]``, ``"issue<j>_memory"``, ``"issue<j>_prefilter"``, ``"issue<j>_section"``),
and the issues' priors travel with the state (:class:`IssueEvidence`), so the reranker can see which
issue a candidate answers (:mod:`service.rerank.features`). :func:`balance` then gives each issue's
best candidate a place in the first ten.

Example::

    found = IssueSearch(backend, runtime.retrieval("stard"), hybrid).search(
        ["公司辞退我能要补偿吗？", "房东不退押金怎么办？"], index="stard", language="zh", lang="zh", filters=None,
        pool=pool, classifier=models.law_classifier, memory=models.memory, graph=graph, prefilter=True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import numpy as np

from service.agents.prefilter import LawClassifier, prefilter_laws, prefilter_sections, section_filter
from service.analysis.chain import analyzer_for
from service.backends.base import SearchBackend
from service.corpus.graph import CorpusGraph
from service.corpus.model import Filters, Hit, Provenance
from service.pipelines.base import IndexRetrieval
from service.pipelines.hybrid import HybridPipeline
from service.rerank.priors import MemoryVote, QuestionMemory

ISSUE_QUOTA = 30
"""Candidates each issue's hybrid pass adds to the pool."""
ISSUE_MEMORY = 10
"""Candidates each issue's memory votes add to the pool."""
ISSUE_PREFILTER = 20
"""Candidates each issue's law-prefiltered pass adds to the pool."""
KEPT_LAWS = 20
KEPT_SECTIONS = 40
KEPT_VOTES = 60


@dataclass
class IssueEvidence:
    """What one issue's search found: its text and priors (plain JSON via :meth:`to_json`).

    Attributes:
        text: the issue as searched.
        laws: predicted laws with probabilities, most likely first (top :data:`KEPT_LAWS`).
        sections: predicted sections with probabilities (top :data:`KEPT_SECTIONS`).
        memory: votes of training questions similar to the issue ``{doc_id: [vote, best, rank]}``.
        hits: candidates its hybrid pass added (the quota actually used).
    """

    text: str
    laws: list[list[Any]] = field(default_factory=list)
    sections: dict[str, float] = field(default_factory=dict)
    memory: dict[str, list[float]] = field(default_factory=dict)
    hits: int = 0

    def law_probabilities(self) -> dict[str, float]:
        return {str(law): float(p) for law, p in self.laws}

    def memory_votes(self) -> dict[str, MemoryVote]:
        return {d: MemoryVote(float(v), float(b), int(r)) for d, (v, b, r) in self.memory.items()}

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "laws": self.laws, "sections": self.sections, "memory": self.memory,
                "hits": self.hits}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IssueEvidence:
        return cls(text=str(data["text"]), laws=[list(x) for x in data.get("laws", [])],
                   sections={k: float(v) for k, v in data.get("sections", {}).items()},
                   memory={k: list(v) for k, v in data.get("memory", {}).items()}, hits=int(data.get("hits", 0)))

    def to_trace(self) -> dict[str, Any]:
        return {"text": self.text[:200], "laws": [[law, round(float(p), 4)] for law, p in self.laws[:3]],
                "hits": self.hits}


def _add(pool: dict[str, Hit], doc_id: str, key: str, rank: int, source: str, query: str, *, join: bool) -> None:
    """Record ``rank`` under ``key`` on the candidate; a new candidate joins the pool only if ``join``."""
    hit = pool.get(doc_id)
    if hit is None:
        if not join:
            return
        hit = pool[doc_id] = Hit(doc_id=doc_id, score=0.0)
    if key not in hit.ranks or rank < hit.ranks[key]:
        hit.ranks[key] = rank
    hit.provenance.append(Provenance(source, 0, rank, query[:200]))


@dataclass(frozen=True)
class IssueSearch:
    """Searches each issue with its own quota and adds the finds to the pool.

    Attributes:
        backend: the index.
        retrieval: the index's query embedder and fusion weights.
        hybrid: the fusion of the agentic pipeline's first pass.
        quota, memory_quota, prefilter_quota: what each issue's hybrid pass, memory votes and
            law-prefiltered pass add to the pool.
    """

    backend: SearchBackend
    retrieval: IndexRetrieval
    hybrid: HybridPipeline
    _: KW_ONLY
    quota: int = ISSUE_QUOTA
    memory_quota: int = ISSUE_MEMORY
    prefilter_quota: int = ISSUE_PREFILTER

    def search(self, texts: Sequence[str], *, index: str, language: str, lang: str, filters: Filters | None,
               pool: dict[str, Hit], classifier: LawClassifier | None, memory: QuestionMemory | None,
               graph: CorpusGraph, prefilter: bool, quotas: bool = True,
               allowed: Callable[[Sequence[str]], list[str]] | None = None) -> list[IssueEvidence]:
        """Search every issue, add its finds to ``pool``, and return each issue's evidence.

        With ``quotas`` false the issues are still searched and their ranks recorded, but only
        candidates already in the pool get them (nothing joins): the ablation without quotas.
        ``allowed`` filters memory candidates (the request's filters; the engine filters the rest).
        """
        vectors = (self.retrieval.embedder.embed_queries(list(texts)) if texts
                   else np.zeros((0, 0), dtype=np.float32))
        analyzer = analyzer_for(language)
        out: list[IssueEvidence] = []
        for j, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            evidence = IssueEvidence(text)
            terms = analyzer.tokens(text)
            fused = self.hybrid.filtered(index, text, vector, k=self.quota, filters=filters, lang=lang,
                                         weights=self.retrieval.weights_for(filters))
            for rank, hit in enumerate(fused, start=1):
                _add(pool, hit.doc_id, f"issue{j}", rank, "issue", text, join=quotas)
            evidence.hits = len(fused)
            if classifier is not None:
                section_p = classifier.section_probabilities(terms, vector)
                laws = classifier.laws_from(section_p)
                evidence.laws = [[law, round(p, 6)] for law, p in laws[:KEPT_LAWS] if p > 1e-4]
                order = np.argsort(-section_p)[:KEPT_SECTIONS]
                evidence.sections = {classifier.sections[i]: round(float(section_p[i]), 6) for i in order
                                     if section_p[i] > 1e-4}
                if prefilter:
                    self._prefilter(j, text, vector, laws, evidence.sections, index=index, lang=lang,
                                    filters=filters, pool=pool, graph=graph, join=quotas)
            if memory is not None:
                votes = memory.votes(terms, vector)
                kept = [(d, v) for d, v in votes.items() if d in graph][:KEPT_VOTES]
                evidence.memory = {d: [v.vote, v.best, v.rank] for d, v in kept}
                ids = [d for d, _ in kept[: self.memory_quota]]
                for rank, doc_id in enumerate(allowed(ids) if allowed else ids, start=1):
                    _add(pool, doc_id, f"issue{j}_memory", rank, "issue_memory", text, join=quotas)
            out.append(evidence)
        return out

    def _prefilter(self, j: int, text: str, vector: np.ndarray, laws: Sequence[tuple[str, float]],
                   sections: Mapping[str, float], *, index: str, lang: str, filters: Filters | None,
                   pool: dict[str, Hit], graph: CorpusGraph, join: bool) -> None:
        """The issue's law pass (several laws) and section pass, as for the whole question."""
        passes: list[tuple[str, Filters | None]] = []
        chosen, _ = prefilter_laws(laws)
        if chosen and len(graph.laws()) > 1:
            passes.append(("prefilter", (filters or Filters()).narrowed("law", tuple(chosen))))
        best = prefilter_sections(sections)
        passes.append(("section", section_filter(graph, best, filters) if best else None))
        for kind, narrowed in passes:
            if narrowed is None:
                continue
            hits = self.hybrid.filtered(index, text, vector, k=self.prefilter_quota, filters=narrowed, lang=lang,
                                        weights=self.retrieval.weights_for(narrowed))
            for rank, hit in enumerate(hits, start=1):
                _add(pool, hit.doc_id, f"issue{j}_{kind}", rank, f"issue_{kind}", text, join=join)


def issue_ranks(hit: Hit, issues: int, kind: str = "") -> list[int]:
    """The candidate's ranks in each issue's list of ``kind`` ('' hybrid, 'memory', 'prefilter')."""
    suffix = f"_{kind}" if kind else ""
    return [hit.ranks[key] for j in range(issues) if (key := f"issue{j}{suffix}") in hit.ranks]


RESERVE = 1
"""Places in the first :data:`WINDOW` that each issue's best candidates are sure of (see
:func:`balance`), unless the model folder says otherwise (``lexsearch train`` picks it)."""
RESERVES = (0, 1, 2, 3)
"""The reserves training chooses from."""
WINDOW = 10


def issue_of(hit: Hit, issues: int) -> int | None:
    """The issue a candidate answers: the one whose lists rank it best (``None`` when none found it)."""
    best: tuple[int, int] | None = None
    for j in range(issues):
        for key in (f"issue{j}", f"issue{j}_memory", f"issue{j}_prefilter", f"issue{j}_section"):
            rank = hit.ranks.get(key)
            if rank is not None and (best is None or (rank, j) < best):
                best = (rank, j)
    return best[1] if best is not None else None


def balanced_order(answers: Sequence[int | None], issues: int, *, reserve: int = RESERVE,
                   window: int = WINDOW) -> list[int]:
    """Positions of a ranking (``answers[i]``: the issue its ``i``-th candidate answers) reordered so
    that each issue's ``reserve`` best candidates are in the first ``window`` places, and one issue
    cannot take them all. Everything else keeps its order, and so does the window."""
    if issues < 2 or reserve < 1:
        return list(range(len(answers)))
    chosen: list[int] = []
    taken = [0] * issues
    for i, j in enumerate(answers):
        if j is not None and 0 <= j < issues and taken[j] < reserve:
            taken[j] += 1
            chosen.append(i)
    chosen = chosen[:window]
    picked = set(chosen)
    rest = [i for i in range(len(answers)) if i not in picked]
    head = sorted(chosen + rest[: max(0, window - len(chosen))])
    in_head = set(head)
    return head + [i for i in rest if i not in in_head]


def balance(ranked: Sequence[Hit], issues: int, *, reserve: int = RESERVE, window: int = WINDOW,
            label: str = "") -> list[Hit]:
    """The ranking reordered by :func:`balanced_order`; with ``label``, ``hit.ranks[label]`` is renumbered."""
    order = balanced_order([issue_of(h, issues) for h in ranked], issues, reserve=reserve, window=window)
    out = [ranked[i] for i in order]
    if label:
        for rank, hit in enumerate(out, start=1):
            hit.ranks[label] = rank
    return out


def interleave_answers(whole: Sequence[Hit], answers: Sequence[Sequence[Hit]], *, k: int, label: str) -> list[Hit]:
    """The whole question's ranking and each issue's own answer, interleaved: the whole ranking's first,
    then each issue's first, then the seconds, and so on, each document once; ``k`` hits.

    The hits keep the whole ranking's scores by position (hit ``i`` gets the score the whole ranking
    had at ``i``), so a score-cliff cut sizes the answer as it would have; ``hit.ranks[label]`` is
    the new rank. The whole ranking's hit objects are reused where a document is in it.
    """
    by_id = {h.doc_id: h for h in whole}
    lists = [whole, *answers]
    order: list[Hit] = []
    seen: set[str] = set()
    for rank in range(max(map(len, lists))):
        for ranking in lists:
            if rank < len(ranking) and ranking[rank].doc_id not in seen:
                seen.add(ranking[rank].doc_id)
                order.append(by_id.get(ranking[rank].doc_id, ranking[rank]))
        if len(order) >= k:
            break
    order = order[:k]
    scores = [h.score for h in whole]
    floor = min(scores, default=0.0)
    for i, hit in enumerate(order):
        hit.score = scores[i] if i < len(scores) else floor - (i - len(scores) + 1)
        hit.scores[label] = hit.score
        hit.ranks[label] = i + 1
    return order
