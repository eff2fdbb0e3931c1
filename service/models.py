"""Trained offline models: one folder with a manifest, written by ``lexsearch train``, read by every pipeline.

A model folder holds::

    manifest.json          format version, what it was trained on, the embedder, the components and files
    law_classifier.npz     question → law/section probabilities (service.agents.prefilter.LawClassifier)
    law_mixer.json         weights of classifier, retrieval and mention evidence (service.agents.law_evidence)
    memory.npz             training questions and their gold articles (service.rerank.priors.QuestionMemory)
    article_classifier.npz question → score of each training article (service.rerank.article_classifier)
    prior.json             gold frequencies of articles (ArticlePrior)
    term_mapping.json.gz   question term → legal term table (terminology agent)
    adapter.npy            query-embedding adapter (terminology agent)
    vocabulary.json.gz     document frequencies of the corpus terms (repair agent, PRF idf, LLM guard)
    planner.json           the planner policy
    cocitation.json        articles the training answers cite together (service.rerank.cocitation.CoCitation)
    citation_counter.json  expected number of cited articles per question (service.rerank.citation_count)
    reranker_agentic.txt   LightGBM model over agentic pools
    reranker_hybrid.txt    LightGBM model over hybrid pools (the ``hybrid+rerank`` pipeline)

Every component is optional; pipelines use what is there and say in their trace what was missing.
Everything is keyed by corpus document ids, never by index names, so a folder trained on one
dataset folder serves any other that shares the corpus.

Example::

    models = load_models("models/stard")       # cached per process
    models.law_probabilities("公司辞退我不给补偿怎么办")[:2]
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from service.agents.law_evidence import LawMixer
from service.agents.planner import PlannerPolicy
from service.agents.prefilter import LawClassifier
from service.agents.rewriters.terminology import QueryAdapter, TermMapping
from service.agents.vocabulary import Vocabulary
from service.analysis.chain import analyzer_for
from service.analysis.language import detect_language
from service.errors import ConfigError
from service.gzjson import read_gzip_json, write_gzip_json
from service.rerank.article_classifier import ArticleClassifier
from service.rerank.citation_count import CitationCounter
from service.rerank.cocitation import CoCitation
from service.rerank.features import FEATURE_NAMES
from service.rerank.learned import LearnedReranker
from service.rerank.priors import ArticlePrior, QuestionMemory
from service.retrieval.weights import FUSION_KEY, FusionWeights

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
RESERVE_KEY = "issue_reserve"
ROUTING_ENTRY = "routing"
"""Manifest entry with the routing calibration (thresholds, gamma, cut; see docs/ROUTING.md)."""
_FILES = {
    "law_classifier": "law_classifier.npz",
    "law_mixer": "law_mixer.json",
    "memory": "memory.npz",
    "article_classifier": "article_classifier.npz",
    "prior": "prior.json",
    "term_mapping": "term_mapping.json.gz",
    "adapter": "adapter.npy",
    "vocabulary": "vocabulary.json.gz",
    "planner": "planner.json",
    "cocitation": "cocitation.json",
    "citation_counter": "citation_counter.json",
    "reranker_agentic": "reranker_agentic.txt",
    "reranker_hybrid": "reranker_hybrid.txt",
}


@dataclass
class TrainedModels:
    """The learned parts of the offline agents and rerankers (each ``None`` when not trained).

    Attributes:
        language: the training questions' language ('' = mixed; detect per question).
        embedder: name of the embedder the vector-based parts were trained with.
        fusion: the hybrid fusion weights fitted on the training questions (manifest entry ``fusion``).
        issue_reserve: places in the first ten each issue's best candidates are sure of, chosen by the
            cross-validation (manifest entry ``issue_reserve``; ``None``: the default).
        info: the rest of the manifest (dataset, split, sizes, cross-validation scores).
    """

    language: str = ""
    embedder: str = ""
    law_classifier: LawClassifier | None = None
    law_mixer: LawMixer | None = None
    memory: QuestionMemory | None = None
    article_classifier: ArticleClassifier | None = None
    prior: ArticlePrior | None = None
    term_mapping: TermMapping | None = None
    adapter: QueryAdapter | None = None
    vocabulary: Vocabulary | None = None
    planner: PlannerPolicy | None = None
    cocitation: CoCitation | None = None
    citation_counter: CitationCounter | None = None
    reranker_agentic: LearnedReranker | None = None
    reranker_hybrid: LearnedReranker | None = None
    fusion: FusionWeights | None = None
    issue_reserve: int | None = None
    info: dict[str, Any] = field(default_factory=dict)
    path: str = ""

    def components(self) -> list[str]:
        """Names of the components present."""
        return [name for name in _FILES if getattr(self, name) is not None]

    def terms(self, question: str, lang: str = "") -> list[str]:
        """The question's analysed terms, in the models' language unless ``lang`` says otherwise."""
        return analyzer_for(lang or self.language or detect_language(question)).tokens(question)

    def law_probabilities(self, question: str, lang: str = "", vector: np.ndarray | None = None
                          ) -> list[tuple[str, float]]:
        """Laws the question concerns, with probabilities, most likely first ([] without a classifier).

        ``vector`` (the question's embedding) sharpens the prediction; without it only the terms count.
        """
        if self.law_classifier is None:
            return []
        return self.law_classifier.law_probabilities(self.terms(question, lang), vector)

    def check_embedder(self, embedder_name: str) -> None:
        """Raise when vector-based parts were trained with another embedder.

        Raises:
            ConfigError: naming both embedders.
        """
        uses_vectors = self.adapter is not None or (self.memory is not None and self.memory.vectors is not None) or (
            self.law_classifier is not None and self.law_classifier.vector_dim > 0)
        if uses_vectors and self.embedder and self.embedder != embedder_name:
            raise ConfigError(f"the model folder {self.path or '?'} was trained with embedder {self.embedder}, "
                              f"but the settings use {embedder_name}; retrain it or change the embedder")

    def save(self, path: str | Path, *, info: dict[str, Any] | None = None) -> Path:
        """Write the folder (created when missing; files of absent components are removed)."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        written: dict[str, str] = {}
        for name, filename in _FILES.items():
            target = folder / filename
            component = getattr(self, name)
            if component is None:
                target.unlink(missing_ok=True)
                continue
            _write_component(name, component, target)
            written[name] = filename
        manifest = {
            "format_version": FORMAT_VERSION,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "language": self.language,
            "embedder": self.embedder,
            "feature_names": list(FEATURE_NAMES),
            "components": written,
            **({FUSION_KEY: self.fusion.to_dict()} if self.fusion is not None else {}),
            **({RESERVE_KEY: self.issue_reserve} if self.issue_reserve is not None else {}),
            **(info if info is not None else self.info),
        }
        (folder / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        return folder


def _write_component(name: str, component: Any, target: Path) -> None:
    if name in ("law_classifier", "memory", "article_classifier"):
        with open(target, "wb") as fh:
            np.savez_compressed(fh, **component.to_arrays())
    elif name == "adapter":
        np.save(target, component.matrix.astype(np.float16))  # half the size; the map is smooth
    elif name == "vocabulary":
        component.save(target)
    elif name == "term_mapping":
        write_gzip_json(target, component.to_json())
    elif name in ("prior", "planner", "law_mixer", "cocitation", "citation_counter"):
        target.write_text(json.dumps(component.to_json(), ensure_ascii=False), encoding="utf-8")
    else:
        component.save(target)


def _read_component(name: str, path: Path, feature_names: Sequence[str], compile_trees: bool) -> Any:
    if name == "law_classifier":
        with np.load(path, allow_pickle=False) as arrays:
            return LawClassifier.from_arrays(dict(arrays))
    if name == "memory":
        with np.load(path, allow_pickle=False) as arrays:
            return QuestionMemory.from_arrays(dict(arrays))
    if name == "article_classifier":
        with np.load(path, allow_pickle=False) as arrays:
            return ArticleClassifier.from_arrays(dict(arrays))
    if name == "adapter":
        return QueryAdapter(np.load(path, allow_pickle=False).astype(np.float32))
    if name == "vocabulary":
        return Vocabulary.load(path)
    if name == "term_mapping":
        return TermMapping.from_json(read_gzip_json(path))
    if name == "prior":
        return ArticlePrior.from_json(json.loads(path.read_text(encoding="utf-8")))
    if name == "planner":
        return PlannerPolicy.from_json(json.loads(path.read_text(encoding="utf-8")))
    if name == "law_mixer":
        return LawMixer.from_json(json.loads(path.read_text(encoding="utf-8")))
    if name == "cocitation":
        return CoCitation.from_json(json.loads(path.read_text(encoding="utf-8")))
    if name == "citation_counter":
        return CitationCounter.from_json(json.loads(path.read_text(encoding="utf-8")))
    label = "learned" if name == "reranker_agentic" else "learned_hybrid"
    return LearnedReranker.load(path, feature_names, label=label, compile_trees=compile_trees)


RERANKERS = ("reranker_agentic", "reranker_hybrid")
"""The components that are tree models (compiled to machine code when they are read)."""


def reranker_files(path: str | Path) -> list[Path]:
    """The tree-model files of the model folder ``path`` (those its manifest lists).

    Raises:
        ConfigError: when the manifest is missing or unreadable.
    """
    components = read_manifest(path).get("components") or {}
    return [Path(path) / components[name] for name in RERANKERS if name in components]


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of the model folder ``path``.

    Raises:
        ConfigError: when it is missing or unreadable.
    """
    manifest_path = Path(path) / MANIFEST
    if not manifest_path.is_file():
        raise ConfigError(f"no trained models at {path} ({MANIFEST} missing); create them with `lexsearch train`")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: not JSON, or not UTF-8
        raise ConfigError(f"{manifest_path} is unreadable: {exc}") from None
    if not isinstance(manifest, dict):
        raise ConfigError(f"{manifest_path} is not a JSON object")
    return manifest


def update_manifest(path: str | Path, **entries: Any) -> None:
    """Set top-level ``entries`` of the folder's manifest, replacing the file in one step (a reader
    never sees half of it).

    Raises:
        ConfigError: when the manifest is missing or unreadable.
    """
    manifest = {**read_manifest(path), **entries}
    target = Path(path) / MANIFEST
    partial = target.with_name(MANIFEST + ".partial")
    partial.write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    partial.replace(target)


def stored_routing(model_dir: str | Path | None) -> dict[str, Any] | None:
    """The routing calibration stored with the models (manifest entry ``routing``, written by
    ``lexsearch train``); ``None`` without a folder or an entry. An unreadable folder is logged and
    reads as ``None``: the pipelines that load the models report it."""
    if not model_dir:
        return None
    try:
        entry = read_manifest(model_dir).get(ROUTING_ENTRY)
    except ConfigError as exc:
        log.warning("%s", exc)
        return None
    return entry if isinstance(entry, dict) else None


def read_models(path: str | Path, *, compile_trees: bool = True) -> TrainedModels:
    """Read a model folder (uncached; see :func:`load_models`). ``compile_trees``: score the rerankers
    with compiled trees (:mod:`service.rerank.compiled`; compiled on the first read on a CPU).

    Raises:
        ConfigError: when the folder, its manifest or a listed file is missing or unreadable.
    """
    folder = Path(path)
    manifest = read_manifest(folder)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ConfigError(f"{folder} holds models of format {manifest.get('format_version')!r}; this lexsearch reads "
                          f"format {FORMAT_VERSION}. Retrain with `lexsearch train`.")
    models = TrainedModels(language=manifest.get("language", ""), embedder=manifest.get("embedder", ""),
                           path=str(folder))
    feature_names = manifest.get("feature_names") or list(FEATURE_NAMES)
    for name, filename in (manifest.get("components") or {}).items():
        if name not in _FILES:
            log.warning("%s: ignoring unknown component %r", folder, name)
            continue
        try:
            setattr(models, name, _read_component(name, folder / filename, feature_names, compile_trees))
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{folder}: cannot read {filename} ({type(exc).__name__}: {exc}); retrain") from None
    models.fusion = FusionWeights.from_entry(manifest.get(FUSION_KEY), "model")
    reserve = manifest.get(RESERVE_KEY)
    models.issue_reserve = int(reserve) if isinstance(reserve, int) and reserve >= 0 else None
    models.info = {k: v for k, v in manifest.items()
                   if k not in ("components", "feature_names", "format_version", "language", "embedder", FUSION_KEY,
                                RESERVE_KEY)}
    return models


def read_trained_fusion(model_dir: str | Path) -> FusionWeights | None:
    """The fusion weights of a model folder from its manifest alone (the hybrid pipeline needs nothing
    else of it); ``None`` when the folder or its weights are missing."""
    try:
        manifest = read_manifest(model_dir)
    except ConfigError:
        return None
    return FusionWeights.from_entry(manifest.get(FUSION_KEY), "model")


_CACHE: dict[tuple[str, bool], tuple[float, TrainedModels]] = {}
_CACHE_LOCK = threading.Lock()


def load_models(model_dir: str | Path | None, *, compile_trees: bool = True) -> TrainedModels | None:
    """The models in ``model_dir`` (cached per process until its manifest changes); ``None`` for ''.
    ``compile_trees`` as in :func:`read_models` (the setting ``agents.compiled_trees``).

    Raises:
        ConfigError: when the folder is set but holds no readable models.
    """
    if not model_dir:
        return None
    folder = Path(model_dir).resolve()
    try:
        mtime = (folder / MANIFEST).stat().st_mtime
    except FileNotFoundError:
        raise ConfigError(f"no trained models at {model_dir} ({MANIFEST} missing); "
                          "create them with `lexsearch train`") from None
    key = (str(folder), compile_trees)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        models = read_models(folder, compile_trees=compile_trees)
        _CACHE[key] = (mtime, models)
        return models


def forget_models(model_dir: str | Path) -> None:
    """Drop a folder's models from the per-process cache of :func:`load_models` (a temporary folder
    that is about to go away)."""
    folder = str(Path(model_dir).resolve())
    with _CACHE_LOCK:
        for key in [key for key in _CACHE if key[0] == folder]:
            del _CACHE[key]


def forget_recent_predictions() -> None:
    """Drop the law classifiers' recent predictions in every loaded model folder (see
    :meth:`LawClassifier.forget_recent`)."""
    with _CACHE_LOCK:
        loaded = [models for _, models in _CACHE.values()]
    for models in loaded:
        if models.law_classifier is not None:
            models.law_classifier.forget_recent()
