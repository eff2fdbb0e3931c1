"""The prompts of the LLM roles: versioned files, rendering, and quoting untrusted data.

Prompts live in ``service/llm/prompts/<role>.txt`` (see :func:`load_prompt`). Roles and variables:

================== ================================================ ==================================
role               variables                                        output (see ``OUTPUT_SCHEMAS``)
================== ================================================ ==================================
planner            question, agents, state                          {"stop": bool, "agents": [str]}
rewrite_*          question, language, evidence                     {"queries": [str]}
rewrite_decompose  question, language, evidence, max_issues         {"queries": [str]}
rewrite_repair     question, language, query, problem               {"queries": [str]}
rerank             question, candidates, k                          {"ids": [str]}
law_predict        question, laws, k                                {"codes": [str]}
hyde               question, language, sub_questions                {"passages": [str]}
complexity         question                                         {<five dimensions>: number}
================== ================================================ ==================================

``rewrite_*`` is rewrite_terminology, rewrite_conditions, rewrite_supportive.
``evidence``, ``candidates``, ``laws``, ``agents``, ``state`` and ``sub_questions`` must be
serialised with :func:`quote_documents` / :func:`quote_json` so that document text reaches the
model only as quoted data.

Example::

    load_prompt("rerank").render({"question": q, "candidates": quote_documents(docs), "k": "10"})
"""

from __future__ import annotations

import importlib.resources
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

PROMPT_PACKAGE = "service.llm.prompts"
ROLES = (
    "planner",
    "rewrite_terminology",
    "rewrite_conditions",
    "rewrite_decompose",
    "rewrite_supportive",
    "rewrite_repair",
    "rerank",
    "law_predict",
    "hyde",
    "complexity",
)

_HEADER = re.compile(r"^# version: (?P<version>(?P<role>[a-z_]+)-v\d+)\s*$")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Prompt:
    """A versioned prompt: a system message and a user template with ``{placeholders}``.

    Only ``{identifier}`` is a placeholder; any other brace (JSON examples) is literal text.
    """

    role: str
    version: str
    system: str
    user: str

    @property
    def variables(self) -> frozenset[str]:
        """The placeholder names used in the system and user templates."""
        return frozenset(_PLACEHOLDER.findall(self.system)) | frozenset(_PLACEHOLDER.findall(self.user))

    def render(self, variables: Mapping[str, str]) -> list[dict[str, str]]:
        """The chat messages, with every placeholder replaced by its value.

        Values are substituted in one pass and never scanned again, so braces or
        ``{placeholder}``-like text inside a document cannot change the template.

        Raises:
            ValueError: when a placeholder has no value or a value has no placeholder.
        """
        given = set(variables)
        missing, extra = self.variables - given, given - self.variables
        if missing or extra:
            raise ValueError(f"prompt {self.version}: missing variables {sorted(missing)}, "
                             f"unknown variables {sorted(extra)}")
        return [
            {"role": "system", "content": render_template(self.system, variables)},
            {"role": "user", "content": render_template(self.user, variables)},
        ]


def render_template(template: str, variables: Mapping[str, str]) -> str:
    """Replace each ``{name}`` in ``template`` by ``str(variables[name])``, in a single pass.

    Example::

        render_template('Q: {q} -> {"ids": []}', {"q": "a {b}"})  # 'Q: a {b} -> {"ids": []}'
    """
    return _PLACEHOLDER.sub(lambda m: str(variables[m.group(1)]) if m.group(1) in variables else m.group(0),
                            template)


@cache
def load_prompt(role: str) -> Prompt:
    """Read and parse ``service/llm/prompts/<role>.txt`` (cached per process).

    File format: a first line ``# version: <role>-vN``, then a line ``[system]`` followed by the
    system message, then a line ``[user]`` followed by the user template.

    Raises:
        ValueError: for an unknown role or a malformed prompt file (both programming errors).
    """
    if role not in ROLES:
        raise ValueError(f"unknown LLM role {role!r}; known roles: {', '.join(ROLES)}")
    text = importlib.resources.files(PROMPT_PACKAGE).joinpath(f"{role}.txt").read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    header = _HEADER.match(first)
    if not header or header.group("role") != role:
        raise ValueError(f"prompt {role}.txt must start with '# version: {role}-vN', got {first!r}")
    sections = re.split(r"^\[(system|user)\]\s*$", rest, flags=re.MULTILINE)
    # re.split with one group gives [before, name, body, name, body].
    parts = dict(zip(sections[1::2], sections[2::2], strict=True))
    if sections[0].strip() or set(parts) != {"system", "user"}:
        raise ValueError(f"prompt {role}.txt must have exactly a [system] and a [user] section")
    return Prompt(role=role, version=header.group("version"),
                  system=parts["system"].strip(), user=parts["user"].strip())


# --- quoting untrusted data ------------------------------------------------------------------


def _escape_markup(text: str) -> str:
    # JSON allows \u003c / \u003e, so the data still parses, but a document can never close
    # the <documents> tag that the prompt wraps it in.
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def _truncate(value: Any, max_chars: int) -> Any:
    if isinstance(value, str) and len(value) > max_chars:
        return value[:max_chars].rstrip() + "…"
    if isinstance(value, list | tuple):
        return [_truncate(v, max_chars) for v in value]
    if isinstance(value, dict):
        return {str(k): _truncate(v, max_chars) for k, v in value.items()}
    return value


def quote_documents(docs: Sequence[Mapping[str, Any]], *, max_chars: int = 1200) -> str:
    """Serialise documents as a JSON array, one object per line, for a prompt's data block.

    Strings longer than ``max_chars`` are cut (with "…"); ``None`` fields are dropped; ``<`` and
    ``>`` are JSON-escaped. Newlines inside texts are escaped by JSON, so a document cannot start
    a line of its own, and any instruction inside it stays a string value inside the array.

    Example::

        quote_documents([{"id": "bgb-823", "title": "§ 823 BGB", "text": "Wer vorsätzlich ..."}])
        # '[\\n{"id": "bgb-823", "title": "§ 823 BGB", "text": "Wer vorsätzlich ..."}\\n]'
    """
    rows = [json.dumps({str(k): _truncate(v, max_chars) for k, v in doc.items() if v is not None},
                       ensure_ascii=False, default=str)
            for doc in docs]
    return _escape_markup("[\n" + ",\n".join(rows) + "\n]")


def quote_json(value: Any, *, max_chars: int = 1200) -> str:
    """Serialise any JSON-able value (a list of names, a state summary) as quoted prompt data.

    Example::

        quote_json(["terminology", "conditions"])   # '["terminology", "conditions"]'
    """
    return _escape_markup(json.dumps(_truncate(value, max_chars), ensure_ascii=False, default=str))
