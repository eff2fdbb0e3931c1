"""The one place that turns :class:`~service.config.Settings` into objects.

The backend and the embedder come from their plug-in tables; :class:`Runtime` builds (once) and
keeps every collaborator of the pipelines and the pipelines themselves. Nothing else in the
package decides which engine, embedder, model folder or LLM is in use.

Example::

    runtime = Runtime(load_settings())
    runtime.search_pipeline("hybrid").run(SearchRequest("deposit not returned", index="default"))
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from service.agents.factory import AgentFactory
from service.agents.issues import IssueCounter
from service.analysis.chain import forget_cached_terms
from service.backends.base import SearchBackend
from service.config import EmbedderSettings, Settings
from service.cpu import limit_blas_threads, resolve
from service.embeddings.base import Embedder
from service.embeddings.cache import CachedEmbedder
from service.errors import IndexCorrupt, InvalidInput, LexsearchError
from service.fusion_calibration import ensure_fusion_weights, ensure_group_fusion_weights
from service.indexing import SECTIONS_KEY
from service.lazy import built_once
from service.llm.client import LlmClient
from service.models import TrainedModels, forget_recent_predictions, load_models, read_trained_fusion, stored_routing
from service.pipelines.base import IndexRetrieval, Pipeline
from service.pipelines.resources import IndexResources
from service.pipelines.served import ServedPipeline
from service.plugins import BACKENDS, EMBEDDERS, PIPELINES
from service.rerank.base import RerankerParts
from service.rerank.cross_encoder import CrossEncoderReranker
from service.rerank.features import static_columns
from service.retrieval.weights import DEFAULT_WEIGHTS, FusionWeights
from service.routing.laws import ClassifierLawCounter
from service.routing.router import LawCounter

log = logging.getLogger(__name__)


def build_backend(settings: Settings) -> SearchBackend:
    """The configured search backend, from :data:`~service.plugins.BACKENDS` (clients connect lazily)."""
    return BACKENDS.entry(settings.backend.kind).load().from_config(settings)


def build_embedder(settings: Settings, language: str = "") -> CachedEmbedder:
    """The embedder configured for a corpus in ``language`` ('' = the default one), from
    :data:`~service.plugins.EMBEDDERS`, wrapped in the disk cache.

    An automatic (0) ``embedder.threads`` becomes the cores of one process, as in a :class:`Runtime`:
    left at 0, an embedder would run one thread and index at half speed on two cores.
    """
    cfg = resolve(settings).embedder.for_language(language)
    inner: Embedder = EMBEDDERS.entry(cfg.kind).load().from_config(cfg)
    return CachedEmbedder(inner, cfg.cache_dir, batch_size=cfg.batch_size)


PipelineFactory = Callable[["Runtime"], Pipeline]
_EXTRA_PIPELINES: dict[str, PipelineFactory] = {}


def register_pipeline(name: str, factory: PipelineFactory) -> None:
    """Make an extra pipeline available by name, next to those of :data:`~service.plugins.PIPELINES`.

    For modules named in ``api.pipeline_modules`` (see :func:`import_pipeline_modules`).

    Raises:
        ValueError: for a name of the built-in table.
    """
    if name in PIPELINES:
        raise ValueError(f"pipeline {name!r} is built in")
    _EXTRA_PIPELINES[name] = factory


def import_pipeline_modules(settings: Settings) -> None:
    """Import ``api.pipeline_modules`` (they register extra pipelines by name)."""
    for module in settings.api.pipeline_modules:
        importlib.import_module(module)


def pipeline_names() -> list[str]:
    """Every pipeline a request may name: the built-in table, then the registered extras."""
    return [*PIPELINES.names(), *sorted(_EXTRA_PIPELINES)]


INDEX_INFO_TTL_S = 30.0
"""How long a process trusts what it read about an index (its embedder, its fusion weights)."""


class Runtime:
    """Every collaborator of the pipelines, built lazily, once, for one set of settings (one per process).

    The backend, the embedders, the trained models, the LLM client, the agents (rewriters and
    planner), the rerankers' parts, the law counter of routing, and the pipelines by name. Pipelines
    get what they use from here (``Class.from_runtime``) and never build any of it themselves.

    Each index is searched with the configured embedder whose name the index records, and with its
    fusion weights (:meth:`retrieval`); ``embedder`` given here replaces every configured embedder
    (tests, benchmarks).
    """

    def __init__(self, settings: Settings, *, backend: SearchBackend | None = None,
                 embedder: CachedEmbedder | None = None) -> None:
        self.settings = resolve(settings)  # thread counts left automatic: those of one process
        limit_blas_threads()
        self._backend = backend
        self._fixed_embedder = embedder
        self._embedders: dict[EmbedderSettings, CachedEmbedder] = {}
        self._retrieval: dict[str, tuple[float, IndexRetrieval]] = {}
        self._calibrating = threading.Lock()
        self._llm: LlmClient | None = None
        self._agents: AgentFactory | None = None
        self._cross_encoder: CrossEncoderReranker | None = None
        self._pipelines: dict[str, Pipeline] = {}
        self._search_pipelines: dict[str, ServedPipeline] = {}
        self._lock = threading.RLock()

    @property
    def backend(self) -> SearchBackend:
        """The configured search backend."""
        return built_once(self, "_backend", self._lock, lambda: build_backend(self.settings))

    @property
    def embedder(self) -> CachedEmbedder:
        """The default embedder (corpora of several or unknown languages), with the disk cache."""
        return self.embedder_for("")

    def embedder_for(self, language: str) -> CachedEmbedder:
        """The embedder a new index of a corpus in ``language`` gets (``"zh"``; ``"de,fr,it"`` or ``""``
        for the default one)."""
        if self._fixed_embedder is not None:
            return self._fixed_embedder
        cfg = self.settings.embedder.for_language(language)
        with self._lock:
            embedder = self._embedders.get(cfg)
            if embedder is None:
                embedder = self._embedders[cfg] = build_embedder(self.settings, language)
            return embedder

    def index_embedder(self, index: str, language: str | None = None) -> CachedEmbedder:
        """The embedder of ``index``: the configured one whose name the index records (the default one for
        an attached index, which records none). For an index that may not exist yet, pass the corpus
        ``language``: a new index gets :meth:`embedder_for` that language.

        Raises:
            IndexCorrupt: when no configured embedder has the name the index records.
            IndexNotFound: when the index does not exist and no ``language`` was given.
        """
        if language is not None and not self.backend.exists(index):
            return self.embedder_for(language)
        recorded = self.backend.stats(index).embedder
        if not recorded:  # an attached index that lexsearch did not build
            return self.embedder_for("")
        candidates = ([("given", self._fixed_embedder)] if self._fixed_embedder is not None else
                      [(lang, self.embedder_for("" if lang == "default" else lang))
                       for lang, _ in self.settings.embedder.choices()])
        for _, embedder in candidates:
            if embedder.name == recorded:
                return embedder
        configured = ", ".join(f"{e.name} ({lang})" for lang, e in candidates)
        raise IndexCorrupt(f"index {index!r} was built with embedder {recorded}, but the settings configure "
                           f"{configured}; rebuild the index (`lexsearch index`) or configure {recorded} "
                           "(docs/EMBEDDERS.md)")

    def embedder_or_none(self, index: str) -> Embedder | None:
        """The embedder of ``index``, or ``None`` when the settings do not configure it (a BM25 search
        needs none; the answer's paragraphs are then compared by words)."""
        try:
            return self.retrieval(index).embedder
        except IndexCorrupt:
            return None

    def retrieval(self, index: str) -> IndexRetrieval:
        """The embedder and the fusion weights of ``index`` (what the index records is read again after
        :data:`INDEX_INFO_TTL_S` seconds).

        Raises:
            IndexCorrupt, IndexNotFound: see :meth:`index_embedder`.
        """
        now = time.monotonic()
        with self._lock:
            cached = self._retrieval.get(index)
        if cached is not None and now - cached[0] < INDEX_INFO_TTL_S:
            return cached[1]
        chosen = self._chosen_fusion_weights()  # settings or model: they hold for every search of the index
        found = IndexRetrieval(self.index_embedder(index),
                               chosen if chosen is not None else self._label_free_weights(index),
                               bool(self.backend.metadata(index).get(SECTIONS_KEY)),
                               {} if chosen is not None else self._group_fusion_weights(index))
        with self._lock:
            self._retrieval[index] = (now, found)
        return found

    def fusion_weights(self, index: str) -> FusionWeights:
        """The fusion weights of ``index``, by the precedence of :mod:`service.retrieval.weights`: the
        settings', the model folder's, the index's own, else 0.5/0.5."""
        chosen = self._chosen_fusion_weights()
        return chosen if chosen is not None else self._label_free_weights(index)

    def _label_free_weights(self, index: str) -> FusionWeights:
        """The index's own label-free weights, calibrated first when it has none; 0.5/0.5 when it cannot be."""
        with self._calibrating:  # an index without weights is calibrated once, by the first search
            try:
                return ensure_fusion_weights(self.backend, self.index_embedder(index), index, self.settings.retrieval)
            except LexsearchError as exc:  # too small to calibrate, or the engine refuses metadata
                log.warning("hybrid search on %s fuses 0.5/0.5: %s", index, exc)
                return DEFAULT_WEIGHTS

    def _group_fusion_weights(self, index: str) -> dict[str, FusionWeights]:
        """The label-free weights of each group of an index of statutes and decisions (``{}`` for an index of
        one group)."""
        with self._calibrating:
            try:
                return ensure_group_fusion_weights(self.backend, self.index_embedder(index), index,
                                                   self.settings.retrieval)
            except LexsearchError as exc:  # the engine refuses metadata: every group fuses as the index
                log.warning("the groups of %s fuse with the index's weights: %s", index, exc)
                return {}

    def _chosen_fusion_weights(self) -> FusionWeights | None:
        """The weights the settings fix, else those the model folder holds for the settings' fusion."""
        cfg = self.settings.retrieval
        fixed = FusionWeights.from_settings(cfg)
        if fixed is not None:
            return fixed
        model_dir = self.settings.index.model_dir
        trained = read_trained_fusion(model_dir) if model_dir else None
        return trained if trained is not None and trained.suits(cfg) else None

    def models(self) -> TrainedModels | None:
        """The trained models of ``index.model_dir`` (``None`` without one), read once per process and
        again when the folder's manifest changes. The pipelines check that they were trained with the
        embedder of the index searched.

        Raises:
            ConfigError: for an unreadable folder.
        """
        return load_models(self.settings.index.model_dir, compile_trees=self.settings.agents.compiled_trees)

    def llm_client(self) -> LlmClient | None:
        """The one LLM client of the process (``None`` when no LLM is configured)."""
        if not self.settings.llm.enabled:
            return None
        return built_once(self, "_llm", self._lock, lambda: LlmClient(self.settings.llm))

    @property
    def agents(self) -> AgentFactory:
        """The rewriters and the planner (LLM ones when an LLM is configured)."""
        return built_once(self, "_agents", self._lock, lambda: AgentFactory(self.llm_client()))

    def cross_encoder(self) -> CrossEncoderReranker:
        """The cross-encoder of ``agents.cross_encoder_path`` (its model loads on first use)."""
        path = self.settings.agents.cross_encoder_path
        return built_once(self, "_cross_encoder", self._lock, lambda: CrossEncoderReranker(path))

    def reranker_parts(self) -> RerankerParts:
        """What the rerankers of :data:`~service.plugins.RERANKERS` are built from, but the trained model
        (each pipeline adds its own)."""
        cross_encoder = self.cross_encoder if self.settings.agents.cross_encoder_path else None
        return RerankerParts(llm=self.llm_client(), llm_candidates=self.settings.agents.llm_rerank_candidates,
                             cross_encoder=cross_encoder)

    def law_counter(self) -> LawCounter | None:
        """Routing's count of the laws a question touches, by the trained law classifier (``None``
        without a model folder)."""
        return ClassifierLawCounter(self.models) if self.settings.index.model_dir else None

    def issue_counter(self) -> IssueCounter:
        """Routing's count of the issues a question raises (the agentic segmentation, with the trained
        law classifier as its topic model when there is a model folder, and the index's languages for
        questions without one)."""
        return IssueCounter(self.models,
                            lambda index: IndexResources.get(self.backend, index, self.models()).languages)

    def model_routing(self) -> dict[str, Any] | None:
        """The routing calibration that ``lexsearch train`` stored with ``index.model_dir`` (``None``
        without a folder or an entry); it ranks above the index's (see docs/ROUTING.md)."""
        return stored_routing(self.settings.index.model_dir)

    def preload(self, index: str) -> None:
        """Load now what the first search of ``index`` would load: its query embedder, the trained
        models and the index's shared resources (corpus graph, the reranker's per-document columns).

        Raises:
            LexsearchError: when the index or the model folder cannot be read.
        """
        self.retrieval(index).embedder.embed_queries(["warm-up"])
        models = self.models()
        resources = IndexResources.get(self.backend, index, models)
        static_columns(resources.graph, models.prior if models is not None else None)

    def forget_query_caches(self) -> None:
        """Forget cached query vectors, question terms and law predictions, so the next search pays
        for its own (benchmarks and calibration time each pipeline from cold query caches)."""
        with self._lock:
            embedders = [self._fixed_embedder] if self._fixed_embedder is not None else list(self._embedders.values())
        for embedder in embedders:
            embedder.clear_query_cache()
        forget_cached_terms()
        forget_recent_predictions()

    def pipeline(self, name: str) -> Pipeline:
        """The pipeline called ``name`` (built once per runtime).

        Raises:
            InvalidInput: for an unknown name (code ``unknown_pipeline``; the message lists the known ones).
        """
        with self._lock:
            pipe = self._pipelines.get(name)
            if pipe is None:
                pipe = self._build_pipeline(name)
                self._pipelines[name] = pipe
            return pipe

    def search_pipeline(self, name: str) -> ServedPipeline:
        """The pipeline called ``name`` as the entry points serve it (:mod:`service.pipelines.served`): an
        index of statutes and decisions is searched one group at a time and the rankings merged, and a
        request deeper than ``retrieval.depth`` keeps the first hits of one that is not.
        :meth:`pipeline` is the same pipeline without those steps, for pipelines built of others and training.

        Raises:
            InvalidInput: for an unknown name (code ``unknown_pipeline``).
        """
        with self._lock:
            pipe = self._search_pipelines.get(name)
            if pipe is None:
                pipe = ServedPipeline(self.pipeline(name), self.backend,
                                      balance_kinds=self.settings.retrieval.balance_kinds,
                                      depth=self.settings.retrieval.depth)
                self._search_pipelines[name] = pipe
            return pipe

    def _build_pipeline(self, name: str) -> Pipeline:
        extra = _EXTRA_PIPELINES.get(name)
        if extra is not None:
            return extra(self)
        if name not in PIPELINES:
            raise InvalidInput(f"unknown pipeline {name!r}; use one of: {', '.join(pipeline_names())}",
                               code="unknown_pipeline")
        plugin = PIPELINES[name]
        return plugin.load().from_runtime(self, name=name, **plugin.options)
