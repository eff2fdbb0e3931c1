"""Parse, normalise and extract legal citations (Swiss, German, Chinese, Japanese Civil Code in English).

A :class:`Citation` is one cited unit: a statute article (or BGB paragraph), a Swiss leading decision
(``BGE 131 III 601``) or a Federal Supreme Court docket (``5A_666/2012``). Its :attr:`Citation.key` is the
article-level linking key stored in :attr:`LegalDoc.cites <service.corpus.model.LegalDoc.cites>`; a corpus
article gets the same key from :func:`article_of` (or :func:`statute_key`), so citations link to documents by
plain string equality::

    >>> cites_of("gemäss Art. 41 Abs. 1 OR und § 823 BGB")
    ('OR art. 41', 'BGB § 823')
    >>> article_of("Art. 41 CO").key
    'OR art. 41'
    >>> cites_of("依照《中华人民共和国劳动合同法》第四十七条的规定")
    ('劳动合同法 第47条',)

Decisions worth knowing:

- Law names go through :func:`law_alias`: Chinese titles lose ``中华人民共和国`` and ``《》``; English,
  French and Italian Swiss abbreviations map to the German ones (CC→ZGB, CO→OR, SCC/CP→StGB, Cst→BV), so
  the English and German Swiss corpora share keys.
- Keys: ``"<law> art. <n>"`` for article-numbered laws, ``"<law> § <n>"`` for German paragraph laws
  (the sign comes from the citation itself, so ``§ 211 StGB`` (Germany) never links to ``Art. 211 StGB``
  (Switzerland)), ``"<law> 第<n>条"`` for Chinese laws (arabic numbers, ``之一`` as ``第120条之1``),
  ``"BGE <vol> <part> <page>"`` and the docket number itself for decisions.
- ``str(citation)`` is a canonical form: German style for Swiss and German law (``Art. 41 Abs. 1 OR``,
  also for a citation written in English), ``《劳动合同法》第四十七条`` (Chinese numerals, like the corpus
  citations) for Chinese law, ``Article 415, paragraph (1) of the Civil Code`` for English-named laws.
- Inside a document, a reference without a law name (``Art. 5``, ``§ 5``, ``Article 5``, ``本法第五条``,
  ``依照第五条``) is resolved to the document's own law, the ``law`` argument. A name of another law that
  is too generic to identify it (``des Bundesgesetzes vom …``, ``of the Federal Act of …``) gives ``law=""``;
  such citations are extracted but have no linking key in :func:`cites_of`.
- A citation without a law name read together with the next one takes that one's law: ``Art. 41 Abs. 1
  i.V.m. Art. 97 OR`` cites Art. 41 OR (also ``in Verbindung mit``, ``en relation avec``, ``in combinazione
  con``, ``read with``), unless the two are numbered differently (``§ 312d i.V.m. Artikel 246a EGBGB``).
  ``Art. 19 Abs. 1 i.V.m. Abs. 2 BetmG`` is one citation of Art. 19 BetmG, with its first paragraph.
- Ranges of plain numbers (``Art. 41–45``, ``§§ 1 bis 5``, ``第十条至第十五条``) expand to every article
  when they span at most :data:`MAX_RANGE` articles, else to their two ends; ``Art. 41 f.`` means 41 and 42,
  ``Art. 41 ff.`` only 41. ``N-M`` with a hyphen is a Japanese branch number (``Article 398-2``) when
  ``M < N``, else a range.
- Chinese: a bare ``第N条`` continues the law named earlier in the same sentence (``刑法第二十条、…，
  第二十一条``), else it is the document's own; ``该法`` is the law named last; names introduced with
  ``（以下简称…）`` are honoured; the number labels of articles glued into one text (``。 第二条 ``) are
  skipped, and so is ``第N条`` after a non-law noun (``合同第五条``).
- A law written before the sign is recognised for the main codes only (``BGB § 823``,
  ``Civil Code Article 714``).
- Not resolved: ``前款``, ``前条``, ``本条``, ``the preceding Article`` and ``paragraph (1) of Article 5``
  (paragraph before article).
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

__all__ = [
    "MAX_RANGE",
    "SWISS_CODES",
    "Citation",
    "article_of",
    "chinese_numeral_to_int",
    "cites_of",
    "extract",
    "int_to_chinese_numeral",
    "law_alias",
    "normalize",
    "parse",
    "statute_key",
]

MAX_RANGE = 10
"""Largest range (number of articles) that :func:`extract` expands; longer ranges give their two ends."""

ARTICLE = "article"
LEADING_DECISION = "leading_decision"
DECISION = "decision"


# --------------------------------------------------------------------------------------------------
# Chinese numerals
# --------------------------------------------------------------------------------------------------

_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG = {"万": 10_000, "亿": 100_000_000}
_FULLWIDTH_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")


def chinese_numeral_to_int(s: str) -> int:
    """Convert a Chinese numeral (or arabic digits, also full-width) to an int.

    Handles ``零/〇``, ``两``, a leading ``十`` (``十二`` = 12), ``万``/``亿`` and digit-by-digit
    numbers (``二〇二三`` = 2023).

    Raises:
        ValueError: for an empty string or a character that is not part of a numeral.

    Example::

        >>> [chinese_numeral_to_int(s) for s in ("一千一百六十五", "一百零五", "两百", "十二")]
        [1165, 105, 200, 12]
    """
    text = s.strip().translate(_FULLWIDTH_DIGITS)
    if not text:
        raise ValueError("empty numeral")
    if text.isdigit():
        return int(text)
    if len(text) > 1 and all(ch in _ZH_DIGITS for ch in text):
        return int("".join(str(_ZH_DIGITS[ch]) for ch in text))
    total = section = digit = 0
    for ch in text:
        if ch in _ZH_DIGITS:
            digit = _ZH_DIGITS[ch]
        elif ch in _ZH_UNITS:
            section += (digit or 1) * _ZH_UNITS[ch]
            digit = 0
        elif ch in _ZH_BIG:
            total = (total + section + digit) * _ZH_BIG[ch]
            section = digit = 0
        else:
            raise ValueError(f"not a Chinese numeral: {s!r}")
    return total + section + digit


def int_to_chinese_numeral(n: int) -> str:
    """Write ``0 <= n < 100000`` the way Chinese statutes number articles.

    Example::

        >>> int_to_chinese_numeral(1165), int_to_chinese_numeral(105), int_to_chinese_numeral(14)
        ('一千一百六十五', '一百零五', '十四')
    """
    if not 0 <= n < 100_000:
        raise ValueError(f"out of range: {n}")
    if n == 0:
        return "零"
    digits = "零一二三四五六七八九"
    out: list[str] = []
    pending_zero = False
    for value, unit in ((10_000, "万"), (1000, "千"), (100, "百"), (10, "十"), (1, "")):
        d, n = divmod(n, value)
        if d:
            if pending_zero:
                out.append("零")
            out.append(digits[d] + unit)
            pending_zero = False
        elif out:
            pending_zero = True
    text = "".join(out)
    return text[1:] if text.startswith("一十") else text


# --------------------------------------------------------------------------------------------------
# Law names
# --------------------------------------------------------------------------------------------------

# Keys are case-folded. Swiss English/French/Italian abbreviations and long names map to the German
# abbreviation so that both language versions of an article share one key.
_LAW_ALIASES: dict[str, str] = {
    # Swiss Civil Code
    "zgb": "ZGB", "cc": "ZGB", "swiss civil code": "ZGB", "zivilgesetzbuch": "ZGB",
    "schweizerisches zivilgesetzbuch": "ZGB", "code civil suisse": "ZGB", "codice civile svizzero": "ZGB",
    # Swiss Code of Obligations
    "or": "OR", "co": "OR", "code of obligations": "OR", "swiss code of obligations": "OR",
    "obligationenrecht": "OR", "code des obligations": "OR", "codice delle obbligazioni": "OR",
    # Criminal codes (Swiss StGB; German StGB is the same abbreviation but cited with §)
    "stgb": "StGB", "scc": "StGB", "cp": "StGB", "swiss criminal code": "StGB", "strafgesetzbuch": "StGB",
    "code pénal suisse": "StGB", "codice penale svizzero": "StGB",
    # Swiss Federal Constitution
    "bv": "BV", "cst": "BV", "cst.": "BV", "cost": "BV", "cost.": "BV", "federal constitution": "BV",
    "bundesverfassung": "BV", "constitution fédérale": "BV", "costituzione federale": "BV",
    "costituzione": "BV",  # Swiss Italian texts; "Cost." is its abbreviation
    # Swiss procedure codes under their French and Italian titles
    "code de procédure pénale suisse": "StPO", "codice di procedura penale svizzero": "StPO",
    "codice di diritto processuale penale svizzero": "StPO", "codice di diritto processuale civile svizzero": "ZPO",
    # Other Swiss acts whose English/French names differ
    "deba": "SchKG", "lp": "SchKG", "debt enforcement and bankruptcy act": "SchKG",
    "debt collection and bankruptcy act": "SchKG", "schuldbetreibungs- und konkursgesetz": "SchKG",
    "crimpc": "StPO", "cpp": "StPO", "cpc": "ZPO", "cpo": "ZPO", "fsca": "BGG", "ltf": "BGG",
    "federal supreme court act": "BGG", "bundesgerichtsgesetz": "BGG",
    # German codes
    "bürgerliches gesetzbuch": "BGB", "bürgerlichen gesetzbuch": "BGB", "bürgerlichen gesetzbuche": "BGB",
    "einführungsgesetz zum bürgerlichen gesetzbuche": "EGBGB",
    "einführungsgesetz zum bürgerlichen gesetzbuch": "EGBGB", "egbgb": "EGBGB",
    "handelsgesetzbuch": "HGB", "zivilprozessordnung": "ZPO", "strafprozessordnung": "StPO",
    "grundgesetz": "GG",
    # Japanese Civil Code (COLIEE); a bare "Civil Code" is resolved against the document's own law
    "civil code (japan)": "Civil Code", "japanese civil code": "Civil Code", "civil code": "Civil Code",
    # Chinese short forms that differ from the title, not only by the 中华人民共和国 prefix
    "税收征管法": "税收征收管理法", "调解仲裁法": "劳动争议调解仲裁法", "民诉法": "民事诉讼法",
    "刑诉法": "刑事诉讼法", "行诉法": "行政诉讼法",
}

# English, French and Italian long names that mean a Swiss code when the citing document is Swiss
# (a French "code civil" is the Code Napoléon elsewhere).
_SWISS_CONTEXT = {
    "civil code": "ZGB", "criminal code": "StGB", "constitution": "BV",
    "code civil": "ZGB", "code pénal": "StGB", "code de procédure civile": "ZPO", "code de procédure pénale": "StPO",
    "codice civile": "ZGB", "codice penale": "StGB", "codice di procedura civile": "ZPO",
    "codice di procedura penale": "StPO",
}
SWISS_CODES = frozenset({"ZGB", "OR", "StGB", "BV", "RPG", "Covid-19-Gesetz", "SchKG", "BGG", "StPO", "ZPO"})
"""The Swiss acts the rules know by name (by :func:`law_alias`): an article of one of them is Swiss law."""

# German laws numbered by paragraph (§) and without a Swiss namesake, used by statute_key() when no
# citation tells the sign.
_PARAGRAPH_LAWS = {
    "BGB", "HGB", "AktG", "GmbHG", "InsO", "BeurkG", "WEG", "EStG", "UStG", "AO", "VwVfG", "StVO",
    "BetrVG", "KSchG", "TzBfG", "RVG", "GKG", "FamFG", "ZVG", "GVG", "BtMG", "TKG", "AGG", "BDSG", "MietNovG",
}

_CJK = re.compile(r"[\u3400-\u9fff]")
_CJK_SPACE = re.compile(r"(?<=[\u3400-\u9fff])\s+(?=[\u3400-\u9fff])")
_GERMAN_GENITIVE = re.compile(r"(?<=[a-zäöüß])(?:es|s)$")
_SWISS_ADJECTIVE = re.compile(r"^schweizerische[nsm]?\s+")
_GENERIC_LAW_WORDS = {
    "bundesgesetz", "gesetz", "bg", "verordnung", "schlusstitel", "abkommen", "übereinkommen",
    "federal act", "act", "agreement", "final title", "convention", "ordinance", "code", "law",
    "regulation", "schluss- und übergangsbestimmungen",
}


@functools.lru_cache(maxsize=1 << 16)  # pure; a search normalises every law name of the corpus
def law_alias(name: str) -> str:
    """Normalise a law name for matching.

    Strips ``《》〈〉`` and every ``中华人民共和国``, collapses whitespace (a space between two CJK
    characters becomes ``、``), maps full-width parentheses to ASCII, and maps known abbreviations and long
    names to one form; Swiss English/French/Italian abbreviations become the German ones (CC→ZGB, CO→OR,
    SCC→StGB, Cst→BV). Unknown names come back cleaned but otherwise unchanged.

    Example::

        >>> law_alias("中华人民共和国刑法") == law_alias("《刑法》") == "刑法"
        True
        >>> law_alias("CO"), law_alias("Civil Code (Japan)")
        ('OR', 'Civil Code')
    """
    text = name.strip().replace("\u00a0", " ")
    if _CJK.search(text):
        text = text.replace("中华人民共和国", "")
        text = re.sub(r"[《》〈〉]", "", text)
        text = _CJK_SPACE.sub("、", text).replace("（", "(").replace("）", ")")
        text = re.sub(r"\s+", "", text)
        return _LAW_ALIASES.get(text, text)
    text = re.sub(r"\s+", " ", text).strip(" ,;:")
    folded = text.casefold()
    if folded in _LAW_ALIASES:
        return _LAW_ALIASES[folded]
    stripped = folded.rstrip(".")
    if stripped in _LAW_ALIASES:
        return _LAW_ALIASES[stripped]
    if len(folded) < _GENITIVE_MIN_CHARS:
        return text
    # German genitive forms: "des Zivilgesetzbuches", "des (Schweizerischen) Obligationenrechts".
    base = " ".join(_german_nominative(word) for word in _SWISS_ADJECTIVE.sub("", folded).split())
    if base in _LAW_ALIASES:
        return _LAW_ALIASES[base]
    base = _GERMAN_GENITIVE.sub("", folded)
    if base != folded and base in _LAW_ALIASES:
        return _LAW_ALIASES[base]
    return text


def _resolve_law(name: str, own: str, swiss: bool = False) -> str:
    """The law a written name means in a document whose own (aliased) law is ``own`` (Swiss law when
    ``swiss``); "" if too generic."""
    folded = re.sub(r"\s+", " ", name.strip()).casefold()
    if swiss or own in SWISS_CODES:
        code = _SWISS_CONTEXT.get(folded.removeprefix("swiss "))  # "civil code", "swiss civil code"
        if code:
            return code
    alias = law_alias(name)
    folded = alias.casefold()
    if folded in _GENERIC_LAW_WORDS or _GERMAN_GENITIVE.sub("", folded) in _GENERIC_LAW_WORDS:
        return ""
    if not _CJK.search(alias) and alias[:1].islower():
        return ""
    return alias


_GERMAN_ENDINGS = (
    ("gesetzes", "gesetz"), ("buches", "buch"), ("buchs", "buch"), ("buche", "buch"), ("rechts", "recht"),
    ("abkommens", "abkommen"),
)


_GENITIVE_MIN_CHARS = 8
"""Only names this long are read as German genitives: a long law name ends in *-es* or *-s* there
("Obligationenrechts"), while a short word that loses its *s* becomes an abbreviation (English
"costs" would read as Italian "Cost.", the Constitution)."""


def _german_nominative(word: str) -> str:
    """``Kulturgütertransfergesetzes`` → ``Kulturgütertransfergesetz`` (names of laws only)."""
    for ending, replacement in _GERMAN_ENDINGS:
        if word.endswith(ending):
            return word[: -len(ending)] + replacement
    return word


# --------------------------------------------------------------------------------------------------
# The citation type
# --------------------------------------------------------------------------------------------------

_SIGN_SECTION = "§"
_SIGN_ART = "Art."
_SIGN_ARTICLE = "Article"
_SIGN_ZH = "第"


@dataclass(frozen=True, slots=True)
class Citation:
    """One cited unit: a statute article, a Swiss leading decision (BGE) or a decision by docket number.

    Attributes:
        kind: ``"article"``, ``"leading_decision"`` or ``"decision"``.
        law: normalised law (see :func:`law_alias`): ``"ZGB"``, ``"BGB"``, ``"劳动合同法"``, ``"Civil Code"``;
            ``"BGE"`` for leading decisions; ``""`` when unknown.
        article: ``"469"``, ``"573b"``, ``"322bis"``, ``"120-1"`` (第一百二十条之一), ``"398-2"``; for a
            leading decision ``"131 III 601"``, for a docket ``"5A_666/2012"``.
        paragraph: ``"1"`` for ``Abs. 1`` / ``第一款`` / ``paragraph (1)``; ``""`` if none.
        detail: the rest, canonical: ``"lit. a"``, ``"S. 1"``, ``"Ziff. 3"``, ``"E. 3.1"``, ``"第二项"``,
            ``"ff."``.
        sign: how a statute numbers its articles: ``"§"``, ``"Art."``, ``"Article"`` (English-named laws) or
            ``"第"`` (Chinese); when left empty it is inferred from ``law`` (``"§"`` for BGB, HGB, …).
            It decides the key's form, so German ``§ 211 StGB`` and Swiss ``Art. 211 StGB`` differ.

    Example::

        >>> c = Citation("article", "ZGB", "469", "1")
        >>> c.key, str(c)
        ('ZGB art. 469', 'Art. 469 Abs. 1 ZGB')
    """

    kind: str
    law: str
    article: str
    paragraph: str = ""
    detail: str = ""
    sign: str = ""

    def __post_init__(self) -> None:
        if self.kind == ARTICLE and not self.sign:
            object.__setattr__(self, "sign", _default_sign(self.law))

    @property
    def key(self) -> str:
        """Article-level linking key: ``"ZGB art. 469"``, ``"BGB § 823"``, ``"劳动合同法 第47条"``,
        ``"BGE 131 III 601"``, ``"5A_666/2012"``, ``"Civil Code art. 415"``."""
        if self.kind == LEADING_DECISION:
            return f"BGE {self.article}"
        if self.kind == DECISION:
            return self.article
        sign = self.sign
        prefix = f"{self.law} " if self.law else ""
        if sign == _SIGN_ZH:
            base, _, branch = self.article.partition("-")
            return f"{prefix}第{base}条" + (f"之{branch}" if branch else "")
        if sign == _SIGN_SECTION:
            return f"{prefix}§ {self.article}"
        return f"{prefix}art. {self.article}"

    def __str__(self) -> str:
        if self.kind == LEADING_DECISION:
            return _join("BGE", self.article, self.detail)
        if self.kind == DECISION:
            return _join(self.article, self.detail)
        sign = self.sign
        if sign == _SIGN_ZH:
            base, _, branch = self.article.partition("-")
            text = f"《{self.law}》" if self.law else ""
            text += f"第{_zh_label(base)}条" + (f"之{_zh_label(branch)}" if branch else "")
            if self.paragraph:
                text += f"第{_zh_label(self.paragraph)}款"
            return text + self.detail
        if sign == _SIGN_ARTICLE:
            text = f"Article {self.article}"
            if self.paragraph:
                text += f", paragraph ({self.paragraph})"
            text = _join(text, self.detail)
            return f"{text} of the {self.law}" if self.law else text
        number = f"{sign} {self.article}"
        detail = self.detail
        if detail.startswith("–"):
            number, detail = number + detail, ""
        elif detail.startswith("§"):  # Art. 246a § 1 Abs. 1 EGBGB: the § comes before the paragraph
            section, _, detail = detail.partition(" ")[2].partition(" ")
            number += f" § {section}"
        return _join(number, f"Abs. {self.paragraph}" if self.paragraph else "", detail, self.law)


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _zh_label(number: str) -> str:
    return int_to_chinese_numeral(int(number)) if number.isdigit() else number


def _default_sign(law: str) -> str:
    if _CJK.search(law):
        return _SIGN_ZH
    if law in _PARAGRAPH_LAWS:
        return _SIGN_SECTION
    if " " in law:
        return _SIGN_ARTICLE
    return _SIGN_ART


def _latin_sign(marker: str, law: str) -> str:
    if marker.startswith("§"):
        return _SIGN_SECTION
    if " " in law or (not law and marker.lower().startswith("article")):
        return _SIGN_ARTICLE
    return _SIGN_ART


# --------------------------------------------------------------------------------------------------
# Text clean-up shared by every parser
# --------------------------------------------------------------------------------------------------

_SPACES = re.compile(r"[\u00a0\u2007\u202f\u2009]")
_MARKDOWN_LETTER = re.compile(r"(\d)\*([a-z]{1,7})\*")  # Fedlex Markdown: Art. 63*a*
_BRACKET_SUFFIX = re.compile(r"(\d)\[(bis|ter|quater|quinquies|sexies|septies|octies|novies|decies)\]")
_SPACED_LETTER = re.compile(r"(§\s*\d+)\s([a-z])(?=\s+(?:Abs|[A-ZÄÖÜ][A-Za-zÄÖÜäöü]*[A-Z]))")  # § 326 a StGB


def _clean(text: str) -> str:
    text = _SPACES.sub(" ", text)
    if "*" in text:
        text = _MARKDOWN_LETTER.sub(r"\1\2", text)
    if "[" in text:
        text = _BRACKET_SUFFIX.sub(r"\1\2", text)
    if "§" in text:
        text = _SPACED_LETTER.sub(r"\1\2", text)
    return text


# --------------------------------------------------------------------------------------------------
# Swiss leading decisions and docket numbers
# --------------------------------------------------------------------------------------------------

_CONSIDERATION = r"(?:\s*,?\s*(?:E\.|Erw\.|consid\.|cons\.|c\.)\s*(?P<e>\d+(?:\.\d+)*(?:\.[a-z])?))?"
_BGE = re.compile(
    r"(?<![\w])(?:BGE|ATF|DTF)\s+(?P<vol>\d{2,3})\s+(?P<part>Ia|Ib|IV|V|VI|III|II|I)\s+(?P<page>\d{1,4})\b"
    + _CONSIDERATION
)
_DOCKET = re.compile(r"(?<![\w/])(?P<docket>\d{1,2}[A-Z][_.]\d{1,5}/\d{4})\b" + _CONSIDERATION)


def _decision_citation(match: re.Match[str]) -> Citation:
    detail = f"E. {match['e']}" if match["e"] else ""
    if "docket" in match.re.groupindex:
        return Citation(DECISION, "", match["docket"], detail=detail)
    return Citation(LEADING_DECISION, "BGE", f"{match['vol']} {match['part']} {match['page']}", detail=detail)


# --------------------------------------------------------------------------------------------------
# Statutes written with Latin script: Swiss, German, COLIEE
# --------------------------------------------------------------------------------------------------

_SUFFIX = r"(?:bis|ter|quater|quinquies|sexies|septies|octies|novies|decies)"
_NUM = rf"\d{{1,4}}(?!\d)(?:[a-z]?{_SUFFIX}|[a-z](?![a-zäöü]))?(?:-\d{{1,3}}(?![\d]))?"
_PNUM = rf"\d{{1,3}}(?:{_SUFFIX}|[a-z](?![a-z]))?"
_MARKER = r"(?:§§?|Art(?:ikeln|ikel|icles|icle|s|t)?\.?|art(?:icles|icle|t)?\.?|articol[oi])"
_RANGE_WORD = r"(?:–|—|bis|to|through|à|(?<=\s)a(?=\s+\d)|-)"  # Italian "articoli 25 a 31"
_AND = r"(?:und|and|sowie|or|oder|bzw\.|et|ou|e|o|nonché|u\.)"
_LIST_SEP = rf"(?:\s*[,;]\s*(?:{_AND}\s+)?|\s+{_AND}\s+)"
# A paragraph list stops before "42 Abs." so that "Abs. 1, 42 Abs. 2" reads as two articles.
_NEXT_ARTICLE = r"(?!\s*(?:Abs|para|al\.|alinéa|cpv\.|capovers|comma))"
_PARA_ITEM = rf"\(?{_PNUM}\)?(?![\w]){_NEXT_ARTICLE}"
# Continuations of a paragraph list go up to 12 (articles with more paragraphs are rare, lists of
# articles after a paragraph common): "Abs. 1, 18–20 und 42 OR" and "Ziff. 2 und 275 SchKG" cite Art. 18–20
# and 42, and Art. 275.
_PARA_MORE = rf"\(?(?:1[0-2]|[1-9])(?!\d)(?:{_SUFFIX}|[a-z](?![a-z]))?\)?(?![\w]){_NEXT_ARTICLE}"
_PARA_WORD = r"(?:Abs(?:atz|ätze|\.|(?=\s*\d))|Absätze|paras?\.|[Pp]aragraphs?|al\.|alinéas?|cpv\.|capovers[oi]|comma)"
_PARA = (
    rf"(?:,?\s*{_PARA_WORD}\s*{_PARA_ITEM}(?:(?:{_LIST_SEP}|\s*(?:bis|to|through|–|-)\s*)(?!(?:Art|§)){_PARA_MORE})*"
    rf"|\s*\(\d{{1,2}}[a-z]?\))"
)
_DETAIL_ONE = (
    r"(?:lit\.|Bst\.|Buchst\.|Buchstabe|let\.|lett\.|lettera|lettre|letter)\s*[a-z]{1,3}\b"
    r"|(?:Ziff\.|Ziffer|Ziffern|ch\.|chiffre|cifra|number|numero|no\.|Nr\.|Nrn\.|Nummer)\s*\d+[a-z]?"
    r"|(?:S\.|Satz|sentence)\s*\d+"
    r"|(?:Halbsatz|Hs\.)\s*\d+"
    r"|items?\s*\([ivxlc]+\)"
)
_DETAIL = (
    rf"(?:,?\s*(?:{_DETAIL_ONE})(?:\s*(?:,|und|and|bis|–|-)\s*\d{{1,2}}[a-z]?\b(?!\s*(?:Abs|para|al\.)))*)"
)
_SUBSECTION = r"(?:\s*§\s*\d+[a-z]?)"  # Artikel 246a § 1 EGBGB
# "read together with": "Art. 19 Abs. 1 i.V.m. Abs. 2 BetmG", "art. 41 al. 1 en relation avec l'art. 97 CO".
_CONNECTOR = (
    r"(?:i\.\s?V\.\s?m\.|iVm\b\.?|in\s+Verbindung\s+mit|en\s+relation\s+avec|en\s+lien\s+avec"
    r"|en\s+corrélation\s+avec|in\s+relazione\s+con|in\s+combinazione\s+con|in\s+connection\s+with"
    r"|in\s+conjunction\s+with|read\s+with)"
)
# Another paragraph of the same article, joined by a connector: "Abs. 1 i.V.m. Abs. 2".
_JOINED_PARA = rf"(?:,?\s*{_CONNECTOR}(?=\s*{_PARA_WORD}))"
_TAIL = rf"(?:{_SUBSECTION}|{_PARA}|{_DETAIL}|{_JOINED_PARA})*"
# "and the following": German "ff."/"f.", French "ss"/"et suivants", Italian "segg."/"e seguenti"
_FOLLOWING = r"(?:ff\.?|f\.|ss\.?|segg\.?|e\s+seguenti|et\s+suivants)(?![\w])"
_ITEM = rf"{_NUM}(?:\s*{_FOLLOWING}|\s*{_RANGE_WORD}\s*(?:{_MARKER}\s*)?{_NUM})?{_TAIL}"
_ITEM_RE = re.compile(
    rf"(?P<num>{_NUM})(?:\s*(?P<ff>{_FOLLOWING})|\s*{_RANGE_WORD}\s*(?:{_MARKER}\s*)?(?P<to>{_NUM}))?"
    rf"(?P<tail>{_TAIL})"
)
_CONNECTOR_RE = re.compile(_CONNECTOR)
_CONNECTOR_ONLY = re.compile(rf"\s*,?\s*{_CONNECTOR}\s*(?:(?:l['’]|coll['’]|the\s+|dem\s+|den\s+|les\s+|gli\s+)\s*)?")
_TAIL_TOKEN = re.compile(
    rf"§\s*(?P<sub>\d+[a-z]?)|{_PARA_WORD}\s*\(?(?P<p>{_PNUM})\)?|\((?P<pp>\d{{1,2}}[a-z]?)\)|(?P<d>{_DETAIL_ONE})"
)

_KNOWN_LONG = (
    r"Einführungsgesetz(?:es)?\s+zum\s+Bürgerlichen\s+Gesetzbuch(?:e|es|s)?"
    r"|Bürgerlichen\s+Gesetzbuch(?:e|es|s)?|Bürgerliches\s+Gesetzbuch"
    r"|(?:Swiss\s+)?Civil\s+Code(?:\s*\(Japan\))?|Japanese\s+Civil\s+Code|(?:Swiss\s+)?Code\s+of\s+Obligations"
    r"|(?:Swiss\s+)?Criminal\s+Code|Federal\s+Constitution|Covid-19-Gesetz"
    # French and Italian titles of the Swiss codes, as statutes write them ("du code pénal", "del Codice
    # civile"); a military code ("Codice penale militare") is another act.
    r"|(?:[Cc]ode\s+(?:civil(?:\s+suisse)?|des\s+obligations|pénal(?:\s+suisse)?"
    r"|de\s+procédure\s+(?:civile|pénale)(?:\s+suisse)?)"
    r"|[Cc]odice\s+(?:civile(?:\s+svizzero)?|delle\s+obbligazioni|penale(?:\s+svizzero)?"
    r"|di\s+(?:procedura|diritto\s+processuale)\s+(?:civile|penale)(?:\s+svizzer[oa])?)"
    r"|Constitution(?:\s+fédérale)?|Costituzione(?:\s+federale)?)(?!\s+milita)"
    # German titles with the adjective: "des Schweizerischen Zivilgesetzbuches"
    r"|Schweizerischen\s+(?:Zivilgesetzbuch(?:es|s)?|Obligationenrechts?|Strafgesetzbuch(?:es|s)?)"
)
# An abbreviation has at least two capitals: OR, BV, StGB, AsylG, BGB-InfoV (not BGE, CHF, II).
_ABBR = (
    r"(?!(?:BGE|ATF|DTF|CHF|SR|AS|BBl|EUR|USD|[IVX]+)\b)(?:[A-ZÄÖÜ][a-zäöü]{0,5}){2,6}(?:-[A-ZÄÖÜ][A-Za-zäöü]*)?\b"
    r"|Cst\.?|Cost\.?"
)
_DE_LAW_WORD = (
    r"(?=[A-ZÄÖÜ])[\wäöüß]*?(?:[gG]esetz(?:es)?|[gG]esetzbuch(?:es|s|e)?|[oO]rdnung|[vV]erordnung|[rR]echts?"
    r"|[aA]bkommens?|[üÜ]bereinkommens?|[tT]itels|[kK]onvention|[vV]erfassung|[rR]ichtlinie|[bB]estimmungen)"
)
_DE_LAW_NAME = rf"(?:[A-ZÄÖÜ][\wäöüß]*-\s+und\s+)?{_DE_LAW_WORD}"
_EN_LAW_NAME = r"[A-Z][\w'-]*(?:\s+(?:(?:of|on|for|and|the|in|to)\s+)*[A-Z][\w'-]*)*"
_LAW = (
    r"(?:\s*,?\s*(?:"
    r"(?P<own>dieses\s+Gesetzes|dieser\s+Verordnung|of\s+this\s+(?:Code|Act|Law)|de\s+la\s+présente\s+loi"
    r"|della\s+presente\s+legge)"
    r"|(?P<old>des\s+(?:bisherigen|geltenden|alten|neuen|früheren)\s+Rechts|of\s+that\s+(?:Act|Code|Law)"
    r"|of\s+the\s+(?:previous|current|former|old|new)\s+(?:law|Code(?:\s+of\s+Obligations)?|Act)"
    # an act named by its date or subject ("de la loi fédérale du 2 avril 1908 sur le contrat
    # d'assurance"): another act, not the citing one, whose name is not read
    r"|(?:de\s+la|de\s+l['’]|della|dell['’]|dalla)\s*(?:loi|legge|ordonnance|ordinanza)(?!\w))"
    rf"|(?:(?:des|der|im|in\s+der|of\s+the|du|de\s+la|del|della)\s+)?(?P<known>{_KNOWN_LONG})(?!\w)"
    rf"|(?:(?:des|der|im|of\s+the|du|de\s+la|del|della)\s+)?(?P<abbr>{_ABBR})"
    rf"|(?:des|der|unserer)\s+(?P<dename>{_DE_LAW_NAME})\b"
    rf"|of\s+the\s+(?P<enname>{_EN_LAW_NAME})"
    r"))?"
)
# A law written before the sign: "Civil Code Article 714", "BGB § 311b".
_PRE_LAW = rf"(?:(?P<pre>{_KNOWN_LONG}|BGB|ZGB|StGB|ZPO|HGB|EGBGB)\s+)"
_LATIN = re.compile(
    rf"(?<![\w§]){_PRE_LAW}?(?P<marker>{_MARKER})\s*(?P<items>{_ITEM}(?:{_LIST_SEP}(?:{_MARKER}\s*)?{_ITEM})*)"
    + _LAW
)
_EN_LAW_HEAD = re.compile(
    r"\b(?:Act|Code|Law|Constitution|Conventions?|Agreement|Ordinance|Procedure|Rules|Regulations?|Title|Treaty)\b"
)


def _latin_law(match: re.Match[str], own: str, swiss: bool = False) -> tuple[str, bool]:
    """(law, explicit) for one Latin-script match; explicit means the text names a law (maybe generic)."""
    if match["own"]:
        return own, True
    if match["old"]:
        return "", True
    if match["known"]:
        return _resolve_law(match["known"], own, swiss), True
    if match["abbr"]:
        return law_alias(match["abbr"]), True
    if match["dename"]:
        name = re.sub(r"\s+", " ", match["dename"])
        return _resolve_law(_german_nominative(name), own, swiss), True
    if match["enname"] and _EN_LAW_HEAD.search(match["enname"]):
        name = match["enname"]
        heads = list(_EN_LAW_HEAD.finditer(name))
        return _resolve_law(name[: heads[-1].end()], own, swiss), True
    if match["pre"]:
        return _resolve_law(match["pre"], own, swiss), True
    return own, False  # no law named (or "of the Family Court"): the document's own law


def _latin_citations(match: re.Match[str], own: str, *, expand: bool,
                     named: tuple[str, bool] | None = None) -> list[Citation]:
    """The citations of one Latin-script match; ``named`` is its ``(law, explicit)`` when the caller has it
    (:func:`_latin_law`), or the law it takes from the citation it is read together with (not explicit)."""
    law, explicit = _latin_law(match, own) if named is None else named
    marker = match["marker"]
    if not explicit and law and (marker.startswith("§") != (_default_sign(law) == _SIGN_SECTION)):
        law = ""  # "Artikel 5" inside the BGB, "§ 5" inside a Swiss code: some other, unnamed law
    sign = _latin_sign(marker, law)
    out: list[Citation] = []
    for item in _ITEM_RE.finditer(match["items"]):
        number = item["num"].lstrip("0") or "0"
        to = item["to"]
        base, _, branch = number.partition("-")
        if branch and (sign == _SIGN_SECTION or int(branch) >= _leading_int(base)):
            number, to = base, branch  # "Art. 41-45": a range; "Article 398-2": a branch number
        paragraph = ""
        details: list[str] = []
        tail = _CONNECTOR_RE.split(item["tail"] or "", maxsplit=1)[0]  # the first paragraph's details only
        for token in _TAIL_TOKEN.finditer(tail):
            if token["sub"]:
                details.insert(0, f"§ {token['sub']}")
            elif token["d"]:
                details.append(_detail_label(token["d"], sign))
            elif not paragraph:
                paragraph = token["p"] or token["pp"]
        ff = item["ff"]
        if ff:
            details.insert(0, "f." if ff == "f." else "ff.")  # "ss", "segg." and "e seguenti" are "ff."
        if to and not expand:
            details.insert(0, f"–{to}")
        first = Citation(ARTICLE, law, number, paragraph, " ".join(details), sign)
        out.append(first)
        if not expand:
            continue
        if ff == "f." and number.isdigit():
            out.append(Citation(ARTICLE, law, str(int(number) + 1), sign=sign))
        if to:
            out.extend(Citation(ARTICLE, law, n, sign=sign) for n in _range_rest(number, to))
    return out


def _leading_int(text: str) -> int:
    digits = "".join(itertools.takewhile(str.isdigit, text))
    return int(digits or 0)


def _detail_label(detail: str, sign: str) -> str:
    head, value = _split_detail(detail)
    english = sign == _SIGN_ARTICLE
    if head in ("lit.", "bst.", "buchst.", "buchstabe", "let.", "lett.", "lettera", "lettre", "letter"):
        return f"letter {value}" if english else f"lit. {value}"
    if head in ("ziff.", "ziffer", "ziffern", "ch.", "chiffre", "cifra", "number", "numero", "no."):
        return f"number {value}" if english else f"Ziff. {value}"
    if head in ("nr.", "nrn.", "nummer"):
        return f"number {value}" if english else f"Nr. {value}"
    if head in ("s.", "satz", "sentence"):
        return f"sentence {value}" if english else f"S. {value}"
    if head in ("halbsatz", "hs."):
        return f"Hs. {value}"
    if head.startswith("item"):
        return f"item ({value.strip('()')})"
    return detail


def _split_detail(detail: str) -> tuple[str, str]:
    head, _, value = detail.strip().partition(" ")
    if not value:  # glued: "Abs.1", "lit.a"
        m = re.match(r"([^\d(]*?\.?)(\(?\w+\)?)$", head)
        head, value = (m[1], m[2]) if m else (head, "")
    return head.casefold(), value.strip()


def _range_rest(first: str, last: str) -> list[str]:
    """The articles after ``first`` up to ``last``: all of them for a short plain range, else ``last``."""
    if first.isdigit() and last.isdigit():
        lo, hi = int(first), int(last)
        if lo < hi <= lo + MAX_RANGE - 1:
            return [str(n) for n in range(lo + 1, hi + 1)]
        if hi <= lo:
            return []
    return [last] if last != first else []


# --------------------------------------------------------------------------------------------------
# Chinese statutes
# --------------------------------------------------------------------------------------------------

_ZN = r"[0-9０-９零〇一二两三四五六七八九十百千万]+"
_ZH_ITEM = rf"[（(]?{_ZN}[）)]?"
_ZH_AND = r"(?:、|和|及|或者|或)"
_ZH_ITEM_LIST = rf"第{_ZH_ITEM}(?:{_ZH_AND}第?{_ZH_ITEM})*项"  # 第（二）、（三）项
_ZH_ITEMS = rf"{_ZH_ITEM_LIST}(?:{_ZH_AND}{_ZH_ITEM_LIST})*"
_ZH_UNIT = rf"第{_ZN}条(?:之{_ZN})?(?:第{_ZN}款(?:{_ZH_AND}第{_ZN}款)*)?(?:{_ZH_ITEMS})?"
_ZH_CHAIN = re.compile(rf"{_ZH_UNIT}(?:\s*(?:、|和|及|以及|或者|或|与|至|到)\s*{_ZH_UNIT})*")
_ZH_UNIT_RE = re.compile(
    rf"第(?P<a>{_ZN})条(?:之(?P<s>{_ZN}))?(?:第(?P<p>{_ZN})款(?:{_ZH_AND}第{_ZN}款)*)?"
    rf"(?:第(?P<i>{_ZH_ITEM})(?:{_ZH_AND}第?{_ZH_ITEM})*项(?:{_ZH_AND}第{_ZH_ITEM}(?:{_ZH_AND}第?{_ZH_ITEM})*项)*)?"
)
# Trailing text between a law name and the article that does not change the law: "（以下简称民事诉讼法）",
# "分则第九章".
_ZH_SKIP = re.compile(
    rf"(?:[（(]以下(?:简称|称)[^（）()]{{1,30}}[）)]|(?:分则|总则|附则)?(?:第{_ZN}(?:编|分编|章|节))+、?)\s*$"
)
_ZH_OWN = re.compile(
    r"本(?:法|法典|条例|规定|办法|解释|规则|细则|实施细则|决定|准则|规范|意见|通知|批复|章程|标准|安排|节|章|编|分编"
    r"|附则)\s*$"
)
# "同法" is "the same law", but not the end of "合同法" (劳动合同法, 技术合同法 …)
_ZH_THAT = re.compile(r"(?:该|(?<!合)同|上述)(?:法|法律|条例|规定|办法|解释)\s*$")
_ZH_BRACKET = re.compile(r"(?:《((?:[^《》]|《[^《》]*》){1,100})》|〈([^〈〉]{1,60})〉)\s*$")
_ZH_RUN = re.compile(r"([\u3400-\u9fff]{1,40}(?:[（(][\u3400-\u9fff0-9]{1,8}[）)])?)\s*$")
_ZH_LAW_SUFFIX = re.compile(
    r"(?:法|法典|条例|规定|办法|细则|规则|解释|决定|准则|规范|安排|修正案|通则|章程|规程|公约|协定)"
    r"(?:[（(][\u3400-\u9fff0-9]{1,8}[）)])?$"
)
# Words after which a law name starts ("依照刑法", "应当认定为民法典"). Single characters are only
# trusted where no common law name has them at that spot (国有资产法, 对外贸易法, 行为处罚, 在线, 经营).
_ZH_CUT = re.compile(
    r"依照|依据|根据|按照|参照|比照|适用|援用|违反|遵守|履行|符合|属于|认定为|认定|构成|具有|具备|没有|实施|执行|行使|享有"
    r"|承担|基于|请求|主张|达到|超过|不受|影响|包括|结合|确定|审理|审查|采取|修正后的?|修正前的?|修订后的?|修订前的?"
    r"|修改后的?|修改前的?|取得|视同|视为|以及|或者|同时|应当|可以|不得|所称|所列|前述|上述|规定|关于|按|依|以|指|于|对(?!外)"
    r"|(?<![国所])有(?![线组毒])|(?<!行)为|在(?!线)|及|(?<!人口)与|或|并|但|是|将|由|受|的|除|犯(?!罪)|其|和|了"
    r"|如无|若无"
)
_ZH_GENERIC = {
    "法", "法律", "规定", "有关规定", "相关规定", "国家规定", "办法", "解释", "规则", "细则", "条例", "决定",
    "意见", "准则", "规范", "安排", "章程", "规程", "公约", "协定", "通则", "修正案", "该法", "宪法修正案",
}
_PROTECTED = "中华人民共和国"
# Well-known laws that no other law name ends with: a longer bare name ending in one of them is a verb
# glued to it ("隐瞒刑法第…条", "修改后商标法第…条").
_ZH_FAMOUS = (
    "反不正当竞争法", "民事诉讼法", "刑事诉讼法", "行政诉讼法", "劳动合同法", "企业破产法", "国家赔偿法",
    "著作权法", "反垄断法", "民法通则", "民法典", "公司法", "专利法", "商标法", "票据法", "海商法", "证券法",
    "婚姻法", "物权法", "担保法", "刑法",
)
_ZH_DEFINED = re.compile(  # 《中华人民共和国民事诉讼法》（以下简称民事诉讼法）
    r"《([^《》]{1,60})》\s*[（(]以下(?:简称|称)[“\"《]?([^）)”\"》]{1,20})[”\"》]?[）)]"
)
_ZH_SENTENCE_END = re.compile(r"[。；;！？!?\n]")
_BARE = "\x00bare"  # marker: a reference without a law name


def _zh_bare_law(run: str) -> str | None:
    """The law named at the end of a run of CJK text before ``第…条``.

    ``_BARE`` when the run ends in a citing word only (``依照第五条``); None when it ends with something
    else (``合同第五条``: not a statute).
    """
    # 中华人民共和国 holds cut characters (和, 国…): mask it so that the cut lands before or after it.
    masked = run.replace(_PROTECTED, "\ue000" * len(_PROTECTED))
    cut = 0
    for m in _ZH_CUT.finditer(masked):
        cut = m.end()
    name = run[cut:]
    if not name:
        return _BARE
    if not _ZH_LAW_SUFFIX.search(name):
        return None
    if not name.startswith(_PROTECTED):
        name = next((famous for famous in _ZH_FAMOUS if name.endswith(famous)), name)
    alias = law_alias(name)
    if len(alias) < 2 or alias in _ZH_GENERIC or alias.startswith(("本", "该", "此", "前", "上")):
        return None
    return alias


def _zh_law_before(prefix: str, own: str, last: str, defined: dict[str, str]) -> str | None:
    """The law of a ``第…条`` chain that follows ``prefix``: a named law, ``own`` (本法…), ``last`` (该法),
    ``_BARE`` (no law named) or None (not a statute citation). ``defined`` maps short names the text
    introduced ("（以下简称《条例》）") to the law."""
    prefix = _ZH_SKIP.sub("", prefix)
    if _ZH_OWN.search(prefix):
        return own
    if _ZH_THAT.search(prefix):
        return last or _zh_mentioned(prefix)
    m = _ZH_BRACKET.search(prefix)
    if m:
        law = law_alias(m[1] or m[2])
        law = defined.get(law, law)
        return None if law in _ZH_GENERIC else law
    m = _ZH_RUN.search(prefix)
    if not m:
        return _BARE
    run = m[1]
    for short, law in defined.items():
        if run.endswith(short):
            return law
    return _zh_bare_law(run)


def _zh_mentioned(prefix: str) -> str | None:
    """The law last mentioned in ``prefix`` by 《name》 or by a well-known short name, for 该法."""
    named = [(m.end(), law_alias(m[1])) for m in re.finditer(r"《([^《》]{1,60})》", prefix)]
    named += [(prefix.rfind(famous) + len(famous), famous) for famous in _ZH_FAMOUS if famous in prefix]
    return max(named)[1] if named else None


def _zh_number(text: str) -> int:
    return chinese_numeral_to_int(text.strip("（）()"))


def _zh_citations(chain: str, law: str, *, expand: bool) -> list[Citation]:
    out: list[Citation] = []
    previous_end = 0
    previous: Citation | None = None
    for unit in _ZH_UNIT_RE.finditer(chain):
        between = chain[previous_end:unit.start()]
        previous_end = unit.end()
        try:
            number = chinese_numeral_to_int(unit["a"])
            article = str(number) + (f"-{chinese_numeral_to_int(unit['s'])}" if unit["s"] else "")
            paragraph = str(chinese_numeral_to_int(unit["p"])) if unit["p"] else ""
            detail = f"第{int_to_chinese_numeral(_zh_number(unit['i']))}项" if unit["i"] else ""
        except ValueError:
            continue
        citation = Citation(ARTICLE, law, article, paragraph, detail, _SIGN_ZH)
        if previous is not None and re.search("至|到", between):
            if expand:
                inner = [n for n in _range_rest(previous.article, article) if n != article]
                out.extend(Citation(ARTICLE, law, n, sign=_SIGN_ZH) for n in inner)
            elif previous.article.isdigit():
                out[-1] = Citation(ARTICLE, law, previous.article, previous.paragraph,
                                   _join(previous.detail, f"至第{_zh_label(article)}条"), _SIGN_ZH)
                previous = None
                continue
        out.append(citation)
        previous = citation
    return out


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------

_OUTER = " \t\r\n.,;:。，；：、()（）"


def parse(text: str, *, law: str = "", lang: str = "") -> Citation | None:
    """Parse one citation that makes up the whole of ``text``; ``None`` if it is not a citation.

    For a list or range the first article is returned (a range keeps its end in ``detail``:
    ``"–45"``, ``"ff."``). A citation without a law name gets ``law`` (aliased). Chinese text before
    ``第…条`` is taken whole as the law name (``中华人民共和国刑法第一条`` → 刑法).
    ``lang`` is accepted for symmetry with :func:`extract` and currently unused.

    Example::

        >>> parse("Art. 469 Abs. 1 ZGB")
        Citation(kind='article', law='ZGB', article='469', paragraph='1', detail='', sign='Art.')
        >>> str(parse("本法第三十八条", law="中华人民共和国劳动合同法"))
        '《劳动合同法》第三十八条'
        >>> parse("hello") is None
        True
    """
    del lang
    own = law_alias(law) if law else ""
    raw = _clean(text).strip()
    for candidate in dict.fromkeys((raw, raw.strip(_OUTER))):
        if not candidate:
            continue
        for pattern in (_BGE, _DOCKET):
            m = pattern.fullmatch(candidate)
            if m:
                return _decision_citation(m)
        m = _LATIN.fullmatch(candidate)
        if m:
            cites = _latin_citations(m, own, expand=False)
            if cites:
                return cites[0]
        zh = _parse_zh(candidate, own)
        if zh is not None:
            return zh
    return None


def _parse_zh(text: str, own: str) -> Citation | None:
    # The last chain must close the string; anything before it is the law's name, which may itself
    # contain an article ("最高人民法院关于适用刑法第十二条几个问题的解释第一条").
    chains = list(_ZH_CHAIN.finditer(text))
    if not chains or chains[-1].end() != len(text):
        return None
    chain = chains[-1]
    prefix = text[: chain.start()].strip()
    # "本法第五条", "依照本法第五条": the document's own law; anything else names the law.
    refers_to_own = not prefix or (len(prefix) <= 8 and _ZH_OWN.search(prefix) is not None)
    law = own if refers_to_own else law_alias(prefix)
    cites = _zh_citations(chain[0], law, expand=False)
    return cites[0] if cites else None


def normalize(text: str, *, law: str = "", lang: str = "") -> str | None:
    """The canonical form of one citation string (``str(parse(...))``), or ``None``.

    Example::

        >>> normalize("Art. 41 para. 2 let. a CO")
        'Art. 41 Abs. 2 lit. a OR'
    """
    citation = parse(text, law=law, lang=lang)
    return str(citation) if citation is not None else None


def extract(text: str, *, law: str = "", lang: str = "", swiss: bool = False) -> list[Citation]:
    """All citations inside a document or query text, in order of appearance, de-duplicated.

    Args:
        text: any text: a statute article, a decision, a question.
        law: the document's own law (any spelling :func:`law_alias` knows, e.g. ``"中华人民共和国刑法"``,
            ``"CO"``, ``"Civil Code (Japan)"``). References without a law name (``本法第五条``,
            ``依照第五条``, ``Art. 5``, ``§ 5``, ``Article 5``) resolve to it; without it they get ``law=""``.
        lang: ``"zh"`` skips the Latin-script patterns, any other non-empty value skips the Chinese ones.
        swiss: the text is Swiss law (an article of a Swiss act, a question to a Swiss index), so a code
            named without its country ("du code civil", "del Codice penale", "the Civil Code") is the
            Swiss one. An article of one of :data:`SWISS_CODES` is Swiss anyway.

    Returns:
        Citations; lists give one per article, short ranges one per article in the range.

    Example::

        >>> [c.key for c in extract("Die Art. 41 und 42 OR sowie BGE 131 III 601 E. 3.1")]
        ['OR art. 41', 'OR art. 42', 'BGE 131 III 601']
        >>> [str(c) for c in extract("依照本法第三十八条、第三十九条", law="劳动合同法")]
        ['《劳动合同法》第三十八条', '《劳动合同法》第三十九条']
    """
    own = law_alias(law) if law else ""
    text = _clean(text)
    found: list[tuple[int, int, list[Citation]]] = []
    if lang != "zh":
        if "BGE" in text or "ATF" in text or "DTF" in text:
            found.extend((m.start(), m.end(), [_decision_citation(m)]) for m in _BGE.finditer(text))
        if "/" in text:
            found.extend((m.start(), m.end(), [_decision_citation(m)]) for m in _DOCKET.finditer(text))
        if "§" in text or "rt" in text:
            found.extend(_extract_latin(text, own, swiss))
    if (not lang or lang == "zh") and "条" in text:
        found.extend(_extract_zh(text, own))
    found.sort(key=lambda f: f[0])
    out: dict[Citation, None] = {}
    end = -1
    for start, stop, citations in found:
        if start < end:
            continue  # overlaps an earlier match (a docket inside a Latin match, ...)
        end = stop
        for citation in citations:
            out.setdefault(citation)
    return list(out)


def _extract_latin(text: str, own: str, swiss: bool = False) -> list[tuple[int, int, list[Citation]]]:
    """The Latin-script citations of ``text``. A citation without a law name that is read together with the
    next one ("Art. 41 Abs. 1 i.V.m. Art. 97 OR", "§ 573 i.V.m. § 573c BGB") takes that one's law."""
    matches = [m for m in _LATIN.finditer(text)
               if not text.startswith("**", m.start() - 2)]  # a bold Markdown article heading, not a citation
    laws = [_latin_law(m, own, swiss) for m in matches]
    given = list(laws)  # what each match's citations are built with: a law taken over is not explicit
    for i in range(len(matches) - 2, -1, -1):  # backwards, so that a chain of connectors passes the law on
        named, (next_law, next_named) = laws[i][1], laws[i + 1]
        if named or not next_named or not next_law:
            continue
        if matches[i]["marker"].startswith("§") != (_default_sign(next_law) == _SIGN_SECTION):
            continue  # "§ 312d i.V.m. Artikel 246a EGBGB": numbered otherwise, so another law
        if _CONNECTOR_ONLY.fullmatch(text, matches[i].end(), matches[i + 1].start()):
            laws[i], given[i] = (next_law, True), (next_law, False)
    return [(m.start(), m.end(), _latin_citations(m, own, expand=True, named=named))
            for m, named in zip(matches, given, strict=True)]


def _extract_zh(text: str, own: str) -> list[tuple[int, int, list[Citation]]]:
    found = []
    last_law, last_end = "", -1
    defined: dict[str, str] = {}
    if "以下" in text:
        for m in _ZH_DEFINED.finditer(text):
            short, law = law_alias(m[2]), law_alias(m[1])
            if short and short != law:
                defined[short] = law
    for m in _ZH_CHAIN.finditer(text):
        start, end = m.span()
        if (start == 0 or text[start - 1].isspace()) and end < len(text) and text[end].isspace():
            continue  # an article's own number label ("第二条 凡…"), as in texts holding several articles
        law = _zh_law_before(text[max(0, start - 120):start], own, last_law, defined)
        if law is None:
            continue
        if law == _BARE:
            # A bare number continues the law cited earlier in the same sentence
            # ("刑法第二百二十一条规定的…罪，第二百七十八条规定的…"), else it is the document's own.
            same_sentence = last_law and not _ZH_SENTENCE_END.search(text, last_end, start)
            law = last_law if same_sentence else own
        elif law:
            last_law = law
        last_end = end
        found.append((start, end, _zh_citations(m[0], law, expand=True)))
    return found


def cites_of(text: str, *, law: str = "", lang: str = "", swiss: bool = False) -> tuple[str, ...]:
    """The distinct :attr:`Citation.key` values of :func:`extract`, for :attr:`LegalDoc.cites`.

    Statute citations whose law is unknown are left out: their key could not link to anything.

    Example::

        >>> cites_of("Art. 41 und 42 OR, Art. 5")
        ('OR art. 41', 'OR art. 42')
    """
    keys: dict[str, None] = {}
    for citation in extract(text, law=law, lang=lang, swiss=swiss):
        if citation.kind == ARTICLE and not citation.law:
            continue
        keys.setdefault(citation.key)
    return tuple(keys)


_ARTICLE_LABEL = re.compile(
    rf"^\s*(?:{_MARKER}|第)?\s*(?P<num>{_ZN}|\d+[a-z]*)(?:条)?(?:(?:之|-)(?P<branch>{_ZN}|\d+))?\s*$"
)


def statute_key(law: str, article: str, *, sign: str = "") -> str:
    """The linking key of article ``article`` of ``law``, equal to the key of a citation to it.

    ``article`` may be ``"469"``, ``"573b"``, ``"Art. 12a"``, ``"§ 573b"``, ``"第一百二十条之一"`` or
    ``"120-1"``. ``sign`` (``"§"``, ``"Art."``, ``"第"``) defaults to the law's usual numbering: Chinese
    for a Chinese name, ``§`` for German codes such as BGB and HGB, ``art.`` otherwise. Prefer
    ``article_of(doc.citation).key`` where a corpus has a citation field: it knows the sign.

    Example::

        >>> statute_key("中华人民共和国刑法", "第一百二十条之一"), statute_key("BGB", "573b")
        ('刑法 第120条之1', 'BGB § 573b')
    """
    alias = law_alias(law) if law else ""
    m = _ARTICLE_LABEL.match(article)
    number = article.strip()
    if m:
        number = m["num"]
        if re.fullmatch(_ZN, number):
            number = str(chinese_numeral_to_int(number))
        number = number.lstrip("0") or "0"
        if m["branch"]:
            branch = m["branch"]
            number += f"-{chinese_numeral_to_int(branch) if re.fullmatch(_ZN, branch) else branch}"
    return Citation(ARTICLE, alias, number, sign=sign).key


def article_of(doc_citation: str, *, law: str = "", lang: str = "") -> Citation | None:
    """Parse a corpus document's own ``citation`` field.

    ``law`` (the document's ``law`` field) fills in when the citation names none. Use ``.key`` to get
    the key that in-text citations of the document will carry.

    Example::

        >>> article_of("中华人民共和国刑法第一条").key, article_of("建筑法第四十八条").key
        ('刑法 第1条', '建筑法 第48条')
        >>> article_of("Art. 1 Civil Code (Japan)").key, article_of("§ 573b BGB").key
        ('Civil Code art. 1', 'BGB § 573b')
    """
    citation = parse(doc_citation, law=law, lang=lang)
    if citation is None or citation.kind != ARTICLE:
        return None
    return citation
