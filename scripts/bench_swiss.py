#!/usr/bin/env python3
"""Swiss law benchmark: five-fold cross-validation over the Swiss exam questions (docs/BENCHMARKS.md).

Usage::

    python scripts/make_swiss_cv.py SWISS_DIR /work/data/swiss-cv          # once: the fold folders
    python scripts/bench_swiss.py /work/data/swiss-cv --models models/swiss-cv --out runs/swiss \\
        [--pipelines bm25,dense,hybrid,agentic,routed] [--folds 1,2,3,4,5] [--variants processed,truncated,whole] \\
        [--reuse]

The dev split has 126 questions, too few to set some aside for training, so every learned part is
cross-validated: for each fold ``f`` the models are trained on ``cv<f>-train`` (four fifths, with
``lexsearch train``; kept in ``--models/cv<f>`` and reused when present) and the pipelines are
scored on ``cv<f>``. Each question is scored once, by models that never saw it; the figures pool the
five folds: R@10, R@100, MRR@10, set precision/recall/F1 for every citation-set choice, p50/p95
latency (wall clock, and the process's CPU time per search, which a machine shared with other jobs
does not inflate), overall and by question language, the law prediction's accuracy on the
held-out folds, and per pipeline the best set's F1 over a fixed top 10's with a 95 % interval from
resampling the exam cases (questions on one case are drawn together; ``results.json``, ``set_ratio``).

Variants of the question processing (first-stage pipelines only; trained pipelines use
``processed``): ``processed`` (long questions read as passages and question proper),
``truncated`` (the question cut to its first 8,000 characters, the old limit, and searched as one
text) and ``whole`` (the whole question as one text). The first-stage pipelines are the label-free
baselines: ``hybrid`` fuses with the index's own weights, never with a fold's trained ones.

Writes ``OUT/results.json`` (every figure), ``OUT/runs/cv<f>.<variant>.<pipeline>.run`` (TREC run
files) and ``OUT/folds/cv<f>.json`` (each fold's per-question scores), and prints the tables of
docs/BENCHMARKS.md. With ``--reuse``, a fold whose scores are in ``OUT/folds`` (for every requested
variant and pipeline) is not searched again, so folds can be scored as their models become ready and
pooled at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from make_swiss_cv import case_of  # scripts/ is on the path when this script runs

from service.analysis.language import detect_language
from service.config import load_settings
from service.corpus.datasets import Dataset
from service.corpus.model import Query
from service.evaluation import metrics
from service.evaluation.bootstrap import ratio_interval
from service.evaluation.dataset_index import ensure_dataset_index
from service.evaluation.harness import QueryScore, evaluate, summarise
from service.evaluation.runs import write_run
from service.pipelines.base import SearchResponse
from service.pipelines.build import Runtime
from service.retrieval.sets import DEFAULT_SET_CHOICES, CliffSet, parse_set_choices
from service.routing.router import RoutingParams
from service.training import train_models

VARIANTS = {
    "processed": {"long_query_chars": 500, "cut": 0},
    "truncated": {"long_query_chars": 0, "cut": 8_000},
    "whole": {"long_query_chars": 0, "cut": 0},
}
FIRST_STAGE = ("bm25", "dense", "hybrid")
QUESTION_LANGUAGES = ("de", "en", "fr", "it")


def runtime_for(variant: str, model_dir: str = "") -> Runtime:
    settings = load_settings(overrides={"retrieval": {"long_query_chars": VARIANTS[variant]["long_query_chars"]},
                                        "index": {"model_dir": model_dir}})
    return Runtime(settings)


def questions_for(variant: str, queries: list[Query]) -> list[Query]:
    """The questions as the variant searches them, with their language detected (the split file does
    not record it; the ``truncated`` variant cuts the text, the others keep it whole)."""
    cut = VARIANTS[variant]["cut"]
    return [replace(q, text=q.text[:cut] if cut else q.text,
                    lang=detect_language(q.text, candidates=QUESTION_LANGUAGES, default="de")) for q in queries]


class LawScorer:
    """Top-1/top-3 accuracy of the agentic pipeline's law prediction on the held-out questions."""

    def __init__(self, gold_laws: dict[str, set[str]]) -> None:
        self.gold_laws = gold_laws
        self.rows: list[tuple[bool, bool]] = []

    def __call__(self, query: Query, response: SearchResponse) -> None:
        laws = [law for law, _ in response.trace.get("law_prediction", {}).get("laws", [])]
        gold = self.gold_laws.get(query.qid, set())
        self.rows.append((bool(set(laws[:1]) & gold), bool(set(laws[:3]) & gold)))

    def to_dict(self) -> dict[str, float]:
        if not self.rows:
            return {}
        return {"questions": len(self.rows), "top1": round(metrics.mean(a for a, _ in self.rows), 4),
                "top3": round(metrics.mean(b for _, b in self.rows), 4)}


def save_fold(path: Path, rows: dict[str, list[QueryScore]], law: LawScorer | None, training: dict[str, Any]
              ) -> dict[str, Any]:
    """Keep one fold's per-question scores, so that ``--reuse`` can pool them with later folds; returns
    when it was scored and the load average then."""
    when = {"scored": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_average": [round(x, 2) for x in os.getloadavg()]}
    data = {"rows": {key: [asdict(r) for r in values] for key, values in rows.items()},
            "law": law.rows if law is not None else [], "training": training, **when}
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    return when


def load_fold(path: Path, wanted: list[str]) -> dict[str, Any] | None:
    """A fold's saved scores, or None when the file is missing or lacks one of the ``wanted`` runs."""
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if any(key not in data["rows"] for key in wanted):
        return None
    rows = {key: [QueryScore(**{**r, "set_prf": tuple(r["set_prf"]) if r["set_prf"] else None,
                                "sets": {n: tuple(v) for n, v in r["sets"].items()}}) for r in data["rows"][key]]
            for key in wanted}
    law = LawScorer({})
    law.rows = [(bool(a), bool(b)) for a, b in data["law"]]
    return {**data, "rows": rows, "law": law}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data")
    parser.add_argument("--models", required=True, help="folder for the per-fold model folders")
    parser.add_argument("--out", required=True)
    parser.add_argument("--pipelines", default="bm25,dense,hybrid,agentic,routed")
    parser.add_argument("--folds", default="1,2,3,4,5")
    parser.add_argument("--variants", default="processed,truncated,whole")
    parser.add_argument("--sets", default=DEFAULT_SET_CHOICES)
    parser.add_argument("--reuse", action="store_true", help="pool the saved scores of folds scored before")
    args = parser.parse_args(argv)
    dataset = Dataset(args.data)
    folds = [int(f) for f in args.folds.split(",")]
    pipelines = [p.strip() for p in args.pipelines.split(",") if p.strip()]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    missing = [f"cv{f}" for f in folds if f"cv{f}" not in dataset.splits()]
    unknown = [v for v in variants if v not in VARIANTS]
    if missing or unknown or not pipelines:
        print(f"bench_swiss: error: {'missing splits ' + ', '.join(missing) if missing else ''}"
              f"{' unknown variants ' + ', '.join(unknown) if unknown else ''}"
              f"{' no pipeline' if not pipelines else ''} (make the folds with scripts/make_swiss_cv.py)",
              file=sys.stderr)
        return 2
    out = Path(args.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "folds").mkdir(exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    label_free = {v: runtime_for(v) for v in {"processed", *variants}}  # no model folder: the baselines
    base = label_free["processed"]
    index = ensure_dataset_index(base, dataset)
    docs_law: dict[str, str] = {}
    rows: dict[str, list[QueryScore]] = defaultdict(list)
    law_scorers: list[LawScorer] = []
    training: dict[str, Any] = {}
    scored: dict[str, Any] = {}
    cases: dict[str, str] = {}
    for f in folds:
        queries = dataset.queries(f"cv{f}")
        cases.update({q.qid: case_of(q.text) for q in queries})
        model_dir = Path(args.models) / f"cv{f}"
        trained = [p for p in pipelines if p not in FIRST_STAGE]
        wanted = [f"{v}/{p}" for v in variants for p in pipelines if v == "processed" or p in FIRST_STAGE]
        saved = load_fold(out / "folds" / f"cv{f}.json", wanted) if args.reuse else None
        if saved is not None:
            print(f"fold {f}: reusing its saved scores", flush=True)
            for key in wanted:
                rows[key].extend(saved["rows"][key])
            law_scorers.append(saved["law"])
            if saved["training"]:
                training[f"cv{f}"] = saved["training"]
            scored[f"cv{f}"] = {k: saved[k] for k in ("scored", "load_average")}
            continue
        fold_rows: dict[str, list[QueryScore]] = defaultdict(list)
        fold_law: LawScorer | None = None
        if trained and not (model_dir / "manifest.json").is_file():
            print(f"fold {f}: training on cv{f}-train", flush=True)
            report = train_models(base, dataset, f"cv{f}-train", model_dir, progress=lambda m: print("  " + m,
                                                                                                    flush=True))
            training[f"cv{f}"] = report.to_dict()
        elif trained:
            training[f"cv{f}"] = {k: v for k, v in json.loads((model_dir / "manifest.json").read_text()).items()
                                  if k in ("cv", "timings_s", "questions")}
        qrels = dataset.qrels(f"cv{f}")
        gold_ids = sorted({d for ids in qrels.values() for d in ids} - set(docs_law))
        docs_law.update({d: doc.law for d, doc in base.backend.fetch(index, gold_ids).items()})
        for variant in variants:
            names = pipelines if variant == "processed" else [p for p in pipelines if p in FIRST_STAGE]
            if not names:
                continue
            # bm25, dense and hybrid are the label-free baselines: hybrid fuses with the index's own
            # weights, not with the fold's trained ones (which the model folder would impose)
            first_stage = label_free[variant]
            runtime = runtime_for(variant, str(model_dir)) if trained else first_stage
            models = runtime.models() if trained else None
            choices, _ = parse_set_choices(args.sets, counter=models.citation_counter if models else None)
            params = RoutingParams.resolve(runtime.settings.routing, runtime.backend.metadata(index))
            choices = [CliffSet(params.cut_sigma, params.cut_min_k, params.cut_max_k, params.cut_depth)
                       if c.name == "cliff" else c for c in choices]
            for name in names:
                runtime.forget_query_caches()
                first_stage.forget_query_caches()
                scorer = None
                if name == "agentic":
                    scorer = LawScorer({qid: {docs_law[d] for d in ids if d in docs_law} for qid, ids in qrels.items()})
                    law_scorers.append(scorer)
                    fold_law = scorer
                print(f"fold {f}: {variant} {name} on {len(queries)} questions", flush=True)
                searcher = (first_stage if name in FIRST_STAGE else runtime).pipeline(name)
                result, run = evaluate(searcher, questions_for(variant, queries), qrels, index=index,
                                       k=100, label=name, set_choices=choices, on_response=scorer)
                write_run(out / "runs" / f"cv{f}.{variant}.{name}.run", run, tag=f"{variant}-{name}")
                rows[f"{variant}/{name}"].extend(result.rows)
                fold_rows[f"{variant}/{name}"].extend(result.rows)
        scored[f"cv{f}"] = save_fold(out / "folds" / f"cv{f}.json", fold_rows, fold_law, training.get(f"cv{f}", {}))
    load = os.getloadavg()
    results: dict[str, Any] = {
        "started": started, "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average": [round(x, 2) for x in load], "data": str(dataset.path), "index": index, "folds": folds,
        "training": training, "scored": scored, "runs": {}, "set_ratio": {}, "law_prediction": {},
    }
    for key, values in rows.items():
        entry = {"all": summarise(values)}
        for lang in QUESTION_LANGUAGES:
            part = [r for r in values if r.lang == lang]
            if part:
                entry[lang] = summarise(part)
        results["runs"][key] = entry
        ratio = best_set_ratio(values, cases)
        if ratio is not None:
            results["set_ratio"][key] = ratio
    merged = LawScorer({})
    for scorer in law_scorers:
        merged.rows.extend(scorer.rows)
    results["law_prediction"] = merged.to_dict()
    (out / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print_tables(results)
    return 0


def best_set_ratio(rows: list[QueryScore], cases: dict[str, str]) -> dict[str, Any] | None:
    """The best citation set's F1 over a fixed top 10's, pooled over ``rows``, with a 95 % interval
    from resampling the exam cases (:mod:`service.evaluation.bootstrap`; a case's questions are drawn
    together, as the folds keep them). The best set is chosen on the same questions, which favours
    it a little. ``None`` without a top-10 set and another choice."""
    names = [n for n in dict.fromkeys(n for r in rows for n in r.sets) if n != "top10"]
    if not rows or not names or any("top10" not in r.sets for r in rows):
        return None
    f1 = {n: [r.sets[n][2] if n in r.sets else 0.0 for r in rows] for n in [*names, "top10"]}
    best = max(names, key=lambda n: sum(f1[n]))
    if sum(f1["top10"]) == 0:
        return None
    interval = ratio_interval(f1[best], f1["top10"], groups=[cases.get(r.qid, r.qid) for r in rows])
    return {"best": best, **interval.to_dict(bar=1.5)}


def print_tables(results: dict[str, Any]) -> None:
    print(f"\nload average {results['load_average']}; {results['started']} - {results['finished']}")
    for fold, when in results.get("scored", {}).items():
        print(f"{fold} scored {when['scored']}, load average {when['load_average']}")
    print("\n| variant / pipeline | questions | R@10 | R@100 | MRR@10 | p50 ms | p95 ms | CPU p50 ms | CPU p95 ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key, entry in results["runs"].items():
        for lang, r in entry.items():
            label = key if lang == "all" else f"{key} ({lang})"
            print(f"| {label} | {r['queries']} | {r['recall@10']:.3f} | {r['recall@100']:.3f} | {r['mrr@10']:.3f} | "
                  f"{r['latency_ms']['p50']:.0f} | {r['latency_ms']['p95']:.0f} | {r['cpu_ms']['p50']:.0f} | "
                  f"{r['cpu_ms']['p95']:.0f} |")
    names = list(dict.fromkeys(n for e in results["runs"].values() for n in e["all"].get("sets", {})))
    print("\n| variant / pipeline | " + " | ".join(f"{n} P/R/F1 (size)" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for key, entry in results["runs"].items():
        sets = entry["all"].get("sets", {})
        cells = [f"{sets[n]['precision']:.3f}/{sets[n]['recall']:.3f}/{sets[n]['f1']:.3f} ({sets[n]['size']:.1f})"
                 if n in sets else "-" for n in names]
        print(f"| {key} | " + " | ".join(cells) + " |")
    for key, ratio in results.get("set_ratio", {}).items():
        print(f"{key}: best set ({ratio['best']}) / top10 = {ratio['ratio']:.2f}x, 95 % interval "
              f"{ratio['low']:.2f}-{ratio['high']:.2f} over {ratio['groups']} cases ({ratio['share_at_least_1.5']:.0%} "
              "of the resamples at 1.5x or more)")
    if results["law_prediction"]:
        print(f"\nlaw prediction on held-out folds: {results['law_prediction']}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
