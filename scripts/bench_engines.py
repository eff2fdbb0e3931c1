#!/usr/bin/env python3
"""Engines side by side: OpenSearch vs the embedded engine on the same corpus and the same queries, one run.

    python scripts/bench_engines.py --data data/stard-split --split dev --url http://127.0.0.1:9200 \
        --out runs/bench-engines.json

In one process it
1. builds both indices from the corpus with a warm embedding cache (so the timings are indexing,
   not embedding): the embedded engine with ``rebuild_embedded`` into a temporary folder, OpenSearch
   with the steps of ``rebuild_engine`` (a new version, bulk load, then publish: refresh, force-merge,
   alias swap), timed separately; docs/s each;
2. embeds the split's queries once, then for every query calls, interleaved so machine noise hits both
   alike: embedded bm25, OpenSearch bm25, embedded kNN, OpenSearch kNN, embedded probe, OpenSearch
   probe (the one-round-trip BM25 + kNN of the hybrid pipeline), each with depth ``retrieval.depth``;
   hybrid time = probe + client-side fusion;
3. scores Recall@10 and MRR@10 of bm25, kNN and hybrid fusion (the configured fusion, and RRF k=60)
   from those same result lists, and prints medians (p50), p95 and OpenSearch/embedded ratios.

The first ``--warmup`` queries are run but not timed. ``--reuse`` skips the builds when both
indices exist (for quick iterations; the reported numbers should come from a run with builds).
The OpenSearch node needs about 1 GB of heap for STARD (58,625 x 512 vectors); see docs/ENGINES.md
for OPENSEARCH_HEAP.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.backends._requests import CorpusKind  # noqa: E402
from service.backends.embedded import EmbeddedBackend  # noqa: E402
from service.backends.opensearch import OpenSearchBackend  # noqa: E402
from service.config import RetrievalSettings, load_settings  # noqa: E402
from service.corpus.datasets import Dataset, load_corpus  # noqa: E402
from service.corpus.views import embedding_text  # noqa: E402
from service.evaluation import metrics  # noqa: E402
from service.indexing import index_documents, rebuild_embedded, with_citations  # noqa: E402
from service.pipelines.base import Probe  # noqa: E402
from service.pipelines.build import build_embedder  # noqa: E402
from service.pipelines.hybrid import HybridPipeline  # noqa: E402

INDEX = "bench-engines"


def build(args: argparse.Namespace, settings, embedder, docs, language: str, root: Path,
          opensearch: OpenSearchBackend) -> dict[str, dict[str, float]]:
    """Build both indices; returns seconds and docs/s per engine."""
    out = {}
    start = time.perf_counter()
    report = rebuild_embedded(root, INDEX, embedder, docs, language=language,
                              hnsw_min_docs=settings.backend.hnsw_min_docs)
    seconds = time.perf_counter() - start
    assert report.ok, list(report.failed.items())[:3]
    out["embedded"] = {"seconds": seconds, "docs_per_s": len(docs) / seconds}
    print(f"embedded: {len(docs)} docs in {seconds:.1f}s", file=sys.stderr, flush=True)
    # rebuild_engine's steps, timed one by one: bulk load into a new version, then publish
    # (live settings, refresh, force-merge, alias swap)
    start = time.perf_counter()
    physical = opensearch.create_version(INDEX, language=language, dim=embedder.dim, embedder=embedder.name,
                                         kind=CorpusKind.of(d.kind for d in docs))
    report = index_documents(opensearch, embedder, physical, docs, language=language)
    loaded = time.perf_counter()
    assert report.ok, list(report.failed.items())[:3]
    opensearch.publish(INDEX, physical)
    seconds = time.perf_counter() - start
    out["opensearch"] = {"seconds": seconds, "docs_per_s": len(docs) / seconds, "bulk_seconds": loaded - start,
                         "publish_seconds": seconds - (loaded - start)}
    print(f"opensearch: {len(docs)} docs in {seconds:.1f}s (bulk {loaded - start:.1f}s)", file=sys.stderr, flush=True)
    return out


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, (time.perf_counter() - start) * 1000.0


def scores(runs: dict[str, list[list[str]]], qrels: list[set[str]]) -> dict[str, dict[str, float]]:
    return {name: {"recall@10": metrics.mean(metrics.recall_at(r, g, 10) for r, g in zip(ranked, qrels, strict=True)),
                   "mrr@10": metrics.mean(metrics.mrr_at(r, g, 10) for r, g in zip(ranked, qrels, strict=True)),
                   "recall@100": metrics.mean(metrics.recall_at(r, g, 100)
                                              for r, g in zip(ranked, qrels, strict=True))}
            for name, ranked in runs.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/stard-split")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--url", default="http://127.0.0.1:9200")
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries (0 = all)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--reuse", action="store_true", help="skip the builds when both indices exist")
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()

    settings = load_settings()
    embedder = build_embedder(settings)
    dataset = Dataset(args.data)
    queries = dataset.queries(args.split)
    if args.limit:
        queries = queries[: args.limit]
    qrels_all = dataset.qrels(args.split)
    root = ROOT / "var" / "bench-engines"
    opensearch = OpenSearchBackend.from_settings(dataclasses.replace(settings.backend, url=args.url), settings.engine)
    embedded = EmbeddedBackend(root)

    build_times: dict[str, dict[str, float]] = {}
    if not (args.reuse and embedded.exists(INDEX) and opensearch.exists(INDEX)):
        docs = [with_citations(d) for d in load_corpus(dataset)]
        embedder.embed_documents([embedding_text(d) for d in docs])  # warm the cache: time indexing only
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        build_times = build(args, settings, embedder, docs, dataset.language, root, opensearch)

    vectors = embedder.embed_queries([q.text for q in queries])
    depth = settings.retrieval.depth
    backends = {"embedded": embedded, "opensearch": opensearch}
    fusions = {"hybrid": settings.retrieval,
               "hybrid_rrf": dataclasses.replace(settings.retrieval, fusion="rrf", rrf_k=60, bm25_weight=1.0,
                                                 knn_weight=1.0)}
    fusers = {name: HybridPipeline(embedded, embedder, cfg, mode="hybrid") for name, cfg in fusions.items()}
    latency = {b: {"bm25": [], "knn": [], "hybrid": []} for b in backends}
    runs = {b: {"bm25": [], "knn": [], **{f: [] for f in fusions}} for b in backends}
    for i, (query, vector) in enumerate(zip(queries, vectors, strict=True)):
        timed_query = i >= args.warmup
        lang = query.lang
        per: dict[str, Probe] = {}
        for mode in ("bm25", "knn", "probe"):
            for name, backend in backends.items():
                if mode == "bm25":
                    _, ms = timed(backend.bm25, INDEX, query.text, k=depth, lang=lang)
                elif mode == "knn":
                    _, ms = timed(backend.knn, INDEX, vector, k=depth)
                else:
                    (bm25_hits, knn_hits), ms = timed(backend.probe, INDEX, query.text, vector, k=depth, lang=lang)
                    probe = Probe(bm25_hits, knn_hits, vector)
                    _, fuse_ms = timed(fusers["hybrid"].fuse, probe)
                    ms += fuse_ms
                    per[name] = probe
                if timed_query:
                    latency[name]["hybrid" if mode == "probe" else mode].append(ms)
        for name, probe in per.items():
            runs[name]["bm25"].append([h.doc_id for h in probe.bm25])
            runs[name]["knn"].append([h.doc_id for h in probe.knn])
            for fusion, fuser in fusers.items():
                runs[name][fusion].append([h.doc_id for h in fuser.fuse(Probe(list(probe.bm25), list(probe.knn),
                                                                              vector))])
    qrels = [qrels_all.get(q.qid, set()) for q in queries]
    quality = {name: scores(r, qrels) for name, r in runs.items()}
    timing = {name: {mode: {"p50": metrics.percentile(v, 50), "p95": metrics.percentile(v, 95)}
                     for mode, v in modes.items()} for name, modes in latency.items()}
    overlap = {mode: float(np.mean([len(set(a[:10]) & set(b[:10])) / 10 for a, b in
                                    zip(runs["embedded"][mode], runs["opensearch"][mode], strict=True)]))
               for mode in runs["embedded"]}
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": f"{platform.node()} ({platform.machine()})",
        "data": args.data, "split": args.split, "queries": len(queries), "timed_queries": len(queries) - args.warmup,
        "depth": depth, "fusion": dataclasses.asdict(settings.retrieval), "embedder": embedder.name,
        "opensearch": opensearch.url, "indexing": build_times, "quality": quality, "latency_ms": timing,
        "top10_overlap": overlap,
    }
    print_report(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


def print_report(report: dict) -> None:
    fusion: RetrievalSettings = RetrievalSettings(**report["fusion"])
    print(f"{report['data']} split {report['split']}: {report['queries']} queries "
          f"({report['timed_queries']} timed), depth {report['depth']}, embedder {report['embedder']}")
    print(f"hybrid = {fusion.fusion} fusion (bm25 {fusion.bm25_weight}, knn {fusion.knn_weight}, "
          f"{fusion.normalization}); hybrid_rrf = RRF k=60")
    print("\nquality            embedded R@10  MRR@10 | opensearch R@10  MRR@10 |  dR@10  dMRR@10 | top-10 overlap")
    for mode in ("bm25", "knn", "hybrid", "hybrid_rrf"):
        e, o = report["quality"]["embedded"][mode], report["quality"]["opensearch"][mode]
        print(f"{mode:<18} {e['recall@10']:>13.4f} {e['mrr@10']:>7.4f} | {o['recall@10']:>15.4f} {o['mrr@10']:>7.4f} | "
              f"{o['recall@10'] - e['recall@10']:>+6.4f} {o['mrr@10'] - e['mrr@10']:>+8.4f} | "
              f"{report['top10_overlap'][mode]:.3f}")
    print("\nlatency ms         embedded p50    p95 | opensearch p50    p95 | ratio p50   p95")
    for mode in ("bm25", "knn", "hybrid"):
        e, o = report["latency_ms"]["embedded"][mode], report["latency_ms"]["opensearch"][mode]
        print(f"{mode:<18} {e['p50']:>12.2f} {e['p95']:>6.2f} | {o['p50']:>14.2f} {o['p95']:>6.2f} | "
              f"{o['p50'] / e['p50']:>9.2f} {o['p95'] / e['p95']:>5.2f}")
    if report["indexing"]:
        e, o = report["indexing"]["embedded"], report["indexing"]["opensearch"]
        print(f"\nindexing           embedded {e['seconds']:.1f}s = {e['docs_per_s']:.0f} docs/s | opensearch "
              f"{o['seconds']:.1f}s = {o['docs_per_s']:.0f} docs/s (bulk {o['bulk_seconds']:.1f}s, publish "
              f"{o['publish_seconds']:.1f}s) | ratio {o['docs_per_s'] / e['docs_per_s']:.2f}")


if __name__ == "__main__":
    sys.exit(main())
