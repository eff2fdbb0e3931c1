"""Building (once) and finding the index of a dataset folder, for eval, train, calibrate and the benchmarks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from service.backends.embedded import FileLock
from service.console import info, progress_enabled
from service.corpus.datasets import Dataset, LoadReport, load_corpus, safe_file_part
from service.errors import LexsearchError
from service.fusion_calibration import ensure_fusion_quietly
from service.indexing import index_fingerprint, rebuild_index
from service.pipelines.build import Runtime
from service.retrieval.weights import FUSION_KEY


def dataset_index_name(runtime: Runtime, dataset: Dataset) -> str:
    """The cache name of the dataset's index: corpus content hash plus configuration."""
    extra: dict[str, object] = {"hnsw_min_docs": runtime.settings.backend.hnsw_min_docs}
    if dataset.work_rule is not None:  # versions grouped into works: not the index of the same corpus without
        extra["works"] = list(dataset.work_rule.fields)
    fingerprint = index_fingerprint(dataset.content_hash(), runtime.embedder_for(dataset.language).name, extra)
    # Named after the folder that really holds the corpus, so derived split folders (symlinked
    # corpus) share the index of the dataset they came from.
    home = dataset.corpus_files[0].resolve().parent.name.lower()
    return f"eval-{safe_file_part(home)}-{fingerprint}"


def ensure_dataset_index(runtime: Runtime, dataset: Dataset) -> str:
    """Build the dataset's index when it is missing, and return its name."""
    name = dataset_index_name(runtime, dataset)
    backend = runtime.backend
    if not backend.exists(name):
        with _build_lock(runtime, name):
            if not backend.exists(name):  # another process may have built it while we waited
                _build(runtime, dataset, name)
    meta = backend.metadata(name)
    # Label-free QSI calibration for routing, once per index (see service/routing/calibration.py).
    if "qsi" not in meta:
        from service.routing.calibration import ensure_qsi_quietly

        info(ensure_qsi_quietly(backend, name, language=dataset.language))
    # Label-free fusion weights, once per index (see service/fusion_calibration.py).
    if FUSION_KEY not in meta:
        info(ensure_fusion_quietly(backend, runtime.index_embedder(name), name, runtime.settings.retrieval,
                                   language=dataset.language))
    return name


@contextmanager
def _build_lock(runtime: Runtime, name: str) -> Iterator[None]:
    """Serialise builds of one dataset index across processes (embedded engine: a lock file)."""
    if runtime.settings.backend.kind != "embedded":
        yield
        return
    root = Path(runtime.settings.index.root)
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(root / f".{name}.lock"):
        yield


def _build(runtime: Runtime, dataset: Dataset, name: str) -> None:
    backend = runtime.backend
    report = LoadReport()
    docs = load_corpus(dataset, report)
    info(f"building index {name} from {dataset.path} ({report.summary()})")
    result = rebuild_index(backend, runtime.settings, name, runtime.embedder_for(dataset.language), docs,
                           language=dataset.language, progress=progress_enabled())
    if result.failed:
        raise LexsearchError(f"{len(result.failed)} documents failed to index, e.g. "
                             f"{next(iter(result.failed.items()))}")
