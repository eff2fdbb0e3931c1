"""Write kibana/traces.ndjson: Kibana / OpenSearch Dashboards saved objects over ``lexsearch-traces``.

Objects: the index pattern (data view) ``lexsearch-traces*``, a saved search of recent traces,
three visualisations (tier distribution, latency p50/p95 over time per tier, a per-tier table of
count and latency percentiles) and a dashboard holding them. Import with
Stack Management → Saved objects → Import (Kibana 7.10+/8.x, OpenSearch Dashboards 1.x/2.x).

    python scripts/make_kibana_traces.py > kibana/traces.ndjson
"""

from __future__ import annotations

import json
import sys
from typing import Any

PATTERN_ID = "lexsearch-traces"
INDEX_REF = "kibanaSavedObjectMeta.searchSourceJSON.index"
SEARCH_SOURCE = json.dumps({"query": {"query": "", "language": "kuery"}, "filter": [], "indexRefName": INDEX_REF})
PATTERN_REFS = [{"name": INDEX_REF, "type": "index-pattern", "id": PATTERN_ID}]


def _visualization(vis_id: str, title: str, description: str, vis: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": vis_id,
        "type": "visualization",
        "attributes": {
            "title": title,
            "description": description,
            "visState": json.dumps({"title": title, **vis}),
            "uiStateJSON": "{}",
            "version": 1,
            "kibanaSavedObjectMeta": {"searchSourceJSON": SEARCH_SOURCE},
        },
        "references": PATTERN_REFS,
    }


def _percentiles(agg_id: str) -> dict[str, Any]:
    return {"id": agg_id, "enabled": True, "type": "percentiles", "schema": "metric",
            "params": {"field": "latency_ms", "percents": [50, 95]}}


def _tier_terms(agg_id: str, schema: str) -> dict[str, Any]:
    return {"id": agg_id, "enabled": True, "type": "terms", "schema": schema,
            "params": {"field": "tier", "size": 5, "order": "asc", "orderBy": "_key", "missingBucket": True,
                       "missingBucketLabel": "not routed"}}


def saved_objects() -> list[dict[str, Any]]:
    """The saved objects, in import order (referenced objects first)."""
    pattern = {
        "id": PATTERN_ID,
        "type": "index-pattern",
        "attributes": {"title": "lexsearch-traces*", "timeFieldName": "@timestamp", "fields": "[]"},
        "references": [],
    }
    search = {
        "id": "lexsearch-traces-recent",
        "type": "search",
        "attributes": {
            "title": "lexsearch: recent searches",
            "description": "One row per search or job: tier, pipeline, latency, index, request and job ids.",
            "columns": ["kind", "tier", "tier_label", "pipeline", "latency_ms", "returned", "index", "request_id",
                        "job_id", "key_id"],
            "sort": [["@timestamp", "desc"]],
            "kibanaSavedObjectMeta": {"searchSourceJSON": SEARCH_SOURCE},
        },
        "references": PATTERN_REFS,
    }
    tiers = _visualization("lexsearch-tier-distribution", "lexsearch: tier distribution",
                           "Share of searches per routing tier (0 hybrid, 1 +reranker, 2 agentic, 3 full agentic).", {
                               "type": "pie",
                               "aggs": [{"id": "1", "enabled": True, "type": "count", "schema": "metric",
                                         "params": {}}, _tier_terms("2", "segment")],
                               "params": {"type": "pie", "addTooltip": True, "addLegend": True,
                                          "legendPosition": "right", "isDonut": True,
                                          "labels": {"show": True, "values": True, "last_level": True,
                                                     "truncate": 100}},
                           })
    latency = _visualization("lexsearch-latency-by-tier", "lexsearch: latency by tier",
                             "p50 and p95 latency (ms) over time, one line per routing tier.", {
                                 "type": "line",
                                 "aggs": [_percentiles("1"),
                                          {"id": "2", "enabled": True, "type": "date_histogram", "schema": "segment",
                                           "params": {"field": "@timestamp", "interval": "auto",
                                                      "min_doc_count": 1, "extended_bounds": {}}},
                                          _tier_terms("3", "group")],
                                 "params": {
                                     "type": "line", "addTooltip": True, "addLegend": True, "legendPosition": "right",
                                     "times": [], "addTimeMarker": False,
                                     "categoryAxes": [{"id": "CategoryAxis-1", "type": "category",
                                                       "position": "bottom", "show": True,
                                                       "scale": {"type": "linear"},
                                                       "labels": {"show": True, "filter": True, "truncate": 100},
                                                       "title": {}}],
                                     "valueAxes": [{"id": "ValueAxis-1", "name": "LeftAxis-1", "type": "value",
                                                    "position": "left", "show": True,
                                                    "scale": {"type": "linear", "mode": "normal"},
                                                    "labels": {"show": True, "rotate": 0, "filter": False,
                                                               "truncate": 100},
                                                    "title": {"text": "latency (ms)"}}],
                                     "seriesParams": [{"show": True, "type": "line", "mode": "normal",
                                                       "data": {"label": "latency_ms", "id": "1"},
                                                       "valueAxis": "ValueAxis-1", "drawLinesBetweenPoints": True,
                                                       "showCircles": True}],
                                 },
                             })
    table = _visualization("lexsearch-tier-table", "lexsearch: searches and latency per tier",
                           "Count and p50/p95 latency (ms) per routing tier.", {
                               "type": "table",
                               "aggs": [{"id": "1", "enabled": True, "type": "count", "schema": "metric",
                                         "params": {}}, _percentiles("2"), _tier_terms("3", "bucket")],
                               "params": {"perPage": 10, "showPartialRows": False, "showMetricsAtAllLevels": False,
                                          "showTotal": True, "totalFunc": "sum"},
                           })
    panels = [
        {"panelIndex": "1", "gridData": {"x": 0, "y": 0, "w": 16, "h": 15, "i": "1"}, "panelRefName": "panel_0",
         "embeddableConfig": {}, "version": "7.10.0"},
        {"panelIndex": "2", "gridData": {"x": 16, "y": 0, "w": 32, "h": 15, "i": "2"}, "panelRefName": "panel_1",
         "embeddableConfig": {}, "version": "7.10.0"},
        {"panelIndex": "3", "gridData": {"x": 0, "y": 15, "w": 16, "h": 15, "i": "3"}, "panelRefName": "panel_2",
         "embeddableConfig": {}, "version": "7.10.0"},
        {"panelIndex": "4", "gridData": {"x": 16, "y": 15, "w": 32, "h": 15, "i": "4"}, "panelRefName": "panel_3",
         "embeddableConfig": {}, "version": "7.10.0"},
    ]
    dashboard = {
        "id": "lexsearch-traces-dashboard",
        "type": "dashboard",
        "attributes": {
            "title": "lexsearch: search traces",
            "description": "Where searches go (tiers) and where time goes (latency per tier).",
            "panelsJSON": json.dumps(panels),
            "optionsJSON": json.dumps({"useMargins": True, "hidePanelTitles": False}),
            "timeRestore": False,
            "version": 1,
            "kibanaSavedObjectMeta": {"searchSourceJSON": json.dumps({"query": {"query": "", "language": "kuery"},
                                                                      "filter": []})},
        },
        "references": [
            {"name": "panel_0", "type": "visualization", "id": tiers["id"]},
            {"name": "panel_1", "type": "visualization", "id": latency["id"]},
            {"name": "panel_2", "type": "visualization", "id": table["id"]},
            {"name": "panel_3", "type": "search", "id": search["id"]},
        ],
    }
    return [pattern, search, tiers, latency, table, dashboard]


def render() -> str:
    """The ndjson text: one object per line."""
    return "".join(json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n" for obj in saved_objects())


if __name__ == "__main__":
    sys.stdout.write(render())
