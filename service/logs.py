"""Structured logs: one JSON object per line, for the API server and the workers.

Fields given through ``extra={"fields": {...}}`` (request id, job id, status, latency...) become
top-level keys, so a log shipper can index them without parsing messages.

Example::

    configure_json_logging("INFO")
    logging.getLogger("lexsearch.api").info("request", extra={"fields": {"request_id": "r1", "status": 200}})
    # {"ts": "2025-01-01T12:00:00.123Z", "level": "INFO", "logger": "lexsearch.api", "msg": "request",
    #  "request_id": "r1", "status": 200}
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
from typing import Any


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure_json_logging(level: str = "INFO") -> None:
    """Send every log record to stderr as JSON lines (replacing earlier handlers of the root logger)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
