"""Tree scoring for the learned reranker: LightGBM's own predictor, or the trees compiled to machine code.

LightGBM walks its 300 trees in an interpreter loop; for one pool (~200 candidates) that is 2-3
ms, the largest single step of a reranked search. ``lleaves`` compiles the same trees through
LLVM into a function that scores the pool in about a fifth of the time. The scores agree with
LightGBM's to ~1e-14 (the sum of the trees is taken in another order), so rankings do not change.

The trees are compiled without inlining (:data:`INLINE_TREES`): a served reranker of ten members
holds 1,200-3,000 trees, which LLVM compiled in 1.3-5 minutes a model with inlining and compiles in
13-40 s without it, while a pool scores in about 1.6 times the inlined code's time, still a sixth of
LightGBM's. The machine code is kept next to the model
(``<model folder>/compiled/<model>.<key>.so``). The key covers the model file's contents, the CPU the
code was built for (it uses that CPU's instruction set), the compiler versions and the inlining, so a
copied folder or an upgraded compiler never loads stale code.
``lexsearch train`` compiles at the end of training (the models of a training run side by side, one
process per core: :func:`compile_models`); a folder without the code gets it on first
load (written there when the folder is writable, otherwise kept in memory for the process).

The scorer is fixed when it is built: compiled, or LightGBM when compiling is switched off
(``agents.compiled_trees``), ``lleaves`` is not installed, or compilation fails (logged). A
process never switches midway, so repeated searches return identical scores.

Example::

    scorer = TreeScorer.from_file(Path("models/stard/reranker_hybrid.txt"), booster, compile_trees=True)
    scorer.kind, scorer.predict(matrix)       # ('compiled', array([...]))
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import importlib.util
import logging
import multiprocessing
import os
import signal
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

COMPILED_DIR = "compiled"
"""Sub-folder of a model folder holding compiled trees."""

INLINE_TREES = False
"""Whether LLVM inlines each tree into the forest's function. Inlined, a 3,000-tree reranker compiled in
310 s and scored 200 candidates in 4.9 ms; not inlined, in 36 s and 7.8 ms (LightGBM: 47 ms;
docs/BENCHMARKS.md, "Compiled trees without inlining"). Training and a folder's first load on a new
CPU wait for the compiler, a search for the scoring, so the compile time decides."""


class TreeScorer:
    """Scores feature rows with a LightGBM booster or its compiled trees (see the module docstring).

    Args:
        booster: the ``lightgbm.Booster`` (always kept: it is the fallback and the reference).
        compiled: the compiled ``lleaves.Model``, or ``None`` to score with the booster.
    """

    def __init__(self, booster: Any, compiled: Any = None) -> None:
        self.booster = booster
        self.compiled = compiled

    @property
    def kind(self) -> str:
        """``compiled`` or ``lightgbm``."""
        return "lightgbm" if self.compiled is None else "compiled"

    @classmethod
    def from_file(cls, model_file: Path, booster: Any, *, compile_trees: bool = True) -> TreeScorer:
        """The scorer of a model stored at ``model_file``, compiled when possible (never raises for that)."""
        if not compile_trees:
            return cls(booster)
        try:
            compiled = compile_model(model_file)
        except ImportError:
            log.info("lleaves is not installed; the reranker scores with LightGBM")
            return cls(booster)
        except Exception as exc:  # a compiler failure must not take search down; LightGBM still works
            log.warning("compiling %s failed (%s: %s); the reranker scores with LightGBM",
                        model_file, type(exc).__name__, exc)
            return cls(booster)
        return cls(booster, compiled)

    def predict(self, rows: np.ndarray) -> np.ndarray:
        """One score per row (float64)."""
        if self.compiled is None:
            # One thread: a search is one small matrix, and the service runs searches side by side.
            return np.asarray(self.booster.predict(rows, num_threads=1), dtype=np.float64)
        return np.asarray(self.compiled.predict(np.ascontiguousarray(rows, dtype=np.float64), n_jobs=1))


def compiled_path(model_file: Path) -> Path:
    """Where the machine code of ``model_file`` for this CPU and compiler lives."""
    import llvmlite.binding as llvm

    digest = hashlib.sha256(model_file.read_bytes())
    features = llvm.get_host_cpu_features().flatten()
    inlining = "inline" if INLINE_TREES else "no-inline"
    for part in (llvm.get_host_cpu_name(), features, version("lleaves"), version("llvmlite"), inlining):
        digest.update(b"\0" + part.encode())
    return model_file.parent / COMPILED_DIR / f"{model_file.stem}.{digest.hexdigest()[:16]}.so"


def compile_models(model_files: Sequence[Path], *, workers: int) -> None:
    """Compile several models' trees into their folders, ``workers`` at a time, each in a process of its
    own (LLVM compiles on one thread: about half a minute for a reranker of 3,000 trees here).

    Models whose machine code is stored already are skipped. A model that fails to compile is logged
    and left for :meth:`TreeScorer.from_file`, which falls back to LightGBM as it always does.
    """
    if importlib.util.find_spec("lleaves") is None:
        return  # the models score with LightGBM (TreeScorer.from_file says so once)
    todo = [Path(f) for f in model_files if not compiled_path(Path(f)).is_file()]
    if not todo:
        return
    if workers <= 1 or len(todo) == 1:
        problems = [_compile_quietly(model_file) for model_file in todo]
    else:
        context = multiprocessing.get_context("spawn")  # no copy of the parent's threads and open indices
        try:
            with ProcessPoolExecutor(min(workers, len(todo)), mp_context=context, initializer=end_with_parent,
                                     initargs=(os.getpid(),)) as pool:
                problems = list(pool.map(_compile_quietly, todo))
        except (BrokenProcessPool, OSError) as exc:  # e.g. a main module that starts work when imported
            log.warning("compiling in worker processes failed (%s: %s); each model compiles when it is loaded",
                        type(exc).__name__, exc)
            return
    for model_file, problem in zip(todo, problems, strict=True):
        if problem:  # loading the model later compiles again or falls back to LightGBM
            log.warning("compiling %s failed (%s)", model_file, problem)


PR_SET_PDEATHSIG = 1
"""Linux ``prctl`` option: the signal a process gets when its parent ends."""


def end_with_parent(parent: int) -> None:
    """Worker initializer: this process ends when ``parent`` (the process that started it) ends.

    A compiling worker holds about 2 GB; without this, killing a training or benchmark run left its
    workers compiling on as orphans. Linux only; elsewhere the workers run to the end of their model.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent ended before the signal was armed
        os._exit(1)


def _compile_quietly(model_file: Path) -> str:
    """Compile one model; '' on success, else what went wrong (a child process cannot log for us)."""
    try:
        compile_model(model_file)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def compile_model(model_file: Path) -> Any:
    """The compiled ``lleaves.Model`` of ``model_file``: loaded from disk, or compiled (and stored when possible).

    Raises:
        ImportError: when lleaves is not installed.
        Exception: whatever the compiler raises.
    """
    import lleaves

    model = lleaves.Model(model_file=str(model_file))
    target = compiled_path(model_file)
    if target.is_file():
        model.compile(cache=str(target), finline=INLINE_TREES)
        return model
    started = time.perf_counter()
    log.info("compiling the trees of %s (once per model and CPU) ...", model_file)
    try:
        target.parent.mkdir(exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem}.", suffix=".tmp")
        os.close(handle)
        os.unlink(tmp)  # lleaves writes the file itself, and only when the path does not exist
    except OSError:  # a read-only model folder: compile for this process only
        model.compile(finline=INLINE_TREES)
    else:
        try:
            model.compile(cache=tmp, finline=INLINE_TREES)
            os.replace(tmp, target)  # atomic: a concurrent process sees the whole file or none
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    log.info("compiled %s in %.1f s", model_file.name, time.perf_counter() - started)
    return model
