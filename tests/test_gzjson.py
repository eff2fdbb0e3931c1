"""Gzipped JSON written byte-identically for identical content."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from service.gzjson import read_gzip_json, write_gzip_json

pytestmark = pytest.mark.unit


def test_the_same_content_gives_the_same_bytes_at_another_time(tmp_path: Path) -> None:
    data = {"劳动者": [["用人单位", 0.98]], "documents": 3}
    write_gzip_json(tmp_path / "a.json.gz", data)
    time.sleep(1.1)  # gzip headers hold whole seconds
    write_gzip_json(tmp_path / "b.json.gz", data)
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()
    assert read_gzip_json(tmp_path / "b.json.gz") == data
