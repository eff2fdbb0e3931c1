"""The routed pipeline: one side-by-side probe, a complexity score, a tier's strategy, a score-cliff cut.

Data flow of one search::

    probe (BM25 + kNN, once)  ->  complexity (intrinsic + QSI/RDI)  ->  tier  ->  strategy
        (a question of two or more issues: the last tier, ``routing.escalate_issues``)
        tier 0  hybrid fusion of the probe (no further retrieval)
        tier 1  hybrid + learned reranker      ("hybrid+rerank")
        tier 2  agentic rewrites + reranker    ("agentic", lighter options)
        tier 3  full agentic                   ("agentic", decomposition, citations, prefilter, LLM reranker)
    ->  score-cliff cut  ->  response (hits, returned, trace)

The probe is handed to the strategy (``run_with_probe``), so BM25 and kNN run once per question.
A strategy whose pipeline is unknown (``routing.tiers`` names one that is neither built in nor
registered by an ``api.pipeline_modules`` module) falls back to tier 0's hybrid fusion, and the
trace says so.

``SearchRequest.options`` understood here (strings from the CLI are parsed):

* ``no_intrinsic`` / ``no_consistency``: route on one part of the score only (ablations);
* ``no_cliff``: return a fixed top-``fixed_k`` (default 10) instead of cutting at the cliff;
* ``tier``: force a tier (0-3), skipping the score's decision (benchmarks, debugging).

Every other option is passed on to the strategy's pipeline and overrides the tier's defaults.

Example::

    pipe = runtime.pipeline("routed")
    response = pipe.run(SearchRequest("如果公司不签劳动合同，能否要求双倍工资？", index="stard"))
    response.trace["routing"]["tier"], response.returned
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from service.backends.base import SearchBackend
from service.config import Settings
from service.corpus.model import Hit
from service.errors import InvalidInput
from service.llm.budget import CallBudget
from service.pipelines.base import (
    Pipeline,
    Probe,
    ProbeReusingPipeline,
    SearchRequest,
    SearchResponse,
    option_flag,
    option_int,
)
from service.pipelines.hybrid import HybridPipeline
from service.pipelines.resources import widen_law_filter
from service.retrieval.cut import CutResult, cliff_cut, fixed_cut
from service.routing.router import ComplexityEstimator, ComplexityReport, LawCounter, Router, RoutingParams, Strategy
from service.tracing import Stopwatch

if TYPE_CHECKING:
    from service.llm.client import LlmClient
    from service.pipelines.build import Runtime

log = logging.getLogger(__name__)

ROUTING_OPTIONS = frozenset({"no_intrinsic", "no_consistency", "no_cliff", "tier", "fixed_k"})
FALLBACK_PIPELINE = "hybrid"


@dataclass(frozen=True)
class RoutedOptions:
    """The routing switches of one request (see the module docstring)."""

    use_intrinsic: bool = True
    use_consistency: bool = True
    cliff: bool = True
    fixed_k: int = 10
    forced_tier: int | None = None
    passthrough: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, Any], tiers: int) -> RoutedOptions:
        """Read the switches; raises :class:`InvalidInput` for bad values or both parts switched off."""
        parsed = cls(
            use_intrinsic=not option_flag(options, "no_intrinsic"),
            use_consistency=not option_flag(options, "no_consistency"),
            cliff=not option_flag(options, "no_cliff"),
            fixed_k=option_int(options, "fixed_k", 10, low=1, high=1000),
            forced_tier=option_int(options, "tier", None, low=0, high=tiers - 1),
            passthrough={k: v for k, v in options.items() if k not in ROUTING_OPTIONS},
        )
        if not (parsed.use_intrinsic or parsed.use_consistency or parsed.forced_tier is not None):
            raise InvalidInput("no_intrinsic and no_consistency together leave nothing to route on")
        return parsed

    def to_dict(self) -> dict[str, Any]:
        return {"intrinsic": self.use_intrinsic, "consistency": self.use_consistency, "cliff": self.cliff,
                "fixed_k": self.fixed_k, "forced_tier": self.forced_tier}


@dataclass
class StrategyRun:
    """What one tier's strategy produced for a request."""

    strategy: Strategy
    ran: str
    hits: list[Hit]
    trace: dict[str, Any]
    probe_reused: bool
    fallback: str | None = None


def answered_issues(trace: Mapping[str, Any]) -> int:
    """How many issues a strategy answered one by one and interleaved (its trace's ``issue_answers``;
    0 when it answered the question as one)."""
    answers = trace.get("issue_answers")
    return int(answers.get("issues", 0) or 0) if isinstance(answers, Mapping) else 0


class RoutedPipeline:
    """Complexity-aware routing over the registered pipelines (see the module docstring).

    Args:
        settings: the settings (``routing``, ``retrieval``, ``llm``).
        backend: holds the index's routing calibration.
        pipelines: the tier pipelines by name (the runtime's).
        llm: the client for LLM-rated complexity dimensions (``None`` = offline counts).
        law_count: the law classifier's count of predicted laws (``None`` = no trained model).
        model_routing: the routing calibration stored with the trained models (``None`` = none), read
            again when the cached parameters expire.
        issue_count: how many issues a question raises, ``(question, lang, index) -> count`` (``None`` =
            never escalate for issues).

    Example::

        pipe = RoutedPipeline.from_runtime(runtime)
        pipe.run(SearchRequest("Mein Vermieter gibt die Kaution nicht zurück", index="swiss")).trace["routing"]
    """

    name = "routed"

    def __init__(self, settings: Settings, *, backend: SearchBackend, pipelines: Callable[[str], Pipeline],
                 llm: LlmClient | None = None, law_count: LawCounter | None = None,
                 model_routing: Callable[[], Mapping[str, Any] | None] = lambda: None,
                 issue_count: Callable[[str, str, str], int] | None = None) -> None:
        self.settings = settings
        self.issue_count = issue_count if settings.routing.escalate_issues else None
        self.backend = backend
        self.pipelines = pipelines
        self.model_routing = model_routing
        self.router = Router.from_settings(settings.routing, llm_enabled=settings.llm.enabled)
        self.estimator = ComplexityEstimator(llm=llm, law_count=law_count)
        self._params: dict[str, tuple[float, RoutingParams]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_runtime(cls, runtime: Runtime, *, name: str = "routed") -> RoutedPipeline:
        """The pipeline with the runtime's collaborators: its tier pipelines, its LLM client when
        ``routing.llm_complexity`` is on, the law classifier and the routing calibration of its
        trained models, and the count of a question's issues."""
        settings = runtime.settings
        return cls(settings, backend=runtime.backend, pipelines=runtime.pipeline,
                   llm=runtime.llm_client() if settings.routing.llm_complexity else None,
                   law_count=runtime.law_counter(), model_routing=runtime.model_routing,
                   issue_count=runtime.issue_counter())

    # ----- parameters ----------------------------------------------------------------------------

    def params(self, index: str) -> RoutingParams:
        """The routing numbers for ``index``: the settings, replaced by the calibration stored with the
        model folder (else with the index) and the index's QSI calibration (cached for a while)."""
        ttl = self.settings.routing.metadata_ttl_s
        now = time.monotonic()
        with self._lock:
            cached = self._params.get(index)
            if cached is not None and now - cached[0] < ttl:
                return cached[1]
        params = RoutingParams.resolve(self.settings.routing, self.backend.metadata(index), self.model_routing())
        with self._lock:
            self._params[index] = (now, params)
        return params

    def forget_params(self, index: str | None = None) -> None:
        """Drop cached parameters (after a calibration wrote new ones in this process)."""
        with self._lock:
            if index is None:
                self._params.clear()
            else:
                self._params.pop(index, None)

    # ----- the steps -----------------------------------------------------------------------------

    @property
    def hybrid(self) -> HybridPipeline:
        pipe = self.pipelines(FALLBACK_PIPELINE)
        assert isinstance(pipe, HybridPipeline)
        return pipe

    def probe(self, request: SearchRequest, params: RoutingParams, watch: Stopwatch) -> Probe:
        """BM25 and kNN side by side, deep enough for the strategy's fusion and for RDI."""
        depth = max(request.k, params.cut_depth, self.settings.retrieval.depth, params.rdi_k)
        return self.hybrid.probe(request.query, request.index, k=depth, filters=request.filters,
                                 lang=request.lang, watch=watch)

    def assess(self, request: SearchRequest, probe: Probe, params: RoutingParams, options: RoutedOptions,
               budget: Any = None) -> ComplexityReport:
        """The complexity report of the request (both parts unless an ablation switches one off)."""
        return self.estimator.assess(request.query, request.lang, probe.bm25, probe.knn, params,
                                     use_intrinsic=options.use_intrinsic, use_consistency=options.use_consistency,
                                     budget=budget, vector=probe.vector)

    def run_strategy(self, tier: int, request: SearchRequest, probe: Probe, params: RoutingParams,
                     passthrough: Mapping[str, Any] | None = None) -> StrategyRun:
        """Run tier ``tier``'s strategy on ``request``, reusing ``probe``; falls back to hybrid fusion."""
        strategy = self.router.strategy(tier)
        depth = max(request.k, params.cut_depth)
        options = {**strategy.options, **dict(passthrough or {})}
        sub = SearchRequest(query=request.query, index=request.index, k=depth, filters=request.filters,
                            lang=request.lang, explain=request.explain, qid=request.qid, options=options)
        fallback = None
        try:
            pipe: Pipeline = self.pipelines(strategy.pipeline)
        except InvalidInput as exc:
            if exc.code != "unknown_pipeline":
                raise
            fallback = f"pipeline {strategy.pipeline!r} is not available; ran {FALLBACK_PIPELINE} fusion instead"
            pipe = self.hybrid
        reused = isinstance(pipe, ProbeReusingPipeline)
        response = pipe.run_with_probe(sub, probe) if reused else pipe.run(sub)
        return StrategyRun(strategy, pipe.name, list(response.hits), dict(response.trace), reused, fallback)

    def cut(self, hits: list[Hit], params: RoutingParams, options: RoutedOptions, *, issues: int = 0) -> CutResult:
        """The answer set: the score cliff within ``[min_k, max_k]``, or a fixed top-k when disabled.

        The cliff reads the first ``cut_depth`` hits, however many the request asked for: the
        scores are normalised down to the last one it reads, so a deeper ranking would move the
        floor and change the set (and the calibration measured the cut on ``cut_depth`` hits).

        A question whose ``issues`` (more than one) were each answered on their own keeps at least as
        many hits as it has issues, within ``max_k`` (reason ``issues``): the interleaving puts the
        whole question's first hit and each issue's first at the top, and since those carry the whole
        ranking's scores by position, a cliff after the first hit would drop the other issues' answers.
        """
        if not options.cliff:
            return fixed_cut(len(hits), options.fixed_k)
        cut = cliff_cut([h.score for h in hits[: params.cut_depth]], sigma=params.cut_sigma,
                        min_k=params.cut_min_k, max_k=params.cut_max_k)
        floor = min(issues, params.cut_max_k, len(hits))
        if issues > 1 and cut.returned < floor:
            return replace(cut, returned=floor, reason="issues", drop=None)
        return cut

    # ----- the pipeline --------------------------------------------------------------------------

    def run(self, request: SearchRequest) -> SearchResponse:
        """Route and answer one request.

        Raises:
            InvalidInput: for a bad request or bad routing options.
            LexsearchError: from the engine or a strategy pipeline.
        """
        request = widen_law_filter(self.backend, request.validated(self.settings.retrieval.max_query_chars))
        options = RoutedOptions.parse(request.options, len(self.router.strategies))
        watch = Stopwatch()
        params = self.params(request.index)
        probe = self.probe(request, params, watch)
        budget = self._budget()
        issues = None
        with watch.stage("complexity"):
            if options.forced_tier is None:
                report = self.assess(request, probe, params, options, budget)
                tier = self.router.tier(report.score, params)
                last = len(self.router.strategies) - 1
                if tier < last and self.issue_count is not None:
                    issues = self.issue_count(request.query, request.lang, request.index)
                    tier = last if issues > 1 else tier
            else:
                report, tier = None, options.forced_tier
        with watch.stage("strategy"):
            outcome = self.run_strategy(tier, request, probe, params, options.passthrough)
        with watch.stage("cut"):
            cut = self.cut(outcome.hits, params, options, issues=answered_issues(outcome.trace))
        hits = outcome.hits[: request.k]
        llm_calls = (report.llm_calls if report else 0) + int(outcome.trace.get("llm_calls", 0) or 0)
        routing: dict[str, Any] = {
            "tier": tier,
            "tier_label": outcome.strategy.label,
            "score": None if report is None else round(report.score, 4),
            "issues": issues,
            "qsi": None if report is None or report.qsi is None else round(report.qsi, 4),
            "rdi": None if report is None or report.rdi is None else round(report.rdi, 4),
            "complexity": None if report is None else report.to_dict(),
            "strategy": outcome.strategy.to_dict(),
            "ran": outcome.ran,
            "fallback": outcome.fallback,
            "probe_reused": outcome.probe_reused,
            "options": options.to_dict(),
            "params": params.to_dict(),
        }
        trace = {
            "pipeline": self.name,
            "routing": routing,
            "cut": cut.to_dict(),
            "llm_calls": llm_calls,
            "timings_ms": watch.to_dict(),
            "candidates": {"bm25": len(probe.bm25), "knn": len(probe.knn)},
            "strategy_trace": outcome.trace,
        }
        if probe.long_query is not None:
            trace["long_query"] = probe.long_query.to_trace()
        return SearchResponse(hits=hits, trace=trace, returned=min(cut.returned, len(hits)))

    def _budget(self) -> CallBudget | None:
        return None if self.estimator.llm is None else CallBudget.from_settings(self.settings.llm)
