"""Are the rankings of every pipeline the same, bit for bit, under two versions of the code?

For refactors that must not change behaviour, and for changes that alter rankings on purpose (to
see exactly where). Three commands:

* ``dump``: run every pipeline on the first ``--limit`` questions of each dataset split with the
  code that ``import service`` finds (set ``PYTHONPATH``), and write doc ids and scores per
  question, per pipeline, per dataset to a JSON file;
* ``compare A.json B.json``: a per-dataset, per-pipeline summary of what differs (exit 1 if anything);
* ``run --base REV``: ``dump`` with REV checked out in a detached git worktree (``PYTHONPATH``
  pointing at it), ``dump`` with this checkout, then ``compare``.

A dataset is ``PATH[:SPLIT[:MODEL_DIR]]`` (split ``dev`` by default); with a model folder the
learned pipelines use it, without one they run untrained. Example::

    python scripts/check_rankings.py run --base c1ecc48 --limit 40 \\
        --dataset tests/fixtures/mini:dev \\
        --dataset data/stard-split:dev:models/stard --dataset data/gerlayqa-split:dev:models/gerlayqa \\
        --dataset ../shared/data/coliee-en:dev:models/coliee --dataset ../shared/data/swiss-statutes:dev

Both sides search the same index folders (``--index-root``, built by the first side that needs
them): the embedded engine builds HNSW graphs with several threads, so two builds of a large corpus
need not be identical, and the check is about query-time behaviour. ``--separate-indices`` gives
each side its own. ``run`` sets ``PYTHONHASHSEED=0`` for both sides. A question a pipeline refuses
(for example one longer than ``retrieval.max_query_chars``) is recorded with its error code, and
compared like a ranking.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PIPELINES = ("bm25", "dense", "hybrid", "hybrid+rerank", "agentic", "routed")
REPO = Path(__file__).resolve().parents[1]


# ----- dump ------------------------------------------------------------------------------------


def parse_dataset(spec: str) -> dict[str, str]:
    """``PATH[:SPLIT[:MODEL_DIR]]`` as ``{"path", "split", "models"}`` (paths made absolute)."""
    path, _, rest = spec.partition(":")
    split, _, models = rest.partition(":")
    if not path:
        raise SystemExit(f"check_rankings: error: bad dataset {spec!r}; use PATH[:SPLIT[:MODEL_DIR]]")
    return {"path": str(Path(path).resolve()), "split": split or "dev",
            "models": str(Path(models).resolve()) if models else ""}


def _ensure_dataset_index() -> Any:
    # The builder moved from service.commands to service.evaluation; either version may be on the path.
    for module in ("service.evaluation.dataset_index", "service.commands.dataset_index"):
        try:
            return importlib.import_module(module).ensure_dataset_index
        except ModuleNotFoundError:
            continue
    raise SystemExit("check_rankings: error: no ensure_dataset_index in the code on PYTHONPATH")


def dump(datasets: list[dict[str, str]], pipelines: list[str], *, limit: int, k: int,
         index_root: str) -> dict[str, Any]:
    """Rankings of ``pipelines`` on each dataset, with the code that ``import service`` finds."""
    from service.config import load_settings
    from service.corpus.datasets import Dataset
    from service.errors import LexsearchError
    from service.pipelines.base import SearchRequest
    from service.pipelines.build import Runtime

    ensure_dataset_index = _ensure_dataset_index()
    out: dict[str, Any] = {"code": _describe_code(), "k": k, "limit": limit, "datasets": {}}
    for spec in datasets:
        settings = load_settings(overrides={"index": {"root": index_root, "model_dir": spec["models"]}})
        runtime = Runtime(settings)
        dataset = Dataset(spec["path"])
        queries = dataset.queries(spec["split"])[:limit]
        index = ensure_dataset_index(runtime, dataset)
        label = f"{dataset.path.name}:{spec['split']}"
        entry: dict[str, Any] = {"spec": spec, "index": index, "pipelines": {}}
        for name in pipelines:
            started = time.perf_counter()
            pipeline = runtime.pipeline(name)
            rows: dict[str, Any] = {}
            for query in queries:
                request = SearchRequest(query=query.text, index=index, k=k, lang=query.lang, qid=query.qid)
                try:
                    response = pipeline.run(request)
                except LexsearchError as exc:
                    rows[query.qid] = {"error": exc.code}
                    continue
                row: dict[str, Any] = {"hits": [[h.doc_id, h.score] for h in response.hits]}
                if response.returned is not None:
                    row["returned"] = response.returned
                tier = (response.trace.get("routing") or {}).get("tier")
                if tier is not None:
                    row["tier"] = tier
                rows[query.qid] = row
            entry["pipelines"][name] = rows
            print(f"{label} {name}: {len(rows)} questions in {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)
        out["datasets"][label] = entry
    return out


def _describe_code() -> dict[str, str]:
    import service

    root = Path(service.__file__).resolve().parents[1]
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        rev, dirty = "unknown", False
    return {"root": str(root), "rev": rev + (" (with uncommitted changes)" if dirty else "")}


# ----- compare ---------------------------------------------------------------------------------


def compare_rows(a: dict[str, Any], b: dict[str, Any]) -> str:
    """'' when two answers to one question are identical, else what differs first."""
    if a == b:
        return ""
    if "error" in a or "error" in b:
        return f"error {a.get('error', '-')} vs {b.get('error', '-')}"
    ids_a, ids_b = [d for d, _ in a["hits"]], [d for d, _ in b["hits"]]
    if ids_a != ids_b:
        at = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b, strict=False)) if x != y),
                  min(len(ids_a), len(ids_b)))
        return f"order differs from rank {at + 1} ({len(ids_a)} vs {len(ids_b)} hits)"
    if a.get("tier") != b.get("tier"):
        return f"tier {a.get('tier')} vs {b.get('tier')}"
    if a.get("returned") != b.get("returned"):
        return f"returned {a.get('returned')} vs {b.get('returned')}"
    worst = max(abs(x[1] - y[1]) for x, y in zip(a["hits"], b["hits"], strict=True))
    return f"same order, scores differ (max |diff| {worst:.3g})"


def compare(first: dict[str, Any], second: dict[str, Any], *, examples: int = 3) -> tuple[list[str], bool]:
    """A readable report and whether everything is identical."""
    lines = [f"A: {first['code']['rev']} ({first['code']['root']})",
             f"B: {second['code']['rev']} ({second['code']['root']})", ""]
    header = f"{'dataset':<28} {'pipeline':<14} {'questions':>9} {'identical':>9} {'order':>6} {'scores':>6} " \
             f"{'other':>6}"
    lines += [header, "-" * len(header)]
    same = True
    details: list[str] = []
    for label in sorted(set(first["datasets"]) | set(second["datasets"])):
        da, db = first["datasets"].get(label), second["datasets"].get(label)
        if da is None or db is None:
            lines.append(f"{label:<28} only in {'B' if da is None else 'A'}")
            same = False
            continue
        for name in sorted(set(da["pipelines"]) | set(db["pipelines"]), key=_pipeline_order):
            pa, pb = da["pipelines"].get(name), db["pipelines"].get(name)
            if pa is None or pb is None:
                lines.append(f"{label:<28} {name:<14} only in {'B' if pa is None else 'A'}")
                same = False
                continue
            counts = {"identical": 0, "order": 0, "scores": 0, "other": 0}
            shown = 0
            for qid in sorted(set(pa) | set(pb)):
                if qid not in pa or qid not in pb:
                    why = f"question only in {'B' if qid not in pa else 'A'}"
                else:
                    why = compare_rows(pa[qid], pb[qid])
                kind = ("identical" if not why else "order" if why.startswith("order") else
                        "scores" if why.startswith("same order") else "other")
                counts[kind] += 1
                if why and shown < examples:
                    details.append(f"  {label} {name} {qid}: {why}")
                    shown += 1
            total = sum(counts.values())
            same &= counts["identical"] == total
            lines.append(f"{label:<28} {name:<14} {total:>9} {counts['identical']:>9} {counts['order']:>6} "
                         f"{counts['scores']:>6} {counts['other']:>6}")
    lines += ["", "bit-identical: every ranking, score, tier and cut" if same else "DIFFERENCES (first examples):"]
    return lines + details, same


def _pipeline_order(name: str) -> tuple[int, str]:
    return (PIPELINES.index(name) if name in PIPELINES else len(PIPELINES), name)


# ----- run: both sides -------------------------------------------------------------------------


def checkout(rev: str, work: Path) -> Path:
    """A detached worktree of ``rev`` under ``work`` (made once, reused)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"], capture_output=True,
                         text=True, check=True).stdout.strip()
    path = work / f"checkout-{sha[:12]}"
    if not path.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), sha], check=True,
                       stdout=subprocess.DEVNULL)
    return path


def dump_with(code: Path, out: Path, args: argparse.Namespace, index_root: Path) -> None:
    """Run ``dump`` in a subprocess that imports ``service`` from ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code), "PYTHONHASHSEED": "0"}
    command = [sys.executable, str(Path(__file__).resolve()), "dump", "--out", str(out), "--limit", str(args.limit),
               "--k", str(args.k), "--index-root", str(index_root), "--pipelines", ",".join(args.pipelines)]
    for spec in args.dataset:
        command += ["--dataset", spec]
    print(f"== dump with {code}", file=sys.stderr, flush=True)
    subprocess.run(command, env=env, cwd=str(code), check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("dump", "run"):
        p = sub.add_parser(name)
        p.add_argument("--dataset", action="append", required=True, metavar="PATH[:SPLIT[:MODEL_DIR]]")
        p.add_argument("--limit", type=int, default=40, help="questions per dataset (default 40)")
        p.add_argument("--k", type=int, default=100, help="ranking depth (default 100)")
        p.add_argument("--pipelines", default=",".join(PIPELINES), type=lambda s: [x for x in s.split(",") if x])
        p.add_argument("--index-root", help="index folder (default: WORK/indices)")
    sub.choices["dump"].add_argument("--out", required=True, help="JSON file to write")
    run = sub.choices["run"]
    run.add_argument("--base", required=True, help="the revision to compare with (checked out in a worktree)")
    run.add_argument("--head", default="", help="the other revision (default: this checkout as it is)")
    run.add_argument("--work", default=str(REPO / "var" / "check-rankings"), help="dumps, checkouts and indices")
    run.add_argument("--separate-indices", action="store_true", help="each side builds its own indices")
    cmp = sub.add_parser("compare")
    cmp.add_argument("first")
    cmp.add_argument("second")
    cmp.add_argument("--examples", type=int, default=3, help="differing questions shown per pipeline (default 3)")
    args = parser.parse_args(argv)

    if args.command == "compare":
        lines, same = compare(json.loads(Path(args.first).read_text(encoding="utf-8")),
                              json.loads(Path(args.second).read_text(encoding="utf-8")), examples=args.examples)
        print("\n".join(lines))
        return 0 if same else 1
    for spec in args.dataset:
        if not Path(parse_dataset(spec)["path"]).is_dir():
            parser.error(f"no dataset folder {spec.partition(':')[0]}")
    if args.command == "dump":
        result = dump([parse_dataset(s) for s in args.dataset], args.pipelines, limit=args.limit, k=args.k,
                      index_root=args.index_root or str(REPO / "var" / "check-rankings" / "indices"))
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, ensure_ascii=False) + "\n", encoding="utf-8")
        return 0
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    args.dataset = [":".join(parse_dataset(s).values()).rstrip(":") for s in args.dataset]
    sides = {"base": checkout(args.base, work), "head": checkout(args.head, work) if args.head else REPO}
    shared = Path(args.index_root).resolve() if args.index_root else work / "indices"
    dumps = {}
    for side, code in sides.items():
        dumps[side] = work / f"{side}.json"
        dump_with(code, dumps[side], args, work / f"indices-{side}" if args.separate_indices else shared)
    lines, same = compare(json.loads(dumps["base"].read_text(encoding="utf-8")),
                          json.loads(dumps["head"].read_text(encoding="utf-8")))
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
