"""Reading the engine analyzer definitions: ``analyzers/<lang>.json`` plus ``analyzers/synonyms/<lang>.txt``.

The same JSON files drive the client-side chain (:mod:`service.analysis.chain`), so stopwords and
stemmers agree between the embedded engine and the engines' per-language fields.
"""

from __future__ import annotations

from service.analysis.chain import analyzer_for, analyzers_dir
from service.backends._requests import BODY_FIELDS, LanguageAnalysis

ENGINE_ANALYZED: tuple[str, ...] = tuple(lang for lang in BODY_FIELDS if lang != "zh")
"""Languages whose ``body_<lang>`` field is analysed by the engine (Chinese is segmented client-side)."""


def read_synonyms(lang: str) -> tuple[str, ...]:
    """The rules in ``analyzers/synonyms/<lang>.txt`` (comments and blank lines dropped); ``()`` if none."""
    path = analyzers_dir() / "synonyms" / f"{lang}.txt"
    if not path.is_file():
        return ()
    rules = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            rules.append(line)
    return tuple(rules)


def language_analyses(synonyms_path: str = "") -> list[LanguageAnalysis]:
    """The engine analyzer inputs for de, fr, it and en.

    Args:
        synonyms_path: a path template in the engine's config directory, e.g.
            ``"analysis/legal-synonyms-{lang}.txt"``; when set it replaces the inline rules.
    """
    out = []
    for lang in ENGINE_ANALYZED:
        spec = analyzer_for(lang).spec  # cached: the compound-word list is large
        name = {"de": "german", "fr": "french", "it": "italian", "en": "english"}[lang]
        out.append(LanguageAnalysis(
            lang=lang, name=name, stopwords=tuple(sorted(spec.stopwords)), stemmer=spec.stemmer,
            synonyms=() if synonyms_path else read_synonyms(lang),
            synonyms_path=synonyms_path.format(lang=lang) if synonyms_path else "",
        ))
    return out
