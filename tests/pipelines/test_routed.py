"""The routed pipeline end to end on the mini fixture index: trace, tiers, ablations, cut, calibration."""

from __future__ import annotations

import pytest

from service.config import load_settings
from service.corpus.model import Hit
from service.errors import InvalidInput
from service.evaluation.harness import evaluate
from service.indexing import index_documents
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime, pipeline_names
from service.pipelines.routed import RoutedOptions, RoutedPipeline, answered_issues, option_flag
from service.routing.router import RoutingParams
from tests.support.counting_backend import CountingBackend

pytestmark = pytest.mark.unit

QUESTION = "用人单位辞退员工未通知工会是否属于违法解除？"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory, mini_docs, use_embedder) -> Runtime:
    """A runtime over a private mini index (tests here write its metadata)."""
    backend = CountingBackend(tmp_path_factory.mktemp("routed-indices"))
    assert index_documents(backend, use_embedder, "mini", mini_docs, language="").ok
    settings = load_settings(environ={}, overrides={"routing": {"metadata_ttl_s": 0}})
    return Runtime(settings, backend=backend, embedder=use_embedder)


def _run(runtime: Runtime, query: str = QUESTION, **options: object):  # type: ignore[no-untyped-def]
    return runtime.pipeline("routed").run(SearchRequest(query=query, index="mini", k=10, options=dict(options)))


def test_routed_is_registered_and_answers_with_a_full_trace(runtime: Runtime) -> None:
    assert "routed" in pipeline_names()
    response = _run(runtime)
    assert response.hits and 1 <= response.returned <= len(response.hits) <= 10
    trace = response.trace
    routing = trace["routing"]
    assert trace["pipeline"] == "routed"
    assert routing["tier"] in (0, 1, 2, 3) and routing["strategy"]["tier"] == routing["tier"]
    assert 0.0 <= routing["score"] <= 1.0 and 0.0 <= routing["qsi"] <= 1.0 and 0.0 <= routing["rdi"] <= 1.0
    assert routing["complexity"]["intrinsic"]["dimensions_source"] == "offline"
    assert set(routing["complexity"]["intrinsic"]["dimensions"]) == {
        "reasoning_chain", "knowledge_integration", "domain_span", "relational_reasoning", "conditional_density"}
    assert routing["params"]["sources"]["thresholds"] == "settings"
    assert {"embed", "retrieve", "complexity", "strategy", "cut", "total"} <= set(trace["timings_ms"])
    assert trace["llm_calls"] == 0
    assert trace["cut"]["returned"] == response.returned and trace["cut"]["reason"] in ("cliff", "max_k", "end")
    assert routing["probe_reused"] or routing["fallback"] is None


@pytest.mark.parametrize("tier", [0, 1, 2, 3])
def test_every_tier_runs_and_reuses_the_probe(runtime: Runtime, tier: int) -> None:
    before = CountingBackend.probes
    response = _run(runtime, tier=str(tier))
    routing = response.trace["routing"]
    assert routing["tier"] == tier and routing["score"] is None  # forced: no complexity computed
    assert response.hits
    strategy = routing["strategy"]["pipeline"]
    if strategy not in pipeline_names():
        assert routing["ran"] == "hybrid" and "not available" in routing["fallback"]
    else:
        assert routing["fallback"] is None
    if routing["probe_reused"]:
        assert CountingBackend.probes == before + 1


def test_ablation_options(runtime: Runtime) -> None:
    no_intrinsic = _run(runtime, no_intrinsic="1").trace["routing"]
    assert no_intrinsic["complexity"]["intrinsic"] is None and no_intrinsic["qsi"] is not None
    no_consistency = _run(runtime, no_consistency=True).trace["routing"]
    assert no_consistency["complexity"]["consistency"] is None and no_consistency["qsi"] is None
    fixed = _run(runtime, no_cliff="true")
    assert fixed.returned == min(10, len(fixed.hits)) and fixed.trace["cut"]["reason"] == "disabled"
    assert _run(runtime, no_cliff="1", fixed_k="3").returned == 3


@pytest.mark.parametrize("options", [
    {"tier": "7"}, {"tier": "x"}, {"no_cliff": "maybe"}, {"no_intrinsic": "1", "no_consistency": "1"},
])
def test_bad_options_are_clear_errors(runtime: Runtime, options: dict[str, str]) -> None:
    with pytest.raises(InvalidInput):
        _run(runtime, **options)


def test_empty_query_is_rejected(runtime: Runtime) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        _run(runtime, query="  ")


def test_stored_calibration_steers_the_router(runtime: Runtime) -> None:
    backend = runtime.backend
    backend.update_metadata("mini", routing={"thresholds": [1.0, 1.0, 1.0], "gamma": 0.5,
                                             "cut": {"sigma": 0.3, "min_k": 2, "max_k": 5}})
    try:
        response = _run(runtime)
        routing = response.trace["routing"]
        assert routing["tier"] == 0 and routing["params"]["sources"]["thresholds"] == "index"
        assert 2 <= response.returned <= 5 and response.trace["cut"]["sigma"] == 0.3
    finally:
        backend.update_metadata("mini", routing={})
    assert _run(runtime).trace["routing"]["params"]["sources"]["thresholds"] == "settings"



def test_a_question_of_several_issues_goes_to_the_last_tier(runtime: Runtime) -> None:
    """The thresholds send every score to tier 0; two questions about two matters still get the last
    tier, the only one that searches each issue (routing.escalate_issues)."""
    two_issues = "公司辞退我能要经济补偿吗？房东不退押金怎么办？"
    backend = runtime.backend
    backend.update_metadata("mini", routing={"thresholds": [1.0, 1.0, 1.0], "gamma": 0.5})
    try:
        routing = _run(runtime, two_issues).trace["routing"]
        assert (routing["tier"], routing["issues"], routing["strategy"]["tier"]) == (3, 2, 3)
        assert routing["strategy"]["pipeline"] == "agentic"
        single = _run(runtime).trace["routing"]
        assert (single["tier"], single["issues"]) == (0, 1)
        assert _run(runtime, two_issues, tier="1").trace["routing"]["issues"] is None  # forced: not counted
        off = load_settings(environ={}, overrides={"routing": {"metadata_ttl_s": 0, "escalate_issues": False}})
        plain = RoutedPipeline(off, backend=backend, pipelines=runtime.pipeline, issue_count=runtime.issue_counter())
        routing = plain.run(SearchRequest(query=two_issues, index="mini", k=10)).trace["routing"]
        assert (routing["tier"], routing["issues"]) == (0, None)
    finally:
        backend.update_metadata("mini", routing={})


def test_the_answer_set_keeps_one_hit_per_answered_issue(runtime: Runtime) -> None:
    """A cliff after the first hit would drop the answers of the other issues, which the interleaving
    puts right after it: a question of n answered issues keeps at least n hits, within max_k; a later
    cliff stays where it is."""
    routed = runtime.pipeline("routed")
    assert isinstance(routed, RoutedPipeline)
    hits = [Hit(f"d{i}", score) for i, score in enumerate([1.0, 0.3, 0.29, 0.28, 0.27, 0.26] + [0.1] * 44)]
    params = RoutingParams.resolve(runtime.settings.routing)
    options = RoutedOptions.parse({}, 4)
    assert routed.cut(hits, params, options).returned == 1
    assert routed.cut(hits, params, options, issues=1).returned == 1
    three = routed.cut(hits, params, options, issues=3)
    assert (three.returned, three.reason, three.drop) == (3, "issues", None)
    assert routed.cut(hits, params, options, issues=30).returned == params.cut_max_k
    later = [Hit(f"d{i}", score) for i, score in enumerate([1.0, 0.95, 0.9, 0.85, 0.2] + [0.1] * 45)]
    assert routed.cut(later, params, options, issues=2).returned == routed.cut(later, params, options).returned == 4
    assert routed.cut(hits, params, RoutedOptions.parse({"no_cliff": True}, 4), issues=3).returned == 10

    assert answered_issues({"issue_answers": {"issues": 3, "ms": 4.0}}) == 3
    assert answered_issues({}) == 0 and answered_issues({"issue_answers": None}) == 0

    two_issues = "公司辞退我能要经济补偿吗？房东不退押金怎么办？"
    response = _run(runtime, two_issues)
    assert response.trace["strategy_trace"]["issue_answers"]["issues"] == 2
    assert response.returned >= 2


def test_evaluation_reports_set_metrics(runtime: Runtime, mini_dataset) -> None:
    queries, qrels = mini_dataset.queries("dev"), mini_dataset.qrels("dev")
    result, run = evaluate(runtime.pipeline("routed"), queries, qrels, index="mini", k=10)
    assert set(result.to_dict()["set"]) == {"precision", "recall", "f1"}
    assert len(run) == len(queries) and result.recall_10 > 0.3


def test_option_flag_parsing() -> None:
    assert option_flag({"x": "yes"}, "x") and not option_flag({"x": "0"}, "x") and not option_flag({}, "x")
    assert option_flag({"x": True}, "x")


def test_pipeline_is_built_from_the_runtime(runtime: Runtime) -> None:
    pipe = runtime.pipeline("routed")
    assert isinstance(pipe, RoutedPipeline) and pipe.estimator.llm is None


def test_the_answer_set_does_not_depend_on_how_many_hits_are_asked_for(runtime: Runtime, mini_dataset) -> None:
    """The cut normalises over ``cut_depth`` hits, also when the request asks for more."""
    routed = runtime.pipeline("routed")
    for query in mini_dataset.queries("dev"):
        sets = []
        for k in (10, 100):
            response = routed.run(SearchRequest(query=query.text, index="mini", k=k))
            sets.append([h.doc_id for h in response.hits[: response.returned]])
        assert sets[0] == sets[1], query.qid
