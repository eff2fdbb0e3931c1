"""Putting a corpus into a backend: citation extraction, embedding (cached), chunked writes.

Used by ``lexsearch index``, by ``lexsearch eval`` (which builds missing dataset indices), and by
the ingest job of the HTTP service.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from service.analysis.chain import analyzers_dir
from service.backends.base import IndexReport, SearchBackend
from service.corpus.model import LegalDoc
from service.corpus.views import embedding_text, section_key
from service.embeddings.cache import CachedEmbedder

if TYPE_CHECKING:
    from service.backends.engine.backend import EngineBackend
    from service.config import Settings

WRITE_CHUNK = 4096
SECTIONS_KEY = "sections"
"""The index-metadata flag: some articles have headings above them (hybrid fusion shares kNN evidence
within a section, ``retrieval.section_share``)."""


CITATION_RULES_KEY = "citation_rules"
"""The index-metadata entry naming the citation rules its documents' links were read with
(:func:`citation_rules`). Links are read once, at indexing; an index read by other rules (or by a
lexsearch that kept no entry) keeps its old links until it is rebuilt (:func:`citation_links_current`)."""


@functools.cache
def citation_rules() -> str:
    """A short digest of the citation extraction (:mod:`service.corpus.citations`) of this lexsearch."""
    from service.corpus import citations

    return hashlib.sha256(Path(citations.__file__).read_bytes()).hexdigest()[:12]


def citation_links_current(metadata: dict[str, Any]) -> bool:
    """Whether an index with this metadata linked its documents by this lexsearch's citation rules."""
    return metadata.get(CITATION_RULES_KEY) == citation_rules()


SWISS_META_KEYS = ("law_de", "sr")
"""Meta fields that mark an article of Swiss federal law: the German abbreviation that ties its language
versions together (docs/SWISS.md) and its number in the Classified Compilation (SR)."""


def with_citations(doc: LegalDoc) -> LegalDoc:
    """The document with ``cites`` filled from its text when the corpus gave none.

    An article of Swiss law (:data:`SWISS_META_KEYS`) reads a code named without its country ("du code
    civil", "del Codice penale") as the Swiss one.
    """
    if doc.cites:
        return doc
    from service.corpus.citations import cites_of

    swiss = any(doc.meta.get(key) for key in SWISS_META_KEYS)
    found = cites_of(doc.text, law=doc.law, lang=doc.lang, swiss=swiss)
    return doc.with_cites(found) if found else doc


def index_documents(backend: SearchBackend, embedder: CachedEmbedder, name: str, docs: Sequence[LegalDoc], *,
                    language: str, progress: bool = False) -> IndexReport:
    """Upsert ``docs`` into index ``name`` (created when missing), embedding only uncached texts.

    Documents that are versions of a work (``LegalDoc.versions``) record the largest number of
    versions in the index metadata (``max_versions``); articles with headings above them set its
    ``sections`` flag (:data:`SECTIONS_KEY`).

    Returns:
        The merged :class:`IndexReport` of all chunks.
    """
    backend.ensure_index(name, language=language, dim=embedder.dim, embedder=embedder.name)
    # A new index gets this lexsearch's citation rules; one that already holds documents keeps the
    # rules (or the missing entry) of its older documents, whose links an update does not re-read.
    fresh = backend.count(name) == 0
    docs = [with_citations(d) for d in docs]
    vectors = embedder.embed_documents([embedding_text(d) for d in docs], progress=progress)
    report = IndexReport()
    bar = tqdm(total=len(docs), desc="indexing", unit="doc", disable=not progress, leave=False)
    with backend.bulk(name) as write:
        for start in range(0, len(docs), WRITE_CHUNK):
            chunk = docs[start:start + WRITE_CHUNK]
            report.merge(write(chunk, vectors[start:start + WRITE_CHUNK]))
            bar.update(len(chunk))
    bar.close()
    versions = max((len(d.versions) for d in docs), default=1)
    if versions > 1 and versions > int(backend.metadata(name).get("max_versions") or 1):
        # Retrievers fetch this many versions per work they return (see service.corpus.works.collapse).
        backend.update_metadata(name, max_versions=versions)
    if any(section_key(d) for d in docs) and not backend.metadata(name).get(SECTIONS_KEY):
        backend.update_metadata(name, **{SECTIONS_KEY: True})
    if fresh and report.indexed:
        backend.update_metadata(name, **{CITATION_RULES_KEY: citation_rules()})
    return report


def rebuild_embedded(root: Path, name: str, embedder: CachedEmbedder, docs: Iterable[LegalDoc], *,
                     language: str, hnsw_min_docs: int, progress: bool = False) -> IndexReport:
    """Build an embedded index in a temporary folder, then swap it in place of ``root/name``.

    Readers of the old index keep working until the swap; a failed build leaves the old index as it was.
    """
    from service.backends.embedded import EmbeddedBackend

    staging_name = f".{name}.building"
    staging = EmbeddedBackend(root, hnsw_min_docs=hnsw_min_docs)
    staging.drop(staging_name)
    try:
        report = index_documents(staging, embedder, staging_name, list(docs), language=language,
                                 progress=progress)
    except BaseException:
        staging.drop(staging_name)
        raise
    target, old = root / name, root / f".{name}.old"
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        target.rename(old)
    (root / staging_name).rename(target)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    manifest["name"] = name
    (target / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
    if old.exists():
        shutil.rmtree(old)
    return report


def rebuild_engine(backend: EngineBackend, name: str, embedder: CachedEmbedder, docs: Iterable[LegalDoc], *,
                   language: str, progress: bool = False) -> IndexReport:
    """Build the next version ``name-vN`` on an Elasticsearch/OpenSearch backend, then swap the alias ``name``.

    Searches on ``name`` keep reading the old version until the atomic alias swap; older versions
    are deleted afterwards. A build that indexes nothing (or raises) is discarded and the live
    index stays as it was.

    Raises:
        LexsearchError: when documents were sent but none could be indexed.
    """
    from service.backends._requests import CorpusKind
    from service.errors import LexsearchError

    docs = list(docs)
    kind = CorpusKind.of(d.kind for d in docs)
    physical = backend.create_version(name, language=language, dim=embedder.dim, embedder=embedder.name, kind=kind)
    try:
        report = index_documents(backend, embedder, physical, docs, language=language, progress=progress)
    except BaseException:
        backend.discard(physical)
        raise
    if report.sent and not report.indexed:
        backend.discard(physical)
        first = next(iter(report.failed.items()), ("", "no reason given"))
        raise LexsearchError(f"none of {report.sent} documents could be indexed, so {name!r} was left unchanged; "
                             f"first failure: {first[0]}: {first[1]}")
    backend.publish(name, physical)
    return report


def rebuild_index(backend: SearchBackend, settings: Settings, name: str, embedder: CachedEmbedder,
                  docs: Iterable[LegalDoc], *, language: str, progress: bool = False) -> IndexReport:
    """Rebuild index ``name`` from scratch on the configured engine and swap it in atomically:
    :func:`rebuild_embedded` for the embedded engine, :func:`rebuild_engine` (a new version behind the
    alias) for Elasticsearch/OpenSearch."""
    if settings.backend.kind == "embedded":
        return rebuild_embedded(Path(settings.index.root), name, embedder, docs, language=language,
                                hnsw_min_docs=settings.backend.hnsw_min_docs, progress=progress)
    return rebuild_engine(backend, name, embedder, docs, language=language, progress=progress)  # type: ignore[arg-type]


def index_fingerprint(corpus_hash: str, embedder_name: str, extra: dict[str, object] | None = None) -> str:
    """A short hash naming an index built from this corpus with this configuration.

    It covers the corpus bytes, the embedder, the analyzer definitions, the text views, the
    citation extraction and the index format,
    so a change to any of them builds a new index instead of reusing a stale one.
    """
    from service.backends.embedded import FORMAT_VERSION
    from service.corpus import citations, views

    digest = hashlib.sha256()
    digest.update(corpus_hash.encode())
    digest.update(embedder_name.encode())
    digest.update(str(FORMAT_VERSION).encode())
    digest.update(Path(views.__file__).read_bytes())
    digest.update(Path(citations.__file__).read_bytes())
    for path in sorted(p for p in analyzers_dir().rglob("*") if p.is_file()):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    digest.update(json.dumps(extra or {}, sort_keys=True).encode())
    return digest.hexdigest()[:12]
