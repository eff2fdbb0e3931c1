"""Errors that carry a message meant for the user.

Anything raised as a :class:`LexsearchError` is reported by the CLI as one clear line with a
non-zero exit, and by the API as a JSON error with ``code`` and ``message``; anything else is a bug.
"""

from __future__ import annotations


class LexsearchError(Exception):
    """Base class: ``str(err)`` is a complete, user-facing sentence.

    ``code`` is a stable machine-readable name; ``http_status`` the matching HTTP status.
    """

    code = "error"
    http_status = 400
    exit_code = 2

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code:
            self.code = code


class InvalidInput(LexsearchError):
    """The request or command line is malformed (empty query, unknown field, bad value)."""

    code = "invalid_input"


class ConfigError(LexsearchError):
    """Settings are missing or invalid."""

    code = "invalid_config"


class IndexNotFound(LexsearchError):
    """The named index or index folder does not exist."""

    code = "index_not_found"
    http_status = 404


class IndexCorrupt(LexsearchError):
    """An index exists but cannot be read, or does not match the settings."""

    code = "index_corrupt"
    http_status = 500


class EngineUnavailable(LexsearchError):
    """The search engine cannot be reached, refused the credentials, or answered with an error."""

    code = "engine_unavailable"
    http_status = 503
    exit_code = 3


class DataError(LexsearchError):
    """A dataset folder or corpus file is missing or unreadable."""

    code = "data_error"


class StoreUnavailable(LexsearchError):
    """Redis (job records, queue, API keys, rate limits) cannot be reached."""

    code = "store_unavailable"
    http_status = 503
    exit_code = 3


class JobNotFound(LexsearchError):
    """No job with that id (or it belongs to another API key, or its record is gone)."""

    code = "job_not_found"
    http_status = 404
