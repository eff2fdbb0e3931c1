"""Shared test data: the mini fixture dataset, a real embedder with a per-session cache, built indices."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from service.backends.embedded import EmbeddedBackend
from service.corpus.datasets import Dataset, load_corpus
from service.corpus.model import LegalDoc
from service.embeddings.cache import CachedEmbedder
from service.embeddings.use import UseEmbedder
from service.indexing import index_documents

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MINI = FIXTURES / "mini"
TRILINGUAL = FIXTURES / "trilingual"
"""22 Swiss federal articles, each in German, French and Italian (versions of one work)."""
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "swiss-excerpt"


LONG_FACTS = ("Sachverhalt: A mietet seit 2015 eine Wohnung in Zürich und hat damals drei Monatsmieten auf ein "
              "Sparkonto einbezahlt. Er zieht Ende März aus, die Wohnung wird ohne Mängel abgenommen. ")


def long_question(chars: int) -> str:
    """Facts first, the question last, as in exam questions and case files."""
    question = " Frage: Der Vermieter gibt die Kaution nach dem Auszug nicht zurück. Was kann A tun?"
    facts = (LONG_FACTS * (chars // len(LONG_FACTS) + 1))[: chars - len(question)]
    return facts + question


@pytest.fixture(scope="session")
def mini_dataset() -> Dataset:
    return Dataset(MINI)


@pytest.fixture(scope="session")
def mini_docs(mini_dataset: Dataset) -> list[LegalDoc]:
    return load_corpus(mini_dataset)


@pytest.fixture(scope="session")
def embedding_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embedding-cache")


@pytest.fixture(scope="session")
def use_embedder(embedding_cache_dir: Path) -> CachedEmbedder:
    """The default embedder (USE v3, real model), cached on disk for the session."""
    return CachedEmbedder(UseEmbedder(threads=1), embedding_cache_dir, batch_size=32)


@pytest.fixture(scope="session")
def mini_embedded(tmp_path_factory: pytest.TempPathFactory, mini_docs: list[LegalDoc],
                  use_embedder: CachedEmbedder) -> Iterator[tuple[EmbeddedBackend, str]]:
    """An embedded index of the mini corpus, shared read-only by the tests of a session."""
    backend = EmbeddedBackend(tmp_path_factory.mktemp("indices"))
    report = index_documents(backend, use_embedder, "mini", mini_docs, language="")
    assert report.ok, report.failed
    yield backend, "mini"


@pytest.fixture(scope="session")
def trilingual_dataset() -> Dataset:
    return Dataset(TRILINGUAL)


@pytest.fixture(scope="session")
def trilingual_docs(trilingual_dataset: Dataset) -> list[LegalDoc]:
    """The trilingual fixture corpus with its versions grouped (66 documents, 22 works)."""
    return load_corpus(trilingual_dataset)


@pytest.fixture(scope="session")
def trilingual_embedded(tmp_path_factory: pytest.TempPathFactory, trilingual_docs: list[LegalDoc],
                        use_embedder: CachedEmbedder) -> Iterator[tuple[EmbeddedBackend, str]]:
    """An embedded index of the trilingual corpus, shared read-only (the reference for other backends)."""
    backend = EmbeddedBackend(tmp_path_factory.mktemp("indices"))
    report = index_documents(backend, use_embedder, "trilingual", trilingual_docs, language="de")
    assert report.ok, report.failed
    yield backend, "trilingual"
