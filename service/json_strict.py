"""Strict JSON: a reader that refuses what JSON does not allow, and one JSON-Schema subset validator.

Two callers check untrusted JSON against a schema: the HTTP API (request bodies against the
schemas its OpenAPI document publishes, ``service.api.validation``) and the LLM client (model
answers against each role's output contract, ``service.llm``). Both use :func:`loads_strict` and
:func:`validate` from here, so a keyword means the same thing everywhere.

Supported keywords: ``$ref`` (to ``#/components/schemas/...``, resolved in ``components``),
``type`` (one name or a list), ``properties``, ``required``, ``additionalProperties`` (``false``
or a schema), ``items``, ``enum``, ``minItems``, ``maxItems``, ``uniqueItems``, ``minLength``,
``maxLength``, ``pattern``, ``minimum``, ``maximum`` and ``format`` (``date``, ``uri``).
Annotations (``description``, ``title``, ``example``, ``default``...) are ignored. The extension
``x-error-codes`` (``{"maxLength": "query_too_long"}``) gives a keyword's violation a code of its
own (:attr:`SchemaError.code`).

Example::

    validate({"ids": ["a", 3]}, {"type": "object", "properties": {"ids": {"type": "array",
             "items": {"type": "string"}}}})
    # raises SchemaError("$.ids[1]: expected string, got integer"), .path == "$.ids[1]"
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any
from urllib.parse import urlsplit

JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
"""JSON Schema type name -> does a parsed JSON value have that type (booleans are not numbers)."""

CHECKED_KEYWORDS = frozenset({
    "$ref", "type", "properties", "required", "additionalProperties", "items", "enum", "minItems", "maxItems",
    "uniqueItems", "minLength", "maxLength", "pattern", "minimum", "maximum", "format",
})
ANNOTATIONS = frozenset({"description", "title", "example", "examples", "default", "deprecated", "readOnly",
                         "writeOnly", "nullable"})
EXTENSIONS = frozenset({"x-error-codes"})
FORMATS = frozenset({"date", "uri"})


class SchemaError(ValueError):
    """A value does not match its schema; ``path`` names the offending value (``$.filters.law[0]``)."""

    def __init__(self, message: str, *, path: str = "$", code: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.code = code
        """The schema's own code for this violation (``x-error-codes``), else ``None``."""


def loads_strict(text: str) -> Any:
    """Parse ``text`` as exactly one JSON value: no NaN or Infinity, no duplicate keys, nothing after it.

    Raises:
        ValueError: when ``text`` is not strict JSON (the message says why).
        RecursionError: for values nested too deeply.
    """
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, val in pairs:
            if key in out:
                raise ValueError(f"duplicate key {key[:60]!r}")
            out[key] = val
        return out

    return json.loads(text, parse_constant=no_constant, object_pairs_hook=no_duplicates)


def check_schema(schema: Mapping[str, Any], path: str = "$") -> None:
    """Reject a schema that uses keywords :func:`validate` does not implement (a programming error).

    Raises:
        ValueError: naming the unsupported keyword, type or format.
    """
    unknown = set(schema) - CHECKED_KEYWORDS - ANNOTATIONS - EXTENSIONS
    if unknown:
        raise ValueError(f"schema at {path} uses unsupported keywords {sorted(unknown)}")
    types = schema.get("type")
    for t in types if isinstance(types, list) else [types] if types else []:
        if t not in JSON_TYPES:
            raise ValueError(f"schema at {path} has unsupported type {t!r}")
    if "format" in schema and schema["format"] not in FORMATS:
        raise ValueError(f"schema at {path} has unsupported format {schema['format']!r}")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{path}.{name}")
    for key, where in (("items", f"{path}[]"), ("additionalProperties", f"{path}.*")):
        if isinstance(schema.get(key), Mapping):
            check_schema(schema[key], where)


def validate(value: Any, schema: Mapping[str, Any], *, components: Mapping[str, Any] | None = None,
             path: str = "$") -> None:
    """Check ``value`` against ``schema`` (see the module docstring for the keywords).

    Args:
        components: the schemas a ``$ref`` may name (``#/components/schemas/<name>``).

    Raises:
        SchemaError: at the first violation, naming its path.
    """
    ref = schema.get("$ref")
    if ref is not None:
        schema = (components or {})[ref.rsplit("/", 1)[-1]]
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(JSON_TYPES[t](value) for t in names):
            raise SchemaError(f"{path}: expected {' or '.join(names)}, got {_type_name(value)}", path=path)
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"][:20])
        raise SchemaError(f"{path}: {json.dumps(value, ensure_ascii=False)[:80]} is not one of the allowed values "
                          f"({allowed})", path=path)
    if isinstance(value, dict):
        _check_object(value, schema, components, path)
    elif isinstance(value, list):
        _check_array(value, schema, components, path)
    elif isinstance(value, str):
        _check_string(value, schema, path)
    elif JSON_TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaError(f"{path}: {value} is below the minimum {schema['minimum']}", path=path)
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaError(f"{path}: {value} is above the maximum {schema['maximum']}", path=path)


def _type_name(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if JSON_TYPES[name](value):
            return name
    return type(value).__name__


def _check_object(value: dict[str, Any], schema: Mapping[str, Any], components: Mapping[str, Any] | None,
                  path: str) -> None:
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            raise SchemaError(f"{path}: missing required property {name!r}", path=f"{path}.{name}")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        sub = f"{path}.{name}"
        if name in properties:
            validate(item, properties[name], components=components, path=sub)
        elif extra is False:
            known = ", ".join(properties) or "none"
            raise SchemaError(f"{path}: unknown property {name[:60]!r} (known: {known})", path=sub)
        elif isinstance(extra, Mapping):
            validate(item, extra, components=components, path=sub)


def _check_array(value: list[Any], schema: Mapping[str, Any], components: Mapping[str, Any] | None,
                 path: str) -> None:
    if len(value) < schema.get("minItems", 0):
        raise SchemaError(f"{path}: at least {schema['minItems']} items required, got {len(value)}", path=path)
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise SchemaError(f"{path}: at most {schema['maxItems']} items allowed, got {len(value)}", path=path)
    if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
        raise SchemaError(f"{path}: items must be unique", path=path)
    if "items" in schema:
        for i, item in enumerate(value):
            validate(item, schema["items"], components=components, path=f"{path}[{i}]")


@cache
def _pattern(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def _check_string(value: str, schema: Mapping[str, Any], path: str) -> None:
    codes = schema.get("x-error-codes", {})
    if len(value) < schema.get("minLength", 0):
        raise SchemaError(f"{path}: shorter than {schema['minLength']} characters", path=path,
                          code=codes.get("minLength"))
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise SchemaError(f"{path}: {len(value)} characters, longer than the limit of {schema['maxLength']}",
                          path=path, code=codes.get("maxLength"))
    if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
        raise SchemaError(f"{path}: {value[:60]!r} does not match {schema['pattern']}", path=path)
    if "format" in schema:
        _check_format(value, schema["format"], path)


def _check_format(value: str, fmt: str, path: str) -> None:
    if fmt == "date":
        try:
            datetime.date.fromisoformat(value)
        except ValueError:
            raise SchemaError(f"{path}: {value!r} is not a date (YYYY-MM-DD)", path=path) from None
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise SchemaError(f"{path}: {value!r} is not a date (YYYY-MM-DD)", path=path)
    elif fmt == "uri":
        parts = urlsplit(value)
        if not parts.scheme or not parts.netloc:
            raise SchemaError(f"{path}: {value!r} is not an absolute URL", path=path)
