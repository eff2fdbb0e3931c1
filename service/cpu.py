"""How many processes and threads each part of lexsearch runs: sized from the cores, in one place.

A command runs some processes side by side (``lexsearch serve``: ``api.workers``; ``lexsearch
worker``: its concurrency; every other command: one). Each process gets an equal share of the
cores for its computing threads, and every library that keeps a thread pool is held to that
share, so the processes and their threads together never ask for more cores than there are.
Oversubscription is far worse than idle cores here: BLAS and OpenMP threads spin while they wait
for each other, and a spinning thread that lost its core stalls the whole pool (on a busy 2-core
machine, a 2-thread USE query embedding took 230 ms against 17 ms with one thread).

=========================  ==========================================  =====================================
setting                    0 (the default) means                       used by
=========================  ==========================================  =====================================
``cpu.cores``              the cores this process may run on (CPU      everything below
                           affinity, a container's CPU quota)
``api.workers``            ``cpu.cores`` processes                     gunicorn (``lexsearch serve``)
``jobs.worker_concurrency`` ``cpu.cores`` jobs at once                 Celery (``lexsearch worker``)
``cpu.threads``            ``cpu.cores`` / the command's processes     OpenMP (faiss builds, LightGBM, e5,
                           (at least 1)                                torch), via :func:`limit_library_threads`
(none)                     BLAS: always :data:`BLAS_THREADS` (1)       numpy/scipy outside the embedders
``embedder.threads``       ``cpu.threads``                             the embedding model
``agents.workers``         1 (offline rewriters); with an LLM,         a round's rewrites in-process
                           ``llm.max_concurrency`` (they wait for it)
``api.sync_threads``       2 x ``api.threads``                         searches at once per server process
=========================  ==========================================  =====================================

The offline rewriters run one after the other: they are Python holding the GIL, so threads only
added thread starts and contention (GerLayQA dev, full agentic: 30 ms median one after the other
against 55 ms on two threads, the same rankings). An LLM rewriter waits on the network, so a round's
LLM calls run side by side.

``api.threads`` (4) is not derived: request threads mostly wait (for a search thread, for Redis,
for the client), and the work they wait for is bounded by the threads above.

BLAS is held to one thread in every process (:func:`limit_blas_threads`, called by every
:class:`~service.pipelines.build.Runtime`): a search's BLAS calls are matrix-vector products of at
most a few thousand rows (question memory, law classifier, adapters), which take microseconds on
one thread, while handing half of one to a second thread that has to be woken cost 5-8 ms per
call on this 2-core machine (a 1000 x 512 product: 0.02 ms against 7.7 ms). The embedders keep
their own ``embedder.threads`` for batches of documents.

Example::

    settings = resolve(load_settings(), role="serve")      # every 0 above replaced by its number
    limit_library_threads(settings.cpu.threads)            # once per process, before the first search
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal

from service.config import Settings

Role = Literal["serve", "worker", "process"]

OPENMP_THREAD_VARIABLES = ("OMP_NUM_THREADS", "NUMEXPR_NUM_THREADS")
"""Read by the OpenMP runtimes (and numexpr) when they load."""
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
"""Read by the BLAS runtimes when they load."""
BLAS_THREADS = 1
"""BLAS threads of every lexsearch process (see the module docstring)."""

CGROUP_ROOT = Path("/sys/fs/cgroup")


def available_cores(cgroup_root: Path = CGROUP_ROOT) -> int:
    """The cores this process may use: its CPU affinity, capped by a cgroup CPU quota (containers)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota(cgroup_root)
    return max(1, min(cores, quota) if quota else cores)


def cgroup_cpu_quota(root: Path = CGROUP_ROOT) -> int | None:
    """Whole cores allowed by the cgroup's CPU quota (rounded up), or ``None`` without a quota.

    Reads ``cpu.max`` (cgroup v2: ``"200000 100000"`` or ``"max 100000"``), else
    ``cpu/cpu.cfs_quota_us`` and ``cpu/cpu.cfs_period_us`` (cgroup v1; quota -1 = none).
    """
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota = (root / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (root / "cpu" / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:  # "max": no quota
        return None
    if quota_us <= 0 or period_us <= 0:
        return None
    return max(1, math.ceil(quota_us / period_us))


def processes_of(settings: Settings, role: Role, cores: int) -> int:
    """How many processes (or parallel tasks) of ``role`` share the cores."""
    if role == "serve":
        return settings.api.workers or cores
    if role == "worker":
        return 1 if settings.jobs.worker_pool == "solo" else settings.jobs.worker_concurrency or cores
    return 1


def resolve(settings: Settings, *, role: Role = "process") -> Settings:
    """``settings`` with every automatic (0) process and thread count replaced by its number.

    ``role`` says which processes share the cores: ``serve`` (``api.workers`` server processes),
    ``worker`` (``jobs.worker_concurrency`` jobs at once) or ``process`` (one: every other command,
    and library use). Settings already resolved come back unchanged, so resolving again (the
    :class:`~service.pipelines.build.Runtime` does) keeps what a command chose.
    """
    cores = settings.cpu.cores or available_cores()
    threads = settings.cpu.threads or max(1, cores // processes_of(settings, role, cores))
    api, jobs, agents, llm = settings.api, settings.jobs, settings.agents, settings.llm
    return settings.replace(
        cpu={"cores": cores, "threads": threads},
        api={"workers": api.workers or cores, "sync_threads": api.sync_threads or 2 * api.threads},
        jobs={"worker_concurrency": jobs.worker_concurrency or cores},
        embedder={"threads": settings.embedder.threads or threads},
        agents={"workers": agents.workers or (llm.max_concurrency if llm.enabled else 1)},
    )


def limit_library_threads(threads: int) -> None:
    """Hold every OpenMP thread pool of this process (and of processes it starts) to ``threads``, and
    every BLAS pool to :data:`BLAS_THREADS`.

    Sets the variables those runtimes read when they load (``OMP_NUM_THREADS``...), so libraries
    imported later and child processes follow, and limits the pools already loaded (threadpoolctl).
    Call it once per process, before the first search.
    """
    for name in OPENMP_THREAD_VARIABLES:
        os.environ[name] = str(threads)
    limit_blas_threads()
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="openmp")


def limit_blas_threads() -> None:
    """Hold every BLAS pool of this process (and of processes it starts) to :data:`BLAS_THREADS`.

    Cheap after the first call; a library loaded later reads the environment variables.
    """
    global _blas_limited
    for name in BLAS_THREAD_VARIABLES:
        os.environ[name] = str(BLAS_THREADS)
    if _blas_limited:
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=BLAS_THREADS, user_api="blas")
    _blas_limited = True


_blas_limited = False
