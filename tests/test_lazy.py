"""Building a collaborator once, under concurrent first use."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.lazy import built_once

pytestmark = pytest.mark.unit


class Owner:
    def __init__(self) -> None:
        self._thing: object | None = None
        self._lock = threading.Lock()
        self.builds = 0

    def build(self) -> object:
        self.builds += 1
        return object()

    @property
    def thing(self) -> object:
        return built_once(self, "_thing", self._lock, self.build)


def test_many_threads_get_the_one_object_built_once() -> None:
    owner = Owner()
    with ThreadPoolExecutor(8) as pool:
        things = list(pool.map(lambda _: owner.thing, range(64)))
    assert owner.builds == 1 and all(t is things[0] for t in things)
