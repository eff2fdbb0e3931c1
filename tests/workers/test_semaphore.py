"""The Redis semaphore bounds holders across threads (and so across processes), and frees dead holders."""

from __future__ import annotations

import threading
import time

import pytest

from service.redisconn import connect
from workers.semaphore import RedisSemaphore, SlotsBusy

pytestmark = pytest.mark.engine


def test_never_more_holders_than_slots(redis_url: str) -> None:
    slots = RedisSemaphore(connect(redis_url), "llm", limit=2, lease_s=30)
    inside = 0
    most = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal inside, most
        with slots.hold(timeout_s=10):
            with lock:
                inside += 1
                most = max(most, inside)
            time.sleep(0.05)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 2
    assert slots.holders() == 0


def test_busy_slots_time_out(redis_url: str) -> None:
    slots = RedisSemaphore(connect(redis_url), "llm", limit=1, lease_s=30)
    assert slots.try_acquire() is not None
    with pytest.raises(SlotsBusy):
        slots.acquire(timeout_s=0.2)


def test_a_dead_holder_is_freed_after_its_lease(redis_url: str) -> None:
    slots = RedisSemaphore(connect(redis_url), "llm", limit=1, lease_s=0.3)
    assert slots.try_acquire() is not None  # never released, like a killed process
    assert slots.try_acquire() is None
    time.sleep(0.35)
    assert slots.try_acquire() is not None
