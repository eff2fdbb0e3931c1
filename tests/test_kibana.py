"""kibana/*.ndjson: saved objects that Kibana and OpenSearch Dashboards import, whose fields exist in the
lexsearch mappings (the mapping files here; tests/test_kibana_live.py checks the live mappings)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from service.backends._requests import CorpusKind, Engine, index_body
from tests.support.saved_objects import FILES, field_problems, field_uses, import_problems, load, mapped_fields

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "kibana" / "lexsearch-saved-objects.ndjson"
TRACES = ROOT / "kibana" / "traces.ndjson"
PATTERN, SEARCH = "lexsearch-corpora", "lexsearch-documents"
VIS, DASHBOARD = "lexsearch-docs-per-law", "lexsearch-corpus"


@pytest.fixture(scope="module")
def objects() -> list[dict]:
    return load(FILE)


def obj(objects: list[dict], object_id: str) -> dict:
    return next(o for o in objects if o["id"] == object_id)


def corpus_mapping(engine: Engine) -> dict:
    return index_body(engine, dim=4, embedder="e", language="", kind=CorpusKind.DECISIONS, languages=[])["mappings"]


def traces_mapping() -> dict:
    return json.loads((ROOT / "mappings" / "traces.json").read_text(encoding="utf-8"))["mappings"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_object_passes_the_import_rules(path: Path) -> None:
    assert import_problems(load(path)) == []


@pytest.mark.parametrize(("break_it", "problem"), [
    (lambda o: obj(o, PATTERN).update(type="lens"), "not imported by both"),
    (lambda o: obj(o, PATTERN).update(extra=1), "envelope keys"),
    (lambda o: obj(o, VIS)["attributes"].update(visState='{"title": "x",'), "visState is not JSON"),
    (lambda o: obj(o, VIS)["attributes"].update(uiStateJSON="[]"), "uiStateJSON must hold a JSON dict"),
    (lambda o: obj(o, SEARCH)["attributes"]["kibanaSavedObjectMeta"].update(searchSourceJSON="{'query': 1}"),
     "searchSourceJSON is not JSON"),
    (lambda o: obj(o, PATTERN)["attributes"].update(fields="{}"), "fields must hold a JSON list"),
    (lambda o: obj(o, DASHBOARD)["references"][0].update(id="nope"), "points at missing visualization/nope"),
    (lambda o: obj(o, DASHBOARD)["references"][0].update(name="panel_9"), "have no reference"),
    (lambda o: obj(o, VIS)["references"][0].update(type="search"), "names no index-pattern reference"),
    (lambda o: obj(o, VIS)["attributes"].update(title="renamed"), "visState.title differs"),
    (lambda o: obj(o, SEARCH)["attributes"].update(sort=[["citation", "up"]]), "sort must be"),
])
def test_the_import_rules_catch_broken_objects(objects, break_it, problem) -> None:
    broken = copy.deepcopy(objects)
    break_it(broken)
    assert any(problem in p for p in import_problems(broken)), import_problems(broken)


def test_index_patterns_cover_lexsearch_and_eval_indices(objects) -> None:
    titles = {o["attributes"]["title"] for o in objects if o["type"] == "index-pattern"}
    # the API's traces (lexsearch-traces*) have their own file, kibana/traces.ndjson
    assert titles == {"lexsearch-*,-lexsearch-traces*", "eval-*"}


@pytest.mark.parametrize("engine", list(Engine))
def test_fields_used_exist_in_the_mapping_files(objects, engine) -> None:
    mapping = corpus_mapping(engine)
    uses = list(field_uses(objects))
    assert {u.field for u in uses} >= {"law", "kind", "lang", "citation"}
    assert field_problems(uses, mapped_fields(mapping), mapping.get("_source", {}).get("excludes", [])) == []


def test_trace_fields_exist_in_the_traces_mapping() -> None:
    uses = list(field_uses(load(TRACES)))
    assert {u.use for u in uses} >= {"time", "column", "sort", "terms", "percentiles", "date_histogram"}
    assert field_problems(uses, mapped_fields(traces_mapping()), []) == []


def test_field_checks_catch_missing_and_unaggregatable_fields(objects) -> None:
    fields = mapped_fields(corpus_mapping(Engine.OPENSEARCH))
    broken = copy.deepcopy(objects)
    vis = json.loads(obj(broken, VIS)["attributes"]["visState"])
    vis["aggs"][1]["params"]["field"] = "text"  # analysed text: no terms aggregation
    obj(broken, VIS)["attributes"]["visState"] = json.dumps(vis)
    obj(broken, SEARCH)["attributes"]["columns"].append("no_such_field")
    problems = field_problems(list(field_uses(broken)), fields, ["vector"])
    assert any("text is text: not aggregatable" in p for p in problems), problems
    assert any("no_such_field is not in the mapping" in p for p in problems), problems
    shown = field_problems(list(field_uses(objects)), fields, ["citation"])
    assert any("excluded from _source" in p for p in shown)


def test_dashboard_panels_match_their_references(objects) -> None:
    for obj in objects:
        if obj["type"] == "dashboard":
            panels = json.loads(obj["attributes"]["panelsJSON"])
            assert {p["panelRefName"] for p in panels} == {r["name"] for r in obj["references"]}
