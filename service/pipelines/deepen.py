"""A request for more hits than the retrieval depth keeps the ranking's head as a shallower request has it.

Every pipeline retrieves ``max(k, retrieval.depth)`` candidates per retriever before it fuses and
reranks, and its features are computed over those lists. Up to the depth (100 by default) the first
hits therefore do not depend on ``k``; past it they would: a deeper first retrieval changes the fusion's
normalisation and the pools the reranker was trained on (STARD dev, agentic R@10 0.7194 at ``k`` = 100
against 0.7152 at 400; docs/BENCHMARKS.md, "The proxy's ratio at the served depth"). So a user who asks
for 400 hits would get other first ten than one who asks for 10.

:func:`deepened` answers such a request with two searches: the head is the ranking at the depth, and
the hits of a search at ``k`` that the head lacks follow it, in their order. The answer set (a
score-cliff cut) is the head's. It costs a second search, for deep requests only.

Example::

    response = deepened(pipeline.run, SearchRequest("Kaution", index="swiss", k=400), depth=100)
    response.trace["deepened"]   # {'depth': 100, 'k': 400, 'head': 100, 'tail': 300}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from service.pipelines.base import SearchRequest, SearchResponse, summed_timings

STAGE = "deepened"
"""The name of the step in the trace and in a tail hit's ``scores`` (the score its own search gave it)."""


def deepened(run: Callable[[SearchRequest], SearchResponse], request: SearchRequest, *,
             depth: int) -> SearchResponse:
    """``run(request)``, except that when ``request.k`` exceeds ``depth`` the first hits are those of
    ``run`` at ``k = depth`` (see the module docstring). Tail hits get scores no higher than the hit
    before them, so the scores still fall along the ranking; each keeps its own in ``scores["deepened"]``."""
    if depth < 1 or request.k <= depth:
        return run(request)
    head = run(replace(request, k=depth))
    # copies: a pipeline may reuse cached hit objects and rescore them in the second search
    hits = [replace(hit, scores=dict(hit.scores), ranks=dict(hit.ranks)) for hit in head.hits]
    deep = run(request)
    placed = {hit.doc_id for hit in hits}
    floor = min((hit.score for hit in hits), default=0.0)
    for hit in deep.hits:
        if len(hits) == request.k:
            break
        if hit.doc_id in placed:
            continue
        placed.add(hit.doc_id)
        floor = min(floor, hit.score)
        hits.append(replace(hit, score=floor, scores={**hit.scores, STAGE: hit.score}))
    trace = dict(head.trace)
    trace[STAGE] = {"depth": depth, "k": request.k, "head": len(head.hits), "tail": len(hits) - len(head.hits)}
    timings = summed_timings((head, deep))
    if timings:
        trace["timings_ms"] = timings
    return replace(head, hits=hits, trace=trace)
