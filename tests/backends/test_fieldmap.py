"""Field maps: lexsearch's own layout and attach files for indices lexsearch did not create."""

from __future__ import annotations

import json

import pytest

from service.backends.fieldmap import FieldMap, field_map_from_dict, load_field_map, lookup
from service.corpus.model import DocKind
from service.errors import ConfigError

pytestmark = pytest.mark.unit

ATTACH_TOML = """
index = "legacy-decisions"
id = "doc_no"
vector = "emb.values"
search = ["headline^2", "body"]
language = "de"

[fields]
citation = "reference"
text = "body"
title = "headline"
law = "statute"
date = "decided_on"
court = "court_name"
cites = "refs"

[filters]
court = "court_name.raw"
"""


def test_loads_a_toml_attach_file(tmp_path) -> None:
    path = tmp_path / "attach.toml"
    path.write_text(ATTACH_TOML, encoding="utf-8")
    fm = load_field_map(path)
    assert fm.index == "legacy-decisions" and not fm.managed
    assert fm.applies_to("legacy-decisions") and not fm.applies_to("other")
    assert fm.vector == "emb.values" and fm.search == ("headline^2", "body")
    assert fm.filter_field("court") == "court_name.raw"  # the [filters] entry wins
    assert fm.filter_field("law") == "statute"           # else the [fields] entry
    assert fm.filter_field("date") == "decided_on"
    assert fm.filter_field("chamber") == ""              # unmapped: filters on it match nothing
    assert "doc_no" in fm.source_fields()


def test_json_attach_file_is_equivalent(tmp_path) -> None:
    path = tmp_path / "attach.json"
    path.write_text(json.dumps({"id": "doc_no", "search": ["body"], "fields": {"citation": "reference"}}))
    fm = load_field_map(path)
    assert fm.id == "doc_no" and fm.fields["citation"] == "reference"
    assert fm.fields["text"] == "body"  # defaults to the first search field


def test_to_doc_maps_foreign_fields(tmp_path) -> None:
    path = tmp_path / "attach.toml"
    path.write_text(ATTACH_TOML, encoding="utf-8")
    fm = load_field_map(path)
    hit = {"_id": "x1", "_source": {"doc_no": "4A_1/2020", "reference": "4A_1/2020", "body": "Der Mieter ...",
                                    "headline": "Kündigung", "statute": "OR", "decided_on": "2020-03-01T00:00:00Z",
                                    "court_name": "BGer", "refs": "Art. 271 OR"}}
    doc = fm.to_doc(hit)
    assert (doc.id, doc.citation, doc.title, doc.law, doc.court, doc.lang) == (
        "4A_1/2020", "4A_1/2020", "Kündigung", "OR", "BGer", "de")
    assert doc.date == "2020-03-01" and doc.cites == ("Art. 271 OR",) and doc.kind == DocKind.STATUTE
    assert fm.doc_id(hit) == "4A_1/2020"


def test_lexsearch_layout_reads_its_own_source() -> None:
    fm = FieldMap.lexsearch()
    hit = {"_id": "a", "_source": {"id": "a", "citation": "Art. 1 ZGB", "text": "t", "lang": "de", "kind": "statute",
                                   "vector": [0.1], "cites": []}}
    doc = fm.to_doc(hit)
    assert doc.citation == "Art. 1 ZGB" and "vector" not in doc.meta
    assert fm.doc_id(hit) == "a"


@pytest.mark.parametrize(("data", "message"), [
    ({"search": ["body"], "colour": "red"}, "unknown key 'colour'"),
    ({"search": ["body"], "fields": {"author": "x"}}, "unknown field 'author'"),
    ({"search": ["body"], "filters": {"lang": 3}}, "[filters].lang must be a string"),
    ({"fields": {"text": "body"}}, "name at least one BM25 field"),
    ({"search": "body", "vector": 5}, "vector must be a string"),
])
def test_invalid_attach_maps_are_config_errors(data, message) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        field_map_from_dict(data)


def test_unreadable_files_are_config_errors(tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot be read"):
        load_field_map(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("search = [", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_field_map(bad)


def test_lookup_follows_dotted_paths() -> None:
    assert lookup({"a": {"b": {"c": 1}}}, "a.b.c") == 1
    assert lookup({"a.b": 2}, "a.b") == 2
    assert lookup({"a": 1}, "a.b") is None
