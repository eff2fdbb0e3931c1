"""The request validator and the strict JSON reader (pure functions)."""

from __future__ import annotations

import pytest

from service.api.schemas import build_components
from service.api.validation import RequestInvalid, parse_json_body, validate
from service.config import load_settings
from service.errors import InvalidInput

pytestmark = pytest.mark.unit

COMPONENTS = build_components(load_settings(environ={}), pipelines=["bm25", "hybrid"], search_pipeline="hybrid",
                              job_pipeline="hybrid")
SEARCH = {"$ref": "#/components/schemas/SearchRequest"}


def check(value: object) -> None:
    validate(value, SEARCH, COMPONENTS)


def test_a_full_valid_request_passes() -> None:
    check({"query": "Kaution", "index": "swiss-de", "k": 100, "lang": "de", "explain": True, "pipeline": "bm25",
           "filters": {"law": ["OR", "ZGB"], "kind": ["statute"], "date_from": "2020-01-01"},
           "options": {"reranker": "none", "agents": ["terminology"], "max_rounds": 2, "tier": 3}})


@pytest.mark.parametrize(("value", "path", "message"), [
    ({}, "$.query", "missing required property 'query'"),
    ({"query": 3}, "$.query", "expected string, got integer"),
    ({"query": "q", "k": True}, "$.k", "expected integer, got boolean"),
    ({"query": "q", "k": 1.5}, "$.k", "expected integer, got number"),
    ({"query": "q", "index": "../etc"}, "$.index", "does not match"),
    ({"query": "q", "filters": {"kind": ["statute", "statute"]}}, "$.filters.kind", "unique"),
    ({"query": "q", "filters": {"law": []}}, "$.filters.law", "at least 1 items"),
    ({"query": "q", "filters": {"date_to": "31.12.2020"}}, "$.filters.date_to", "not a date"),
    ({"query": "q", "filters": {"date_to": "2020-1-1"}}, "$.filters.date_to", "not a date"),
    ({"query": "q", "options": {"agents": ["oracle"]}}, "$.options.agents[0]", "is not one of"),
    ({"query": "q", "options": {"script": "x"}}, "$.options.script", "unknown property"),
    ({"query": "q", "size": 10}, "$.size", "unknown property 'size'"),
])
def test_violations_name_their_path(value: object, path: str, message: str) -> None:
    with pytest.raises(RequestInvalid) as caught:
        check(value)
    assert caught.value.path == path and message in str(caught.value)
    assert caught.value.code == "invalid_request" and caught.value.http_status == 400


def test_uris_must_be_absolute() -> None:
    job = {"$ref": "#/components/schemas/JobRequest"}
    validate({"query": "q", "callback_url": "https://cms.example/hook"}, job, COMPONENTS)
    with pytest.raises(RequestInvalid, match="absolute URL"):
        validate({"query": "q", "callback_url": "/hook"}, job, COMPONENTS)


@pytest.mark.parametrize(("raw", "reason"), [
    (b"", "not valid JSON"), (b"{", "not valid JSON"), (b'{"a": NaN}', "NaN"), (b'{"a": Infinity}', "Infinity"),
    (b'{"a": 1, "a": 2}', "duplicate key"), (b'"\\udc00"', "surrogate"), (b"\xc3\x28", "UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"), (b'{"k": 1' + b"0" * 5000 + b"}", "not valid JSON"),
])
def test_the_json_reader_is_strict(raw: bytes, reason: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_json_body(raw)
    assert caught.value.code == "invalid_json" and reason in str(caught.value)


def test_the_json_reader_keeps_unicode() -> None:
    assert parse_json_body('{"query": "劳动合同 Kündigung"}'.encode()) == {"query": "劳动合同 Kündigung"}
