"""Keep the long-lived part of a serving process out of Python's cyclic garbage collector.

A search process holds a few hundred thousand long-lived objects once the trained models and an
index's resources are loaded (about 242,000 with STARD's). Every full collection traverses all of
them: 0.2–0.3 s, once every one or two hundred searches, landing on whichever request happens to
allocate at that moment (docs/BENCHMARKS.md, "Routing", after run K). :func:`settle_heap` collects once
and then moves every object alive at that moment to the collector's permanent generation
(``gc.freeze``), so later collections look only at what requests allocate. Reference counting still
frees frozen objects that become unreachable; only reference cycles among them would stay.

Call it in a serving process after its warm-up (``service.api.app.warm_up`` does), not in training,
which loads and drops many model folders. A process that only times searches for a while (routing
calibration inside ``lexsearch train``, the routing benchmark) uses :func:`settled_heap` around the
timed searches instead: they then run as a served process runs them, and the heap goes back to the
collector afterwards.
"""

from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_unfreeze_registered = False


def settle_heap() -> int:
    """Collect cyclic garbage, then freeze every object alive now; returns how many are frozen in all.

    The frozen objects go back to the collector when the interpreter exits, so its last collection
    finalises them as usual (native extensions otherwise report them as leaked).
    """
    global _unfreeze_registered
    with _lock:
        if not _unfreeze_registered:
            atexit.register(gc.unfreeze)
            _unfreeze_registered = True
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


@contextmanager
def settled_heap() -> Iterator[int]:
    """:func:`settle_heap` for the duration of a block; yields how many objects are frozen.

    At the end the frozen objects go back to the collector (``gc.unfreeze``), unless some were frozen
    before the block (a serving process's), which then stay frozen as they were.

    Example::

        with settled_heap():
            for query in queries:
                timed_search(query)
    """
    frozen_before = gc.get_freeze_count()
    try:
        yield settle_heap()
    finally:
        if frozen_before == 0:
            gc.unfreeze()
