"""The one OpenAI-compatible LLM client of the project, with versioned prompts and strict JSON.

Every LLM step (planner, rewriters, law prediction, HyDE, complexity, LLM reranker) goes through
:meth:`LlmClient.complete_json`. It never raises for anything the model or the endpoint does:
malformed JSON, schema violations, rejected answers, timeouts, 429, 5xx and an exhausted budget
all come back as an :class:`LlmOutcome` with ``ok=False`` and a ``fallback_reason``, so the caller
uses its offline counterpart and puts ``outcome.to_trace()`` in the trace. It raises only for
programming errors: an unknown role, a missing or extra prompt variable, an unsupported schema.

Prompts live in ``service/prompts/<role>.txt`` (see :func:`load_prompt`). Roles and variables:

================== ================================================ ==================================
role               variables                                        output (see ``OUTPUT_SCHEMAS``)
================== ================================================ ==================================
planner            question, agents, state                          {"stop": bool, "agents": [str]}
rewrite_*          question, language, evidence                     {"queries": [str]}
rewrite_repair     question, language, query, problem               {"queries": [str]}
rerank             question, candidates, k                          {"ids": [str]}
law_predict        question, laws, k                                {"codes": [str]}
hyde               question, language, sub_questions                {"passages": [str]}
complexity         question                                         {<five dimensions>: number}
================== ================================================ ==================================

``rewrite_*`` is rewrite_terminology, rewrite_conditions, rewrite_decompose, rewrite_supportive.
``evidence``, ``candidates``, ``laws``, ``agents``, ``state`` and ``sub_questions`` must be
serialised with :func:`quote_documents` / :func:`quote_json` so that document text reaches the
model only as quoted data.

Example::

    client = LlmClient(settings.llm)
    budget = CallBudget.from_settings(settings.llm)          # one per query
    outcome = client.complete_json(
        "rerank",
        {"question": q, "candidates": quote_documents(docs), "k": "10"},
        OUTPUT_SCHEMAS["rerank"], budget=budget, validate=only_ids_from(docs))
    ids = outcome.value["ids"] if outcome.ok else offline_order
    trace["llm_rerank"] = outcome.to_trace()
"""

from __future__ import annotations

import email.utils
import importlib.resources
import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from service.config import LlmSettings
from service.jsontypes import JSON_TYPES

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

PROMPT_PACKAGE = "service.prompts"
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
COMPLEXITY_DIMENSIONS = (
    "reasoning_chain",
    "knowledge_integration",
    "domain_span",
    "relational_reasoning",
    "conditional_density",
)
"""The five CoAL-RAG intrinsic-complexity dimensions the ``complexity`` prompt rates, each 0..1
(the same names and order as ``service.routing.complexity.DIMENSION_NAMES``)."""

# --- prompts ---------------------------------------------------------------------------------

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
    """Read and parse ``service/prompts/<role>.txt`` (cached per process).

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


# --- strict JSON and the schema subset ---------------------------------------------------------


def parse_json_strict(text: str | None) -> Any:
    """Parse a model reply as exactly one JSON value: no code fences, NaN or duplicate keys.

    Raises:
        ValueError: when ``text`` is not strict JSON.
    """
    if text is None or not text.strip():
        raise ValueError("empty reply")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate keys in {keys}")
        return dict(pairs)

    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, object_pairs_hook=no_duplicates, parse_constant=no_constants)


class SchemaError(ValueError):
    """A value does not match its schema; ``str()`` names the JSON path."""


_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "minItems", "maxItems",
    "uniqueItems", "minLength", "maxLength", "minimum", "maximum", "description", "title",
})


def check_schema(schema: Mapping[str, Any], path: str = "$") -> None:
    """Reject schemas that use keywords :func:`validate_json_schema` does not implement.

    Raises:
        ValueError: naming the unsupported keyword or type (a programming error).
    """
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise ValueError(f"schema at {path} uses unsupported keywords {sorted(unknown)}")
    types = schema.get("type")
    for t in types if isinstance(types, list) else [types] if types else []:
        if t not in JSON_TYPES:
            raise ValueError(f"schema at {path} has unsupported type {t!r}")
    if schema.get("additionalProperties", False) is not False:
        raise ValueError(f"schema at {path}: only additionalProperties: false is supported")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{path}.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{path}[]")


def validate_json_schema(value: Any, schema: Mapping[str, Any], path: str = "$") -> None:
    """Check ``value`` against a JSON-schema subset.

    Supported: type (one name or a list), properties, required, additionalProperties: false,
    items, enum, minItems, maxItems, uniqueItems, minLength, maxLength, minimum, maximum.

    Raises:
        SchemaError: at the first violation, naming its path (``$.ids[3]``).

    Example::

        validate_json_schema({"ids": ["a"]}, OUTPUT_SCHEMAS["rerank"])
    """
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(JSON_TYPES[t](value) for t in names):
            raise SchemaError(f"{path}: expected {' or '.join(names)}, got {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError(f"{path}: {value!r} is not one of the allowed values")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                raise SchemaError(f"{path}: missing required property {name!r}")
        if schema.get("additionalProperties", True) is False:
            extra = sorted(set(value) - set(properties))
            if extra:
                raise SchemaError(f"{path}: unexpected properties {extra}")
        for name, sub in properties.items():
            if name in value:
                validate_json_schema(value[name], sub, f"{path}.{name}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise SchemaError(f"{path}: at least {schema['minItems']} items required, got {len(value)}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaError(f"{path}: at most {schema['maxItems']} items allowed, got {len(value)}")
        if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
            raise SchemaError(f"{path}: items must be unique")
        if "items" in schema:
            for i, item in enumerate(value):
                validate_json_schema(item, schema["items"], f"{path}[{i}]")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise SchemaError(f"{path}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise SchemaError(f"{path}: longer than {schema['maxLength']} characters")
    if JSON_TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaError(f"{path}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaError(f"{path}: {value} is above the maximum {schema['maximum']}")


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
OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "planner": _object({"stop": {"type": "boolean"}, "agents": _strings(5, unique=True)}),
    "rewrite_terminology": _QUERIES,
    "rewrite_conditions": _QUERIES,
    "rewrite_decompose": _QUERIES,
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


# --- budget and outcome ----------------------------------------------------------------------


class CallBudget:
    """Per-query limits on LLM calls and tokens, shared safely between threads.

    A call is reserved before it is sent (:meth:`try_acquire_call`), so concurrent agents never
    exceed ``max_calls``; tokens are known only afterwards, so the last call may overshoot
    ``max_tokens`` by its own size.

    Example::

        budget = CallBudget.from_settings(settings.llm)
        budget.exhausted          # False
        budget.to_dict()          # {"calls": 0, "max_calls": 12, "tokens": 0, "max_tokens": 20000}
    """

    def __init__(self, max_calls: int, max_tokens: int) -> None:
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self._calls = 0
        self._tokens = 0
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: LlmSettings) -> CallBudget:
        """A fresh budget with ``max_calls_per_query`` and ``max_tokens_per_query``."""
        return cls(settings.max_calls_per_query, settings.max_tokens_per_query)

    @property
    def calls(self) -> int:
        return self._calls

    @property
    def tokens(self) -> int:
        return self._tokens

    @property
    def remaining_calls(self) -> int:
        with self._lock:
            return max(0, self.max_calls - self._calls)

    @property
    def remaining_tokens(self) -> int:
        with self._lock:
            return max(0, self.max_tokens - self._tokens)

    @property
    def exhausted(self) -> bool:
        with self._lock:
            return self._exhausted()

    def _exhausted(self) -> bool:
        return self._calls >= self.max_calls or self._tokens >= self.max_tokens

    def try_acquire_call(self) -> bool:
        """Reserve one call; ``False`` (and nothing reserved) when calls or tokens are used up."""
        with self._lock:
            if self._exhausted():
                return False
            self._calls += 1
            return True

    def add_tokens(self, tokens: int) -> None:
        """Record the tokens a finished call used."""
        with self._lock:
            self._tokens += max(0, int(tokens))

    def to_dict(self) -> dict[str, int]:
        with self._lock:
            return {"calls": self._calls, "max_calls": self.max_calls,
                    "tokens": self._tokens, "max_tokens": self.max_tokens}


@dataclass(frozen=True)
class LlmOutcome:
    """What one :meth:`LlmClient.complete_json` produced.

    Attributes:
        ok: ``True`` when ``value`` is valid JSON that passed the schema and ``validate``.
        value: the parsed (and possibly ``validate``-normalised) value; ``None`` unless ``ok``.
        fallback_reason: '' when ok; else one of ``disabled``, ``budget``, ``malformed_json``,
            ``schema``, ``rejected: <message>``, ``timeout``, ``connection``, ``http_<status>``,
            ``error: <exception class>``.
        attempts: answers asked for (1 + retries after malformed, invalid or rejected output).
        calls: HTTP requests sent, including retries after 429, 5xx, timeouts.
        tokens: tokens used by those calls (from ``usage``, estimated when a server omits it).
        latency_ms: wall time of the whole call, backoff included.
        errors: one short line per failed call or rejected answer, oldest first.
    """

    ok: bool
    value: Any
    fallback_reason: str
    attempts: int
    calls: int
    tokens: int
    latency_ms: float
    role: str
    prompt_version: str
    errors: tuple[str, ...] = field(default=())

    def to_trace(self) -> dict[str, Any]:
        """A JSON-able summary for the search trace (without ``value``)."""
        return {"role": self.role, "prompt_version": self.prompt_version, "ok": self.ok,
                "fallback_reason": self.fallback_reason, "attempts": self.attempts, "calls": self.calls,
                "tokens": self.tokens, "latency_ms": round(self.latency_ms, 1), "errors": list(self.errors)}


# --- the client ------------------------------------------------------------------------------

_SEMAPHORES: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_SEMAPHORES_LOCK = threading.Lock()


def _semaphore(base_url: str, size: int) -> threading.BoundedSemaphore:
    # Process-wide, so every client of the same endpoint (one per pipeline, agent or thread)
    # shares one bound on requests in flight.
    with _SEMAPHORES_LOCK:
        return _SEMAPHORES.setdefault((base_url, size), threading.BoundedSemaphore(size))


def _retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), if any."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _estimate_tokens(messages: list[dict[str, str]], reply: str) -> int:
    # Some OpenAI-compatible servers omit usage; ~4 characters a token keeps the budget honest.
    chars = sum(len(m["content"]) for m in messages) + len(reply)
    return max(1, chars // 4)


@dataclass
class _Run:
    """Mutable bookkeeping of one complete_json call."""

    role: str
    version: str
    started: float
    attempts: int = 0
    calls: int = 0
    tokens: int = 0
    transport_retries: int = 0
    errors: list[str] = field(default_factory=list)

    def outcome(self, ok: bool, value: Any = None, reason: str = "") -> LlmOutcome:
        return LlmOutcome(ok=ok, value=value if ok else None, fallback_reason=reason,
                          attempts=self.attempts, calls=self.calls, tokens=self.tokens,
                          latency_ms=(time.monotonic() - self.started) * 1000, role=self.role,
                          prompt_version=self.version, errors=tuple(self.errors))


class _GiveUp(Exception):
    """The endpoint failed for good (or the budget is spent): fall back with ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Rejected(Exception):
    """The answer was not acceptable; ``reason`` is the fallback reason if it stays that way."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail[:300]


def _accept(content: str | None, schema: Mapping[str, Any], validate: Callable[[Any], Any] | None) -> Any:
    """The parsed, schema-checked and ``validate``-d value of a reply.

    Raises:
        _Rejected: with reason ``malformed_json``, ``schema`` or ``rejected: <message>``.
    """
    try:
        value = parse_json_strict(content)
    except (ValueError, RecursionError) as exc:
        raise _Rejected("malformed_json", f"not strict JSON: {exc}") from None
    try:
        validate_json_schema(value, schema)
    except SchemaError as exc:
        raise _Rejected("schema", f"schema: {exc}") from None
    if validate is None:
        return value
    try:
        replaced = validate(value)
    except ValueError as exc:
        message = str(exc)[:120]
        raise _Rejected(f"rejected: {message}", f"rejected: {message}") from None
    return value if replaced is None else replaced


class LlmClient:
    """JSON completions from an OpenAI-compatible endpoint, with retries, budget and a concurrency bound.

    Cheap to construct; the ``openai.OpenAI`` client is created on first use. Safe to share
    between threads.

    Args:
        settings: endpoint, model, timeout, ``max_retries`` (for 429, 5xx, timeouts and connection
            errors, per :meth:`complete_json` call) and ``max_concurrency`` (requests in flight
            per endpoint, process-wide).
        backoff_base_s: first backoff without ``Retry-After``; doubles per retry, with jitter.
        max_backoff_s: cap on any single wait, ``Retry-After`` included.
        content_retries: how often malformed, invalid or rejected output is asked for again.

    Example::

        client = LlmClient(settings.llm)
        outcome = client.complete_json("complexity", {"question": q}, OUTPUT_SCHEMAS["complexity"],
                                       budget=CallBudget.from_settings(settings.llm))
    """

    def __init__(self, settings: LlmSettings, *, backoff_base_s: float = 0.5, max_backoff_s: float = 8.0,
                 content_retries: int = 2) -> None:
        self.settings = settings
        self.backoff_base_s = backoff_base_s
        self.max_backoff_s = max_backoff_s
        self.content_retries = content_retries
        self._client: openai.OpenAI | None = None
        self._client_lock = threading.Lock()

    def _openai(self) -> openai.OpenAI:
        with self._client_lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self.settings.base_url,
                    # Local OpenAI-compatible servers often need no key; the SDK insists on one.
                    api_key=self.settings.api_key or "unused",
                    timeout=self.settings.timeout_s,
                    max_retries=0,  # our own policy below, so calls are counted and flagged
                )
            return self._client

    def complete_json(
        self,
        role: str,
        variables: Mapping[str, str],
        schema: Mapping[str, Any],
        *,
        budget: CallBudget,
        validate: Callable[[Any], Any] | None = None,
    ) -> LlmOutcome:
        """Ask the model for one JSON object for ``role`` and check it strictly.

        Args:
            role: one of :data:`ROLES`; selects ``service/prompts/<role>.txt``.
            variables: a string for every placeholder of the prompt (see the module docstring).
            schema: the JSON-schema subset the answer must match (see :func:`validate_json_schema`),
                usually ``OUTPUT_SCHEMAS[role]`` or a tightened copy.
            budget: the query's :class:`CallBudget`; every HTTP request counts one call.
            validate: optional extra check on the parsed value; raise ``ValueError`` to reject
                (the answer is asked for again), or return a replacement value (``None`` keeps it).

        Returns:
            An :class:`LlmOutcome`; ``ok=False`` with ``fallback_reason`` for every failure of the
            model or the endpoint. Malformed, invalid or rejected answers are asked for again up
            to ``content_retries`` times, with the reason added to the conversation.

        Raises:
            ValueError: for an unknown role, missing or unknown variables, or an unsupported schema.
        """
        prompt = load_prompt(role)
        check_schema(schema)
        messages = prompt.render(variables)
        run = _Run(role=role, version=prompt.version, started=time.monotonic())
        if not self.settings.enabled:
            return run.outcome(False, reason="disabled")
        if budget.exhausted:
            return run.outcome(False, reason="budget")
        reason = ""
        for _ in range(1 + self.content_retries):
            run.attempts += 1
            try:
                content = self._send(messages, budget, run)
                return run.outcome(True, _accept(content, schema, validate))
            except _GiveUp as stop:
                reason = stop.reason
                break
            except _Rejected as rejected:
                reason = rejected.reason
                run.errors.append(rejected.detail)
                # Same prompt, same temperature would give the same answer: say what was wrong.
                messages = [*messages[:2], {"role": "user", "content": (
                    f"Your previous answer was rejected ({rejected.detail}). Answer again with only "
                    "one JSON object of exactly the required shape.")}]
        log.info("llm %s fell back after %d attempts, %d calls: %s",
                 prompt.version, run.attempts, run.calls, reason)
        return run.outcome(False, reason=reason)

    def _send(self, messages: list[dict[str, str]], budget: CallBudget, run: _Run) -> str | None:
        """One answer's text (``None`` if the reply has none), retrying 429, 5xx, timeouts and
        connection errors while ``run`` has transport retries left.

        Raises:
            _GiveUp: when the budget is spent, or a failure is final.
        """
        import openai

        while True:
            if not budget.try_acquire_call():
                raise _GiveUp("budget")
            run.calls += 1
            retry_after: float | None = None
            try:
                with _semaphore(self.settings.base_url, self.settings.max_concurrency):
                    response = self._openai().chat.completions.create(
                        model=self.settings.model,
                        messages=messages,  # type: ignore[arg-type]
                        response_format={"type": "json_object"},
                        temperature=0,
                    )
            except openai.APITimeoutError:
                reason, retryable = "timeout", True
            except openai.APIConnectionError:
                reason, retryable = "connection", True
            except openai.APIStatusError as exc:
                reason = f"http_{exc.status_code}"
                retryable = exc.status_code == 429 or exc.status_code >= 500
                retry_after = _retry_after_s(exc.response.headers)
            except openai.OpenAIError as exc:
                reason, retryable = f"error: {type(exc).__name__}", False
            else:
                return self._content(response, messages, budget, run)
            run.errors.append(reason)
            if not retryable or run.transport_retries >= self.settings.max_retries:
                raise _GiveUp(reason)
            time.sleep(self._backoff_s(run.transport_retries, retry_after))
            run.transport_retries += 1

    @staticmethod
    def _content(response: Any, messages: list[dict[str, str]], budget: CallBudget, run: _Run) -> str | None:
        """The reply text (``None`` if the envelope has none); records the tokens used."""
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            content = None
        usage = getattr(response, "usage", None)
        total = getattr(usage, "total_tokens", None)
        tokens = total if isinstance(total, int) else _estimate_tokens(messages, content or "")
        run.tokens += tokens
        budget.add_tokens(tokens)
        return content if isinstance(content, str) else None

    def _backoff_s(self, retry_index: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        # Exponential with "equal jitter": at least half the nominal wait, so the minimum is known.
        nominal = min(self.backoff_base_s * 2**retry_index, self.max_backoff_s)
        return nominal / 2 + random.uniform(0, nominal / 2)
