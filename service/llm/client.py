"""The one OpenAI-compatible LLM client of the project: strict JSON answers, retries, budget.

Every LLM step (planner, rewriters, law prediction, HyDE, complexity, LLM reranker) goes through
:meth:`LlmClient.complete_json`. It never raises for anything the model or the endpoint does:
malformed JSON, schema violations, rejected answers, timeouts, 429, 5xx and an exhausted budget
all come back as an :class:`LlmOutcome` with ``ok=False`` and a ``fallback_reason``, so the caller
uses its offline counterpart and puts ``outcome.to_trace()`` in the trace. It raises only for
programming errors: an unknown role, a missing or extra prompt variable, an unsupported schema.

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
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from service import json_strict
from service.backoff import backoff_s
from service.config import LlmSettings
from service.lazy import built_once
from service.llm.budget import CallBudget
from service.llm.prompt import load_prompt

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)


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
        if content is None or not content.strip():
            raise ValueError("empty reply")
        value = json_strict.loads_strict(content)
    except (ValueError, RecursionError) as exc:
        raise _Rejected("malformed_json", f"not strict JSON: {exc}") from None
    try:
        json_strict.validate(value, schema)
    except json_strict.SchemaError as exc:
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
        return built_once(self, "_client", self._client_lock, self._new_client)

    def _new_client(self) -> openai.OpenAI:
        import openai

        return openai.OpenAI(
            base_url=self.settings.base_url,
            # Local OpenAI-compatible servers often need no key; the SDK insists on one.
            api_key=self.settings.api_key or "unused",
            timeout=self.settings.timeout_s,
            max_retries=0,  # our own policy below, so calls are counted and flagged
        )

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
            role: one of :data:`ROLES`; selects ``service/llm/prompts/<role>.txt``.
            variables: a string for every placeholder of the prompt (see the module docstring).
            schema: the JSON-schema subset the answer must match (see :func:`service.json_strict.validate`),
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
        json_strict.check_schema(schema)
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
        return backoff_s(retry_index, base_s=self.backoff_base_s, cap_s=self.max_backoff_s)
