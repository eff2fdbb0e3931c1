"""Request bodies checked against the same JSON schemas the OpenAPI document publishes.

The API validates with a small JSON-Schema (2020-12) subset, so the spec served at
``/openapi.json`` and the checks a request goes through cannot drift apart. Supported keywords:
``$ref`` (to ``#/components/schemas/...``), ``type`` (one or a list), ``properties``, ``required``,
``additionalProperties`` (false or a schema), ``items``, ``enum``, ``minItems``, ``maxItems``,
``uniqueItems``, ``minLength``, ``maxLength``, ``pattern``, ``minimum``, ``maximum``, and
``format`` ``date`` and ``uri``. Annotations (``description``, ``example``, ``default``...) are ignored.
The extension ``x-error-codes`` (``{"maxLength": "query_too_long"}``) gives a keyword's violation its
own error code instead of ``invalid_request``.

Example::

    validate({"query": ""}, {"$ref": "#/components/schemas/SearchRequest"}, components)
    # raises RequestInvalid("$.query: shorter than 1 characters", path="$.query")
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Mapping
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from service.errors import InvalidInput
from service.jsontypes import JSON_TYPES


class RequestInvalid(InvalidInput):
    """A request body does not match its schema; ``path`` names the offending value (``$.filters.law[0]``)."""

    code = "invalid_request"

    def __init__(self, message: str, *, path: str = "$", code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.path = path


@cache
def _pattern(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def _type_name(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if JSON_TYPES[name](value):
            return name
    return type(value).__name__


def _check_format(value: str, fmt: str, path: str) -> None:
    if fmt == "date":
        try:
            datetime.date.fromisoformat(value)
        except ValueError:
            raise RequestInvalid(f"{path}: {value!r} is not a date (YYYY-MM-DD)", path=path) from None
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise RequestInvalid(f"{path}: {value!r} is not a date (YYYY-MM-DD)", path=path)
    elif fmt == "uri":
        parts = urlsplit(value)
        if not parts.scheme or not parts.netloc:
            raise RequestInvalid(f"{path}: {value!r} is not an absolute URL", path=path)


def validate(value: Any, schema: Mapping[str, Any], components: Mapping[str, Any], path: str = "$") -> None:
    """Check ``value`` against ``schema``.

    Raises:
        RequestInvalid: at the first violation, naming its path.
    """
    ref = schema.get("$ref")
    if ref is not None:
        schema = components[ref.rsplit("/", 1)[-1]]
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(JSON_TYPES[t](value) for t in names):
            raise RequestInvalid(f"{path}: expected {' or '.join(names)}, got {_type_name(value)}", path=path)
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"][:20])
        raise RequestInvalid(f"{path}: {json.dumps(value, ensure_ascii=False)[:80]} is not one of {allowed}",
                             path=path)
    if isinstance(value, dict):
        _check_object(value, schema, components, path)
    elif isinstance(value, list):
        _check_array(value, schema, components, path)
    elif isinstance(value, str):
        _check_string(value, schema, path)
    elif JSON_TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            raise RequestInvalid(f"{path}: {value} is below the minimum {schema['minimum']}", path=path)
        if "maximum" in schema and value > schema["maximum"]:
            raise RequestInvalid(f"{path}: {value} is above the maximum {schema['maximum']}", path=path)


def _check_object(value: dict[str, Any], schema: Mapping[str, Any], components: Mapping[str, Any],
                  path: str) -> None:
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            raise RequestInvalid(f"{path}: missing required property {name!r}", path=f"{path}.{name}")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        sub = f"{path}.{name}"
        if name in properties:
            validate(item, properties[name], components, sub)
        elif extra is False:
            known = ", ".join(properties) or "none"
            raise RequestInvalid(f"{path}: unknown property {name[:60]!r} (known: {known})", path=sub)
        elif isinstance(extra, Mapping):
            validate(item, extra, components, sub)


def _check_array(value: list[Any], schema: Mapping[str, Any], components: Mapping[str, Any], path: str) -> None:
    if len(value) < schema.get("minItems", 0):
        raise RequestInvalid(f"{path}: at least {schema['minItems']} items required, got {len(value)}", path=path)
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise RequestInvalid(f"{path}: at most {schema['maxItems']} items allowed, got {len(value)}", path=path)
    if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
        raise RequestInvalid(f"{path}: items must be unique", path=path)
    if "items" in schema:
        for i, item in enumerate(value):
            validate(item, schema["items"], components, f"{path}[{i}]")


def _check_string(value: str, schema: Mapping[str, Any], path: str) -> None:
    codes = schema.get("x-error-codes", {})
    if len(value) < schema.get("minLength", 0):
        raise RequestInvalid(f"{path}: shorter than {schema['minLength']} characters", path=path,
                             code=codes.get("minLength"))
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise RequestInvalid(f"{path}: {len(value)} characters, longer than the limit of {schema['maxLength']}",
                             path=path, code=codes.get("maxLength"))
    if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
        raise RequestInvalid(f"{path}: {value[:60]!r} does not match {schema['pattern']}", path=path)
    if "format" in schema:
        _check_format(value, schema["format"], path)


def parse_json_body(raw: bytes) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, no lone surrogates, no duplicate keys.

    Raises:
        InvalidInput: with code ``invalid_json`` and the position of the problem.
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

    try:
        text = raw.decode("utf-8")
        value = json.loads(text, parse_constant=no_constant, object_pairs_hook=no_duplicates)
        # Lone surrogates (\ud800) decode to str but cannot be encoded again, and would break
        # every analyser and store downstream.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeError:
        raise InvalidInput("the body is not valid UTF-8 JSON (or holds a lone surrogate escape)",
                           code="invalid_json") from None
    except RecursionError:
        raise InvalidInput("the JSON body is nested too deeply", code="invalid_json") from None
    except ValueError as exc:
        raise InvalidInput(f"the body is not valid JSON: {exc}", code="invalid_json") from None
    return value
