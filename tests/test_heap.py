"""Settling the heap: what is alive is frozen, what comes later is still collected."""

from __future__ import annotations

import gc
import weakref

import pytest

from service import heap
from service.heap import settle_heap, settled_heap

pytestmark = pytest.mark.unit


class _Node:
    partner: _Node | None = None


def test_settling_freezes_what_is_alive_and_later_cycles_are_still_collected() -> None:
    try:
        kept = _Node()
        frozen = settle_heap()
        # Frozen objects that die afterwards (temporaries, other threads' objects) leave the count.
        assert 0 < gc.get_freeze_count() <= frozen
        assert heap._unfreeze_registered  # the frozen objects go back to the collector at exit
        assert not any(obj is kept for obj in gc.get_objects())  # out of the collector's passes
        cycle = _Node()
        cycle.partner = _Node()
        cycle.partner.partner = cycle
        gone = weakref.ref(cycle)
        del cycle
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()


def test_a_settled_block_gives_the_heap_back_afterwards() -> None:
    gc.unfreeze()
    kept = _Node()
    with settled_heap() as frozen:
        assert frozen > 0 and gc.get_freeze_count() > 0
        assert not any(obj is kept for obj in gc.get_objects())
    assert gc.get_freeze_count() == 0
    assert any(obj is kept for obj in gc.get_objects())  # collected as usual again


def test_a_settled_block_leaves_a_frozen_heap_frozen() -> None:
    try:
        settle_heap()
        served = gc.get_freeze_count()
        with settled_heap():
            pass
        assert gc.get_freeze_count() >= served > 0  # a serving process's freeze is not undone
    finally:
        gc.unfreeze()
