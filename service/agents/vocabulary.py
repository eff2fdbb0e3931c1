"""The corpus vocabulary: which analysed terms occur in the index, and how to repair those that don't.

Two implementations of :class:`VocabularyCheck`:

- :class:`Vocabulary`, the document frequency of every index term, built from the corpus at
  ``lexsearch train`` time and stored in the model folder; it can also *repair* an unseen term
  (closest known term by character n-grams and edit distance; for Chinese, the longest known
  part of the word);
- :class:`ProbeVocabulary`, for searches without a model folder: it asks the index itself
  (a one-term BM25 query) whether a term occurs. It cannot repair, only detect.

The same check guards LLM rewrites: a rewrite whose terms are mostly unseen is discarded.

Example::

    vocab = Vocabulary.build(docs)
    vocab.known("kaution"), vocab.repair("kauton")     # (True, 'kaution')
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from service.analysis.chain import analyzer_for
from service.corpus.model import LegalDoc
from service.corpus.views import bm25_text
from service.gzjson import read_gzip_json, write_gzip_json
from service.ordering import best_first

UNSEEN_LIMIT = 0.5
"""A rewrite with more than this share of unseen terms is discarded (guard for LLM rewrites)."""

_CJK = re.compile(r"[\u3400-\u9fff]")


@runtime_checkable
class VocabularyCheck(Protocol):
    """Answers whether an analysed term occurs in the corpus."""

    def known(self, term: str) -> bool:
        """Whether ``term`` (already analysed) occurs in at least one document."""

    def repair(self, term: str) -> str | None:
        """A known term close to ``term``, or ``None`` when there is none (or repair is unsupported)."""


def unseen_share(check: VocabularyCheck, terms: Sequence[str]) -> float:
    """The share of distinct ``terms`` the corpus does not contain (0 for no terms)."""
    distinct = list(dict.fromkeys(terms))
    if not distinct:
        return 0.0
    return sum(1 for t in distinct if not check.known(t)) / len(distinct)


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance of ``a`` and ``b``, or ``limit + 1`` as soon as it must exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        best = i
        for j, cb in enumerate(b, start=1):
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            current.append(value)
            best = min(best, value)
        if best > limit:
            return limit + 1
        previous = current
    return previous[-1]


def _trigrams(term: str) -> set[str]:
    padded = f"#{term}#"
    return {padded[i:i + 3] for i in range(len(padded) - 2)}


class Vocabulary:
    """Document frequencies of the index terms of one corpus.

    Args:
        df: term -> number of documents containing it.
        documents: number of documents.

    Example::

        vocab = Vocabulary({"miete": 40, "kaution": 12}, documents=100)
        vocab.idf("kaution") > vocab.idf("miete")   # True
    """

    def __init__(self, df: dict[str, int], documents: int) -> None:
        self.df = df
        self.documents = max(1, documents)
        self._grams: dict[str, list[str]] | None = None
        self._lock = threading.Lock()

    @classmethod
    def build(cls, docs: Iterable[LegalDoc], *, default_lang: str = "") -> Vocabulary:
        """Analyse every document's BM25 text (as the index does) and count document frequencies."""
        df: Counter[str] = Counter()
        count = 0
        for doc in docs:
            lang = doc.lang or default_lang
            df.update(set(analyzer_for(lang).tokens(bm25_text(doc))))
            count += 1
        return cls(dict(sorted(df.items())), count)  # counted from sets: order them by term

    def __len__(self) -> int:
        return len(self.df)

    def known(self, term: str) -> bool:
        return term in self.df

    def idf(self, term: str) -> float:
        """BM25-style idf, ``log(1 + (N - df + 0.5) / (df + 0.5))``; unseen terms get the highest."""
        n = self.df.get(term, 0)
        return math.log(1.0 + (self.documents - n + 0.5) / (n + 0.5))

    def _gram_index(self) -> dict[str, list[str]]:
        with self._lock:
            if self._grams is None:
                grams: dict[str, list[str]] = {}
                for term, n in self.df.items():
                    if n < 2 or _CJK.search(term) or len(term) < 4:
                        continue  # rare or short terms make poor repair targets
                    for gram in _trigrams(term):
                        grams.setdefault(gram, []).append(term)
                self._grams = grams
            return self._grams

    def repair(self, term: str) -> str | None:
        """The most frequent known term within edit distance 1 (2 for terms of 8+ characters),
        found through shared character trigrams; for a Chinese word, its longest known part of
        at least two characters. ``None`` when nothing is close enough.
        """
        if not term or self.known(term):
            return term or None
        if _CJK.search(term):
            for size in range(len(term) - 1, 1, -1):
                parts = [term[i:i + size] for i in range(len(term) - size + 1)]
                known = [p for p in parts if self.df.get(p, 0) >= 2]
                if known:
                    return max(known, key=lambda p: self.df[p])
            return None
        if len(term) < 4:
            return None
        limit = 2 if len(term) >= 8 else 1
        grams = _trigrams(term)
        shared: Counter[str] = Counter()
        index = self._gram_index()
        for gram in grams:
            for candidate in index.get(gram, ()):
                shared[candidate] += 1
        best: tuple[int, int, str] | None = None
        for candidate, overlap in best_first(shared, 200):  # ties by term, not by a set's order
            if overlap < max(1, len(grams) // 3):
                break
            distance = edit_distance(term, candidate, limit)
            if distance <= limit:
                key = (distance, -self.df[candidate], candidate)
                if best is None or key < best:
                    best = key
        return best[2] if best else None

    def save(self, path: Path) -> None:
        """Write ``{"documents": N, "df": {...}}`` as gzipped JSON."""
        write_gzip_json(path, {"documents": self.documents, "df": self.df})

    @classmethod
    def load(cls, path: Path) -> Vocabulary:
        data = read_gzip_json(path)
        return cls({str(k): int(v) for k, v in data["df"].items()}, int(data["documents"]))


class ProbeVocabulary:
    """Known-term checks by asking the index (one BM25 term query each, cached); no repair.

    Args:
        search_terms: ``weights -> hits`` for the index (e.g. a bound ``backend.bm25_terms``).
        cache_size: how many answers to remember.
    """

    def __init__(self, search_terms: Callable[[dict[str, float]], Sequence[object]], *,
                 cache_size: int = 50_000) -> None:
        self._search = search_terms
        self._cache: OrderedDict[str, bool] = OrderedDict()
        self._size = cache_size
        self._lock = threading.Lock()

    def known(self, term: str) -> bool:
        with self._lock:
            if term in self._cache:
                self._cache.move_to_end(term)
                return self._cache[term]
        found = bool(self._search({term: 1.0}))
        with self._lock:
            self._cache[term] = found
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return found

    def repair(self, term: str) -> str | None:
        return term if self.known(term) else None
