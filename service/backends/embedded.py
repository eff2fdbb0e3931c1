"""The embedded engine: tantivy for BM25, faiss for vectors, SQLite for documents, all in one folder.

Layout of an index folder (see :class:`EmbeddedIndex`)::

    manifest.json   format version, embedder and dimension, languages, document count, generation
    tantivy/        BM25 over pre-analysed tokens (``service.analysis``), plus keyword filter fields
    vectors.faiss   IndexIDMap2 over a flat or HNSW inner-product index of unit vectors (= cosine)
    docs.sqlite     documents, the id map (internal integer id <-> document id), filter columns and
                    the work column (the work id of a document that is one of several versions)

Every document gets a fresh internal id (``iid``) each time it is written; an update is a delete
plus an insert. Filters are applied inside both retrievers: tantivy gets filter clauses in the
query, faiss a bitmap selector (or an exact scan of the allowed vectors when very few match).

Versions of one work (the same article in three languages) are searched as separate documents and
collapsed to one hit per work (:func:`service.corpus.works.collapse`); each retriever asks for
``k`` times the largest number of versions of a work, so ``k`` works always come back. The work
column is optional: an index written before it existed reads as one without versions, and gains
the column on its next write.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import faiss
import numpy as np
import tantivy

from service.analysis.crosslingual import bm25_query_weights
from service.backends.base import ChunkWriter, IndexReport, IndexStats
from service.backends.rows import AnalysedDoc, analysed_docs, checked_vectors
from service.corpus.model import FILTER_FIELDS, Filters, Hit, LegalDoc
from service.corpus.works import collapse
from service.errors import IndexCorrupt, IndexNotFound, InvalidInput

if TYPE_CHECKING:
    from service.config import Settings

FORMAT_VERSION = 1
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 256
"""Measured on STARD (58,625 x 512): recall@100 of 0.997 against exact search, at 0.7 ms per query."""
EXACT_SCAN_MAX = 5_000
"""Filtered kNN scans the allowed vectors exactly when at most this many documents match."""
REBUILD_DEAD_FRACTION = 0.2
"""An HNSW graph cannot drop vectors; rebuild it once this share of its vectors is deleted."""

# Searches embed one query at a time. OpenMP threads add nothing there, and their busy-waiting after
# each search slows the next query embedding (numpy's BLAS) threefold; bulk builds raise it again
# (to ``cpu.threads``).
faiss.omp_set_num_threads(1)

_DOC_COLUMNS = ("law", "kind", "lang", "court", "division", "chamber", "case_type", "citation")
assert set(_DOC_COLUMNS) == set(FILTER_FIELDS)


def _date_num(date: str | None) -> int:
    return int(date.replace("-", "")) if date else 0


class _FilterColumns:
    """In-memory copies of the filter columns, indexed by internal id, for building faiss selectors."""

    def __init__(self) -> None:
        self.size = 0
        self.live = np.zeros(0, dtype=bool)
        self.dates = np.zeros(0, dtype=np.int64)
        self.codes: dict[str, np.ndarray] = {f: np.zeros(0, dtype=np.int32) for f in _DOC_COLUMNS}
        self.vocab: dict[str, dict[str, int]] = {f: {} for f in _DOC_COLUMNS}

    def _grow(self, size: int) -> None:
        if size <= self.size:
            return
        new = max(size, int(self.size * 1.5) + 1024)
        self.live = np.concatenate([self.live, np.zeros(new - self.size, dtype=bool)])
        self.dates = np.concatenate([self.dates, np.zeros(new - self.size, dtype=np.int64)])
        for f in _DOC_COLUMNS:
            self.codes[f] = np.concatenate([self.codes[f], np.full(new - self.size, -1, dtype=np.int32)])
        self.size = new

    def set(self, iid: int, values: dict[str, str], date: int) -> None:
        self._grow(iid + 1)
        self.live[iid] = True
        self.dates[iid] = date
        for f in _DOC_COLUMNS:
            vocab = self.vocab[f]
            self.codes[f][iid] = vocab.setdefault(values.get(f, ""), len(vocab))

    def values_of(self, name: str) -> tuple[str, ...]:
        """The distinct non-empty values of column ``name`` among the live documents, sorted."""
        n = self.size  # read once: a write may grow the arrays meanwhile
        live = np.unique(self.codes[name][:n][self.live[:n]])
        names = {code: value for value, code in self.vocab[name].items()}
        return tuple(sorted(names[int(c)] for c in live if c >= 0 and names.get(int(c))))

    def kill(self, iid: int) -> None:
        if iid < self.size:
            self.live[iid] = False

    def mask(self, filters: Filters | None) -> np.ndarray:
        mask = self.live.copy()
        if not filters:
            return mask
        for name, values in filters.terms:
            vocab = self.vocab[name]
            codes = [vocab[v] for v in values if v in vocab]
            mask &= np.isin(self.codes[name], np.asarray(codes, dtype=np.int32)) if codes else False
        if filters.date_from or filters.date_to:
            mask &= self.dates > 0
            if filters.date_from:
                mask &= self.dates >= _date_num(filters.date_from)
            if filters.date_to:
                mask &= self.dates <= _date_num(filters.date_to)
        return mask


@dataclass(frozen=True)
class _Snapshot:
    """Everything a search reads, loaded together and replaced as a whole after each write.

    A search takes the current snapshot once and uses only it, so it never mixes an old id map
    with a new BM25 index while another thread or process writes.
    """

    manifest: dict[str, Any]
    mtime: float
    tantivy: tantivy.Index
    schema: tantivy.Schema
    vectors: Any
    ids: list[str | None]
    iid_of: dict[str, int]
    columns: _FilterColumns
    work_of: dict[str, str]
    """Document id -> work id, for documents that are one of several versions of a work."""
    max_versions: int
    """The most versions any work has (1 when every document is a work of its own)."""
    versions_of: dict[str, list[int]]
    """Work id -> the iids of its versions (only works with versions)."""

    def members(self, doc_id: str) -> list[int]:
        """The iids stored for ``doc_id``: a work's versions, a document's own iid, or none."""
        versions = self.versions_of.get(doc_id)
        if versions is not None:
            return versions
        iid = self.iid_of.get(doc_id)
        return [iid] if iid is not None else []

    def collapse(self, hits: list[Hit], k: int, label: str) -> list[Hit]:
        """One hit per work (a no-op for an index without versions)."""
        return collapse(hits, self.work_of.get, k=k, label=label) if self.max_versions > 1 else hits


class EmbeddedIndex:
    """One index folder. Opened by :class:`EmbeddedBackend`; not usually built directly.

    Reads are thread-safe and lock-free (see :class:`_Snapshot`). Writes take a process-local
    lock and, across processes, a lock file held for the duration of one :meth:`write` or
    :meth:`delete`. Readers in other processes notice the new manifest and reopen.
    """

    def __init__(self, path: Path, *, hnsw_min_docs: int = 20_000, build_threads: int = 0) -> None:
        self.path = path
        self.hnsw_min_docs = hnsw_min_docs
        self.build_threads = build_threads or os.cpu_count() or 1
        self._lock = threading.RLock()
        self._snap: _Snapshot | None = None
        self._local = threading.local()

    # ----- lifecycle -----------------------------------------------------------------------------

    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.json"

    def exists(self) -> bool:
        return self.manifest_path.is_file()

    def create(self, *, language: str, dim: int, embedder: str) -> None:
        """Create an empty index folder (the caller checked it does not exist)."""
        with self._lock:
            self.path.mkdir(parents=True, exist_ok=True)
            (self.path / "tantivy").mkdir(exist_ok=True)
            manifest = {
                "format_version": FORMAT_VERSION,
                "name": self.path.name,
                "language": language,
                "languages": [],
                "embedder": embedder,
                "dim": dim,
                "documents": 0,
                "vector_index": "flat",
                "next_iid": 0,
                "dead_vectors": 0,
                "generation": 0,
                "state": "ready",
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "updated": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "meta": {},
            }
            self._write_faiss(faiss.IndexIDMap2(faiss.IndexFlatIP(dim)))
            db = sqlite3.connect(self.path / "docs.sqlite")
            with db:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS docs (iid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, "
                    "doc TEXT NOT NULL, date INTEGER NOT NULL DEFAULT 0, "
                    + ", ".join(f"{c} TEXT NOT NULL DEFAULT ''" for c in (*_DOC_COLUMNS, WORK_COLUMN)) + ")"
                )
            db.close()
            tantivy.Index(self._build_schema(), path=str(self.path / "tantivy"), reuse=False)
            self._save_manifest(manifest)
            self._open()

    @staticmethod
    def _build_schema() -> tantivy.Schema:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
        builder.add_unsigned_field("iid", stored=True, indexed=True, fast=True)
        builder.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
        for column in _DOC_COLUMNS:
            builder.add_text_field(column, stored=False, tokenizer_name="raw", index_option="basic")
        builder.add_integer_field("date", stored=False, indexed=True, fast=True)
        return builder.build()

    def _open(self) -> _Snapshot:
        """Load a fresh snapshot from disk and make it current."""
        try:
            mtime = self.manifest_path.stat().st_mtime
            manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise IndexNotFound(f"no index at {self.path} (manifest.json missing)") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise IndexCorrupt(f"index at {self.path} has an unreadable manifest.json: {exc}") from None
        if manifest.get("format_version") != FORMAT_VERSION:
            raise IndexCorrupt(
                f"index at {self.path} has format version {manifest.get('format_version')!r}; "
                f"this lexsearch reads version {FORMAT_VERSION}. Re-index it."
            )
        if manifest.get("state") != "ready":
            raise IndexCorrupt(
                f"index at {self.path} was left half-written by an interrupted write; re-run the indexing"
            )
        try:
            text_index = tantivy.Index.open(str(self.path / "tantivy"))
            vectors = faiss.read_index(str(self.path / "vectors.faiss"))
            db = self._db()
            work = WORK_COLUMN if _has_work_column(db) else "''"
            rows = db.execute(
                f"SELECT iid, id, date, {work}, " + ", ".join(_DOC_COLUMNS) + " FROM docs ORDER BY iid"
            ).fetchall()
        except (OSError, RuntimeError, ValueError, sqlite3.DatabaseError) as exc:
            raise IndexCorrupt(f"index at {self.path} cannot be read ({exc}); re-index it") from None
        next_iid = int(manifest["next_iid"])
        ids: list[str | None] = [None] * next_iid
        iid_of: dict[str, int] = {}
        work_of: dict[str, str] = {}
        versions_of: dict[str, list[int]] = {}
        columns = _FilterColumns()
        columns._grow(next_iid)
        for iid, doc_id, date, work_id, *values in rows:
            ids[iid] = doc_id
            iid_of[doc_id] = iid
            if work_id:
                work_of[doc_id] = work_id
                versions_of.setdefault(work_id, []).append(iid)
            columns.set(iid, dict(zip(_DOC_COLUMNS, values, strict=True)), date)
        if len(rows) != manifest["documents"]:
            raise IndexCorrupt(
                f"index at {self.path} is inconsistent: manifest says {manifest['documents']} documents, "
                f"the document store holds {len(rows)}; re-index it"
            )
        snap = _Snapshot(manifest=manifest, mtime=mtime, tantivy=text_index, schema=text_index.schema,
                         vectors=vectors, ids=ids, iid_of=iid_of, columns=columns, work_of=work_of,
                         max_versions=max(map(len, versions_of.values()), default=1), versions_of=versions_of)
        self._snap = snap
        return snap

    def _db(self) -> sqlite3.Connection:
        """This thread's read connection to the document store (reopened if the file was replaced)."""
        path = self.path / "docs.sqlite"
        inode = path.stat().st_ino
        cached = getattr(self._local, "db", None)
        if cached is not None and cached[1] == inode:
            return cached[0]
        if cached is not None:
            cached[0].close()
        conn = sqlite3.connect(path, timeout=30)
        self._local.db = (conn, inode)
        return conn

    def snapshot(self) -> _Snapshot:
        """The current snapshot; reopened when another process has published a new manifest.

        While a write is in progress (the manifest says ``writing``), searches keep the snapshot
        they have; only a process that has none yet reports the unfinished write.
        """
        try:
            mtime = self.manifest_path.stat().st_mtime
        except FileNotFoundError:
            raise IndexNotFound(f"no index at {self.path}") from None
        snap = self._snap
        if snap is not None and snap.mtime == mtime:
            return snap
        # Checked before taking the lock: a write of this process holds it until it publishes.
        if snap is not None and self._being_written():
            return snap
        with self._lock:
            snap = self._snap
            if snap is None or snap.mtime != self.manifest_path.stat().st_mtime:
                if snap is not None and self._being_written():
                    return snap
                snap = self._open()
            return snap

    def _being_written(self) -> bool:
        try:
            return json.loads(self.manifest_path.read_text(encoding="utf-8")).get("state") == "writing"
        except (OSError, json.JSONDecodeError):
            return False

    @property
    def manifest(self) -> dict[str, Any]:
        return dict(self.snapshot().manifest)

    def _save_manifest(self, manifest: dict[str, Any]) -> None:
        tmp = self.manifest_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, self.manifest_path)

    def _write_faiss(self, index: Any) -> None:
        tmp = self.path / "vectors.faiss.tmp"
        faiss.write_index(index, str(tmp))
        os.replace(tmp, self.path / "vectors.faiss")

    def update_meta(self, **fields: Any) -> None:
        """Merge extra facts (e.g. routing calibration) into the manifest's ``meta`` entry.

        The merge happens under the write lock on the state on disk, so concurrent updates of
        different keys (from other threads or processes) are all kept.
        """
        with self._lock, FileLock(self.path / WRITE_LOCK):
            manifest = dict(self._fresh().manifest)
            manifest["meta"] = {**manifest.get("meta", {}), **fields}
            manifest["generation"] = int(manifest["generation"]) + 1
            self._save_manifest(manifest)
            self._open()

    def _fresh(self) -> _Snapshot:
        """Under the write lock: the state on disk, including other processes' writes.

        :meth:`snapshot` reloads only when the manifest changed since this process last read it,
        so consecutive writes of one process (a rebuild's chunks) do not reload the whole index.
        """
        return self.snapshot()

    # ----- writing -------------------------------------------------------------------------------

    def write(self, docs: Sequence[LegalDoc], vectors: np.ndarray) -> IndexReport:
        """Insert or replace documents by id. See :meth:`SearchBackend.write`."""
        if len(docs) == 0:
            return IndexReport()
        with self.bulk() as write_chunk:
            return write_chunk(docs, vectors)

    @contextmanager
    def bulk(self) -> Iterator[ChunkWriter]:
        """One write transaction for many chunks. See :meth:`SearchBackend.bulk`.

        The vector index is copied, saved and reopened once per transaction, not once per chunk,
        so loading a corpus costs time linear in its size.
        """
        dim = int(self.manifest["dim"])
        with self._lock, FileLock(self.path / WRITE_LOCK):
            snap = self._fresh()
            with self._batch(snap, heap_size=128_000_000) as batch:

                def write_chunk(docs: Sequence[LegalDoc], vectors: np.ndarray) -> IndexReport:
                    report = IndexReport(sent=len(docs))
                    vectors = checked_vectors(docs, vectors, dim)
                    for item in analysed_docs(docs, vectors, default_language=snap.manifest["language"],
                                              failed=report.failed):
                        batch.upsert(item, snap.iid_of.get(item.doc.id))
                        report.indexed += 1
                    return report

                yield write_chunk

    @contextmanager
    def _batch(self, snap: _Snapshot, *, heap_size: int) -> Iterator[_WriteBatch]:
        """One write transaction over the three stores, published as a new manifest when the block succeeds.

        The manifest on disk says ``writing`` until then, so an interrupted write is detected on open.
        """
        manifest = dict(snap.manifest)
        manifest["state"] = "writing"
        self._save_manifest(manifest)
        try:
            batch = _WriteBatch(self.path, snap, manifest, heap_size=heap_size)
        except BaseException:  # the stores could not be opened: nothing was written
            self._save_manifest(dict(snap.manifest))
            raise
        try:
            yield batch
            batch.commit()
        except BaseException:
            batch.rollback()
            self._save_manifest(dict(snap.manifest))  # nothing was published: the old state stands
            raise
        finally:
            batch.close()
        self._commit_vectors(batch.manifest, batch.vectors)

    def _commit_vectors(self, manifest: dict[str, Any], index: Any) -> None:
        """Rebuild the vector index if due, persist it, and publish the new manifest."""
        index = self._maybe_rebuild_vectors(manifest, index)
        self._write_faiss(index)
        manifest["state"] = "ready"
        manifest["generation"] = int(manifest["generation"]) + 1
        self._save_manifest(manifest)
        self._open()

    def _maybe_rebuild_vectors(self, manifest: dict[str, Any], index: Any) -> Any:
        """Switch flat -> HNSW when the corpus is large, and compact HNSW after many deletions."""
        live = int(manifest["documents"])
        kind = manifest["vector_index"]
        wants_hnsw = live >= self.hnsw_min_docs
        too_dead = kind == "hnsw" and manifest["dead_vectors"] > REBUILD_DEAD_FRACTION * max(1, index.ntotal)
        if (kind == "hnsw") == wants_hnsw and not too_dead:
            return index
        db = sqlite3.connect(self.path / "docs.sqlite", timeout=30)
        try:
            iids = np.asarray([r[0] for r in db.execute("SELECT iid FROM docs ORDER BY iid")], dtype=np.int64)
        finally:
            db.close()
        dim = int(manifest["dim"])
        vectors = index.reconstruct_batch(iids) if len(iids) else np.zeros((0, dim), np.float32)
        if wants_hnsw:
            inner = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        else:
            inner = faiss.IndexFlatIP(dim)
        rebuilt = faiss.IndexIDMap2(inner)
        if len(iids):
            faiss.omp_set_num_threads(self.build_threads)
            try:
                rebuilt.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), iids)
            finally:
                faiss.omp_set_num_threads(1)
        manifest["vector_index"] = "hnsw" if wants_hnsw else "flat"
        manifest["dead_vectors"] = 0
        return rebuilt

    def delete(self, ids: Sequence[str]) -> int:
        """Remove documents by id; returns how many existed."""
        with self._lock, FileLock(self.path / WRITE_LOCK):
            snap = self._fresh()
            present = [(doc_id, snap.iid_of[doc_id]) for doc_id in dict.fromkeys(ids) if doc_id in snap.iid_of]
            if not present:
                return 0
            with self._batch(snap, heap_size=32_000_000) as batch:
                for doc_id, iid in present:
                    batch.remove(doc_id, iid)
            return len(present)

    # ----- reading -------------------------------------------------------------------------------

    @staticmethod
    def _languages(snap: _Snapshot) -> tuple[str, ...]:
        manifest = snap.manifest
        return tuple(manifest.get("languages") or ()) or (manifest.get("language") or "en",)

    def query_languages(self) -> tuple[str, ...]:
        """The languages a question's BM25 terms are analysed in (see :meth:`SearchBackend.query_languages`)."""
        return self._languages(self.snapshot())

    def bm25(self, query: str, *, k: int, filters: Filters | None = None, lang: str = "") -> list[Hit]:
        snap = self.snapshot()
        weights = bm25_query_weights(query, self._languages(snap), lang)
        return snap.collapse(self._bm25(snap, weights, k * snap.max_versions, filters), k, "bm25")

    def bm25_terms(self, weights: dict[str, float], *, k: int, filters: Filters | None = None) -> list[Hit]:
        """BM25 for already-analysed terms with per-term weights (used by query expansion)."""
        snap = self.snapshot()
        return snap.collapse(self._bm25(snap, weights, k * snap.max_versions, filters), k, "bm25")

    def _bm25(self, snap: _Snapshot, weights: dict[str, float], k: int, filters: Filters | None) -> list[Hit]:
        if not weights or k <= 0:
            return []
        clauses = []
        for term, weight in weights.items():
            if weight <= 0:
                continue
            clause = tantivy.Query.term_query(snap.schema, "body", term, index_option="freq")
            if weight != 1:
                clause = tantivy.Query.boost_query(clause, float(weight))
            clauses.append((tantivy.Occur.Should, clause))
        if not clauses:
            return []
        query = tantivy.Query.boolean_query(clauses)
        filter_query = _tantivy_filter(snap.schema, filters)
        if filter_query is not None:
            query = tantivy.Query.boolean_query([
                (tantivy.Occur.Must, query),
                (tantivy.Occur.Must, tantivy.Query.const_score_query(filter_query, 0.0)),
            ])
        searcher = snap.tantivy.searcher()
        result = searcher.search(query, limit=k, count=False)
        if not result.hits:
            return []
        iids = searcher.fast_field_values("iid", [addr for _, addr in result.hits])
        hits = []
        for (score, _), iid in zip(result.hits, iids, strict=True):
            doc_id = snap.ids[iid] if iid is not None and iid < len(snap.ids) else None
            if doc_id is None:
                continue
            hits.append(Hit(doc_id=doc_id, score=float(score), scores={"bm25": float(score)},
                            ranks={"bm25": len(hits) + 1}))
        return hits

    def knn(self, vector: np.ndarray, *, k: int, filters: Filters | None = None) -> list[Hit]:
        snap = self.snapshot()
        return snap.collapse(self._knn(snap, vector, k * snap.max_versions, filters), k, "knn")

    def _knn(self, snap: _Snapshot, vector: np.ndarray, k: int, filters: Filters | None) -> list[Hit]:
        if k <= 0:
            return []
        query = _query_row(snap, vector)
        index = snap.vectors
        has_dead = index.ntotal != snap.manifest["documents"]
        if not filters and not has_dead:
            scores, iids = index.search(query, min(k, max(1, index.ntotal)), params=_search_params(snap, None))
            return _vector_hits(snap, scores[0], iids[0])
        mask = snap.columns.mask(filters)[: int(snap.manifest["next_iid"])]
        allowed = np.flatnonzero(mask)
        if len(allowed) == 0:
            return []
        if len(allowed) <= EXACT_SCAN_MAX:
            vectors = index.reconstruct_batch(allowed.astype(np.int64))
            sims = vectors @ query[0]
            top = np.argsort(-sims, kind="stable")[:k]
            return _vector_hits(snap, sims[top], allowed[top])
        bitmap = np.packbits(mask, bitorder="little")
        selector = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
        scores, iids = index.search(query, min(k, len(allowed)), params=_search_params(snap, selector, k))
        return _vector_hits(snap, scores[0], iids[0])

    def similarities(self, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """The kNN score (inner product) of ``vector`` with each stored document or work of ``ids``; a
        work scores as its best version. Ids not in the index are left out."""
        snap = self.snapshot()
        query = _query_row(snap, vector)[0]
        owners: list[str] = []
        iids: list[int] = []
        for doc_id in dict.fromkeys(ids):
            members = snap.members(doc_id)
            owners.extend([doc_id] * len(members))
            iids.extend(members)
        if not iids:
            return {}
        sims = (snap.vectors.reconstruct_batch(np.asarray(iids, dtype=np.int64)) @ query).tolist()
        out: dict[str, float] = {}
        for doc_id, sim in zip(owners, sims, strict=True):
            if sim > out.get(doc_id, -np.inf):
                out[doc_id] = sim
        return out

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of each document or work of ``ids`` (a work: one row per version)."""
        snap = self.snapshot()
        out: dict[str, np.ndarray] = {}
        for doc_id in dict.fromkeys(ids):
            members = snap.members(doc_id)
            if members:
                out[doc_id] = snap.vectors.reconstruct_batch(np.asarray(members, dtype=np.int64))
        return out

    def fetch(self, ids: Sequence[str]) -> dict[str, LegalDoc]:
        self.snapshot()
        out: dict[str, LegalDoc] = {}
        wanted = list(dict.fromkeys(ids))
        db = self._db()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for doc_id, blob in db.execute(f"SELECT id, doc FROM docs WHERE id IN ({marks})", chunk):
                out[doc_id] = LegalDoc.from_dict(json.loads(blob))
        return out

    def scan(self) -> Iterator[LegalDoc]:
        self.snapshot()
        db = sqlite3.connect(self.path / "docs.sqlite", timeout=30)
        try:
            for (blob,) in db.execute("SELECT doc FROM docs ORDER BY iid"):
                yield LegalDoc.from_dict(json.loads(blob))
        finally:
            db.close()

    def count(self) -> int:
        return int(self.snapshot().manifest["documents"])

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """How many documents contain each analysed term (long-question term selection)."""
        searcher = self.snapshot().tantivy.searcher()
        return {t: int(searcher.doc_freq("body", t)) for t in terms}

    def law_names(self) -> tuple[str, ...]:
        """The law names of the live documents, sorted."""
        return self.snapshot().columns.values_of("law")

    def kinds(self) -> tuple[str, ...]:
        """The document kinds of the live documents, sorted."""
        return self.snapshot().columns.values_of("kind")

    def stats(self) -> IndexStats:
        snap = self.snapshot()
        manifest = snap.manifest
        return IndexStats(
            name=manifest["name"],
            documents=int(manifest["documents"]),
            dim=int(manifest["dim"]),
            embedder=manifest["embedder"],
            languages=tuple(manifest["languages"]),
            laws=len([v for v in snap.columns.vocab["law"] if v]),
            extra={"vector_index": manifest["vector_index"], "updated": manifest["updated"],
                   "backend": "embedded", "path": str(self.path)},
        )


WORK_COLUMN = "work"
"""The ``docs.sqlite`` column holding the work id of a document that is one of several versions ('' otherwise)."""

_INSERT = (f"INSERT INTO docs (iid, id, doc, date, {WORK_COLUMN}, " + ", ".join(_DOC_COLUMNS) + ") VALUES ("
           + ", ".join("?" * (5 + len(_DOC_COLUMNS))) + ")")


def _has_work_column(db: sqlite3.Connection) -> bool:
    return any(row[1] == WORK_COLUMN for row in db.execute("PRAGMA table_info(docs)"))


@dataclass(frozen=True)
class _Row:
    """One analysed document as the embedded engine stores it: a tantivy document, a SQLite row, a vector."""

    iid: int
    item: AnalysedDoc

    @property
    def columns(self) -> dict[str, str]:
        """The filter column values (the resolved language, the kind's name)."""
        doc = self.item.doc
        values = {c: getattr(doc, c) for c in _DOC_COLUMNS}
        values.update(kind=doc.kind.value, lang=self.item.lang)
        return values

    def tantivy_document(self, columns: dict[str, str]) -> tantivy.Document:
        """The BM25 document: id, internal id, the analysed tokens, the filter columns and the date."""
        tdoc = tantivy.Document()
        tdoc.add_text("id", self.item.doc.id)
        tdoc.add_unsigned("iid", self.iid)
        tdoc.add_text("body", " ".join(self.item.tokens))
        for column, value in columns.items():
            tdoc.add_text(column, value)
        tdoc.add_integer("date", _date_num(self.item.doc.date))
        return tdoc

    def sql_values(self, columns: dict[str, str]) -> tuple[Any, ...]:
        """The ``docs`` table row (see :data:`_INSERT`): the stored document carries the resolved language."""
        doc = self.item.doc
        stored = doc.to_dict()
        stored["lang"] = self.item.lang
        return (self.iid, doc.id, json.dumps(stored, ensure_ascii=False), _date_num(doc.date),
                doc.work if doc.versions else "", *(columns[c] for c in _DOC_COLUMNS))


class _WriteBatch:
    """The open stores of one write: a tantivy writer, a SQLite connection and a private copy of the
    vector index (searches keep using the snapshot's until the write is published)."""

    def __init__(self, path: Path, snap: _Snapshot, manifest: dict[str, Any], *, heap_size: int) -> None:
        self.manifest = manifest
        self.vectors = faiss.clone_index(snap.vectors)
        self.db = sqlite3.connect(path / "docs.sqlite", timeout=30)
        try:
            if not _has_work_column(self.db):  # an index written before works existed
                self.db.execute(f"ALTER TABLE docs ADD COLUMN {WORK_COLUMN} TEXT NOT NULL DEFAULT ''")
            self.writer = snap.tantivy.writer(heap_size=heap_size, num_threads=1)
        except BaseException:
            self.db.close()
            raise
        self.is_flat = manifest["vector_index"] == "flat"
        self.next_iid = int(manifest["next_iid"])
        self.dead = int(manifest["dead_vectors"])
        self.languages = set(manifest["languages"])
        self.pending: dict[str, int] = {}
        """Documents added by this batch: id -> internal id (a later chunk may replace one)."""
        self.new_vectors: dict[int, np.ndarray] = {}

    def remove(self, doc_id: str, iid: int) -> None:
        """Delete a stored document from all three stores."""
        self.writer.delete_documents_by_term("id", doc_id)
        self.db.execute("DELETE FROM docs WHERE iid = ?", (iid,))
        self.dead += _remove_vector(self.vectors, iid, self.is_flat)

    def upsert(self, item: AnalysedDoc, stored_iid: int | None) -> None:
        """Store an analysed document, replacing the stored one (``stored_iid``, from the snapshot)
        or one added earlier in this batch under the same id."""
        pending = self.pending.pop(item.doc.id, None)
        if pending is not None:
            self.writer.delete_documents_by_term("id", item.doc.id)
            self.db.execute("DELETE FROM docs WHERE iid = ?", (pending,))
        elif stored_iid is not None:
            self.remove(item.doc.id, stored_iid)
        self.add(item)

    def add(self, item: AnalysedDoc) -> None:
        """Store an analysed document under a fresh internal id."""
        row = _Row(self.next_iid, item)
        self.next_iid += 1
        columns = row.columns
        self.writer.add_document(row.tantivy_document(columns))
        self.db.execute(_INSERT, row.sql_values(columns))
        self.languages.add(item.lang)
        self.pending[item.doc.id] = row.iid
        self.new_vectors[row.iid] = item.vector

    def commit(self) -> None:
        """Commit tantivy and SQLite, add the new vectors, and record the outcome in the manifest."""
        live = sorted(self.pending.values())
        if live:
            self.vectors.add_with_ids(np.stack([self.new_vectors[iid] for iid in live]),
                                      np.asarray(live, dtype=np.int64))
        self.writer.commit()
        self.writer.wait_merging_threads()
        self.db.commit()
        documents = int(self.db.execute("SELECT COUNT(*) FROM docs").fetchone()[0])
        self.manifest.update(next_iid=self.next_iid, documents=documents, languages=sorted(self.languages),
                             dead_vectors=self.dead, updated=time.strftime("%Y-%m-%dT%H:%M:%S"))

    def rollback(self) -> None:
        self.db.rollback()
        self.writer.rollback()

    def close(self) -> None:
        self.db.close()
        # Frees tantivy's writer lock now, even while a traceback still holds this batch.
        del self.writer


def _remove_vector(index: Any, iid: int, is_flat: bool) -> int:
    """Drop one vector; returns 1 when it stays behind as a dead HNSW node, else 0."""
    if is_flat:
        index.remove_ids(np.asarray([iid], dtype=np.int64))
        return 0
    # HNSW graphs cannot drop nodes: the vector stays until the next rebuild, and searches
    # exclude it because it is no longer live.
    return 1


def _tantivy_filter(schema: tantivy.Schema, filters: Filters | None) -> tantivy.Query | None:
    if not filters:
        return None
    musts = []
    for name, values in filters.terms:
        musts.append((tantivy.Occur.Must, tantivy.Query.term_set_query(schema, name, list(values))))
    if filters.date_from or filters.date_to:
        musts.append((tantivy.Occur.Must, tantivy.Query.range_query(
            schema, "date", tantivy.FieldType.Integer,
            _date_num(filters.date_from) if filters.date_from else 1,
            _date_num(filters.date_to) if filters.date_to else 99_991_231,
        )))
    return tantivy.Query.boolean_query(musts)


def _search_params(snap: _Snapshot, selector: Any, k: int = 0) -> Any:
    if snap.manifest["vector_index"] == "hnsw":
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(HNSW_EF_SEARCH, 2 * k)
    else:
        params = faiss.SearchParameters()
    if selector is not None:
        params.sel = selector
    return params


def _query_row(snap: _Snapshot, vector: np.ndarray) -> np.ndarray:
    """``vector`` as the one contiguous float32 row faiss takes, checked against the index's dimension.

    Raises:
        InvalidInput: for a vector of another dimension.
    """
    query = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(1, -1))
    if query.shape[1] != snap.manifest["dim"]:
        raise InvalidInput(f"query vector has dimension {query.shape[1]}, the index {snap.manifest['dim']}")
    return query


def _vector_hits(snap: _Snapshot, scores: np.ndarray, iids: np.ndarray) -> list[Hit]:
    hits: list[Hit] = []
    ids = snap.ids
    # Python numbers: element-wise work on numpy scalars costs several times more.
    for score, iid in zip(scores.tolist(), iids.tolist(), strict=True):
        if iid < 0 or iid >= len(ids):
            continue
        doc_id = ids[iid]
        if doc_id is None:
            continue
        hits.append(Hit(doc_id=doc_id, score=score, scores={"knn": score}, ranks={"knn": len(hits) + 1}))
    return hits


WRITE_LOCK = ".write.lock"
"""The lock file inside an index folder held around every write, so two processes never write one index at once."""


class FileLock:
    """An exclusive ``flock`` on a lock file, held for the ``with`` block (across processes)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fh: Any = None

    def __enter__(self) -> FileLock:
        import fcntl

        self._fh = open(self._path, "a+")
        fcntl.flock(self._fh, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        import fcntl

        fcntl.flock(self._fh, fcntl.LOCK_UN)
        self._fh.close()


class EmbeddedBackend:
    """The :class:`~service.backends.base.SearchBackend` of the embedded engine.

    Args:
        root: the folder holding one sub-folder per index name.
        hnsw_min_docs: corpora at least this large get an HNSW vector index, smaller ones a flat one.
        build_threads: OpenMP threads that build a vector index (``cpu.threads``; 0 = every core).

    Example::

        backend = EmbeddedBackend("var/indices")
        backend.ensure_index("swiss", language="de", dim=512, embedder="use-m3")
        backend.write("swiss", docs, vectors)
        backend.bm25("swiss", "Kaution Mietvertrag", k=10)
    """

    kind = "embedded"

    def __init__(self, root: str | os.PathLike[str], *, hnsw_min_docs: int = 20_000, build_threads: int = 0) -> None:
        self.root = Path(root)
        self.hnsw_min_docs = hnsw_min_docs
        self.build_threads = build_threads
        self._indices: dict[str, EmbeddedIndex] = {}
        self._lock = threading.Lock()


    @classmethod
    def from_config(cls, settings: Settings) -> EmbeddedBackend:
        """The backend of ``settings`` (``index.root``, ``backend.hnsw_min_docs``, ``cpu.threads``); the table
        rule of :data:`service.plugins.BACKENDS`."""
        return cls(settings.index.root, hnsw_min_docs=settings.backend.hnsw_min_docs,
                   build_threads=settings.cpu.threads)

    def index(self, name: str) -> EmbeddedIndex:
        """The index object for ``name`` (opened lazily)."""
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise InvalidInput(f"invalid index name {name!r}")
        with self._lock:
            idx = self._indices.get(name)
            if idx is None:
                idx = EmbeddedIndex(self.root / name, hnsw_min_docs=self.hnsw_min_docs,
                                    build_threads=self.build_threads)
                self._indices[name] = idx
            return idx

    def _existing(self, name: str) -> EmbeddedIndex:
        idx = self.index(name)
        if not idx.exists():
            if idx.path.exists():
                raise IndexCorrupt(f"{idx.path} exists but holds no index (manifest.json missing); "
                                   "remove it or index into another folder")
            raise IndexNotFound(f"no index named {name!r} under {self.root}; create it with `lexsearch index`")
        return idx

    def exists(self, name: str) -> bool:
        return self.index(name).exists()

    def ensure_index(self, name: str, *, language: str, dim: int, embedder: str) -> None:
        idx = self.index(name)
        if not idx.exists():
            if idx.path.exists() and any(idx.path.iterdir()):
                raise IndexCorrupt(f"{idx.path} exists and is not an index; remove it or choose another folder")
            idx.create(language=language, dim=dim, embedder=embedder)
            return
        manifest = idx.manifest
        if manifest["dim"] != dim or manifest["embedder"] != embedder:
            raise IndexCorrupt(
                f"index {name!r} was built with embedder {manifest['embedder']} (dim {manifest['dim']}), "
                f"but the settings use {embedder} (dim {dim}); re-index into a new folder or change the embedder"
            )

    def drop(self, name: str) -> None:
        """Delete an index folder entirely."""
        idx = self.index(name)
        with self._lock:
            self._indices.pop(name, None)
        if idx.path.exists():
            shutil.rmtree(idx.path)

    def list_indices(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir()
                      if not p.name.startswith(".") and (p / "manifest.json").is_file())

    def write(self, name: str, docs: Sequence[LegalDoc], vectors: np.ndarray) -> IndexReport:
        return self._existing(name).write(docs, vectors)

    def bulk(self, name: str) -> AbstractContextManager[ChunkWriter]:
        return self._existing(name).bulk()

    def delete(self, name: str, ids: Sequence[str]) -> int:
        return self._existing(name).delete(ids)

    def bm25(self, name: str, query: str, *, k: int, filters: Filters | None = None, lang: str = "") -> list[Hit]:
        return self._existing(name).bm25(query, k=k, filters=filters, lang=lang)

    def bm25_terms(self, name: str, weights: dict[str, float], *, k: int,
                   filters: Filters | None = None) -> list[Hit]:
        return self._existing(name).bm25_terms(weights, k=k, filters=filters)

    def knn(self, name: str, vector: np.ndarray, *, k: int, filters: Filters | None = None) -> list[Hit]:
        return self._existing(name).knn(vector, k=k, filters=filters)

    def probe(self, name: str, query: str, vector: np.ndarray, *, k: int, filters: Filters | None = None,
              lang: str = "") -> tuple[list[Hit], list[Hit]]:
        idx = self._existing(name)
        return idx.bm25(query, k=k, filters=filters, lang=lang), idx.knn(vector, k=k, filters=filters)

    def similarities(self, name: str, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        return self._existing(name).similarities(vector, ids)

    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self._existing(name).vectors(ids)

    def fetch(self, name: str, ids: Sequence[str]) -> dict[str, LegalDoc]:
        return self._existing(name).fetch(ids)

    def scan(self, name: str) -> Iterator[LegalDoc]:
        return self._existing(name).scan()

    def count(self, name: str) -> int:
        return self._existing(name).count()

    def doc_freqs(self, name: str, terms: Sequence[str]) -> dict[str, int]:
        return self._existing(name).doc_freqs(terms)

    def query_languages(self, name: str) -> tuple[str, ...]:
        return self._existing(name).query_languages()

    def stats(self, name: str) -> IndexStats:
        return self._existing(name).stats()

    def law_names(self, name: str) -> tuple[str, ...]:
        return self._existing(name).law_names()

    def kinds(self, name: str) -> tuple[str, ...]:
        return self._existing(name).kinds()

    def manifest(self, name: str) -> dict[str, Any]:
        return self._existing(name).manifest

    def metadata(self, name: str) -> dict[str, Any]:
        """The ``meta`` entry of the manifest (routing calibration and other stored facts)."""
        return dict(self._existing(name).manifest.get("meta", {}))

    def update_metadata(self, name: str, **fields: Any) -> None:
        self._existing(name).update_meta(**fields)

    def ping(self) -> bool:
        """The embedded engine is always reachable when its folder is writable or readable."""
        return self.root.exists() or self.root.parent.exists()
