"""Citation sets: how many hits of a ranking form the answer.

A legal answer is a set of citations, and the competitions score it by the F1 of that set. Four
ways of choosing the set, each a :class:`SetChoice` with a name:

- ``top<K>``: a fixed top K (``top10``);
- ``cliff``: where the scores fall off a cliff (:func:`service.retrieval.cut.cliff_cut`);
- ``count``: the number of citations predicted for the question
  (:class:`service.rerank.citation_count.CitationCounter`, learned from training questions; cut
  earlier at a score cliff when that was better on the training questions);
- ``fixed``: the fixed size that was best on the training questions (the counter's ``fixed_k``).

``lexsearch eval`` reports set precision, recall and F1 for every choice and pipeline.

Example::

    choices, skipped = parse_set_choices("top1,top10,cliff,count", counter=models.citation_counter)
    [c.size(question, hits) for c in choices]       # [1, 10, 2, 3]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from service.corpus.model import Hit
from service.errors import InvalidInput
from service.retrieval.cut import cliff_cut

DEFAULT_SET_CHOICES = "top1,top3,top5,top10,cliff,fixed,count"


class Counter(Protocol):
    """What the ``count`` and ``fixed`` choices need of a trained citation counter."""

    fixed_k: int

    def set_size(self, text: str, scores: Sequence[float] = ()) -> int:
        """How many hits to return for the question ``text`` whose ranking has ``scores``."""


class SetChoice(Protocol):
    """One rule for the size of the answer set."""

    name: str

    def size(self, question: str, hits: Sequence[Hit]) -> int:
        """How many of ``hits`` (best first) form the answer to ``question``."""


@dataclass(frozen=True)
class FixedSet:
    """A fixed top ``k``."""

    k: int
    name: str = ""

    def size(self, question: str, hits: Sequence[Hit]) -> int:
        return min(self.k, len(hits))


@dataclass(frozen=True)
class CliffSet:
    """The score cliff, with the routing cut's parameters."""

    sigma: float = 0.2
    min_k: int = 1
    max_k: int = 10
    depth: int = 50
    name: str = "cliff"

    def size(self, question: str, hits: Sequence[Hit]) -> int:
        return cliff_cut([h.score for h in hits[: self.depth]], sigma=self.sigma, min_k=self.min_k,
                         max_k=self.max_k).returned


@dataclass(frozen=True)
class CountSet:
    """The predicted number of citations of the question."""

    counter: Counter
    name: str = "count"

    def size(self, question: str, hits: Sequence[Hit]) -> int:
        return min(self.counter.set_size(question, [h.score for h in hits]), len(hits))


def parse_set_choices(spec: str, *, counter: Counter | None = None, cliff: CliffSet | None = None
                      ) -> tuple[list[SetChoice], list[str]]:
    """The set choices named in ``spec`` (comma list of ``top<K>``, ``cliff``, ``fixed``, ``count``).

    ``fixed`` and ``count`` need a trained counter; without one they are left out and named in the
    second return value.

    Raises:
        InvalidInput: for an unknown name or a bad K.
    """
    choices: list[SetChoice] = []
    skipped: list[str] = []
    for name in (n.strip() for n in spec.split(",")):
        if not name:
            continue
        if name.startswith("top"):
            try:
                k = int(name[3:])
            except ValueError:
                raise InvalidInput(f"set choice {name!r}: write top<K>, e.g. top10") from None
            if not 1 <= k <= 1000:
                raise InvalidInput(f"set choice {name!r}: K must be between 1 and 1000")
            choices.append(FixedSet(k, name))
        elif name == "cliff":
            choices.append(cliff or CliffSet())
        elif name in ("fixed", "count"):
            if counter is None:
                skipped.append(name)
            elif name == "fixed":
                choices.append(FixedSet(counter.fixed_k, "fixed"))
            else:
                choices.append(CountSet(counter))
        else:
            raise InvalidInput(f"unknown set choice {name!r}; use top<K>, cliff, fixed or count")
    return choices, skipped
