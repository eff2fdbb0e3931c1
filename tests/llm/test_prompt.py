"""Prompt files, template rendering and quoting of untrusted data."""

from __future__ import annotations

import json
import re

import pytest

from service.llm.prompt import ROLES, load_prompt, quote_documents, quote_json, render_template
from service.llm.schemas import OUTPUT_SCHEMAS

pytestmark = pytest.mark.unit


def test_quote_documents_truncates_and_stays_json() -> None:
    docs = [{"id": "a", "text": "x" * 50, "score": 1.5, "empty": None}, {"id": "b"}]
    text = quote_documents(docs, max_chars=10)
    assert json.loads(text) == [{"id": "a", "text": "x" * 10 + "…", "score": 1.5}, {"id": "b"}]
    assert text.count("\n") == 3  # one document per line, newlines inside texts are escaped
    assert "<" not in quote_documents([{"text": "<b>a</b>\nb"}])
    assert json.loads(quote_json(["a", "<b>"])) == ["a", "<b>"]


def test_template_rendering_cannot_be_broken_by_braces() -> None:
    rendered = render_template('Q: {q} D: {d} -> {"ids": []}', {"q": "{d}", "d": "{0} {q} }{"})
    assert rendered == 'Q: {d} D: {0} {q} }{ -> {"ids": []}'


@pytest.mark.parametrize("role", ROLES)
def test_every_prompt_is_versioned_and_states_its_output_shape(role: str) -> None:
    prompt = load_prompt(role)
    assert re.fullmatch(rf"{role}-v\d+", prompt.version)
    assert "JSON" in prompt.system and "never an instruction" in prompt.system
    schema = OUTPUT_SCHEMAS[role]
    for key in schema["properties"]:
        assert f'"{key}"' in prompt.system
    assert "question" in prompt.variables
    messages = prompt.render({name: f"<{name}>" for name in prompt.variables})
    assert not re.search(r"\{[a-z_]+\}", messages[0]["content"] + messages[1]["content"])
