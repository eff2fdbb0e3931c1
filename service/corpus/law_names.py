"""Every name a law goes by in an index's languages, so that a law filter means the law in all of them.

In a corpus with several language versions of its articles, each version carries its own law
abbreviation: the Code of Obligations is ``OR`` in German and ``CO`` in French and Italian. A filter
``law=OR`` should restrict the search to that act, in every language, so that a French question still
meets the French text. :meth:`LawNames.widen` turns the law values of a filter into every name of the
acts they name.

An act is identified by the law of its works' first versions (the first corpus language). A name is
added only when every document under that name belongs to the acts asked for, so that a name two
acts share never lets the other act in (on the Swiss federal statutes, 3 of 472 names are shared by
two acts, e.g. the Italian ``LTC``; a filter on another name of such an act keeps only its versions
whose names are its own).

Example::

    names = LawNames.from_docs(docs)            # docs: every version, with their works
    names.names_of("OR")                        # ('CO', 'OR')
    names.widen(Filters.of(law="CO")).terms     # (('law', ('CO', 'OR')),)
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from service.corpus.model import Filters, LegalDoc


@dataclass(frozen=True)
class LawNames:
    """For each law name in an index, the acts whose versions go by it.

    Attributes:
        acts: law name -> the acts having a version under that name, each named by its first-language
            name (or, for a name no first-language version goes with, by the name itself).
    """

    acts: Mapping[str, frozenset[str]]

    @classmethod
    def from_docs(cls, docs: Iterable[LegalDoc]) -> LawNames:
        """The law names of the documents, each with the acts of the works it names."""
        return cls.from_rows((doc.law, doc.lang, doc.work, doc.id) for doc in docs)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, str, str]]) -> LawNames:
        """As :meth:`from_docs`, from each document's ``(law, language, work id, id)``.

        A work's act is the law of its first version, counted only where that version is in the corpus's
        first language (the language most works start with): an article that lacks its first-language
        version starts with a translation, whose name would make a second act of the same law.
        """
        works: dict[str, set[str]] = defaultdict(set)  # law name -> the works of its documents
        first: dict[str, tuple[str, str]] = {}  # work id -> (law, language) of its first version
        for law, lang, work, doc_id in rows:
            if law:
                works[law].add(work)
                if work == doc_id:
                    first[doc_id] = (law, lang)
        languages = Counter(lang for _, lang in first.values())
        main = languages.most_common(1)[0][0] if languages else ""
        acts = {}
        for name, ids in works.items():
            owners = {first[w][0] for w in ids if w in first and first[w][1] == main}
            acts[name] = frozenset(owners or {name})
        return cls(acts)

    def names_of(self, name: str) -> tuple[str, ...]:
        """Every name of the acts called ``name`` in some language (``name`` itself included), sorted;
        a name that also belongs to another act is left out."""
        acts = self.acts.get(name)
        if not acts:
            return (name,)
        return tuple(sorted({other for other, owners in self.acts.items() if owners <= acts} | {name}))

    def widen(self, filters: Filters | None) -> Filters | None:
        """``filters`` with its law values widened to every name of their acts (unchanged without a law
        filter, or when no act has another name)."""
        if filters is None or not self.multilingual:
            return filters
        terms = []
        for field, values in filters.terms:
            if field == "law":
                values = tuple(sorted({n for v in values for n in self.names_of(v)}))
            terms.append((field, values))
        return replace(filters, terms=tuple(terms))

    @functools.cached_property
    def multilingual(self) -> bool:
        """Whether some act goes by more than one name (else widening never changes a filter)."""
        return any(acts != {name} for name, acts in self.acts.items())


def known_law_names(values: Iterable[str], known: Collection[str]) -> tuple[str, ...]:
    """``values`` with each one that is not a law name of ``known`` replaced by the one known name it
    equals ignoring case (``or`` → ``OR``); values with no such name, or with several (``Or`` and
    ``OR`` in one corpus), stay as they are. Order and duplicates are kept."""
    by_case: dict[str, list[str]] = defaultdict(list)
    for name in known:
        by_case[name.casefold()].append(name)
    out = []
    for value in values:
        matches = by_case.get(value.casefold(), [])
        out.append(value if value in known or len(matches) != 1 else matches[0])
    return tuple(out)
