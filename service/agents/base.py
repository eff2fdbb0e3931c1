"""What the query-understanding agents share: rewrites, the evidence they see, and their protocols.

A *rewriter* turns the question (plus what the search has found so far) into new ways of
searching: a text query, weighted analysed terms, a query vector, or seed documents to expand
along the citation graph. A *planner* picks which rewriters run in the next round. Every role
has an offline implementation and an LLM one (``service.agents.rewriters.<role>``).

Example::

    out = rewriter.rewrite(query, evidence)
    for rw in out.rewrites:
        rw.text, rw.terms, rw.agent, rw.round
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

import numpy as np

from service.corpus.model import LegalDoc, Query

if TYPE_CHECKING:
    from service.agents.vocabulary import VocabularyCheck
    from service.corpus.graph import CorpusGraph
    from service.llm.budget import CallBudget


class AgentName(enum.StrEnum):
    """The five rewriting agents (after LegalMALR), plus HyDE in LLM mode."""

    TERMINOLOGY = "terminology"
    CONDITIONS = "conditions"
    DECOMPOSE = "decompose"
    SUPPORTIVE = "supportive"
    REPAIR = "repair"
    HYDE = "hyde"


REWRITING_AGENTS: tuple[str, ...] = tuple(a.value for a in AgentName if a is not AgentName.HYDE)
"""The agents a request may allow through ``options["agents"]``."""


class Mode(enum.StrEnum):
    """How a step was produced."""

    OFFLINE = "offline"
    LLM = "llm"


@dataclass(frozen=True)
class Rewrite:
    """One new way of searching, produced by one agent in one round.

    Attributes:
        text: the query text (shown in traces; embedded for kNN when ``dense`` is true).
        agent: the agent that wrote it.
        round: 1-based round.
        terms: analysed terms with weights; when set, BM25 uses them instead of analysing ``text``.
        lexical: whether to run BM25 (on ``terms``, else on ``text``).
        dense: whether to run kNN on ``text`` (or on ``vector``).
        vector: a ready query vector (e.g. from the query adapter); implies kNN without embedding.
        doc_ids: seed documents found without retrieval (citation-graph expansion).
    """

    text: str
    agent: str
    round: int
    terms: Mapping[str, float] | None = None
    lexical: bool = True
    dense: bool = True
    vector: np.ndarray | None = field(default=None, compare=False)
    doc_ids: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A plain-JSON form (vectors as lists)."""
        return {"text": self.text, "agent": self.agent, "round": self.round,
                "terms": dict(self.terms) if self.terms is not None else None, "lexical": self.lexical,
                "dense": self.dense,
                "vector": self.vector.tolist() if self.vector is not None else None,
                "doc_ids": list(self.doc_ids)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Rewrite:
        vector = data.get("vector")
        return cls(text=str(data["text"]), agent=str(data["agent"]), round=int(data["round"]),
                   terms=dict(data["terms"]) if data.get("terms") is not None else None,
                   lexical=bool(data.get("lexical", True)), dense=bool(data.get("dense", True)),
                   vector=np.asarray(vector, dtype=np.float32) if vector is not None else None,
                   doc_ids=tuple(data.get("doc_ids") or ()))


@dataclass
class RewriteOutput:
    """What one agent produced in one round.

    Attributes:
        rewrites: the rewrites (may be empty: nothing to add).
        mode: ``offline`` or ``llm`` (an LLM rewriter that fell back reports ``offline``).
        fallback: why the LLM path was not used ('' when it was, or when offline by design).
        llm: the :meth:`LlmOutcome.to_trace` summaries of the LLM calls made.
        discarded: rewrites rejected by the vocabulary guard, with the reason.
    """

    rewrites: list[Rewrite]
    mode: str = Mode.OFFLINE.value
    fallback: str = ""
    llm: list[dict[str, Any]] = field(default_factory=list)
    discarded: list[dict[str, str]] = field(default_factory=list)


@dataclass
class EvidenceDoc:
    """A pool member shown to a rewriter: the document and its current score and rank."""

    doc: LegalDoc
    score: float
    rank: int


@dataclass
class Evidence:
    """What a rewriter may use besides the question.

    Attributes:
        round: the 1-based round being planned.
        language: the question's analysis language.
        terms: the question's analysed terms.
        query_weights: BM25 weights of a long question's terms (``service.retrieval.long_query``;
            ``None`` for a short question: each term counts as often as it occurs).
        top: the current best pool members, best first (documents fetched).
        law_probabilities: predicted laws with probabilities, most likely first.
        tried: query texts already searched (rewriters avoid repeating them).
        query_vector: the question's embedding (``None`` when the probe had no kNN).
        graph: the corpus structure (citations, neighbours) of the index.
        vocabulary: the known-term check of the index.
        budget: the query's LLM call budget (``None`` offline).
        issues: the question's issues as the search segmented them at the start (the LLM's
            sub-questions when it decomposed the question); empty for a question of one issue.
    """

    round: int
    language: str
    terms: Sequence[str]
    top: list[EvidenceDoc]
    law_probabilities: list[tuple[str, float]] = field(default_factory=list)
    tried: Sequence[str] = ()
    query_vector: np.ndarray | None = None
    graph: CorpusGraph | None = None
    vocabulary: VocabularyCheck | None = None
    budget: CallBudget | None = None
    query_weights: dict[str, float] | None = None
    issues: Sequence[str] = ()

    def base_weights(self) -> dict[str, float]:
        """The question's BM25 term weights that lexical rewrites add their terms to."""
        return dict(self.query_weights) if self.query_weights else dict(Counter(self.terms))


@runtime_checkable
class Rewriter(Protocol):
    """One agent: the question plus evidence in, rewrites out. Never raises for LLM failures.

    Every agent has an offline implementation, built by ``Offline<Role>Rewriter.from_models(models)``,
    and an LLM one, ``Llm<Role>Rewriter(client, offline)``, that falls back to it; both are named in
    :data:`service.plugins.REWRITERS`.
    """

    agent: str

    def rewrite(self, query: Query, evidence: Evidence) -> RewriteOutput:
        """New searches for ``query``; an empty list when the agent has nothing to add."""


class TrainedParts(Protocol):
    """The trained parts offline agents are built from: a :class:`service.models.TrainedModels`
    (typed loosely here, because the model folder's types sit above the agents)."""

    term_mapping: Any
    adapter: Any
    vocabulary: Any
    planner: Any
    law_classifier: Any
    language: str


class OfflineRewriter:
    """Base of the offline rewriters: those that use no trained part are built without one."""

    @classmethod
    def from_models(cls, models: TrainedParts | None) -> Self:
        """The rewriter for a model folder (``None`` = untrained)."""
        return cls()


@dataclass
class PlanView:
    """What a planner sees of the search state.

    Attributes:
        question: the question.
        language: its analysis language.
        round: rounds done so far.
        max_rounds: the request's limit.
        allowed: agents the request allows.
        used: agents run so far, per round.
        new_per_round: new candidates each finished round added.
        features: query and pool statistics (see :mod:`service.agents.planner`).
        top: a short summary of the best hits (for the LLM planner).
    """

    question: str
    language: str
    round: int
    max_rounds: int
    allowed: Sequence[str]
    used: list[list[str]]
    new_per_round: list[int]
    features: dict[str, float]
    top: list[dict[str, str]] = field(default_factory=list)


@runtime_checkable
class Planner(Protocol):
    """Decides the agents of the next round, or ``None`` to stop."""

    def plan(self, view: PlanView, budget: CallBudget | None = None) -> PlanDecision:
        """The next round's agents (``agents=None`` = stop), with how the decision was made."""


@dataclass
class PlanDecision:
    """A planner's answer: the agents of the next round (``None`` = stop) and its provenance."""

    agents: list[str] | None
    mode: str = Mode.OFFLINE.value
    reason: str = ""
    fallback: str = ""
    llm: dict[str, Any] | None = None
