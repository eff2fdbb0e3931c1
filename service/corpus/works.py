"""Works and their versions: documents that are versions of one another count as one.

A *work* is what a lawyer cites: Art. 257e OR is one article, whether it is read in German,
French or Italian. A corpus that holds several language versions of its articles names, per
document, the fields that identify the work (a :class:`WorkRule`, e.g. the German law
abbreviation plus the article number); the loader groups the documents by that key and gives
every version the same ``versions`` tuple, whose first id stands for the work (the version in the
corpus's first language). Search then returns one hit per work (:func:`collapse`), evaluation
matches by work (:func:`work_map`), and the response shows the version in the question's language.

Where the rule comes from (:func:`rule_for`):

1. ``work_key`` in ``dataset.json`` (``["meta.law_de", "meta.article"]``);
2. a ``work`` field in the corpus lines (any string shared by the versions);
3. for a corpus in several languages whose documents carry ``meta.article`` and the law's name in
   the first language, ``meta.law_<lang>``: that pair (the convention of the Swiss federal statutes
   from Fedlex: ``meta.law_de`` + ``meta.article``).

Example::

    rule = WorkRule.parse("meta.law_de,meta.article")
    docs = group_versions(docs, rule, languages=("de", "fr", "it"))
    docs[0].versions          # ('OR-art257e-de', 'OR-art257e-fr', 'OR-art257e-it')
    collapse(hits, {d.id: d.work for d in docs}.get, k=10, label="bm25")
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from service.corpus.model import Hit, LegalDoc

WORK_FIELD = "work"
"""The corpus-line field naming a document's work explicitly (unknown fields land in ``meta``)."""


@dataclass(frozen=True)
class WorkRule:
    """The fields whose values together identify a document's work.

    A field is a LegalDoc attribute (``law``), a ``meta.<key>`` path, or a key of the corpus line that
    the loader kept in ``meta`` (``work``). With ``required``, a document lacking a field is a bad corpus
    line; without, it is a work of its own (an explicit ``work`` field is optional).
    """

    fields: tuple[str, ...]
    required: bool = True

    @classmethod
    def parse(cls, spec: str | Sequence[str]) -> WorkRule:
        """``"meta.law_de,meta.article"`` or a list of field paths.

        Raises:
            ValueError: for an empty rule, or a field that is not a string.
        """
        parts = spec.split(",") if isinstance(spec, str) else list(spec)
        if not all(isinstance(p, str) for p in parts):
            raise ValueError(f"a work key lists field paths as strings, got {list(parts)!r}")
        fields = tuple(p.strip() for p in parts if p.strip())
        if not fields:
            raise ValueError("a work key needs at least one field, e.g. meta.law_de,meta.article")
        return cls(fields)

    def __str__(self) -> str:
        return " + ".join(self.fields)

    def value(self, doc: LegalDoc, path: str) -> str:
        """The value of one field of ``doc`` as a string ('' when absent)."""
        if path.startswith("meta."):
            raw: Any = doc.meta.get(path[len("meta."):])
        elif path in LegalDoc.__dataclass_fields__:
            raw = getattr(doc, path)
        else:
            raw = doc.meta.get(path)
        return "" if raw is None or isinstance(raw, dict | list) else str(raw).strip()

    def key(self, doc: LegalDoc) -> str | None:
        """The work key of ``doc``, or ``None`` when a field is missing."""
        values = [self.value(doc, f) for f in self.fields]
        return None if not all(values) else "\x1f".join(values)

    def problem(self, doc: LegalDoc) -> str | None:
        """Why ``doc`` must be skipped for lacking its work key (a reason for the load report), or ``None``."""
        if not self.required:
            return None
        for path in self.fields:
            if self.value(doc, path):
                continue
            name = path.rsplit(".", 1)[-1]
            if "article" in name:
                return f"missing article number ({path} is empty or absent; the work key is {self})"
            if "law" in name:
                return f"unknown law ({path} is empty or absent; the work key is {self})"
            return f"missing {path} (the work key is {self})"
        return None


def rule_for(meta: Mapping[str, Any], languages: Sequence[str], first: LegalDoc | None) -> WorkRule | None:
    """The work rule of a dataset (see the module docstring), or ``None`` when its documents are all works
    of their own.

    Args:
        meta: the dataset's ``dataset.json``.
        languages: the corpus languages, first one first.
        first: the first document of the corpus (what the corpus lines look like).

    Raises:
        ValueError: for a malformed ``work_key`` in ``dataset.json``.
    """
    declared = meta.get("work_key")
    if declared:
        if not isinstance(declared, str | list):
            raise ValueError("dataset.json: work_key must be a list of field paths")
        return WorkRule.parse(declared)
    if first is None:
        return None
    if first.meta.get(WORK_FIELD):
        return WorkRule((WORK_FIELD,), required=False)
    if len(languages) > 1:
        law_key = f"law_{languages[0]}"
        if first.meta.get(law_key) and first.meta.get("article"):
            return WorkRule((f"meta.{law_key}", "meta.article"))
    return None


def group_versions(docs: Iterable[LegalDoc], rule: WorkRule, languages: Sequence[str] = ()) -> list[LegalDoc]:
    """Give every document the ``versions`` of its work: the ids sharing its work key, ordered by
    ``languages`` (then corpus order), so the first id is the version in the first language.

    Documents without a work key stay works of their own (the loader has reported them already).
    A work with a single version gets no ``versions``.
    """
    docs = list(docs)
    rank = {lang: i for i, lang in enumerate(languages)}
    groups: dict[str, list[int]] = {}
    for position, doc in enumerate(docs):
        key = rule.key(doc)
        if key is not None:
            groups.setdefault(key, []).append(position)
    out = list(docs)
    for members in groups.values():
        if len(members) < 2:
            if docs[members[0]].versions:
                out[members[0]] = replace(docs[members[0]], versions=())
            continue
        ordered = sorted(members, key=lambda p: (rank.get(docs[p].lang, len(rank)), p))
        versions = tuple(docs[p].id for p in ordered)
        for p in members:
            out[p] = replace(docs[p], versions=versions)
    return out


def work_map(docs: Iterable[LegalDoc]) -> dict[str, str]:
    """Document id -> work id, for the documents that are versions of a work with several versions."""
    return {doc.id: doc.work for doc in docs if doc.versions}


def collapse(hits: Sequence[Hit], work_of: Callable[[str], str | None], *, k: int, label: str) -> list[Hit]:
    """One hit per work: the best-ranked version of each work, renamed to the work's id.

    ``hits`` must be ordered best first (as every retriever returns them); the kept hit keeps its
    version's score, so a work scores as its best-matching version. Ranks under ``label`` are
    renumbered 1..n. At most ``k`` hits are returned.

    Args:
        hits: one retriever's hits over document versions.
        work_of: document id -> work id (``None`` or the id itself for a work of its own).
        k: how many works to return.
        label: the retriever's score label (``bm25``, ``knn``).
    """
    out: list[Hit] = []
    seen: set[str] = set()
    for hit in hits:
        work = work_of(hit.doc_id) or hit.doc_id
        if work in seen:
            continue
        seen.add(work)
        if work != hit.doc_id or hit.ranks.get(label) != len(out) + 1:
            hit = replace(hit, doc_id=work, ranks={**hit.ranks, label: len(out) + 1})
        out.append(hit)
        if len(out) >= k:
            break
    return out
