"""Term translations learned from statutes published in two languages (IBM Model 1).

The hand-written glossary (``analyzers/glossary/<from>-<to>.txt``) knows the everyday words of lay
questions, but not the long tail of terms of art: an English question about a *usufruct*, an *easement*
or a *lien* shares no word with the German articles on *Nutzniessung*, *Dienstbarkeit* or
*Pfandrecht*. Switzerland publishes its main acts in English too, article by article, so the two
versions of each article are a parallel text. IBM Model 1 (Brown et al., 1993) learns from such
pairs how likely each target term is the translation of a source term, ``t(target | source)``, by
expectation maximisation over the analysed terms of both sides.

The learned table is a tab-separated file, ``analyzers/glossary/<from>-<to>.learned.tsv``: one line per
pair, ``source term <TAB> target term <TAB> probability``, terms as the two languages' analysis chains
write them (stems). ``scripts/make_term_translations.py`` builds it; rebuild it when a chain changes.

Example::

    table = TermTranslations.load(Path("analyzers/glossary/en-de.learned.tsv"))
    table.translate(["usufruct", "landlord"])
    # {'nutzniess': 0.652, 'vermiet': 0.596, 'miet': 0.268}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

NULL = "<null>"
"""The empty source word of Model 1: target terms that translate no source term (articles, particles)."""


@dataclass(frozen=True)
class TermTranslations:
    """Learned ``source term -> [(target term, probability)]``, best first."""

    table: dict[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> TermTranslations:
        """Read a ``.learned.tsv`` file; ``#`` starts a comment line. A malformed line raises
        ``ValueError`` naming the file and the line."""
        table: dict[str, list[tuple[str, float]]] = {}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            try:
                source, target, probability = parts
                value = float(probability)
            except ValueError:
                raise ValueError(f"{path}:{number}: expected 'source<TAB>target<TAB>probability', "
                                 f"got {line!r}") from None
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{path}:{number}: the probability must lie in (0, 1], got {probability}")
            table.setdefault(source, []).append((target, value))
        return cls({s: tuple(sorted(pairs, key=lambda p: -p[1])) for s, pairs in table.items()})

    def translate(self, terms: Iterable[str]) -> dict[str, float]:
        """The target terms of ``terms``, each at the largest probability that any of them gives it."""
        found: dict[str, float] = {}
        for term in terms:
            for target, probability in self.table.get(term, ()):
                found[target] = max(found.get(target, 0.0), probability)
        return found

    def write(self, path: Path, header: Sequence[str] = ()) -> None:
        """Write the table as a ``.learned.tsv`` file, with ``header`` lines as comments."""
        lines = [f"# {line}" if line else "#" for line in header]
        for source in sorted(self.table):
            lines += [f"{source}\t{target}\t{probability:.3f}" for target, probability in self.table[source]]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def learn_translations(pairs: Sequence[tuple[Sequence[str], Sequence[str]]], *, iterations: int = 8,
                       min_count: int = 2, min_probability: float = 0.1, per_term: int = 3,
                       max_target_share: float = 0.05,
                       progress: Callable[[int], None] | None = None) -> TermTranslations:
    """Fit IBM Model 1 ``t(target | source)`` on aligned texts given as analysed terms.

    Args:
        pairs: (source terms, target terms) of each aligned text (an article in both languages).
        iterations: rounds of expectation maximisation.
        min_count: terms in fewer texts than this are left out on both sides.
        min_probability: translations below it are dropped.
        per_term: at most this many translations of one source term are kept.
        max_target_share: target terms in a larger share of the texts are dropped: words such as
            *nicht* or *sofern* are where Model 1 puts the mass of source words it cannot place.
        progress: called after each round with its number.
    """
    source_df = Counter(t for s, _ in pairs for t in set(s))
    target_df = Counter(t for _, d in pairs for t in set(d))
    sources = [NULL, *sorted(t for t, c in source_df.items() if c >= min_count)]
    targets = sorted(t for t, c in target_df.items() if c >= min_count)
    source_id = {t: i for i, t in enumerate(sources)}
    target_id = {t: i for i, t in enumerate(targets)}
    width = len(targets)
    cells: list[np.ndarray] = []
    counts: list[tuple[np.ndarray, np.ndarray]] = []
    for source_terms, target_terms in pairs:
        s_counts = Counter(t for t in source_terms if t in source_id)
        t_counts = Counter(t for t in target_terms if t in target_id)
        if not s_counts or not t_counts:
            continue
        s_ids = np.array([0] + [source_id[t] for t in s_counts], dtype=np.int64)
        t_ids = np.array([target_id[t] for t in t_counts], dtype=np.int64)
        cells.append((s_ids[:, None] * width + t_ids[None, :]).ravel())
        counts.append((np.array([1.0, *s_counts.values()]), np.array([float(c) for c in t_counts.values()])))
    if not cells:
        return TermTranslations()
    keys = np.unique(np.concatenate(cells))
    positions = [np.searchsorted(keys, c) for c in cells]
    rows = keys // width
    prob = 1.0 / np.bincount(rows, minlength=len(sources))[rows]
    for round_number in range(1, iterations + 1):
        expected = np.zeros(len(keys))
        for cell, (source_counts, target_counts) in zip(positions, counts, strict=True):
            joint = prob[cell].reshape(len(source_counts), len(target_counts)) * source_counts[:, None]
            expected[cell] += (joint / joint.sum(axis=0, keepdims=True) * target_counts[None, :]).ravel()
        totals = np.bincount(rows, weights=expected, minlength=len(sources))
        prob = expected / np.maximum(totals[rows], 1e-12)
        if progress is not None:
            progress(round_number)
    common = {t for t, c in target_df.items() if c > max_target_share * len(pairs)}
    table: dict[str, list[tuple[str, float]]] = {}
    for k in np.argsort(-prob, kind="stable"):
        if prob[k] < min_probability:
            break
        source, target = sources[rows[k]], targets[keys[k] % width]
        if source == NULL or target in common or len(table.get(source, ())) >= per_term:
            continue
        table.setdefault(source, []).append((target, float(prob[k])))
    return TermTranslations({s: tuple(p) for s, p in table.items()})
