"""The structure of a statute corpus: which law each article belongs to, its place in that law,
and the citation links between articles.

Built once per index from :meth:`SearchBackend.scan` (about 3 s for the 58,625 STARD articles) and
shared by the supportive agent (citation and neighbour expansion), the law prior and the
reranker's features. Everything is keyed by document id, so a graph built from one index serves
any dataset folder that shares the corpus.

Example::

    graph = CorpusGraph.build(backend.scan("stard"))
    graph.law_of("13498")                 # '中华人民共和国民法典'
    graph.neighbours("13498")             # ids of articles 713 and 715 of the same law
    graph.cites("13498"), graph.cited_by("13498")
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from service.corpus.citations import article_of, law_alias
from service.corpus.model import LegalDoc
from service.corpus.views import parent_headings

BLOCK_SIZE = 40
"""Articles per block: consecutive articles of one law that form a coarse "section" label."""

_LEADING = re.compile(r"(\d+)(.*)")


@dataclass(frozen=True, slots=True)
class ArticleInfo:
    """What the graph knows about one document.

    Attributes:
        law: the document's law (``doc.law``, else the law of its citation), '' when unknown.
        position: 0-based place of the article within its law, in article-number order.
        law_size: how many articles that law has in the corpus.
        number: the leading article number (``573`` for ``§ 573b``), 0 when none.
        length: characters of the text.
        heading: the headings above the article's own one (``meta.heading_path`` without the
            article's title), joined; '' when the corpus has none.
    """

    law: str
    position: int
    law_size: int
    number: int
    length: int
    heading: str = ""

    @property
    def block(self) -> str:
        """A coarse section label: the law plus the block of :data:`BLOCK_SIZE` articles."""
        return f"{self.law}#{self.position // BLOCK_SIZE}"


def _sort_key(article: str) -> tuple[int, str]:
    match = _LEADING.match(article)
    return (int(match.group(1)), match.group(2)) if match else (10**9, article)


class CorpusGraph:
    """Laws, article order and citation links of one corpus. Read-only after :meth:`build`."""

    def __init__(self, info: dict[str, ArticleInfo], by_law: dict[str, list[str]],
                 cites: dict[str, tuple[str, ...]], cited_by: dict[str, tuple[str, ...]],
                 by_key: dict[str, tuple[str, ...]] | None = None,
                 citations: dict[str, str] | None = None) -> None:
        self._info = info
        self._by_law = by_law
        self._laws = tuple(by_law)
        self._cites = cites
        self._cited_by = cited_by
        self._by_key = by_key or {}
        self._citations = citations or {}
        self._acts: frozenset[str] | None = None

    @classmethod
    def build(cls, docs: Iterable[LegalDoc]) -> CorpusGraph:
        """Index the documents: laws, article order, and citation keys resolved to document ids.

        A citation key that matches several documents (the same article in two versions of a
        law) links to all of them; keys that match none are ignored.
        """
        rows: list[tuple[str, str, tuple[int, str], int, tuple[str, ...]]] = []
        by_key: dict[str, list[str]] = {}
        citations: dict[str, str] = {}
        section: dict[str, str] = {}
        for doc in docs:
            citations[doc.id] = doc.citation
            citation = article_of(doc.citation, law=doc.law, lang=doc.lang)
            law = doc.law or (citation.law if citation else "")
            order = _sort_key(citation.article) if citation else (10**9, doc.id)
            rows.append((doc.id, law, order, len(doc.text), doc.cites))
            path = parent_headings(doc)
            if path:
                section[doc.id] = sys.intern(" / ".join(path))
            if citation is not None:
                by_key.setdefault(citation.key, []).append(doc.id)
        groups: dict[str, list[tuple[tuple[int, str], str]]] = {}
        for doc_id, law, order, _, _ in rows:
            groups.setdefault(law, []).append((order, doc_id))
        by_law: dict[str, list[str]] = {}
        position: dict[str, int] = {}
        for law, members in groups.items():
            members.sort()
            by_law[law] = [doc_id for _, doc_id in members]
            for i, (_, doc_id) in enumerate(members):
                position[doc_id] = i
        info: dict[str, ArticleInfo] = {}
        cites: dict[str, tuple[str, ...]] = {}
        reverse: dict[str, list[str]] = {}
        for doc_id, law, order, length, keys in rows:
            number = order[0] if order[0] < 10**9 else 0
            info[doc_id] = ArticleInfo(law=law, position=position[doc_id], law_size=len(by_law[law]),
                                       number=number, length=length, heading=section.get(doc_id, ""))
            targets = tuple(dict.fromkeys(t for key in keys for t in by_key.get(key, ()) if t != doc_id))
            if targets:
                cites[doc_id] = targets
                for target in targets:
                    reverse.setdefault(target, []).append(doc_id)
        cited_by = {k: tuple(v) for k, v in reverse.items()}
        return cls(info, by_law, cites, cited_by, {k: tuple(v) for k, v in by_key.items()}, citations)

    def __len__(self) -> int:
        return len(self._info)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._info

    def ids(self) -> list[str]:
        """Every document id of the corpus."""
        return list(self._info)

    def info(self, doc_id: str) -> ArticleInfo | None:
        """The article facts of ``doc_id``, or ``None`` for an unknown id."""
        return self._info.get(doc_id)

    def law_of(self, doc_id: str) -> str:
        """The law of ``doc_id`` ('' for an unknown id)."""
        info = self._info.get(doc_id)
        return info.law if info else ""

    def laws(self) -> tuple[str, ...]:
        """Every law of the corpus ('' for documents without one); the same tuple on every call."""
        return self._laws

    def acts(self) -> frozenset[str]:
        """The acts of the corpus: its laws by :func:`law_alias`, so that the German ``OR`` and the French
        ``CO`` are one act ('' left out). Computed once (1,338 names for STARD)."""
        if self._acts is None:
            self._acts = frozenset(law_alias(law) for law in self._laws if law)
        return self._acts

    def articles_of(self, law: str) -> Sequence[str]:
        """The document ids of one law, in article order."""
        return self._by_law.get(law, ())

    def section_articles(self, section: str) -> Sequence[str]:
        """The document ids of one section (``ArticleInfo.block``, ``"<law>#<n>"``), in article order."""
        law, _, block = section.rpartition("#")
        if not block.isdigit():
            return ()
        start = int(block) * BLOCK_SIZE
        return self._by_law.get(law, [])[start:start + BLOCK_SIZE]

    def citation(self, doc_id: str) -> str:
        """The document's citation as indexed ('' for an unknown id)."""
        return self._citations.get(doc_id, "")

    def resolve(self, key: str) -> tuple[str, ...]:
        """The documents of a citation key (``"OR art. 725"``, :attr:`Citation.key`); () when none."""
        return self._by_key.get(key, ())

    def cites(self, doc_id: str) -> tuple[str, ...]:
        """Documents that ``doc_id`` cites (resolved citation keys)."""
        return self._cites.get(doc_id, ())

    def cited_by(self, doc_id: str) -> tuple[str, ...]:
        """Documents that cite ``doc_id``."""
        return self._cited_by.get(doc_id, ())

    def without_citations(self) -> CorpusGraph:
        """The same graph with no citation links (laws, order and neighbours kept), sharing its tables."""
        return CorpusGraph(self._info, self._by_law, {}, {}, self._by_key, self._citations)

    def neighbours(self, doc_id: str, span: int = 1) -> list[str]:
        """Articles within ``span`` places of ``doc_id`` in the same law, nearest first."""
        info = self._info.get(doc_id)
        if info is None:
            return []
        members = self._by_law[info.law]
        out = []
        for step in range(1, span + 1):
            for pos in (info.position - step, info.position + step):
                if 0 <= pos < len(members):
                    out.append(members[pos])
        return out
