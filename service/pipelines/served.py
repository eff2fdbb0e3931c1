"""A pipeline as the entry points (CLI, API, jobs, ``lexsearch eval``) serve it.

Two steps wrap the named pipeline, each in its own module:

1. an index of statutes and decisions is searched one group at a time and the rankings merged
   (:mod:`service.pipelines.kinds`);
2. a request for more hits than ``retrieval.depth`` keeps the first hits of a request that is not
   deeper (:mod:`service.pipelines.deepen`).

:meth:`~service.pipelines.build.Runtime.pipeline` gives the named pipeline without them, for pipelines
built of others and for training.

Example::

    served = runtime.search_pipeline("hybrid")                 # a ServedPipeline
    request = SearchRequest("theft by a public servant", index="aila", k=400)
    served.run(request)           # statutes and decisions merged; the first 100 as a request for 100 has them
    served.runs_whole(request)    # True: a job runs it whole, not served.inner step by step
"""

from __future__ import annotations

from service.backends.base import SearchBackend
from service.pipelines.base import Pipeline, SearchRequest, SearchResponse
from service.pipelines.deepen import deepened
from service.pipelines.kinds import groups_to_balance, run_by_group


class ServedPipeline:
    """The pipeline ``inner`` with kind balancing and deepening around it.

    Args:
        inner: the named pipeline (what a job runs step by step when :meth:`runs_whole` is false).
        backend: where the index's kinds are read.
        balance_kinds: ``retrieval.balance_kinds``; false, every request searches the index as one corpus.
        depth: ``retrieval.depth``; a request for more hits keeps the head a request for ``depth`` has;
            0 = off.
    """

    def __init__(self, inner: Pipeline, backend: SearchBackend, *, balance_kinds: bool = True,
                 depth: int = 0) -> None:
        self.inner = inner
        self.name = inner.name
        self.backend = backend
        self.balance_kinds = balance_kinds
        self.depth = depth

    def groups_to_balance(self, request: SearchRequest) -> dict[str, tuple[str, ...]]:
        """The kind groups ``request`` is searched in one by one
        (:func:`~service.pipelines.kinds.groups_to_balance`)."""
        return groups_to_balance(self.backend, request, enabled=self.balance_kinds)

    def runs_whole(self, request: SearchRequest) -> bool:
        """Whether ``request`` needs more than one run of :attr:`inner` (groups to balance, or a request
        deeper than :attr:`depth`): a job then runs :meth:`run` whole, not :attr:`inner` step by step."""
        return bool(self.groups_to_balance(request)) or 0 < self.depth < request.k

    def run(self, request: SearchRequest) -> SearchResponse:
        """Search: by kind group where the index has several, deepened past :attr:`depth`."""
        return deepened(self._run_by_group, request, depth=self.depth)

    def _run_by_group(self, request: SearchRequest) -> SearchResponse:
        return run_by_group(self.inner, request, self.groups_to_balance(request))
