"""What every pipeline takes and returns: :class:`SearchRequest` in, :class:`SearchResponse` out.

The same pipeline object serves ``lexsearch search``, ``lexsearch eval``, ``POST /v1/search`` and the
Celery job; only the entry point differs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from service.analysis.chain import LANGUAGES
from service.config import parse_flag
from service.corpus.model import KIND_GROUPS, DocKind, Filters, Hit, Query
from service.embeddings.base import Embedder
from service.errors import InvalidInput
from service.retrieval.long_query import LongQuery
from service.retrieval.weights import DEFAULT_WEIGHTS, FusionWeights

MAX_K = 1000


@dataclass(frozen=True)
class SearchRequest:
    """One search.

    Args:
        query: the question, in any supported language.
        index: the index (or alias) to search.
        k: how many results to return (1..1000).
        filters: metadata restrictions applied inside the retrievers.
        lang: the question's language ('' = detect).
        explain: include the full trace in the response.
        qid: an id for logs and run files.
        options: pipeline-specific switches (e.g. ``{"reranker": "none"}``).
    """

    query: str
    index: str
    k: int = 10
    filters: Filters | None = None
    lang: str = ""
    explain: bool = False
    qid: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    def validated(self, max_chars: int) -> SearchRequest:
        """Check the request; raise :class:`InvalidInput` with a clear message when it is bad."""
        if not isinstance(self.query, str) or not self.query.strip():
            raise InvalidInput("the query is empty; ask a question in words", code="empty_query")
        if len(self.query) > max_chars:
            raise InvalidInput(too_long_message(len(self.query), max_chars), code="query_too_long")
        if not 1 <= self.k <= MAX_K:
            raise InvalidInput(f"k must be between 1 and {MAX_K}, got {self.k}")
        if not self.index:
            raise InvalidInput("no index given")
        if self.lang and self.lang not in LANGUAGES:
            raise InvalidInput(f"unknown question language {self.lang!r}; use one of {', '.join(LANGUAGES)}, "
                               "or leave it out to have it detected", code="invalid_request")
        for name, values in self.filters.terms if self.filters else ():
            allowed = CLOSED_FILTER_VALUES.get(name, ())
            unknown = [v for v in values if v not in allowed] if allowed else []
            if unknown:
                raise InvalidInput(f"unknown value {unknown[0]!r} in the {name} filter; use one of "
                                   f"{', '.join(allowed)}", code="invalid_filter")
        return self


CLOSED_FILTER_VALUES: dict[str, tuple[str, ...]] = {"lang": LANGUAGES, "kind": tuple(k.value for k in DocKind)}
"""Filter fields whose values come from a fixed list (as the API's schema lists them)."""


def too_long_message(chars: int, max_chars: int) -> str:
    """What a question over the length limit is told (questions are refused, never cut)."""
    return (f"the query has {chars} characters; the limit is {max_chars} (retrieval.max_query_chars). "
            "Nothing was searched: questions are never cut, so send the facts and the question within the limit.")


def check_query_lengths(queries: Sequence[Query], max_chars: int) -> None:
    """Refuse a question set holding a question over the limit, before any long work starts.

    Raises:
        InvalidInput: naming the longest offenders (code ``query_too_long``).
    """
    over = sorted(((len(q.text), q.qid) for q in queries if len(q.text) > max_chars), reverse=True)
    if over:
        named = ", ".join(f"{qid or '?'} ({chars} characters)" for chars, qid in over[:5])
        more = f" and {len(over) - 5} more" if len(over) > 5 else ""
        raise InvalidInput(f"{len(over)} question(s) exceed the limit of {max_chars} characters "
                           f"(retrieval.max_query_chars): {named}{more}. Questions are never cut; raise the "
                           "limit (LEXSEARCH_RETRIEVAL_MAX_QUERY_CHARS) or shorten them.", code="query_too_long")


@dataclass
class SearchResponse:
    """Ranked hits plus the trace of how they were found.

    ``hits`` is the ranking (at most ``k``); ``returned`` is how many of them form the answer
    set after a score-cliff cut (``None`` = no cut, all of them).
    """

    hits: list[Hit]
    trace: dict[str, Any] = field(default_factory=dict)
    returned: int | None = None

    @property
    def answer(self) -> list[Hit]:
        return self.hits if self.returned is None else self.hits[: self.returned]


def summed_timings(responses: Iterable[SearchResponse]) -> dict[str, float]:
    """The stage timings (``trace["timings_ms"]``) of several searches that answer one request, added
    up stage by stage (entries that are no numbers are left out)."""
    timings: dict[str, float] = {}
    for response in responses:
        for stage, ms in (response.trace.get("timings_ms") or {}).items():
            if isinstance(ms, (int, float)):
                timings[stage] = round(timings.get(stage, 0.0) + ms, 3)
    return timings


def tier_of(trace: dict[str, Any]) -> int | None:
    """The routing tier recorded in a trace (``None`` for pipelines that do not route)."""
    routing = trace.get("routing")
    tier = routing.get("tier") if isinstance(routing, dict) else trace.get("tier")
    return tier if isinstance(tier, int) else None


@dataclass(frozen=True)
class IndexRetrieval:
    """What searching one index takes besides the backend: the embedder the index was built with,
    the weights of its hybrid fusion (see :mod:`service.retrieval.weights`), and whether its articles
    have headings (the index metadata's ``sections``, recorded by :func:`service.indexing.index_documents`).

    An index of statutes and decisions also has label-free weights for each group
    (``group_weights``, by :data:`~service.corpus.model.KIND_GROUPS` name): a search restricted to one
    group fuses with its group's weights (:meth:`weights_for`)."""

    embedder: Embedder
    weights: FusionWeights = DEFAULT_WEIGHTS
    sections: bool = False
    group_weights: Mapping[str, FusionWeights] = field(default_factory=dict)

    def weights_for(self, filters: Filters | None) -> FusionWeights:
        """The fusion weights of a search under ``filters``: those of the group its ``kind`` filter falls
        in, when it falls in one and that group has weights of its own; else the index's."""
        kinds = filters.values("kind") if filters is not None else None
        if kinds and self.group_weights:
            for name, members in KIND_GROUPS.items():
                if set(kinds) <= set(members) and name in self.group_weights:
                    return self.group_weights[name]
        return self.weights


RetrievalOf = Callable[[str], IndexRetrieval]
"""Index name -> :class:`IndexRetrieval` (:meth:`Runtime.retrieval <service.pipelines.build.Runtime.retrieval>`)."""


@dataclass
class Probe:
    """The result of one side-by-side BM25 + kNN call (``vector``: the query embedding, when made)."""

    bm25: list[Hit]
    knn: list[Hit]
    vector: np.ndarray | None
    weights: FusionWeights = DEFAULT_WEIGHTS
    """The fusion weights of the index searched (:mod:`service.retrieval.weights`)."""
    term_weights: dict[str, float] | None = None
    """The BM25 term weights of a long question (``None``: BM25 analysed the question's text)."""
    long_query: LongQuery | None = None
    """A long question read as passages and question proper (:mod:`service.retrieval.long_query`)."""
    sections: dict[str, str] | None = None
    """The heading section of each candidate that has one (``None``: the fusion shares no section evidence)."""
    knn_feedback: int = 0
    """How many first BM25 hits moved the kNN side's query (0: kNN searched with ``vector`` itself)."""
    depth: int = 0
    """How many hits each retriever was asked for (0: unknown); a shorter BM25 list holds every match
    (:func:`service.retrieval.weights.fuse`)."""


@runtime_checkable
class Pipeline(Protocol):
    """Anything that answers a :class:`SearchRequest`.

    The built-in pipelines are named in :data:`service.plugins.PIPELINES`; two capabilities are
    declared as protocols of their own, and callers ask ``isinstance`` for them:
    :class:`ProbeReusingPipeline` and :class:`StepwisePipeline`.
    """

    name: str

    def run(self, request: SearchRequest) -> SearchResponse:
        """Search; raises :class:`~service.errors.LexsearchError` subclasses for bad input or engines."""


@runtime_checkable
class ProbeReusingPipeline(Pipeline, Protocol):
    """A pipeline that can start from a BM25 + kNN probe already made (the routed pipeline's), so the
    retrievers run once per question."""

    def run_with_probe(self, request: SearchRequest, probe: Probe) -> SearchResponse:
        """Like :meth:`Pipeline.run`, starting from ``probe`` (made for the same query and filters)."""


@runtime_checkable
class StepwisePipeline(Pipeline, Protocol):
    """A pipeline whose search runs as steps, so the job workers can spread a round's rewrites over
    tasks: ``start → (plan → rewrite × agents → merge)* → finish``. States and step results travel
    between processes as JSON (``to_json`` / ``from_json``)."""

    def start(self, request: SearchRequest) -> Any:
        """The first state of a search."""

    def plan(self, state: Any) -> list[str] | None:
        """The agents of the next round, or ``None`` to finish."""

    def rewrite(self, state: Any, agent: str) -> Any:
        """One agent's step of the next round (independent of the round's other agents)."""

    def merge(self, state: Any, results: Sequence[Any]) -> Any:
        """The state after a round, from the steps of its agents."""

    def finish(self, state: Any) -> SearchResponse:
        """The answer from the last state."""


# ----- request options shared by the pipelines -------------------------------------------------


def option_flag(options: Mapping[str, Any], key: str) -> bool:
    """A boolean option that may arrive as a bool, a number or a CLI string ("1", "true", "yes").

    Raises:
        InvalidInput: for a value that is not a recognisable boolean.
    """
    value = options.get(key, False)
    flag = False if value == "" else parse_flag(value)
    if flag is None:
        raise InvalidInput(f"option {key} must be true or false, got {value!r}")
    return flag


def option_int(options: Mapping[str, Any], key: str, default: int | None, *, low: int, high: int) -> int | None:
    """An integer option in ``[low, high]`` (``default`` when absent).

    Raises:
        InvalidInput: for a non-integer or out-of-range value.
    """
    if key not in options or options[key] in (None, ""):
        return default
    try:
        value = int(str(options[key]).strip())
    except ValueError:
        raise InvalidInput(f"option {key} must be an integer, got {options[key]!r}") from None
    if not low <= value <= high:
        raise InvalidInput(f"option {key} must be between {low} and {high}, got {value}")
    return value
