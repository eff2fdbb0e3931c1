"""The per-query budget of LLM calls and tokens.

Example::

    budget = CallBudget.from_settings(settings.llm)          # one per query
"""

from __future__ import annotations

import threading

from service.config import LlmSettings


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
