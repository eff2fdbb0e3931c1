"""The HTTP API over real HTTP, with a real Redis and the embedded mini index (no workers here)."""

from __future__ import annotations

import json

import pytest
import requests

from service.apikeys import ApiKeyStore
from service.search_json import FILTER_KEYS
from tests.support.corpus import long_question
from tests.support.service import ApiServer, settings_for

pytestmark = pytest.mark.engine

QUERY = "Der Vermieter gibt die Kaution nach dem Ende der Miete nicht zurück"


def post(api: ApiServer, path: str, key: str | None, body: object, **headers: str) -> requests.Response:
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    return requests.post(api.url + path, json=body, headers={**auth, **headers}, timeout=30)


def assert_error(response: requests.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code, error
    assert error["message"] and error["request_id"] == response.headers["X-Request-Id"]
    return error


# ----- liveness, readiness, docs -------------------------------------------------------------------

def test_health_and_ready(api: ApiServer) -> None:
    assert requests.get(api.url + "/health", timeout=5).json() == {"status": "ok"}
    ready = requests.get(api.url + "/ready", timeout=5)
    assert ready.status_code == 200
    body = ready.json()
    assert body["ready"] and body["checks"]["engine"]["documents"] == 54 and body["checks"]["redis"]["ok"]


def test_openapi_document_and_docs_page(api: ApiServer) -> None:
    spec = requests.get(api.url + "/openapi.json", timeout=5).json()
    assert spec["openapi"].startswith("3.1")
    assert {"/v1/search", "/v1/jobs", "/v1/jobs/{job_id}", "/v1/indices", "/v1/indices/{name}/documents",
            "/v1/indices/{name}/laws", "/health", "/ready"} <= set(spec["paths"])
    search = spec["components"]["schemas"]["SearchRequest"]
    assert search["additionalProperties"] is False and search["properties"]["k"]["maximum"] == 100
    assert set(search["properties"]["filters"]["properties"]) == set(FILTER_KEYS)
    assert "test-steps" in search["properties"]["pipeline"]["enum"]
    page = requests.get(api.url + "/docs", timeout=5)
    assert page.status_code == 200 and "POST /v1/search" in page.text and "<script" not in page.text


def test_unknown_paths_and_methods_are_json(api: ApiServer) -> None:
    assert_error(requests.get(api.url + "/nope", timeout=5), 404, "not_found")
    wrong = requests.put(api.url + "/v1/search", timeout=5)
    assert_error(wrong, 405, "method_not_allowed")
    assert "POST" in wrong.headers["Allow"]


def test_request_ids_are_echoed_or_made(api: ApiServer) -> None:
    given = requests.get(api.url + "/health", headers={"X-Request-Id": "abc-123"}, timeout=5)
    assert given.headers["X-Request-Id"] == "abc-123"
    made = requests.get(api.url + "/health", headers={"X-Request-Id": "bad id with spaces"}, timeout=5)
    assert len(made.headers["X-Request-Id"]) == 32


# ----- keys, scope, rate limits --------------------------------------------------------------------

def test_search_needs_a_valid_key(api: ApiServer, keys: ApiKeyStore) -> None:
    assert_error(post(api, "/v1/search", None, {"query": QUERY}), 401, "missing_api_key")
    assert_error(post(api, "/v1/search", "lsk_000000000000_nope", {"query": QUERY}), 401, "invalid_api_key")
    key, secret = keys.create(("mini",), rate_per_min=100)
    assert post(api, "/v1/search", secret, {"query": QUERY}).status_code == 200
    keys.revoke(key.id)
    assert_error(post(api, "/v1/search", secret, {"query": QUERY}), 401, "invalid_api_key")


def test_the_key_header_may_be_x_api_key(api: ApiServer, mini_key: str) -> None:
    response = requests.post(api.url + "/v1/search", json={"query": QUERY}, headers={"X-API-Key": mini_key},
                             timeout=30)
    assert response.status_code == 200


def test_indices_outside_the_scope_are_forbidden(api: ApiServer, keys: ApiKeyStore) -> None:
    _, other = keys.create(("other",), rate_per_min=100)
    assert_error(post(api, "/v1/search", other, {"query": QUERY, "index": "mini"}), 403, "index_forbidden")
    assert_error(post(api, "/v1/search", other, {"query": QUERY}), 403, "index_forbidden")  # default index mini
    assert_error(post(api, "/v1/jobs", other, {"query": QUERY, "index": "mini"}), 403, "index_forbidden")
    assert_error(post(api, "/v1/indices/mini/documents", other, {"documents": [{"id": "a", "text": "b"}]}),
                 403, "index_forbidden")
    _, search_only = keys.create(("mini",), rate_per_min=100)
    assert_error(post(api, "/v1/indices/mini/documents", search_only, {"documents": [{"id": "a", "text": "b"}]}),
                 403, "ingest_forbidden")


def test_the_rate_limit_answers_429_with_retry_after(api: ApiServer, keys: ApiKeyStore) -> None:
    _, secret = keys.create(("mini",), rate_per_min=3)
    statuses = [requests.get(api.url + "/v1/indices", headers={"Authorization": f"Bearer {secret}"}, timeout=10)
                for _ in range(4)]
    assert [r.status_code for r in statuses] == [200, 200, 200, 429]
    assert [r.headers["X-RateLimit-Remaining"] for r in statuses[:3]] == ["2", "1", "0"]
    error = assert_error(statuses[3], 429, "rate_limited")
    assert int(statuses[3].headers["Retry-After"]) == 20 and error["retry_after_s"] > 19


def test_law_names_of_an_index(api: ApiServer, keys: ApiKeyStore, mini_key: str, mini_docs) -> None:
    def get(path: str, key: str) -> requests.Response:
        return requests.get(api.url + path, headers={"Authorization": f"Bearer {key}"}, timeout=10)

    body = get("/v1/indices/mini/laws", mini_key).json()
    assert body["index"] == "mini" and body["laws"] == sorted({d.law for d in mini_docs if d.law})
    assert "OR" in body["laws"] and body["request_id"]
    _, other = keys.create(("other",), rate_per_min=100)
    assert_error(get("/v1/indices/mini/laws", other), 403, "index_forbidden")
    _, everything = keys.create(("*",), rate_per_min=100)
    assert_error(get("/v1/indices/no-such-index/laws", everything), 404, "index_not_found")
    assert_error(get("/v1/indices/bad%20name/laws", everything), 400, "invalid_request")


def test_index_list_follows_the_scope(api: ApiServer, keys: ApiKeyStore, mini_key: str) -> None:
    listed = requests.get(api.url + "/v1/indices", headers={"Authorization": f"Bearer {mini_key}"}, timeout=10)
    (mini,) = listed.json()["indices"]
    assert mini["name"] == "mini" and mini["documents"] == 54 and mini["embedder"] == "use-m3"
    assert mini["citation_links"] == "current"  # built by this version's citation rules
    _, other = keys.create(("other",), rate_per_min=100)
    none = requests.get(api.url + "/v1/indices", headers={"Authorization": f"Bearer {other}"}, timeout=10)
    assert none.json()["indices"] == []


# ----- search ---------------------------------------------------------------------------------------

def test_search_returns_citations_scores_and_snippets(api: ApiServer, mini_key: str) -> None:
    response = post(api, "/v1/search", mini_key, {"query": QUERY, "k": 5, "pipeline": "hybrid"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["pipeline"] == "hybrid" and body["k"] == 5 and len(body["hits"]) == 5 and "trace" not in body
    assert body["request_id"] == response.headers["X-Request-Id"]
    top = body["hits"][0]
    assert top["rank"] == 1 and top["citation"] and top["law"] and {"bm25", "knn"} & set(top["scores"])
    snippets = [h["snippet"] for h in body["hits"] if h["snippet"]["highlights"]]
    assert snippets, "some snippet marks a matched word"
    for snippet in snippets:
        for start, end in snippet["highlights"]:
            assert 0 <= start < end <= len(snippet["text"])
            assert f"<em>{snippet['text'][start:end]}</em>" in snippet["html"]


def test_search_says_where_its_milliseconds_went(api: ApiServer, mini_key: str) -> None:
    response = post(api, "/v1/search", mini_key, {"query": QUERY, "k": 5, "pipeline": "hybrid"})
    stages = {}
    for part in response.headers["Server-Timing"].split(", "):
        name, _, ms = part.partition(";dur=")
        stages[name] = float(ms)
    assert {"auth", "body", "queue", "embed", "retrieve", "search", "render", "json", "app"} <= set(stages)
    assert all(ms >= 0 for ms in stages.values())
    assert stages["search"] <= stages["app"] and stages["embed"] + stages["retrieve"] <= stages["search"]
    assert "Server-Timing" in requests.get(api.url + "/health", timeout=5).headers


def test_search_defaults_to_routed_and_explains_on_request(api: ApiServer, mini_key: str) -> None:
    body = post(api, "/v1/search", mini_key, {"query": QUERY, "explain": True}).json()
    assert body["pipeline"] == "routed" and isinstance(body["tier"], int)
    groups = body["trace"]["groups"]  # the mini index holds statutes and decisions: each searched on its own
    assert set(groups) == {"statutes", "decisions"}
    assert max(g["routing"]["tier"] for g in groups.values()) == body["tier"] and body["returned"] <= len(body["hits"])


def test_search_applies_filters(api: ApiServer, mini_key: str) -> None:
    body = post(api, "/v1/search", mini_key, {"query": QUERY, "pipeline": "hybrid", "k": 20,
                                              "filters": {"law": ["ZGB"]}}).json()
    assert body["hits"] and {h["law"] for h in body["hits"]} == {"ZGB"}
    lower = post(api, "/v1/search", mini_key, {"query": QUERY, "pipeline": "hybrid", "k": 20,
                                               "filters": {"law": ["zgb"]}}).json()
    assert [h["doc_id"] for h in lower["hits"]] == [h["doc_id"] for h in body["hits"]]


@pytest.mark.parametrize(("body", "code", "path"), [
    ({"query": QUERY, "k": 0}, "invalid_request", "$.k"),
    ({"query": QUERY, "k": 101}, "invalid_request", "$.k"),
    ({"query": QUERY, "k": "10"}, "invalid_request", "$.k"),
    ({"query": QUERY, "lang": "xx"}, "invalid_request", "$.lang"),
    ({"query": QUERY, "pipeline": "nope"}, "invalid_request", "$.pipeline"),
    ({"query": QUERY, "filters": {"law": "ZGB"}}, "invalid_request", "$.filters.law"),
    ({"query": QUERY, "filters": {"body": ["x"]}}, "invalid_request", "$.filters.body"),
    ({"query": QUERY, "filters": {"date_from": "2020-13-01"}}, "invalid_request", "$.filters.date_from"),
    ({"query": QUERY, "options": {"max_rounds": 9}}, "invalid_request", "$.options.max_rounds"),
    ({"query": QUERY, "query_dsl": {"match_all": {}}}, "invalid_request", "$.query_dsl"),
    ({"query": {"match": {"text": "x"}}}, "invalid_request", "$.query"),
    ({"k": 3}, "invalid_request", "$.query"),
])
def test_invalid_searches_are_400_with_the_path(api: ApiServer, mini_key: str, body: dict, code: str,
                                                path: str) -> None:
    assert assert_error(post(api, "/v1/search", mini_key, body), 400, code)["path"] == path


def test_blank_and_overlong_queries_and_bad_bodies(api: ApiServer, mini_key: str) -> None:
    assert_error(post(api, "/v1/search", mini_key, {"query": "   "}), 400, "empty_query")
    limit = api.app.extensions["lexsearch"].settings.retrieval.max_query_chars
    assert limit == 50_000
    error = assert_error(post(api, "/v1/search", mini_key, {"query": "x " * 30_000}), 400, "query_too_long")
    assert "60000 characters, longer than the limit of 50000" in error["message"]
    assert_error(post(api, "/v1/jobs", mini_key, {"query": "x " * 30_000}), 400, "query_too_long")
    auth = {"Authorization": f"Bearer {mini_key}"}
    raw = lambda data, ctype: requests.post(api.url + "/v1/search", data=data,  # noqa: E731
                                            headers={**auth, "Content-Type": ctype}, timeout=10)
    assert_error(raw(b'{"query": ', "application/json"), 400, "invalid_json")
    assert_error(raw(b'{"query": "a", "k": NaN}', "application/json"), 400, "invalid_json")
    assert_error(raw(b'{"query": "a", "query": "b"}', "application/json"), 400, "invalid_json")
    assert_error(raw(b'{"query": "\\ud800"}', "application/json"), 400, "invalid_json")
    assert_error(raw(b"\xff\xfe", "application/json"), 400, "invalid_json")
    assert_error(raw(b"[1, 2]", "application/json"), 400, "invalid_request")
    assert_error(raw(b"query=a", "application/x-www-form-urlencoded"), 415, "unsupported_media_type")
    assert_error(raw(json.dumps({"query": "a" * 11_000_000}).encode(), "application/json"), 413, "body_too_large")


def test_an_unknown_index_is_404(api: ApiServer, keys: ApiKeyStore) -> None:
    _, secret = keys.create(("*",), rate_per_min=100)
    assert_error(post(api, "/v1/search", secret, {"query": QUERY, "index": "missing"}), 404, "index_not_found")


# ----- jobs without workers: queued, owned, cancellable -------------------------------------------

def test_a_job_is_accepted_owned_and_cancellable(api: ApiServer, keys: ApiKeyStore, mini_key: str) -> None:
    created = post(api, "/v1/jobs", mini_key, {"query": QUERY, "pipeline": "hybrid"})
    assert created.status_code == 202, created.text
    job = created.json()
    assert job["status"] == "queued" and created.headers["Location"] == job["status_url"]
    assert job["status_url"] == f"{api.url}/v1/jobs/{job['job_id']}"
    auth = {"Authorization": f"Bearer {mini_key}"}
    assert requests.get(job["status_url"], headers=auth, timeout=10).json()["status"] == "queued"
    _, other = keys.create(("mini",), rate_per_min=100)
    assert_error(requests.get(job["status_url"], headers={"Authorization": f"Bearer {other}"}, timeout=10),
                 404, "job_not_found")
    cancelled = requests.delete(job["status_url"], headers=auth, timeout=10)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert_error(requests.delete(job["status_url"], headers=auth, timeout=10), 409, "job_finished")
    assert_error(requests.get(f"{api.url}/v1/jobs/{'0' * 32}", headers=auth, timeout=10), 404, "job_not_found")
    assert_error(requests.get(f"{api.url}/v1/jobs/{'x' * 64}", headers=auth, timeout=10), 404, "job_not_found")


def test_job_requests_are_validated_before_queueing(api: ApiServer, mini_key: str) -> None:
    assert_error(post(api, "/v1/jobs", mini_key, {"query": " "}), 400, "empty_query")
    assert_error(post(api, "/v1/jobs", mini_key, {"query": QUERY, "callback_url": "not a url"}), 400,
                 "invalid_request")
    assert_error(post(api, "/v1/jobs", mini_key, {"query": QUERY, "callback_url": "ftp://x.example/h"}), 400,
                 "invalid_callback_url")


def test_a_search_over_its_time_budget_becomes_a_job(api: ApiServer, mini_key: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEXSEARCH_TEST_SLOW_S", "2.5")
    response = post(api, "/v1/search", mini_key, {"query": QUERY, "pipeline": "test-slow"})
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["reason"] == "sync_budget_exceeded" and "POST /v1/jobs" in body["message"]
    job = requests.get(body["status_url"], headers={"Authorization": f"Bearer {mini_key}"}, timeout=10).json()
    assert job["status"] == "queued" and job["kind"] == "search"


def test_ingest_reports_rejected_documents(api: ApiServer, keys: ApiKeyStore) -> None:
    _, writer = keys.create(("mini-new",), rate_per_min=100, ingest=True)
    docs = [{"id": "a1", "text": "Der Mieter zahlt.", "law": "OR"}, {"id": "has space", "text": "x"},
            {"id": "a2"}, {"id": "a3", "text": "y", "date": "2020-02-31"}, {"id": "a4", "text": "z", "extra": 1}]
    response = post(api, "/v1/indices/mini-new/documents", writer, {"documents": docs, "language": "de"})
    assert response.status_code == 202, response.text
    assert response.json()["documents"] == 1 and response.json()["rejected"] == 4
    assert_error(post(api, "/v1/indices/mini-new/documents", writer, {"documents": docs[1:]}), 400,
                 "invalid_request")
    assert_error(post(api, "/v1/indices/bad%20name/documents", writer, {"documents": docs}), 400,
                 "invalid_request")
    assert_error(post(api, "/v1/indices/mini-new/documents", writer, {"documents": ["not an object"]}), 400,
                 "invalid_request")


def test_a_30000_character_question_is_answered_whole(api_overrides, mini_key: str) -> None:
    # Embedding 30,000 characters takes about a second, more on a loaded machine: a budget that lets the
    # answer come synchronously (with the module's 1.5 s it may come as a job, which test_jobs_e2e covers).
    with ApiServer(settings_for({**api_overrides, "api": {**api_overrides["api"], "sync_budget_s": 60}})) as api:
        question = long_question(30_000)
        response = post(api, "/v1/search", mini_key, {"query": question, "k": 5})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["query"] == question and body["hits"] and body["pipeline"] == "routed"
