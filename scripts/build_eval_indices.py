#!/usr/bin/env python3
"""Build (or find) the cached eval index of each dataset folder given, so benchmarks start warm.

Usage: python scripts/build_eval_indices.py DATASET_DIR [DATASET_DIR ...]
"""

from __future__ import annotations

import sys
import time

from service.config import load_settings
from service.corpus.datasets import Dataset
from service.evaluation.dataset_index import ensure_dataset_index
from service.pipelines.build import Runtime


def main(paths: list[str]) -> None:
    runtime = Runtime(load_settings())
    for path in paths:
        start = time.perf_counter()
        name = ensure_dataset_index(runtime, Dataset(path))
        print(f"{path}: {name} ({time.perf_counter() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
