#!/usr/bin/env python3
"""The embedder table: each embedder on each dev split, dense and hybrid, with its cost.

    python scripts/bench_embedders.py --out runs/embedders.json \
        stard=data/stard-split:dev:use,onnx:bge-small-zh-v15-q \
        coliee=/path/to/coliee-en:dev:use,onnx:e5-small-v2-q \
        gerlayqa=data/gerlayqa-split:dev:use,e5 \
        swiss=/path/to/swiss-statutes:dev:use

Per dataset, BM25 once; per embedder (a spec as ``--embedder`` takes it, serving the dataset's
language): the dataset index built with it (embeddings from the shared cache when there), its
label-free fusion weights (calibrated when the index is built), then

* dense and hybrid Recall@10 and MRR@10 on the split, hybrid with those weights;
* indexing docs/s: the embedder alone on a fixed sample of the corpus, cold (no cache), per second
  of wall time and per CPU second (the machine is shared: CPU time is the load-independent cost);
* query p50: the embedder alone, one question at a time, on short questions (at most 200
  characters) and long ones (at least 1,000 characters; where the split has fewer than 10, dev
  questions joined until they are that long), wall and CPU milliseconds;
* hybrid p50: end to end, from a cold query cache.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from service.config import Settings, load_settings, parse_embedder_spec
from service.corpus.datasets import Dataset, load_corpus
from service.corpus.model import Query
from service.corpus.views import embedding_text
from service.evaluation.dataset_index import ensure_dataset_index
from service.evaluation.harness import evaluate
from service.pipelines.build import Runtime

SHORT_CHARS = 200
LONG_CHARS = 1000


def settings_for(base: Settings, spec: str, language: str) -> Settings:
    """The settings under which a corpus in ``language`` gets the embedder ``spec``."""
    if language and "," not in language:
        return base.replace(embedder={"per_language": (f"{language}={spec}",)})
    return base.replace(embedder={**parse_embedder_spec(spec), "per_language": ()})


def question_sets(queries: list[Query]) -> dict[str, list[str]]:
    short = [q.text for q in queries if len(q.text) <= SHORT_CHARS][:50]
    long = [q.text for q in queries if len(q.text) >= LONG_CHARS][:30]
    if len(long) < 10:
        long, joined = [], ""
        for q in queries:
            joined = f"{joined} {q.text}".strip()
            if len(joined) >= LONG_CHARS:
                long.append(joined)
                joined = ""
            if len(long) == 30:
                break
    return {"short": short, "long": long}


def p50_ms(embed: Any, texts: list[str]) -> dict[str, float] | None:
    """Median wall and CPU milliseconds of embedding one text (CPU time is what an idle machine
    would take for a one-thread pass; the wall time includes waiting for a core on a busy one)."""
    if not texts:
        return None
    embed([texts[0]])  # loads the model
    wall, cpu = [], []
    for text in texts:
        start, start_cpu = time.perf_counter(), time.process_time()
        embed([text])
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return {"wall": round(statistics.median(wall), 2), "cpu": round(statistics.median(cpu), 2)}


def bench_embedder(base: Settings, dataset: Dataset, split: str, spec: str, sample: list[str]) -> dict[str, Any]:
    runtime = Runtime(settings_for(base, spec, dataset.language))
    index = ensure_dataset_index(runtime, dataset)
    retrieval = runtime.retrieval(index)
    inner = retrieval.embedder.inner  # type: ignore[attr-defined]
    queries, qrels = dataset.queries(split), dataset.qrels(split)
    row: dict[str, Any] = {"embedder": inner.name, "spec": spec, "index": index,
                           "fusion_weights": retrieval.weights.to_dict()}
    for name in ("dense", "hybrid"):
        runtime.forget_query_caches()
        result, _ = evaluate(runtime.pipeline(name), queries, qrels, index=index, k=100, label=name)
        row[name] = {"recall@10": round(result.recall_10, 4), "mrr@10": round(result.mrr_10, 4),
                     "p50_ms": round(result.latency_p50, 2)}
    inner.embed_documents(sample[:2])
    start, start_cpu = time.perf_counter(), time.process_time()
    inner.embed_documents(sample)
    row["index_docs_per_s"] = {"wall": round(len(sample) / (time.perf_counter() - start), 1),
                               "per_cpu_s": round(len(sample) / (time.process_time() - start_cpu), 1)}
    row["query_p50_ms"] = {kind: p50_ms(inner.embed_queries, texts) for kind, texts in question_sets(queries).items()}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datasets", nargs="+", help="label=DATASET_DIR:SPLIT:SPEC[,SPEC...]")
    parser.add_argument("--sample", type=int, default=300, help="corpus documents embedded to time indexing")
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()
    base = load_settings()
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "load_average_start": os.getloadavg(), "datasets": {}}
    for item in args.datasets:
        label, _, rest = item.partition("=")
        path, split, specs = rest.split(":", 2)
        dataset = Dataset(path)
        runtime = Runtime(base)
        index = ensure_dataset_index(runtime, dataset)
        bm25, _ = evaluate(runtime.pipeline("bm25"), dataset.queries(split), dataset.qrels(split), index=index,
                           k=100, label="bm25")
        docs = load_corpus(dataset)
        sample = [embedding_text(d) for d in random.Random(7).sample(docs, min(args.sample, len(docs)))]
        entry = {"bm25": {"recall@10": round(bm25.recall_10, 4), "mrr@10": round(bm25.mrr_10, 4)},
                 "queries": bm25.queries, "embedders": []}
        print(f"{label}: bm25 {json.dumps(entry['bm25'])}", flush=True)
        for spec in specs.split(","):
            entry["embedders"].append(bench_embedder(base, dataset, split, spec, sample))
        report["datasets"][label] = entry
    report["load_average_end"] = os.getloadavg()
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
