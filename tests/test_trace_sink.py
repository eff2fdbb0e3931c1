"""Traces to the ``lexsearch-traces`` index of a real OpenSearch node, and the Kibana objects over it."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from service.config import load_settings
from service.trace_sink import EngineTraceSink, NullTraceSink, build_trace_sink, trace_record
from tests.support.engines import unique_index

ROOT = Path(__file__).resolve().parents[1]
TRACE = {"pipeline": "routed", "routing": {"tier": 2, "tier_label": "agentic"}, "llm_calls": 3,
         "timings_ms": {"probe": 12.5, "strategy": 80.0, "total": 95.0}}


@pytest.mark.unit
def test_a_trace_record_has_the_mapped_fields() -> None:
    record = trace_record(kind="search", request_id="r1", index="swiss", pipeline="routed", trace=TRACE,
                          latency_ms=95.123456, hits=10, returned=4, key_id="k1", query_chars=42, lang="de")
    mapping = json.loads((ROOT / "mappings" / "traces.json").read_text())["mappings"]["properties"]
    assert set(record) <= set(mapping)
    assert (record["tier"], record["tier_label"], record["llm_calls"], record["latency_ms"]) == (2, "agentic", 3,
                                                                                                95.123)
    assert record["timings_ms"] == {"probe": 12.5, "strategy": 80.0, "total": 95.0}
    assert record["@timestamp"].endswith("+00:00")


@pytest.mark.unit
def test_traces_are_off_by_default() -> None:
    assert isinstance(build_trace_sink(load_settings(environ={})), NullTraceSink)


@pytest.mark.unit
def test_the_kibana_objects_are_generated_and_consistent() -> None:
    spec = importlib.util.spec_from_file_location("make_kibana_traces", ROOT / "scripts" / "make_kibana_traces.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    render = generator.render
    text = (ROOT / "kibana" / "traces.ndjson").read_text(encoding="utf-8")
    assert text == render(), "regenerate: python scripts/make_kibana_traces.py > kibana/traces.ndjson"
    objects = [json.loads(line) for line in text.splitlines()]
    ids = {(o["type"], o["id"]) for o in objects}
    for obj in objects:
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in ids, f"{obj['id']} refers to a missing {ref}"
        vis = obj["attributes"].get("visState")
        if vis:
            fields = {a["params"].get("field") for a in json.loads(vis)["aggs"]} - {None}
            assert fields <= {"tier", "latency_ms", "@timestamp"}
    assert {o["type"] for o in objects} == {"index-pattern", "search", "visualization", "dashboard"}


@pytest.mark.engine
def test_traces_reach_opensearch_in_bulk(opensearch_url: str) -> None:
    from opensearchpy import OpenSearch

    client = OpenSearch([opensearch_url], timeout=10)
    index = unique_index("traces")
    sink = EngineTraceSink(client, index, engine="opensearch")
    try:
        for n in range(25):
            sink.emit(trace_record(kind="search", request_id=f"r{n}", index="swiss", pipeline="routed",
                                   trace={**TRACE, "routing": {"tier": n % 4}}, latency_ms=10.0 + n, hits=10,
                                   returned=5))
        sink.flush()
        client.indices.refresh(index=index)
        assert client.count(index=index)["count"] == 25 and sink.sent == 25 and sink.dropped == 0
        tiers = client.search(index=index, body={"size": 0, "aggs": {"t": {"terms": {"field": "tier"}}}})
        assert {b["key"]: b["doc_count"] for b in tiers["aggregations"]["t"]["buckets"]} == {0: 7, 1: 6, 2: 6, 3: 6}
        mapping = client.indices.get_mapping(index=index)[index]["mappings"]
        assert mapping["properties"]["latency_ms"]["type"] == "float"
    finally:
        sink.close()
        client.indices.delete(index=index, ignore_unavailable=True)


@pytest.mark.engine
def test_an_unreachable_trace_engine_never_blocks(tmp_path: Path) -> None:
    from opensearchpy import OpenSearch

    from tests.support.redis_server import free_port

    sink = EngineTraceSink(OpenSearch([f"http://127.0.0.1:{free_port()}"], timeout=1, max_retries=0), "t",
                           engine="opensearch")
    start = time.monotonic()
    for n in range(100):
        sink.emit({"n": n})
    assert time.monotonic() - start < 0.5
    sink.flush()
    assert sink.dropped == 100 and sink.sent == 0
    sink.close()
