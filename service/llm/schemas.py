"""The output contract of every LLM role, as a schema of the project's JSON-Schema subset.

Callers may tighten a copy (an ``enum`` of candidate ids, a smaller ``maxItems``) or add a
``validate`` callable to :meth:`service.llm.client.LlmClient.complete_json`.

Example::

    OUTPUT_SCHEMAS["rerank"]["properties"]["ids"]["maxItems"]     # 20
"""

from __future__ import annotations

from typing import Any

COMPLEXITY_DIMENSIONS = (
    "reasoning_chain",
    "knowledge_integration",
    "domain_span",
    "relational_reasoning",
    "conditional_density",
)
"""The five CoAL-RAG intrinsic-complexity dimensions the ``complexity`` prompt rates, each 0..1
(``service.routing.complexity.DIMENSION_NAMES`` is this tuple)."""


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def _strings(max_items: int, *, unique: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": {"type": "string", "minLength": 1},
                              "maxItems": max_items}
    if unique:
        schema["uniqueItems"] = True
    return schema


_QUERIES = _object({"queries": _strings(5)})
_SUB_QUESTIONS = _object({"queries": _strings(8)})
"""Decomposition's queries: one per issue, as many as its prompt's ``max_issues`` allows."""
OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "planner": _object({"stop": {"type": "boolean"}, "agents": _strings(5, unique=True)}),
    "rewrite_terminology": _QUERIES,
    "rewrite_conditions": _QUERIES,
    "rewrite_decompose": _SUB_QUESTIONS,
    "rewrite_supportive": _QUERIES,
    "rewrite_repair": _QUERIES,
    "rerank": _object({"ids": _strings(20, unique=True)}),
    "law_predict": _object({"codes": _strings(10, unique=True)}),
    "hyde": _object({"passages": _strings(8)}),
    "complexity": _object({name: {"type": "number", "minimum": 0, "maximum": 1}
                           for name in COMPLEXITY_DIMENSIONS}),
}
"""The baseline output contract of each role, as its prompt states it. Callers may tighten a copy
(an ``enum`` of candidate ids, a smaller ``maxItems``) or add a ``validate`` callable."""
