"""Shared pytest fixtures, registered for every test by ``tests/conftest.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.openai_server import OpenAITestServer


@pytest.fixture
def openai_server() -> Iterator[OpenAITestServer]:
    """A started :class:`OpenAITestServer` on 127.0.0.1, stopped after the test.

    ``server.base_url`` is ``http://127.0.0.1:PORT/v1``; script it with ``server.script_chat(...)``.
    """
    server = OpenAITestServer().start()
    try:
        yield server
    finally:
        server.stop()
