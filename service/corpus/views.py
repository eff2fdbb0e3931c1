"""What of a document each retriever sees: the BM25 text and the embedding text.

Kept in one place so every backend indexes the same text and results stay comparable.
"""

from __future__ import annotations

from service.corpus.model import LegalDoc

EMBEDDING_MAX_CHARS = 2000
"""Longer texts are cut: the embedders average over tokens and gain nothing from very long input."""


def bm25_text(doc: LegalDoc) -> str:
    """Citation, law name, headings and text: lay questions often name the law, rarely the article,
    and the headings above an article (``meta.heading_path``: "Die Aktiengesellschaft", "Der Mietvertrag")
    name its subject in the words a question uses."""
    parts = [doc.citation]
    if doc.law and doc.law not in doc.citation:
        parts.append(doc.law)
    parts.extend(h for h in headings(doc) if h != doc.title)
    if doc.title:
        parts.append(doc.title)
    parts.append(doc.text)
    return "\n".join(p for p in parts if p)


def headings(doc: LegalDoc) -> list[str]:
    """The headings above the article, outermost first (``meta.heading_path``; [] when absent)."""
    path = doc.meta.get("heading_path")
    if not isinstance(path, list | tuple):
        return []
    return [h.strip() for h in path if isinstance(h, str) and h.strip()]


def parent_headings(doc: LegalDoc) -> list[str]:
    """The headings above the article's own one (its title): the sections it belongs to, outermost first."""
    path = headings(doc)
    return path[:-1] if path and path[-1] == doc.title else path


def section_key(doc: LegalDoc) -> str | None:
    """The article's innermost section, as a key (its law and :func:`parent_headings`); ``None`` when the
    corpus gives no headings above it. Articles with equal keys stand under the same heading."""
    path = parent_headings(doc)
    return "\n".join([doc.law, *path]) if path else None


def embedding_text(doc: LegalDoc) -> str:
    """Law name, title and the start of the text, for the dense retriever."""
    head = " ".join(p for p in (doc.law, doc.title) if p)
    text = f"{head}\n{doc.text}" if head else doc.text
    return text[:EMBEDDING_MAX_CHARS]
