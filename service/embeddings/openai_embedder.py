"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint, through the ``openai`` client.

Indexing cannot fall back to another model (vectors of different models must never mix), so
unlike the LLM steps this embedder fails loudly: any endpoint failure is an
:class:`~service.errors.EngineUnavailable` with a sentence saying what went wrong.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from service.embeddings.base import character_windows, embed_in_windows
from service.errors import ConfigError, EngineUnavailable
from service.lazy import built_once

if TYPE_CHECKING:
    import openai

    from service.config import EmbedderSettings

_PROBE_TEXT = "dimension probe"
WINDOW_CHARS = 6000
"""Longer texts are sent in windows of this many characters and pooled (about 1,500-2,500 tokens, far
below the input limit of OpenAI-style embedding models, 8,191 tokens), so nothing is cut or refused."""


class OpenAIEmbedder:
    """An :class:`~service.embeddings.base.Embedder` over an OpenAI-compatible embeddings API.

    Queries and documents are embedded the same way (OpenAI-style models use no prefixes).
    Texts are sent in batches of ``batch_size``; rows come back L2-normalised float32. Texts over
    :data:`WINDOW_CHARS` characters are embedded in windows and pooled.

    Args:
        url: base URL of the API, e.g. ``http://127.0.0.1:8000/v1``.
        model: model name sent with each request; the embedder's ``name`` is ``openai:<model>``.
        api_key: bearer key; '' for servers that need none.
        batch_size: texts per request.
        timeout_s: timeout of each request.
        dim: expected dimension; ``None`` discovers it from the first response (reading ``dim``
            before any embedding sends one small probe request).
        max_retries: retries of the ``openai`` client itself for 429, 5xx and connection errors.

    Raises (from the embed methods and ``dim``):
        EngineUnavailable: the endpoint cannot be reached, times out, answers an error or an
            unusable response.
        ConfigError: the endpoint returns vectors of another dimension than ``dim``.

    Example::

        embedder = OpenAIEmbedder("http://127.0.0.1:8000/v1", "text-embedding-3-small")
        vectors = embedder.embed_documents(["Art. 41 OR ...", "§ 823 BGB ..."])  # (2, dim)
    """

    def __init__(self, url: str, model: str, api_key: str = "", batch_size: int = 64, timeout_s: float = 30.0,
                 dim: int | None = None, *, max_retries: int = 2) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.url = url
        self.model = model
        self.name = f"openai:{model}"
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self._api_key = api_key
        self._dim = dim
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, settings: EmbedderSettings) -> OpenAIEmbedder:
        """The embedder of the ``embedder`` settings; the table rule of :data:`service.plugins.EMBEDDERS`."""
        return cls(settings.url, settings.model, api_key=settings.api_key, batch_size=settings.batch_size)

    @property
    def dim(self) -> int:
        """The vector dimension (probing the endpoint once if it was not given nor seen yet)."""
        if self._dim is None:
            self._embed([_PROBE_TEXT])
        assert self._dim is not None  # set by _embed
        return self._dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries; returns ``(len(texts), dim)`` float32, rows of norm 1."""
        return self._embed(texts)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents; returns ``(len(texts), dim)`` float32, rows of norm 1."""
        return self._embed(texts)

    def _openai(self) -> openai.OpenAI:
        return built_once(self, "_client", self._lock, self._new_client)

    def _new_client(self) -> openai.OpenAI:
        import openai

        return openai.OpenAI(base_url=self.url, api_key=self._api_key or "unused", timeout=self.timeout_s,
                             max_retries=self.max_retries)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("pass a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        matrix = embed_in_windows(texts, lambda text: character_windows(text, WINDOW_CHARS), self._embed_pieces)
        with self._lock:
            if self._dim is None:
                self._dim = matrix.shape[1]
        if matrix.shape[1] != self._dim:
            raise ConfigError(f"embedding model {self.model!r} at {self.url} returns "
                              f"{matrix.shape[1]}-dimensional vectors, but {self._dim} were expected")
        return matrix

    def _embed_pieces(self, pieces: list[str]) -> np.ndarray:
        rows: list[np.ndarray] = []
        for start in range(0, len(pieces), self.batch_size):
            rows.extend(self._embed_batch(pieces[start:start + self.batch_size]))
        return np.vstack(rows)

    def _embed_batch(self, batch: list[str]) -> list[np.ndarray]:
        import openai

        # The API rejects empty strings; a blank embeds as "nothing" all the same.
        inputs = [text if text.strip() else " " for text in batch]
        where = f"embedding endpoint {self.url} (model {self.model!r})"
        try:
            response = self._openai().embeddings.create(model=self.model, input=inputs,
                                                        encoding_format="float")
        except openai.APITimeoutError:
            raise EngineUnavailable(f"{where} did not answer within {self.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise EngineUnavailable(f"cannot reach {where}: {exc}") from None
        except openai.APIStatusError as exc:
            raise EngineUnavailable(f"{where} answered HTTP {exc.status_code}: {exc.message}") from None
        except openai.OpenAIError as exc:
            raise EngineUnavailable(f"{where} failed: {exc}") from None
        return self._rows(response, len(inputs), where)

    @staticmethod
    def _rows(response: Any, expected: int, where: str) -> list[np.ndarray]:
        try:
            data = sorted(response.data, key=lambda item: item.index)
            rows = [np.asarray(item.embedding, dtype=np.float32) for item in data]
        except (AttributeError, TypeError, ValueError):
            raise EngineUnavailable(f"{where} returned a response without usable embeddings") from None
        if len(rows) != expected:
            raise EngineUnavailable(f"{where} returned {len(rows)} embeddings for {expected} texts")
        if any(row.ndim != 1 or row.shape != rows[0].shape or row.size == 0 for row in rows):
            raise EngineUnavailable(f"{where} returned embeddings of unequal or empty dimension")
        return rows
