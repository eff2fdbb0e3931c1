"""kibana/lexsearch-saved-objects.ndjson: valid saved objects whose fields exist in the lexsearch mapping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.backends._requests import CorpusKind, Engine, index_body

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "kibana" / "lexsearch-saved-objects.ndjson"


@pytest.fixture(scope="module")
def objects() -> list[dict]:
    return [json.loads(line) for line in FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_objects_are_unique_and_references_resolve(objects) -> None:
    ids = [(o["type"], o["id"]) for o in objects]
    assert len(ids) == len(set(ids))
    for obj in objects:
        assert obj["type"] in {"index-pattern", "search", "visualization", "dashboard"}
        assert obj["attributes"]["title"]
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in ids, f"{obj['id']} references missing {ref}"


def test_index_patterns_cover_lexsearch_and_eval_indices(objects) -> None:
    titles = {o["attributes"]["title"] for o in objects if o["type"] == "index-pattern"}
    # the API's traces (lexsearch-traces*) have their own file, kibana/traces.ndjson
    assert titles == {"lexsearch-*,-lexsearch-traces*", "eval-*"}


def test_fields_used_exist_in_the_mapping(objects) -> None:
    properties = index_body(Engine.OPENSEARCH, dim=4, embedder="e", language="", kind=CorpusKind.DECISIONS,
                            languages=[])["mappings"]["properties"]
    keyword = {name for name, prop in properties.items() if prop.get("type") == "keyword"}
    for obj in objects:
        if obj["type"] == "visualization":
            vis = json.loads(obj["attributes"]["visState"])
            for agg in vis["aggs"]:
                if "field" in agg["params"]:
                    assert agg["params"]["field"] in keyword, agg
        if obj["type"] == "search":
            assert set(obj["attributes"]["columns"]) <= set(properties)
        if obj["type"] in ("search", "visualization"):
            json.loads(obj["attributes"]["kibanaSavedObjectMeta"]["searchSourceJSON"])
        if obj["type"] == "dashboard":
            panels = json.loads(obj["attributes"]["panelsJSON"])
            assert {p["panelRefName"] for p in panels} == {r["name"] for r in obj["references"]}
