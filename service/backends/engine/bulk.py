"""Bulk writing to an engine index: analysed documents in, per-document outcome out, transient failures retried.

:class:`BulkWriter` turns documents into bulk ``index`` actions (analysis runs in a helper
thread while the previous chunk is on the wire, see :func:`prefetched`), streams them through the
client's bulk helper and re-sends what was rejected with 429/5xx or lost to a connection error,
with exponential backoff. Every other rejection is reported per document with the engine's reason,
so documents in = documents indexed, or the report says which failed and why.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from service.backends import _requests as req
from service.backends.base import IndexReport
from service.backends.engine.client import EngineClient
from service.backends.rows import AnalysedDoc, analysed_docs, checked_vectors
from service.backoff import backoff_s
from service.config import EngineSettings
from service.corpus.model import LegalDoc
from service.corpus.views import bm25_text

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class BulkOutcome:
    """Per-document result of a bulk run: ids done, ids missing (deletes), ids failed with the reason."""

    done: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def document_source(item: AnalysedDoc) -> dict[str, Any]:
    """The ``_source`` of one analysed document (Chinese has no engine analyzer: its body field gets the
    jieba segmentation, space-joined)."""
    body = " ".join(item.tokens) if item.lang == "zh" else bm25_text(item.doc)
    return req.document_source(item.doc.to_dict(), lang=item.lang, vector=item.vector, tokens=item.tokens,
                               body=body)


class BulkWriter:
    """Writes and deletes documents by id through the bulk API, with retries.

    Args:
        client: the cluster.
        options: ``bulk_chunk``, ``bulk_retries`` and ``bulk_backoff_s``.
    """

    def __init__(self, client: EngineClient, options: EngineSettings) -> None:
        self.client = client
        self.options = options

    def write(self, index: str, docs: Sequence[LegalDoc], vectors: np.ndarray, *, dim: int,
              default_language: str) -> IndexReport:
        """Insert or replace ``docs`` by id; see :meth:`SearchBackend.write`.

        A document the engine rejects (e.g. a value that violates the mapping) is reported in
        ``IndexReport.failed`` with the engine's reason; the others are indexed. No refresh.

        Raises:
            InvalidInput: for vectors of the wrong shape.
        """
        report = IndexReport(sent=len(docs))
        if len(docs) == 0:
            return report
        vectors = checked_vectors(docs, vectors, dim)
        items = analysed_docs(docs, vectors, default_language=default_language, failed=report.failed)
        actions = (req.index_action(index, item.doc.id, document_source(item)) for item in items)
        # Analysis (jieba, stemming) runs in a helper thread while the previous chunk is on the wire.
        outcome = self.send(index, prefetched(actions, 2 * self.options.bulk_chunk))
        report.indexed = len(outcome.done)
        report.failed.update(outcome.failed)
        return report

    def delete(self, index: str, ids: Sequence[str]) -> BulkOutcome:
        """Remove documents by id (ids that did not exist end up in ``missing``). No refresh."""
        return self.send(index, [req.delete_action(index, doc_id) for doc_id in dict.fromkeys(ids)])

    def send(self, index: str, actions: Iterable[dict[str, Any]]) -> BulkOutcome:
        """Send actions through the client's streaming bulk helper; re-send 429/5xx/connection failures.

        Each retry round waits ``bulk_backoff_s * 2**(round-1)``; documents still failing after
        ``bulk_retries`` rounds, and every non-retryable rejection, are reported with the reason.
        """
        outcome = BulkOutcome()
        by_id: dict[str, dict[str, Any]] = {}

        def remembered(items: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
            for action in items:
                by_id[action["_id"]] = action
                yield action

        pending: Iterable[dict[str, Any]] = remembered(actions)
        retries = self.options.bulk_retries
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(backoff_s(attempt - 1, base_s=self.options.bulk_backoff_s, jitter=False))
            again = []
            for ok, item in self.client.stream("bulk-index", self.client.api.bulk, pending, index=index):
                op, result = next(iter(item.items()))
                doc_id = str(result.get("_id"))
                status = result.get("status")
                if ok:
                    outcome.done.append(doc_id)
                elif op == "delete" and status == 404:
                    outcome.missing.append(doc_id)
                elif retryable(status) and attempt < retries and doc_id in by_id:
                    again.append(by_id[doc_id])
                else:
                    outcome.failed[doc_id] = bulk_reason(result)
            if not again:
                break
            log.warning("%s: retrying %d documents after transient bulk failures", index, len(again))
            pending = again
        return outcome


def retryable(status: Any) -> bool:
    """Whether a bulk item that failed with ``status`` is worth sending again."""
    if isinstance(status, int):
        return status == 429 or status >= 500
    return True  # "N/A" / "TIMEOUT": the request never got an HTTP answer


def bulk_reason(result: Mapping[str, Any]) -> str:
    """One line saying why the engine rejected a document."""
    error = result.get("error")
    status = result.get("status")
    if isinstance(error, Mapping):
        text = f"{error.get('type', 'error')}: {error.get('reason', '')}"
        cause = error.get("caused_by")
        if isinstance(cause, Mapping) and cause.get("reason"):
            text += f" ({cause.get('type', '')}: {cause['reason']})"
    else:
        text = str(error or "rejected")
    return f"HTTP {status}: {text}" if status not in (None, "") else text


class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def prefetched(items: Iterable[T], size: int) -> Iterator[T]:
    """Iterate ``items`` in a helper thread, up to ``size`` ahead of the consumer.

    Exceptions of the producer are re-raised in the consumer; a consumer that stops early stops
    the producer.
    """
    buffer: queue.Queue[Any] = queue.Queue(maxsize=max(1, size))
    stop = threading.Event()
    done = object()

    def offer(item: Any) -> bool:
        """Put ``item`` into the buffer unless the consumer has stopped (then ``False``)."""
        while not stop.is_set():
            try:
                buffer.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        # Every put gives up once the consumer stops, so a consumer that leaves early (a failed
        # bulk request) never leaves this thread blocked on a full buffer.
        try:
            for item in items:
                if not offer(item):
                    return
            offer(done)
        except BaseException as exc:  # handed to the consumer
            offer(_Raised(exc))

    thread = threading.Thread(target=produce, name="lexsearch-bulk-prepare", daemon=True)
    thread.start()
    try:
        while True:
            item = buffer.get()
            if item is done:
                return
            if isinstance(item, _Raised):
                raise item.exc
            yield item
    finally:
        stop.set()
