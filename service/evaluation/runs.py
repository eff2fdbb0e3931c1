"""TREC run files: ``qid Q0 docid rank score tag`` per line, so every layer can be measured alone."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from service.corpus.datasets import trec_rows


def write_run(path: str | os.PathLike[str], run: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> None:
    """Write ``{qid: [(docid, score), ...]}`` (best first) as a TREC run file."""
    with open(path, "w", encoding="utf-8") as fh:
        for qid, ranked in run.items():
            for rank, (docid, score) in enumerate(ranked, start=1):
                fh.write(f"{qid} Q0 {docid} {rank} {score:.6f} {tag}\n")


def read_run(path: str | os.PathLike[str]) -> dict[str, list[tuple[str, float]]]:
    """Read a TREC run file into ``{qid: [(docid, score), ...]}`` ordered by rank."""
    rows: dict[str, list[tuple[int, str, float]]] = {}
    for _, (qid, _, docid, rank, score, _) in trec_rows(path, "qid Q0 docid rank score tag"):
        rows.setdefault(qid, []).append((int(rank), docid, float(score)))
    return {qid: [(d, s) for _, d, s in sorted(items)] for qid, items in rows.items()}
