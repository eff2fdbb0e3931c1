"""Language detection for queries and documents (de, fr, it, en, zh).

Legal questions are short and full of domain words, so a general n-gram detector guesses badly
on them. Two cheap, deterministic signals work better here: the script (Han characters mean
Chinese) and, for Latin script, which language's function words and letters appear.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
"""A word: a run of letters (no digits, no underscore), in any script."""

# Highly frequent function words of each language. A word of several languages counts for each of them
# in part (1 / the number of languages that list it), so the shared articles and prepositions of French
# and Italian ("la", "le", "un", "ai") neither decide nor are lost.
_MARKERS: dict[str, frozenset[str]] = {
    "de": frozenset(
        "der die das und ist nicht ich mein meine mit von zu den dem des ein eine einen einem wenn auf "
        "für sich auch wie aber oder wird werden kann muss hat habe haben bei nach vom zum zur über unter "
        "dass darf soll sind mir mich wir uns ihr sie es er gegen durch im als wer keine gilt gelten "
        "dieser diese dieses beim noch nur kein keinen keinem seit schon jetzt immer um aus ohne nichts etwas "
        "meinem meinen meiner meines ihm ihn ihnen können müssen dürfen bin bist"
        .split()
    ),
    "en": frozenset(
        "the and is not of to my with from for on that this can must shall be by or if he she "
        "they we you it have has was were are what which who may does do did any when only would "
        "been there their its his her at how should about after could your our them him than into out "
        "get got want"
        .split()
    ),
    "fr": frozenset(
        "le la les et est pas je mon ma mes avec de des du un une pour sur que qui dans ce cette il elle "
        "nous vous ils au aux ou si peut doit sont ne être avoir par en sans chez comment quand quel quelle "
        "quels quelles où aussi très tout tous toute été fait mais leur leurs sa ses ai ont dont "
        "lorsque selon après se à puis dois faire rien même encore déjà jamais chaque toujours notre votre "
        "moi quoi combien depuis avant contre entre sous"
        .split()
    ),
    "it": frozenset(
        "il lo la gli le e è non io mio mia con di da del della dei delle un una per su che chi nel nella "
        "questo questa sono può deve essere avere ai agli al alla ho ha hanno mi ti ci si anche perché "
        "quando cosa quale quali più ma sa se sul sulla dal dalla degli "
        "alle dalle dello ed od qualora chiunque ne posso puoi possono devo devi fare senza dopo ancora "
        "ogni tutti tutto sempre dove quanto quanta quanti quante stato stata ciò oppure però niente nessuno "
        "qualcuno suo sua miei mie nostro nostra loro fa"
        .split()
    ),
}
# Accented letters; "é" is French only (Italian writes "è", and "é" only in a few words such as "perché").
_LETTERS: dict[str, str] = {"de": "äöüß", "fr": "éèêàçùëïœâîôû", "it": "àèìòù"}
# Elided words, counted only before an apostrophe ("j'ai", "qu'il", "dell'anno"): as words, "d" or "c"
# would also be the enumerators of German headings ("c. Bewährung").
_ELISIONS: dict[str, frozenset[str]] = {
    "fr": frozenset("j qu n m s t l d c jusqu lorsqu puisqu".split()),
    "it": frozenset("l d c dell all nell dall sull quest un anch".split()),
}
# A single letter before a full stop numbers a heading or a list ("e. Verjährung", "a. …"), or is an
# initial: it is no word of any language (the Italian "e" would count otherwise).
_ENUMERATOR = re.compile(r"(?<![^\W\d_])[^\W\d_]\.(?!\w)")
_ELIDED = re.compile(r"([^\W\d_]+)['’](?!s\b)", re.UNICODE)  # not an English possessive ("C's")


def detect_language(text: str, *, default: str = "en", candidates: tuple[str, ...] | None = None) -> str:
    """The most likely language of ``text`` among ``candidates`` (all supported languages by default).

    Args:
        text: any text; empty text gets ``default``.
        default: the answer when no signal is found.
        candidates: restrict the answer to these codes (for a corpus known to hold only some).

    Returns:
        An ISO 639-1 code: one of ``de``, ``fr``, ``it``, ``en``, ``zh``.

    Example::

        detect_language("我的房东不退押金")            # 'zh'
        detect_language("Mein Vermieter zahlt nicht")  # 'de'
    """
    allowed = candidates or ("de", "fr", "it", "en", "zh")
    if len(allowed) == 1:
        return allowed[0]
    return detected_language(text, candidates=allowed) or (default if default in allowed else allowed[0])


def detected_language(text: str, *, candidates: tuple[str, ...] | None = None) -> str | None:
    """The language ``text`` shows among ``candidates`` (all supported ones by default), or ``None``
    when it shows none: no Han character, and no function word or accented letter of a Latin-script
    candidate (a term of art on its own, "Verrechnung", "deposit").

    Example::

        detected_language("Mein Vermieter zahlt nicht")  # 'de'
        detected_language("deposit")                     # None
    """
    allowed = candidates or ("de", "fr", "it", "en", "zh")
    han = len(_HAN.findall(text))
    words = [w.lower() for w in WORD.findall(text) if not _HAN.search(w)]
    if "zh" in allowed and han and han >= len(words):
        return "zh"
    markers = [w.lower() for w in WORD.findall(_ENUMERATOR.sub(" ", text))] if "." in text else words
    scores = _latin_scores(tuple(markers[:400]), text.lower())
    ranked = sorted(((s, lang) for lang, s in scores.items() if lang in allowed), reverse=True)
    if not ranked or ranked[0][0] == 0:
        return "zh" if "zh" in allowed and han else None
    return ranked[0][1]


def question_language(text: str, lang: str = "", *, trained: str = "", candidates: Sequence[str] = ()) -> str:
    """The language a question is analysed in: its own ``lang``, else the trained model folder's
    (``trained``), else the one detected among the index's languages (``candidates``; all supported
    ones when empty), the first of them, or English, where the text gives no signal. The agentic search
    and routing's issue count resolve it alike, so both cut a question the same way.

    Example::

        question_language("Vermieter Kaution", candidates=("de", "fr", "it"))   # 'de'
        question_language("Vermieter Kaution", "fr")                              # 'fr'
    """
    allowed = tuple(candidates)
    return lang or trained or detect_language(text, candidates=allowed or None, default=(allowed or ("en",))[0])


@cache
def _marker_index(elided: bool = False) -> dict[str, tuple[str, ...]]:
    """Each marker word (elided word: ``elided``) and the languages that list it."""
    index: dict[str, list[str]] = {}
    for lang, words in (_ELISIONS if elided else _MARKERS).items():
        for word in words:
            index.setdefault(word, []).append(lang)
    return {w: tuple(langs) for w, langs in index.items()}


def _latin_scores(words: tuple[str, ...], lowered: str) -> dict[str, float]:
    scores = dict.fromkeys(_MARKERS, 0.0)
    for index, found in ((_marker_index(), words), (_marker_index(elided=True), _ELIDED.findall(lowered))):
        for word in found:
            for lang in index.get(word, ()):
                scores[lang] += 1.0 / len(index[word])
    for lang, letters in _LETTERS.items():
        scores[lang] += 0.5 * sum(lowered.count(ch) for ch in letters) / max(1, len(letters))
    return scores
