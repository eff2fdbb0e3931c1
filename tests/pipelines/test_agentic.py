"""The agentic pipelines on the mini fixture index: offline loop, options, step-wise JSON, probe reuse,
filters, and the LLM mode end to end through the OpenAI-compatible test server."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from service.backends.embedded import EmbeddedBackend
from service.config import load_settings
from service.corpus.model import Filters
from service.errors import ConfigError, InvalidInput
from service.indexing import index_documents
from service.pipelines.agentic import AgenticOptions, AgenticPipeline, AgenticState, StepResult
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime, pipeline_names
from service.pipelines.candidates import CITED_WEIGHT, answer_order, pool_order
from service.pipelines.hybrid import HybridPipeline
from service.tracing import Stopwatch
from tests.support.counting_backend import CountingBackend
from tests.support.openai_server import OpenAITestServer

pytestmark = pytest.mark.unit

QUESTION = "用人单位辞退员工未通知工会是否属于违法解除？另外，劳动者违法解除劳动合同要赔偿吗？"
TRACE_KEYS = {"rounds", "agents", "candidates", "llm_calls", "llm_fallbacks", "timings_ms", "law_prediction",
              "reranker"}


@pytest.fixture(scope="module")
def backend(tmp_path_factory, mini_docs, use_embedder) -> CountingBackend:
    backend = CountingBackend(tmp_path_factory.mktemp("agentic-indices"))
    assert index_documents(backend, use_embedder, "mini", mini_docs, language="").ok
    return backend


@pytest.fixture(scope="module")
def runtime(backend, use_embedder) -> Runtime:
    return Runtime(load_settings(environ={}), backend=backend, embedder=use_embedder)


def _request(query: str = QUESTION, **options: Any) -> SearchRequest:
    return SearchRequest(query=query, index="mini", k=10, explain=True, options=dict(options))


def test_both_pipelines_are_registered(runtime: Runtime) -> None:
    assert {"agentic", "hybrid+rerank"} <= set(pipeline_names())
    assert runtime.pipeline("agentic").name == "agentic"
    assert runtime.pipeline("hybrid+rerank").name == "hybrid+rerank"


def test_offline_without_models_answers_with_the_full_trace(runtime: Runtime) -> None:
    response = runtime.pipeline("agentic").run(_request())
    trace = response.trace
    assert set(trace) >= TRACE_KEYS and trace["pipeline"] == "agentic"
    assert 1 <= len(response.hits) <= 10 and len({h.doc_id for h in response.hits}) == len(response.hits)
    assert trace["llm_calls"] == 0 and trace["llm_fallbacks"] == 0
    assert trace["reranker"]["name"] == "none" and "no trained reranker" in trace["reranker"]["note"]
    assert trace["models"].startswith("none")
    assert trace["rounds"] >= 1 and trace["agents"][0]["steps"]
    # Two issues, searched one by one before the rounds; decomposition does not run again in them.
    assert trace["issues"]["count"] == 2 and trace["issues"]["mode"] == "offline"
    assert [i["hits"] > 0 for i in trace["issues"]["issues"]] == [True, True]
    assert "decompose" not in {s["agent"] for r in trace["agents"] for s in r["steps"]}
    assert {"retrieve", "total", "features", "rerank", "issues"} <= set(trace["timings_ms"])
    assert any(p.agent == "hybrid" for h in response.hits for p in h.provenance)
    assert trace["candidates"] >= len(response.hits)


def test_each_issue_gets_its_own_candidates(runtime: Runtime) -> None:
    pipe = runtime.pipeline("agentic")
    assert isinstance(pipe, AgenticPipeline)
    state = pipe.start(_request())
    assert [i["text"] for i in state.issues] == ["用人单位辞退员工未通知工会是否属于违法解除？",
                                                 "另外，劳动者违法解除劳动合同要赔偿吗？"]
    ranked = {j: [h.doc_id for h in state.pool.values() if f"issue{j}" in h.ranks] for j in (0, 1)}
    assert ranked[0] and ranked[1]
    # Without quotas the issues only rank what the first retrieval found.
    without = pipe.start(_request(quotas="0"))
    assert len(without.pool) <= len(state.pool) and without.issues
    assert all("hybrid" in h.ranks or "memory" in h.ranks or "prefilter" in h.ranks for h in without.pool.values())
    # With issues off, decomposition is a round agent again.
    trace = pipe.run(_request(issues="0")).trace
    assert trace["issues"] is None
    decompose = [s for r in trace["agents"] for s in r["steps"] if s["agent"] == "decompose"]
    assert decompose and decompose[0]["rewrites"] == 2 and decompose[0]["mode"] == "offline"


def test_articles_the_question_cites_join_the_pool(runtime: Runtime) -> None:
    pipe = runtime.pipeline("agentic")
    state = pipe.start(_request("Haftet der Hundehalter nach Art. 56 OR oder nach Art. 41 OR?"))
    cited = sorted((h.ranks["cited"], h.doc_id) for h in state.pool.values() if "cited" in h.ranks)
    assert cited == [(1, "SR220_Art56_de"), (2, "SR220_Art41_de"), (3, "SR220_Art41_en")]  # every language version
    # Without a trained reranker the articles the question names lead the answer.
    hits = pipe.run(_request("Haftet der Hundehalter nach Art. 56 OR oder nach Art. 41 OR?")).hits
    assert {h.doc_id for h in hits[:3]} == {doc_id for _, doc_id in cited}
    # Without a law name the article is not known in an index of several laws ...
    bare = pipe.start(_request("Haftet der Hundehalter nach Art. 56?"))
    assert not [h for h in bare.pool.values() if "cited" in h.ranks]


def test_without_a_model_the_acts_the_question_names_are_its_law_prediction(runtime: Runtime) -> None:
    trace = runtime.pipeline("agentic").run(_request("Haftet der Hundehalter nach dem OR?")).trace
    assert trace["law_prediction"]["mode"] == "named"
    assert trace["law_prediction"]["laws"] == [["OR", 1.0], ["CO", 1.0]]  # the German and English names
    assert trace["prefilter"]["laws"] and trace["prefilter"]["hits"] > 0
    unnamed = runtime.pipeline("agentic").run(_request("Haftet der Hundehalter?")).trace
    assert unnamed["law_prediction"]["mode"] == "none"


def test_in_an_index_of_one_law_a_bare_article_number_names_its_article(backend, runtime, mini_docs,
                                                                        use_embedder) -> None:
    # ... but in an index of one law (its German "OR" and English "CO" versions) it names that law's.
    code = [d for d in mini_docs if d.law in ("OR", "CO")]
    assert index_documents(backend, use_embedder, "one-law", code, language="").ok
    pipe = runtime.pipeline("agentic")
    state = pipe.start(SearchRequest(query="Haftet der Hundehalter nach Art. 56?", index="one-law", k=10))
    assert [h.doc_id for h in state.pool.values() if "cited" in h.ranks] == ["SR220_Art56_de"]


def test_long_questions_keep_their_weights_for_the_rewrites(backend, use_embedder) -> None:
    settings = load_settings(environ={}, overrides={"retrieval": {"long_query_chars": 100}})
    pipe = Runtime(settings, backend=backend, embedder=use_embedder).pipeline("agentic")
    question = "Der Hund des H hat den Nachbarn gebissen. " * 6 + "Haftet H für den Schaden?"
    state = pipe.start(_request(question))
    assert state.term_weights and state.term_weights["hund"] < 6  # sublinear: six mentions weigh 1 + ln 6
    restored = AgenticState.from_json(json.loads(json.dumps(state.to_json())))
    assert pipe._rewrite.evidence(restored, pipe._resources(restored)).query_weights == state.term_weights
    short = pipe.start(_request("Haftet der Hundehalter?"))
    assert pipe._rewrite.evidence(short, pipe._resources(short)).query_weights is None


def test_each_issue_is_answered_on_its_own_and_interleaved(runtime: Runtime) -> None:
    pipe = runtime.pipeline("agentic")
    response = pipe.run(_request())
    assert response.trace["issue_answers"]["issues"] == 2 and "issue_answers" in response.trace["timings_ms"]
    ids = [h.doc_id for h in response.hits]
    assert len(ids) == len(set(ids)) <= 10
    assert [h.ranks["issue_answers"] for h in response.hits] == list(range(1, len(ids) + 1))
    scores = [h.score for h in response.hits]
    assert scores == sorted(scores, reverse=True)
    alone = pipe.run(_request(issue_answers="0"))
    assert "issue_answers" not in alone.trace
    assert ids[0] == alone.hits[0].doc_id  # the whole question's best stays first
    for issue in ("用人单位辞退员工未通知工会是否属于违法解除？", "另外，劳动者违法解除劳动合同要赔偿吗？"):
        own = pipe.run(_request(issue, issues="0", max_rounds="0"))
        assert own.hits[0].doc_id in ids[:3]  # each issue's own best answer is among the first three
    single = pipe.run(_request("用人单位辞退员工未通知工会是否属于违法解除？"))
    assert "issue_answers" not in single.trace  # one issue: nothing to interleave


def test_hybrid_rerank_runs_no_rounds(runtime: Runtime) -> None:
    trace = runtime.pipeline("hybrid+rerank").run(_request(agents="terminology", max_rounds="3")).trace
    assert trace["rounds"] == 0 and trace["agents"] == [] and trace["pipeline"] == "hybrid+rerank"


def test_options_accept_cli_strings_and_reject_bad_values() -> None:
    defaults = AgenticOptions()
    parsed = AgenticOptions.parse({"agents": "terminology, repair", "max_rounds": "2", "prefilter": "0",
                                   "hyde": "false", "citations": "1", "reranker": "none", "other": "x"}, defaults)
    assert parsed == AgenticOptions(reranker="none", agents=("terminology", "repair"), max_rounds=2, prefilter=False,
                                    hyde=False, citations=True)
    assert AgenticOptions.parse({"issues": "0", "quotas": "no", "cocitation": "false", "issue_answers": "0"},
                                defaults) == AgenticOptions(issues=False, quotas=False, cocitation=False,
                                                            issue_answers=False)
    assert AgenticOptions.parse({"agents": ["decompose"], "prefilter": True}, defaults).agents == ("decompose",)
    assert AgenticOptions.from_json(parsed.to_json()) == parsed
    for bad in ({"reranker": "magic"}, {"agents": "terminology,wizard"}, {"max_rounds": "9"}, {"max_rounds": "x"},
                {"prefilter": "maybe"}):
        with pytest.raises(InvalidInput):
            AgenticOptions.parse(bad, defaults)


def test_allowed_agents_and_max_rounds_are_honoured(runtime: Runtime) -> None:
    pipe = runtime.pipeline("agentic")
    trace = pipe.run(_request(agents="decompose", max_rounds=1)).trace
    assert trace["rounds"] <= 1 and {s["agent"] for r in trace["agents"] for s in r["steps"]} <= {"decompose"}
    assert pipe.run(_request(max_rounds="0")).trace["rounds"] == 0
    with pytest.raises(InvalidInput):
        pipe.run(_request(agents="nobody"))


def test_stepwise_api_through_json_matches_the_in_process_loop(runtime: Runtime) -> None:
    pipe = runtime.pipeline("agentic")
    assert isinstance(pipe, AgenticPipeline)
    expected = [h.doc_id for h in pipe.run(_request()).hits]
    state = AgenticState.from_json(json.loads(json.dumps(pipe.start(_request()).to_json())))
    rounds = 0
    while (agents := pipe.plan(state)) is not None:
        steps = [StepResult.from_json(json.loads(json.dumps(pipe.rewrite(state, a).to_json()))) for a in agents]
        state = AgenticState.from_json(json.loads(json.dumps(pipe.merge(state, steps).to_json())))
        rounds += 1
    response = pipe.finish(state)
    assert [h.doc_id for h in response.hits] == expected and response.trace["rounds"] == rounds
    assert all(h.provenance for h in response.hits)


def test_run_with_probe_reuses_the_probe(runtime: Runtime) -> None:
    hybrid = runtime.pipeline("hybrid")
    assert isinstance(hybrid, HybridPipeline)
    probe = hybrid.probe(QUESTION, "mini", k=100, filters=None, lang="", watch=Stopwatch())
    before = CountingBackend.probes
    # without the issues' own answers, whose searches probe each issue
    response = runtime.pipeline("agentic").run_with_probe(_request(issue_answers="0"), probe)  # type: ignore[attr-defined]
    assert CountingBackend.probes == before and response.hits


def test_filters_apply_to_every_candidate_source(runtime: Runtime, backend: CountingBackend) -> None:
    filters = Filters.of(lang="zh")
    request = SearchRequest(query=QUESTION, index="mini", k=10, filters=filters)
    response = runtime.pipeline("agentic").run(request)
    docs = backend.fetch("mini", [h.doc_id for h in response.hits])
    assert response.hits and all(filters.matches(docs[h.doc_id]) for h in response.hits)


def test_cross_encoder_without_a_path_is_a_config_error(runtime: Runtime) -> None:
    with pytest.raises(ConfigError, match="cross_encoder_path"):
        runtime.pipeline("agentic").run(_request(reranker="cross-encoder"))


def _llm_runtime(backend: EmbeddedBackend, use_embedder: Any, server: OpenAITestServer) -> Runtime:
    settings = load_settings(environ={}, overrides={"llm": {"base_url": server.base_url, "model": "m",
                                                            "timeout_s": 2, "max_retries": 0}})
    return Runtime(settings, backend=backend, embedder=use_embedder)


def _role(request: dict[str, Any]) -> str:
    system = request["messages"][0]["content"]
    for marker, role in (("You plan the next round", "planner"), ("You rank candidate", "rerank"),
                         ("You decide which laws", "law_predict"), ("hypothetical statute", "hyde"),
                         ("You repair a search query", "rewrite"), ("You write search queries", "rewrite")):
        if marker in system:
            return role
    return "other"


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    role = _role(request)
    user = request["messages"][-1]["content"] if len(request["messages"]) > 2 else request["messages"][1]["content"]
    if role == "planner":
        allowed = json.loads(re.search(r"<agents>\s*(.*?)\s*</agents>", user, re.S).group(1))
        return {"stop": False, "agents": allowed[:5]}
    if role == "rerank":
        docs = json.loads(re.search(r"<documents>\s*(.*?)\s*</documents>", user, re.S).group(1))
        return {"ids": [d["id"] for d in reversed(docs)][:3]}
    if role == "law_predict":
        return {"codes": ["L1"]}
    if role == "hyde":
        subs = json.loads(re.search(r"<sub_questions>\s*(.*?)\s*</sub_questions>", user, re.S).group(1))
        return {"passages": ["用人单位解除劳动合同应当事先将理由通知工会"] * len(subs)}
    return {"queries": ["用人单位 解除 劳动合同 通知 工会"]}


def test_llm_mode_end_to_end(backend, use_embedder, openai_server: OpenAITestServer) -> None:
    openai_server.default_chat = _answer
    runtime = _llm_runtime(backend, use_embedder, openai_server)
    response = runtime.pipeline("agentic").run(_request(reranker="auto"))
    trace = response.trace
    roles = {_role(r.json) for r in openai_server.chat_requests}
    assert {"planner", "rewrite", "rerank", "hyde"} <= roles
    assert trace["llm_calls"] == len(openai_server.chat_requests) and trace["llm_fallbacks"] == 0
    assert trace["reranker"]["name"] == "llm" and trace["reranker"]["mode"] == "llm"
    assert any(s["mode"] == "llm" for r in trace["agents"] for s in r["steps"])
    assert trace["planner"][0]["mode"] == "llm"
    assert 1 <= len(response.hits) <= 10


def test_llm_failures_fall_back_everywhere(backend, use_embedder, openai_server: OpenAITestServer) -> None:
    openai_server.default_chat = None  # every call answers 500
    runtime = _llm_runtime(backend, use_embedder, openai_server)
    response = runtime.pipeline("agentic").run(_request(reranker="llm"))
    trace = response.trace
    assert response.hits and trace["llm_fallbacks"] >= 3
    assert trace["reranker"]["mode"] == "offline" and trace["reranker"]["fallback"] == "http_500"
    assert trace["planner"][0]["fallback"] == "http_500"
    assert all(s["mode"] == "offline" for r in trace["agents"] for s in r["steps"])
    assert trace["llm_calls"] <= runtime.settings.llm.max_calls_per_query


def test_llm_sub_questions_are_searched_as_issues(backend, use_embedder, openai_server: OpenAITestServer) -> None:
    subs = ["用人单位 辞退 员工 通知 工会", "劳动者 违法 解除 劳动合同 赔偿"]

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if "Your task: decomposition" in request["messages"][0]["content"]:
            return {"queries": subs}
        return _answer(request)

    openai_server.default_chat = answer
    pipe = _llm_runtime(backend, use_embedder, openai_server).pipeline("agentic")
    assert isinstance(pipe, AgenticPipeline)
    state = pipe.start(_request())
    assert [i["text"] for i in state.issues] == subs and state.trace["issues"]["mode"] == "llm"
    assert all(any(f"issue{j}" in h.ranks for h in state.pool.values()) for j in (0, 1))
    assert "decompose" not in (pipe.plan(state) or [])
    before = len(openai_server.chat_requests)
    trace = pipe.run(_request()).trace
    assert trace["issues"]["count"] == 2 and [i["text"] for i in trace["issues"]["issues"]] == subs
    # the sub-questions are answered on their own too, offline: no LLM call beyond the question's budget
    assert trace["issue_answers"]["issues"] == 2
    assert trace["llm_calls"] == len(openai_server.chat_requests) - before
    # HyDE writes its passages for the same issues
    hyde = [r.json for r in openai_server.chat_requests[before:] if _role(r.json) == "hyde"]
    assert len(hyde) == 1
    user = hyde[0]["messages"][-1]["content"]
    assert json.loads(re.search(r"<sub_questions>\s*(.*?)\s*</sub_questions>", user, re.S).group(1)) == subs


def test_failed_llm_decomposition_falls_back_to_the_offline_issues(backend, use_embedder,
                                                                   openai_server: OpenAITestServer) -> None:
    openai_server.default_chat = None  # every call answers 500
    trace = _llm_runtime(backend, use_embedder, openai_server).pipeline("agentic").run(_request()).trace
    assert trace["issues"]["mode"] == "offline" and trace["issues"]["fallback"] == "http_500"
    assert trace["issues"]["count"] == 2


def test_the_answer_order_puts_the_cited_articles_ahead_once(runtime: Runtime) -> None:
    pipe = runtime.pipeline("agentic")
    assert isinstance(pipe, AgenticPipeline)
    state = pipe.start(_request("Haftet der Hundehalter nach Art. 56 OR oder nach Art. 41 OR?"))
    graph = pipe._resources(state).graph
    cited = {d for d, h in state.pool.items() if "cited" in h.ranks}
    heuristic = {d: state.pool[d].score for d in pool_order(state, graph)}  # what the agents read
    first = answer_order(state, graph)
    assert set(first[: len(cited)]) == cited
    raised = {d: state.pool[d].score - heuristic[d] for d in first}
    assert all(raised[d] == pytest.approx(CITED_WEIGHT if d in cited else 0.0) for d in first)
    assert answer_order(state, graph) == first  # a second call raises nothing twice
    assert all(state.pool[d].score - heuristic[d] == pytest.approx(raised[d]) for d in first)
