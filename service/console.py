"""Status lines and progress bars on stderr, for commands and the long jobs they start.

stdout stays clean for results (``--json``); status goes to stderr, and progress bars only to a
terminal (or when ``LEXSEARCH_PROGRESS=1``).
"""

from __future__ import annotations

import os
import sys


def progress_enabled() -> bool:
    """Progress bars go to stderr, and only when it is a terminal or LEXSEARCH_PROGRESS=1."""
    flag = os.environ.get("LEXSEARCH_PROGRESS")
    if flag is not None:
        return flag not in ("0", "false", "no")
    return sys.stderr.isatty()


def info(message: str) -> None:
    """A status line on stderr (stdout stays clean for --json output)."""
    print(message, file=sys.stderr, flush=True)
