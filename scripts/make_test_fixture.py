#!/usr/bin/env python3
"""Build tests/fixtures/mini, the small mixed-language corpus the test-suite runs on.

Statute articles are copied from ../shared/data (STARD zh, COLIEE en, Swiss de/en); the four court
decisions are short texts invented for the tests (fictional parties and holdings) so that filters on
kind, court, division, chamber, case_type and date have something to bite on.

Usage: python scripts/make_test_fixture.py ../shared/data tests/fixtures/mini
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STARD_IDS = {str(i) for i in range(17079, 17092)} | {"17133", "4958", "13498"}
COLIEE_IDS = {str(i) for i in range(1, 13)} | {"415", "416"}
SWISS_DE = {f"SR220_Art{n}" for n in ("41", "42", "43", "44", "47", "55", "56", "60", "253", "257", "257d",
                                        "257e", "259a", "259b")} | {"SR210_Art469", "SR210_Art470", "SR210_Art471"}
SWISS_EN = {"SR220_Art41", "SR220_Art257e", "SR210_Art470"}

DECISIONS = [
    {"id": "BGE_142_III_100", "citation": "BGE 142 III 100", "kind": "leading_decision", "date": "2016-03-14",
     "court": "BGer", "division": "I. zivilrechtliche Abteilung", "chamber": "", "case_type": "Mietrecht",
     "law": "OR", "lang": "de", "title": "Rückgabe der Mietkaution",
     "text": "Der Vermieter darf die Mietkaution nach Art. 257e Abs. 3 OR nur zurückbehalten, wenn er innert "
             "eines Jahres nach Beendigung des Mietverhältnisses rechtlich gegen den Mieter vorgeht. Andernfalls "
             "muss die Bank die Sicherheit dem Mieter zurückerstatten (E. 3.1)."},
    {"id": "4A_32/2018", "citation": "4A_32/2018", "kind": "decision", "date": "2018-05-15",
     "court": "BGer", "division": "I. zivilrechtliche Abteilung", "chamber": "Kammer 1", "case_type": "Mietrecht",
     "law": "OR", "lang": "de", "title": "Zahlungsrückstand und Kündigung",
     "text": "Gerät der Mieter mit der Zahlung des Mietzinses in Rückstand, so kann der Vermieter nach "
             "Art. 257d OR eine Zahlungsfrist ansetzen und nach deren Ablauf kündigen. Die Kaution nach Art. 257e OR "
             "ändert daran nichts; vgl. BGE 142 III 100 E. 3.1."},
    {"id": "5A_666/2012", "citation": "5A_666/2012", "kind": "decision", "date": "2013-01-10",
     "court": "BGer", "division": "II. zivilrechtliche Abteilung", "chamber": "Kammer 2", "case_type": "Erbrecht",
     "law": "ZGB", "lang": "de", "title": "Ungültigkeit eines Testaments wegen Drohung",
     "text": "Eine Verfügung von Todes wegen, die der Erblasser unter Drohung errichtet hat, ist nach "
             "Art. 469 Abs. 1 ZGB ungültig, sofern er sie nicht binnen Jahresfrist aufhebt."},
    {"id": "6B_1/2019", "citation": "6B_1/2019", "kind": "decision", "date": "2019-03-01",
     "court": "BGer", "division": "Strafrechtliche Abteilung", "chamber": "Kammer 3", "case_type": "Strafrecht",
     "law": "StGB", "lang": "de", "title": "Sachbeschädigung",
     "text": "Wer eine fremde Sache beschädigt, zerstört oder unbrauchbar macht, wird auf Antrag bestraft. "
             "Der Schadenersatz richtet sich daneben nach Art. 41 OR."},
]


def pick(path: Path, ids: set[str], suffix: str = "") -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            if doc["id"] in ids:
                doc["id"] += suffix
                out.append(doc)
    return out


def main(shared: str, target: str) -> None:
    root, out = Path(shared), Path(target)
    out.mkdir(parents=True, exist_ok=True)
    docs = (pick(root / "stard/corpus.jsonl", STARD_IDS)
            + [{**d, "id": f"coliee_{d['id']}"} for d in pick(root / "coliee-en/corpus.jsonl", COLIEE_IDS)]
            + pick(root / "swiss-law/corpus_de.jsonl", SWISS_DE, "_de")
            + pick(root / "swiss-law/corpus_en.jsonl", SWISS_EN, "_en"))
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for doc in docs:
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
    with open(out / "corpus_decisions.jsonl", "w", encoding="utf-8") as fh:
        for doc in DECISIONS:
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
    print(len(docs), "statutes,", len(DECISIONS), "decisions")


if __name__ == "__main__":
    main(*sys.argv[1:3])
