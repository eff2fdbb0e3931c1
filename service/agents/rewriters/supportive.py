"""The supportive-law agent: the provisions the main ones depend on.

Offline it walks the citation graph from the best pool members: the articles they cite
(``依照本法第X条``, ``gemäss Art.``, ``§``), the articles citing them, and their neighbours in the
same law (definitions and consequences usually sit next to the rule). These candidates need no
retrieval; the light reranker keeps the best ten. The LLM rewriter asks for queries about
procedure, definitions, deadlines and remedies.

Example::

    out = OfflineSupportiveRewriter().rewrite(query, evidence)
    out.rewrites[0].doc_ids     # ('17085', '17079', ...)
"""

from __future__ import annotations

from service.agents.base import AgentName, Evidence, OfflineRewriter, Rewrite, RewriteOutput
from service.agents.rewriters._llm import LlmRewriter
from service.corpus.model import Query
from service.llm.client import LlmClient

SEEDS = 5
NEIGHBOUR_SEEDS = 3
MAX_CANDIDATES = 30


def expand_citations(evidence: Evidence, *, seeds: int = SEEDS, neighbour_seeds: int = NEIGHBOUR_SEEDS,
                     neighbours: bool = True, limit: int = MAX_CANDIDATES) -> list[str]:
    """Cited, citing and neighbouring articles of the best evidence documents, seeds excluded."""
    graph = evidence.graph
    if graph is None:
        return []
    seed_ids = [e.doc.id for e in evidence.top[:seeds]]
    found: dict[str, None] = {}
    for doc_id in seed_ids:
        for target in graph.cites(doc_id):
            found.setdefault(target, None)
    for doc_id in seed_ids:
        for source in graph.cited_by(doc_id)[:10]:
            found.setdefault(source, None)
    if neighbours:
        for doc_id in seed_ids[:neighbour_seeds]:
            for near in graph.neighbours(doc_id):
                found.setdefault(near, None)
    excluded = set(seed_ids)
    return [d for d in found if d not in excluded][:limit]


class OfflineSupportiveRewriter(OfflineRewriter):
    """Citation-graph and neighbour expansion of the best pool members."""

    agent = AgentName.SUPPORTIVE.value

    def __init__(self, *, neighbours: bool = True) -> None:
        self.neighbours = neighbours

    def rewrite(self, query: Query, evidence: Evidence) -> RewriteOutput:
        ids = expand_citations(evidence, neighbours=self.neighbours)
        if not ids:
            return RewriteOutput([])
        seeds = ", ".join(e.doc.citation for e in evidence.top[:SEEDS])
        return RewriteOutput([Rewrite(text=f"cited by, citing or next to: {seeds}", agent=self.agent,
                                      round=evidence.round, lexical=False, dense=False, doc_ids=tuple(ids))])


class LlmSupportiveRewriter(LlmRewriter):
    """Queries for procedural and supporting provisions, by the LLM; graph expansion on failure."""

    def __init__(self, client: LlmClient, offline: OfflineSupportiveRewriter) -> None:
        super().__init__(AgentName.SUPPORTIVE.value, client, offline)
