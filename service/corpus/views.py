"""What of a document each retriever sees: the BM25 text and the embedding text.

Kept in one place so every backend indexes the same text and results stay comparable.
"""

from __future__ import annotations

from service.corpus.model import LegalDoc

EMBEDDING_MAX_CHARS = 2000
"""Longer texts are cut: the embedders average over tokens and gain nothing from very long input."""


def bm25_text(doc: LegalDoc) -> str:
    """Citation, law name, title and text: lay questions often name the law, rarely the article."""
    parts = [doc.citation]
    if doc.law and doc.law not in doc.citation:
        parts.append(doc.law)
    if doc.title:
        parts.append(doc.title)
    parts.append(doc.text)
    return "\n".join(p for p in parts if p)


def embedding_text(doc: LegalDoc) -> str:
    """Law name, title and the start of the text, for the dense retriever."""
    head = " ".join(p for p in (doc.law, doc.title) if p)
    text = f"{head}\n{doc.text}" if head else doc.text
    return text[:EMBEDDING_MAX_CHARS]
