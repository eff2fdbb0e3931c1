"""``lexsearch worker``: a Celery worker that runs search and ingest jobs."""

from __future__ import annotations

import argparse

from service.commands.common import add_common_options, info, settings_from_args
from service.cpu import limit_library_threads, resolve
from service.logs import configure_json_logging
from service.taskqueue import QUEUE


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("worker", help="run a job worker",
                              description="Run a Celery worker for search and ingest jobs. Start several, on "
                                          "any hosts that reach Redis (jobs.redis_url) and the engine.")
    p.add_argument("--concurrency", type=int, help="jobs at once (default: jobs.worker_concurrency, one per core)")
    p.add_argument("--pool", choices=["prefork", "threads", "solo"],
                   help="execution pool (default: jobs.worker_pool; only prefork enforces time limits)")
    p.add_argument("--hostname", help="worker name (default: lexsearch@<host>)")
    p.add_argument("--redis-url", help="broker and job store (default: jobs.redis_url)")
    p.add_argument("--log-level", default="INFO", help="log level of the JSON logs on stderr (default INFO)")
    add_common_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from workers.tasks import make_celery

    settings = settings_from_args(args)
    if args.redis_url:
        settings = settings.replace(jobs={"redis_url": args.redis_url})
    chosen = {k: v for k, v in {"worker_concurrency": args.concurrency, "worker_pool": args.pool}.items() if v}
    settings = resolve(settings.replace(jobs=chosen) if chosen else settings, role="worker")
    jobs = settings.jobs
    concurrency, pool = jobs.worker_concurrency, jobs.worker_pool
    limit_library_threads(settings.cpu.threads)  # inherited by the pool processes
    configure_json_logging(args.log_level)
    app = make_celery(settings)
    argv = ["worker", "--queues", QUEUE, "--concurrency", str(concurrency), "--pool", pool,
            "--loglevel", args.log_level.upper(), "--without-gossip", "--without-mingle"]
    if args.hostname:
        argv += ["--hostname", args.hostname]
    info(f"lexsearch worker: {pool} pool x {concurrency}, {settings.cpu.threads} computing thread(s) per job, "
         f"queue {QUEUE!r}")
    app.worker_main(argv)
    return 0
