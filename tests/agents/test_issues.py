"""Issue segmentation: units, question detection, merging by length and by topic."""

from __future__ import annotations

import numpy as np
import pytest

from service.agents.issues import asks, segment_issues, units_of

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


def test_at_most_max_issues_remain() -> None:
    text = "公司辞退我能要补偿吗？房东不退押金怎么办？邻居噪音扰民怎么处理？父亲的遗产怎么分配？"
    issues = segment_issues(text, "zh")  # four questions; the shortest neighbours merge
    assert len(issues) == 3 and issues[0].text == "公司辞退我能要补偿吗？房东不退押金怎么办？"
    assert len(segment_issues(text, "zh", max_issues=4)) == 4
    assert len(segment_issues(text, "zh", max_issues=2)) == 2
    spread = [np.eye(4)[i] for i in range(4)]
    assert len(segment_issues(text, "zh", lambda s: spread[text.index(s) * 4 // len(text)], max_issues=3)) == 3
