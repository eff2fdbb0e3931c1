"""Tests for service.corpus.citations.

Unless marked "synthetic", the snippets are copied from the benchmark corpora (STARD, swiss-law de/en,
GerLayQA corpus and questions, COLIEE). The corpora hold no BGE references, no docket numbers and no
French or Italian text, so those cases use well-formed synthetic strings.
"""

from __future__ import annotations

import pytest

from service.corpus.citations import (
    MAX_RANGE,
    Citation,
    article_of,
    chinese_numeral_to_int,
    cites_of,
    extract,
    int_to_chinese_numeral,
    law_alias,
    normalize,
    parse,
    statute_key,
)
from service.corpus.model import LegalDoc

pytestmark = pytest.mark.unit


def keys(text: str, **kwargs: str | bool) -> list[str]:
    return [c.key for c in extract(text, **kwargs)]


# --------------------------------------------------------------------------------------------------
# Chinese numerals
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("numeral", "value"),
    [
        ("一", 1), ("十", 10), ("十二", 12), ("二十", 20), ("二十一", 21), ("四十七", 47), ("一百", 100),
        ("一百零五", 105), ("一百一十", 110), ("一百二十", 120), ("两百", 200), ("四百一十九", 419),
        ("一千零一十", 1010), ("一千一百六十五", 1165), ("一万", 10_000), ("二〇二三", 2023),
        ("47", 47), ("４７", 47),
    ],
)
def test_chinese_numeral_to_int(numeral: str, value: int) -> None:
    assert chinese_numeral_to_int(numeral) == value


@pytest.mark.parametrize("bad", ["", "第", "条", "abc", "十a"])
def test_chinese_numeral_to_int_rejects_non_numerals(bad: str) -> None:
    with pytest.raises(ValueError):
        chinese_numeral_to_int(bad)


def test_int_to_chinese_numeral_round_trips() -> None:
    assert int_to_chinese_numeral(1165) == "一千一百六十五"
    assert int_to_chinese_numeral(105) == "一百零五"
    assert int_to_chinese_numeral(14) == "十四"
    assert int_to_chinese_numeral(110) == "一百一十"
    assert all(chinese_numeral_to_int(int_to_chinese_numeral(n)) == n for n in range(0, 3000))
    with pytest.raises(ValueError):
        int_to_chinese_numeral(-1)


# --------------------------------------------------------------------------------------------------
# Law names
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("中华人民共和国刑法", "刑法"),
        ("《中华人民共和国劳动合同法》", "劳动合同法"),
        # STARD: the corpus `law` field and the citation prefix spell these titles differently
        (
            "最高人民法院关于《中华人民共和国企业破产法》施行时尚未审结的企业破产案件适用法律若干问题的规定",
            "最高人民法院关于《企业破产法》施行时尚未审结的企业破产案件适用法律若干问题的规定",
        ),
        ("最高人民法院关于《中华人民共和国刑法修正案(八)》时间效力问题的解释",
         "最高人民法院关于《刑法修正案(八)》时间效力问题的解释"),
        ("刑法修正案（八）", "刑法修正案(八)"),  # synthetic: full-width parentheses
        # STARD README: the same law under two titles that differ only in separators
        (
            "最高人民法院  最高人民检察院关于办理强奸、猥亵未成年人刑事案件适用法律若干问题的解释",
            "最高人民法院、最高人民检察院关于办理强奸、猥亵未成年人刑事案件适用法律若干问题的解释",
        ),
        ("CC", "ZGB"), ("CO", "OR"), ("SCC", "StGB"), ("Cst.", "BV"), ("Code of Obligations", "OR"),
        ("Zivilgesetzbuches", "ZGB"), ("Obligationenrechts", "OR"),
        ("Einführungsgesetzes zum Bürgerlichen Gesetzbuche", "EGBGB"),
        ("Civil Code (Japan)", "Civil Code"),
    ],
)
def test_law_alias_equates_spellings(a: str, b: str) -> None:
    assert law_alias(a) == law_alias(b)


def test_law_alias_values() -> None:
    assert law_alias("中华人民共和国刑法") == "刑法"
    assert law_alias("CO") == "OR"
    assert law_alias("税收征管法") == "税收征收管理法"
    assert law_alias("Telekommunikationsgesetz") == "Telekommunikationsgesetz"  # unknown: unchanged
    assert law_alias("  BGB ") == "BGB"
    # German genitives of long names only: English "costs" is not Italian "Cost." (the Constitution)
    assert law_alias("Obligationenrechts") == "OR" and law_alias("Zivilgesetzbuches") == "ZGB"
    assert law_alias("costs") == "costs" and law_alias("Cost.") == "BV"


# --------------------------------------------------------------------------------------------------
# parse / normalize: one citation string
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical", "key"),
    [
        # Swiss, German style
        ("Art. 469 Abs. 1 ZGB", "Art. 469 Abs. 1 ZGB", "ZGB art. 469"),
        ("Art. 41 OR", "Art. 41 OR", "OR art. 41"),
        ("Art. 41 Abs. 2 lit. a OR", "Art. 41 Abs. 2 lit. a OR", "OR art. 41"),
        ("Art. 12a Ziff. 3 StGB", "Art. 12a Ziff. 3 StGB", "StGB art. 12a"),
        ("Art. 8 BV", "Art. 8 BV", "BV art. 8"),
        ("Artikel 41 OR", "Art. 41 OR", "OR art. 41"),
        ("Art. 141 Abs. 1 Bst. b BV", "Art. 141 Abs. 1 lit. b BV", "BV art. 141"),
        ("Art. 322bis StGB", "Art. 322bis StGB", "StGB art. 322bis"),
        # Swiss, English / French / Italian abbreviations map to the German ones (synthetic)
        ("Art. 41 CO", "Art. 41 OR", "OR art. 41"),
        ("Article 2 CC", "Art. 2 ZGB", "ZGB art. 2"),
        ("art. 41 CO", "Art. 41 OR", "OR art. 41"),
        ("Art. 41 para. 2 let. a CO", "Art. 41 Abs. 2 lit. a OR", "OR art. 41"),
        ("art. 8 Cost.", "Art. 8 BV", "BV art. 8"),
        # ranges keep their end in the detail
        ("Art. 41 ff. OR", "Art. 41 ff. OR", "OR art. 41"),
        ("Art. 41-45 OR", "Art. 41–45 OR", "OR art. 41"),
        ("Art. 150–158 ZGB", "Art. 150–158 ZGB", "ZGB art. 150"),  # a swiss-law corpus citation
        # leading decisions and dockets (synthetic: none in the corpora)
        ("BGE 131 III 601 E. 3.1", "BGE 131 III 601 E. 3.1", "BGE 131 III 601"),
        ("BGE 131 III 601", "BGE 131 III 601", "BGE 131 III 601"),
        ("ATF 131 III 601 consid. 3.1", "BGE 131 III 601 E. 3.1", "BGE 131 III 601"),
        ("5A_666/2012 E. 3.1", "5A_666/2012 E. 3.1", "5A_666/2012"),
        ("4A_123/2020", "4A_123/2020", "4A_123/2020"),
        ("6B_1/2019", "6B_1/2019", "6B_1/2019"),
        ("1C_100/2018", "1C_100/2018", "1C_100/2018"),
        ("1B_55/2020", "1B_55/2020", "1B_55/2020"),
        # German
        ("§ 823 Abs. 1 BGB", "§ 823 Abs. 1 BGB", "BGB § 823"),
        ("§ 573b BGB", "§ 573b BGB", "BGB § 573b"),
        ("§ 1598a BGB", "§ 1598a BGB", "BGB § 1598a"),
        ("§ 280 Abs. 1 S. 1 BGB", "§ 280 Abs. 1 S. 1 BGB", "BGB § 280"),
        ("§ 280 Absatz 1 Satz 1 BGB", "§ 280 Abs. 1 S. 1 BGB", "BGB § 280"),
        ("Art. 246 EGBGB", "Art. 246 EGBGB", "EGBGB art. 246"),
        ("§ 211 StGB", "§ 211 StGB", "StGB § 211"),  # German StGB: never the Swiss "StGB art. 211"
        # Chinese
        ("《劳动合同法》第四十七条", "《劳动合同法》第四十七条", "劳动合同法 第47条"),
        (
            "《中华人民共和国民法典》第一千一百六十五条第一款",
            "《民法典》第一千一百六十五条第一款",
            "民法典 第1165条",
        ),
        ("中华人民共和国刑法第一百二十条之一", "《刑法》第一百二十条之一", "刑法 第120条之1"),
        ("《劳动合同法》第47条", "《劳动合同法》第四十七条", "劳动合同法 第47条"),
        ("第四十七条", "第四十七条", "第47条"),
        # COLIEE
        ("Article 415", "Article 415", "art. 415"),
        ("Article 415, paragraph (1)", "Article 415, paragraph (1)", "art. 415"),
        ("Article 398-2", "Article 398-2", "art. 398-2"),
        ("Art. 1 Civil Code (Japan)", "Article 1 of the Civil Code", "Civil Code art. 1"),
    ],
)
def test_parse_canonical_form_and_key(text: str, canonical: str, key: str) -> None:
    citation = parse(text)
    assert citation is not None, text
    assert str(citation) == canonical
    assert citation.key == key
    assert normalize(text) == canonical


def test_parse_fields() -> None:
    assert parse("Art. 41 Abs. 2 lit. a OR") == Citation("article", "OR", "41", "2", "lit. a", "Art.")
    assert parse("(Art. 41 OR)") == parse("Art. 41 OR")
    assert parse("BGE 131 III 601 E. 3.1") == Citation(
        "leading_decision", "BGE", "131 III 601", detail="E. 3.1"
    )
    assert parse("5A_666/2012 E. 3.1") == Citation("decision", "", "5A_666/2012", detail="E. 3.1")
    zh = parse("《中华人民共和国民法典》第一百二十三条第二款第七项")
    assert zh == Citation("article", "民法典", "123", "2", "第七项", "第")


def test_parse_uses_the_law_argument_for_own_references() -> None:
    own = "中华人民共和国劳动合同法"
    assert str(parse("本法第三十八条", law=own)) == "《劳动合同法》第三十八条"
    assert parse("依照本法第三十八条", law=own).key == "劳动合同法 第38条"
    assert parse("第四十七条", law=own).key == "劳动合同法 第47条"
    assert parse("Article 415", law="Civil Code (Japan)").key == "Civil Code art. 415"
    assert parse("Art. 5", law="ZGB").key == "ZGB art. 5"


def test_parse_lists_give_the_first_article() -> None:
    assert parse("Art. 41 und 42 OR").key == "OR art. 41"
    assert parse("§§ 823, 826 BGB").key == "BGB § 823"
    assert parse("Articles 415 and 416").key == "art. 415"


@pytest.mark.parametrize(
    "text", ["", "hello", "Art.", "§", "第三章", "the preceding Article", "前款", "BGE", "Art. 41 OR is old"]
)
def test_parse_rejects_non_citations(text: str) -> None:
    assert parse(text) is None
    assert normalize(text) is None


def test_canonical_form_parses_back_to_the_same_citation() -> None:
    for text in ["Art. 41 Abs. 2 lit. a OR", "§ 280 Abs. 1 S. 1 BGB", "BGE 131 III 601 E. 3.1",
                 "《民法典》第一千一百六十五条第一款", "Article 415, paragraph (1) of the Civil Code",
                 "Art. 246a § 1 Abs. 1 S. 1 Nr. 7 EGBGB"]:
        citation = parse(text)
        assert parse(str(citation)) == citation, text


def test_citation_built_by_hand_infers_its_sign() -> None:
    assert Citation("article", "ZGB", "469", "1") == parse("Art. 469 Abs. 1 ZGB")
    assert Citation("article", "BGB", "823").sign == "§"
    assert Citation("decision", "", "5A_666/2012").sign == ""
    assert Citation("article", "ZGB", "469", "1").key == "ZGB art. 469"
    assert Citation("article", "BGB", "823").key == "BGB § 823"
    assert str(Citation("article", "劳动合同法", "47")) == "《劳动合同法》第四十七条"
    assert Citation("article", "Civil Code", "415").key == "Civil Code art. 415"


# --------------------------------------------------------------------------------------------------
# article_of / statute_key: corpus documents get the keys that citations of them carry
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("citation", "law", "key"),
    [
        ("中华人民共和国刑法第一条", "中华人民共和国刑法", "刑法 第1条"),
        ("建筑法第四十八条", "中华人民共和国建筑法", "建筑法 第48条"),
        ("中华人民共和国刑法第三十七条之一", "中华人民共和国刑法", "刑法 第37条之1"),
        (
            "最高人民法院关于《企业破产法》施行时尚未审结的企业破产案件适用法律若干问题的规定第一条",
            "最高人民法院关于《中华人民共和国企业破产法》施行时尚未审结的企业破产案件适用法律若干问题的规定",
            "最高人民法院关于企业破产法施行时尚未审结的企业破产案件适用法律若干问题的规定 第1条",
        ),
        # the law's own name contains an article number
        (
            "最高人民法院关于适用刑法第十二条几个问题的解释第一条",
            "最高人民法院关于适用刑法第十二条几个问题的解释",
            "最高人民法院关于适用刑法第十二条几个问题的解释 第1条",
        ),
        ("§ 573b BGB", "BGB", "BGB § 573b"),
        ("Art. 1 ZGB", "ZGB", "ZGB art. 1"),
        ("Art. 1 SCC", "SCC", "StGB art. 1"),
        ("Art. 1a Covid-19-Gesetz", "Covid-19-Gesetz", "Covid-19-Gesetz art. 1a"),
        ("Art. 1 Civil Code (Japan)", "Civil Code (Japan)", "Civil Code art. 1"),
        ("Art. 398-2 Civil Code (Japan)", "Civil Code (Japan)", "Civil Code art. 398-2"),
    ],
)
def test_article_of_corpus_citations(citation: str, law: str, key: str) -> None:
    parsed = article_of(citation, law=law)
    assert parsed is not None
    assert parsed.key == key
    assert statute_key(law, parsed.article) == key


def test_article_of_rejects_decisions_and_garbage() -> None:
    assert article_of("BGE 131 III 601") is None
    assert article_of("not a citation") is None


def test_statute_key_accepts_article_labels() -> None:
    assert statute_key("中华人民共和国刑法", "第一百二十条之一") == "刑法 第120条之1"
    assert statute_key("刑法", "120-1") == "刑法 第120条之1"
    assert statute_key("BGB", "573b") == "BGB § 573b"
    assert statute_key("BGB", "§ 573b") == "BGB § 573b"
    assert statute_key("CO", "Art. 41") == "OR art. 41"
    assert statute_key("StGB", "12a") == "StGB art. 12a"  # Swiss by default
    assert statute_key("StGB", "211", sign="§") == "StGB § 211"


def test_stard_in_text_citation_links_to_the_corpus_article() -> None:
    # An interpretation cites the STARD article whose citation is 中华人民共和国刑法第三百一十二条.
    text = "应当依照刑法第三百一十二条第一款的规定，以掩饰、隐瞒犯罪所得、犯罪所得收益罪定罪处罚"
    own = "最高人民法院关于审理掩饰、隐瞒犯罪所得、犯罪所得收益刑事案件适用法律若干问题的解释"
    target = article_of("中华人民共和国刑法第三百一十二条", law="中华人民共和国刑法")
    assert target is not None
    assert cites_of(text, law=own) == (target.key,)


def test_swiss_german_and_english_share_keys() -> None:
    assert article_of("Art. 41 OR").key == article_of("Art. 41 CO").key
    assert article_of("Art. 8 ZGB").key == article_of("Art. 8 CC").key
    assert statute_key("SCC", "66a") == statute_key("StGB", "66a")


# --------------------------------------------------------------------------------------------------
# extract: real text from the corpora
# --------------------------------------------------------------------------------------------------


def test_extract_swiss_german_lists_details_and_other_laws() -> None:
    # Art. 163 StGB (swiss-law de)
    text = "zum Vollzug eines Arrestes nötig ist (Art. 91 Abs. 1 Ziff. 2 und 275 SchKG);"
    assert keys(text, law="StGB") == ["SchKG art. 91", "SchKG art. 275"]
    assert keys("nicht vollständig angibt (Art. 163 Abs. 2, 345 Abs. 1 SchKG);", law="StGB") == [
        "SchKG art. 163", "SchKG art. 345",
    ]
    # Fedlex Markdown italics around the article letter: Art. 64*d*
    text = "| 4. die Ausreise (Art. 45 Abs. 2 AsylG und Art. 64*d* AIG),"
    assert keys(text, law="ZGB") == ["AsylG art. 45", "AIG art. 64d"]
    assert [str(c) for c in extract("fakultativen Referendum (Art. 141 Abs. 1 Bst. b BV).")] == [
        "Art. 141 Abs. 1 lit. b BV"
    ]


def test_extract_swiss_german_own_law_ranges_and_named_laws() -> None:
    assert keys("missbräuchlichen Mietzinsen (Art. 269 ff.) gelten sinngemäss", law="OR") == ["OR art. 269"]
    assert keys("die Rechtspflege (Art. 73 und 74),", law="ZGB") == ["ZGB art. 73", "ZGB art. 74"]
    assert keys("die Strafbestimmungen (Art. 75–79),", law="ZGB") == [f"ZGB art. {n}" for n in range(75, 80)]
    # letter-suffixed ends are not expanded: only the two ends
    assert keys("die Oberaufsicht (Art. 61–62*a* und 64–64*c*),", law="ZGB") == [
        "ZGB art. 61", "ZGB art. 62a", "ZGB art. 64", "ZGB art. 64c",
    ]
    assert keys("Ist die Kündigung nach Artikel 336 Absatz 2 Buchstabe c missbräuchlich", law="OR") == [
        "OR art. 336"
    ]
    text = ("wird nach Artikel 123 des Zivilgesetzbuches, den Artikeln 280 und 281 ZPO und den Artikeln "
            "22–22*b* des Freizügigkeitsgesetzes vom 17. Dezember 1993")
    assert keys(text, law="OR") == [
        "ZGB art. 123", "ZPO art. 280", "ZPO art. 281",
        "Freizügigkeitsgesetz art. 22", "Freizügigkeitsgesetz art. 22b",
    ]


def test_extract_generic_other_law_has_no_key() -> None:
    # Art. 43a ZGB: "des Bundesgesetzes vom …" names a law too vaguely to link
    text = "Versichertenregisters nach Artikel 71 Absatz 4 Buchstabe a des Bundesgesetzes vom"
    found = extract(text, law="ZGB")
    assert [(c.law, c.article, c.paragraph, c.detail) for c in found] == [("", "71", "4", "lit. a")]
    assert cites_of(text, law="ZGB") == ()


def test_extract_read_together_with_the_next_citation_takes_its_law() -> None:
    assert keys("Art. 41 Abs. 1 i.V.m. Art. 97 OR") == ["OR art. 41", "OR art. 97"]
    assert keys("Art. 41 i.V.m. Art. 42 in Verbindung mit Art. 97 Abs. 1 OR") == [
        "OR art. 41", "OR art. 42", "OR art. 97",
    ]
    assert keys("§ 573 Abs. 2 Nr. 2 iVm § 573c BGB") == ["BGB § 573", "BGB § 573c"]
    assert keys("art. 41 al. 1 en relation avec l'art. 97 CO") == ["OR art. 41", "OR art. 97"]
    assert keys("art. 41 cpv. 1 in combinazione con l’art. 97 CO") == ["OR art. 41", "OR art. 97"]
    assert keys("Article 14 read with Article 21 of the Constitution") == [
        "Constitution art. 14", "Constitution art. 21",
    ]
    # Art. 74 HRegV (swiss-cv de): the ordinance cites the OR, not itself
    text = "(Art. 652e i. V. m. Art. 781 Abs. 5 Ziff. 4 OR);"
    assert keys(text, law="HRegV") == ["OR art. 652e", "OR art. 781"]
    # a law the first citation names is kept, and so is a citation that only stands near the next
    assert keys("Art. 8 ZGB i.V.m. Art. 97 OR") == ["ZGB art. 8", "OR art. 97"]
    assert keys("Art. 5 regelt, was Art. 97 OR vorsieht") == ["art. 5", "OR art. 97"]


def test_extract_read_together_keeps_a_law_numbered_otherwise() -> None:
    # § 312e BGB: the BGB's own paragraph, read with an article of the EGBGB
    text = "§ 312d Absatz 1 in Verbindung mit Artikel 246a § 1 Absatz 1 Satz 1 Nummer 3 des Einführungsgesetzes"
    assert keys(text + " zum Bürgerlichen Gesetzbuche", law="BGB") == ["BGB § 312d", "EGBGB art. 246a"]
    # § 357b BGB: an EGBGB article read with one of its own sections
    text = ("Pflichtangaben nach Artikel 247 § 12 Absatz 1 in Verbindung mit § 6 Absatz 2 des "
            "Einführungsgesetzes zum Bürgerlichen Gesetzbuche")
    assert keys(text, law="BGB")[0] == "EGBGB art. 247"
    assert keys("Art. 5 i.V.m. § 573 BGB") == ["art. 5", "BGB § 573"]


def test_extract_another_paragraph_read_together_is_the_same_article() -> None:
    found = extract("Art. 19 Abs. 1 Bst. b i.V.m. Abs. 2 Bst. a BetmG")
    assert [str(c) for c in found] == ["Art. 19 Abs. 1 lit. b BetmG"]
    assert keys("art. 19 al. 1 let. b en relation avec al. 2 let. a LStup") == ["LStup art. 19"]


def test_extract_skips_bold_markdown_article_headings() -> None:
    # Art. 908 OR (swiss-law de): the next article's heading was glued to the text
    text = "des Aktienrechts entsprechend anwendbar.\n**Art. 909** und **910**"
    assert extract(text, law="OR") == []


def test_extract_swiss_english() -> None:
    text = ("is divided in accordance with Article 123 of the Civil Code, Articles 280 and 281 CPO and "
            "Articles 22–22*b* of the Vested Benefits Act of 17 December 1993")
    assert keys(text, law="CO") == [
        "ZGB art. 123", "ZPO art. 280", "ZPO art. 281",
        "Vested Benefits Act art. 22", "Vested Benefits Act art. 22b",
    ]
    assert keys("applicable for certificated securities (Arts. 899–906 of the CC).", law="CO") == [
        f"ZGB art. {n}" for n in range(899, 907)
    ]
    assert keys("request registration in accordance with Article 622 paragraph 2[bis] by the", law="CO") == [
        "OR art. 622"
    ]
    assert extract("in accordance with Article 622 paragraph 2[bis] by the", law="CO")[0].paragraph == "2bis"
    assert keys("the editor responsible in accordance with Article 322[bis] shall be liable", law="SCC") == [
        "StGB art. 322bis"
    ]
    text = "is unlawful pursuant to Article 336 paragraph 2 letter c, compensation may not exceed"
    assert [str(c) for c in extract(text, law="CO")] == ["Art. 336 Abs. 2 lit. c OR"]


def test_extract_swiss_french_and_italian_synthetic() -> None:
    assert keys("selon l'art. 41 al. 1 CO et l'art. 8 CC") == ["OR art. 41", "ZGB art. 8"]
    assert keys("ai sensi dell'art. 41 cpv. 1 CO e dell'art. 8 Cost.") == ["OR art. 41", "BV art. 8"]


def test_extract_swiss_french_and_italian_code_titles() -> None:
    # the Swiss codes under their French and Italian titles, as the statutes write them
    assert keys("conformément à l'art. 292 du code pénal suisse") == ["StGB art. 292"]
    assert keys("dell'articolo 333a del Codice delle obbligazioni") == ["OR art. 333a"]
    assert keys("articolo 10 del Codice di diritto processuale penale svizzero") == ["StPO art. 10"]
    assert keys("l'art. 8 de la Constitution fédérale") == ["BV art. 8"]
    assert keys("articolo 8 della Costituzione") == ["BV art. 8"]
    # unqualified titles mean the Swiss code inside a Swiss act (elsewhere "code civil" is another code)
    assert keys("selon l'art. 328 du code civil", law="OR") == ["ZGB art. 328"]
    assert keys("articolo 448 capoverso 4 del Codice civile", law="OR") == ["ZGB art. 448"]
    assert keys("art. 41 du code de procédure civile", law="ZGB") == ["ZPO art. 41"]
    assert cites_of("selon l'art. 328 du code civil") == ()  # no law to link
    # Swiss law said so: an article of another Swiss act, a question to a Swiss index
    assert keys("selon l'art. 328 du code civil", law="LAVS", swiss=True) == ["ZGB art. 328"]
    assert keys("art. 292 du code pénal", swiss=True) == ["StGB art. 292"]
    assert keys("Article 5 of the Civil Code", swiss=True) == ["ZGB art. 5"]
    # a military code is another act, never the criminal code
    assert "StGB art. 5" not in keys("articolo 5 del Codice penale militare", law="OR")


def test_extract_french_and_italian_lists_ranges_and_details() -> None:
    # AHVG Art. 107 (fr) and AHVV Art. 66bis (fr): "à" ends a range, "ou" / "o" join a list
    assert keys("conformément aux art. 72 à 75 LPGA.", law="LAVS") == [f"LPGA art. {n}" for n in range(72, 76)]
    assert keys("Les art. 87 à 88bis RAI sont applicables", law="RAVS") == ["RAI art. 87", "RAI art. 88bis"]
    assert keys("articoli 25 a 31 non sono applicabili", law="EBG") == [f"EBG art. {n}" for n in range(25, 32)]
    assert keys("articolo 66a o 66abis del Codice penale (CP)", law="OR") == ["StGB art. 66a", "StGB art. 66abis"]
    assert keys("art. 66a ou 66abis du code pénal", law="OR") == ["StGB art. 66a", "StGB art. 66abis"]
    assert keys("articolo 111b o 111c LAsi") == ["LAsi art. 111b", "LAsi art. 111c"]
    # "ss", "segg." and "e seguenti" are "ff."; Italian "capoverso" and "numero" are paragraph and number
    assert [str(c) for c in extract("art. 60 ss du code civil suisse")] == ["Art. 60 ff. ZGB"]
    assert [str(c) for c in extract("articoli 653s e seguenti del Codice delle obbligazioni (CO)")] == [
        "Art. 653s ff. OR"]
    assert [str(c) for c in extract("articolo 105 numero 5 del Codice civile svizzero")] == [
        "Art. 105 Ziff. 5 ZGB"]
    assert [str(c) for c in extract("articolo 4 capoverso 2 del Codice penale svizzero")] == ["Art. 4 Abs. 2 StGB"]


def test_extract_an_act_named_by_date_or_subject_is_not_the_own_law() -> None:
    # OR Art. 348b (fr): another act named by its date, as "des Bundesgesetzes vom" in German
    text = "L'art. 34 de la loi fédérale du 2 avril 1908 sur le contrat d'assurance est réservé."
    assert [(c.law, c.article) for c in extract(text, law="CO")] == [("", "34")]
    assert cites_of(text, law="CO") == ()
    assert cites_of("l'articolo 7 dell'ordinanza sulla qualifica degli specialisti", law="OPI") == ()
    assert keys("l'art. 8 de la présente loi", law="LAVS") == ["LAVS art. 8"]


def test_extract_a_paragraph_list_ends_where_articles_follow() -> None:
    # ArG Art. 27 and BGG Art. 77 (de): numbers above 12 after a paragraph are articles
    text = "die Artikel 9–17a, 17b Absatz 1, 18–20, 21, 24, 25, 31 und 36 ausgenommen"
    assert keys(text, law="ArG") == [f"ArG art. {n}" for n in ("9", "17a", "17b", "18", "19", "20", "21", "24",
                                                                "25", "31", "36")]
    assert keys("Die Artikel 48 Absatz 3, 90–98, 103 Absatz 2", law="BGG") == [
        "BGG art. 48", *(f"BGG art. {n}" for n in range(90, 99)), "BGG art. 103"]
    assert keys("Art. 41 Abs. 1, 2 und 3 OR") == ["OR art. 41"]  # a paragraph list stays one article
    # a number followed by its own paragraph word is an article, in Italian as in German
    assert keys("articoli 82 capoversi 3 e 3bis nonché 83 capoverso 1 LAsi") == ["LAsi art. 82", "LAsi art. 83"]


def test_extract_german_titles_with_an_adjective_and_letter_suffixes() -> None:
    # BewG Art. 27 and AIG Art. 5 (de)
    assert keys("Artikel 57 Absatz 3 des Schweizerischen Zivilgesetzbuches.", law="BewG") == ["ZGB art. 57"]
    assert keys("Art. 271 des Schweizerischen Obligationenrechts") == ["OR art. 271"]
    assert keys("Art. 113 unserer Bundesverfassung") == ["BV art. 113"]
    assert keys("nach Artikel 66a oder 66abis StGB", law="AIG") == ["StGB art. 66a", "StGB art. 66abis"]


def test_extract_decisions_synthetic() -> None:
    text = "Vgl. BGE 131 III 601 E. 3.1 und das Urteil 5A_666/2012 vom 1. März 2013; ferner 4A_123/2020."
    assert keys(text) == ["BGE 131 III 601", "5A_666/2012", "4A_123/2020"]
    assert extract("Urteil 6B_1/2019")[0] == Citation("decision", "", "6B_1/2019")


def test_extract_german_bgb() -> None:
    # § 40 BGB (GerLayQA corpus)
    text = "des § 27 Absatz 1 und 3, , der §§ 28, 31a Abs. 1 Satz 2 sowie der §§ 32, 33 und 38 finden"
    assert keys(text, law="BGB") == ["BGB § 27", "BGB § 28", "BGB § 31a", "BGB § 32", "BGB § 33", "BGB § 38"]
    found = extract("nicht den Erfordernissen des § 81 Abs. 1 Satz 3, wird der Stiftung", law="BGB")
    assert [str(c) for c in found] == ["§ 81 Abs. 1 S. 3 BGB"]
    assert keys("Die Vorschriften der §§ 60, 64 und 66 finden entsprechende", law="BGB") == [
        "BGB § 60", "BGB § 64", "BGB § 66",
    ]
    # § 357 BGB: an EGBGB article with its own §
    text = ("den Verbraucher nach Artikel 246a § 1 Absatz 2 Satz 1 Nummer 2 des Einführungsgesetzes zum "
            "Bürgerlichen Gesetzbuche")
    assert [str(c) for c in extract(text, law="BGB")] == ["Art. 246a § 1 Abs. 2 S. 1 Nr. 2 EGBGB"]
    # a bare "Artikel" inside the BGB is not a BGB article
    text = "das durch Artikel 1 des Gesetzes vom 8. Juli 2015 (BGBl. I S. 1162) geändert worden ist."
    assert cites_of(text, law="BGB") == ()


def test_extract_german_questions() -> None:
    # GerLayQA questions: no law argument, forum writing
    assert keys("wie folgt (die Grammatik in § 30 ist leider tatsächlich so)") == ["§ 30"]
    assert cites_of('class="djo_link">§ 326 a StGB/a> ggf. berufen?') == ("StGB § 326a",)
    assert cites_of('Drohung">§ 123 (1) BGB/a> berufen was die') == ("BGB § 123",)
    assert extract('Drohung">§ 123 (1) BGB/a> berufen was die')[0].paragraph == "1"
    assert cites_of('einer Sache">§93 BGB/a> . Erst wollte der Vorbesitzer') == ("BGB § 93",)
    assert cites_of("bindend ist BGB § 311b und") == ("BGB § 311b",)
    assert cites_of("'1,3 Verfahrengebühr §§ 2, 13 RVG Nr. 3100 VV &plus;") == ("RVG § 2", "RVG § 13")
    assert cites_of("Da ich den § 9 des Wohnungsschutzgesetzes gelesen") == ("Wohnungsschutzgesetz § 9",)


def test_extract_chinese_named_laws() -> None:
    text = "未依据《中华人民共和国劳动合同法》第八十二条之规定签订书面劳动合同而应支付的双倍工资"
    assert keys(text) == ["劳动合同法 第82条"]
    text = "以及《中华人民共和国民法典》第一百二十三条第二款第七项、香港《植物品种保护条例》规定的权利"
    assert [str(c) for c in extract(text)] == ["《民法典》第一百二十三条第二款第七项"]
    # unbracketed short names after a verb
    text = "造成第三人损害的，人民法院依照民法典第一千一百六十五条的规定认定承揽人的民事责任。"
    assert keys(text) == ["民法典 第1165条"]
    text = "应当认定为刑法第二百三十六条之一规定的“情节恶劣”"
    assert keys(text) == ["刑法 第236条之1"]
    # a list continues the law
    text = "依照民法典第一千一百六十五条、第一千一百九十三条的规定"
    assert keys(text) == ["民法典 第1165条", "民法典 第1193条"]
    # "同法" ends "合同法": not "the same law" (STARD 4176, 10146)
    text = "根据工会法第五十二条规定，……并根据劳动合同法第四十六条、第四十七条规定给予经济补偿。"
    assert keys(text) == ["工会法 第52条", "劳动合同法 第46条", "劳动合同法 第47条"]
    assert keys("受让人主张根据物权法第一百零六条规定取得所有权，转让合同因违反合同法第五十二条规定被认定无效") == [
        "物权法 第106条", "合同法 第52条"]
    assert keys("如无合同法第五十二条规定的情形") == ["合同法 第52条"]
    assert keys("该合同依照同法第五条", law="民法典") == []  # the same law, but none named before


def test_extract_chinese_own_law_references() -> None:
    own = "中华人民共和国刑法"
    text = "有期徒刑的期限，除本法第五十条、第六十九条规定外，为六个月以上十五年以下。"
    assert keys(text, law=own) == ["刑法 第50条", "刑法 第69条"]
    text = "单位犯本节第二百一十三条至第二百一十九条之一规定之罪的，对单位判处罚金"
    assert keys(text, law=own) == ["刑法 第213条", "刑法 第219条之1"]
    text = "单位犯本节第一百四十条至第一百四十八条规定之罪的，对单位判处罚金"
    assert keys(text, law=own) == [f"刑法 第{n}条" for n in range(140, 149)]
    # 公司法第一百四十六条: a bare article after 依照 is the document's own
    text = "除应当依照第一百一十六条第三款的规定经股东会决议外"
    assert keys(text, law="中华人民共和国公司法") == ["公司法 第116条"]
    # without a law argument the reference has no law and no key
    assert extract("依照本法第三百一十三条的规定定罪处罚")[0].law == ""
    assert cites_of("依照本法第三百一十三条的规定定罪处罚") == ()


def test_extract_chinese_bare_numbers_continue_the_law_named_in_the_sentence() -> None:
    text = ("同时又构成刑法第二百二十一条规定的损害商业信誉、商品声誉罪，"
            "第二百七十八条规定的煽动暴力抗拒法律实施罪，"
            "第二百九十一条之一规定的编造、故意传播虚假恐怖信息罪等犯罪的")
    own = "最高人民法院、最高人民检察院关于办理利用信息网络实施诽谤等刑事案件适用法律若干问题的解释"
    assert keys(text, law=own) == ["刑法 第221条", "刑法 第278条", "刑法 第291条之1"]


def test_extract_chinese_definitions_and_that_law() -> None:
    text = "依照《中华人民共和国民事诉讼法》（以下简称民事诉讼法）第二百一十九条的规定，公告期间"
    assert keys(text, law="最高人民法院关于审理票据纠纷案件若干问题的规定") == ["民事诉讼法 第219条"]
    text = "从企业破产法施行之日起计算，在该法第十八条第一款规定的期限内未通知或者答复的，视为解除"
    assert keys(text) == ["企业破产法 第18条"]
    text = "依照全国人民代表大会常务委员会《关于〈中华人民共和国刑法〉第三百四十一条、第三百一十二条的解释》"
    assert keys(text) == ["刑法 第341条", "刑法 第312条"]


def test_extract_chinese_items_in_parentheses() -> None:
    text = "票据法第七十条第一款第(二)项、第七十一条第一款第(二)项规定的“利率”"
    found = extract(text, law="票据管理实施办法")
    assert [c.key for c in found] == ["票据法 第70条", "票据法 第71条"]
    assert found[0].detail == "第二项"


def test_extract_chinese_ignores_article_labels_and_non_statutes() -> None:
    # 飞行基本规则第一条 holds the next articles; their number labels are not citations
    text = "保障飞行活动安全有秩序地进行，制定本规则。 第二条 凡辖有航空器的单位、个人"
    assert extract(text, law="飞行基本规则") == []
    assert extract("按照合同第五条约定", law="中华人民共和国民法典") == []  # a contract clause
    assert extract("前款规定的情形，依照前条处理", law="中华人民共和国民法典") == []


def test_extract_coliee() -> None:
    own = "Civil Code (Japan)"
    assert keys("a decision as referred to in Article 17, paragraph (1); the same", law=own) == [
        "Civil Code art. 17"
    ]
    assert extract("as referred to in Article 17, paragraph (1);", law=own)[0].paragraph == "1"
    assert keys("The provisions of Articles 392 and 393 apply with respect to a", law=own) == [
        "Civil Code art. 392", "Civil Code art. 393",
    ]
    assert keys("referred to in Article 876-9, paragraph (1).", law=own) == ["Civil Code art. 876-9"]
    assert keys("under the provisions of Articles 149 through 151 is effective", law=own) == [
        "Civil Code art. 149", "Civil Code art. 150", "Civil Code art. 151",
    ]
    text = "The provisions of Article 438, Article 439, paragraph (1), Article 440, and Article 441 apply"
    assert keys(text, law=own) == [f"Civil Code art. {n}" for n in (438, 439, 440, 441)]
    assert extract("referred to in paragraph (2) of the preceding Article.", law=own) == []
    text = "as provided in Article 2, paragraph (1) of the Arbitration Act (Act No. 138 of 2003));"
    assert keys(text, law=own) == ["Arbitration Act art. 2"]
    assert cites_of("mutatis mutandis under Article 188 of that Act, or", law=own) == ()
    # COLIEE question: the law before the sign
    assert cites_of("liability in Civil Code Article 714, Paragraph 1, the") == ("Civil Code art. 714",)


def test_extract_order_and_duplicates() -> None:
    text = "Art. 41 OR, § 823 BGB, Art. 41 OR und 《刑法》第二十条"  # synthetic
    assert keys(text) == ["OR art. 41", "BGB § 823", "刑法 第20条"]


def test_range_expansion_is_bounded() -> None:
    assert len(extract("Art. 1–10 OR")) == MAX_RANGE
    assert keys("Art. 1–300 OR") == ["OR art. 1", "OR art. 300"]
    assert keys("Art. 41 f. OR") == ["OR art. 41", "OR art. 42"]
    assert keys("Art. 41-45 OR") == [f"OR art. {n}" for n in range(41, 46)]


def test_lang_hint_skips_the_other_script() -> None:
    text = "Art. 41 OR 和《刑法》第二十条"
    assert keys(text, lang="zh") == ["刑法 第20条"]
    assert keys(text, lang="de") == ["OR art. 41"]


def test_cites_of_fits_legal_doc() -> None:
    text = "有期徒刑的期限，除本法第五十条、第六十九条规定外，为六个月以上十五年以下。"
    doc = LegalDoc(id="44", citation="中华人民共和国刑法第四十五条", text=text, law="中华人民共和国刑法")
    doc = doc.with_cites(cites_of(doc.text, law=doc.law, lang="zh"))
    assert doc.cites == ("刑法 第50条", "刑法 第69条")
