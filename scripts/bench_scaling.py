#!/usr/bin/env python3
"""Scaling figures: index size, indexing throughput and query p50/p95, embedded engine vs a cluster, by corpus size.

    python scripts/bench_scaling.py --data data/stard-split --size 200000 \
        --cluster http://127.0.0.1:9250,http://127.0.0.1:9251,http://127.0.0.1:9252 --out runs/scaling-200k.json

One size per run (the runs take long; docs/SCALING.md collects them). For the size asked it
1. makes the corpus: the dataset's real documents with their real (cached) embeddings, then, up to
   ``--size``, synthetic documents (:func:`synthetic`): each one mixes the clauses of a real article
   with a clause of a second one, and its vector is the normalised mix of the two articles' vectors
   plus Gaussian noise, so term statistics and vector neighbourhoods look like the real corpus;
2. builds the embedded index (tantivy + faiss HNSW + SQLite, the ``rebuild_embedded`` way) and the
   engine index on the cluster (a new version, bulk load, publish), in chunks generated on the fly,
   timed, and measures their size on disk (the folder; the engine's ``store.size`` over all copies);
3. runs the dataset's queries on both, interleaved: BM25, kNN and hybrid (one probe + client-side
   fusion), depth ``retrieval.depth``, and prints p50/p95.

Engine settings come from the usual settings (``LEXSEARCH_ENGINE_SHARDS``, ``..._REPLICAS``, ...).
``--skip-embedded`` / ``--skip-engine`` leave one side out; ``--reuse`` queries existing indices.
Run it niced: the builds are CPU-bound and the machine is shared.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.backends._requests import CorpusKind  # noqa: E402
from service.backends.base import IndexReport, SearchBackend  # noqa: E402
from service.backends.elasticsearch import ElasticsearchBackend  # noqa: E402
from service.backends.embedded import EmbeddedBackend  # noqa: E402
from service.backends.engine.backend import EngineBackend  # noqa: E402
from service.backends.opensearch import OpenSearchBackend  # noqa: E402
from service.config import Settings, load_settings  # noqa: E402
from service.corpus.datasets import Dataset, load_corpus  # noqa: E402
from service.corpus.model import LegalDoc  # noqa: E402
from service.corpus.views import embedding_text  # noqa: E402
from service.evaluation import metrics  # noqa: E402
from service.indexing import with_citations  # noqa: E402
from service.pipelines.build import build_embedder  # noqa: E402
from service.pipelines.hybrid import HybridPipeline, Probe  # noqa: E402

CHUNK = 4096
NOISE = 0.05
"""Standard deviation of the Gaussian noise added to each coordinate of a synthetic vector (before normalising)."""
MODES = ("bm25", "knn", "hybrid")


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def synthetic(real: list[LegalDoc], vectors: np.ndarray, count: int,
              seed: int) -> Iterator[tuple[LegalDoc, np.ndarray]]:
    """``count`` synthetic documents made from the real ones (deterministic for a seed).

    Document i takes article a (i-th in a shuffled order) and a random article b: its text is a's
    clauses (split at ，and 。) in a shuffled order followed by b's first clause; citation, law and
    kind are a's; its vector is ``normalise(0.7 v_a + 0.3 v_b + N(0, NOISE^2))``.
    """
    rng = np.random.default_rng(seed)
    n = len(real)
    order = rng.permutation(n)
    for i in range(count):
        a = real[order[i % n]]
        b_index = int(rng.integers(n))
        b = real[b_index]
        clauses = [c for c in a.text.replace("。", "，").split("，") if c]
        rng.shuffle(clauses)
        extra = next((c for c in b.text.replace("。", "，").split("，") if c), "")
        text = "，".join([*clauses, extra]) + "。"
        doc = LegalDoc.from_dict({**a.to_dict(), "id": f"syn-{i}", "text": text, "cites": []})
        mixed = 0.7 * vectors[order[i % n]] + 0.3 * vectors[b_index] + rng.normal(0, NOISE, vectors.shape[1])
        yield doc, (mixed / np.linalg.norm(mixed)).astype(np.float32)


def corpus(real: list[LegalDoc], vectors: np.ndarray, size: int,
           seed: int) -> Iterator[tuple[list[LegalDoc], np.ndarray]]:
    """The scaling corpus in chunks: the real documents first, then synthetic ones up to ``size``."""
    take = min(size, len(real))
    for start in range(0, take, CHUNK):
        stop = min(start + CHUNK, take)
        yield real[start:stop], vectors[start:stop]
    pending: list[tuple[LegalDoc, np.ndarray]] = []
    for pair in synthetic(real, vectors, size - take, seed):
        pending.append(pair)
        if len(pending) == CHUNK:
            yield [d for d, _ in pending], np.stack([v for _, v in pending])
            pending = []
    if pending:
        yield [d for d, _ in pending], np.stack([v for _, v in pending])


def folder_bytes(path: Path) -> int:
    return int(subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout.split()[0])


def build_embedded(root: Path, name: str, chunks: Iterator[tuple[list[LegalDoc], np.ndarray]], size: int,
                   settings: Settings, embedder_name: str, dim: int, language: str) -> dict[str, float]:
    if root.exists():
        shutil.rmtree(root)
    backend = EmbeddedBackend(root, hnsw_min_docs=settings.backend.hnsw_min_docs)
    backend.ensure_index(name, language=language, dim=dim, embedder=embedder_name)
    report = IndexReport()
    start = time.perf_counter()
    with tqdm(total=size, desc="embedded", unit="doc") as bar, backend.bulk(name) as write:
        for docs, vectors in chunks:
            report.merge(write(docs, vectors))
            bar.update(len(docs))
    seconds = time.perf_counter() - start
    assert report.ok and report.indexed == size, (report.indexed, list(report.failed.items())[:3])
    return {"documents": size, "seconds": seconds, "docs_per_s": size / seconds,
            "bytes": folder_bytes(root / name), "load": load_avg()}


def build_engine(backend: EngineBackend, name: str, chunks: Iterator[tuple[list[LegalDoc], np.ndarray]], size: int,
                 embedder_name: str, dim: int, language: str) -> dict[str, float | str]:
    start = time.perf_counter()
    physical = backend.create_version(name, language=language, dim=dim, embedder=embedder_name,
                                      kind=CorpusKind.STATUTES)
    report = IndexReport()
    with tqdm(total=size, desc=backend.kind, unit="doc") as bar, backend.bulk(physical) as write:
        for docs, vectors in chunks:
            report.merge(write(docs, vectors))
            bar.update(len(docs))
    loaded = time.perf_counter()
    assert report.ok and report.indexed == size, (report.indexed, list(report.failed.items())[:3])
    backend.publish(name, physical)
    seconds = time.perf_counter() - start
    assert backend.count(name) == size
    return {"documents": size, "seconds": seconds, "docs_per_s": size / seconds, "bulk_seconds": loaded - start,
            "publish_seconds": seconds - (loaded - start), **engine_sizes(backend, name), "load": load_avg()}


def engine_sizes(backend: EngineBackend, name: str) -> dict[str, int]:
    """Bytes on disk of the index behind ``name``: all copies, and primaries only."""
    physical = backend.alias_targets(name)[0]
    stats = backend.api.client.indices.stats(index=physical, metric="store")
    stats = getattr(stats, "body", stats)["indices"][physical]
    return {"bytes": int(stats["total"]["store"]["size_in_bytes"]),
            "primary_bytes": int(stats["primaries"]["store"]["size_in_bytes"])}


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, (time.perf_counter() - start) * 1000.0


def query_latency(backends: dict[str, SearchBackend], name: str, queries, vectors: np.ndarray, fuser: HybridPipeline,
                  depth: int, warmup: int) -> dict[str, dict[str, dict[str, float]]]:
    latency: dict[str, dict[str, list[float]]] = {b: {m: [] for m in MODES} for b in backends}
    for i, (query, vector) in enumerate(zip(queries, vectors, strict=True)):
        for mode in MODES:
            for label, backend in backends.items():
                if mode == "bm25":
                    _, ms = timed(backend.bm25, name, query.text, k=depth, lang=query.lang)
                elif mode == "knn":
                    _, ms = timed(backend.knn, name, vector, k=depth)
                else:
                    (bm25_hits, knn_hits), ms = timed(backend.probe, name, query.text, vector, k=depth,
                                                      lang=query.lang)
                    ms += timed(fuser.fuse, Probe(bm25_hits, knn_hits, vector))[1]
                if i >= warmup:
                    latency[label][mode].append(ms)
    return {label: {mode: {"p50": metrics.percentile(v, 50), "p95": metrics.percentile(v, 95)}
                    for mode, v in modes.items()} for label, modes in latency.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/stard-split")
    parser.add_argument("--split", default="dev", help="the queries to time")
    parser.add_argument("--size", type=int, required=True, help="documents in the corpus")
    parser.add_argument("--cluster", default="", help="engine node URLs, comma-separated ('' = embedded only)")
    parser.add_argument("--engine", choices=("opensearch", "elasticsearch"), default="opensearch")
    parser.add_argument("--index", default="", help="index name (default scaling-<size>)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--skip-embedded", action="store_true")
    parser.add_argument("--skip-engine", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="query the existing indices, no builds")
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()
    if args.size < 1:
        parser.error("--size must be positive")

    settings = load_settings()
    embedder = build_embedder(settings)
    dataset = Dataset(args.data)
    queries = dataset.queries(args.split)
    name = args.index or f"scaling-{args.size}"
    root = ROOT / "var" / "scaling"
    backends: dict[str, SearchBackend] = {}
    if not args.skip_embedded:
        backends["embedded"] = EmbeddedBackend(root, hnsw_min_docs=settings.backend.hnsw_min_docs)
    engine: EngineBackend | None = None
    if args.cluster and not args.skip_engine:
        backend_class = OpenSearchBackend if args.engine == "opensearch" else ElasticsearchBackend
        auth = {} if args.engine == "opensearch" else {
            "username": os.environ.get("ELASTICSEARCH_USER") or "lexsearch",
            "password": os.environ.get("ELASTICSEARCH_PASSWORD") or "lexsearch-test-password"}
        engine = backend_class.from_settings(
            dataclasses.replace(settings.backend, kind=args.engine, url=args.cluster, **auth), settings.engine)
        backends["cluster"] = engine
    if not backends:
        parser.error("nothing to measure: give --cluster, or do not skip the embedded engine")

    builds: dict[str, dict] = {}
    if not args.reuse:
        real = [with_citations(d) for d in load_corpus(dataset)]
        real_vectors = embedder.embed_documents([embedding_text(d) for d in real], progress=True)
        builds["corpus"] = {"real": min(args.size, len(real)), "synthetic": max(0, args.size - len(real)),
                            "seed": args.seed, "noise": NOISE}
        if "embedded" in backends:
            builds["embedded"] = build_embedded(root, name, corpus(real, real_vectors, args.size, args.seed),
                                                args.size, settings, embedder.name, embedder.dim, dataset.language)
            print(f"embedded: {builds['embedded']}", file=sys.stderr, flush=True)
        if engine is not None:
            builds["cluster"] = build_engine(engine, name, corpus(real, real_vectors, args.size, args.seed), args.size,
                                             embedder.name, embedder.dim, dataset.language)
            print(f"cluster: {builds['cluster']}", file=sys.stderr, flush=True)

    vectors = embedder.embed_queries([q.text for q in queries])
    fuser = HybridPipeline(next(iter(backends.values())), embedder, settings.retrieval)
    query_load = load_avg()
    latency = query_latency(backends, name, queries, vectors, fuser, settings.retrieval.depth, args.warmup)
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores)",
        "size": args.size, "data": args.data, "queries": len(queries), "timed_queries": len(queries) - args.warmup,
        "depth": settings.retrieval.depth, "engine": args.engine, "cluster": args.cluster,
        "engine_settings": dataclasses.asdict(settings.engine), "builds": builds,
        "load": {"queries_start": query_load, "queries_end": load_avg()}, "latency_ms": latency,
    }
    for label, modes in latency.items():
        print(f"{label:<9} " + "  ".join(f"{m} p50 {v['p50']:.2f} p95 {v['p95']:.2f}" for m, v in modes.items()))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
