#!/usr/bin/env python3
"""Write the German word list the compound splitter uses (analyzers/de-compound-words.txt).

The list is every lowercase word of at least four letters that occurs at least twice in the given
German statute corpora (public law texts: the BGB of GerLayQA, the Swiss ZGB/OR/StGB).

Usage: python scripts/make_compound_words.py OUT CORPUS.jsonl [CORPUS.jsonl ...]
"""

from __future__ import annotations

import collections
import json
import re
import sys

WORD = re.compile(r"[^\W\d_]+")


def main(out: str, corpora: list[str]) -> None:
    counts: collections.Counter[str] = collections.Counter()
    for path in corpora:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                doc = json.loads(line)
                if doc.get("lang", "de") != "de":
                    continue
                counts.update(WORD.findall(f"{doc.get('title', '')} {doc['text']}".lower()))
    words = sorted(w for w, c in counts.items() if c >= 2 and len(w) >= 4)
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(words) + "\n")
    print(f"{len(words)} words -> {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
