"""``lexsearch serve``: the HTTP API behind gunicorn (threaded workers), with JSON logs.

Each gunicorn worker process builds its own app (and loads its models on first use), so the
processes share nothing but Redis and the engine. By default there is one process per core, each
computing with one core's worth of threads (:mod:`service.cpu`), and a few request threads each.
"""

from __future__ import annotations

import argparse
from typing import Any

from service.commands.common import add_common_options, info, settings_from_args
from service.config import Settings
from service.cpu import limit_library_threads, resolve
from service.logs import configure_json_logging


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run the HTTP API",
                              description="Serve the HTTP API (docs/API.md) with gunicorn. Needs Redis "
                                          "(jobs.redis_url) for keys, rate limits and jobs, and workers "
                                          "(`lexsearch worker`) to run jobs.")
    p.add_argument("--bind", help="host:port to listen on (default: api.bind, 127.0.0.1:8080)")
    p.add_argument("--workers", type=int, help="server processes (default: api.workers, one per core)")
    p.add_argument("--threads", type=int, help="request threads per process (default: api.threads)")
    p.add_argument("--redis-url", help="Redis for jobs, keys and rate limits (default: jobs.redis_url)")
    p.add_argument("--log-level", default="INFO", help="log level of the JSON logs on stderr (default INFO)")
    add_common_options(p)
    p.set_defaults(run=run)


def server_options(settings: Settings, *, log_level: str = "INFO") -> dict[str, Any]:
    """gunicorn settings: threaded workers, a worker timeout above the synchronous time budget."""
    api = settings.api
    return {
        "bind": api.bind,
        "workers": api.workers,
        "threads": api.threads,
        "worker_class": "gthread",
        # A request may use its whole time budget, plus rendering; gunicorn kills workers silent for longer.
        "timeout": int(api.sync_budget_s + 30),
        "graceful_timeout": int(api.sync_budget_s + 10),
        "keepalive": 5,
        "limit_request_line": 8190,
        "accesslog": None,
        "loglevel": log_level.lower(),
        "preload_app": False,
        "proc_name": "lexsearch-api",
    }


def run(args: argparse.Namespace) -> int:
    from gunicorn.app.base import BaseApplication

    from service.api.app import create_app, warm_up

    overrides: dict[str, Any] = {k: v for k, v in {"bind": args.bind, "workers": args.workers,
                                                   "threads": args.threads}.items() if v is not None}
    settings = settings_from_args(args)
    if overrides:
        settings = settings.replace(api=overrides)
    if args.redis_url:
        settings = settings.replace(jobs={"redis_url": args.redis_url})
    settings = resolve(settings, role="serve")
    configure_json_logging(args.log_level)
    options = server_options(settings, log_level=args.log_level)
    limit_library_threads(settings.cpu.threads)  # inherited by the worker processes gunicorn forks

    class Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            limit_library_threads(settings.cpu.threads)
            app = create_app(settings)
            warm_up(app)
            return app

    info(f"lexsearch API on http://{settings.api.bind} ({settings.api.workers} processes x "
         f"{settings.api.threads} request threads, {settings.cpu.threads} computing thread(s) each, "
         f"{settings.cpu.cores} cores; docs at /docs)")
    Server().run()
    return 0
