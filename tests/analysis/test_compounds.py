"""German compound splitting."""

from __future__ import annotations

import pytest

from service.analysis.compounds import CompoundSplitter

pytestmark = pytest.mark.unit

WORDS = {"miete", "kaution", "kündigung", "frist", "wohnung", "eigentümer", "gemeinschaft", "vertrag", "kauf"}


@pytest.mark.parametrize("token, parts", [
    ("mietkaution", ["miet", "kaution"]),            # head loses its final -e
    ("kündigungsfrist", ["kündigung", "frist"]),     # linking -s-
    ("wohnungseigentümergemeinschaft", ["wohnung", "eigentümer", "gemeinschaft"]),  # three parts
    ("kaufvertrag", ["kauf", "vertrag"]),
    ("kaution", []),                                  # too short to be a compound
    ("vertragsstrafe", []),                           # "strafe" unknown
    ("mietkaution2", []),                             # not alphabetic
])
def test_split(token: str, parts: list[str]) -> None:
    assert CompoundSplitter(WORDS).split(token) == parts
