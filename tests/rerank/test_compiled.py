"""Compiled reranker trees: the same scores as LightGBM, machine code kept per model and CPU, safe fallbacks."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from service.models import load_models, reranker_files
from service.rerank import compiled
from service.rerank.compiled import COMPILED_DIR, TreeScorer, compiled_path
from service.rerank.learned import LearnedReranker

pytestmark = pytest.mark.unit

NAMES = [f"f{i}" for i in range(6)]


def _model(folder: Path, seed: int = 0, rounds: int = 25, members: int = 1) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(400, len(NAMES))).astype(np.float32)
    labels = (features[:, 0] + 0.5 * features[:, 1] + rng.normal(scale=0.3, size=400) > 1.0).astype(np.float32)
    model = LearnedReranker.fit(features, labels, [20] * 20, NAMES, rounds=rounds,
                                params={"min_data_in_leaf": 5}, members=members)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "reranker_hybrid.txt"
    model.save(path)
    return path, features


def test_compiled_trees_score_like_lightgbm_and_are_kept(tmp_path: Path) -> None:
    path, rows = _model(tmp_path)
    model = LearnedReranker.load(path, NAMES)
    assert model.scorer.kind == "compiled"
    reference = np.asarray(model.booster.predict(rows, num_threads=1))
    np.testing.assert_allclose(model.scores(rows, NAMES), reference, rtol=0, atol=1e-9)
    assert list((tmp_path / COMPILED_DIR).glob("*.so")) == [compiled_path(path)]
    stored = compiled_path(path).stat().st_mtime_ns
    again = LearnedReranker.load(path, NAMES)  # loads the stored machine code, compiles nothing
    assert again.scorer.kind == "compiled" and compiled_path(path).stat().st_mtime_ns == stored
    np.testing.assert_array_equal(again.scores(rows, NAMES), model.scores(rows, NAMES))
    assert not list((tmp_path / COMPILED_DIR).glob("*.tmp"))


def test_a_model_of_several_members_compiles_to_the_same_scores(tmp_path: Path) -> None:
    path, rows = _model(tmp_path, rounds=10, members=3)
    model = LearnedReranker.load(path, NAMES)
    assert model.scorer.kind == "compiled" and model.booster.num_trees() == 30
    np.testing.assert_allclose(model.scores(rows, NAMES), model.booster.predict(rows, num_threads=1), rtol=0, atol=1e-9)


def test_another_model_gets_another_file(tmp_path: Path) -> None:
    first, _ = _model(tmp_path / "a", seed=1)
    second, _ = _model(tmp_path / "b", seed=2)
    assert compiled_path(first).name != compiled_path(second).name


def test_trees_compile_without_inlining_and_the_inlining_is_part_of_the_key(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert compiled.INLINE_TREES is False  # the compile time of a ten-member reranker decides (module docstring)
    path, rows = _model(tmp_path, rounds=10, members=2)
    served = compiled_path(path)
    model = LearnedReranker.load(path, NAMES)
    monkeypatch.setattr(compiled, "INLINE_TREES", True)
    inlined = LearnedReranker.load(path, NAMES)  # other code for the same model, stored beside it
    assert compiled_path(path) != served
    assert sorted((tmp_path / COMPILED_DIR).glob("*.so")) == sorted([served, compiled_path(path)])
    reference = model.booster.predict(rows, num_threads=1)
    for scorer in (model, inlined):
        assert scorer.scorer.kind == "compiled"
        np.testing.assert_allclose(scorer.scores(rows, NAMES), reference, rtol=0, atol=1e-9)


def test_switched_off_scores_with_lightgbm(tmp_path: Path) -> None:
    path, rows = _model(tmp_path)
    model = LearnedReranker.load(path, NAMES, compile_trees=False)
    assert model.scorer.kind == "lightgbm" and not (tmp_path / COMPILED_DIR).exists()
    np.testing.assert_array_equal(model.scores(rows, NAMES), model.booster.predict(rows, num_threads=1))


def test_unwritable_model_folder_compiles_for_the_process_only(tmp_path: Path) -> None:
    path, rows = _model(tmp_path)
    (tmp_path / COMPILED_DIR).write_text("not a folder")  # the compiled/ folder cannot be created
    model = LearnedReranker.load(path, NAMES)
    assert model.scorer.kind == "compiled"
    np.testing.assert_allclose(model.scores(rows, NAMES), model.booster.predict(rows), rtol=0, atol=1e-9)


def test_a_compiler_failure_falls_back_to_lightgbm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    path, rows = _model(tmp_path)

    def broken(model_file: Path) -> None:
        raise RuntimeError("LLVM ERROR: out of registers")

    monkeypatch.setattr(compiled, "compile_model", broken)
    with caplog.at_level(logging.WARNING, logger="service.rerank.compiled"):
        scorer = TreeScorer.from_file(path, LearnedReranker.load(path, NAMES, compile_trees=False).booster)
    assert scorer.kind == "lightgbm" and "out of registers" in caplog.text
    assert scorer.predict(rows).shape == (len(rows),)


def test_model_folders_honour_the_setting(tmp_path: Path) -> None:
    from service.models import TrainedModels

    folder = tmp_path / "models"
    path, _ = _model(tmp_path / "src")
    models = TrainedModels(language="de", embedder="use-m3")
    models.reranker_hybrid = LearnedReranker.load(path, NAMES, compile_trees=False)
    models.save(folder)
    assert reranker_files(folder) == [folder / "reranker_hybrid.txt"]
    assert load_models(folder, compile_trees=False).reranker_hybrid.scorer.kind == "lightgbm"
    assert load_models(folder).reranker_hybrid.scorer.kind == "compiled"


def test_compile_models_compiles_side_by_side_and_skips_stored_code(tmp_path: Path, caplog) -> None:
    first, rows = _model(tmp_path / "a", seed=1)
    second, _ = _model(tmp_path / "b", seed=2)
    broken = tmp_path / "c" / "reranker_hybrid.txt"
    broken.parent.mkdir()
    broken.write_text("not a tree model\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="service.rerank.compiled"):
        compiled.compile_models([first, second, broken], workers=2)
    assert compiled_path(first).is_file() and compiled_path(second).is_file()
    assert "compiling" in caplog.text and str(broken) in caplog.text  # logged, not raised
    stored = compiled_path(first).stat().st_mtime_ns
    compiled.compile_models([first], workers=2)  # stored code is not compiled again
    assert compiled_path(first).stat().st_mtime_ns == stored
    model = LearnedReranker.load(first, NAMES)  # loads what the other process compiled
    assert model.scorer.kind == "compiled"
    np.testing.assert_allclose(model.scores(rows, NAMES), model.booster.predict(rows, num_threads=1), rtol=0, atol=1e-9)


def test_a_broken_worker_pool_leaves_compiling_to_the_first_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog) -> None:
    first, _ = _model(tmp_path / "a", seed=1)
    second, _ = _model(tmp_path / "b", seed=2)

    class BrokenPool:  # what a worker that dies at start-up gives
        def __init__(self, *args, **kwargs) -> None:
            raise compiled.BrokenProcessPool("a child process terminated abruptly")

    monkeypatch.setattr(compiled, "ProcessPoolExecutor", BrokenPool)
    with caplog.at_level(logging.WARNING, logger="service.rerank.compiled"):
        compiled.compile_models([first, second], workers=2)  # does not raise
    assert "each model compiles when it is loaded" in caplog.text and not compiled_path(first).exists()
    assert LearnedReranker.load(first, NAMES).scorer.kind == "compiled"


def _ended(pid: int) -> bool:
    """Whether ``pid`` is gone or a zombie (dead, not yet reaped by whoever adopted it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux only")
def test_compiling_workers_end_with_the_process_that_started_them(tmp_path: Path) -> None:
    starter = textwrap.dedent("""
        import os, time
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing
        from service.rerank.compiled import end_with_parent
        if __name__ == "__main__":
            pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=end_with_parent, initargs=(os.getpid(),))
            pool.submit(time.sleep, 120)
            time.sleep(1)
            print(*pool._processes, flush=True)  # the worker pids (the pool keeps no public list)
            time.sleep(120)
    """)
    errors = tmp_path / "stderr.txt"  # also keeps the killed pool's leftover-semaphore warning out of the log
    with errors.open("w") as stderr:
        parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert workers, errors.read_text(encoding="utf-8")
        assert not any(_ended(pid) for pid in workers)
        parent.kill()  # as a killed training run: no clean-up code runs in it
        parent.wait(timeout=10)
        deadline = time.monotonic() + 15
        while not all(_ended(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(_ended(pid) for pid in workers)
    finally:
        parent.kill()
