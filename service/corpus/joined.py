"""Joined multi-issue questions: two or three single-issue questions about different areas of law
asked as one, whose gold set is the union of theirs.

A developer-visible stand-in for questions that raise several issues at once. Parts are drawn
with a fixed seed from one split (never from the training split), and the parts of one joined
question must concern different *areas*: different laws, where a large code counts as several
areas, one per division (:data:`CODE_DIVISIONS`: the seven books of the Chinese Civil Code, which
replaced seven separate laws in 2021; the five books of the BGB, with the law of obligations
split into its general part and its main contract types). Parts are joined the way people write,
with a seeded choice per boundary: one question after the other, a connective ("另外", "Außerdem
…"), a semicolon, or only a comma, the question mark of the earlier part dropped. A *narrative*
joined question tells every part but the last as a statement (:func:`as_statement`), as people
who list their problems and ask once at the end do. A joined question *told in one sentence*
(:func:`told_in_one_sentence`) gives the facts of two parts in one sentence joined by "and", then the
last part's question ("My landlord keeps my deposit and my employer fired me. Is that allowed?").

Example::

    joined = draw_joined(singles, area_of, arity=2, count=100, seed=7, language="zh")
    write_joined(dataset, "dev", joined, "/work/data/stard-joined")
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.corpus.datasets import Dataset
from service.corpus.graph import CorpusGraph

CODE_DIVISIONS: dict[str, tuple[tuple[int, str], ...]] = {
    "中华人民共和国民法典": (
        (1, "总则编"), (205, "物权编"), (463, "合同编"), (989, "人格权编"), (1040, "婚姻家庭编"),
        (1119, "继承编"), (1164, "侵权责任编"),
    ),
    "BGB": (
        (1, "Allgemeiner Teil"), (241, "Schuldrecht, allgemeiner Teil"), (433, "Kauf, Tausch"),
        (481, "Teilzeitwohnrecht, Darlehen, Finanzierungshilfen"), (516, "Schenkung"),
        (535, "Miete, Pacht, Leihe, Sachdarlehen"), (611, "Dienstvertrag, Arbeitsvertrag"),
        (631, "Werkvertrag, Reisevertrag"), (652, "Makler, Auftrag, Gesellschaft und weitere Schuldverhältnisse"),
        (812, "Ungerechtfertigte Bereicherung"), (823, "Unerlaubte Handlungen"), (854, "Sachenrecht"),
        (1297, "Familienrecht"), (1922, "Erbrecht"),
    ),
}
"""First article number of each division of the codes that count as several areas of law."""

_END = re.compile(r"[\s？?。.！!；;，,]+$")
_GREETING_DE = re.compile(
    r"^(?:(?:hallo|hi|guten (?:tag|morgen|abend)|sehr geehrte[rs]?(?: damen und herren)?|liebe[rs]?|"
    r"moin|servus)\b[^.!?,:]*[,.!:]?\s*)+", re.I)
_SIGN_OFF_DE = re.compile(
    r"(?:\s*(?:vielen dank|danke|mit freundlich\w*|mfg|lg|liebe grüße|viele grüße|beste grüße|gruß|grüße)\b"
    r"[^.!?]*[.!]?\s*)+$", re.I)


def area_of(graph: CorpusGraph, doc_id: str) -> str:
    """The area of law of one article: its law, or the law's division for :data:`CODE_DIVISIONS`."""
    info = graph.info(doc_id)
    if info is None:
        return ""
    divisions = CODE_DIVISIONS.get(info.law)
    if not divisions:
        return info.law
    name = divisions[0][1]
    for first, division in divisions:
        if info.number >= first:
            name = division
    return f"{info.law} / {name}"


def _join_zh(a: str, b: str, rng: random.Random) -> tuple[str, str]:
    stem = _END.sub("", a)
    style = rng.choice(("sequence", "另外", "还有", "semicolon", "comma"))
    if style == "sequence":
        return (a if a != stem else stem + "。") + b, style
    if style == "另外":
        return f"{stem}。另外，{b}", style
    if style == "还有":
        return f"{stem}，还有，{b}", style
    if style == "semicolon":
        return f"{stem}；{b}", style
    return f"{stem}，{b}", style


_JOINERS_DE = ("sequence", "Außerdem habe ich noch eine andere Frage.", "Und noch etwas:", "Eine weitere Frage:")


def _join_de(a: str, b: str, rng: random.Random) -> tuple[str, str]:
    style = rng.choice(_JOINERS_DE)
    if style == "sequence":
        return f"{a} {b}", style
    return f"{a} {style} {b}", style


def _join_latin(a: str, b: str, rng: random.Random) -> tuple[str, str]:
    return f"{a} {b}", "sequence"


_JOINERS: dict[str, Callable[[str, str, random.Random], tuple[str, str]]] = {"zh": _join_zh, "de": _join_de}

_ASKING_ZH = re.compile(
    r"请问|吗|什么|怎么办|怎么|怎样|如何|能否|可否|是否|哪些|哪个|哪|谁|多少|多久|多长|为何|为什么|有没有|能不能|"
    r"可不可以|要不要|该不该|会不会|呢")


def as_statement(text: str, language: str) -> str:
    """A question told as a statement: question marks become commas (Chinese) or full stops, and
    Chinese question words go ("旅游者可以转让合同吗？" → "旅游者可以转让合同")."""
    if language == "zh":
        return _END.sub("", _ASKING_ZH.sub("", text.replace("？", "，").replace("?", "，"))).strip("，, ")
    return re.sub(r"\?+", ".", text).strip()


def part_as_joined(text: str, language: str, *, first: bool, last: bool) -> str:
    """A part as it reads inside a joined question: greetings only at the start, sign-offs only at the end."""
    if language != "de":
        return text.strip()
    out = text.strip()
    if not first:
        out = _GREETING_DE.sub("", out).strip()
        out = out[:1].upper() + out[1:]
    if not last:
        out = _SIGN_OFF_DE.sub("", out).strip()
    return out


CLAUSE_JOINERS = {"de": "und", "en": "and", "fr": "et", "it": "e"}
"""The word that joins two clauses, per language, in questions told in one sentence."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LOWER_AFTER_AND_DE = frozenset(
    "ich wir mir mich mein meine meinen meinem meiner unser unsere der die das den dem ein eine einen einem seit "
    "jemand vor nach im am beim letzte letzten letztes gestern".split())


def statements_and_question(text: str) -> tuple[str, str] | None:
    """A question's facts and its question: the sentences before the first that asks, and the rest; ``None``
    when it asks in its first sentence or never."""
    sentences = [s for s in _SENTENCE.split(text.strip()) if s]
    asking = [i for i, sentence in enumerate(sentences) if "?" in sentence]
    if not asking or asking[0] == 0:
        return None
    return " ".join(sentences[:asking[0]]), " ".join(sentences[asking[0]:])


def told_in_one_sentence(texts: Sequence[str], language: str) -> str:
    """Two questions told in one sentence: the facts of the first and of the second joined by "and"
    (:data:`CLAUSE_JOINERS`), then the second's question. Each text must have facts before it asks
    (:func:`statements_and_question`)."""
    if len(texts) != 2:
        raise ValueError("a question told in one sentence joins two parts")
    told = [statements_and_question(t) for t in texts]
    if told[0] is None or told[1] is None:
        raise ValueError("each part needs facts before its question")
    first = _END.sub("", told[0][0])
    second = told[1][0]
    word = second.split(" ", 1)[0]
    if word != "I" and (language != "de" or word.lower() in _LOWER_AFTER_AND_DE):
        second = second[:1].lower() + second[1:]
    return f"{first} {CLAUSE_JOINERS[language]} {second} {told[1][1]}"


@dataclass(frozen=True)
class Single:
    """One single-issue question: id, text, gold articles and their areas."""

    qid: str
    text: str
    gold: frozenset[str]
    areas: frozenset[str]


@dataclass(frozen=True)
class Joined:
    """One joined question: its id, text, parts (single question ids, in order) and joiners used."""

    qid: str
    text: str
    parts: tuple[str, ...]
    joiners: tuple[str, ...]
    gold: frozenset[str]


def join_texts(texts: Sequence[str], language: str, rng: random.Random, *, narrative: bool = False
               ) -> tuple[str, tuple[str, ...]]:
    """The texts as one question, and the joiner chosen at each boundary; ``narrative``: every text
    but the last told as a statement."""
    join = _JOINERS.get(language, _join_latin)
    parts = [part_as_joined(t, language, first=i == 0, last=i == len(texts) - 1) for i, t in enumerate(texts)]
    if narrative:
        parts = [as_statement(p, language) for p in parts[:-1]] + parts[-1:]
    text, joiners = parts[0], []
    for part in parts[1:]:
        text, style = join(text, part, rng)
        joiners.append(style)
    return text, tuple(joiners)


def told_as_narrative(texts: Sequence[str], share: float) -> bool:
    """Whether the joined question of these parts is told as a narrative, for a ``share`` of such
    questions. A hash of the parts decides, not the drawing's random numbers, so the same parts are
    drawn whatever the share."""
    if share <= 0.0 or share >= 1.0:
        return share >= 1.0
    digest = hashlib.sha1("\x1f".join(texts).encode("utf-8")).hexdigest()
    return int(digest[:8], 16) / 0xFFFFFFFF < share


def draw_joined(singles: Sequence[Single], *, arity: int, count: int, seed: int, language: str,
                max_uses: int = 1, max_chars: int = 8000, prefix: str = "j",
                uses: Counter[str] | None = None, narrative: float = 0.0, one_sentence: bool = False
                ) -> list[Joined]:
    """``count`` joined questions of ``arity`` parts with pairwise disjoint areas (fewer when the
    singles do not allow more). Each single is used at most ``max_uses`` times overall (``uses``
    carries the counts across calls), and no set of parts is drawn twice. ``narrative``: the share
    of joined questions in which only the last part asks (:func:`join_texts`, :func:`told_as_narrative`;
    0 none, 1 all). ``one_sentence``: every joined question told in one sentence
    (:func:`told_in_one_sentence`; two parts, each with facts before its question).
    """
    rng = random.Random(seed)
    uses = uses if uses is not None else Counter()
    by_qid = {s.qid: s for s in singles
              if s.areas and (not one_sentence or statements_and_question(s.text) is not None)}
    seen: set[frozenset[str]] = set()
    out: list[Joined] = []
    attempts = 0
    while len(out) < count and attempts < count * 200:
        attempts += 1
        free = sorted(q for q in by_qid if uses[q] < max_uses)
        if len(free) < arity:
            break
        chosen = [by_qid[rng.choice(free)]]
        covered = set(chosen[0].areas)
        candidates = [q for q in free if q != chosen[0].qid and not (by_qid[q].areas & covered)]
        rng.shuffle(candidates)
        for qid in candidates:
            single = by_qid[qid]
            if single.areas & covered:
                continue
            chosen.append(single)
            covered |= single.areas
            if len(chosen) == arity:
                break
        key = frozenset(s.qid for s in chosen)
        if len(chosen) < arity or key in seen:
            continue
        texts = [s.text for s in chosen]
        if one_sentence:
            text, joiners = told_in_one_sentence(texts, language), (CLAUSE_JOINERS[language],)
        else:
            text, joiners = join_texts(texts, language, rng, narrative=told_as_narrative(texts, narrative))
        if len(text) > max_chars:
            continue
        seen.add(key)
        uses.update(key)
        gold = frozenset().union(*(s.gold for s in chosen))
        out.append(Joined(f"{prefix}{arity}_{len(out) + 1:04d}", text, tuple(s.qid for s in chosen), joiners, gold))
    return out


def singles_of(dataset: Dataset, split: str, graph: CorpusGraph, *, avoid: Sequence[str] = ()) -> list[Single]:
    """The questions of ``split`` with their gold areas, leaving out any whose text (or gold set and
    text) also occurs in the ``avoid`` splits, so that no joined part was seen in training."""
    avoided = {" ".join(q.text.split()) for name in avoid for q in dataset.queries(name)}
    qrels = dataset.qrels(split)
    out = []
    for q in dataset.queries(split):
        gold = frozenset(d for d in qrels.get(q.qid, ()) if d in graph)
        if not gold or " ".join(q.text.split()) in avoided:
            continue
        out.append(Single(q.qid, q.text, gold, frozenset(area_of(graph, d) for d in gold)))
    return out


def write_joined(dataset: Dataset, singles: Sequence[Single], joined: Sequence[Joined], out_dir: str | os.PathLike[str],
                 *, source: str, settings: Mapping[str, Any]) -> dict[str, int]:
    """Write a dataset folder: split ``joined`` (the joined questions), split ``single`` (the parts they
    use, asked alone, with their own gold), ``parts.tsv`` (joined id, part ids, joiners) and
    ``dataset.json`` recording how it was drawn. The corpus files are symlinked."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    used = {qid for j in joined for qid in j.parts}
    by_qid = {s.qid: s for s in singles}
    with open(out / "queries.joined.tsv", "w", encoding="utf-8") as fh:
        fh.writelines(f"{j.qid}\t{j.text}\n" for j in joined)
    with open(out / "qrels.joined.tsv", "w", encoding="utf-8") as fh:
        fh.writelines(f"{j.qid}\t0\t{d}\t1\n" for j in joined for d in sorted(j.gold))
    with open(out / "queries.single.tsv", "w", encoding="utf-8") as fh:
        fh.writelines(f"{s.qid}\t{s.text}\n" for s in singles if s.qid in used)
    with open(out / "qrels.single.tsv", "w", encoding="utf-8") as fh:
        fh.writelines(f"{q}\t0\t{d}\t1\n" for q in sorted(used) for d in sorted(by_qid[q].gold))
    with open(out / "parts.tsv", "w", encoding="utf-8") as fh:
        fh.write("qid\tparts\tjoiners\n")
        fh.writelines(f"{j.qid}\t{','.join(j.parts)}\t{','.join(j.joiners)}\n" for j in joined)
    for corpus in dataset.corpus_files:
        link = out / corpus.name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.relpath(corpus.resolve(), out.resolve()))
    sizes = {"joined": len(joined), "single": len(used)}
    meta = {k: v for k, v in dataset.meta.items() if k not in ("stats", "derived_from")}
    meta["name"] = f"{dataset.name}, joined multi-issue proxy"
    meta["task"] = f"{meta.get('task', 'question -> statute article')} (several issues per question)"
    meta["splits"] = sizes
    meta["stats"] = {"arity": dict(Counter(str(len(j.parts)) for j in joined)),
                     "avg_relevant": round(sum(len(j.gold) for j in joined) / max(1, len(joined)), 2),
                     "joiners": dict(Counter(x for j in joined for x in j.joiners))}
    meta["derived_from"] = {"dataset": str(dataset.path), "split": source, **dict(settings)}
    meta["notes"] = [
        "Split 'joined': 2 or 3 questions of the source split about different areas of law, asked as one; "
        "gold = union of the parts' gold. Split 'single': the same parts asked alone. parts.tsv links them.",
        "Areas: the law of each gold article; the Chinese Civil Code and the BGB count one area per division "
        "(service.corpus.joined.CODE_DIVISIONS).",
    ]
    (out / "dataset.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return sizes


def read_parts(path: str | os.PathLike[str]) -> dict[str, tuple[str, ...]]:
    """``parts.tsv`` of a joined dataset folder: joined question id → its part ids, in order."""
    out: dict[str, tuple[str, ...]] = {}
    with open(path, encoding="utf-8") as fh:
        next(fh, None)
        for line in fh:
            qid, parts, *_ = line.rstrip("\n").split("\t")
            out[qid] = tuple(p for p in parts.split(",") if p)
    return out


TRAINING_PAIRS = 0.15
TRAINING_TRIPLES = 0.10
"""Joined questions added to a reranker training fold, as shares of the fold's questions."""
TRAINING_NARRATIVE = {"zh": 0.5, "de": 0.5}
"""Per language, the share of those joined questions told as narratives (only the last part asks);
0 for a language not listed and for a corpus in several languages (its training passes no language).
The reranker then also learns from questions that tell their issues and ask once, as many lay
questions do. Held out, agentic R@10 rose on STARD dev (0.7152 → 0.7194), the joined proxy (0.5738 →
0.5772) and its narrative variant (0.5111 → 0.5224), and on GerLayQA dev (0.4729 → 0.4778), joined
(0.3355 → 0.3394) and narrative (0.2907 → 0.3043); docs/BENCHMARKS.md, "Narrative questions in
training"."""


def joined_for_training(qids: Sequence[str], texts: Sequence[str], golds: Sequence[set[str]], graph: CorpusGraph, *,
                        language: str, seed: int, pairs: float = TRAINING_PAIRS,
                        triples: float = TRAINING_TRIPLES, narrative: float | None = None) -> list[Joined]:
    """Joined questions drawn from one training fold's questions (each used at most once), so that
    the reranker learns from multi-issue pools too. Their parts never leave the fold, so cross-fitted
    models still never saw them. ``narrative``: the share told as narratives (``None``: the
    language's :data:`TRAINING_NARRATIVE`)."""
    if narrative is None:
        narrative = TRAINING_NARRATIVE.get(language, 0.0)
    singles = [Single(q, t, frozenset(g), frozenset(area_of(graph, d) for d in g))
               for q, t, g in zip(qids, texts, golds, strict=True)]
    uses: Counter[str] = Counter()
    out = draw_joined(singles, arity=3, count=round(triples * len(singles)), seed=seed, language=language,
                      uses=uses, prefix=f"train{seed}-j", narrative=narrative)
    out += draw_joined(singles, arity=2, count=round(pairs * len(singles)), seed=seed + 1, language=language,
                       uses=uses, prefix=f"train{seed}-j", narrative=narrative)
    return out
