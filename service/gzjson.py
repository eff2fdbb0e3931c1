"""Gzipped JSON files that are the same bytes whenever their content is the same.

``gzip.open`` writes the current time (and the file's name) into the header, so two trainings that
learn the same model would still write different files. These helpers write neither, which lets a
check compare model folders byte for byte.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any


def write_gzip_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as compact UTF-8 JSON, gzipped, with no timestamp in the header."""
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as packed, \
            io.TextIOWrapper(packed, encoding="utf-8") as text:
        json.dump(data, text, ensure_ascii=False, separators=(",", ":"))


def read_gzip_json(path: str | Path) -> Any:
    """The JSON value of a gzipped file."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)
