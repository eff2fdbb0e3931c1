"""Dataset folders (the ``../shared/data`` format) and user corpora in JSONL or CSV.

A dataset folder holds ``dataset.json``, one or more ``corpus*.jsonl`` files (possibly symlinks or
gzip-compressed ``corpus*.jsonl.gz``; the corpus is their union), ``queries.<split>.tsv``
(``qid<TAB>text``) and TREC ``qrels.<split>.tsv`` (``qid<TAB>0<TAB>docid<TAB>relevance``).

Malformed corpus lines are never dropped silently: they are skipped, counted and listed by file
and line number in a :class:`LoadReport`. In a corpus whose documents are versions of one another
(the same article in several languages, see :mod:`service.corpus.works`), a line without the fields
of the work key (a missing article number, an unknown law) is such a line.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import os
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import IO, Any

from service.corpus.model import LegalDoc, Query
from service.corpus.works import WorkRule, group_versions, rule_for, work_map
from service.errors import DataError

MAX_REPORTED_PROBLEMS = 50


@dataclass
class LoadReport:
    """Documents read and lines skipped, with ``file:line: reason`` for each skipped line."""

    read: int = 0
    skipped: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def skip(self, where: str, reason: str) -> None:
        self.skipped += 1
        self.problems.append(f"{where}: {reason}")

    def summary(self) -> str:
        """A human-readable summary listing the skipped lines (the first 50)."""
        notes = [f"  note: {n}" for n in self.notes[:MAX_REPORTED_PROBLEMS]]
        if not self.skipped:
            return "\n".join([f"read {self.read} documents", *notes])
        lines = [f"read {self.read} documents, skipped {self.skipped} malformed line(s):"]
        lines += [f"  {p}" for p in self.problems[:MAX_REPORTED_PROBLEMS]]
        if self.skipped > MAX_REPORTED_PROBLEMS:
            lines.append(f"  ... and {self.skipped - MAX_REPORTED_PROBLEMS} more")
        return "\n".join(lines + notes)


def safe_file_part(text: str) -> str:
    """``text`` with every character but letters, digits, ``-`` and ``_`` replaced by ``-``."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in text)


class Dataset:
    """A dataset folder. Cheap to construct; files are read on demand.

    Raises:
        DataError: when the folder does not exist or holds no corpus file.

    Example::

        ds = Dataset("../shared/data/coliee-en")
        docs = list(ds.corpus())
        queries, qrels = ds.queries("dev"), ds.qrels("dev")
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise DataError(f"data folder not found: {self.path}")
        self.corpus_files = sorted(p for pattern in ("corpus*.jsonl", "corpus*.jsonl.gz")
                                   for p in self.path.glob(pattern) if p.is_file())
        if not self.corpus_files:
            raise DataError(f"no corpus*.jsonl (or corpus*.jsonl.gz) file in {self.path}")
        meta_path = self.path / "dataset.json"
        self.meta: dict[str, Any] = {}
        if meta_path.is_file():
            try:
                self.meta = json.loads(meta_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise DataError(f"{meta_path} is not valid JSON: {exc}") from None

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or self.path.name)

    @property
    def file_stem(self) -> str:
        """A file-name-safe form of the folder name (``name`` is free text: "Swiss statutes (de/fr/it)")."""
        return safe_file_part(self.path.name)

    @property
    def language(self) -> str:
        """The corpus language, or the first one for multilingual corpora ('' if unknown)."""
        return self.languages[0] if self.languages else ""

    @property
    def query_language(self) -> str:
        """The language that analyses questions without their own: the corpus language, or '' (detect
        each question's) for a corpus in several languages, whose questions may be in any of them."""
        return self.language if len(self.languages) == 1 else ""

    @property
    def languages(self) -> tuple[str, ...]:
        """Every corpus language named by ``dataset.json``, in its order (``("de", "fr", "it")``)."""
        return tuple(lang.strip() for lang in str(self.meta.get("language", "")).split(",") if lang.strip())

    @cached_property
    def work_rule(self) -> WorkRule | None:
        """What makes two documents versions of one work (``None``: every document is its own work).

        Raises:
            DataError: for a malformed ``work_key`` in ``dataset.json``.
        """
        first = None
        for path in self.corpus_files:
            first = next(read_jsonl(path, LoadReport(), default_lang=self.language), None)
            if first is not None:
                break
        try:
            return rule_for(self.meta, self.languages, first)
        except ValueError as exc:
            raise DataError(f"{self.path / 'dataset.json'}: {exc}") from None

    def corpus(self, report: LoadReport | None = None) -> Iterator[LegalDoc]:
        """Every document of the union of the corpus files; later files win on a repeated id.

        When the corpus has a work rule, lines lacking its fields are reported and skipped.
        """
        report = report if report is not None else LoadReport()
        rule = self.work_rule
        check = rule.problem if rule is not None else None
        for path in self.corpus_files:
            yield from read_jsonl(path, report, default_lang=self.language, check=check)

    @cached_property
    def works(self) -> dict[str, str]:
        """Document id -> work id for every document that is one of several versions ({} when none)."""
        if self.work_rule is None:
            return {}
        return work_map(load_corpus(self))

    def splits(self) -> list[str]:
        return sorted(p.name[len("queries."):-len(".tsv")] for p in self.path.glob("queries.*.tsv"))

    def queries(self, split: str) -> list[Query]:
        """The queries of one split.

        Raises:
            DataError: when the split does not exist (the message lists those that do).
        """
        path = self.path / f"queries.{split}.tsv"
        if not path.is_file():
            have = ", ".join(self.splits()) or "none"
            raise DataError(f"no split {split!r} in {self.path} (splits present: {have})")
        query_language = self.query_language
        out = []
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                line = line.rstrip("\n")
                if not line.strip():
                    continue
                qid, sep, text = line.partition("\t")
                if not sep or not text.strip():
                    raise DataError(f"{path}:{lineno}: expected 'qid<TAB>text'")
                out.append(Query(text=text, qid=qid, lang=query_language))
        return out

    def qrels(self, split: str) -> dict[str, set[str]]:
        """Relevant ids per query id (relevance > 0) of one split, at work level.

        A gold id that is one version of a work (any language) is replaced by the work's id, the id
        search results carry, so a hit in any language counts for its article, and once.
        """
        path = self.path / f"qrels.{split}.tsv"
        if not path.is_file():
            raise DataError(f"no relevance file qrels.{split}.tsv in {self.path}")
        qrels = read_qrels(path)
        works = self.works
        if not works:
            return qrels
        return {qid: {works.get(d, d) for d in ids} for qid, ids in qrels.items()}

    def content_hash(self) -> str:
        """sha256 over the corpus files' bytes (in name order): the corpus's identity for caching."""
        digest = hashlib.sha256()
        for path in self.corpus_files:
            digest.update(path.name.encode())
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        return digest.hexdigest()


def trec_rows(path: str | os.PathLike[str], layout: str) -> Iterator[tuple[int, list[str]]]:
    """The line number and fields of every non-blank line of a TREC file (fields split on white space).

    ``layout`` names the fields (``"qid 0 docid relevance"``); every line must have that many.

    Raises:
        DataError: naming the file, the line and the expected layout.
    """
    width = len(layout.split())
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != width:
                raise DataError(f"{path}:{lineno}: expected '{layout}'")
            yield lineno, parts


def read_qrels(path: str | os.PathLike[str]) -> dict[str, set[str]]:
    """Read TREC qrels (``qid 0 docid rel``, tab or space separated); keeps relevance > 0."""
    qrels: dict[str, set[str]] = {}
    for lineno, (qid, _, docid, rel) in trec_rows(path, "qid 0 docid relevance"):
        try:
            relevant = float(rel) > 0
        except ValueError:
            raise DataError(f"{path}:{lineno}: relevance {rel!r} is not a number") from None
        if relevant:
            qrels.setdefault(qid, set()).add(docid)
    return qrels


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_jsonl(path: Path, report: LoadReport, *, default_lang: str = "",
               field_map: Mapping[str, str] | None = None,
               check: Callable[[LegalDoc], str | None] | None = None) -> Iterator[LegalDoc]:
    """Documents of one JSONL file (gzip-compressed when it ends in ``.gz``); bad lines are recorded in
    ``report`` and skipped. ``check`` returns why a well-formed document must still be skipped."""
    try:
        fh = _open_text(path)
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror}") from None
    with fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path.name}:{lineno}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                report.skip(where, f"invalid JSON ({exc.msg})")
                continue
            if not isinstance(data, dict):
                report.skip(where, "line is not a JSON object")
                continue
            doc = _to_doc(data, report, where, default_lang, field_map, check)
            if doc is not None:
                yield doc


def _to_doc(data: dict[str, Any], report: LoadReport, where: str, default_lang: str,
            field_map: Mapping[str, str] | None,
            check: Callable[[LegalDoc], str | None] | None = None) -> LegalDoc | None:
    if field_map:
        data = {ours: data.get(theirs) for ours, theirs in field_map.items()} | {
            k: v for k, v in data.items() if k not in field_map.values()
        }
    if default_lang and not data.get("lang"):
        data = {**data, "lang": default_lang}
    try:
        doc = LegalDoc.from_dict(data)
    except (ValueError, TypeError) as exc:
        report.skip(where, str(exc))
        return None
    if not doc.text.strip():
        report.skip(where, f"document {doc.id!r} has an empty text")
        return None
    problem = check(doc) if check is not None else None
    if problem:
        report.skip(where, f"document {doc.id!r}: {problem}")
        return None
    report.read += 1
    return doc


def read_user_corpus(path: str | os.PathLike[str], report: LoadReport, *, fmt: str = "",
                     field_map: Mapping[str, str] | None = None, default_lang: str = "") -> Iterator[LegalDoc]:
    """Documents from a user's JSONL or CSV file.

    Args:
        path: the file.
        fmt: ``jsonl`` or ``csv`` ('' = from the file extension).
        field_map: our field name -> their column/key, e.g. ``{"id": "doc_no", "text": "body"}``.
        default_lang: language for documents that name none.

    Raises:
        DataError: for a missing file, an unknown format, or a CSV without the mapped id/text columns.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"corpus file not found: {path}")
    fmt = fmt or path.suffix.lstrip(".").lower()
    if fmt in ("jsonl", "ndjson"):
        yield from read_jsonl(path, report, default_lang=default_lang, field_map=field_map)
        return
    if fmt != "csv":
        raise DataError(f"unknown corpus format {fmt!r} for {path}; use jsonl or csv")
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        columns = set(reader.fieldnames or ())
        mapping = dict(field_map or {})
        for needed in ("id", "text"):
            if mapping.get(needed, needed) not in columns:
                raise DataError(f"{path}: no column {mapping.get(needed, needed)!r} for field {needed!r} "
                                f"(columns: {', '.join(sorted(columns))})")
        for lineno, row in enumerate(reader, start=2):
            data: dict[str, Any] = dict(row)
            if isinstance(data.get(mapping.get("cites", "cites")), str):
                key = mapping.get("cites", "cites")
                data[key] = [c.strip() for c in data[key].split(";") if c.strip()]
            doc = _to_doc(data, report, f"{path.name}:{lineno}", default_lang, field_map)
            if doc is not None:
                yield doc


def carve_split(dataset: Dataset, source: str, out_dir: str | os.PathLike[str], *,
                parts: Mapping[str, float], seed: int = 42) -> dict[str, int]:
    """Write a derived dataset folder whose queries of ``source`` are split into ``parts``.

    The corpus files are symlinked, not copied; ``dataset.json`` records the derivation. Query
    order is shuffled with ``random.Random(seed)`` over the sorted query ids, so the split is
    reproducible. Fractions are normalised; the last part takes the remainder.

    Example::

        carve_split(Dataset("../shared/data/stard"), "train", "data/stard-split",
                    parts={"fit": 0.81, "dev": 0.19}, seed=42)
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    queries = dataset.queries(source)
    qrels = dataset.qrels(source)
    qids = sorted(q.qid for q in queries)
    random.Random(seed).shuffle(qids)
    total = sum(parts.values())
    sizes: dict[str, int] = {}
    start = 0
    names = list(parts)
    for i, name in enumerate(names):
        size = len(qids) - start if i == len(names) - 1 else round(len(qids) * parts[name] / total)
        chosen = set(qids[start:start + size])
        start += size
        sizes[name] = len(chosen)
        with open(out / f"queries.{name}.tsv", "w", encoding="utf-8") as fh:
            for q in queries:
                if q.qid in chosen:
                    fh.write(f"{q.qid}\t{q.text}\n")
        with open(out / f"qrels.{name}.tsv", "w", encoding="utf-8") as fh:
            for qid in sorted(chosen):
                for docid in sorted(qrels.get(qid, ())):
                    fh.write(f"{qid}\t0\t{docid}\t1\n")
    for corpus in dataset.corpus_files:
        link = out / corpus.name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.relpath(corpus.resolve(), out.resolve()))
    meta = dict(dataset.meta)
    meta["name"] = f"{dataset.name}-{'-'.join(names)}"
    meta["splits"] = sizes
    meta["derived_from"] = {"dataset": str(dataset.path), "split": source, "seed": seed,
                            "parts": dict(parts)}
    (out / "dataset.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return sizes


def load_corpus(dataset: Dataset, report: LoadReport | None = None,
                transform: Callable[[LegalDoc], LegalDoc] | None = None) -> list[LegalDoc]:
    """The whole corpus as a list, one document per id.

    Within a corpus the last line of a repeated id wins (and the repeat is reported). When two
    corpus files in different languages use the same id for parallel texts (the Swiss de/en
    corpora do), the later file's document is kept as ``<id>_<lang>`` instead of replacing the other.
    When the dataset has a work rule, the versions of each work are grouped (``LegalDoc.versions``).
    """
    report = report if report is not None else LoadReport()
    by_id: dict[str, LegalDoc] = {}
    renamed = 0
    for doc in dataset.corpus(report):
        previous = by_id.get(doc.id)
        if previous is not None and previous.lang and doc.lang and previous.lang != doc.lang:
            doc = replace(doc, id=f"{doc.id}_{doc.lang}")
            renamed += 1
        elif previous is not None:
            report.notes.append(f"duplicate id {doc.id!r}: the later line replaces the earlier one")
        by_id[doc.id] = transform(doc) if transform else doc
    if renamed:
        report.notes.append(f"{renamed} ids repeat across corpus files in another language; "
                               "the later copies got the suffix _<lang>")
    docs = list(by_id.values())
    rule = dataset.work_rule
    if rule is not None:
        docs = group_versions(docs, rule, dataset.languages)
        works = len({d.work for d in docs})
        report.notes.append(f"{len(docs)} documents are {works} works (versions grouped by {rule})")
    return docs
