"""Stage timings for traces: ``with watch.stage("bm25"): ...`` records milliseconds per stage."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Stopwatch:
    """Collects wall-clock milliseconds per named stage; repeated stages add up."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.stages: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - start) * 1000.0)

    def add(self, name: str, ms: float) -> None:
        self.stages[name] = round(self.stages.get(name, 0.0) + ms, 3)

    def total_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000.0, 3)

    def to_dict(self) -> dict[str, float]:
        return {**self.stages, "total": self.total_ms()}
