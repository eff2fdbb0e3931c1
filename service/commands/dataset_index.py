"""Building (once) and finding the index of a dataset folder, for eval and train."""

from __future__ import annotations

from service.commands.common import info, progress_enabled
from service.corpus.datasets import Dataset, LoadReport, load_corpus
from service.errors import LexsearchError
from service.indexing import index_documents, index_fingerprint, rebuild_embedded
from service.pipelines.build import Runtime


def dataset_index_name(runtime: Runtime, dataset: Dataset) -> str:
    """The cache name of the dataset's index: corpus content hash plus configuration."""
    fingerprint = index_fingerprint(dataset.content_hash(), runtime.embedder.name)
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in dataset.path.resolve().name.lower())
    return f"eval-{safe}-{fingerprint}"


def ensure_dataset_index(runtime: Runtime, dataset: Dataset) -> str:
    """Build the dataset's index when it is missing, and return its name."""
    name = dataset_index_name(runtime, dataset)
    backend = runtime.backend
    if backend.exists(name):
        return name
    report = LoadReport()
    docs = load_corpus(dataset, report)
    info(f"building index {name} from {dataset.path} ({report.summary()})")
    if runtime.settings.backend.kind == "embedded":
        from pathlib import Path

        result = rebuild_embedded(Path(runtime.settings.index.root), name, runtime.embedder, docs,
                                  language=dataset.language, hnsw_min_docs=runtime.settings.backend.hnsw_min_docs,
                                  progress=progress_enabled())
    else:
        result = index_documents(backend, runtime.embedder, name, docs, language=dataset.language,
                                 progress=progress_enabled())
    if result.failed:
        raise LexsearchError(f"{len(result.failed)} documents failed to index, e.g. "
                             f"{next(iter(result.failed.items()))}")
    return name
