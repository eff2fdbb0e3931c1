#!/usr/bin/env python3
"""Engines side by side: OpenSearch and Elasticsearch vs the embedded engine, same corpus, same queries, one run.

    python scripts/bench_engines.py --data data/stard-split --split dev \
        --opensearch http://127.0.0.1:9200 --elasticsearch http://127.0.0.1:9201 --out runs/bench-engines.json

In one process it
1. builds every index from the corpus with a warm embedding cache (so the timings are indexing,
   not embedding): the embedded engine with ``rebuild_embedded`` into a temporary folder, each
   engine with the steps of ``rebuild_engine`` (a new version, bulk load, then publish: refresh,
   force-merge, alias swap), timed separately; docs/s each;
2. embeds the split's queries once, then times one pass per engine: for every query, interleaved
   with the embedded engine so machine noise hits both alike, bm25, kNN and probe (the one-round-trip
   BM25 + kNN of the hybrid pipeline), each with depth ``retrieval.depth``; hybrid time = probe +
   client-side fusion. Engines get separate passes: a second JVM answering in between slows the
   first one down on a small machine;
3. scores Recall@10 and MRR@10 of bm25, kNN and hybrid fusion (the configured fusion, the same with
   min-max normalisation, and RRF k=60) from those same result lists, and prints medians (p50), p95
   and engine/embedded ratios.

``--end-to-end`` adds ``search``: the whole hybrid search a user waits for, ``HybridPipeline.run``
with the query embedded anew each time (no cache; the same embedder on both sides), the probe,
fusion and the ten hits' documents fetched, interleaved like the rest.

``--native`` adds the engine's own fusion where there is one (OpenSearch with the neural-search
plugin: ``hybrid()`` with the linear/min-max and the RRF search pipeline), timed and scored beside
client-side fusion. ``--per-shard-stats`` adds each engine once more with
``search_type=query_then_fetch`` (label ``<engine>/qtf``): on an index of several shards, what BM25
costs and scores without ``dfs_query_then_fetch``.

The first ``--warmup`` queries are run but not timed. ``--reuse`` builds only the indices that do
not exist yet (the embedded one lives in ``var/bench-engines``). Engine
settings (shards, replicas, search type, ...) come from the usual settings (``LEXSEARCH_ENGINE_*``).
Elasticsearch credentials: ``ELASTICSEARCH_USER`` / ``ELASTICSEARCH_PASSWORD`` (the defaults of
``scripts/elasticsearch-local``). A node needs about 1 GB of heap for STARD (58,625 x 512 vectors).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.backends._requests import CorpusKind  # noqa: E402
from service.backends.base import NativeFusion, SearchBackend  # noqa: E402
from service.backends.elasticsearch import ElasticsearchBackend  # noqa: E402
from service.backends.embedded import EmbeddedBackend  # noqa: E402
from service.backends.engine.backend import EngineBackend  # noqa: E402
from service.backends.opensearch import OpenSearchBackend  # noqa: E402
from service.config import RetrievalSettings, Settings, load_settings  # noqa: E402
from service.corpus.datasets import Dataset, load_corpus  # noqa: E402
from service.corpus.model import LegalDoc  # noqa: E402
from service.corpus.views import embedding_text  # noqa: E402
from service.embeddings.cache import CachedEmbedder  # noqa: E402
from service.evaluation import metrics  # noqa: E402
from service.indexing import index_documents, rebuild_embedded, with_citations  # noqa: E402
from service.pipelines.base import Probe, SearchRequest  # noqa: E402
from service.pipelines.build import build_embedder  # noqa: E402
from service.pipelines.hybrid import HybridPipeline  # noqa: E402

MODES = ("bm25", "knn", "hybrid")


def load_load() -> str:
    """The 1/5/15-minute load averages, for the report."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def build_engine(backend: EngineBackend, index: str, embedder: CachedEmbedder, docs: list[LegalDoc],
                 language: str) -> dict[str, float]:
    """``rebuild_engine``'s steps, timed one by one: bulk load into a new version, then publish
    (live settings, refresh, force-merge, alias swap)."""
    start = time.perf_counter()
    physical = backend.create_version(index, language=language, dim=embedder.dim, embedder=embedder.name,
                                      kind=CorpusKind.of(d.kind for d in docs))
    report = index_documents(backend, embedder, physical, docs, language=language)
    loaded = time.perf_counter()
    assert report.ok, list(report.failed.items())[:3]
    backend.publish(index, physical)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "docs_per_s": len(docs) / seconds, "bulk_seconds": loaded - start,
            "publish_seconds": seconds - (loaded - start)}


def build_all(settings: Settings, embedder: CachedEmbedder, dataset: Dataset, root: Path, index: str,
              backends: dict[str, SearchBackend]) -> dict[str, dict[str, float]]:
    """Build the index on each of ``backends`` from the corpus; returns seconds and docs/s per backend."""
    docs = [with_citations(d) for d in load_corpus(dataset)]
    embedder.embed_documents([embedding_text(d) for d in docs])  # warm the cache: time indexing only
    out = {}
    for name, backend in backends.items():
        if isinstance(backend, EngineBackend):
            out[name] = build_engine(backend, index, embedder, docs, dataset.language)
        else:
            start = time.perf_counter()
            report = rebuild_embedded(root, index, embedder, docs, language=dataset.language,
                                      hnsw_min_docs=settings.backend.hnsw_min_docs)
            seconds = time.perf_counter() - start
            assert report.ok, list(report.failed.items())[:3]
            out[name] = {"seconds": seconds, "docs_per_s": len(docs) / seconds}
        print(f"{name}: {len(docs)} docs in {out[name]['seconds']:.1f}s (load {load_load()})", file=sys.stderr,
              flush=True)
    return out


def query_pass(backends: dict[str, SearchBackend], modes: dict[str, tuple[str, ...]], index: str, query, vector,
               depth: int, native: dict[str, RetrievalSettings], fuser: HybridPipeline,
               searchers: dict[str, HybridPipeline]):
    """One query on every backend, mode by mode: yields (backend, mode, ms, result) as it goes."""
    for mode in (*MODES, *native, *(("search",) if searchers else ())):
        for name, backend in backends.items():
            if mode not in modes[name]:
                continue
            if mode == "search":
                result, ms = timed(searchers[name].run, SearchRequest(query.text, index, k=10, lang=query.lang))
            elif mode == "bm25":
                result, ms = timed(backend.bm25, index, query.text, k=depth, lang=query.lang)
            elif mode == "knn":
                result, ms = timed(backend.knn, index, vector, k=depth)
            elif mode == "hybrid":
                (bm25_hits, knn_hits), ms = timed(backend.probe, index, query.text, vector, k=depth, lang=query.lang)
                result = Probe(bm25_hits, knn_hits, vector)
                ms += timed(fuser.fuse, result)[1]
            else:
                result, ms = timed(backend.hybrid, index, query.text, vector, k=depth, fusion=native[mode],
                                   weights={"bm25": 0.5, "knn": 0.5}, lang=query.lang)
            yield name, mode, ms, result


def record_run(runs: dict[str, list[list[str]]], mode: str, result, fusers: dict[str, HybridPipeline],
               vector) -> None:
    """Keep the ranking of one call for scoring: a probe gives bm25, knn and every client-side fusion."""
    if mode in ("bm25", "knn"):
        return  # taken from the probe, which returns the same lists
    if mode == "search":
        runs[mode].append([h.doc_id for h in result.hits])
        return
    if mode != "hybrid":
        runs[mode].append([h.doc_id for h in result])
        return
    runs["bm25"].append([h.doc_id for h in result.bm25])
    runs["knn"].append([h.doc_id for h in result.knn])
    for fusion, fuser in fusers.items():
        runs[fusion].append([h.doc_id for h in fuser.fuse(Probe(list(result.bm25), list(result.knn), vector))])


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


def engine_backends(args: argparse.Namespace, settings: Settings) -> dict[str, EngineBackend]:
    out: dict[str, EngineBackend] = {}
    if args.opensearch:
        out["opensearch"] = OpenSearchBackend.from_settings(
            dataclasses.replace(settings.backend, kind="opensearch", url=args.opensearch), settings.engine)
    if args.elasticsearch:
        out["elasticsearch"] = ElasticsearchBackend.from_settings(
            dataclasses.replace(settings.backend, kind="elasticsearch", url=args.elasticsearch,
                                username=os.environ.get("ELASTICSEARCH_USER") or "lexsearch",
                                password=os.environ.get("ELASTICSEARCH_PASSWORD") or "lexsearch-test-password"),
            settings.engine)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/stard-split")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--opensearch", default="http://127.0.0.1:9200", help="OpenSearch URL ('' = skip)")
    parser.add_argument("--elasticsearch", default="", help="Elasticsearch URL ('' = skip)")
    parser.add_argument("--index", default="bench-engines", help="index (alias) name on every backend")
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries (0 = all)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--reuse", action="store_true", help="build only the indices that do not exist yet")
    parser.add_argument("--per-shard-stats", action="store_true",
                        help="also query each engine with search_type=query_then_fetch (label <engine>/qtf)")
    parser.add_argument("--native", action="store_true",
                        help="also time and score the engine's own hybrid fusion where it has one (OpenSearch)")
    parser.add_argument("--end-to-end", action="store_true",
                        help="also time the whole hybrid search (query embedding, probe, fusion, documents)")
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
    engines = engine_backends(args, settings)
    backends: dict[str, SearchBackend] = {"embedded": EmbeddedBackend(root), **engines}

    build_times: dict[str, dict[str, float]] = {}
    build_load = ""
    missing = {name: b for name, b in backends.items() if not (args.reuse and b.exists(args.index))}
    if missing:
        build_times = build_all(settings, embedder, dataset, root, args.index, missing)
        build_load = load_load()

    if args.per_shard_stats:
        for name, backend in list(engines.items()):
            engines[f"{name}/qtf"] = type(backend).from_settings(
                backend.connection, dataclasses.replace(settings.engine, search_type="query_then_fetch"))
        backends.update(engines)

    vectors = embedder.embed_queries([q.text for q in queries])
    depth = settings.retrieval.depth
    fusions = {"hybrid": settings.retrieval,
               "hybrid_minmax": dataclasses.replace(settings.retrieval, fusion="linear", normalization="minmax"),
               "hybrid_rrf": dataclasses.replace(settings.retrieval, fusion="rrf", rrf_k=60, bm25_weight=1.0,
                                                 knn_weight=1.0)}
    fusers = {name: HybridPipeline(backends["embedded"], embedder, cfg, mode="hybrid") for name, cfg in fusions.items()}
    native = {f"native_{fusion}": fusions[client] for fusion, client in (("linear", "hybrid_minmax"),
                                                                          ("rrf", "hybrid_rrf"))} if args.native else {}
    modes = {b: MODES + (tuple(native) if isinstance(backend, NativeFusion) and "/" not in b else ())
             + (("search",) if args.end_to_end else ()) for b, backend in backends.items()}
    # The uncached embedder: each search embeds its question, as a new question would be.
    searchers = ({b: HybridPipeline(backend, embedder.inner, settings.retrieval, mode="hybrid")
                  for b, backend in backends.items()} if args.end_to_end else {})
    runs: dict[str, dict[str, list[list[str]]]] = {
        b: {"bm25": [], "knn": [], **{f: [] for f in fusions},
            **{m: [] for m in modes[b] if m in native or m == "search"}}
        for b in backends}
    query_load_start = load_load()
    # One pass per engine, each interleaved query by query with the embedded engine, so an engine's
    # latency is not disturbed by another engine's JVM waking up in between (measured: OpenSearch
    # hybrid p50 28 ms with Elasticsearch interleaved in the same loop, 7 ms without).
    latency: dict[str, dict[str, dict[str, list[float]]]] = {}
    for engine_name in engines:
        in_pass = {"embedded": backends["embedded"], engine_name: backends[engine_name]}
        latency[engine_name] = {b: {m: [] for m in modes[b]} for b in in_pass}
        record = {engine_name} | ({"embedded"} if not runs["embedded"]["bm25"] else set())
        for i, (query, vector) in enumerate(zip(queries, vectors, strict=True)):
            for name, mode, ms, result in query_pass(in_pass, modes, args.index, query, vector, depth, native,
                                                     fusers["hybrid"], searchers):
                if i >= args.warmup:
                    latency[engine_name][name][mode].append(ms)
                if name in record:
                    record_run(runs[name], mode, result, fusers, vector)
    qrels = [qrels_all.get(q.qid, set()) for q in queries]
    quality = {name: scores(r, qrels) for name, r in runs.items()}
    timing = {engine: {name: {mode: {"p50": metrics.percentile(v, 50), "p95": metrics.percentile(v, 95)}
                              for mode, v in by_mode.items()} for name, by_mode in in_pass.items()}
              for engine, in_pass in latency.items()}
    overlap = {name: {mode: float(np.mean([len(set(a[:10]) & set(b[:10])) / 10 for a, b in
                                           zip(runs["embedded"][_client_of(mode)], runs[name][mode], strict=True)]))
                      for mode in runs[name]} for name in engines}
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores)",
        "load": {"build": build_load, "queries_start": query_load_start, "queries_end": load_load()},
        "data": args.data, "split": args.split, "queries": len(queries), "timed_queries": len(queries) - args.warmup,
        "depth": depth, "fusion": dataclasses.asdict(settings.retrieval), "embedder": embedder.name,
        "engine_settings": dataclasses.asdict(settings.engine),
        "urls": {name: b.url for name, b in engines.items()}, "indexing": build_times, "quality": quality,
        "latency_ms": timing, "top10_overlap": overlap,
    }
    print_report(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


def _client_of(mode: str) -> str:
    """The client-side fusion a native one is compared with."""
    return {"native_linear": "hybrid_minmax", "native_rrf": "hybrid_rrf"}.get(mode, mode)


def print_report(report: dict) -> None:
    fusion = RetrievalSettings(**report["fusion"])
    engines = list(report["urls"])
    print(f"{report['data']} split {report['split']}: {report['queries']} queries "
          f"({report['timed_queries']} timed), depth {report['depth']}, embedder {report['embedder']}; "
          f"{report['date']}, load {report['load']}")
    print(f"hybrid = {fusion.fusion} fusion (bm25 {fusion.bm25_weight}, knn {fusion.knn_weight}, "
          f"{fusion.normalization}); hybrid_minmax = the same with minmax; hybrid_rrf = RRF k=60; "
          "native_* = the engine's own fusion, compared with the embedded engine's hybrid_minmax / hybrid_rrf")
    for name in engines:
        print(f"\nquality {name:<17} embedded R@10  MRR@10 | {name} R@10  MRR@10 |  dR@10  dMRR@10 | top-10 overlap")
        for mode in report["quality"][name]:
            e, o = report["quality"]["embedded"][_client_of(mode)], report["quality"][name][mode]
            d_recall, d_mrr = o["recall@10"] - e["recall@10"], o["mrr@10"] - e["mrr@10"]
            print(f"{mode:<25} {e['recall@10']:>13.4f} {e['mrr@10']:>7.4f} | {o['recall@10']:>{len(name) + 5}.4f} "
                  f"{o['mrr@10']:>7.4f} | {d_recall:>+6.4f} {d_mrr:>+8.4f} | {report['top10_overlap'][name][mode]:.3f}")
    print("\nlatency ms, one pass per engine against the embedded engine (x = p50 / embedded p50 of the pass; "
          "for the native modes / embedded hybrid p50)")
    print(f"{'pass':<20} {'backend':<20} " + " ".join(f"{m + ' p50':>12} {'p95':>7} {'x':>6}" for m in MODES))
    for engine, in_pass in report["latency_ms"].items():
        base = in_pass["embedded"]
        for name, modes in in_pass.items():
            row = f"{engine:<20} {name:<20} "
            for mode in MODES:
                v = modes[mode]
                row += f"{v['p50']:>12.2f} {v['p95']:>7.2f} {v['p50'] / base[mode]['p50']:>6.2f} "
            print(row)
            for mode in (m for m in modes if m not in MODES):
                v, ratio = modes[mode], modes[mode]["p50"] / base.get(mode, base["hybrid"])["p50"]
                print(f"{'':<41} {mode} p50 {v['p50']:.2f} p95 {v['p95']:.2f} x {ratio:.2f} "
                      f"(client fusion on {name}: p50 {modes['hybrid']['p50']:.2f})")
    if report["indexing"]:
        print()
        for name, t in report["indexing"].items():
            extra = (f" (bulk {t['bulk_seconds']:.1f}s, publish {t['publish_seconds']:.1f}s)"
                     if "bulk_seconds" in t else "")
            print(f"indexing {name:<14} {t['seconds']:>7.1f}s = {t['docs_per_s']:>5.0f} docs/s{extra}")


if __name__ == "__main__":
    sys.exit(main())
