"""Fixtures shared by the CLI tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from service.cli import main


@pytest.fixture
def cli(env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """``cli(*argv) -> (exit code, stdout, stderr)`` with the test module's ``env`` (its
    ``LEXSEARCH_*`` entries) set for the call."""
    for key, value in env.items():
        if key.startswith("LEXSEARCH_"):
            monkeypatch.setenv(key, value)

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err
    return run
