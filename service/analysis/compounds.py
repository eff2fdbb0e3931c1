"""German compound splitting against a word list.

Lay questions use compounds the statute spells apart or differently ("Mietkaution",
"Nebenkostenabrechnung", "Kündigungsfrist"), so BM25 misses them. A compound is split when it
can be cut into words of the list, with the usual linking elements (-s-, -es-, -n-, -en-, -e-)
allowed between them. The original token is kept and the parts are added, as Lucene's
dictionary decompounder does, so the engines can mirror the chain with the same word list.

Example::

    splitter = CompoundSplitter({"miete", "kaution", "frist", "kündigung"})
    splitter.split("mietkaution")        # ['miet', 'kaution'] -> parts as they appear in the word
    splitter.split("kündigungsfrist")    # ['kündigung', 'frist']
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

LINKS = ("", "s", "es", "n", "en", "e", "er")
MIN_PART = 4
MIN_COMPOUND = 8


class CompoundSplitter:
    """Splits lowercase German compounds into parts that are in ``words`` (also lowercase)."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = frozenset(w for w in words if len(w) >= MIN_PART)
        self._split = lru_cache(maxsize=100_000)(self._split_uncached)

    def _known(self, part: str) -> bool:
        if part in self.words:
            return True
        # "Miet-kaution": the head may drop its final -e ("Miete") inside a compound.
        return part + "e" in self.words

    def _split_uncached(self, token: str) -> tuple[str, ...]:
        if len(token) < MIN_COMPOUND or not token.isalpha():
            return ()
        # Prefer the longest known tail; the head may itself be a compound.
        for cut in range(MIN_PART, len(token) - MIN_PART + 1):
            tail = token[cut:]
            if not self._known(tail):
                continue
            head = token[:cut]
            for link in LINKS:
                if link and not head.endswith(link):
                    continue
                stem = head[: len(head) - len(link)] if link else head
                if len(stem) < MIN_PART:
                    continue
                if self._known(stem):
                    return (stem, tail)
                inner = self._split(stem)
                if inner:
                    return (*inner, tail)
        return ()

    def split(self, token: str) -> list[str]:
        """The parts of ``token``, or ``[]`` when it is not a compound of known words."""
        return list(self._split(token))
