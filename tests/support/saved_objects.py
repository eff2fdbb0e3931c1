"""Kibana / OpenSearch Dashboards saved objects (``kibana/*.ndjson``): reading them, the import rules
the tests check, and the index fields each object names.

No Kibana or Dashboards can be installed here, so the tests apply the rules that the saved-objects
import API applies before it writes anything, and the rules that decide whether an imported object
renders: the object envelope, the types both products import, the JSON held in string attributes,
references (every ``*RefName`` names a reference, every reference points at an object of the file),
and the index fields that index patterns, saved searches and visualizations use.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FILES = (ROOT / "kibana" / "lexsearch-saved-objects.ndjson", ROOT / "kibana" / "traces.ndjson")

ENVELOPE_REQUIRED = {"id", "type", "attributes", "references"}
ENVELOPE_OPTIONAL = {"migrationVersion", "coreMigrationVersion", "typeMigrationVersion", "managed", "namespaces",
                     "updated_at", "version", "originId"}
SUPPORTED_TYPES = {"index-pattern", "search", "visualization", "dashboard"}
"""Types that both Kibana 8 and OpenSearch Dashboards 2 import (Lens, maps, tags... are Kibana's only)."""

JSON_ATTRIBUTES: dict[str, dict[str, type]] = {
    "index-pattern": {"fields": list, "fieldFormatMap": dict, "sourceFilters": list, "fieldAttrs": dict},
    "search": {"kibanaSavedObjectMeta.searchSourceJSON": dict},
    "visualization": {"visState": dict, "uiStateJSON": dict, "kibanaSavedObjectMeta.searchSourceJSON": dict},
    "dashboard": {"panelsJSON": list, "optionsJSON": dict, "kibanaSavedObjectMeta.searchSourceJSON": dict},
}
"""String attributes that hold JSON, and the JSON type they must hold (absent ones are not required)."""

REQUIRED_ATTRIBUTES = {
    "index-pattern": {"title"},
    "search": {"title", "columns", "sort", "kibanaSavedObjectMeta"},
    "visualization": {"title", "visState", "uiStateJSON", "kibanaSavedObjectMeta"},
    "dashboard": {"title", "panelsJSON", "optionsJSON", "kibanaSavedObjectMeta"},
}

VIS_TYPES = {"table", "pie", "line", "area", "histogram", "horizontal_bar", "metric", "gauge", "goal",
             "tagcloud", "markdown"}
"""Aggregation-based visualization types of both products."""

BUCKET_AGGS = {"terms", "date_histogram", "histogram", "range", "date_range", "filters", "significant_terms"}
METRIC_AGGS = {"count", "avg", "sum", "min", "max", "cardinality", "percentiles", "median", "top_hits",
               "percentile_ranks", "std_dev"}
NUMERIC = {"long", "integer", "short", "byte", "double", "float", "half_float", "scaled_float", "unsigned_long"}
AGGREGATABLE = {"keyword", "date", "boolean", "ip", *NUMERIC}


@dataclass(frozen=True)
class FieldUse:
    """A field that an object names: which object, through which index pattern, and how it is used."""

    object_id: str
    pattern: str
    field: str
    use: str
    """``column`` (shown), ``sort``, ``time``, ``terms`` / ``date_histogram`` / ``percentiles``... (aggregated)."""


def load(path: Path) -> list[dict[str, Any]]:
    """The objects of one ndjson export, one JSON object per non-empty line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def attribute(obj: dict[str, Any], dotted: str) -> Any:
    """``attributes.a.b`` for ``"a.b"``; ``None`` when absent."""
    value: Any = obj["attributes"]
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def import_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Everything the import would refuse or that would not render; empty when the file is fine."""
    out: list[str] = []
    ids = {(o.get("type"), o.get("id")) for o in objects}
    if len(ids) != len(objects):
        out.append("two objects share a type and id")
    for obj in objects:
        name = f"{obj.get('type')}/{obj.get('id')}"
        keys = set(obj)
        if not keys >= ENVELOPE_REQUIRED or keys - ENVELOPE_REQUIRED - ENVELOPE_OPTIONAL:
            out.append(f"{name}: envelope keys {sorted(keys)}")
            continue
        if obj["type"] not in SUPPORTED_TYPES:
            out.append(f"{name}: type {obj['type']!r} is not imported by both Kibana and Dashboards")
            continue
        if not isinstance(obj["id"], str) or not obj["id"] or any(ch.isspace() for ch in obj["id"]):
            out.append(f"{name}: bad id")
        missing = REQUIRED_ATTRIBUTES[obj["type"]] - set(obj["attributes"])
        if missing:
            out.append(f"{name}: attributes {sorted(missing)} missing")
        if not isinstance(obj["attributes"].get("title"), str) or not obj["attributes"]["title"]:
            out.append(f"{name}: no title")
        parsed: dict[str, Any] = {}
        for dotted, kind in JSON_ATTRIBUTES[obj["type"]].items():
            raw = attribute(obj, dotted)
            if raw is None:
                continue
            if not isinstance(raw, str):
                out.append(f"{name}: {dotted} must be a JSON string")
                continue
            try:
                parsed[dotted] = value = json.loads(raw)
            except json.JSONDecodeError as exc:
                out.append(f"{name}: {dotted} is not JSON ({exc})")
                continue
            if not isinstance(value, kind):
                out.append(f"{name}: {dotted} must hold a JSON {kind.__name__}")
        out.extend(f"{name}: {p}" for p in _reference_problems(obj, parsed, ids))
        out.extend(f"{name}: {p}" for p in _type_problems(obj, parsed))
    return out


def _reference_problems(obj: dict[str, Any], parsed: dict[str, Any], ids: set[tuple[Any, Any]]) -> list[str]:
    out = []
    refs = obj["references"]
    if not isinstance(refs, list) or not all(isinstance(r, dict) and set(r) == {"name", "type", "id"} for r in refs):
        return ["references must be a list of {name, type, id}"]
    names = [r["name"] for r in refs]
    if len(names) != len(set(names)):
        out.append("reference names repeat")
    for ref in refs:
        if (ref["type"], ref["id"]) not in ids:
            out.append(f"reference {ref['name']} points at missing {ref['type']}/{ref['id']}")
    used = set()
    source = parsed.get("kibanaSavedObjectMeta.searchSourceJSON") or {}
    if "indexRefName" in source:
        used.add(source["indexRefName"])
        if not any(r["name"] == source["indexRefName"] and r["type"] == "index-pattern" for r in refs):
            out.append(f"indexRefName {source['indexRefName']!r} names no index-pattern reference")
    if obj["attributes"].get("savedSearchRefName"):
        used.add(obj["attributes"]["savedSearchRefName"])
    for panel in parsed.get("panelsJSON") or []:
        used.add(panel.get("panelRefName"))
    unknown = used - set(names)
    if unknown:
        out.append(f"ref names {sorted(map(str, unknown))} have no reference")
    unused = set(names) - used
    if unused:
        out.append(f"references {sorted(unused)} are never named")
    return out


def _type_problems(obj: dict[str, Any], parsed: dict[str, Any]) -> list[str]:
    out = []
    attributes = obj["attributes"]
    if obj["type"] == "search":
        if not all(isinstance(c, str) for c in attributes["columns"]):
            out.append("columns must be field names")
        if not all(isinstance(s, list) and len(s) == 2 and s[1] in ("asc", "desc") for s in attributes["sort"]):
            out.append("sort must be [field, asc|desc] pairs")
    if obj["type"] == "visualization" and "visState" in parsed:
        vis = parsed["visState"]
        if vis.get("title") != attributes["title"]:
            out.append("visState.title differs from the title")
        if vis.get("type") not in VIS_TYPES:
            out.append(f"visualization type {vis.get('type')!r}")
        aggs = vis.get("aggs") or []
        if len({a.get("id") for a in aggs}) != len(aggs):
            out.append("aggregation ids repeat")
        for agg in aggs:
            if agg.get("type") not in BUCKET_AGGS | METRIC_AGGS:
                out.append(f"aggregation type {agg.get('type')!r}")
            if agg.get("type") != "count" and not (agg.get("params") or {}).get("field"):
                out.append(f"aggregation {agg.get('id')} names no field")
    if obj["type"] == "dashboard" and "panelsJSON" in parsed:
        panels = parsed["panelsJSON"]
        if len({p.get("panelIndex") for p in panels}) != len(panels):
            out.append("panelIndex values repeat")
        for panel in panels:
            grid = panel.get("gridData") or {}
            if not all(isinstance(grid.get(k), int) and grid[k] >= 0 for k in ("x", "y", "w", "h")) or \
                    grid.get("i") != panel.get("panelIndex") or grid["x"] + grid["w"] > 48:
                out.append(f"panel {panel.get('panelIndex')}: gridData {grid}")
    return out


def field_uses(objects: list[dict[str, Any]]) -> Iterator[FieldUse]:
    """Every index field an index pattern, saved search or visualization names, with its pattern's title."""
    by_id = {(o["type"], o["id"]): o for o in objects}
    for obj in objects:
        attributes = obj["attributes"]
        if obj["type"] == "index-pattern":
            if attributes.get("timeFieldName"):
                yield FieldUse(obj["id"], attributes["title"], attributes["timeFieldName"], "time")
            for field in json.loads(attributes.get("fields") or "[]"):
                yield FieldUse(obj["id"], attributes["title"], field["name"], "column")
            continue
        if obj["type"] not in ("search", "visualization"):
            continue
        source = json.loads(attributes["kibanaSavedObjectMeta"]["searchSourceJSON"])
        ref = next(r for r in obj["references"] if r["name"] == source.get("indexRefName"))
        pattern = by_id[(ref["type"], ref["id"])]["attributes"]["title"]
        if obj["type"] == "search":
            for column in attributes["columns"]:
                yield FieldUse(obj["id"], pattern, column, "column")
            for field, _ in attributes["sort"]:
                yield FieldUse(obj["id"], pattern, field, "sort")
        else:
            for agg in json.loads(attributes["visState"])["aggs"]:
                field = (agg.get("params") or {}).get("field")
                if field:
                    yield FieldUse(obj["id"], pattern, field, agg["type"])


def mapped_fields(mapping: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"citation": "keyword", "timings_ms.embed": "float", "body_de.exact": "text", ...}`` of a mapping's
    ``properties`` (objects: ``object``; multi-fields under their parent's name)."""
    out: dict[str, str] = {}
    for name, prop in (mapping.get("properties") or {}).items():
        path = prefix + name
        out[path] = prop.get("type", "object")
        if "properties" in prop:
            out.update(mapped_fields(prop, path + "."))
        for sub, sub_prop in (prop.get("fields") or {}).items():
            out[f"{path}.{sub}"] = sub_prop.get("type", "object")
    return out


def field_problems(uses: list[FieldUse], fields: dict[str, str], source_excludes: list[str]) -> list[str]:
    """Fields that a mapping lacks, that cannot be aggregated or sorted as used, or that Discover cannot
    show (excluded from ``_source``)."""
    out = []
    for use in uses:
        kind = fields.get(use.field)
        where = f"{use.object_id} ({use.pattern}): {use.field}"
        if kind is None:
            out.append(f"{where} is not in the mapping")
        elif use.use == "time" and kind != "date":
            out.append(f"{where} is the time field but {kind}")
        elif use.use == "column" and any(_matches(use.field, pattern) for pattern in source_excludes):
            out.append(f"{where} is shown but excluded from _source")
        elif use.use in ("sort", *BUCKET_AGGS) and kind not in AGGREGATABLE:
            out.append(f"{where} is {kind}: not aggregatable for {use.use}")
        elif use.use in METRIC_AGGS - {"count", "cardinality", "top_hits"} and kind not in NUMERIC:
            out.append(f"{where} is {kind}: {use.use} needs a number")
    return out


def _matches(field: str, pattern: str) -> bool:
    from fnmatch import fnmatchcase

    return fnmatchcase(field, pattern)
