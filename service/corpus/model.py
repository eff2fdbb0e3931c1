"""The document model: legal documents, queries, filters and search hits.

Everything that crosses a layer boundary is one of these types, so backends, rerankers,
agents and the API agree on one shape.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import date as Date
from typing import Any


class DocKind(enum.StrEnum):
    """What a document is: a statute article, a leading decision or another decision."""

    STATUTE = "statute"
    LEADING_DECISION = "leading_decision"
    DECISION = "decision"


KIND_GROUPS: dict[str, tuple[str, ...]] = {
    "statutes": (DocKind.STATUTE.value,),
    "decisions": (DocKind.LEADING_DECISION.value, DocKind.DECISION.value),
}
"""The two groups of documents an index of statutes and decisions is searched in one by one
(service/pipelines/kinds.py), each with its kinds, statutes first; their fusion weights are
calibrated apart (service/fusion_calibration.py)."""


def kind_groups(kinds: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The groups of :data:`KIND_GROUPS` that some of ``kinds`` fall in, each with those of its kinds present."""
    present = set(kinds)
    found = {name: tuple(k for k in members if k in present) for name, members in KIND_GROUPS.items()}
    return {name: members for name, members in found.items() if members}


@dataclass(frozen=True, slots=True)
class LegalDoc:
    """One citable unit of law: a statute article or a court decision.

    ``id`` is unique and stable within a corpus and never contains whitespace.
    ``cites`` holds normalised citations found in the text (see :mod:`service.corpus.citations`).
    ``date`` is an ISO date (``YYYY-MM-DD``) or ``None``.
    ``versions`` lists the ids of every version of the *work* this document is one version of (the
    same article in German, French and Italian), the work's own id first; ``()`` means the document
    is a work of its own. Search returns one hit per work (see :mod:`service.corpus.works`).
    """

    id: str
    citation: str
    text: str
    title: str = ""
    lang: str = ""
    law: str = ""
    kind: DocKind = DocKind.STATUTE
    date: str | None = None
    court: str = ""
    division: str = ""
    chamber: str = ""
    case_type: str = ""
    cites: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if not self.id or any(ch.isspace() for ch in self.id):
            raise ValueError(f"document id must be non-empty and contain no whitespace: {self.id!r}")
        if not isinstance(self.kind, DocKind):
            object.__setattr__(self, "kind", DocKind(self.kind))
        if self.date:
            _check_date("date", self.date)
        if not isinstance(self.cites, tuple):
            object.__setattr__(self, "cites", tuple(self.cites))
        if not isinstance(self.versions, tuple):
            object.__setattr__(self, "versions", tuple(self.versions))
        if self.versions and self.id not in self.versions:
            raise ValueError(f"document {self.id!r} is missing from its own versions {list(self.versions)}")

    @property
    def work(self) -> str:
        """The id that stands for the work: its first version's id, or the document's own id."""
        return self.versions[0] if self.versions else self.id

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with every field (the corpus line format); ``versions`` only when set."""
        out: dict[str, Any] = {
            "id": self.id,
            "citation": self.citation,
            "title": self.title,
            "text": self.text,
            "lang": self.lang,
            "law": self.law,
            "kind": self.kind.value,
            "date": self.date,
            "court": self.court,
            "division": self.division,
            "chamber": self.chamber,
            "case_type": self.case_type,
            "cites": list(self.cites),
            "meta": self.meta,
        }
        if self.versions:
            out["versions"] = list(self.versions)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LegalDoc:
        """Build a document from a corpus line; unknown keys go into ``meta``.

        Raises:
            ValueError: when ``id`` or ``text`` is missing, or a field has the wrong type.
        """
        known = {
            "id", "citation", "title", "text", "lang", "law", "kind", "date", "court",
            "division", "chamber", "case_type", "cites", "versions", "meta",
        }
        if "id" not in data or data["id"] in (None, ""):
            raise ValueError("missing field 'id'")
        if "text" not in data or data["text"] is None:
            raise ValueError("missing field 'text'")
        meta = dict(data.get("meta") or {})
        meta.update({k: v for k, v in data.items() if k not in known})
        strings = {}
        for key in ("citation", "title", "text", "lang", "law", "court", "division", "chamber", "case_type"):
            value = data.get(key)
            if value is None:
                value = ""
            if not isinstance(value, str):
                if isinstance(value, int | float) and not isinstance(value, bool):
                    value = str(value)
                else:
                    raise ValueError(f"field {key!r} must be a string, got {type(value).__name__}")
            strings[key] = value
        cites = data.get("cites") or ()
        if isinstance(cites, str) or not all(isinstance(c, str) for c in cites):
            raise ValueError("field 'cites' must be a list of strings")
        versions = data.get("versions") or ()
        if isinstance(versions, str) or not all(isinstance(v, str) for v in versions):
            raise ValueError("field 'versions' must be a list of document ids")
        return cls(
            id=str(data["id"]),
            citation=strings["citation"] or str(data["id"]),
            kind=DocKind(data.get("kind") or DocKind.STATUTE.value),
            date=(data.get("date") or None),
            cites=tuple(cites),
            versions=tuple(versions),
            meta=meta,
            **{k: v for k, v in strings.items() if k != "citation"},
        )

    def with_cites(self, cites: tuple[str, ...]) -> LegalDoc:
        """A copy with ``cites`` replaced."""
        return replace(self, cites=cites)


@dataclass(frozen=True, slots=True)
class Query:
    """One question, with an optional id (benchmarks) and language (``""`` = detect)."""

    text: str
    qid: str = ""
    lang: str = ""


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a candidate came from: which agent, in which round, at what rank, for which query text."""

    agent: str
    round: int
    rank: int
    query: str = ""


@dataclass(slots=True)
class Hit:
    """One ranked result.

    ``score`` is the score of the last stage that ordered the list. ``scores`` keeps every
    stage's score (``{"bm25": 12.1, "knn": 0.61, "rrf": 0.031}``) and ``ranks`` every stage's
    1-based rank, so a result always carries its evidence. ``provenance`` lists the agents and
    rounds that found it.
    """

    doc_id: str
    score: float
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)
    provenance: list[Provenance] = field(default_factory=list)
    doc: LegalDoc | None = None

    def to_dict(self, *, with_doc: bool = True) -> dict[str, Any]:
        """A JSON-ready dict (non-finite scores become ``None``)."""
        out: dict[str, Any] = {
            "doc_id": self.doc_id,
            "score": _finite(self.score),
            "scores": {k: _finite(v) for k, v in self.scores.items()},
            "ranks": dict(self.ranks),
            "provenance": [
                {"agent": p.agent, "round": p.round, "rank": p.rank, "query": p.query} for p in self.provenance
            ],
        }
        if with_doc and self.doc is not None:
            out["citation"] = self.doc.citation
            out["law"] = self.doc.law
            out["kind"] = self.doc.kind.value
            out["title"] = self.doc.title
        return out


def _check_date(name: str, value: str) -> None:
    try:
        Date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an ISO date (YYYY-MM-DD), got {value!r}") from None
    if len(value) != 10:
        raise ValueError(f"{name} must be an ISO date (YYYY-MM-DD), got {value!r}")


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


FILTER_FIELDS: tuple[str, ...] = ("law", "kind", "lang", "court", "division", "chamber", "case_type", "citation")
"""Keyword fields a filter may name (exact match, any of several values)."""


class UnknownFilterField(ValueError):
    """A filter named a field that cannot be filtered on."""


@dataclass(frozen=True, slots=True)
class Filters:
    """Metadata restrictions, applied inside every retriever (never after).

    ``terms`` maps a keyword field to the values allowed for it (any of them matches).
    ``date_from``/``date_to`` bound ``date`` inclusively; documents without a date never match a
    date bound.
    """

    terms: tuple[tuple[str, tuple[str, ...]], ...] = ()
    date_from: str | None = None
    date_to: str | None = None

    def __post_init__(self) -> None:
        for name, values in self.terms:
            if name not in FILTER_FIELDS:
                raise UnknownFilterField(
                    f"unknown filter field {name!r}; use one of: {', '.join(FILTER_FIELDS)}, date_from, date_to"
                )
            if not values:
                raise ValueError(f"filter {name!r} needs at least one value")
        for name, bound in (("date_from", self.date_from), ("date_to", self.date_to)):
            if bound:
                _check_date(name, bound)

    @classmethod
    def of(cls, date_from: str | None = None, date_to: str | None = None, **terms: str | list[str]) -> Filters:
        """Convenience constructor: ``Filters.of(law="ZGB", kind=["statute"])``."""
        items = []
        for name, values in sorted(terms.items()):
            vals = (values,) if isinstance(values, str) else tuple(values)
            items.append((name, vals))
        return cls(terms=tuple(items), date_from=date_from, date_to=date_to)

    @classmethod
    def parse(cls, specs: list[str]) -> Filters:
        """Parse CLI-style ``field=value[,value]`` strings, e.g. ``["law=ZGB,OR", "date_from=2020-01-01"]``.

        Raises:
            UnknownFilterField: for a field that cannot be filtered on.
            ValueError: for a spec without ``=`` or a malformed date.
        """
        terms: dict[str, list[str]] = {}
        date_from = date_to = None
        for spec in specs:
            if "=" not in spec:
                raise ValueError(f"filter {spec!r} must look like field=value")
            name, _, raw = spec.partition("=")
            name, raw = name.strip(), raw.strip()
            if name == "date_from":
                date_from = raw
            elif name == "date_to":
                date_to = raw
            else:
                if name not in FILTER_FIELDS:
                    raise UnknownFilterField(
                        f"unknown filter field {name!r}; use one of: {', '.join(FILTER_FIELDS)}, "
                        "date_from, date_to"
                    )
                terms.setdefault(name, []).extend(v.strip() for v in raw.split(",") if v.strip())
        return cls.of(date_from=date_from, date_to=date_to, **terms)

    def __bool__(self) -> bool:
        return bool(self.terms or self.date_from or self.date_to)

    def values(self, name: str) -> tuple[str, ...] | None:
        """The allowed values of one field, or ``None`` when the field is unrestricted."""
        for field_name, vals in self.terms:
            if field_name == name:
                return vals
        return None

    def matches(self, doc: LegalDoc) -> bool:
        """Whether ``doc`` passes every restriction (the reference semantics for all backends)."""
        for name, vals in self.terms:
            value = getattr(doc, name)
            if isinstance(value, DocKind):
                value = value.value
            if value not in vals:
                return False
        if self.date_from or self.date_to:
            if not doc.date:
                return False
            if self.date_from and doc.date < self.date_from:
                return False
            if self.date_to and doc.date > self.date_to:
                return False
        return True

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``{"law": [...], "date_from": ...}``."""
        out: dict[str, Any] = {name: list(vals) for name, vals in self.terms}
        if self.date_from:
            out["date_from"] = self.date_from
        if self.date_to:
            out["date_to"] = self.date_to
        return out

    def narrowed(self, name: str, values: tuple[str, ...]) -> Filters:
        """A copy with one more restriction; intersected with an existing one on the same field."""
        existing = self.values(name)
        new_vals = tuple(v for v in values if existing is None or v in existing)
        rest = tuple((n, v) for n, v in self.terms if n != name)
        return Filters(terms=(*rest, (name, new_vals or ("\x00",))), date_from=self.date_from,
                       date_to=self.date_to)
