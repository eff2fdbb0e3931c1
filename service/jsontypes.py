"""JSON Schema type names and their Python checks, shared by the two schema validators.

The API validates request bodies against its OpenAPI schemas (``service.api.validation``), and the
LLM client validates structured model output (``service.agents.llm``). Their keyword sets differ;
the meaning of each ``type`` name must not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
