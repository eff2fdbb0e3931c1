"""Snippets: the best short window of a document, with the words that matched the query marked."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from service.analysis.chain import analyzer_for

_LATIN_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True)
class Snippet:
    """A window of the text and the character spans (relative to ``text``) that matched."""

    text: str
    spans: tuple[tuple[int, int], ...]

    def render(self, before: str = "«", after: str = "»", escape: Callable[[str], str] = str) -> str:
        """The text with each matched span wrapped in ``before``/``after`` (e.g. ``<em>``/``</em>``);
        ``escape`` (e.g. ``html.escape``) is applied to the text pieces, not to the marks."""
        out, last = [], 0
        for start, end in self.spans:
            out.append(escape(self.text[last:start]))
            out.append(f"{before}{escape(self.text[start:end])}{after}")
            last = end
        out.append(escape(self.text[last:]))
        return "".join(out)


def _word_spans(text: str, lang: str) -> list[tuple[int, int]]:
    if lang == "zh":
        from service.analysis.chain import _jieba

        return [(start, end) for _, start, end in _jieba().tokenize(text)]
    return [m.span() for m in _LATIN_WORD.finditer(text)]


def make_snippet(text: str, query: str, lang: str, *, max_chars: int = 240) -> Snippet:
    """The window of at most ``max_chars`` holding the most query terms, and the matched spans.

    Matching compares analysed forms (stems, jieba words), so "Kündigung" in a question marks
    "gekündigt"-free "Kündigungen" in the text when both stem alike. The question's terms are those it
    searches (:meth:`~service.analysis.chain.Analyzer.query_tokens`): the parties' letters of a case
    ("A kauft von B") mark no lettered item ("b. für Mängel").
    """
    analyzer = analyzer_for(lang)
    terms = set(analyzer.query_tokens(query))
    matches = []
    if terms:
        for start, end in _word_spans(text, analyzer.lang):
            toks = analyzer.tokens(text[start:end])
            if toks and toks[0] in terms:
                matches.append((start, end))
    if len(text) <= max_chars:
        return Snippet(text, tuple(matches))
    best_start, best_count = 0, -1
    for i, (start, _) in enumerate(matches):
        window_start = max(0, start - max_chars // 4)
        count = sum(1 for s, e in matches[i:] if e <= window_start + max_chars)
        if count > best_count:
            best_start, best_count = window_start, count
    window_end = min(len(text), best_start + max_chars)
    prefix = "…" if best_start > 0 else ""
    suffix = "…" if window_end < len(text) else ""
    shift = len(prefix) - best_start
    spans = tuple((s + shift, e + shift) for s, e in matches if s >= best_start and e <= window_end)
    return Snippet(prefix + text[best_start:window_end] + suffix, spans)
