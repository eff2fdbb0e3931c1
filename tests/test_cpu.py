"""Thread and process counts sized from the cores, across the processes of a command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.config import load_settings
from service.cpu import available_cores, cgroup_cpu_quota, resolve
from service.errors import ConfigError

pytestmark = pytest.mark.unit


def settings(**env: str):
    return load_settings(environ={f"LEXSEARCH_{k.upper()}": v for k, v in env.items()})


def python_output(code: str, **env: str) -> str:
    """What ``code`` prints in a fresh interpreter with ``env`` added to the environment (it must succeed):
    thread pools are per process, so each check needs one of its own."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **env})
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_defaults_are_automatic_and_resolve_to_one_core_per_process() -> None:
    raw = settings(cpu_cores="4")
    assert (raw.cpu.threads, raw.api.workers, raw.api.sync_threads, raw.jobs.worker_concurrency,
            raw.embedder.threads, raw.agents.workers) == (0, 0, 0, 0, 0, 0)
    serve = resolve(raw, role="serve")
    assert (serve.cpu.cores, serve.api.workers, serve.cpu.threads, serve.embedder.threads) == (4, 4, 1, 1)
    assert serve.api.sync_threads == 2 * serve.api.threads
    worker = resolve(raw, role="worker")
    assert (worker.jobs.worker_concurrency, worker.cpu.threads) == (4, 1)
    one = resolve(raw)
    assert (one.cpu.threads, one.embedder.threads, one.agents.workers) == (4, 4, 1)  # offline rewriters: one thread


def test_processes_and_threads_never_oversubscribe_the_cores() -> None:
    for cores in range(1, 9):
        for workers in range(1, cores + 1):
            s = resolve(settings(cpu_cores=str(cores), api_workers=str(workers)), role="serve")
            assert 1 <= s.api.workers * s.embedder.threads <= max(cores, s.api.workers)
            assert s.embedder.threads == cores // workers


def test_explicit_counts_win_and_resolving_twice_keeps_them() -> None:
    chosen = settings(cpu_cores="8", api_workers="2", embedder_threads="3", api_sync_threads="5")
    s = resolve(chosen, role="serve")
    assert (s.api.workers, s.cpu.threads, s.embedder.threads, s.api.sync_threads) == (2, 4, 3, 5)
    assert resolve(s) == s  # the Runtime resolves again as one process: what the command chose stays


def test_solo_worker_pool_is_one_process_and_an_llm_sizes_the_agent_threads() -> None:
    s = resolve(settings(cpu_cores="4", jobs_worker_pool="solo"), role="worker")
    assert s.cpu.threads == 4
    llm = resolve(settings(cpu_cores="2", llm_base_url="http://127.0.0.1:1/v1", llm_model="m",
                            llm_max_concurrency="6"))
    assert llm.agents.workers == 6


@pytest.mark.parametrize("name", ["cpu_cores", "cpu_threads", "api_workers", "embedder_threads",
                                  "jobs_worker_concurrency", "agents_workers"])
def test_negative_counts_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=name.replace("_", ".", 1)):
        settings(**{name: "-1"})


def test_cgroup_quota(tmp_path: Path) -> None:
    assert cgroup_cpu_quota(tmp_path) is None
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota(tmp_path) is None
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_quota(tmp_path) == 2
    assert available_cores(tmp_path) == min(2, len(os.sched_getaffinity(0)))
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_quota(v1) is None
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    assert cgroup_cpu_quota(v1) == 1 and available_cores(v1) == 1


def test_available_cores_follows_the_affinity() -> None:
    assert available_cores(Path("/nonexistent")) == len(os.sched_getaffinity(0))


def test_library_thread_limits_reach_loaded_pools_and_child_processes() -> None:
    code = ("import numpy, threadpoolctl, os; from service.cpu import limit_library_threads; "
            "limit_library_threads(1); "
            "pools = threadpoolctl.threadpool_info(); "
            "assert pools and all(p['num_threads'] == 1 for p in pools), pools; "
            "import subprocess, sys; print(subprocess.run([sys.executable, '-c', "
            "'import os; print(os.environ[\"OMP_NUM_THREADS\"])'], capture_output=True, text=True).stdout.strip())")
    assert python_output(code, OMP_NUM_THREADS="7").strip() == "1"


def test_blas_pools_get_one_thread_and_openmp_pools_the_share() -> None:
    code = ("import numpy, threadpoolctl, os; from service.cpu import limit_library_threads; "
            "limit_library_threads(2); "
            "pools = threadpoolctl.threadpool_info(); "
            "blas = [p['num_threads'] for p in pools if p['user_api'] == 'blas']; "
            "assert blas and set(blas) == {1}, pools; "
            "assert all(p['num_threads'] == 2 for p in pools if p['user_api'] == 'openmp'), pools; "
            "print(os.environ['OPENBLAS_NUM_THREADS'], os.environ['OMP_NUM_THREADS'])")
    assert python_output(code, OPENBLAS_NUM_THREADS="4", OMP_NUM_THREADS="4").split() == ["1", "2"]


def test_a_runtime_holds_blas_to_one_thread() -> None:
    code = ("import numpy, threadpoolctl; from service.config import load_settings; "
            "from service.pipelines.build import Runtime; "
            "Runtime(load_settings(environ={})); "
            "blas = [p['num_threads'] for p in threadpoolctl.threadpool_info() if p['user_api'] == 'blas']; "
            "assert blas and set(blas) == {1}, blas")
    python_output(code, OPENBLAS_NUM_THREADS="2")
