"""What every LLM rewriter shares: the prompt call, the vocabulary guard and the offline fallback."""

from __future__ import annotations

import logging
from typing import Any

from service.agents.base import Evidence, Mode, Rewrite, RewriteOutput, Rewriter
from service.agents.vocabulary import UNSEEN_LIMIT, unseen_share
from service.analysis.chain import analyzer_for
from service.corpus.model import Query
from service.llm.budget import CallBudget
from service.llm.client import LlmClient
from service.llm.prompt import quote_documents
from service.llm.schemas import OUTPUT_SCHEMAS

log = logging.getLogger(__name__)

EVIDENCE_DOCS = 5
EVIDENCE_CHARS = 400


def evidence_block(evidence: Evidence, *, docs: int = EVIDENCE_DOCS) -> str:
    """The best pool members as quoted data for a prompt (id, citation, start of the text)."""
    return quote_documents([{"id": e.doc.id, "citation": e.doc.citation, "text": e.doc.text}
                            for e in evidence.top[:docs]], max_chars=EVIDENCE_CHARS)


def guard(texts: list[str], agent: str, round_: int, evidence: Evidence
          ) -> tuple[list[Rewrite], list[dict[str, str]]]:
    """Keep the LLM queries whose terms the corpus mostly knows; the rest are discarded with a reason.

    Also drops empty and repeated queries and those already tried.
    """
    kept: list[Rewrite] = []
    discarded: list[dict[str, str]] = []
    analyzer = analyzer_for(evidence.language)
    seen = {t.strip().casefold() for t in evidence.tried}
    for text in texts:
        text = " ".join(text.split())
        key = text.casefold()
        if not text or key in seen:
            continue
        seen.add(key)
        terms = analyzer.tokens(text)
        if not terms:
            discarded.append({"query": text[:200], "reason": "no searchable terms"})
            continue
        if evidence.vocabulary is not None:
            share = unseen_share(evidence.vocabulary, terms)
            if share > UNSEEN_LIMIT:
                log.info("discarded %s rewrite with %.0f%% unseen terms: %r", agent, share * 100, text[:120])
                discarded.append({"query": text[:200], "reason": f"{share:.0%} of its terms are not in the corpus"})
                continue
        kept.append(Rewrite(text=text, agent=agent, round=round_))
    return kept, discarded


class LlmRewriter:
    """An LLM rewriter for one role, falling back to an offline rewriter on any failure.

    Args:
        agent: the agent name (``terminology``, ``conditions``, ``decompose``, ``supportive``).
        client: the LLM client.
        offline: the rewriter used when the LLM fails, is over budget, or all its queries are discarded.
        max_queries: at most this many LLM queries are kept.
    """

    def __init__(self, agent: str, client: LlmClient, offline: Rewriter, *, max_queries: int = 3) -> None:
        self.agent = agent
        self.role = f"rewrite_{agent}"
        self.client = client
        self.offline = offline
        self.max_queries = max_queries

    def query_limit(self, evidence: Evidence) -> int:
        """How many of the LLM's queries are kept."""
        return self.max_queries

    def variables(self, query: Query, evidence: Evidence) -> dict[str, str]:
        """The prompt variables of this role."""
        return {"question": query.text, "language": evidence.language or "the question's language",
                "evidence": evidence_block(evidence)}

    def rewrite(self, query: Query, evidence: Evidence) -> RewriteOutput:
        budget = evidence.budget or CallBudget(0, 0)
        outcome = self.client.complete_json(self.role, self.variables(query, evidence), OUTPUT_SCHEMAS[self.role],
                                            budget=budget)
        trace: list[dict[str, Any]] = [outcome.to_trace()]
        if not outcome.ok:
            return self._fallback(query, evidence, outcome.fallback_reason, trace, [])
        queries = list(outcome.value["queries"])[: self.query_limit(evidence)]
        kept, discarded = guard(queries, self.agent, evidence.round, evidence)
        if not kept and discarded:
            return self._fallback(query, evidence, "all LLM queries discarded by the vocabulary check", trace,
                                  discarded)
        return RewriteOutput(kept, mode=Mode.LLM.value, llm=trace, discarded=discarded)

    def _fallback(self, query: Query, evidence: Evidence, reason: str, trace: list[dict[str, Any]],
                  discarded: list[dict[str, str]]) -> RewriteOutput:
        out = self.offline.rewrite(query, evidence)
        out.mode = Mode.OFFLINE.value
        out.fallback = reason
        out.llm = trace + out.llm
        out.discarded = discarded + out.discarded
        return out
