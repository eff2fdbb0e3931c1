"""Settings: the one place that reads the environment and the optional config file.

Values come, lowest priority first, from the defaults below, a TOML file (``LEXSEARCH_CONFIG``
or ``--config``), environment variables ``LEXSEARCH_<SECTION>_<FIELD>`` (for example
``LEXSEARCH_LLM_BASE_URL``), and explicit overrides (CLI flags, tests). Everything is validated
once, at start-up, and every problem is reported together in one :class:`ConfigError`.

Example::

    settings = load_settings(overrides={"backend": {"kind": "opensearch", "url": "http://127.0.0.1:9200"}})
    settings.backend.url
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.errors import ConfigError

ENV_PREFIX = "LEXSEARCH_"


@dataclass(frozen=True)
class IndexSettings:
    """Where embedded indices live and which index a search uses by default."""

    root: str = "var/indices"
    name: str = "default"
    model_dir: str = ""
    """Folder of trained offline models (``lexsearch train --out``); '' = none."""

    def problems(self) -> list[str]:
        return [] if self.name.strip() else ["index.name must not be empty"]


@dataclass(frozen=True)
class BackendSettings:
    """Which search engine holds the corpus, and how to reach it."""

    kind: str = "embedded"
    url: str = ""
    username: str = ""
    password: str = ""
    api_key: str = ""
    ca_cert: str = ""
    verify_certs: bool = True
    timeout_s: float = 10.0
    hnsw_min_docs: int = 20_000
    """Embedded engine: corpora at least this large get an HNSW vector index, smaller ones a flat one."""

    def problems(self) -> list[str]:
        out = []
        if self.kind not in ("embedded", "opensearch", "elasticsearch"):
            out.append(f"backend.kind must be embedded, opensearch or elasticsearch, not {self.kind!r}")
        if self.kind != "embedded" and not self.url:
            out.append(f"backend.url is required for backend.kind={self.kind}")
        if self.url and not self.url.startswith(("http://", "https://")):
            out.append(f"backend.url must start with http:// or https://, got {self.url!r}")
        if self.timeout_s <= 0:
            out.append("backend.timeout_s must be positive")
        if self.ca_cert and not Path(self.ca_cert).is_file():
            out.append(f"backend.ca_cert file not found: {self.ca_cert}")
        return out


@dataclass(frozen=True)
class EmbedderSettings:
    """Which embedding model turns text into vectors."""

    kind: str = "use"
    """use (multilingual USE v3), e5 (multilingual-e5-small), sentence-transformers, openai."""
    model_path: str = ""
    url: str = ""
    api_key: str = ""
    model: str = ""
    batch_size: int = 64
    cache_dir: str = "var/embedding-cache"
    threads: int = 2

    def problems(self) -> list[str]:
        out = []
        if self.kind not in ("use", "e5", "sentence-transformers", "openai"):
            out.append(f"embedder.kind must be use, e5, sentence-transformers or openai, not {self.kind!r}")
        if self.kind == "sentence-transformers" and not self.model_path:
            out.append("embedder.model_path is required for embedder.kind=sentence-transformers")
        if self.kind == "openai" and not (self.url and self.model):
            out.append("embedder.url and embedder.model are required for embedder.kind=openai")
        if self.batch_size < 1:
            out.append("embedder.batch_size must be at least 1")
        return out


@dataclass(frozen=True)
class LlmSettings:
    """The optional OpenAI-compatible LLM endpoint. Empty ``base_url`` means offline mode."""

    base_url: str = ""
    api_key: str = ""
    model: str = ""
    timeout_s: float = 30.0
    max_retries: int = 2
    max_concurrency: int = 4
    max_calls_per_query: int = 12
    max_tokens_per_query: int = 20_000

    @property
    def enabled(self) -> bool:
        return bool(self.base_url)

    def problems(self) -> list[str]:
        out = []
        if self.base_url and not self.base_url.startswith(("http://", "https://")):
            out.append(f"llm.base_url must start with http:// or https://, got {self.base_url!r}")
        if self.base_url and not self.model:
            out.append("llm.model is required when llm.base_url is set")
        if self.timeout_s <= 0:
            out.append("llm.timeout_s must be positive")
        if self.max_retries < 0:
            out.append("llm.max_retries must be >= 0")
        if self.max_concurrency < 1:
            out.append("llm.max_concurrency must be >= 1")
        return out


@dataclass(frozen=True)
class RetrievalSettings:
    """How BM25 and kNN are fused."""

    fusion: str = "rrf"
    """rrf or linear."""
    rrf_k: int = 60
    bm25_weight: float = 1.0
    knn_weight: float = 1.0
    normalization: str = "zscore"
    """For linear fusion: minmax or zscore."""
    depth: int = 100
    """How many hits each retriever returns before fusion."""
    max_query_chars: int = 4000

    def problems(self) -> list[str]:
        out = []
        if self.fusion not in ("rrf", "linear"):
            out.append(f"retrieval.fusion must be rrf or linear, not {self.fusion!r}")
        if self.normalization not in ("minmax", "zscore"):
            out.append(f"retrieval.normalization must be minmax or zscore, not {self.normalization!r}")
        if self.rrf_k < 1:
            out.append("retrieval.rrf_k must be >= 1")
        if self.bm25_weight < 0 or self.knn_weight < 0:
            out.append("retrieval weights must be >= 0")
        if self.depth < 1:
            out.append("retrieval.depth must be >= 1")
        return out


@dataclass(frozen=True)
class Settings:
    """All settings, frozen. Build with :func:`load_settings`."""

    index: IndexSettings = field(default_factory=IndexSettings)
    backend: BackendSettings = field(default_factory=BackendSettings)
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    llm: LlmSettings = field(default_factory=LlmSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)

    def replace(self, **sections: Mapping[str, Any]) -> Settings:
        """A copy with some fields of some sections replaced, validated again."""
        return _build({name: {**_as_dict(getattr(self, name)), **dict(vals)} for name, vals in sections.items()},
                      base=self)


def _as_dict(section: Any) -> dict[str, Any]:
    return {f.name: getattr(section, f.name) for f in dataclasses.fields(section)}


def _section_types() -> dict[str, type]:
    hints = typing.get_type_hints(Settings)
    return {f.name: hints[f.name] for f in dataclasses.fields(Settings)}


def _coerce(value: Any, target: Any, where: str) -> Any:
    """Convert a raw value (often a string from the environment) to the field's type."""
    origin = typing.get_origin(target)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(target) if a is not type(None)]
        if value is None or value == "":
            return None
        return _coerce(value, args[0], where)
    if target is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{where} must be true or false, got {value!r}")
    if target is int:
        if isinstance(value, bool):
            raise ValueError(f"{where} must be an integer, got {value!r}")
        try:
            return int(str(value).replace("_", ""))
        except ValueError:
            raise ValueError(f"{where} must be an integer, got {value!r}") from None
    if target is float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where} must be a number, got {value!r}") from None
    if origin is tuple:
        items = value.split(",") if isinstance(value, str) else list(value)
        inner = typing.get_args(target)[0]
        return tuple(_coerce(v.strip() if isinstance(v, str) else v, inner, where) for v in items if v != "")
    if target is str:
        if isinstance(value, dict | list):
            raise ValueError(f"{where} must be a string")
        return str(value)
    return value


def _build(raw: Mapping[str, Mapping[str, Any]], base: Settings | None = None) -> Settings:
    base = base or Settings()
    errors: list[str] = []
    sections: dict[str, Any] = {}
    for name, section_type in _section_types().items():
        current = getattr(base, name)
        values = dict(raw.get(name, {}))
        hints = typing.get_type_hints(section_type)
        known = {f.name for f in dataclasses.fields(section_type)}
        for key in values:
            if key not in known:
                errors.append(f"unknown setting {name}.{key} (known: {', '.join(sorted(known))})")
        kwargs = {}
        for fname in known:
            if fname in values:
                try:
                    kwargs[fname] = _coerce(values[fname], hints[fname], f"{name}.{fname}")
                except ValueError as exc:
                    errors.append(str(exc))
        section = dataclasses.replace(current, **kwargs)
        errors.extend(section.problems())
        sections[name] = section
    for name in raw:
        if name not in sections:
            errors.append(f"unknown settings section {name!r} (known: {', '.join(sections)})")
    if errors:
        raise ConfigError("invalid settings:\n  - " + "\n  - ".join(errors))
    return Settings(**sections)


def _from_env(environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    names = sorted(_section_types(), key=len, reverse=True)
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX) or key == ENV_PREFIX + "CONFIG":
            continue
        rest = key[len(ENV_PREFIX):].lower()
        for section in names:
            if rest.startswith(section + "_"):
                out.setdefault(section, {})[rest[len(section) + 1:]] = value
                break
    return out


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Settings:
    """Read defaults, the TOML file, ``LEXSEARCH_*`` variables and overrides, then validate.

    Args:
        config_file: a TOML file; defaults to ``$LEXSEARCH_CONFIG`` when set.
        environ: the environment to read (``os.environ`` by default; tests pass a dict).
        overrides: highest-priority values, ``{"section": {"field": value}}``.

    Raises:
        ConfigError: listing every invalid or unknown setting.
    """
    environ = os.environ if environ is None else environ
    merged: dict[str, dict[str, Any]] = {}
    path = config_file or environ.get(ENV_PREFIX + "CONFIG")
    if path:
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {path}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
        for name, values in data.items():
            if not isinstance(values, dict):
                raise ConfigError(f"config file {path}: [{name}] must be a table")
            merged.setdefault(name, {}).update(values)
    for name, values in _from_env(environ).items():
        merged.setdefault(name, {}).update(values)
    for name, values in (overrides or {}).items():
        merged.setdefault(name, {}).update({k: v for k, v in values.items() if v is not None})
    return _build(merged)
