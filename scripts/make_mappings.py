#!/usr/bin/env python3
"""Write mappings/<engine>/<kind>.json from analyzers/*.json via service.backends._requests.index_body.

The files are what lexsearch sends when it creates an index with the default embedder (USE v3,
512 dimensions), for people who create indices themselves or review the layout. A unit test
(tests/backends/test_requests.py) fails when they drift from the code; re-run this script then.

Usage: python scripts/make_mappings.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.backends._analyzers import language_analyses  # noqa: E402
from service.backends._requests import CorpusKind, Engine, index_body  # noqa: E402

DEFAULT_DIM = 512
DEFAULT_EMBEDDER = "use-m3"


def rendered() -> dict[Path, str]:
    """Every mapping file's path (relative to the repository) and its JSON text."""
    out = {}
    for engine in Engine:
        for kind in CorpusKind:
            body = index_body(engine, dim=DEFAULT_DIM, embedder=DEFAULT_EMBEDDER, language="", kind=kind,
                              languages=language_analyses())
            out[Path("mappings") / engine.value / f"{kind.value}.json"] = (
                json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report files that differ (exit 1)")
    args = parser.parse_args()
    stale = []
    for rel, text in rendered().items():
        path = ROOT / rel
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale.append(str(rel))
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    verb = "differ" if args.check else "written"
    print(f"{len(stale)} mapping file(s) {verb}" + (": " + ", ".join(stale) if stale else ""))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
