"""The search-backend interface every engine implements (embedded, OpenSearch, Elasticsearch).

The pipeline only talks to :class:`SearchBackend`; which engine sits behind it is decided in
``service.pipelines.build``. A shared conformance suite (``tests/backends/conformance.py``)
runs against each implementation.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from service.config import RetrievalSettings
from service.corpus.model import Filters, Hit, LegalDoc


@dataclass(slots=True)
class IndexReport:
    """What a write did: documents sent, indexed, and those that failed with the reason."""

    sent: int = 0
    indexed: int = 0
    failed: dict[str, str] = field(default_factory=dict)

    def merge(self, other: IndexReport) -> None:
        self.sent += other.sent
        self.indexed += other.indexed
        self.failed.update(other.failed)

    @property
    def ok(self) -> bool:
        return not self.failed and self.sent == self.indexed

    def to_dict(self) -> dict[str, Any]:
        return {"sent": self.sent, "indexed": self.indexed, "failed": dict(self.failed)}


@dataclass(frozen=True, slots=True)
class IndexStats:
    """Facts about one index, for ``GET /v1/indices``, routing calibration and eval caching."""

    name: str
    documents: int
    dim: int
    embedder: str
    languages: tuple[str, ...]
    laws: int
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "documents": self.documents,
            "dim": self.dim,
            "embedder": self.embedder,
            "languages": list(self.languages),
            "laws": self.laws,
            **self.extra,
        }


class ChunkWriter(Protocol):
    """Writes one chunk of a bulk load (see :meth:`SearchBackend.bulk`)."""

    def __call__(self, docs: Sequence[LegalDoc], vectors: np.ndarray, /) -> IndexReport: ...


@runtime_checkable
class SearchBackend(Protocol):
    """A place where a corpus lives and can be searched by BM25 and by vector.

    Implementations are named in :data:`service.plugins.BACKENDS` and built with
    ``Class.from_config(settings)``.

    Every retrieval method applies ``filters`` inside the retriever, so ``k`` results are the
    best ``k`` among matching documents. Hits carry the retriever's score in
    ``hit.scores["bm25"|"knn"]`` and its 1-based rank in ``hit.ranks``.
    """

    def ensure_index(self, name: str, *, language: str, dim: int, embedder: str) -> None:
        """Create the index, or check that an existing one matches.

        Raises:
            IndexCorrupt: when an index of that name exists with another dimension or embedder.
        """

    def write(self, name: str, docs: Sequence[LegalDoc], vectors: np.ndarray) -> IndexReport:
        """Insert or replace documents by id, with one L2-normalised vector per document."""

    def bulk(self, name: str) -> AbstractContextManager[ChunkWriter]:
        """A writer for the chunks of one large load: ``with backend.bulk(name) as write: write(docs, vectors)``.

        Each call inserts or replaces documents like :meth:`write` and returns its report. The
        embedded engine publishes all chunks together when the block ends (nothing when it raises), so
        a load costs time linear in its size; the engines write each chunk as it comes.
        """

    def doc_freqs(self, name: str, terms: Sequence[str]) -> dict[str, int]:
        """How many documents hold each analysed term of the body field (long-question term selection)."""

    def query_languages(self, name: str) -> tuple[str, ...]:
        """The languages a question's BM25 terms are analysed in for this index (its documents' languages,
        else its declared one; :func:`~service.analysis.crosslingual.bm25_query_weights` reads the first as
        the main one)."""

    def delete(self, name: str, ids: Sequence[str]) -> int:
        """Remove documents by id from every retriever; returns how many existed."""

    def bm25(self, name: str, query: str, *, k: int, filters: Filters | None = None,
             lang: str = "") -> list[Hit]:
        """BM25 over the analysed text; ``lang`` picks the query analysis ('' = detect)."""

    def bm25_terms(self, name: str, weights: dict[str, float], *, k: int,
                   filters: Filters | None = None) -> list[Hit]:
        """BM25 for already-analysed terms, each with a weight (the agents' query expansion and the
        vocabulary check); terms with a weight of 0 or less are ignored."""

    def knn(self, name: str, vector: np.ndarray, *, k: int, filters: Filters | None = None) -> list[Hit]:
        """Nearest neighbours by cosine similarity of L2-normalised vectors."""

    def probe(self, name: str, query: str, vector: np.ndarray, *, k: int,
              filters: Filters | None = None, lang: str = "") -> tuple[list[Hit], list[Hit]]:
        """BM25 and kNN side by side, in one round trip where the engine allows."""

    def similarities(self, name: str, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """The kNN score (cosine) of ``vector`` with each of ``ids``, also those a kNN search would not
        return; a work scores as its best version. Ids not in the index are absent from the result."""

    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of each of ``ids``, one row per version (a document of its own: one row;
        a work: one per language version). Ids not in the index are absent from the result."""

    def fetch(self, name: str, ids: Sequence[str]) -> dict[str, LegalDoc]:
        """Documents by id (missing ids are absent from the result)."""

    def count(self, name: str) -> int:
        """Number of live documents."""

    def stats(self, name: str) -> IndexStats:
        """Facts about the index (documents, dimension, embedder, languages)."""

    def law_names(self, name: str) -> tuple[str, ...]:
        """The distinct law names of the index's documents, sorted (``()`` where no law field is mapped)."""

    def kinds(self, name: str) -> tuple[str, ...]:
        """The distinct document kinds of the index's documents (``"statute"``, ``"decision"``, ...), sorted
        (``()`` where no kind field is mapped)."""

    def exists(self, name: str) -> bool:
        """Whether the index exists."""

    def metadata(self, name: str) -> dict[str, Any]:
        """Facts stored with the index (e.g. ``calibration`` for routing); ``{}`` when none."""

    def update_metadata(self, name: str, **fields: Any) -> None:
        """Store or replace top-level entries of the index's metadata."""

    def scan(self, name: str) -> Iterator[LegalDoc]:
        """Every live document, in no particular order (for re-indexing and vocabulary building)."""

    def drop(self, name: str) -> None:
        """Delete the index entirely (on the engines: every version behind the alias); nothing when missing."""

    def list_indices(self) -> list[str]:
        """The names of the lexsearch indices this backend holds, sorted."""

    def ping(self) -> bool:
        """Whether the engine answers (``/ready``); never raises for an unreachable engine."""


@runtime_checkable
class NativeFusion(Protocol):
    """A backend that fuses BM25 and kNN itself, in one request (OpenSearch's hybrid query)."""

    def hybrid(self, name: str, query: str, vector: np.ndarray, *, k: int, fusion: RetrievalSettings,
               weights: Mapping[str, float], filters: Filters | None = None, lang: str = "") -> list[Hit]:
        """The ``k`` best documents of BM25 and kNN (``k`` hits each) fused by ``fusion`` (RRF or linear,
        with ``weights`` ``{"bm25": w, "knn": w}``), the fused score in ``hit.scores["hybrid"]``."""
