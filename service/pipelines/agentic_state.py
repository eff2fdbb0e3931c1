"""The state of an agentic search, its options and one agent's step, as plain JSON.

:class:`AgenticState` and :class:`StepResult` travel between processes (Celery tasks, Redis), so
everything in them is JSON: ``to_json()`` gives plain dicts and lists, ``from_json()`` rebuilds the
object. :class:`AgenticOptions` reads ``SearchRequest.options`` (strings from the CLI included).

Example::

    state = pipeline.start(request)
    again = AgenticState.from_json(json.loads(json.dumps(state.to_json())))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from service.agents.base import REWRITING_AGENTS, Mode, Rewrite
from service.config import LlmSettings
from service.corpus.model import Filters, Hit, LegalDoc, Provenance
from service.errors import InvalidInput
from service.llm.budget import CallBudget
from service.pipelines.base import SearchRequest, option_flag, option_int
from service.plugins import RERANKERS
from service.rerank.article_classifier import ArticleClassifier
from service.rerank.priors import MemoryVote

# ----- options ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgenticOptions:
    """The request options the agentic pipelines understand (see the shared interface).

    Attributes:
        reranker: learned, llm, cross-encoder, none or auto (llm when an LLM is configured).
        agents: allowed rewriting agents.
        max_rounds: planner rounds, 0..4.
        prefilter: run the law-prefiltered pass (and LLM law prediction when configured).
        hyde: hypothetical passages (LLM mode only).
        citations: citation-graph expansion in the supportive agent (neighbours stay).
        issues: segment a multi-issue question and search each issue (needs ``decompose`` among the agents).
        quotas: let each issue's finds join the pool (off: issues only rank candidates already there).
        cocitation: add the training companions of the best candidates (needs a model folder).
        balance: give each issue's best candidates a place in the first ten.
        issue_answers: answer each issue of a multi-issue question as a question of its own (its
            searches and the reranker, no agent rounds) and interleave those answers with the whole
            question's ranking (docs/AGENTS.md, "Multi-issue questions").
        sections: the section pass of the prefilter for the whole question (the most likely sections'
            articles). Off by default: it lost recall on STARD dev and MRR on COLIEE dev (docs/BENCHMARKS.md,
            "Multi-issue questions"); the issues of a multi-issue question keep their own section passes.
        rerank_depth: a reranker that scores features scores only the pool's first ``rerank_depth`` by
            the hybrid fusion and every candidate another source added (memory, cited articles,
            co-citation, agents); the rest follow in fusion order. 0 = the whole pool. Meant to make
            routing tier 1 cheaper (docs/ROUTING.md).
    """

    reranker: str = "learned"
    agents: tuple[str, ...] = REWRITING_AGENTS
    max_rounds: int = 4
    prefilter: bool = True
    hyde: bool = True
    citations: bool = True
    issues: bool = True
    quotas: bool = True
    cocitation: bool = True
    balance: bool = True
    issue_answers: bool = True
    sections: bool = False
    rerank_depth: int = 0

    @classmethod
    def parse(cls, options: Mapping[str, Any], defaults: AgenticOptions) -> AgenticOptions:
        """Read the known keys of ``options`` (strings from the CLI are accepted); ignore the rest.

        Raises:
            InvalidInput: for a value that cannot be read or an unknown reranker or agent.
        """
        values: dict[str, Any] = {}
        if options.get("reranker") not in (None, ""):
            reranker = str(options["reranker"]).strip()
            if reranker not in RERANKERS.choices():
                raise InvalidInput(RERANKERS.unknown(reranker))
            values["reranker"] = reranker
        if "agents" in options and options["agents"] is not None:
            raw = options["agents"]
            names = [a.strip() for a in (raw.split(",") if isinstance(raw, str) else raw) if str(a).strip()]
            unknown = [a for a in names if a not in REWRITING_AGENTS]
            if unknown:
                raise InvalidInput(f"unknown agents {unknown}; use: {', '.join(REWRITING_AGENTS)}")
            values["agents"] = tuple(dict.fromkeys(names))
        rounds = option_int(options, "max_rounds", None, low=0, high=4)
        if rounds is not None:
            values["max_rounds"] = rounds
        depth = option_int(options, "rerank_depth", None, low=0, high=100_000)
        if depth is not None:
            values["rerank_depth"] = depth
        for name in ("prefilter", "hyde", "citations", "issues", "quotas", "cocitation", "balance",
                     "issue_answers", "sections"):
            if options.get(name) not in (None, ""):
                values[name] = option_flag(options, name)
        return replace(defaults, **values)

    def to_json(self) -> dict[str, Any]:
        return {"reranker": self.reranker, "agents": list(self.agents), "max_rounds": self.max_rounds,
                "prefilter": self.prefilter, "hyde": self.hyde, "citations": self.citations, "issues": self.issues,
                "quotas": self.quotas, "cocitation": self.cocitation, "balance": self.balance,
                "issue_answers": self.issue_answers, "sections": self.sections, "rerank_depth": self.rerank_depth}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgenticOptions:
        return cls(reranker=data["reranker"], agents=tuple(data["agents"]), max_rounds=int(data["max_rounds"]),
                   prefilter=bool(data["prefilter"]), hyde=bool(data["hyde"]), citations=bool(data["citations"]),
                   issues=bool(data.get("issues", True)), quotas=bool(data.get("quotas", True)),
                   cocitation=bool(data.get("cocitation", True)), balance=bool(data.get("balance", True)),
                   issue_answers=bool(data.get("issue_answers", True)), sections=bool(data.get("sections", False)),
                   rerank_depth=int(data.get("rerank_depth", 0)))


# ----- state and steps -------------------------------------------------------------------------


def _hit_to_json(hit: Hit) -> dict[str, Any]:
    return {"id": hit.doc_id, "score": hit.score, "scores": dict(hit.scores), "ranks": dict(hit.ranks),
            "prov": [[p.agent, p.round, p.rank, p.query] for p in hit.provenance]}


def _hit_from_json(data: Mapping[str, Any]) -> Hit:
    return Hit(doc_id=str(data["id"]), score=float(data["score"]),
               scores={k: float(v) for k, v in data["scores"].items()},
               ranks={k: int(v) for k, v in data["ranks"].items()},
               provenance=[Provenance(str(a), int(r), int(k), str(q)) for a, r, k, q in data["prov"]])


@dataclass
class AgenticState:
    """Everything a search has found so far; plain JSON via :meth:`to_json` (for Celery and Redis).

    Attributes:
        request: the request (as JSON) and ``options`` its parsed agentic options.
        language: the analysis language; ``terms`` the question's analysed terms.
        vector: the question embedding (``None`` if it could not be made).
        pool: candidates by document id, each with scores, ranks and provenance.
        round: rounds merged so far; ``used`` the agents of each round; ``new_per_round`` the new
            candidates each round added.
        tried: query texts searched so far.
        law: predicted laws (``LawPrediction.to_trace`` plus ``sections``).
        memory: votes of similar training questions ``{doc_id: [vote, best, rank]}``.
        issues: each searched issue of a multi-issue question (``IssueEvidence.to_json``; empty for one issue).
        cocitation: per article the anchors call for, ``[summed, strongest]`` companion weight.
        features: query features of the planner.
        trace: the growing trace (agents per round, planner decisions, notes).
        llm_calls, llm_tokens, llm_fallbacks: LLM use so far.
        timings: milliseconds per stage.
    """

    request: dict[str, Any]
    options: AgenticOptions
    language: str
    terms: list[str]
    vector: np.ndarray | None
    pool: dict[str, Hit]
    round: int = 0
    used: list[list[str]] = field(default_factory=list)
    new_per_round: list[int] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)
    law: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, list[float]] = field(default_factory=dict)
    issues: list[dict[str, Any]] = field(default_factory=list)
    cocitation: dict[str, list[float]] = field(default_factory=dict)
    features: dict[str, float] = field(default_factory=dict)
    trace: dict[str, Any] = field(default_factory=dict)
    llm_calls: int = 0
    llm_tokens: int = 0
    llm_fallbacks: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    # In-process only (not serialised): the shared LLM budget, fetched documents, the index
    # resources of this query, and the pool's heuristic order (cleared whenever the pool changes).
    budget: CallBudget | None = field(default=None, repr=False, compare=False)
    docs: dict[str, LegalDoc] = field(default_factory=dict, repr=False, compare=False)
    resources: Any = field(default=None, repr=False, compare=False)
    order: list[str] | None = field(default=None, repr=False, compare=False)
    term_weights: dict[str, float] | None = field(default=None, repr=False, compare=False)
    """A long question's BM25 term weights ({} for a short question; None until computed)."""
    article_scores: np.ndarray | None = field(default=None, repr=False, compare=False)
    """The article classifier's score of every training article (see :meth:`scores_of`)."""

    def scores_of(self, classifier: ArticleClassifier) -> np.ndarray:
        """The article classifier's scores for this question, computed once per search (and again for a
        state restored from JSON, which does not carry them)."""
        if self.article_scores is None:
            self.article_scores = classifier.scores(self.terms)
        return self.article_scores

    def search_request(self) -> SearchRequest:
        r = self.request
        filters = _filters_from_json(r["filters"]) if r.get("filters") else None
        return SearchRequest(query=r["query"], index=r["index"], k=int(r["k"]), filters=filters, lang=r["lang"],
                             explain=bool(r["explain"]), qid=r["qid"], options=dict(r["options"]))

    def add_time(self, stage: str, ms: float) -> None:
        self.timings[stage] = round(self.timings.get(stage, 0.0) + ms, 3)

    def llm_budget(self, settings: LlmSettings) -> CallBudget:
        """The query's LLM budget: what the settings allow minus what the search used so far
        (made once and then shared in-process; a resumed state rebuilds it from its counters)."""
        if self.budget is None:
            self.budget = CallBudget(max(0, settings.max_calls_per_query - self.llm_calls),
                                     max(0, settings.max_tokens_per_query - self.llm_tokens))
        return self.budget

    def count_llm(self, traces: Sequence[dict[str, Any]]) -> None:
        """Add LLM call summaries (``LlmOutcome.to_trace``) to the counters."""
        for t in traces:
            if not t:
                continue
            self.llm_calls += int(t.get("calls", 0))
            self.llm_tokens += int(t.get("tokens", 0))
            self.llm_fallbacks += 0 if t.get("ok") else 1

    def law_prediction(self) -> dict[str, float]:
        return {law: float(p) for law, p in self.law.get("laws", [])}

    def memory_votes(self) -> dict[str, MemoryVote]:
        return {d: MemoryVote(float(v), float(b), int(r)) for d, (v, b, r) in self.memory.items()}

    def to_json(self) -> dict[str, Any]:
        return {"request": self.request, "options": self.options.to_json(), "language": self.language,
                "terms": self.terms, "vector": self.vector.tolist() if self.vector is not None else None,
                "pool": [_hit_to_json(h) for h in self.pool.values()], "round": self.round, "used": self.used,
                "new_per_round": self.new_per_round, "tried": self.tried, "law": self.law, "memory": self.memory,
                "issues": self.issues, "cocitation": self.cocitation, "features": self.features, "trace": self.trace,
                "llm_calls": self.llm_calls, "llm_tokens": self.llm_tokens, "llm_fallbacks": self.llm_fallbacks,
                "timings": self.timings}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgenticState:
        vector = data.get("vector")
        pool = [_hit_from_json(h) for h in data["pool"]]
        return cls(request=dict(data["request"]), options=AgenticOptions.from_json(data["options"]),
                   language=data["language"], terms=list(data["terms"]),
                   vector=np.asarray(vector, dtype=np.float32) if vector is not None else None,
                   pool={h.doc_id: h for h in pool}, round=int(data["round"]), used=[list(u) for u in data["used"]],
                   new_per_round=[int(n) for n in data["new_per_round"]], tried=list(data["tried"]),
                   law=dict(data["law"]), memory={k: list(v) for k, v in data["memory"].items()},
                   issues=[dict(i) for i in data.get("issues", [])],
                   cocitation={k: list(v) for k, v in data.get("cocitation", {}).items()},
                   features={k: float(v) for k, v in data["features"].items()}, trace=dict(data["trace"]),
                   llm_calls=int(data["llm_calls"]), llm_tokens=int(data["llm_tokens"]),
                   llm_fallbacks=int(data["llm_fallbacks"]),
                   timings={k: float(v) for k, v in data["timings"].items()})


def _filters_from_json(data: Mapping[str, Any]) -> Filters:
    terms = {k: list(v) for k, v in data.items() if k not in ("date_from", "date_to")}
    return Filters.of(date_from=data.get("date_from"), date_to=data.get("date_to"), **terms)


@dataclass
class StepResult:
    """One agent's work in one round: its rewrites and the pruned hits of each.

    Attributes:
        agent, round: who and when.
        mode: ``offline`` or ``llm``; ``fallback`` why the LLM was not used.
        rewrites: the rewrites, and ``hits`` the pruned hits of each (same order).
        scores: per rewrite, the z-scored retrieval score of every one of its (up to 30) hits; kept as
            evidence on candidates already in the pool, which do not join again.
        llm: LLM call summaries (with their calls and tokens); ``discarded`` rewrites rejected by the
            vocabulary check.
        ms: wall time of the step.
    """

    agent: str
    round: int
    mode: str = Mode.OFFLINE.value
    fallback: str = ""
    rewrites: list[Rewrite] = field(default_factory=list)
    hits: list[list[Hit]] = field(default_factory=list)
    scores: list[dict[str, float]] = field(default_factory=list)
    llm: list[dict[str, Any]] = field(default_factory=list)
    discarded: list[dict[str, str]] = field(default_factory=list)
    ms: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "round": self.round, "mode": self.mode, "fallback": self.fallback,
                "rewrites": [r.to_json() for r in self.rewrites],
                "hits": [[_hit_to_json(h) for h in hits] for hits in self.hits], "scores": self.scores,
                "llm": self.llm,
                "discarded": self.discarded, "ms": self.ms}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepResult:
        return cls(agent=data["agent"], round=int(data["round"]), mode=data["mode"], fallback=data["fallback"],
                   rewrites=[Rewrite.from_json(r) for r in data["rewrites"]],
                   hits=[[_hit_from_json(h) for h in hits] for hits in data["hits"]],
                   scores=[{k: float(v) for k, v in d.items()} for d in data.get("scores", [])], llm=list(data["llm"]),
                   discarded=list(data["discarded"]), ms=float(data["ms"]))


def jsonable_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Request options as JSON values (other objects become strings)."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if isinstance(value, str | int | float | bool) or value is None:
            out[key] = value
        elif isinstance(value, list | tuple):
            out[key] = [str(v) for v in value]
        else:
            out[key] = str(value)
    return out
