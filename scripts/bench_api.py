#!/usr/bin/env python3
"""Benchmark of the HTTP service: synchronous /v1/search and asynchronous jobs, over real HTTP.

Starts a private redis-server, ``lexsearch serve`` (gunicorn, --api-workers x --api-threads) on
the cached embedded index of a dataset (built if missing), then:

1. for each pipeline (default hybrid and routed) and each number of concurrent clients (default
   1, 4, 16): sends --requests searches with distinct questions (no two requests of the whole
   run repeat a question, so no cache helps) and reports throughput, p50 and p95 latency as seen
   by the client, and the share of answers that were not 200;
2. starts --workers ``lexsearch worker`` processes (concurrency 1 each), submits --jobs jobs at
   once per job pipeline (default hybrid and agentic), and reports jobs/s from the first submit to
   the last finish, plus p50/p95 of each job's time from submit to finish.

Example::

    python scripts/bench_api.py --data data/stard-split --json /tmp/bench_api.json

The machine, the date and the settings are printed with the numbers.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.apikeys import ApiKeyStore  # noqa: E402
from service.config import load_settings  # noqa: E402
from service.corpus.datasets import Dataset  # noqa: E402
from service.evaluation.dataset_index import ensure_dataset_index  # noqa: E402
from service.jobs import JobStore  # noqa: E402
from service.pipelines.build import Runtime  # noqa: E402
from service.redisconn import connect  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def wait_until(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


class Questions:
    """Hands out each question once, so no request of the run repeats an earlier one."""

    def __init__(self, texts: list[str]) -> None:
        self._texts = texts
        self._next = 0
        self._lock = threading.Lock()

    def take(self, count: int) -> list[str]:
        with self._lock:
            if self._next + count > len(self._texts):
                raise SystemExit(f"not enough distinct questions: need {self._next + count}, have {len(self._texts)}")
            out = self._texts[self._next:self._next + count]
            self._next += count
            return out


def search_level(url: str, key: str, pipeline: str, questions: list[str], clients: int) -> dict[str, Any]:
    """Send the questions with ``clients`` concurrent keep-alive clients; latency per request."""
    latencies: list[float] = []
    statuses: list[int] = []
    lock = threading.Lock()
    local = threading.local()

    def one(question: str) -> None:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
            session.headers["Authorization"] = f"Bearer {key}"
        start = time.perf_counter()
        response = session.post(f"{url}/v1/search", json={"query": question, "pipeline": pipeline, "k": 10},
                                timeout=300)
        elapsed = (time.perf_counter() - start) * 1000
        with lock:
            latencies.append(elapsed)
            statuses.append(response.status_code)

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, questions))
    wall = time.perf_counter() - start
    return {"pipeline": pipeline, "clients": clients, "requests": len(questions),
            "throughput_rps": round(len(questions) / wall, 2),
            "p50_ms": round(percentile(latencies, 50), 1), "p95_ms": round(percentile(latencies, 95), 1),
            "non_200": sum(1 for s in statuses if s != 200)}


def job_run(url: str, key: str, store: JobStore, pipeline: str, questions: list[str]) -> dict[str, Any]:
    """Submit every question as a job at once; time until the last one finished."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {key}"

    def submit(question: str) -> str:
        response = session.post(f"{url}/v1/jobs", json={"query": question, "pipeline": pipeline, "k": 10},
                                timeout=60)
        response.raise_for_status()
        return str(response.json()["job_id"])

    start = time.time()
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(submit, questions))

    def all_final() -> bool:
        return all(store.get(j).status.final for j in ids)  # type: ignore[union-attr]

    wait_until(all_final, 1800, f"{len(ids)} {pipeline} jobs")
    records = [store.get(j) for j in ids]
    finished = max(r.finished_at or 0 for r in records)  # type: ignore[union-attr]
    per_job = [((r.finished_at or 0) - r.created_at) * 1000 for r in records]  # type: ignore[union-attr]
    return {"pipeline": pipeline, "jobs": len(ids), "jobs_per_s": round(len(ids) / (finished - start), 2),
            "p50_ms": round(percentile(per_job, 50), 1), "p95_ms": round(percentile(per_job, 95), 1),
            "succeeded": sum(1 for r in records if r.status.value == "succeeded"),  # type: ignore[union-attr]
            "results_written": sum(r.result_writes for r in records)}  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="data/stard-split", help="dataset folder (its index is used)")
    parser.add_argument("--splits", default="fit,dev", help="query splits supplying distinct questions")
    parser.add_argument("--pipelines", default="hybrid,routed")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--requests", type=int, default=120, help="searches per pipeline and client count")
    parser.add_argument("--job-pipelines", default="hybrid,agentic")
    parser.add_argument("--jobs", type=int, default=150, help="jobs per job pipeline")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (concurrency 1 each)")
    parser.add_argument("--api-workers", type=int, default=2)
    parser.add_argument("--api-threads", type=int, default=8)
    parser.add_argument("--model", default="", help="trained model folder for agentic/routed (default: none)")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()

    settings = load_settings()
    runtime = Runtime(settings)
    dataset = Dataset(args.data)
    index = ensure_dataset_index(runtime, dataset)
    texts = list(dict.fromkeys(q.text for split in args.splits.split(",") for q in dataset.queries(split)))
    questions = Questions(texts)

    work = Path(tempfile.mkdtemp(prefix="bench-api-"))
    redis_port, api_port = free_port(), free_port()
    redis_proc = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--dir",
                                   str(work), "--appendonly", "yes", "--save", "", "--logfile",
                                   str(work / "redis.log")])
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEXSEARCH_")}
    env.update({
        "LEXSEARCH_INDEX_ROOT": str(Path(settings.index.root).resolve()), "LEXSEARCH_INDEX_NAME": index,
        "LEXSEARCH_EMBEDDER_CACHE_DIR": str(Path(settings.embedder.cache_dir).resolve()),
        "LEXSEARCH_JOBS_REDIS_URL": redis_url, "LEXSEARCH_API_SYNC_BUDGET_S": "120",
        "LEXSEARCH_API_BIND": f"127.0.0.1:{api_port}", "LEXSEARCH_API_WORKERS": str(args.api_workers),
        "LEXSEARCH_API_THREADS": str(args.api_threads), "LEXSEARCH_API_SYNC_THREADS": str(args.api_threads),
        "LEXSEARCH_JOBS_WORKER_CONCURRENCY": "1", "LEXSEARCH_PROGRESS": "0",
    })
    if args.model:
        env["LEXSEARCH_INDEX_MODEL_DIR"] = str(Path(args.model).resolve())
    processes: list[subprocess.Popen[bytes]] = [redis_proc]
    url = f"http://127.0.0.1:{api_port}"
    try:
        wait_until(lambda: connect(redis_url).ping(), 30, "redis")
        _, key = ApiKeyStore(connect(redis_url)).create(("*",), rate_per_min=10_000_000)
        serve_log = open(work / "serve.log", "wb")  # noqa: SIM115
        processes.append(subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--log-level", "WARNING"],
                                          cwd=ROOT, env=env, stdout=serve_log, stderr=serve_log))

        def ready() -> bool:
            try:
                return requests.get(f"{url}/ready", timeout=5).status_code == 200
            except requests.RequestException:
                return False

        wait_until(ready, 600, "lexsearch serve")
        results: dict[str, Any] = {"searches": [], "jobs": []}
        for pipeline in args.pipelines.split(","):
            search_level(url, key, pipeline, questions.take(2 * args.api_workers * args.api_threads), 8)  # warm-up
            for clients in (int(c) for c in args.clients.split(",")):
                row = search_level(url, key, pipeline, questions.take(args.requests), clients)
                results["searches"].append(row)
                print(json.dumps(row), flush=True)

        for n in range(args.workers):
            log = open(work / f"worker{n}.log", "wb")  # noqa: SIM115
            processes.append(subprocess.Popen([sys.executable, "-m", "service.cli", "worker", "--concurrency", "1",
                                               "--hostname", f"bench{n}@%h", "--log-level", "WARNING"],
                                              cwd=ROOT, env=env, stdout=log, stderr=log))
        store = JobStore(connect(redis_url), load_settings(environ={}).jobs)
        for pipeline in args.job_pipelines.split(","):
            job_run(url, key, store, pipeline, questions.take(2 * args.workers))  # warm-up: models, index
            row = job_run(url, key, store, pipeline, questions.take(args.jobs))
            results["jobs"].append(row)
            print(json.dumps(row), flush=True)
    finally:
        for proc in reversed(processes):
            proc.terminate()
        for proc in processes:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)

    by_key = {(r["pipeline"], r["clients"]): r for r in results["searches"]}
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "index": index, "data": args.data,
            "cpus": os.cpu_count(), "python": platform.python_version(), "api_workers": args.api_workers,
            "api_threads": args.api_threads, "workers": args.workers, "model": args.model or "none"}
    print(f"\n# {meta}")
    print("\n| pipeline | clients | requests | throughput (req/s) | p50 (ms) | p95 (ms) | throughput vs 1 client | "
          "non-200 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in results["searches"]:
        base = by_key.get((row["pipeline"], 1))
        ratio = row["throughput_rps"] / base["throughput_rps"] if base else float("nan")
        print(f"| {row['pipeline']} | {row['clients']} | {row['requests']} | {row['throughput_rps']} | "
              f"{row['p50_ms']} | {row['p95_ms']} | {ratio:.2f}x | {row['non_200']} |")
    pipelines = args.pipelines.split(",")
    if len(pipelines) == 2:
        first, second = pipelines
        print(f"\n| clients | p50 {second} / {first} | throughput {second} / {first} |")
        print("|---:|---:|---:|")
        for clients in (int(c) for c in args.clients.split(",")):
            a, b = by_key.get((first, clients)), by_key.get((second, clients))
            if a and b:
                latency, rate = b["p50_ms"] / a["p50_ms"], b["throughput_rps"] / a["throughput_rps"]
                print(f"| {clients} | {latency:.2f} | {rate:.2f} |")
    print("\n| job pipeline | jobs | workers | jobs/s | p50 submit→done (ms) | p95 (ms) | succeeded | "
          "results written |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in results["jobs"]:
        print(f"| {row['pipeline']} | {row['jobs']} | {args.workers} | {row['jobs_per_s']} | {row['p50_ms']} | "
              f"{row['p95_ms']} | {row['succeeded']} | {row['results_written']} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, **results}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
