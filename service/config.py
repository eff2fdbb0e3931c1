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
import logging
import math
import os
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.errors import ConfigError
from service.plugins import BACKENDS, EMBEDDERS, RERANKERS

log = logging.getLogger(__name__)

ENV_PREFIX = "LEXSEARCH_"


# Checks that several sections' ``problems`` make; each returns its messages ([] when all is well).

def _not_one_of(where: str, value: str, choices: Sequence[str]) -> list[str]:
    """``"<where> must be one of a, b, c, not 'x'"`` when ``value`` is none of ``choices``."""
    return [] if value in choices else [f"{where} must be one of {', '.join(choices)}, not {value!r}"]


def _not_either(where: str, value: str, choices: Sequence[str]) -> list[str]:
    """``"<where> must be a, b or c, not 'x'"`` when ``value`` is none of ``choices`` (a short fixed list)."""
    if value in choices:
        return []
    return [f"{where} must be {', '.join(choices[:-1])} or {choices[-1]}, not {value!r}"]


def _not_http(where: str, urls: Iterable[str]) -> list[str]:
    """One message per URL of ``urls`` that starts with neither http:// nor https:// ('' is no URL: not checked)."""
    return [f"{where} must start with http:// or https://, got {url!r}"
            for url in urls if url and not url.startswith(("http://", "https://"))]


def _below(minimum: int, wording: str, prefix: str, section: Any, *names: str) -> list[str]:
    """``"<prefix>.<name> must be <wording>"`` for each field ``name`` of ``section`` below ``minimum``."""
    return [f"{prefix}.{name} must be {wording}" for name in names if getattr(section, name) < minimum]


def _missing_file(where: str, path: str) -> list[str]:
    """``"<where> file not found: <path>"`` when ``path`` is set but no file."""
    return [f"{where} file not found: {path}"] if path and not Path(path).is_file() else []


@dataclass(frozen=True)
class CpuSettings:
    """The cores lexsearch may use, and the computing threads of each of its processes.

    Every thread count is derived from these two in one place, :mod:`service.cpu`, so that the
    processes and threads of a command together use the cores without oversubscribing them.
    """

    cores: int = 0
    """Cores this host gives lexsearch; 0 = those the process may run on (CPU affinity and a container's
    CPU quota). Set it lower to leave cores to an engine or to the workers on the same host."""
    threads: int = 0
    """Computing threads of one process (BLAS, OpenMP, onnxruntime, faiss, the embedder); 0 = the cores
    divided by the processes of the command (``lexsearch serve``: api.workers; ``lexsearch worker``: its
    concurrency; other commands: 1)."""

    def problems(self) -> list[str]:
        return _below(0, ">= 0 (0 = automatic)", "cpu", self, "cores", "threads")


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
    """A name of :data:`service.plugins.BACKENDS`: embedded, opensearch, elasticsearch."""
    url: str = ""
    """Engine node URL; for a cluster several, comma-separated (requests fail over between them)."""
    username: str = ""
    password: str = ""
    api_key: str = ""
    ca_cert: str = ""
    verify_certs: bool = True
    timeout_s: float = 10.0
    hnsw_min_docs: int = 20_000
    """Embedded engine: corpora at least this large get an HNSW vector index, smaller ones a flat one."""

    def problems(self) -> list[str]:
        out = _not_one_of("backend.kind", self.kind, BACKENDS.choices())
        if self.kind != "embedded" and not self.url:
            out.append(f"backend.url is required for backend.kind={self.kind}")
        out += _not_http("backend.url", self.urls)
        if self.timeout_s <= 0:
            out.append("backend.timeout_s must be positive")
        return out + _missing_file("backend.ca_cert", self.ca_cert)

    @property
    def urls(self) -> tuple[str, ...]:
        """The node URLs of :attr:`url` (comma-separated), without trailing slashes."""
        return tuple(u.strip().rstrip("/") for u in self.url.split(",") if u.strip())


SEARCH_TYPES = ("auto", "query_then_fetch", "dfs_query_then_fetch")


@dataclass(frozen=True)
class EngineSettings:
    """Elasticsearch/OpenSearch specifics: index layout, bulk ingest, kNN, and attaching foreign indices."""

    field_map: str = ""
    """TOML/JSON file describing an existing index to search without re-indexing ('' = none); docs/BACKENDS.md."""
    shards: int = 1
    """Primary shards of new indices (BM25 statistics stay global through ``search_type``)."""
    replicas: int = 0
    """Replica copies of each shard of new indices; 1 or more lets a cluster lose a node."""
    load_replicas: int = -1
    """Replica copies while a rebuilt version is bulk-loaded (-1 = ``replicas``). 0 indexes each document
    once and has the engine copy the merged shards to their replicas when the version is published: about
    half the indexing work on a cluster, but a node lost during the load fails it (the live version stays)."""
    fusion: str = "client"
    """Hybrid fusion: client (lexsearch fuses the BM25 and kNN lists, on every backend) or engine
    (OpenSearch's hybrid query and a search pipeline fuse them; retrieval.fusion picks RRF or linear)."""
    search_type: str = "auto"
    """BM25 searches: auto (dfs_query_then_fetch on indices of several shards, so their scores are those
    of one shard), query_then_fetch (per-shard statistics: faster, scores drift) or dfs_query_then_fetch."""
    bulk_chunk: int = 500
    """Documents per bulk request."""
    bulk_retries: int = 4
    """Re-sends of documents rejected with 429 or 5xx (or lost to a connection error), with backoff."""
    bulk_backoff_s: float = 1.0
    """First backoff; doubled on every retry."""
    bulk_timeout_s: float = 120.0
    """Timeout of one bulk, refresh or admin request."""
    knn_candidates: int = 100
    """HNSW beam width floor per kNN search (num_candidates on Elasticsearch)."""
    hnsw_m: int = 32
    hnsw_ef_construction: int = 128
    synonyms_path: str = ""
    """Synonym file in the engine's config folder, with {lang}, e.g. analysis/legal-synonyms-{lang}.txt."""
    force_merge: bool = True
    """Merge a rebuilt index to one segment before it goes live (faster kNN, exact BM25 statistics)."""
    force_merge_timeout_s: float = 14_400.0
    """How long ``publish`` waits for the force-merge, a cluster task that the client polls (no request is
    held open): 45 minutes for 1,000,000 documents on three 1 GB nodes (docs/SCALING.md)."""

    @property
    def replica_wait_s(self) -> float:
        """How long ``publish`` waits for replicas being copied (one health request held open):
        ``bulk_timeout_s``, at least 30 minutes."""
        return max(self.bulk_timeout_s, 1800.0)

    @property
    def replicas_while_loading(self) -> int:
        """Replica copies of a version being bulk-loaded (``load_replicas``, else ``replicas``)."""
        return self.replicas if self.load_replicas < 0 else self.load_replicas

    def problems(self) -> list[str]:
        out = []
        if self.shards < 1 or self.replicas < 0:
            out.append("engine.shards must be >= 1 and engine.replicas >= 0")
        if self.load_replicas < -1:
            out.append("engine.load_replicas must be -1 (as engine.replicas) or >= 0")
        out += _not_either("engine.fusion", self.fusion, ("client", "engine"))
        out += _not_one_of("engine.search_type", self.search_type, SEARCH_TYPES)
        out += _below(1, "at least 1", "engine", self, "bulk_chunk", "knn_candidates", "hnsw_m", "hnsw_ef_construction")
        if self.bulk_retries < 0 or self.bulk_backoff_s < 0 or self.bulk_timeout_s <= 0:
            out.append("engine.bulk_retries and engine.bulk_backoff_s must be >= 0, engine.bulk_timeout_s positive")
        if not self.force_merge_timeout_s > 0:
            out.append("engine.force_merge_timeout_s must be positive")
        if self.synonyms_path and "{lang}" not in self.synonyms_path:
            out.append("engine.synonyms_path must contain {lang}, e.g. analysis/legal-synonyms-{lang}.txt")
        return out + _missing_file("engine.field_map", self.field_map)


_KINDS_WITHOUT_MODEL = ("use", "e5")


def parse_embedder_spec(spec: str) -> dict[str, Any]:
    """The embedder fields that a short spec ``kind[:model][@max_tokens]`` stands for.

    ``kind`` is a name of :data:`service.plugins.EMBEDDERS`; the part after ``:`` is the onnx model
    (or a jar path), the sentence-transformers folder, or the openai model; ``@N`` sets ``max_tokens``.

    Raises:
        ValueError: for an unknown kind, a missing or unexpected model, or a bad ``@N``.

    Example::

        parse_embedder_spec("onnx:bge-small-zh-v15-q@256")
        # {'kind': 'onnx', 'model': 'bge-small-zh-v15-q', 'model_path': '', 'max_tokens': 256}
    """
    body, at, tokens = spec.strip().rpartition("@") if "@" in spec else (spec.strip(), "", "")
    kind, _, model = body.partition(":")
    kind, model = kind.strip(), model.strip()
    if kind not in EMBEDDERS:
        raise ValueError(f"unknown embedder {kind!r} in {spec!r} (use {', '.join(EMBEDDERS.names())})")
    if kind in _KINDS_WITHOUT_MODEL and model:
        raise ValueError(f"embedder {kind} takes no model, got {spec!r}")
    if kind not in _KINDS_WITHOUT_MODEL and not model:
        raise ValueError(f"embedder {kind} needs a model: {kind}:<model>, got {spec!r}")
    if at and not (tokens.isdigit() and kind == "onnx"):
        raise ValueError(f"@<tokens> must be a whole number and is only for onnx models, got {spec!r}")
    fields: dict[str, Any] = {"kind": kind, "model": "", "model_path": "", "max_tokens": int(tokens or 0)}
    if kind == "sentence-transformers" or (kind == "onnx" and model.endswith(".jar")):
        fields["model_path"] = model
    else:
        fields["model"] = model
    return fields


@dataclass(frozen=True)
class EmbedderSettings:
    """Which embedding model turns text into vectors: one per corpus language (docs/EMBEDDERS.md).

    The fields other than ``per_language`` describe the default embedder, which serves corpora of
    other languages and corpora of several languages (one vector space per index), so it should be
    multilingual.
    """

    kind: str = "use"
    """A name of :data:`service.plugins.EMBEDDERS`: use (multilingual USE v3), e5 (multilingual-e5-small),
    onnx (a langchain4j jar), sentence-transformers, openai."""
    model_path: str = ""
    """sentence-transformers: the model folder; onnx: a jar file ('' = find ``model`` in the Maven repository)."""
    url: str = ""
    api_key: str = ""
    model: str = ""
    """openai: the model name; onnx: the jar's model, e.g. bge-small-zh-v15-q (docs/EMBEDDERS.md)."""
    max_tokens: int = 0
    """onnx: longest input in tokens; longer texts are cut (0 = the model's limit, 512 for BGE and e5)."""
    maven_repo: str = ""
    """onnx: the local Maven repository holding the jars ('' = $M2_REPO or ~/.m2/repository)."""
    per_language: tuple[str, ...] = ("zh=onnx:bge-small-zh-v15-q", "en=onnx:e5-small-v2-q")
    """``lang=spec`` entries: the embedder of a corpus in that one language, as ``kind[:model][@max_tokens]``
    (:func:`parse_embedder_spec`); url, api_key, maven_repo, threads and the cache come from this section."""
    batch_size: int = 64
    cache_dir: str = "var/embedding-cache"
    threads: int = 0
    """Threads of the embedding model (BLAS for use, OpenMP for e5, texts side by side for onnx);
    0 = ``cpu.threads``, the share of the cores of one process (service/cpu.py)."""

    def for_language(self, language: str) -> EmbedderSettings:
        """The settings of the embedder for a corpus in ``language`` (``"zh"``; ``"de,fr,it"`` or ``""``
        for several or unknown languages, which get the default embedder)."""
        overrides = self._per_language().get(language.strip(), {})
        return dataclasses.replace(self, per_language=(), **overrides)

    def choices(self) -> list[tuple[str, EmbedderSettings]]:
        """Every configured embedder: ``("default", ...)`` first, then one per language entry."""
        return [("default", self.for_language("")),
                *((lang, self.for_language(lang)) for lang in self._per_language())]

    def _per_language(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for entry in self.per_language:
            lang, sep, spec = entry.partition("=")
            if not sep or not lang.strip() or "," in lang:
                raise ValueError(f"embedder.per_language entry {entry!r} must look like lang=spec, "
                                 "e.g. zh=onnx:bge-small-zh-v15-q")
            try:
                out[lang.strip()] = parse_embedder_spec(spec)
            except ValueError as exc:
                raise ValueError(f"embedder.per_language {entry!r}: {exc}") from None
        return out

    def problems(self) -> list[str]:
        out = _not_one_of("embedder.kind", self.kind, EMBEDDERS.choices())
        if self.kind == "sentence-transformers" and not self.model_path:
            out.append("embedder.model_path is required for embedder.kind=sentence-transformers")
        if self.kind == "openai" and not (self.url and self.model):
            out.append("embedder.url and embedder.model are required for embedder.kind=openai")
        if self.kind == "onnx" and not (self.model or self.model_path):
            out.append("embedder.model (e.g. bge-small-zh-v15-q) or embedder.model_path (a jar) is required "
                       "for embedder.kind=onnx")
        out += _below(0, ">= 0", "embedder", self, "max_tokens")
        out += _below(1, "at least 1", "embedder", self, "batch_size")
        out += _below(0, ">= 0 (0 = cpu.threads)", "embedder", self, "threads")
        try:
            languages = self._per_language()
        except ValueError as exc:
            return [*out, str(exc)]
        for lang in languages:
            out.extend(f"{problem} (embedder.per_language {lang})"
                       for problem in self.for_language(lang).problems())
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
        out = _not_http("llm.base_url", [self.base_url])
        if self.base_url and not self.model:
            out.append("llm.model is required when llm.base_url is set")
        if self.timeout_s <= 0:
            out.append("llm.timeout_s must be positive")
        out += _below(0, ">= 0", "llm", self, "max_retries")
        out += _below(1, ">= 1", "llm", self, "max_concurrency")
        return out


@dataclass(frozen=True)
class RetrievalSettings:
    """How BM25 and kNN are fused."""

    fusion: str = "linear"
    """linear (default: per-query z-scored scores, weighted sum) or rrf."""
    rrf_k: int = 60
    bm25_weight: float | None = None
    knn_weight: float | None = None
    """Fixed fusion weights (set both); unset, each index uses the weights that ``lexsearch train`` fitted
    (with ``index.model_dir``) or else those chosen without labels when it was built (docs/FUSION.md)."""
    normalization: str = "zscore"
    """For linear fusion: minmax or zscore."""
    depth: int = 100
    """How many hits each retriever returns before fusion."""
    section_share: float = 0.5
    """Linear fusion, corpora whose articles have headings (``meta.heading_path``): every candidate gets at
    least this share of the best kNN score (above the list's minimum) in its heading section, so kNN
    votes for the subject and BM25 picks the article in it (docs/FUSION.md); 0 = off."""
    knn_feedback_docs: int = 8
    """For a long question (see ``long_query_chars``) the hybrid pipeline's kNN side searches with its
    passage vector moved toward the stored vectors of this many first BM25 hits (vector pseudo-relevance
    feedback, docs/FUSION.md); 0 = off. The probe of the routed and agentic pipelines is not moved."""
    knn_feedback_weight: float = 1.0
    """How far: the hits' centroid weighs this much against the question's own vector."""
    max_query_chars: int = 50_000
    """Longer questions are refused (``query_too_long``) by the CLI, the API and jobs, never cut.
    Exam questions and case files put the facts first and the question last, up to ~26,000 characters."""
    long_query_chars: int = 500
    """Longer questions are read as passages plus the question proper (service/retrieval/long_query.py);
    0 = never."""
    balance_kinds: bool = True
    """An index holding statutes and decisions is searched twice, the statutes alone and the decisions alone,
    and the two rankings interleaved by rank, statutes first (service/pipelines/kinds.py); false =
    one ranking over the whole index. A request can ask for one ranking with the option ``one_ranking``."""

    def problems(self) -> list[str]:
        out = [*_not_either("retrieval.fusion", self.fusion, ("rrf", "linear")),
               *_not_either("retrieval.normalization", self.normalization, ("minmax", "zscore"))]
        out += _below(1, ">= 1", "retrieval", self, "rrf_k")
        if (self.bm25_weight is None) != (self.knn_weight is None):
            out.append("retrieval.bm25_weight and retrieval.knn_weight must be set together (or neither)")
        elif self.bm25_weight is not None and self.knn_weight is not None and (
                self.bm25_weight < 0 or self.knn_weight < 0 or self.bm25_weight + self.knn_weight <= 0):
            out.append("retrieval weights must be >= 0 and not both 0")
        out += _below(1, ">= 1", "retrieval", self, "depth", "max_query_chars")
        out += _below(0, ">= 0 (0 = never)", "retrieval", self, "long_query_chars")
        out += _below(0, ">= 0 (0 = off)", "retrieval", self, "knn_feedback_docs")
        if not (math.isfinite(self.knn_feedback_weight) and self.knn_feedback_weight >= 0):
            out.append(f"retrieval.knn_feedback_weight must be a number >= 0, not {self.knn_feedback_weight}")
        if not 0 <= self.section_share <= 1:
            out.append(f"retrieval.section_share must be between 0 and 1, not {self.section_share}")
        return out


def parse_option_spec(spec: str) -> dict[str, str]:
    """Parse a pipeline-options string ``"key=value;key=a,b"`` into ``{"key": "value", ...}``.

    Values stay strings (comma lists included); the pipeline that reads them interprets them.

    Raises:
        ValueError: for an entry without ``=`` or with an empty key.

    Example::

        parse_option_spec("reranker=learned;agents=terminology,conditions")
        # {'reranker': 'learned', 'agents': 'terminology,conditions'}
    """
    out: dict[str, str] = {}
    for part in spec.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"option {part.strip()!r} must look like key=value")
        out[key.strip()] = value.strip()
    return out


@dataclass(frozen=True)
class RoutingTier:
    """One routing tier: the registered pipeline it runs and the ``SearchRequest.options`` it passes.

    Written as ``"pipeline"`` or ``"pipeline: key=value; key=a,b"`` in the TOML file (a list of such
    strings) and in ``LEXSEARCH_ROUTING_TIERS`` (the tiers separated by ``|``).

    Example::

        RoutingTier.parse("hybrid+rerank: reranker=learned").option_dict()   # {'reranker': 'learned'}
    """

    pipeline: str
    options: tuple[tuple[str, str], ...] = ()

    list_separator: typing.ClassVar[str] = "|"
    """Separates tiers in one string (an environment variable); commas belong to option values."""

    @classmethod
    def parse(cls, spec: str) -> RoutingTier:
        """Read ``"pipeline[: options]"``.

        Raises:
            ValueError: for an empty pipeline name or a malformed option.
        """
        name, _, options = spec.partition(":")
        if not name.strip():
            raise ValueError(f"tier {spec.strip()!r} must start with a pipeline name")
        return cls(name.strip(), tuple(parse_option_spec(options).items()))

    def option_dict(self) -> dict[str, str]:
        return dict(self.options)

    def spec(self) -> str:
        """The tier as written in settings (the inverse of :meth:`parse`)."""
        options = ";".join(f"{k}={v}" for k, v in self.options)
        return f"{self.pipeline}: {options}" if options else self.pipeline


DEFAULT_TIERS: tuple[RoutingTier, ...] = tuple(RoutingTier.parse(spec) for spec in (
    "hybrid",
    "hybrid+rerank: reranker=learned",
    "agentic: reranker=learned;agents=terminology,conditions,supportive,repair;max_rounds=2;prefilter=0;citations=0;"
    "hyde=0",
    "agentic: reranker=auto;agents=terminology,conditions,decompose,supportive,repair;max_rounds=3;prefilter=1;"
    "citations=1;hyde=1",
))
"""Tier 0 fusion only, tier 1 the learned reranker, tier 2 a light agentic search, tier 3 the full one
(``reranker=auto``: the LLM reranker when an LLM is configured, else the learned one)."""


@dataclass(frozen=True)
class RoutingNumbers:
    """The numbers routing computes with (docs/ROUTING.md, "Formulas").

    :class:`RoutingSettings` holds them as configured; the routed pipeline resolves them per index
    (``service.routing.router.RoutingParams``), where a stored calibration replaces the thresholds,
    gamma and the cut, and the index's QSI calibration replaces ``qsi_a`` / ``qsi_b``.
    """

    thresholds: tuple[float, ...] = (0.25, 0.45, 0.7)
    """Complexity at which tiers 1, 2 and 3 start (three non-decreasing numbers in [0, 1])."""
    gamma: float = 0.5
    """Weight of intrinsic complexity in the final score; the rest goes to retrieval consistency."""
    base_weight: float = 0.3
    """Weight of C_base (length) in intrinsic complexity; the rest goes to the five dimensions."""
    gate_p: float = 1.5
    gate_q: float = 0.3
    rdi_k: int = 10
    rdi_jaccard_weight: float = 0.7
    qsi_a: float = 0.5
    """QSI slope for indices without a stored calibration (the CoAL-RAG paper's value)."""
    qsi_b: float = 12.5
    cut_sigma: float = 0.2
    cut_min_k: int = 1
    cut_max_k: int = 10
    cut_depth: int = 50
    """How many hits the chosen strategy ranks; the cut normalises scores over all of them."""

    def problems(self) -> list[str]:
        """What is wrong with the numbers, one message each (for settings and stored calibrations alike)."""
        out = []
        t = self.thresholds
        if len(t) != 3 or not all(0.0 <= x <= 1.0 for x in t) or not t[0] <= t[1] <= t[2]:
            out.append(f"routing.thresholds must be three non-decreasing numbers in [0, 1], got {t}")
        for name in ("gamma", "base_weight", "gate_q", "rdi_jaccard_weight"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                out.append(f"routing.{name} must be between 0 and 1, got {getattr(self, name)}")
        if self.gate_p <= 0:
            out.append("routing.gate_p must be positive")
        if self.qsi_a <= 0:
            out.append("routing.qsi_a must be positive")
        out += _below(3, ">= 3", "routing", self, "rdi_k")
        if not 0.0 < self.cut_sigma < 1.0:
            out.append(f"routing.cut_sigma must be between 0 and 1, got {self.cut_sigma}")
        if not 1 <= self.cut_min_k <= self.cut_max_k <= self.cut_depth:
            out.append("routing needs 1 <= cut_min_k <= cut_max_k <= cut_depth, got "
                       f"{self.cut_min_k}, {self.cut_max_k}, {self.cut_depth}")
        return out


_OLD_TIER_KEYS = {f"tier{i}{suffix}": (i, suffix) for i in range(4) for suffix in ("", "_options")}


@dataclass(frozen=True)
class RoutingSettings(RoutingNumbers):
    """Complexity-aware routing (the ``routed`` pipeline); see docs/ROUTING.md.

    The numbers (:class:`RoutingNumbers`) as configured, the tiers, and the switches. A calibration
    stored with the model folder (``lexsearch train``) or with the index (``lexsearch calibrate``)
    replaces thresholds, gamma and the cut while ``use_calibration`` is true.
    """

    tiers: tuple[RoutingTier, ...] = DEFAULT_TIERS
    """What each tier runs, tier 0 first: one more tier than thresholds."""
    use_calibration: bool = True
    llm_complexity: bool = True
    """With an LLM configured, let it rate the five dimensions (falls back to the offline counts)."""
    escalate_issues: bool = True
    """Send a question that raises two or more issues to the last tier, whatever its score: only that
    tier searches each issue on its own (``service.agents.issues.IssueCounter``)."""
    metadata_ttl_s: float = 60.0
    """How long a process keeps an index's and a model folder's calibration before reading it again."""

    @staticmethod
    def read_old_spellings(values: dict[str, Any], current: RoutingSettings) -> dict[str, Any]:
        """Fold the spellings before ``tiers`` (``tierN``, ``tierN_options``; N = 0..3) into ``tiers``.

        Each names one field of one tier of ``tiers`` (as given in ``values``, else ``current``'s).

        Raises:
            ValueError: for a tiers value or an option string that cannot be read.
        """
        old = {key: value for key, value in values.items() if key in _OLD_TIER_KEYS}
        if not old:
            return values
        values = {key: value for key, value in values.items() if key not in old}
        tiers = list(current.tiers)
        if "tiers" in values:
            tiers = list(_coerce(values["tiers"], tuple[RoutingTier, ...], "routing.tiers"))
        if len(tiers) != 4:
            raise ValueError("routing.tierN settings need exactly 4 routing.tiers")
        for key, value in old.items():
            i, suffix = _OLD_TIER_KEYS[key]
            if suffix:
                try:
                    options = tuple(parse_option_spec(str(value)).items())
                except ValueError as exc:
                    raise ValueError(f"routing.{key}: {exc}") from None
                tiers[i] = dataclasses.replace(tiers[i], options=options)
            else:
                tiers[i] = dataclasses.replace(tiers[i], pipeline=str(value).strip())
        log.warning("settings routing.%s are an old spelling; write routing.tiers instead (docs/ROUTING.md)",
                    ", routing.".join(sorted(old)))
        return {**values, "tiers": tuple(tiers)}

    def problems(self) -> list[str]:
        out = super().problems()
        if len(self.tiers) != len(self.thresholds) + 1:
            out.append(f"routing.tiers must list {len(self.thresholds) + 1} tiers (one more than "
                       f"routing.thresholds), got {len(self.tiers)}")
        for i, tier in enumerate(self.tiers):
            if not tier.pipeline:
                out.append(f"routing.tiers[{i}] must name a pipeline")
            if tier.pipeline == "routed":
                out.append(f"routing.tiers[{i}] cannot be the routed pipeline itself")
        out += _below(0, ">= 0", "routing", self, "metadata_ttl_s")
        return out


@dataclass(frozen=True)
class ApiSettings:
    """The HTTP service (``lexsearch serve``): limits, budgets, authentication and traces."""

    bind: str = "127.0.0.1:8080"
    """host:port the production server listens on."""
    workers: int = 0
    """Server processes (each loads its own models); 0 = one per core (``cpu.cores``)."""
    threads: int = 4
    """Request threads per server process. They mostly wait (for a search thread, Redis, the client);
    the computing threads of each process are ``cpu.threads``."""
    auth: bool = True
    """Require an API key on /v1/*; false only for local development."""
    default_pipeline: str = ""
    """Pipeline of POST /v1/search when the request names none; '' = routed if registered, else hybrid."""
    job_pipeline: str = ""
    """Pipeline of POST /v1/jobs when the request names none; '' = agentic if registered, else the default."""
    pipeline_modules: tuple[str, ...] = ()
    """Extra modules imported by the API and the workers at start; they may call register_pipeline."""
    sync_budget_s: float = 5.0
    """Time a synchronous search may take; past it the answer is a job to poll (HTTP 202)."""
    sync_threads: int = 0
    """Searches running at once per server process; 0 = twice ``api.threads`` (searches past their
    time budget run out in the background while new requests are served)."""
    max_body_bytes: int = 10_000_000
    """Largest accepted request body (ingest batches included)."""
    max_k: int = 100
    """Largest k a request may ask for."""
    max_documents: int = 1000
    """Most documents in one ingest request."""
    default_rate_per_min: int = 60
    """Rate limit of keys created without --rate."""
    ready_timeout_s: float = 2.0
    """Each /ready check (Redis, engine) gives up after this long."""
    public_url: str = ""
    """Base URL for status links (e.g. https://search.example.org); '' = the URL the client used."""
    traces_url: str = ""
    """OpenSearch/Elasticsearch URL receiving one trace document per search; '' = off."""
    traces_engine: str = "opensearch"
    """opensearch or elasticsearch: the client used for traces_url."""
    traces_index: str = "lexsearch-traces"

    def problems(self) -> list[str]:
        out = []
        host, _, port = self.bind.rpartition(":")
        if not host or not port.isdigit():
            out.append(f"api.bind must look like host:port, got {self.bind!r}")
        out += _below(1, "at least 1", "api", self, "threads", "max_k", "max_documents", "default_rate_per_min")
        out += _below(0, ">= 0 (0 = automatic)", "api", self, "workers", "sync_threads")
        if self.sync_budget_s <= 0 or self.ready_timeout_s <= 0:
            out.append("api.sync_budget_s and api.ready_timeout_s must be positive")
        out += _below(1024, "at least 1024", "api", self, "max_body_bytes")
        for url_name in ("public_url", "traces_url"):
            out += _not_http(f"api.{url_name}", [getattr(self, url_name)])
        return out + _not_either("api.traces_engine", self.traces_engine, ("opensearch", "elasticsearch"))


@dataclass(frozen=True)
class JobsSettings:
    """Asynchronous jobs: the Redis that holds queue, job records and API keys, and the Celery workers."""

    redis_url: str = "redis://127.0.0.1:6379/0"
    """Broker, result backend, job store, API keys and rate limits (needs appendonly, noeviction)."""
    ttl_days: float = 7.0
    """How long a finished job keeps its result; afterwards it reads as expired."""
    tombstone_days: float = 30.0
    """How long after that an expired job still answers 'expired' instead of 404."""
    queue_timeout_s: float = 3600.0
    """A job that has not started after this long expires instead of running."""
    soft_time_limit_s: float = 300.0
    """A job past this is stopped and fails with code time_limit."""
    time_limit_s: float = 360.0
    """Hard limit: the worker process running the job is killed."""
    visibility_timeout_s: float = 7200.0
    """Unacknowledged jobs of a dead worker are redelivered after this; must exceed the longest job."""
    restore_interval_s: float = 10.0
    """How often workers look for jobs of dead workers whose visibility timeout has passed."""
    max_attempts: int = 5
    """A job whose worker died this many times fails instead of running again."""
    max_retries: int = 3
    """Retries of a job step after a transient error (engine unavailable, Redis lost)."""
    retry_backoff_s: float = 2.0
    retry_backoff_max_s: float = 60.0
    worker_concurrency: int = 0
    """Jobs at once per worker; 0 = one per core (``cpu.cores``)."""
    worker_pool: str = "prefork"
    """prefork (time limits enforced), threads or solo."""
    parallel_steps: bool = True
    """Run a round's independent rewrites of step-wise pipelines as parallel Celery tasks."""
    llm_concurrency: int = 0
    """LLM requests in flight across all workers; 0 = llm.max_concurrency."""
    webhook_secret: str = ""
    """HMAC-SHA256 key for webhook signatures; callback_url is refused while it is empty."""
    webhook_timeout_s: float = 10.0
    webhook_max_attempts: int = 8
    webhook_backoff_s: float = 5.0
    webhook_backoff_max_s: float = 900.0
    webhook_allow_private: bool = False
    """Allow callback URLs on loopback/private addresses (tests, single-host setups)."""

    def problems(self) -> list[str]:
        out = []
        if not self.redis_url.startswith(("redis://", "rediss://", "unix://")):
            out.append(f"jobs.redis_url must start with redis://, rediss:// or unix://, got {self.redis_url!r}")
        if self.ttl_days <= 0 or self.tombstone_days < 0:
            out.append("jobs.ttl_days must be positive and jobs.tombstone_days >= 0")
        if not 0 < self.soft_time_limit_s < self.time_limit_s:
            out.append("jobs.soft_time_limit_s must be positive and below jobs.time_limit_s")
        longest = self.time_limit_s + max(self.retry_backoff_max_s, self.webhook_backoff_max_s)
        if self.visibility_timeout_s <= longest:
            out.append("jobs.visibility_timeout_s must exceed jobs.time_limit_s plus the longest retry backoff, "
                       "or running and delayed tasks would be delivered twice")
        if self.restore_interval_s <= 0 or self.queue_timeout_s <= 0:
            out.append("jobs.restore_interval_s and jobs.queue_timeout_s must be positive")
        out += _below(1, "at least 1", "jobs", self, "max_attempts", "webhook_max_attempts")
        if self.max_retries < 0 or self.llm_concurrency < 0 or self.worker_concurrency < 0:
            out.append("jobs.max_retries, jobs.llm_concurrency and jobs.worker_concurrency must be >= 0")
        return out + _not_either("jobs.worker_pool", self.worker_pool, ("prefork", "threads", "solo"))


@dataclass(frozen=True)
class AgentSettings:
    """The agentic pipelines (``agentic``, ``hybrid+rerank``): pool building, rounds and rerankers."""

    reranker: str = "learned"
    """Default reranker, a name of :data:`service.plugins.RERANKERS`: learned, llm, cross-encoder, none, or auto
    (llm when an LLM is configured, else learned)."""
    max_rounds: int = 4
    """Most planner rounds (a request may ask for fewer)."""
    rewrite_depth: int = 30
    """Hits each rewrite retrieves (per retriever) before pruning."""
    prune_to: int = 10
    """Hits of each rewrite that join the pool, chosen by the light reranker."""
    memory_candidates: int = 20
    """Articles voted by similar training questions that join the pool (with a model folder)."""
    classifier_candidates: int = 20
    """The article classifier's best articles that join the pool (with a model folder that has one)."""
    prefilter_depth: int = 30
    """Hits per retriever of the law-filtered pass."""
    workers: int = 0
    """Threads running a round's independent rewrites in-process; 0 = ``cpu.threads`` offline (the
    rewrites compute), ``llm.max_concurrency`` with an LLM (they wait for it)."""
    cross_encoder_path: str = ""
    """Local sentence-transformers CrossEncoder folder for reranker=cross-encoder ('' = not available)."""
    llm_rerank_candidates: int = 20
    """Candidates shown to the LLM reranker (at most 20)."""
    compiled_trees: bool = True
    """Score the learned rerankers with their trees compiled to machine code (lleaves), 5-8x faster than
    LightGBM's own predictor with the same scores; compiled once per model and CPU (13-40 s a model) and kept in
    the model folder."""

    def problems(self) -> list[str]:
        out = _not_one_of("agents.reranker", self.reranker, RERANKERS.choices())
        if not 0 <= self.max_rounds <= 4:
            out.append("agents.max_rounds must be between 0 and 4")
        if not 1 <= self.prune_to <= self.rewrite_depth:
            out.append("agents need 1 <= prune_to <= rewrite_depth")
        if min(self.memory_candidates, self.classifier_candidates, self.workers) < 0 or self.prefilter_depth < 1:
            out.append("agents.memory_candidates, agents.classifier_candidates and agents.workers must be >= 0, "
                       "agents.prefilter_depth >= 1")
        if not 1 <= self.llm_rerank_candidates <= 20:
            out.append("agents.llm_rerank_candidates must be between 1 and 20")
        return out


@dataclass(frozen=True)
class Settings:
    """All settings, frozen. Build with :func:`load_settings`."""

    cpu: CpuSettings = field(default_factory=CpuSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    backend: BackendSettings = field(default_factory=BackendSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    llm: LlmSettings = field(default_factory=LlmSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    api: ApiSettings = field(default_factory=ApiSettings)
    jobs: JobsSettings = field(default_factory=JobsSettings)
    routing: RoutingSettings = field(default_factory=RoutingSettings)
    agents: AgentSettings = field(default_factory=AgentSettings)

    def replace(self, **sections: Mapping[str, Any]) -> Settings:
        """A copy with some fields of some sections replaced, validated again."""
        return _build({name: {**_as_dict(getattr(self, name)), **dict(vals)} for name, vals in sections.items()},
                      base=self)


def parse_flag(value: Any) -> bool | None:
    """A boolean from a bool or a string such as ``1/0``, ``true/false``, ``yes/no``, ``on/off``;
    ``None`` when the value is none of these."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    return None


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
        flag = parse_flag(value)
        if flag is None:
            raise ValueError(f"{where} must be true or false, got {value!r}")
        return flag
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
        inner = typing.get_args(target)[0]
        items = value.split(getattr(inner, "list_separator", ",")) if isinstance(value, str) else list(value)
        return tuple(_coerce(v.strip() if isinstance(v, str) else v, inner, where) for v in items if v != "")
    if dataclasses.is_dataclass(target) and hasattr(target, "parse"):
        if isinstance(value, target):
            return value
        if not isinstance(value, str):
            raise ValueError(f"{where} entries must be strings")
        try:
            return target.parse(value)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
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
        read_old_spellings = getattr(section_type, "read_old_spellings", None)
        if read_old_spellings is not None:
            try:
                values = read_old_spellings(values, current)
            except ValueError as exc:
                errors.append(str(exc))
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
    if not errors:
        errors.extend(_engine_fusion_problems(sections["engine"], sections["backend"], sections["retrieval"]))
    if errors:
        raise ConfigError("invalid settings:\n  - " + "\n  - ".join(errors))
    return Settings(**sections)


def _engine_fusion_problems(engine: EngineSettings, backend: BackendSettings,
                            retrieval: RetrievalSettings) -> list[str]:
    """engine.fusion=engine needs OpenSearch, and a fusion its search pipelines have."""
    if engine.fusion != "engine":
        return []
    if backend.kind != "opensearch":
        return [f"engine.fusion=engine needs backend.kind=opensearch (the neural-search plugin's hybrid query), "
                f"not {backend.kind!r}"]
    if retrieval.fusion == "linear" and retrieval.normalization != "minmax":
        return ["engine.fusion=engine with retrieval.fusion=linear needs retrieval.normalization=minmax "
                "(OpenSearch 2.19 normalises with min_max or l2, not z-scores)"]
    if retrieval.fusion == "rrf" and retrieval.bm25_weight != retrieval.knn_weight:
        return ["engine.fusion=engine with retrieval.fusion=rrf needs equal retrieval.bm25_weight and knn_weight "
                "(OpenSearch 2.19's RRF takes no weights)"]
    return []


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
