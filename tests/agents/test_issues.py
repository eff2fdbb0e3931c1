"""Issue segmentation: units, question detection, merging by length and by topic; the issue count."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from service.agents.issues import (
    MAX_ISSUES,
    SAME_TOPIC,
    STATEMENT_MAX_UNITS,
    UNTRAINED_CLAUSE_TEXT_CHARS,
    UNTRAINED_STATEMENT_UNITS,
    IssueCounter,
    asks,
    party_letters,
    question_spans,
    segment_issues,
    shared_terms,
    topic_of,
    units_of,
)
from service.analysis.chain import analyzer_for

pytestmark = pytest.mark.unit


def test_units_split_sentences_and_chinese_clauses() -> None:
    text = "我被辞退了，能要补偿吗？房东不退押金；怎么办"
    assert [text[a:b] for a, b in units_of(text, "zh")] == ["我被辞退了，", "能要补偿吗？", "房东不退押金；", "怎么办"]
    latin = "My landlord keeps the deposit. Can he? I also lost my job!  "
    assert [latin[a:b] for a, b in units_of(latin, "en")] == [
        "My landlord keeps the deposit.", "Can he?", "I also lost my job!"]
    assert units_of("", "de") == []


def test_questions_are_marks_or_chinese_question_words() -> None:
    assert asks("公司能否解除合同", "zh") and asks("押金怎么退", "zh") and asks("Was nun?", "de")
    assert not asks("我被公司辞退了", "zh") and not asks("Ich wurde gekündigt.", "de")
    assert asks("可以退押金么", "zh") and not asks("那么债务人还可以向保理商主张该抗辩。", "zh")  # 那么: "then"


def test_a_single_issue_question_is_one_issue() -> None:
    text = "我自己花钱装修房屋，合同到期的时候怎么办？"
    assert [i.text for i in segment_issues(text, "zh")] == [text]
    assert [i.text for i in segment_issues("  Ich wurde gekündigt.  ", "de")] == ["Ich wurde gekündigt."]
    assert segment_issues("   ", "zh") == []


def test_each_question_closes_an_issue_and_short_follow_ups_join_their_neighbour() -> None:
    text = "公司辞退我能要补偿吗？房东不退押金怎么办？怎么设立"
    issues = segment_issues(text, "zh")
    assert [i.text for i in issues] == ["公司辞退我能要补偿吗？", "房东不退押金怎么办？怎么设立"]
    assert all(text[i.start:i.end] == i.text for i in issues)


def test_statements_after_the_last_question_join_it() -> None:
    text = "工伤了公司不赔偿怎么办？我已经工作了三年了。"
    assert [i.text for i in segment_issues(text, "zh")] == [text]


def test_a_topic_model_merges_neighbours_on_one_topic_and_keeps_the_others_apart() -> None:
    labour, tenancy = np.array([0.9, 0.1, 0.0]), np.array([0.0, 0.1, 0.9])

    def topic(span: str) -> np.ndarray:  # additive, like term evidence
        return labour * span.count("补偿") + tenancy * (span.count("押金") + span.count("房东"))

    text = "公司辞退我能要补偿吗？补偿金额是多少？房东不退押金怎么办？"
    issues = segment_issues(text, "zh", topic)
    assert [i.text for i in issues] == ["公司辞退我能要补偿吗？补偿金额是多少？", "房东不退押金怎么办？"]
    assert len(segment_issues(text, "zh", topic, same_topic=0.01)) == 1  # cosine 0.012: one topic at this bar
    assert len(segment_issues(text, "zh", lambda span: np.zeros(3))) == 1  # spans without a topic stay together


def test_german_questions_about_one_matter_merge_at_a_lower_bar() -> None:
    """German lay questions ask several questions about one matter: their spans merge from a cosine of
    0.2 (SAME_TOPIC), other languages' from 0.4."""
    rent, deposit = np.array([1.0, 0.0]), np.array([0.3, 0.954])  # cosine 0.3

    def topic(span: str) -> np.ndarray:
        return rent if "Miete" in span or "rent" in span else deposit

    german = ("Mein Vermieter hat die Miete dieses Jahr schon zweimal erhöht, ist das überhaupt erlaubt? "
              "Und muss er mir die Kaution nach dem Auszug sofort zurückzahlen oder darf er sie behalten?")
    english = ("My landlord has already raised the rent twice this year, is that even allowed at all? "
               "And does he have to pay back my deposit right after I move out, or may he keep it?")
    assert SAME_TOPIC["de"] < 0.3 < SAME_TOPIC["default"]
    assert len(segment_issues(german, "de", topic)) == 1
    assert len(segment_issues(english, "en", topic)) == 2
    assert len(segment_issues(german, "de", topic, same_topic=0.4)) == 2  # an explicit bar wins


def test_at_most_max_issues_remain() -> None:
    text = "公司辞退我能要补偿吗？房东不退押金怎么办？邻居噪音扰民怎么处理？父亲的遗产怎么分配？"
    assert len(segment_issues(text, "zh")) == 4  # under the Chinese cap
    issues = segment_issues(text, "zh", max_issues=3)  # the shortest neighbours merge
    assert len(issues) == 3 and issues[0].text == "公司辞退我能要补偿吗？房东不退押金怎么办？"
    assert len(segment_issues(text, "zh", max_issues=2)) == 2
    seven = text + "车被撞了谁来赔？网购假货能退吗？借条没写利息怎么算？"
    assert len(segment_issues(seven, "zh")) == MAX_ISSUES["default"] == 6
    german = ("Mein Arbeitgeber hat mir ohne jede Abmahnung fristlos gekündigt, ist das überhaupt zulässig? "
              "Mein Vermieter behält seit dem Auszug vor einem Jahr die ganze Kaution, was kann ich tun? "
              "Der Hund meines Nachbarn hat mein Kind gebissen, wer muss für die Arztkosten aufkommen? "
              "Mein Vater ist gestorben und hat kein Testament hinterlassen, wer erbt jetzt das Haus?")
    assert len(segment_issues(german, "de", max_issues=4)) == 4
    assert len(segment_issues(german, "de")) == MAX_ISSUES["de"] == 3  # German lay questions ask several times
    spread = [np.eye(4)[i] for i in range(4)]
    assert len(segment_issues(text, "zh", lambda s: spread[text.index(s) * 4 // len(text)], max_issues=3)) == 3


def _labour_or_traffic(span: str) -> np.ndarray:
    """A topic of two sections, additive over the words that speak for each (like term evidence)."""
    labour = sum(span.count(w) for w in ("辞退", "补偿", "工资"))
    traffic = sum(span.count(w) for w in ("车撞", "医药费", "全责"))
    return np.array([labour, traffic], dtype=float)


def test_a_question_that_asks_once_is_cut_where_its_statements_change_topic() -> None:
    text = ("公司突然把我辞退了也不给经济补偿，还拖欠我两个月工资。"
            "另外我下班路上被车撞了，对方全责却不肯赔医药费，我该怎么办？")
    issues = segment_issues(text, "zh", _labour_or_traffic)
    assert [i.text for i in issues] == ["公司突然把我辞退了也不给经济补偿，还拖欠我两个月工资。",
                                        "另外我下班路上被车撞了，对方全责却不肯赔医药费，我该怎么办？"]
    assert all(text[i.start:i.end] == i.text for i in issues)
    assert len(segment_issues(text, "zh", _labour_or_traffic, statement_topic=0)) == 1  # 0: kept whole
    assert len(segment_issues(text, "zh")) == 1  # no topic model: no evidence to cut statements


def test_a_question_that_tells_first_and_asks_at_the_end_is_cut_where_its_statements_change_topic() -> None:
    text = ("公司突然把我辞退了也不给经济补偿，还拖欠我两个月工资。"
            "另外我下班路上被车撞了，对方全责却不肯赔医药费，我该怎么办？能起诉吗？")
    issues = segment_issues(text, "zh", _labour_or_traffic)
    assert [i.text for i in issues] == ["公司突然把我辞退了也不给经济补偿，还拖欠我两个月工资。",
                                        "另外我下班路上被车撞了，对方全责却不肯赔医药费，我该怎么办？能起诉吗？"]
    # cut at its questions only, the statements and the first question are one span
    assert len(segment_issues(text, "zh", _labour_or_traffic, statement_topic=0)) == 1
    # fewer statements than STATEMENT_LEAD before the questions: cut at its questions
    # (read as statements, its two short questions would join the first clause: one issue)
    asked = "公司突然把我辞退了也不给经济补偿，要赔偿吗？被车撞了医药费谁出？"
    assert [i.text for i in segment_issues(asked, "zh", _labour_or_traffic)] == [
        "公司突然把我辞退了也不给经济补偿，要赔偿吗？", "被车撞了医药费谁出？"]


def test_a_short_statement_joins_the_neighbour_on_its_topic() -> None:
    # short clauses: joined to the one before, the traffic clauses would all end up with the labour ones
    text = "公司把我辞退了，不给补偿金，拖欠我两个月的工资没发。还有，我被车撞了，对方全责不赔医药费，我该怎么办？"
    assert [i.text for i in segment_issues(text, "zh", _labour_or_traffic)] == [
        "公司把我辞退了，不给补偿金，拖欠我两个月的工资没发。",  # "还有，" has no topic: it leads into what follows
        "还有，我被车撞了，对方全责不赔医药费，我该怎么办？"]


def test_a_connective_clause_opens_the_next_issue() -> None:
    # "还有，" carries a term the topic model knows: by topic alone it joined the labour clause before it
    def topic(span: str) -> np.ndarray:
        return _labour_or_traffic(span) + np.array([0.5, 0.0]) * span.count("还有")

    text = "公司把我辞退了，不给补偿金，拖欠我两个月的工资没发。还有，我被车撞了，对方全责不赔医药费，我该怎么办？"
    assert [i.text for i in segment_issues(text, "zh", topic)] == [
        "公司把我辞退了，不给补偿金，拖欠我两个月的工资没发。",
        "还有，我被车撞了，对方全责不赔医药费，我该怎么办？"]
    # a cut before a connective stands even where the topics agree; spans merge across it only above the cap
    same = "公司把我辞退了，不给补偿金。另外，拖欠我两个月的工资没发，我该怎么办？"
    assert [i.text for i in segment_issues(same, "zh", _labour_or_traffic)] == [
        "公司把我辞退了，不给补偿金。", "另外，拖欠我两个月的工资没发，我该怎么办？"]
    assert len(segment_issues(same, "zh", _labour_or_traffic, max_issues=1)) == 1
    asked = "公司辞退我能要补偿吗？另外，房东不退押金怎么办？再问一下邻居噪音扰民怎么处理？"
    issues = segment_issues(asked, "zh", max_issues=2)  # no topic model: the other neighbours merge first
    assert [i.text for i in issues] == [
        "公司辞退我能要补偿吗？", "另外，房东不退押金怎么办？再问一下邻居噪音扰民怎么处理？"]
    # a connective inside a clause opens nothing ("另外一个港口"; "还有效")
    assert len(segment_issues("货物从一个港口运到另外一个港口，途中被烧毁了，怎么要求赔偿？", "zh", topic)) == 1


@pytest.mark.parametrize(("language", "text", "second"), [
    ("de", "Mein Vermieter behält die Kaution seit einem Jahr. Was kann ich tun? Er sagt, es gebe Schäden. "
           "Eine weitere Frage: Mein Arbeitgeber zahlt den Lohn nicht. Darf er das?", "Eine weitere Frage:"),
    ("de", "Mein Vermieter behält die Kaution seit einem Jahr. Was kann ich tun? Er sagt, es gebe Schäden. "
           "Außerdem habe ich noch eine andere Frage. Mein Arbeitgeber zahlt den Lohn nicht. Darf er das?", "Außerdem"),
    ("en", "My landlord has kept my deposit for a year. What can I do? He says there is damage. "
           "Another question: my employer has not paid my wages. Is that allowed?", "Another question:"),
    ("fr", "Mon bailleur garde ma caution depuis un an. Que faire ? Il parle de dégâts. "
           "J'ai une autre question. Mon employeur ne me paie pas. A-t-il le droit ?", "J'ai une autre question."),
])
def test_a_sentence_that_announces_another_question_opens_an_issue(language: str, text: str, second: str) -> None:
    # the statement after the first question ("Er sagt …") stays with it: the announced question starts the next
    issues = segment_issues(text, language)
    assert len(issues) == 2 and issues[1].text.startswith(second)
    assert issues[0].text.endswith(("Schäden.", "damage.", "dégâts."))


def test_an_announced_matter_that_never_asks_is_an_issue_of_its_own() -> None:
    text = ("Mein Vermieter behält die Kaution seit einem Jahr. Was kann ich tun? Er sagt, es gebe Schäden. "
            "Eine weitere Frage: Mein Arbeitgeber zahlt den Lohn seit drei Monaten nicht, obwohl ich jeden Tag "
            "arbeite.")
    issues = segment_issues(text, "de")
    assert [i.text[:20] for i in issues] == ["Mein Vermieter behäl", "Eine weitere Frage: "]
    assert issues[0].text.endswith("Schäden.")
    # two connective clauses in a row: each opens a run, and the statements after the first stay apart
    chinese = "公司把我辞退了也不给补偿金，还有，房东一直不退还押金，另外，邻居家装修噪音扰民怎么办？"
    assert [chinese[a:b] for a, b in question_spans(chinese, "zh")] == [
        "公司把我辞退了也不给补偿金，", "还有，房东一直不退还押金，", "另外，邻居家装修噪音扰民怎么办？"]


def test_the_question_of_one_matter_opens_nothing() -> None:
    text = ("Mein Vermieter behält die Kaution seit einem Jahr. Was kann ich tun? Er sagt, es gebe Schäden. "
            "Meine Frage: Darf er einfach so viel abziehen?")
    assert len(segment_issues(text, "de")) == 2  # cut at its questions, as before: "Meine Frage" opens nothing
    assert segment_issues(text, "de")[1].text.startswith("Er sagt")


def test_statements_on_one_topic_and_short_background_clauses_stay_one_issue() -> None:
    one_topic = "公司突然把我辞退了，也不给经济补偿，还拖欠我两个月的工资没有发，我该怎么办？"
    assert len(segment_issues(one_topic, "zh", _labour_or_traffic)) == 1
    background = "我下班路上被车撞，公司不给工资补偿，怎么办？"  # clauses under 10 characters join a neighbour
    assert len(segment_issues(background, "zh", _labour_or_traffic)) == 1


def test_statements_are_not_cut_in_languages_without_a_statement_bar() -> None:
    text = ("Mein Arbeitgeber hat mir fristlos gekündigt und zahlt den letzten Lohn nicht aus. "
            "Außerdem hat mich auf dem Heimweg ein Auto angefahren und der Fahrer zahlt nichts. Was kann ich tun?")

    def topic(span: str) -> np.ndarray:
        return np.array([span.count("Lohn") + span.count("gekündigt"), span.count("Auto") + span.count("Fahrer")])

    assert len(segment_issues(text, "de", topic)) == 1
    assert len(segment_issues(text, "de", topic, statement_topic=0.2)) == 2


def test_without_a_topic_model_a_short_told_then_asked_question_is_cut_where_its_statements_part() -> None:
    two = ("Der Vermieter gibt die Kaution nicht zurück, obwohl ich ausgezogen bin. "
           "Mein Arbeitgeber hat mir während meiner Krankheit gekündigt. Was kann ich tun?")
    assert [i.text for i in segment_issues(two, "de")] == [
        "Der Vermieter gibt die Kaution nicht zurück, obwohl ich ausgezogen bin.",
        "Mein Arbeitgeber hat mir während meiner Krankheit gekündigt. Was kann ich tun?"]
    english = "My landlord has kept my deposit for months. My employer fired me while I was ill. What can I do?"
    assert len(segment_issues(english, "en")) == 2
    # statements that name the same thing tell one matter
    one = "Ich habe vor zwei Monaten ein Auto gekauft. Das Auto hat jetzt einen Motorschaden. Was kann ich tun?"
    assert len(segment_issues(one, "de")) == 1
    # a statement too short to search alone joins the one before it
    assert len(segment_issues("Ich bin krank. Mein Arbeitgeber hat mir jetzt gekündigt. Ist das erlaubt?", "de")) == 1


def test_without_a_topic_model_statements_that_a_sense_rule_reads_together_stay_one_matter() -> None:
    # the will and "nothing" share no word, but together they name the compulsory share
    will = ("Dans son testament, ma mère a tout laissé à son deuxième mari et nous, les enfants, ne devons rien "
            "recevoir. Combien nous revient-il au minimum ?")
    assert len(segment_issues(will, "fr")) == 1
    # each rule reads within one matter here, so the two matters stay apart
    two = ("Le bailleur garde ma caution depuis des mois. Mon employeur m'a licencié pendant que j'étais malade. "
           "Que faire ?")
    assert len(segment_issues(two, "fr")) == 2


def test_without_a_topic_model_the_facts_of_one_case_name_its_parties_and_stay_one_matter() -> None:
    # French analysis drops "D" (as in d'), so only the parties' letters link the statements
    case = ("Dans un supermarché à Bâle, X met deux bouteilles de whisky dans son sac et passe la caisse sans "
            "payer. Le détective du magasin D le retient par le bras à la sortie. Pour s'enfuir, X pousse D "
            "contre un rayon. De quelles infractions X s'est-il rendu coupable ?")
    assert len(segment_issues(case, "fr")) == 1
    assert party_letters("K kauft von V ein E-Bike. V liefert.", "de") == ["party:K", "party:V", "party:V"]
    # capitals that are words name no party: English "A" and "I", Italian "E"
    assert party_letters("A colleague and I sued company B.", "en") == ["party:B"]
    assert party_letters("E poi A va a Roma con B.", "it") == ["party:B"]


def test_without_a_topic_model_statements_stay_together_unless_the_question_asks_after_them() -> None:
    told = ("Der Vermieter gibt die Kaution nicht zurück, obwohl ich ausgezogen bin. "
            "Mein Arbeitgeber hat mir während meiner Krankheit gekündigt.")
    assert len(segment_issues(told, "de")) == 1  # nothing asked (statements of the COLIEE kind)
    once = "Der Vermieter gibt die Kaution nicht zurück, obwohl ich ausgezogen bin. Was kann ich tun?"
    assert len(segment_issues(once, "de")) == 1  # one statement, then the question
    long = " ".join(f"Der Vermieter hat im Jahr {2010 + n} die Kaution behalten." for n in range(3))
    matters = long + " " + " ".join(["Mein Arbeitgeber hat mir während meiner Krankheit gekündigt."] * 3)
    assert len(units_of(matters + " Was kann ich tun?", "de")) > UNTRAINED_STATEMENT_UNITS
    assert len(segment_issues(matters + " Was kann ich tun?", "de")) == 1  # a long text tells one matter
    chinese = "公司把我辞退了也不给经济补偿。房东不退押金还不接电话。我该怎么办？"
    assert len(segment_issues(chinese, "zh")) == 1  # Chinese statements need a topic model


def test_without_a_topic_model_two_matters_told_in_one_sentence_are_cut_at_the_and() -> None:
    english = "My landlord won't return my deposit and my employer fired me while I was sick. What can I do?"
    assert [i.text for i in segment_issues(english, "en")] == [
        "My landlord won't return my deposit", "my employer fired me while I was sick. What can I do?"]
    french = "Le bailleur ne me rend pas la caution et mon employeur m'a licencié pendant ma maladie. Que faire ?"
    assert len(segment_issues(french, "fr")) == 2
    italian = ("Il locatore non mi restituisce la cauzione e il mio datore di lavoro mi ha licenziato. "
               "Cosa posso fare?")
    assert len(segment_issues(italian, "it")) == 2
    # Italian drops the subject: a first-person "sono" / "ho" after "e" starts the speaker's own clause
    dropped = ("Voglio lasciare l'appartamento prima della scadenza del contratto e sono senza soldi e senza casa. "
               "Lo Stato deve aiutarmi?")
    assert [i.text for i in segment_issues(dropped, "it")] == [
        "Voglio lasciare l'appartamento prima della scadenza del contratto",
        "sono senza soldi e senza casa. Lo Stato deve aiutarmi?"]
    # "and" before a verb joins two predicates of one subject, not two clauses
    tile = "A tile fell off the roof of my neighbour's building and damaged my car badly. Who has to pay?"
    assert len(segment_issues(tile, "en")) == 1
    # clauses that name the same thing tell one matter; a short one is not cut off
    assert len(segment_issues("I bought a car from a dealer last month and the car broke down on the motorway. "
                              "What can I do?", "en")) == 1
    short = "I was sick and my employer fired me while I was in hospital. Is that allowed?"
    assert len(segment_issues(short, "en")) == 1


def test_clauses_are_not_cut_in_german_or_in_long_texts() -> None:
    german = ("Mein Vermieter gibt die Kaution nicht zurück und mein Arbeitgeber hat mir während meiner "
              "Krankheit gekündigt. Was kann ich tun?")
    assert len(segment_issues(german, "de")) == 1  # German lay questions chain the clauses of one matter
    english = "My landlord won't return my deposit and my employer fired me while I was sick."
    filler = " I have asked many people for advice over the last weeks, but nobody could tell me anything."
    long = english + filler * 3 + " What can I do?"
    assert len(long) > UNTRAINED_CLAUSE_TEXT_CHARS
    assert segment_issues(long, "en")[0].text == english  # cut at its sentences only


def test_a_question_in_a_language_the_index_lacks_joins_its_question_to_the_last_statement() -> None:
    told = ("Someone broke into my e-mail account with my password and a court decided my case without "
            "ever hearing my side. Which constitutional right was violated?")
    # read in its own language the question stands alone; read on a German index it asks about the last matter
    assert [i.text for i in segment_issues(told, "en")][-1] == "Which constitutional right was violated?"
    assert [i.text for i in segment_issues(told, "de")] == [
        "Someone broke into my e-mail account with my password",
        "a court decided my case without ever hearing my side. Which constitutional right was violated?"]


def test_the_terms_two_spans_share_are_their_topic() -> None:
    text = "Der Vermieter behält die Kaution. Der Vermieter antwortet nicht. Mein Chef kündigt mir."
    topic = shared_terms(text, "de")
    landlord, again, boss = (topic(span) for span in text.split(". "))
    assert float(landlord @ again) > 0 and float(landlord @ boss) == 0
    assert not topic("Schöne Grüsse").any()  # terms the text does not have count nothing


def test_the_issue_count_without_a_model_folder_follows_what_the_question_asks() -> None:
    two = "公司辞退我能要经济补偿吗？房东不退押金怎么办？"
    count = IssueCounter(lambda: None)
    assert count(two, "zh") == 2 and count(two, "") == 2  # the language is detected
    assert count("公司辞退我不给补偿怎么办？", "zh") == 1
    assert count("Mein Vermieter behält die Kaution. Darf er das?", "de") == 1


def test_the_issue_count_asks_the_index_for_its_languages_only_where_they_decide() -> None:
    asked: list[str] = []

    def languages(index: str) -> tuple[str, ...]:
        asked.append(index)
        return ("zh",)

    count = IssueCounter(lambda: None, languages)
    two = "公司辞退我能要经济补偿吗？房东不退押金怎么办？"
    assert count(two, "zh", "stard") == 2 and asked == []  # the question's own language decides
    assert count(two, "", "stard") == 2 and asked == ["stard"]
    assert IssueCounter(lambda: SimpleNamespace(language="zh", law_classifier=None), languages)(two, "", "x") == 2
    assert asked == ["stard"], "a model folder's language decides before the index's"


def test_the_model_folder_gives_the_issue_count_its_language_and_topic() -> None:
    class Classifier:
        """Term evidence for two sections: dismissal words and tenancy words."""

        def term_evidence(self, terms: list[str]) -> np.ndarray:
            text = "".join(terms)
            return np.array([text.count("辞退") + text.count("补偿"), text.count("押金") + text.count("房东")], float)

    folder = SimpleNamespace(language="zh", law_classifier=Classifier())
    told = "公司把我辞退了也不给经济补偿。另外房东不退押金还不接电话，我该怎么办？"
    assert IssueCounter(lambda: folder)(told, "") == 2  # statements on two topics (the folder's language)
    assert IssueCounter(lambda: None)(told, "zh") == 1  # no topic model: one question, one issue


def test_a_long_text_that_asks_once_is_not_cut_into_statements() -> None:
    """Beyond STATEMENT_MAX_UNITS units it is a case file told at length, and merging costs a topic each."""
    labour, traffic = "公司突然把我辞退了也不给经济补偿", "我下班路上被车撞了对方全责却不肯赔医药费"
    short = f"{labour}。另外{traffic}，我该怎么办？"
    assert len(segment_issues(short, "zh", _labour_or_traffic)) == 2
    long = "，".join([labour] * STATEMENT_MAX_UNITS + [traffic]) + "，我该怎么办？"
    assert len(units_of(long, "zh")) > STATEMENT_MAX_UNITS
    assert len(segment_issues(long, "zh", _labour_or_traffic)) == 1


@pytest.mark.parametrize(("language", "text"), [
    ("zh", "公司把我辞退了也不给经济补偿，还拖欠三个月工资。另外房东不退押金！我该怎么办？能起诉吗？"),
    ("de", "Mein Arbeitgeber hat mir gekündigt. Der Vermieter behält die Kaution! Was kann ich tun? "
           "1. Lohn 2) Kaution"),
])
def test_the_topic_of_a_span_reads_the_same_terms_unit_by_unit(language: str, text: str) -> None:
    """The topic tokenizes a span unit by unit (cached per unit, so merged spans cost no new
    tokenization); the terms are exactly those of the whole span."""
    seen: list[list[str]] = []

    class Classifier:
        def term_evidence(self, terms: list[str]) -> np.ndarray:
            seen.append(list(terms))
            return np.ones(2)

    topic = topic_of(Classifier(), language)
    assert topic is not None
    topic(text)
    assert len(units_of(text, language)) > 2
    assert seen == [analyzer_for(language).tokens(text)]
