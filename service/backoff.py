"""The one retry-delay rule of the project: exponential, capped, optionally with "equal jitter".

The LLM client (429, 5xx, timeouts), the engines' bulk writer (rejected documents) and the webhook
deliveries all wait this long between attempts.

Example::

    backoff_s(0, base_s=0.5, cap_s=8.0)                 # between 0.25 and 0.5
    backoff_s(3, base_s=0.5, cap_s=8.0)                 # between 2.0 and 4.0
    backoff_s(2, base_s=1.0, jitter=False)              # 4.0
"""

from __future__ import annotations

import math
import random


def backoff_s(retry: int, *, base_s: float, cap_s: float = math.inf, jitter: bool = True) -> float:
    """Seconds to wait before retry number ``retry + 1`` (``retry`` counts from 0).

    The nominal wait is ``base_s * 2**retry``, capped at ``cap_s``. With ``jitter`` the wait is
    drawn uniformly from the upper half of the nominal wait ("equal jitter"): clients that failed
    together spread out, and the shortest wait is still known.
    """
    # The exponent stops at 64 (a wait far past any cap): 2**1024 no longer fits a float.
    nominal = min(base_s * 2.0 ** min(max(0, retry), 64), cap_s)
    if not jitter:
        return nominal
    return nominal / 2 + random.uniform(0, nominal / 2)
