"""Request bodies checked against the same JSON schemas the OpenAPI document publishes.

The API validates with the project's one JSON-Schema subset (:mod:`service.json_strict`), so the
spec served at ``/openapi.json`` and the checks a request goes through cannot drift apart. A
violation is ``invalid_request`` unless the schema's ``x-error-codes`` names another code
(``query_too_long`` for an overlong question).

Example::

    validate({"query": ""}, {"$ref": "#/components/schemas/SearchRequest"}, components)
    # raises RequestInvalid("$.query: shorter than 1 characters", path="$.query")
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from service import json_strict
from service.errors import InvalidInput


class RequestInvalid(InvalidInput):
    """A request body does not match its schema; ``path`` names the offending value (``$.filters.law[0]``)."""

    code = "invalid_request"

    def __init__(self, message: str, *, path: str = "$", code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.path = path


def validate(value: Any, schema: Mapping[str, Any], components: Mapping[str, Any], path: str = "$") -> None:
    """Check ``value`` against ``schema``, resolving ``$ref`` in ``components``.

    Raises:
        RequestInvalid: at the first violation, naming its path.
    """
    try:
        json_strict.validate(value, schema, components=components, path=path)
    except json_strict.SchemaError as exc:
        raise RequestInvalid(str(exc), path=exc.path, code=exc.code) from None


def parse_json_body(raw: bytes) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, no lone surrogates, no duplicate keys.

    Raises:
        InvalidInput: with code ``invalid_json`` and the position of the problem.
    """
    try:
        value = json_strict.loads_strict(raw.decode("utf-8"))
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
