#!/usr/bin/env python3
"""Cut Swiss federal law out of the swiss-statutes dataset (Fedlex texts in German, French and Italian).

Two cuts, one per use:

* the demo corpus shipped in ``examples/swiss-excerpt`` (``--laws``): whole acts, the main private-law,
  criminal, procedural and constitutional ones, every language version of each article, written as
  gzip-compressed ``corpus_<lang>.jsonl.gz`` (about 3 MB; the loader reads ``.jsonl.gz``);
* the trilingual test fixture ``tests/fixtures/trilingual`` (``--articles``): a few articles, plain JSONL.

Lines are copied as they are except ``meta.url`` (it repeats ``meta.eli``). The question sets
(``queries.<split>.tsv``, ``qrels.<split>.tsv``: the demo questions and the lay questions ``lay-tune``
and ``lay-check``) are written by hand and kept as they are, and ``dataset.json`` lists them; the Swiss
exam questions of the source dataset never enter the repository.

Usage::

    python scripts/make_example_corpus.py ../shared/data/swiss-statutes examples/swiss-excerpt \\
        --laws OR,ZGB,StGB,StPO,ZPO,SchKG,BV
    python scripts/make_example_corpus.py ../shared/data/swiss-statutes tests/fixtures/trilingual --plain \\
        --articles OR:41,OR:56,OR:257e,...
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

LANGUAGES = ("de", "fr", "it")
DEMO_LAWS = "OR,ZGB,StGB,StPO,ZPO,SchKG,BV"


def wanted(doc: dict, laws: set[str], articles: set[tuple[str, str]]) -> bool:
    meta = doc.get("meta") or {}
    law, article = meta.get("law_de", ""), meta.get("article", "")
    return law in laws or (law, article) in articles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="the swiss-statutes dataset folder (corpus_de/fr/it.jsonl)")
    parser.add_argument("target", help="folder to write")
    parser.add_argument("--laws", default="", help=f"whole acts by German abbreviation (demo: {DEMO_LAWS})")
    parser.add_argument("--articles", default="", help="single articles, LAW:ARTICLE,... (e.g. OR:257e)")
    parser.add_argument("--plain", action="store_true", help="write plain .jsonl instead of .jsonl.gz")
    parser.add_argument("--name", default="swiss-excerpt", help="dataset name in dataset.json")
    args = parser.parse_args()
    laws = {law.strip() for law in args.laws.split(",") if law.strip()}
    articles = {tuple(spec.strip().split(":", 1)) for spec in args.articles.split(",") if ":" in spec}
    if not laws and not articles:
        parser.error("name --laws or --articles")
    out = Path(args.target)
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    files = []
    for lang in LANGUAGES:
        name = f"corpus_{lang}.jsonl" + ("" if args.plain else ".gz")
        files.append(name)
        kept = []
        with open(Path(args.source) / f"corpus_{lang}.jsonl", encoding="utf-8") as src:
            for line in src:
                doc = json.loads(line)
                if wanted(doc, laws, articles):  # type: ignore[arg-type]
                    doc.get("meta", {}).pop("url", None)
                    kept.append(json.dumps(doc, ensure_ascii=False) + "\n")
        data = "".join(kept).encode("utf-8")
        if args.plain:
            (out / name).write_bytes(data)
        else:
            # mtime=0: the same input gives the same bytes, so a re-run leaves git with nothing to commit
            with open(out / name, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as fh:
                fh.write(data)
        counts[lang] = len(kept)
    splits = {q.name[len("queries."):-len(".tsv")]: len(q.read_text(encoding="utf-8").splitlines())
              for q in sorted(out.glob("queries.*.tsv"))}
    source_meta = json.loads((Path(args.source) / "dataset.json").read_text(encoding="utf-8"))
    meta = {
        "name": args.name,
        "language": ",".join(LANGUAGES),
        "task": "Swiss federal law in German, French and Italian: question -> statute article",
        "source": "excerpt of the swiss-statutes dataset: " + source_meta.get("source", "").split(";")[0],
        "license": "Swiss federal acts from Fedlex (official texts, not protected by copyright, URG Art. 5)",
        "laws": sorted(laws), "articles": sorted(f"{law}:{art}" for law, art in articles),
        "work_key": ["meta.law_de", "meta.article"],
        "corpus_size": counts,
        "corpus": files,
        "splits": splits,
    }
    (out / "dataset.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(counts)


if __name__ == "__main__":
    main()
