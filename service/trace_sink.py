"""Optional: one trace document per search, written to the ``lexsearch-traces`` index of an engine.

With ``api.traces_url`` set, the API (every ``POST /v1/search``) and the workers (every finished
search job) hand a small record to :meth:`EngineTraceSink.emit`. A background thread sends them
in bulk through the official client (opensearch-py or elasticsearch), so a slow or absent engine
never delays an answer: when the buffer is full, records are dropped and counted. The index is
created on first use from ``mappings/traces.json``; ``kibana/traces.ndjson`` holds a saved search
and visualisations (tier distribution, latency) over it.

Example::

    sink = build_trace_sink(settings)
    sink.emit(trace_record(kind="search", request_id="r1", index="swiss", pipeline="routed",
                           trace=response.trace, latency_ms=41.0, hits=10, returned=4))
"""

from __future__ import annotations

import datetime
import json
import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from service.config import Settings
from service.search_json import tier_of

log = logging.getLogger(__name__)

MAPPING_FILE = Path(__file__).resolve().parents[1] / "mappings" / "traces.json"
BUFFER = 10_000
BATCH = 500
FLUSH_S = 1.0


class TraceSink(Protocol):
    """Where trace records go."""

    def emit(self, record: dict[str, Any]) -> None:
        """Queue one record; never blocks and never raises."""

    def close(self) -> None:
        """Send what is queued (best effort) and stop."""


class NullTraceSink:
    """Traces switched off."""

    def emit(self, record: dict[str, Any]) -> None:
        return None

    def close(self) -> None:
        return None


def trace_record(*, kind: str, request_id: str, index: str, pipeline: str, trace: dict[str, Any],
                 latency_ms: float, hits: int, returned: int, status: str = "ok", http_status: int = 200,
                 job_id: str = "", key_id: str = "", query_chars: int = 0, lang: str = "") -> dict[str, Any]:
    """The document stored for one search (fields as in ``mappings/traces.json``)."""
    routing = trace.get("routing") if isinstance(trace.get("routing"), dict) else {}
    timings = trace.get("timings_ms") if isinstance(trace.get("timings_ms"), dict) else {}
    return {
        "@timestamp": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
        "kind": kind, "request_id": request_id, "job_id": job_id, "key_id": key_id, "index": index,
        "pipeline": pipeline, "tier": tier_of(trace), "tier_label": routing.get("tier_label", ""),
        "status": status, "http_status": http_status, "latency_ms": round(latency_ms, 3), "hits": hits,
        "returned": returned, "query_chars": query_chars, "lang": lang,
        "llm_calls": int(trace.get("llm_calls", 0) or 0),
        "timings_ms": {k: float(v) for k, v in timings.items() if isinstance(v, int | float)},
        "trace": trace,
    }


class EngineTraceSink:
    """Bulk-writes trace records to an OpenSearch or Elasticsearch index from a background thread.

    Args:
        client: an ``opensearchpy.OpenSearch`` or ``elasticsearch.Elasticsearch`` client.
        index: the index name (created with ``mappings/traces.json`` when missing).
        engine: ``opensearch`` or ``elasticsearch`` (their client signatures differ slightly).
    """

    def __init__(self, client: Any, index: str, *, engine: str) -> None:
        self.client = client
        self.index = index
        self.engine = engine
        self.dropped = 0
        self.sent = 0
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=BUFFER)
        self._ready = False
        self._thread = threading.Thread(target=self._loop, name="trace-sink", daemon=True)
        self._thread.start()

    def emit(self, record: dict[str, Any]) -> None:
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)

    def flush(self, timeout_s: float = 10.0) -> None:
        """Wait until everything queued so far has been sent (tests, shutdown)."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.05)

    def _loop(self) -> None:
        stop = False
        while not stop:
            batch: list[dict[str, Any]] = []
            try:
                item = self._queue.get(timeout=FLUSH_S)
            except queue.Empty:
                continue
            while True:
                if item is None:
                    stop = True
                else:
                    batch.append(item)
                if len(batch) >= BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            try:
                if batch:
                    self._send(batch)
            except Exception as exc:  # an unreachable engine must not take the API down with it
                self.dropped += len(batch)
                log.warning("could not write %d traces to %s: %s", len(batch), self.index, exc)
            finally:
                for _ in range(len(batch) + (1 if stop else 0)):
                    self._queue.task_done()

    def _ensure_index(self) -> None:
        if self._ready:
            return
        if not self.client.indices.exists(index=self.index):
            spec = json.loads(MAPPING_FILE.read_text(encoding="utf-8"))
            try:
                if self.engine == "elasticsearch":
                    self.client.indices.create(index=self.index, settings=spec["settings"],
                                               mappings=spec["mappings"])
                else:
                    self.client.indices.create(index=self.index, body=spec)
            except Exception as exc:
                if "resource_already_exists" not in str(exc):
                    raise
        self._ready = True

    def _send(self, batch: list[dict[str, Any]]) -> None:
        self._ensure_index()
        operations: list[dict[str, Any]] = []
        for record in batch:
            operations.append({"index": {"_index": self.index}})
            operations.append(record)
        result = self.client.bulk(body=operations)
        errors = [item for item in result.get("items", []) if item.get("index", {}).get("error")]
        self.sent += len(batch) - len(errors)
        if errors:
            self.dropped += len(errors)
            log.warning("%d traces were refused by %s, e.g. %s", len(errors), self.index,
                        errors[0]["index"]["error"])


def build_trace_sink(settings: Settings) -> TraceSink:
    """The sink the settings ask for: off unless ``api.traces_url`` is set."""
    cfg = settings.api
    if not cfg.traces_url:
        return NullTraceSink()
    auth = (settings.backend.username, settings.backend.password) if settings.backend.username else None
    if cfg.traces_engine == "elasticsearch":
        from elasticsearch import Elasticsearch

        client: Any = Elasticsearch(cfg.traces_url, basic_auth=auth, request_timeout=settings.backend.timeout_s)
    else:
        from opensearchpy import OpenSearch

        client = OpenSearch([cfg.traces_url], http_auth=auth, timeout=settings.backend.timeout_s)
    return EngineTraceSink(client, cfg.traces_index, engine=cfg.traces_engine)
