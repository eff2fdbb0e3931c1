#!/usr/bin/env python3
"""Sweep hybrid fusion settings on a TRAINING split: RRF (k, weights) and linear (normalisation, weights).

BM25 and kNN run once per query; every fusion setting is then scored on the same two lists.
Use it on fit/train splits only, and report the chosen setting on dev with `lexsearch eval`.

Usage: python scripts/tune_fusion.py DATASET_DIR SPLIT [--depth 100]
"""

from __future__ import annotations

import argparse

from service.config import load_settings
from service.corpus.datasets import Dataset
from service.evaluation.dataset_index import ensure_dataset_index
from service.evaluation.metrics import mean, mrr_at, recall_at
from service.pipelines.build import Runtime
from service.retrieval.fusion import linear, rrf


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("split")
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    runtime = Runtime(load_settings())
    dataset = Dataset(args.data)
    index = ensure_dataset_index(runtime, dataset)
    queries, qrels = dataset.queries(args.split), dataset.qrels(args.split)
    lists = []
    embedder = runtime.retrieval(index).embedder
    for q in queries:
        vector = embedder.embed_queries([q.text[:4000]])[0]
        lists.append(runtime.backend.probe(index, q.text[:4000], vector, k=args.depth, lang=q.lang))
    settings = [("bm25 only", lambda b, k: b), ("knn only", lambda b, k: k)]
    for rrf_k in (10, 60):
        for w in (0.3, 0.5, 0.7):
            settings.append((f"rrf k={rrf_k} w_bm25={w}",
                             lambda b, k, rk=rrf_k, w=w: rrf({"bm25": b, "knn": k}, k=rk,
                                                              weights={"bm25": w, "knn": 1 - w})))
    for norm in ("zscore", "minmax"):
        for w in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
            settings.append((f"linear {norm} w_bm25={w}",
                             lambda b, k, n=norm, w=w: linear({"bm25": b, "knn": k}, normalization=n,
                                                               weights={"bm25": w, "knn": 1 - w})))
    print(f"{dataset.name} / {args.split}: {len(queries)} queries")
    for label, fuse in settings:
        r10, mrr = [], []
        for q, (b, k) in zip(queries, lists, strict=True):
            ranked = [h.doc_id for h in fuse(b, k)]
            rel = qrels.get(q.qid, set())
            r10.append(recall_at(ranked, rel, 10))
            mrr.append(mrr_at(ranked, rel, 10))
        print(f"{label:<28} R@10 {mean(r10):.4f}  MRR@10 {mean(mrr):.4f}")


if __name__ == "__main__":
    main()
