"""The real embedded backend with a probe counter, for tests that check a probe is reused."""

from __future__ import annotations

from typing import Any

from service.backends.embedded import EmbeddedBackend


class CountingBackend(EmbeddedBackend):
    """An :class:`EmbeddedBackend` that counts its side-by-side probes (in ``CountingBackend.probes``)."""

    probes = 0

    def probe(self, *args: Any, **kwargs: Any) -> Any:
        CountingBackend.probes += 1
        return super().probe(*args, **kwargs)
