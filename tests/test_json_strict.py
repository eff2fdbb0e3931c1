"""The strict JSON reader and the one JSON-Schema subset validator (pure functions)."""

from __future__ import annotations

from typing import Any

import pytest

from service.json_strict import SchemaError, check_schema, loads_strict, validate
from service.llm.schemas import OUTPUT_SCHEMAS

pytestmark = pytest.mark.unit


RATINGS = {"reasoning_chain": 0.2, "knowledge_integration": 1, "domain_span": 0, "relational_reasoning": 0.5,
           "conditional_density": 0.1}


@pytest.mark.parametrize(("value", "ok"), [
    (RATINGS, True),
    ({**RATINGS, "reasoning_chain": 1.2}, False),
    ({**RATINGS, "reasoning_chain": True}, False),
    ({**RATINGS, "extra": 0.5}, False),
    ({"reasoning_chain": 0.2}, False),
])
def test_complexity_schema(value: dict[str, Any], ok: bool) -> None:
    if ok:
        validate(value, OUTPUT_SCHEMAS["complexity"])
    else:
        with pytest.raises(SchemaError):
            validate(value, OUTPUT_SCHEMAS["complexity"])


@pytest.mark.parametrize(("value", "schema", "message"), [
    ([1, 2], {"type": "array", "maxItems": 1}, "at most 1"),
    ([], {"type": "array", "minItems": 1}, "at least 1"),
    (["a", "a"], {"type": "array", "uniqueItems": True}, "unique"),
    ("c", {"type": "string", "enum": ["a", "b"]}, "allowed"),
    (1.5, {"type": "integer"}, "expected integer"),
    ({"a": [1, "x"]},
     {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}},
     r"\$\.a\[1\]"),
])
def test_schema_subset_reports_the_path(value: Any, schema: dict[str, Any], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        validate(value, schema)


@pytest.mark.parametrize("text", ["", "NaN", '{"a": Infinity}', "{'a': 1}", '{"a": 1} trailing'])
def test_strict_json_parsing(text: str) -> None:
    with pytest.raises(ValueError):
        loads_strict(text)


def test_refs_resolve_in_components() -> None:
    components = {"Ids": {"type": "array", "items": {"type": "string"}}}
    validate(["a"], {"$ref": "#/components/schemas/Ids"}, components=components)
    with pytest.raises(SchemaError) as caught:
        validate(["a", 1], {"$ref": "#/components/schemas/Ids"}, components=components)
    assert caught.value.path == "$[1]"


def test_schemas_with_unimplemented_keywords_are_refused() -> None:
    check_schema({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x", "description": "d"}},
                  "additionalProperties": False})
    with pytest.raises(ValueError, match="unsupported keywords"):
        check_schema({"type": "object", "properties": {"a": {"oneOf": []}}})
    with pytest.raises(ValueError, match="unsupported type"):
        check_schema({"type": "decimal"})
