#!/usr/bin/env python3
"""Benchmark of the HTTP service against the same searches in-process, side by side in one run.

Starts a private redis-server and ``lexsearch serve`` with its default process and thread counts
(``--api-workers``/``--api-threads`` override them) on the cached embedded index of a dataset
(built if missing), and as many in-process search processes as the server has processes, each
holding the same thread budget (:mod:`service.cpu`). Then, for each pipeline (default hybrid and
routed) and each number of concurrent clients (default 1, 4, 16), it alternates short blocks:

* **HTTP**: ``clients`` keep-alive connections send ``POST /v1/search`` (k = 10), each answer read
  whole; latency is the client's, HTTP included;
* **in-process**: the same questions, ``pipeline.run`` in the in-process processes, the clients
  spread over them as evenly as the server's processes can take them (1 client: one thread of one
  process; 4 clients and 2 processes: 2 threads in each).

Blocks alternate HTTP / in-process / in-process / HTTP..., so load from other tenants of the
machine hits both alike. Each question is asked once per mode (once over HTTP, once in-process,
in different processes), so no query cache helps either. The row reports throughput (requests
over the summed block time), p50/p95 latency, the HTTP/in-process throughput ratio, the answers
that were not 200, the load average, and where the milliseconds of an HTTP search went (the
server's ``Server-Timing`` header: auth, body, queue, embed, retrieve, fuse, render, json; "outside
the app" is the client's latency minus the app's time: HTTP parsing, thread hand-offs, network).

Optionally (``--jobs N``) it then starts ``--workers`` ``lexsearch worker`` processes, submits N
jobs at once per job pipeline, and reports jobs/s from the first submit to the last finish.

Example::

    nice -n 10 python scripts/bench_api.py --data data/stard-split --json runs/bench_api.json

The machine, the date and the settings are printed with the numbers.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import multiprocessing as mp
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.config import load_settings  # noqa: E402
from service.cpu import limit_library_threads, resolve  # noqa: E402

SEARCH_STAGES = ("auth", "body", "queue", "embed", "retrieve", "fuse", "search", "render", "json", "app")


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


def load_average() -> float:
    return round(os.getloadavg()[0], 1)


def process_tree(root: int) -> list[int]:
    """``root`` and its descendants (gunicorn's master and its workers)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier]
        tree.extend(frontier)
    return tree


def cpu_seconds(pids: list[int]) -> float:
    """CPU time the processes' threads have used so far (``/proc/<pid>/task/*/schedstat``, nanoseconds)."""
    total = 0
    for pid in pids:
        for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            try:
                total += int(stat.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total / 1e9


def server_timing(value: str) -> dict[str, float]:
    """``{"auth": 0.4, ...}`` from a ``Server-Timing`` header value."""
    out = {}
    for part in value.split(","):
        name, _, rest = part.strip().partition(";dur=")
        if name and rest:
            out[name] = float(rest)
    return out


class Questions:
    """Hands out each question once, so no search of the run repeats an earlier one."""

    def __init__(self, texts: list[str]) -> None:
        self._texts = texts
        self._next = 0

    def take(self, count: int) -> list[str]:
        if self._next + count > len(self._texts):
            raise SystemExit(f"not enough distinct questions: need {self._next + count}, have {len(self._texts)}; "
                             "lower --requests")
        out = self._texts[self._next:self._next + count]
        self._next += count
        return out


# ----- HTTP -------------------------------------------------------------------------------------------


def http_block(port: int, key: str, pipeline: str, questions: list[str], clients: int,
               server: list[int] | None = None) -> dict[str, Any]:
    """Send the questions over ``clients`` keep-alive connections (opened before the clock starts);
    the CPU time of the ``server`` processes (the API, Redis) and of this client is counted too."""
    connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=300) for _ in range(clients)]
    for conn in connections:
        conn.connect()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    pending = iter(questions)
    lock = threading.Lock()
    latencies: list[float] = []
    statuses: list[int] = []
    timings: list[dict[str, float]] = []

    def client(conn: http.client.HTTPConnection) -> None:
        while True:
            with lock:
                question = next(pending, None)
            if question is None:
                return
            body = json.dumps({"query": question, "pipeline": pipeline, "k": 10}, ensure_ascii=False).encode()
            start = time.perf_counter()
            try:
                conn.request("POST", "/v1/search", body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                status, timing = response.status, server_timing(response.getheader("Server-Timing", ""))
            except (OSError, http.client.HTTPException):
                conn.close()  # reconnects on the next request
                status, timing = 599, {}
            elapsed = (time.perf_counter() - start) * 1000
            with lock:
                latencies.append(elapsed)
                statuses.append(status)
                if status == 200:
                    timings.append({**timing, "client": elapsed})

    threads = [threading.Thread(target=client, args=(conn,)) for conn in connections]
    server_cpu, client_cpu = cpu_seconds(server or []), time.process_time()
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    server_cpu, client_cpu = cpu_seconds(server or []) - server_cpu, time.process_time() - client_cpu
    for conn in connections:
        conn.close()
    return {"wall_s": wall, "latencies": latencies, "statuses": statuses, "timings": timings,
            "cpu_s": {"server": server_cpu, "client": client_cpu}}


# ----- in-process -------------------------------------------------------------------------------------


def timed_search(run: Any, question: str, index: str) -> tuple[float, dict[str, float]]:
    """Milliseconds of one ``pipeline.run``, and its stages (``embed``, ``retrieve``...) from its trace."""
    from service.pipelines.base import SearchRequest

    start = time.perf_counter()
    response = run(SearchRequest(question, index=index, k=10))
    elapsed = (time.perf_counter() - start) * 1000
    stages = response.trace.get("timings_ms") or {}
    return elapsed, {k: float(v) for k, v in stages.items() if k != "total" and isinstance(v, int | float)}


def inprocess_main(conn: Any, env: dict[str, str], index: str, pipelines: list[str], warm: list[str]) -> None:
    """One in-process search process: the same settings and thread budget as a server process."""
    os.environ.update(env)
    from service.pipelines.base import SearchRequest
    from service.pipelines.build import Runtime

    settings = resolve(load_settings(), role="serve")
    limit_library_threads(settings.cpu.threads)
    runtime = Runtime(settings)
    runtime.backend.count(index)
    runtime.retrieval(index).embedder.embed_queries(["warm-up"])
    for name in pipelines:
        for question in warm:
            runtime.pipeline(name).run(SearchRequest(question, index=index, k=10))
    conn.send("ready")
    pools: dict[int, ThreadPoolExecutor] = {}  # kept, like the server's threads (and their thread-local state)
    while True:
        message = conn.recv()
        if message is None:
            return
        name, questions, threads = message
        pipeline = runtime.pipeline(name)
        if threads not in pools:
            pools[threads] = ThreadPoolExecutor(threads)
        began, cpu = time.perf_counter(), time.process_time()
        searches = list(pools[threads].map(lambda q, run=pipeline.run: timed_search(run, q, index), questions))
        conn.send((began, time.perf_counter(), searches, time.process_time() - cpu))


class InProcess:
    """The in-process search processes (spawned: no state shared with this one)."""

    def __init__(self, processes: int, env: dict[str, str], index: str, pipelines: list[str],
                 warm: list[str]) -> None:
        context = mp.get_context("spawn")
        self.pipes = []
        self.procs = []
        for n in range(processes):
            parent, child = context.Pipe()
            proc = context.Process(target=inprocess_main, args=(child, env, index, pipelines,
                                                                  warm[n::processes]), daemon=True)
            proc.start()
            self.pipes.append(parent)
            self.procs.append(proc)
        for pipe in self.pipes:
            if pipe.recv() != "ready":
                raise SystemExit("an in-process search process failed to start")

    def block(self, pipeline: str, questions: list[str], clients: int) -> dict[str, Any]:
        """Run the questions with ``clients`` concurrent searches spread over the processes."""
        used = min(clients, len(self.pipes))
        shares = [clients // used + (1 if n < clients % used else 0) for n in range(used)]
        deal = [p for p in range(used) for _ in range(shares[p])]  # questions in proportion to threads
        parts: list[list[str]] = [[] for _ in range(used)]
        for n, question in enumerate(questions):
            parts[deal[n % len(deal)]].append(question)
        for pipe, part, threads in zip(self.pipes, parts, shares, strict=False):
            pipe.send((pipeline, part, threads))
        results = [pipe.recv() for pipe in self.pipes[:used]]
        began, ended = min(r[0] for r in results), max(r[1] for r in results)
        searches = [search for r in results for search in r[2]]
        return {"wall_s": ended - began, "latencies": [ms for ms, _ in searches],
                "timings": [{**stages, "search": ms} for ms, stages in searches],
                "cpu_s": {"in_process": sum(r[3] for r in results)}}

    def close(self) -> None:
        for pipe in self.pipes:
            pipe.send(None)
        for proc in self.procs:
            proc.join(timeout=30)


# ----- the run ----------------------------------------------------------------------------------------


def blocks(total: int, size: int) -> Iterator[int]:
    while total > 0:
        yield min(size, total)
        total -= size


def compare_row(port: int, key: str, server: list[int], inproc: InProcess, questions: Questions, pipeline: str,
                clients: int, requests: int, block: int) -> dict[str, Any]:
    """Alternating HTTP and in-process blocks of the same questions; one table row."""
    load_before = load_average()
    http_rows: list[dict[str, Any]] = []
    local_rows: list[dict[str, Any]] = []
    for n, size in enumerate(blocks(requests, block)):
        chunk = questions.take(size)
        order = ("http", "local") if n % 2 == 0 else ("local", "http")
        for mode in order:
            if mode == "http":
                http_rows.append(http_block(port, key, pipeline, chunk, clients, server))
            else:
                local_rows.append(inproc.block(pipeline, chunk, clients))
    http_lat = [ms for r in http_rows for ms in r["latencies"]]
    local_lat = [ms for r in local_rows for ms in r["latencies"]]
    statuses = [s for r in http_rows for s in r["statuses"]]
    http_rps = len(http_lat) / sum(r["wall_s"] for r in http_rows)
    local_rps = len(local_lat) / sum(r["wall_s"] for r in local_rows)
    stages = mean_stages([t for r in http_rows for t in r["timings"]], (*SEARCH_STAGES, "client"))
    if stages:
        stages["outside_app"] = round(stages["client"] - stages["app"], 2)
    cpu_ms = {part: round(1000 * sum(r["cpu_s"][part] for r in rows) / len(http_lat), 2)
              for rows, part in ((http_rows, "server"), (http_rows, "client"), (local_rows, "in_process"))}
    return {
        "pipeline": pipeline, "clients": clients, "requests": len(http_lat), "cpu_ms_per_search": cpu_ms,
        "http": {"rps": round(http_rps, 2), "p50_ms": round(percentile(http_lat, 50), 1),
                 "p95_ms": round(percentile(http_lat, 95), 1)},
        "in_process": {"rps": round(local_rps, 2), "p50_ms": round(percentile(local_lat, 50), 1),
                       "p95_ms": round(percentile(local_lat, 95), 1)},
        "ratio": round(http_rps / local_rps, 3),
        "non_200": sum(1 for s in statuses if s != 200), "5xx": sum(1 for s in statuses if s >= 500),
        "load": [load_before, load_average()], "http_stages_ms": stages,
        "in_process_stages_ms": mean_stages([t for r in local_rows for t in r["timings"]], SEARCH_STAGES),
    }


def mean_stages(timings: list[dict[str, float]], names: tuple[str, ...]) -> dict[str, float]:
    """The mean milliseconds of each stage over the searches (0 where a search had no such stage)."""
    if not timings:
        return {}
    return {name: round(statistics.fmean(t.get(name, 0.0) for t in timings), 2) for name in names
            if any(name in t for t in timings)}


def job_run(url: str, key: str, store: Any, pipeline: str, questions: list[str]) -> dict[str, Any]:
    """Submit every question as a job at once; time until the last one finished."""
    import requests

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
    wait_until(lambda: all(store.get(j).status.final for j in ids), 3600, f"{len(ids)} {pipeline} jobs")
    records = [store.get(j) for j in ids]
    finished = max(r.finished_at or 0 for r in records)
    per_job = [((r.finished_at or 0) - r.created_at) * 1000 for r in records]
    return {"pipeline": pipeline, "jobs": len(ids), "jobs_per_s": round(len(ids) / (finished - start), 2),
            "p50_ms": round(percentile(per_job, 50), 1), "p95_ms": round(percentile(per_job, 95), 1),
            "succeeded": sum(1 for r in records if r.status.value == "succeeded"),
            "results_written": sum(r.result_writes for r in records)}


def print_tables(rows: list[dict[str, Any]], jobs: list[dict[str, Any]], workers: int) -> None:
    print("\n| pipeline | clients | requests | HTTP req/s | HTTP p50 (ms) | HTTP p95 (ms) | in-process req/s | "
          "in-process p50 (ms) | in-process p95 (ms) | HTTP / in-process | non-200 | load avg |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        h, p = r["http"], r["in_process"]
        print(f"| {r['pipeline']} | {r['clients']} | {r['requests']} | {h['rps']} | {h['p50_ms']} | {h['p95_ms']} | "
              f"{p['rps']} | {p['p50_ms']} | {p['p95_ms']} | {r['ratio']:.2f} | {r['non_200']} | "
              f"{r['load'][0]}–{r['load'][1]} |")
    print("\nCPU time per search (ms): the API's processes and Redis, the HTTP client, and in-process:\n")
    print("| pipeline | clients | HTTP: server + Redis | HTTP: client | in-process | HTTP server / in-process |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        cpu = r["cpu_ms_per_search"]
        print(f"| {r['pipeline']} | {r['clients']} | {cpu['server']} | {cpu['client']} | {cpu['in_process']} | "
              f"{cpu['server'] / cpu['in_process']:.2f} |")
    print("\nWhere an HTTP search's milliseconds went (means; Server-Timing of the server, client latency):\n")
    names = [*SEARCH_STAGES, "outside_app", "client"]
    print("| pipeline | clients | mode | " + " | ".join(names) + " |")
    print("|---|---:|---|" + "---:|" * len(names))
    for r in rows:
        for mode, stages in (("HTTP", r["http_stages_ms"]), ("in-process", r["in_process_stages_ms"])):
            print(f"| {r['pipeline']} | {r['clients']} | {mode} | "
                  + " | ".join(str(stages.get(n, "")) for n in names) + " |")
    if jobs:
        print("\n| job pipeline | jobs | workers | jobs/s | p50 submit→done (ms) | p95 (ms) | succeeded | "
              "results written |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for j in jobs:
            print(f"| {j['pipeline']} | {j['jobs']} | {workers} | {j['jobs_per_s']} | {j['p50_ms']} | {j['p95_ms']} | "
                  f"{j['succeeded']} | {j['results_written']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="data/stard-split", help="dataset folder (its index is used)")
    parser.add_argument("--pipelines", default="hybrid,routed")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--requests", type=int, default=96,
                        help="searches per pipeline, client count and mode (HTTP, in-process)")
    parser.add_argument("--block", type=int, default=16,
                        help="searches per block (at least 3 x clients); blocks alternate HTTP and in-process")
    parser.add_argument("--warm-up", type=int, default=8, help="searches per pipeline and process before timing")
    parser.add_argument("--api-workers", type=int, default=0, help="server processes (default: api.workers)")
    parser.add_argument("--api-threads", type=int, default=0, help="request threads (default: api.threads)")
    parser.add_argument("--jobs", type=int, default=0, help="jobs per job pipeline (0 = no job benchmark)")
    parser.add_argument("--job-pipelines", default="hybrid,agentic")
    parser.add_argument("--workers", type=int, default=2, help="worker processes for jobs (concurrency 1 each)")
    parser.add_argument("--model", default="", help="trained model folder for agentic/routed (default: none)")
    parser.add_argument("--seed", type=int, default=13, help="shuffles the questions")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()

    from service.apikeys import ApiKeyStore
    from service.corpus.datasets import Dataset
    from service.evaluation.dataset_index import ensure_dataset_index
    from service.jobs import JobStore
    from service.pipelines.build import Runtime
    from service.redisconn import connect

    settings = load_settings()
    dataset = Dataset(args.data)
    index = ensure_dataset_index(Runtime(settings), dataset)
    texts = list(dict.fromkeys(q.text for split in dataset.splits() for q in dataset.queries(split)))
    random.Random(args.seed).shuffle(texts)
    questions = Questions(texts)
    pipelines = args.pipelines.split(",")
    levels = [int(c) for c in args.clients.split(",")]

    work = Path(tempfile.mkdtemp(prefix="bench-api-"))
    redis_port, api_port = free_port(), free_port()
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEXSEARCH_") or k.startswith(
        ("LEXSEARCH_CPU_", "LEXSEARCH_EMBEDDER_"))}
    env.update({
        "LEXSEARCH_INDEX_ROOT": str(Path(settings.index.root).resolve()), "LEXSEARCH_INDEX_NAME": index,
        "LEXSEARCH_EMBEDDER_CACHE_DIR": str(Path(settings.embedder.cache_dir).resolve()),
        "LEXSEARCH_JOBS_REDIS_URL": redis_url, "LEXSEARCH_API_SYNC_BUDGET_S": "120",
        "LEXSEARCH_API_BIND": f"127.0.0.1:{api_port}", "LEXSEARCH_JOBS_WORKER_CONCURRENCY": "1",
        "LEXSEARCH_PROGRESS": "0",
    })
    if args.api_workers:
        env["LEXSEARCH_API_WORKERS"] = str(args.api_workers)
    if args.api_threads:
        env["LEXSEARCH_API_THREADS"] = str(args.api_threads)
    if args.model:
        env["LEXSEARCH_INDEX_MODEL_DIR"] = str(Path(args.model).resolve())
    served = resolve(load_settings(environ=env), role="serve")
    processes: list[subprocess.Popen[bytes]] = [subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--dir", str(work), "--appendonly",
         "yes", "--save", "", "--logfile", str(work / "redis.log")])]
    url = f"http://127.0.0.1:{api_port}"
    inproc: InProcess | None = None
    rows: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    started = datetime.datetime.now(datetime.UTC)
    try:
        wait_until(lambda: connect(redis_url).ping(), 30, "redis")
        _, key = ApiKeyStore(connect(redis_url)).create(("*",), rate_per_min=10_000_000)
        serve_log = open(work / "serve.log", "wb")  # noqa: SIM115
        processes.append(subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--log-level", "WARNING"],
                                          cwd=ROOT, env=env, stdout=serve_log, stderr=serve_log))
        warm = questions.take(args.warm_up * served.api.workers)
        inproc = InProcess(served.api.workers, env, index, pipelines, warm)

        def ready() -> bool:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", api_port, timeout=5)
                conn.request("GET", "/ready")
                return conn.getresponse().status == 200
            except OSError:
                return False

        wait_until(ready, 600, "lexsearch serve")
        server = [*process_tree(processes[1].pid), processes[0].pid]  # the API's processes and Redis
        for pipeline in pipelines:  # warm-up: every server process loads its pipeline
            http_block(api_port, key, pipeline, questions.take(args.warm_up * served.api.workers),
                       served.api.workers)
            for clients in levels:
                row = compare_row(api_port, key, server, inproc, questions, pipeline, clients, args.requests,
                                  max(args.block, 3 * clients))
                rows.append(row)
                print(json.dumps(row), flush=True)

        if args.jobs:
            for n in range(args.workers):
                log = open(work / f"worker{n}.log", "wb")  # noqa: SIM115
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "service.cli", "worker", "--concurrency", "1", "--hostname",
                     f"bench{n}@%h", "--log-level", "WARNING"], cwd=ROOT, env=env, stdout=log, stderr=log))
            store = JobStore(connect(redis_url), load_settings(environ={}).jobs)
            for pipeline in args.job_pipelines.split(","):
                job_run(url, key, store, pipeline, questions.take(2 * args.workers))  # warm-up
                row = job_run(url, key, store, pipeline, questions.take(args.jobs))
                jobs.append(row)
                print(json.dumps(row), flush=True)
    finally:
        if inproc is not None:
            inproc.close()
        for proc in reversed(processes):
            proc.terminate()
        for proc in processes:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)

    meta = {"started": started.isoformat(timespec="seconds"),
            "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "index": index,
            "data": args.data, "cores": served.cpu.cores, "python": platform.python_version(),
            "api_workers": served.api.workers, "api_threads": served.api.threads,
            "sync_threads": served.api.sync_threads, "compute_threads": served.cpu.threads,
            "embedder_threads": served.embedder.threads, "model": args.model or "none"}
    print(f"\n# {json.dumps(meta)}")
    print_tables(rows, jobs, args.workers)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"meta": meta, "searches": rows, "jobs": jobs}, indent=1),
                                   encoding="utf-8")


if __name__ == "__main__":
    main()
