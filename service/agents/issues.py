"""Issue segmentation: the legal issues a question raises, each a contiguous span of it.

A question that raises several issues ("I was dismissed, can I get severance? And my landlord
keeps the deposit, what can I do?") needs the statutes of each. Searched as a whole, the
strongest issue crowds out the others; searched per issue, each gets its own candidates (see
:mod:`service.pipelines.issue_pool`).

Offline, the question is cut into *units* (sentences; for Chinese also the clauses between
commas). Each run of units that ends in a question (a question mark or, in Chinese, a question
word such as 吗, 怎么, 如何, 是否) becomes a candidate issue; units after the last question join
it. Adjacent candidates are then merged while they concern the same topic:

- a candidate too short to search alone joins its neighbour: a question the one before it (a
  follow-up like "怎么设立?"), a statement (below) the neighbour whose topic is closer;
- with a trained law/section classifier, two neighbours on one topic are one issue: the cosine of
  what their terms say about each section (the classifier's term evidence, without its section
  prior, which would make every span look alike) is at least :data:`SAME_TOPIC`;
- at most :data:`MAX_ISSUES` issues remain (per language; the most similar neighbours merge first).

A question that asks at most once tells its issues as facts ("I was dismissed without severance.
And on my way home a car hit me, the driver won't pay. What can I do?"), and so does one that tells
first and then asks in one run of questions at the end ("... What can I do? Can I sue?"; at least
:data:`STATEMENT_LEAD` statements first). With a topic model, its units are then the candidates,
merged the same way under the stricter bar :data:`STATEMENT_TOPIC`: only a clear change of topic
between neighbouring statements separates two issues (Chinese only, as measured).

Without a topic model, a short question in a Latin-script language that tells at least
:data:`STATEMENT_LEAD` statements and then asks in one run at its end ("My landlord has kept my deposit
for months. My employer fired me while I was ill. What can I do?") is cut at its statements as well
(:data:`UNTRAINED_STATEMENT_LANGUAGES`, at most :data:`UNTRAINED_STATEMENT_UNITS` units). The terms
the statements share stand in for the topic (:func:`shared_terms`): neighbours that name the same
thing ("Ich habe ein Auto gekauft. Das Auto ...") or the same party ("X ... Le détective D ... X pousse D")
are one matter, the others are cut apart
(:data:`UNTRAINED_STATEMENT_TOPIC`), and a statement shorter than :data:`UNTRAINED_STATEMENT_CHARS`
joins a neighbour. In English, French and Italian, a statement is also cut where "and" starts a new
clause (:func:`clauses_of`), so that two matters told in one sentence count as two statements ("My
landlord won't return my deposit and my employer fired me. What can I do?"). A question whose language
the index lacks (English on the Swiss statutes) joins its closing question to the last statement instead
of searching it alone. Longer texts and questions that do not end by asking keep to the rules above.

A single-issue question gives one issue: the whole question. :class:`IssueCounter` counts the
issues for routing, which sends a question of several to the tier that searches each one.

Example::

    segment_issues("我被公司辞退了能要补偿吗，房东不退押金怎么办？", "zh")
    # [Issue(text='我被公司辞退了能要补偿吗', ...), Issue(text='房东不退押金怎么办？', ...)]
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from service.agents.base import AgentName, Evidence, OfflineRewriter, Rewrite, RewriteOutput, TrainedParts
from service.analysis.chain import analyzer_for
from service.analysis.language import WORD, detected_language, question_language
from service.corpus.model import Query

MAX_ISSUES = {"de": 3, "default": 6}
"""Per language, how many issues a question may have at most. Held-out multi-issue lay questions cite
about seven articles; questions joined from four or five STARD dev questions (7.3 and 8.6 gold
articles) were merged into three issues at a cap of 3: agentic R@10 0.4153 → 0.4666 (four parts)
and 0.3296 → 0.4352 (five) at 6, while the questions of two or three parts and STARD dev kept their R@10.
German stays at 3: on GerLayQA the joined questions of two or three parts lost a little at 6 (0.3465
→ 0.3429) and those of four gained a little (0.2513 → 0.2600), and German lay questions often ask
several questions about one matter (docs/BENCHMARKS.md, "Questions of four and five issues")."""
SAME_TOPIC = {"de": 0.2, "default": 0.4}
"""Per language, the topic cosine at and above which two neighbouring spans are one issue (tuned
cross-fitted on questions joined from the STARD and GerLayQA training splits: scripts/tune_issues.py;
the boundary F1 is flat from 0.3 to 0.5 on STARD, and from 0.1 to 0.4 on GerLayQA, where German lay
questions often ask several questions about one matter: at 0.4 a quarter of GerLayQA's single
questions were cut into issues, at 0.2 a sixth, and its dev, joined and narrative sets all gained;
docs/BENCHMARKS.md, "German questions that ask several times")."""
STATEMENT_TOPIC = {"zh": 0.2}
"""Per language, the topic cosine under which two neighbouring statements of a question that asks at
most once are two issues; a language not listed keeps such a question whole. Tuned like
:data:`SAME_TOPIC`, on joined questions whose earlier parts were told as statements
(scripts/tune_issues.py --narrative). German lay questions tell one problem over many sentences:
on GerLayQA fit, cutting their statements at 0.05 kept 56 % of the single questions whole (73 %
without) and found few true boundaries (F1 0.16), so German is not listed."""
MIN_CHARS = {"zh": 8, "default": 60}
"""A span shorter than this (characters) is never an issue of its own."""
STATEMENT_MAX_UNITS = 32
"""A question read as statements (it asks at most once, or in one run at its end) is cut into them
only up to this many units. Lay questions that tell several issues have few (at most 19 on the
narrative STARD proxy); a longer text that asks once is a case file told at length, whose clauses
are the facts of one matter. (Merging them would be cheap: 23 ms for the 133 clauses of 2,000
characters.)"""
STATEMENT_LEAD = 2
"""A question whose questions all stand in one run at its end is cut like one that asks once when at
least this many statements come before them: its earlier issues are told, and its questions ask about
the last of them ("…，别人欠钱不还，我应该如何起诉？起诉应该提供哪些材料？"). Cut at its questions, its
statements formed one span with the first question and stayed one issue. On the narrative STARD proxies
(earlier parts told as statements), agentic R@10 0.5139 → 0.5190 (two or three parts), 0.3876 →
0.3933 (four) and 0.3307 → 0.3429 (five); STARD dev and the joined questions that ask about each part
kept their rankings (docs/BENCHMARKS.md, "Questions of four and five issues")."""
STATEMENT_MIN_CHARS = {"zh": 10, "default": 60}
"""The same for the statements of a question read as statements: a short clause there is
mostly background ("我在公司上班三年"), so Chinese statements need more characters to stand alone.
A shorter one joins the neighbour whose topic is closer (the next one when it has none, as a
connective such as "还有，"). Joined to the one before instead, as questions are, the short clauses
of one issue piled onto the issue told before it: on the narrative STARD proxies, four and five
parts, agentic R@10 0.3890 → 0.4075 and 0.3469 → 0.3607. With that, 10 characters (12 before)
gained another 0.010–0.013 there, for 0.001 of STARD dev R@10 (8: dev −0.005; docs/BENCHMARKS.md,
"Questions of four and five issues")."""

_CONNECTIVES_ZH = ("另外", "此外", "还有", "再者", "再有", "其次", "其二", "第二", "第三", "最后", "另一个问题是",
                   "另一个问题", "我还想问", "还想问", "我还想咨询", "还想咨询", "顺便问一下", "顺便问")
CONNECTIVES = {
    "zh": "(?:" + "|".join(sorted(_CONNECTIVES_ZH, key=len, reverse=True)) + r")\s*[，,：:]",
    "de": r"(?:(?:Außerdem|Ausserdem|Zudem|Und|Dann|Weiterhin|Des\s+Weiteren)\s+)?(?:(?:habe|hätte)\s+ich\s+)?"
          r"(?:noch\s+(?:eine|meine)\s+(?:(?:weitere|zweite|andere|letzte|nächste|dritte)\s+)?Frage"
          r"|(?:eine|meine)\s+(?:weitere|zweite|andere|letzte|nächste|dritte)\s+Frage)"
          r"|(?:Und\s+)?noch\s+etwas\s*[:.!]|(?:Zweite|Weitere|Andere|Nächste|Dritte)\s+Frage\s*:",
    "en": r"(?:(?:I\s+)?(?:also\s+)?(?:have|had)\s+)?(?:another|a\s+(?:second|further|different)|one\s+more)\s+question"
          r"|(?:Also|And)\s*,?\s+one\s+more\s+thing\s*[:.]|(?:Second|Another|Next)\s+question\s*:",
    "fr": r"(?:J['’]ai\s+)?(?:aussi\s+|également\s+|encore\s+)?une\s+(?:autre|deuxième|seconde)\s+question"
          r"|(?:Autre|Deuxième|Seconde)\s+question\s*:|Encore\s+une\s+(?:chose|question)",
    "it": r"(?:(?:Ho|Avrei)\s+)?(?:anche\s+|ancora\s+)?un['’]\s*altra\s+domanda|(?:Seconda|Altra)\s+domanda\s*:"
          r"|Ancora\s+una\s+(?:cosa|domanda)",
}
"""Per language, what opens another issue (regular expressions, matched where a unit begins): in Chinese
a connective that stands as a clause of its own ("…，还有，别人欠钱不还，…", "…。另外，…"), in the other
languages a sentence that announces another question ("Eine weitere Frage: …", "Außerdem habe ich noch eine
andere Frage.", "Another question: …"). Such a unit starts a new issue even where the one before has not
asked yet (the statements before it join the issue before them), a Chinese connective clause joins the
clause after it, and the cut before it stands unless the question has more issues than its cap. A single
question seldom holds one: 5 of GerLayQA's 2,151 questions (each of them does ask a second question), none
of STARD's 1,235."""

UNTRAINED_STATEMENT_LANGUAGES = frozenset({"de", "fr", "it", "en"})
"""Languages whose short told-then-asked questions are cut at their statements without a topic model.
On lay questions of the Swiss excerpt joined two or three at a time and told as one story (only the
last part asks; no model folder), `routed` R@10 rose from 0.389 to 0.608 in German and from 0.407 to
0.457 in French, Italian stayed at 0.45 and English moved from 0.421 to 0.430; the questions that ask
about each matter, the Swiss lay sets and the demo kept their rankings, GerLayQA dev moved by less than
a question's worth (R@10 0.1811 → 0.1813), and COLIEE's statements, which never ask, are not read
this way (docs/BENCHMARKS.md, "Told-then-asked questions without a model")."""
UNTRAINED_STATEMENT_TOPIC = 0.05
"""The statements' bar without a topic model, over the terms they share (:func:`shared_terms`):
neighbouring statements that share a term of the question are one matter. Statements told about one
matter name it again ("Ich habe ein Auto gekauft. Das Auto ..."): of the GerLayQA dev questions that
cutting at every statement would cut, 92 % have neighbouring statements that share a term, against
6 % of the true boundaries of the joined lay questions."""
UNTRAINED_STATEMENT_CHARS = 30
"""Without a topic model, a statement shorter than this (characters) joins its neighbour: a statement of
30 characters ("Mir wird der Lohn gepfändet.") tells a matter. On the told-then-asked Swiss lay proxies
30 found more than 60 in German, French and Italian (R@10 0.593 → 0.608, 0.404 → 0.457, 0.429 →
0.450) and lost a little in English (0.439 → 0.430)."""
UNTRAINED_STATEMENT_UNITS = 6
"""The most units such a question may have: lay questions that tell two or three matters have three to
six; a longer text that asks once tells one matter at length (GerLayQA's questions have 11 units at the
median, and German lay questions tell one problem over many sentences)."""

CAPITAL_WORDS = {"en": "AI", "fr": "AY", "it": "AEIO"}
"""Capital letters that are words of a language where they stand alone (English "A" and "I", Italian "E"
at a sentence's start), so they name no party (:func:`party_letters`)."""
UNTRAINED_CLAUSE_JOINS = {"en": ("and",), "fr": ("et",), "it": ("e", "ed")}
"""Per language, the words that join two clauses. Without a topic model, a short question that tells two
matters in one sentence ("My landlord won't return my deposit and my employer fired me. What can I do?")
has its statements cut there too (:func:`clauses_of`), so that the rule above sees two statements. On
Swiss lay questions joined in pairs and told that way (no model folder), `routed` R@10 rose from 0.300 to
0.435 in French, from 0.303 to 0.333 in Italian and from 0.451 to 0.515 in English (with its closing
question joined to the last matter, :func:`segment_issues`; the cut alone kept 0.451); the Swiss lay sets,
the demo, GerLayQA and COLIEE segment as before. German is not listed: its lay questions chain the
clauses of one matter ("…die Heizung kaputt und der Vermieter unternimmt nichts"), and cut there the
German pairs lost (0.388 → 0.329; docs/BENCHMARKS.md, "Two matters in one sentence")."""
UNTRAINED_CLAUSE_STARTS = {
    "en": frozenset("i you he she it we they my your his her its our their the a an this that these those someone "
                    "somebody nobody there now then since yesterday today also".split()),
    "fr": frozenset("je j tu il elle on nous vous ils elles mon ma mes ton ta tes son sa ses notre nos votre vos leur "
                    "leurs le la les l un une ce cet cette ces quelqu depuis maintenant hier puis".split()),
    "it": frozenset("io tu lui lei noi voi loro il lo la i gli le l un uno una mio mia miei mie tuo tua suo sua nostro "
                    "nostra qualcuno questo questa quel quello quella ora adesso ieri oggi poi inoltre "
                    "ho sono abbiamo siamo avevo ero".split()),
}
"""Per language, the words a clause may start with after "and": a subject (a pronoun, an article, a
possessive) or a time that leads one. "and damaged my car" continues the subject before it and is not cut.
Italian drops the subject, so its first-person forms of *avere* and *essere* ("… e sono senza casa") start
a clause too."""
UNTRAINED_CLAUSE_TEXT_CHARS = 300
"""A question longer than this (characters) is not cut at its "and"s: lay questions that tell two matters in
one sentence are short (at most 233 characters on the Swiss lay pairs), and a longer text tells one matter
at length."""

_UNIT_ZH = re.compile(r"(?<=[？?！!。；;])|(?<=[，,])")
_UNIT_LATIN = re.compile(r"(?<=[?!;])\s+|(?<=[.])\s+(?=[A-ZÄÖÜÀ-Ý0-9])|\s+(?=\d\s?[.)]\s)")
_QUESTION_ZH = re.compile(
    r"[？?]|吗|(?<![那这要多])么|什么|怎么|怎样|如何|能否|可否|是否|哪|谁|多少|多久|多长|几[个年天月次]|为何|为什么|有没有|能不能|"
    r"可不可以|要不要|该不该|会不会|有哪些|区别")
_QUESTION_LATIN = re.compile(r"\?")
_CONNECTIVE = {lang: re.compile(pattern, 0 if lang == "zh" else re.IGNORECASE) for lang, pattern in CONNECTIVES.items()}
_PARTY = re.compile(r"(?<![\w'’-])([A-Z])(?![\w'’-])")
_CLAUSE_JOIN = {lang: re.compile(r",?\s+(?:" + "|".join(words) + r")\s+(?=\S)")
                for lang, words in UNTRAINED_CLAUSE_JOINS.items()}

_OPENED = -2.0
"""The similarity given to two spans when a connective opens the second: below every cosine."""

Topic = Callable[[str], np.ndarray]
"""A text's topic vector (e.g. the law classifier's term evidence per section); spans are compared by cosine."""


@dataclass(frozen=True)
class Issue:
    """One issue: its text and where it lies in the question (``start``/``end`` character offsets)."""

    text: str
    start: int
    end: int


def units_of(text: str, language: str) -> list[tuple[int, int]]:
    """Character spans of the question's units (sentences; Chinese clauses), blanks excluded."""
    pattern = _UNIT_ZH if language == "zh" else _UNIT_LATIN
    spans: list[tuple[int, int]] = []
    start = 0
    for match in pattern.finditer(text):  # each match separates two units (zero-width after punctuation)
        if match.start() > start:
            spans.append((start, match.start()))
        start = max(start, match.end())
    spans.append((start, len(text)))
    out = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((a, b))
    return out


def asks(unit: str, language: str) -> bool:
    """Whether a unit asks something (question mark; Chinese question words)."""
    return bool((_QUESTION_ZH if language == "zh" else _QUESTION_LATIN).search(unit))


def _min_chars(language: str, table: dict[str, int] = MIN_CHARS) -> int:
    return table.get(language, table["default"])


def _cosine(p: np.ndarray, q: np.ndarray) -> float:
    """Cosine of two topic vectors; 1 when either is empty (a span without known terms has no topic
    of its own, so it stays with its neighbour)."""
    norm = float(np.linalg.norm(p) * np.linalg.norm(q))
    return float(p @ q) / norm if norm > 0 else 1.0


def question_spans(text: str, language: str, units: list[tuple[int, int]] | None = None) -> list[list[int]]:
    """Candidate issues: runs of units that each end in a question (``[start, end]`` offsets); units
    after the last question join the last run, and a unit that announces another issue
    (:data:`CONNECTIVES`) starts a run. One span (the whole text) when nothing asks or announces.
    ``units``: the text's :func:`units_of`, when the caller has them."""
    units = units_of(text, language) if units is None else units
    return _spans_of(units, [asks(text[a:b], language) for a, b in units],
                     [opens_issue(text, a, language) for a, _ in units])


def _spans_of(units: list[tuple[int, int]], asking: list[bool], opening: list[bool] | None = None) -> list[list[int]]:
    """:func:`question_spans` from the units, whether each asks and whether each opens an issue (one flag
    per unit; :data:`CONNECTIVES`): a unit that opens one starts a run. Statements pending when a run starts
    or the text ends join the run before them, unless an announcing unit opened them: then they are a run
    of their own."""
    if not units:
        return []
    spans: list[list[int]] = []
    open_start: int | None = None
    announced = False  # the pending run was opened by an announcing unit

    def close_pending(end: int) -> None:
        if spans and not announced:
            spans[-1][1] = end
        else:
            spans.append([open_start, end])  # type: ignore[list-item]

    for i, ((a, b), question) in enumerate(zip(units, asking, strict=True)):
        opens = opening is not None and opening[i]
        if opens and open_start is not None and open_start < a:
            close_pending(units[i - 1][1])
            open_start = None
        if open_start is None:
            open_start, announced = a, opens
        if question:
            spans.append([open_start, b])
            open_start = None
    if open_start is not None:
        close_pending(units[-1][1])
    return spans


def _asks_at_the_end(asking: list[bool]) -> bool:
    """Whether units that ask (``asking``, one flag per unit) stand in one run after at least
    :data:`STATEMENT_LEAD` statements."""
    if True not in asking:
        return False
    runs = sum(1 for i, a in enumerate(asking) if a and (i == 0 or not asking[i - 1]))
    return runs == 1 and asking.index(True) >= STATEMENT_LEAD


def opens_issue(text: str, start: int, language: str) -> bool:
    """Whether a connective clause (:data:`CONNECTIVES`) opens the text at ``start``, so that another issue
    begins there."""
    pattern = _CONNECTIVE.get(language)
    return pattern is not None and pattern.match(text, start) is not None


def issue_cap(language: str) -> int:
    """The most issues a question in ``language`` may have (:data:`MAX_ISSUES`)."""
    return MAX_ISSUES.get(language, MAX_ISSUES["default"])


def segment_issues(text: str, language: str, topic: Topic | None = None, *, max_issues: int | None = None,
                   same_topic: float | None = None, statement_topic: float | None = None) -> list[Issue]:
    """The question's issues, in order (one issue, the whole question, when it raises one).

    ``max_issues`` caps the number of issues (``None``: the language's :data:`MAX_ISSUES`);
    ``same_topic`` is the merging bar between question spans (``None``: the language's
    :data:`SAME_TOPIC`); ``statement_topic`` the one between the units of a question that asks at most
    once, or in one run at its end (``None``: the language's :data:`STATEMENT_TOPIC`; 0: such a
    question is cut at its questions only).
    """
    if same_topic is None:
        same_topic = SAME_TOPIC.get(language, SAME_TOPIC["default"])
    if max_issues is None:
        max_issues = issue_cap(language)
    units = units_of(text, language)
    asking = [asks(text[a:b], language) for a, b in units]
    spans = _spans_of(units, asking, [opens_issue(text, a, language) for a, _ in units])
    shortest = _min_chars(language)
    if statement_topic is None:
        statement_topic = STATEMENT_TOPIC.get(language, 0.0)
    tells = len(spans) < 2 or _asks_at_the_end(asking)
    untrained = False
    if topic is None and language in UNTRAINED_STATEMENT_LANGUAGES and len(units) <= UNTRAINED_STATEMENT_UNITS:
        shown = _shown_language(text, language)
        clauses = clauses_of(text, units, asking, shown)
        clauses_asking = [asks(text[a:b], language) for a, b in clauses]
        untrained = _asks_at_the_end(clauses_asking)
        if untrained:
            units, tells = clauses, True
            if shown != language:
                # read in a language the index lacks, the question reaches BM25 through a glossary's terms of
                # art, which a bare closing question ("Which right was violated?") seldom names: it is searched
                # with the matter it asks about (English lay pairs told in one sentence: R@10 0.451 -> 0.515)
                units = _questions_joined(clauses, clauses_asking)
            topic, statement_topic = shared_terms(text, shown), UNTRAINED_STATEMENT_TOPIC
    statements = tells and topic is not None and statement_topic > 0 and len(units) <= STATEMENT_MAX_UNITS
    if statements:
        spans = [[a, b] for a, b in units]
        same_topic = statement_topic
        shortest = UNTRAINED_STATEMENT_CHARS if untrained else _min_chars(language, STATEMENT_MIN_CHARS)
    if len(spans) < 2:
        return [Issue(text[a:b], a, b) for a, b in spans]
    # merges keep the left span's start, so every later span starts at one of these
    opened = {a for a, _ in spans if opens_issue(text, a, language)}
    topics: list[np.ndarray | None] = [None] * len(spans)

    def topic_of(i: int) -> np.ndarray | None:
        if topic is None:
            return None
        if topics[i] is None:
            topics[i] = topic(text[spans[i][0]:spans[i][1]])
        return topics[i]

    def merge(i: int) -> None:  # span i absorbs span i + 1
        spans[i][1] = spans[i + 1][1]
        del spans[i + 1]
        del topics[i + 1]
        topics[i] = None

    def absorbing(i: int) -> int:
        """The merge that takes in the short span ``i``: a question span joins the one before it (a
        follow-up asks about it); a statement joins the neighbour whose topic is closer, the next one
        when it has no topic of its own (a connective such as "还有，" leads into what follows)."""
        if i == 0:
            return 0
        if i < len(spans) - 1 and spans[i][0] in opened:
            return i
        if not statements or i == len(spans) - 1:
            return i - 1
        own = topic_of(i)
        if not float(np.linalg.norm(own)):
            return i
        before, after = _cosine(topic_of(i - 1), own), _cosine(own, topic_of(i + 1))  # type: ignore[arg-type]
        return i - 1 if before >= after else i

    changed = True
    while changed and len(spans) > 1:
        changed = False
        for i, (a, b) in enumerate(spans):
            if b - a < shortest:
                merge(absorbing(i))
                changed = True
                break
    if topic is not None:
        # neighbour cosines kept up to date: a merge changes only the two next to the merged span

        def similarity(i: int) -> float:
            if spans[i + 1][0] in opened:
                return _OPENED  # cut before a connective clause: merged last, and only above the cap
            return _cosine(topic_of(i), topic_of(i + 1))  # type: ignore[arg-type]

        sims = [similarity(i) for i in range(len(spans) - 1)]
        while len(spans) > 1:
            best = int(np.argmax(sims))
            if sims[best] < same_topic and len(spans) <= max_issues:
                break
            merge(best)
            del sims[best]
            for i in (best - 1, best):
                if 0 <= i < len(sims):
                    sims[i] = similarity(i)
    if len(spans) > max_issues:  # no topic model: merge the shortest neighbours first, across a connective last

        def cost(j: int) -> tuple[bool, int]:
            return spans[j + 1][0] in opened, spans[j + 1][1] - spans[j][0]

        costs = [cost(j) for j in range(len(spans) - 1)]  # kept up to date like the cosines above
        while len(spans) > max_issues:
            i = costs.index(min(costs))
            merge(i)
            del costs[i]
            for j in (i - 1, i):
                if 0 <= j < len(costs):
                    costs[j] = cost(j)
    return [Issue(text[a:b], a, b) for a, b in spans]


def clauses_of(text: str, units: list[tuple[int, int]], asking: list[bool], shown: str) -> list[tuple[int, int]]:
    """``units`` with each statement also cut where "and" starts a new clause (:data:`UNTRAINED_CLAUSE_JOINS`,
    :data:`UNTRAINED_CLAUSE_STARTS`), both sides at least :data:`UNTRAINED_STATEMENT_CHARS` long, read in
    ``shown``, the language the text shows. A text longer than :data:`UNTRAINED_CLAUSE_TEXT_CHARS` keeps its
    units."""
    joins = _CLAUSE_JOIN.get(shown)
    if joins is None or len(text) > UNTRAINED_CLAUSE_TEXT_CHARS:
        return units
    out: list[tuple[int, int]] = []
    for (a, b), question in zip(units, asking, strict=True):
        start = a
        for match in [] if question else joins.finditer(text, a, b):
            word = WORD.match(text, match.end(), b)
            if (match.start() - start >= UNTRAINED_STATEMENT_CHARS and b - match.end() >= UNTRAINED_STATEMENT_CHARS
                    and word is not None and word.group().lower() in UNTRAINED_CLAUSE_STARTS[shown]):
                out.append((start, match.start()))
                start = match.end()
        out.append((start, b))
    return out


def _questions_joined(units: list[tuple[int, int]], asking: list[bool]) -> list[tuple[int, int]]:
    """``units`` with the run of questions at the end (:func:`_asks_at_the_end`) joined to the statement before it."""
    first = asking.index(True)
    return [*units[:first - 1], (units[first - 1][0], units[-1][1])]


def _shown_language(text: str, language: str) -> str:
    """The language ``text`` shows among :data:`UNTRAINED_STATEMENT_LANGUAGES`, else ``language``."""
    return detected_language(text, candidates=tuple(sorted(UNTRAINED_STATEMENT_LANGUAGES))) or language


def shared_terms(text: str, language: str) -> Topic:
    """The topic of a span of ``text`` without a model: the counts of its analysed terms over the terms of
    the whole text, so that two spans are alike as far as they share terms. ``language`` is the one the
    text shows (:func:`segment_issues` passes it): the agents read an English question on a German index
    as German, and German analysis would keep its "my" as a term that every statement shares.

    The parties a span names by a capital letter count as terms too (:func:`party_letters`): the facts of
    one case name the same parties from sentence to sentence, and analysis may drop the letters (French
    *d'*, *l'* make "D" and "L" stopwords). So does the reading of a sense rule that the whole text fires,
    in every span that holds its word or one of its contexts: "ma mère a tout laissé dans son testament"
    and "nous ne devons rien recevoir" share the compulsory share."""
    analyzer = analyzer_for(language)
    whole = analyzer.query_tokens(text)
    subjects = [rule for rule, _ in analyzer.senses.reading(whole).fired]

    def terms(span: str) -> list[str]:
        own = analyzer.query_tokens(span)
        read = [term for rule in subjects if rule.touches(own) for term in rule.reading]
        return own + read + party_letters(span, language)

    slots = {term: n for n, term in enumerate(dict.fromkeys(terms(text)))}

    def topic(span: str) -> np.ndarray:
        counts = np.zeros(max(1, len(slots)))
        for term in terms(span):
            if term in slots:
                counts[slots[term]] += 1.0
        return counts

    return topic


def party_letters(text: str, language: str) -> list[str]:
    """The parties ``text`` names by a capital letter ("K kauft von V": ``['party:K', 'party:V']``), leaving
    out the capitals that are words of ``language`` (:data:`CAPITAL_WORDS`: English "A", "I")."""
    words = CAPITAL_WORDS.get(language, "")
    return [f"party:{letter}" for letter in _PARTY.findall(text) if letter not in words]


def topic_of(classifier: Any, language: str) -> Topic | None:
    """The segmenter's topic function: what a span's terms say about each section (the law
    classifier's :meth:`~service.agents.prefilter.LawClassifier.term_evidence`), or ``None`` without
    a classifier or a language."""
    if classifier is None or not language:
        return None
    analyzer = analyzer_for(language)

    def topic(text: str) -> np.ndarray:
        # Unit by unit: the same terms as the whole span (units end at punctuation or blanks, where
        # the tokenizers cut anyway), but each unit's terms come from the analyzer's cache, so a
        # span merged from known units costs no new tokenization (a long case file merges hundreds).
        units = units_of(text, language)
        return classifier.term_evidence([t for a, b in units for t in analyzer.tokens(text[a:b])])

    return topic


class OfflineIssueRewriter(OfflineRewriter):
    """The decomposition agent's offline issues: one rewrite per issue, none for a one-issue question.

    The LLM counterpart is :class:`~service.agents.rewriters.decompose.LlmDecomposeRewriter` with this
    rewriter as its fallback, so both paths hand the issue search the same kind of sub-questions.
    """

    agent = AgentName.DECOMPOSE.value

    def __init__(self, topic: Topic | None = None, *, max_issues: int | None = None) -> None:
        self.topic = topic
        self.max_issues = max_issues

    @classmethod
    def from_models(cls, models: TrainedParts | None) -> Self:
        """With a model folder, the law classifier is the topic model."""
        return cls(topic_of(models.law_classifier, models.language) if models is not None else None)

    def rewrite(self, query: Query, evidence: Evidence) -> RewriteOutput:
        issues = segment_issues(query.text, evidence.language, self.topic, max_issues=self.max_issues)
        if len(issues) < 2:
            return RewriteOutput([])
        return RewriteOutput([Rewrite(text=i.text, agent=self.agent, round=evidence.round) for i in issues])


class IssueCounter:
    """``(question, lang, index) -> count`` of its issues, as the agentic search segments it: routing's
    signal that a question needs the tier that searches each issue (``routing.escalate_issues``).

    With a trained model folder, the law classifier is the topic model; without one, questions are cut
    at their questions only. A missing ``lang`` is resolved as the agentic search resolves it
    (:func:`~service.analysis.language.question_language`: the folder's language, else detected among
    the index's languages).

    Args:
        models: gives the trained models (a ``service.models.TrainedModels``, or ``None``), the
            runtime's, so the folder is loaded once for every pipeline.
        languages: the languages of an index's documents (the runtime's cached index resources).

    Example::

        count = IssueCounter(runtime.models)
        count("公司辞退我能要补偿吗？房东不退押金怎么办？", "zh")   # 2
    """

    def __init__(self, models: Callable[[], Any],
                 languages: Callable[[str], tuple[str, ...]] = lambda index: ()) -> None:
        self.models = models
        self.languages = languages

    def __call__(self, question: str, lang: str, index: str = "") -> int:
        models = self.models()
        trained = models.language if models is not None else ""
        # the index's languages only where they decide (their first lookup builds the index's resources)
        candidates = self.languages(index) if index and not (lang or trained) else ()
        language = question_language(question, lang, trained=trained, candidates=candidates)
        topic = topic_of(models.law_classifier, language) if models is not None else None
        return len(segment_issues(question, language, topic))
