"""The corpus vocabulary: known terms, idf, repair of unseen terms, and the index-probing check."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.agents.vocabulary import ProbeVocabulary, Vocabulary, edit_distance, unseen_share
from service.corpus.model import LegalDoc

pytestmark = pytest.mark.unit


@pytest.fixture
def vocab() -> Vocabulary:
    df = {"kaution": 12, "kautio": 1, "vermiet": 30, "mietvertrag": 8, "kundigung": 9, "用人单位": 40, "劳动": 55,
          "劳动合同": 20, "合同": 90}
    return Vocabulary(df, documents=100)


def test_edit_distance_stops_early() -> None:
    assert edit_distance("kaution", "kauton", 2) == 1
    assert edit_distance("kaution", "kaution", 1) == 0
    assert edit_distance("abc", "xyzuvw", 1) == 2  # anything above the limit reads as limit + 1


def test_known_and_idf(vocab: Vocabulary) -> None:
    assert vocab.known("kaution") and not vocab.known("kauton")
    assert vocab.idf("kaution") > vocab.idf("vermiet") and vocab.idf("unseen") > vocab.idf("kaution")
    assert unseen_share(vocab, ["kaution", "kauton", "kauton"]) == pytest.approx(0.5)
    assert unseen_share(vocab, []) == 0.0


def test_repair_latin_typos_to_the_frequent_close_term(vocab: Vocabulary) -> None:
    assert vocab.repair("kauton") == "kaution"  # "kautio" is as close but rare (df 1 is no target)
    assert vocab.repair("kaution") == "kaution"
    assert vocab.repair("mietvertrga") == "mietvertrag"  # two edits allowed for long words
    assert vocab.repair("xyzxyz") is None and vocab.repair("ab") is None


def test_repair_does_not_depend_on_the_process_hash_seed() -> None:
    # 209 equally frequent words share five trigrams with the typo, more than repair looks at (200);
    # nine are one edit away. The ties must be broken by the words themselves (the answer is the
    # first of the nine), not by insertion or set iteration order, which changes with PYTHONHASHSEED.
    fillers = {f"abcdxy{a}{b}": 5 for a in "rstuvwxy" for b in "abcdefghijklmnopqrstuvwxyz"}
    vocab = Vocabulary({**fillers, "abcdxyq": 5}, documents=1000)
    assert vocab.repair("abcdxyz") == "abcdxyq"


def test_repair_chinese_keeps_the_longest_known_part(vocab: Vocabulary) -> None:
    assert vocab.repair("劳动合同法规") == "劳动合同"
    assert vocab.repair("老板") is None


def test_build_save_load_round_trip(tmp_path: Path) -> None:
    docs = [LegalDoc(id="1", citation="§ 551 BGB", text="Die Kaution des Mieters", law="BGB", lang="de"),
            LegalDoc(id="2", citation="§ 535 BGB", text="Der Vermieter", law="BGB", lang="de")]
    vocab = Vocabulary.build(docs)
    assert vocab.documents == 2 and vocab.df["bgb"] == 2 and vocab.known("kaution")
    vocab.save(tmp_path / "v.json.gz")
    again = Vocabulary.load(tmp_path / "v.json.gz")
    assert again.df == vocab.df and again.documents == 2


def test_probe_vocabulary_asks_once_per_term() -> None:
    asked: list[str] = []

    def search(weights: dict[str, float]) -> list[str]:
        term = next(iter(weights))
        asked.append(term)
        return ["hit"] if term == "kaution" else []

    probe = ProbeVocabulary(search)
    assert probe.known("kaution") and not probe.known("kauton") and probe.known("kaution")
    assert asked == ["kaution", "kauton"]
    assert probe.repair("kauton") is None and probe.repair("kaution") == "kaution"
