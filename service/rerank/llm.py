"""The LLM zero-shot reranker: the question and at most 20 candidates in, a JSON list of ids out.

Candidates reach the model as quoted data (:func:`quote_documents`), never as instructions. The
answer must be ``{"ids": [...]}`` with ids from the candidate set only (an id outside it rejects
the answer, which is asked for again and then falls back). The LLM order goes first; candidates
it left out, and the rest of the pool, follow in the fallback (learned) order. On any failure the
fallback order is returned and the reason is noted for the trace.

Example::

    reranker = LlmReranker(client)
    ranked = reranker.rerank(query, pool, k=10, context=RerankContext(docs=docs, fallback=learned_ids, budget=b))
    context.notes      # {'mode': 'llm', 'llm': {...}} or {'mode': 'offline', 'fallback': 'timeout', ...}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from service.corpus.model import Hit, Query
from service.llm.budget import CallBudget
from service.llm.client import LlmClient
from service.llm.prompt import quote_documents
from service.llm.schemas import OUTPUT_SCHEMAS
from service.rerank.base import RerankContext, RerankerParts, in_order

MAX_CANDIDATES = 20
TEXT_CHARS = 600


def only_ids_from(candidates: Sequence[str]):  # type: ignore[no-untyped-def]
    """A ``validate`` callable: rejects answers naming an id outside ``candidates``."""
    allowed = set(candidates)

    def check(value: dict[str, Any]) -> None:
        unknown = [i for i in value["ids"] if i not in allowed]
        if unknown:
            raise ValueError(f"ids not among the candidates: {unknown[:5]}")

    return check


class LlmReranker:
    """Reorders the best ``candidates`` of the fallback order with the LLM."""

    name = "llm"
    uses_features = False
    reads_documents = True

    def __init__(self, client: LlmClient, *, candidates: int = MAX_CANDIDATES) -> None:
        self.client = client
        self.candidates = min(candidates, MAX_CANDIDATES)

    @classmethod
    def from_parts(cls, parts: RerankerParts) -> LlmReranker | None:
        """The LLM reranker on the runtime's client (``None`` offline)."""
        return cls(parts.llm, candidates=parts.llm_candidates) if parts.llm is not None else None

    def rerank(self, query: Query, hits: Sequence[Hit], *, k: int, context: RerankContext | None = None) -> list[Hit]:
        context = context or RerankContext()
        base = context.fallback or [h.doc_id for h in hits]
        present = {h.doc_id for h in hits}
        top = [d for d in base if d in present][: self.candidates]
        docs = [{"id": d, "citation": context.docs[d].citation if d in context.docs else "",
                 "text": context.docs[d].text if d in context.docs else ""} for d in top]
        outcome = self.client.complete_json(
            "rerank", {"question": query.text, "candidates": quote_documents(docs, max_chars=TEXT_CHARS),
                       "k": str(min(k, len(top)))},
            OUTPUT_SCHEMAS["rerank"], budget=context.budget or CallBudget(0, 0), validate=only_ids_from(top))
        context.notes["llm"] = outcome.to_trace()
        if not outcome.ok:
            context.notes.update(mode="offline", fallback=outcome.fallback_reason)
            return in_order(hits, base, self.name, k)
        context.notes["mode"] = "llm"
        return in_order(hits, list(outcome.value["ids"]) + base, self.name, k)
