"""Building a collaborator once, on first use, when several threads may ask for it at the same time.

Example::

    @property
    def backend(self) -> SearchBackend:
        return built_once(self, "_backend", self._lock, lambda: build_backend(self.settings))
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

T = TypeVar("T")


def built_once(owner: Any, attribute: str, lock: AbstractContextManager[Any], build: Callable[[], T]) -> T:
    """``owner.<attribute>``, set by ``build()`` (under ``lock``) while it is ``None``."""
    with lock:
        value = getattr(owner, attribute)
        if value is None:
            value = build()
            setattr(owner, attribute, value)
        return value
