#!/usr/bin/env python3
"""Cut the demo corpus shipped in examples/swiss-excerpt out of ../shared/data/swiss-law.

It keeps, in German and English, the Swiss Code of Obligations on contract formation (Art. 1-40),
torts (Art. 41-61) and tenancy (Art. 253-274g), and the Civil Code's introduction (Art. 1-10) and
testamentary dispositions (Art. 457-480). Swiss federal law texts are public (Fedlex).

Usage: python scripts/make_example_corpus.py ../shared/data/swiss-law examples/swiss-excerpt
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

RANGES = {"OR": [(1, 40), (41, 61), (253, 274)], "CO": [(1, 40), (41, 61), (253, 274)],
          "ZGB": [(1, 10), (457, 480)], "CC": [(1, 10), (457, 480)]}
NUMBER = re.compile(r"Art\. (\d+)")


def keep(doc: dict) -> bool:
    match = NUMBER.match(doc["citation"])
    if not match or doc.get("meta", {}).get("occurrence", 1) != 1:
        return False
    number = int(match.group(1))
    return any(lo <= number <= hi for lo, hi in RANGES.get(doc["law"], []))


def main(source: str, target: str) -> None:
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for lang in ("de", "en"):
        kept = 0
        with open(Path(source) / f"corpus_{lang}.jsonl", encoding="utf-8") as src, \
                open(out / f"corpus_{lang}.jsonl", "w", encoding="utf-8") as dst:
            for line in src:
                doc = json.loads(line)
                if keep(doc):
                    doc["id"] = f"{doc['id']}_{lang}"  # the de and en files share ids; keep both apart
                    dst.write(json.dumps(doc, ensure_ascii=False) + "\n")
                    kept += 1
        counts[lang] = kept
    meta = {
        "name": "swiss-excerpt",
        "language": "de,en",
        "task": "demo corpus: Swiss Code of Obligations and Civil Code excerpts (de/en)",
        "source": "excerpt of ../shared/data/swiss-law (Fedlex texts via quadratecode/ch-law-tracker)",
        "license": "Swiss federal law texts are public; see ../shared/data/swiss-law/dataset.json",
        "corpus_size": counts,
        "corpus": ["corpus_de.jsonl", "corpus_en.jsonl"],
        "splits": {"demo": len((out / "queries.demo.tsv").read_text(encoding="utf-8").splitlines())}
        if (out / "queries.demo.tsv").exists() else {},
    }
    (out / "dataset.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(counts)


if __name__ == "__main__":
    main(*sys.argv[1:3])
