"""Answer sentences that answer (kgrag/generate/extractive/best_sentences.py, kgrag/text/asks.py): the
issue's questions through the real pipeline on the demo knowledge base, and the cues alone."""

from __future__ import annotations

import pytest

from kgrag.text.asks import ask_of, fits


def _answer(kb, question: str):
    result = kb.retriever.retrieve(question)
    return kb.generator.answer(question, result.hits[: kb.settings.retrieval.top_k], abstain=result.below_threshold,
                               expansions=result.query.expansions)


def test_two_hop_answer_includes_the_bridge_sentence(demo_kb):
    answer = _answer(demo_kb, "Who founded the university where Sergei Aleksandrovich Tokarev was a professor?")
    assert "Moscow State University" in answer.text and "Lomonosov" in answer.text
    assert len(answer.citations) >= 2  # the professor's page and the university's


def test_sentences_sharing_only_a_name_give_way_to_the_asked_answer(demo_kb):
    answer = _answer(demo_kb, "Which actress in the film Black Book was born in 1975?")
    assert "Halina Reijn (born 10 November 1975)" in answer.text
    assert "optical disc" not in answer.text  # "Black Book" the disc format shares only the name


def test_a_chinese_question_is_answered_in_chinese_first(demo_kb):
    answer = _answer(demo_kb, "最近公共祖先是什么？")
    assert answer.text.startswith("在有根树中") and "[" in answer.text


@pytest.mark.parametrize(("question", "methods", "definition"), [
    ("最近公共祖先怎么求？", ("倍增法", "Tarjan", "欧拉序"), "深度最大"),
    ("How is the LCA computed?", ("Euler tour", "Binary lifting", "Tarjan"), "deepest node"),
])
def test_a_how_question_quotes_the_methods_not_the_definition(demo_kb, question, methods, definition):
    """The issue's "最近公共祖先怎么求？": the page's definition restates the subject, the 求法
    section answers; both are in the hit the answer reads."""
    answer = _answer(demo_kb, question)
    assert sum(m in answer.text for m in methods) >= 2, answer.text
    assert definition not in answer.text, answer.text


@pytest.mark.parametrize(("question", "kind"), [
    ("When was the university founded?", "time"), ("熊猫基地几点开门？", "time"),
    ("How much does a ticket cost?", "amount"), ("熊猫基地的门票多少钱？", "amount"),
    ("Acme Portal 的数据库多久备份一次？", "duration"), ("Who founded it?", "person"),
    ("最近公共祖先怎么求？", "method"), ("How is the LCA computed?", "method"),
    ("Why did the empire fall?", "reason"), ("为什么要备份？", "reason"),
    ("Where is the tower?", "place"), ("What is an LCA?", None),
    ("What is the place of birth of the director of film Growing Up Smith?", "place"),
    ("What is the date of death of Philibert I's mother?", "time"), ("What was the date of the meetup?", "time"),
    ("Of what church is the Diocese of the birthplace of Meehan Bonnar?", "place"),
    ("What is the maximum allowable tip percentage for meals?", "amount"),
    ("What is the maximum number of pages allowed for a promotion document?", "amount"),
    ("What is the name of the maximum limit?", None),
])
def test_what_a_question_asks(question, kind):
    assert ask_of(question) == kind


def test_sentences_holding_the_asked_kind():
    assert fits("amount", "门票 55 元，学生半价。") and not fits("amount", "熊猫基地位于成都北郊。")
    assert fits("time", "每天 7:30 开门。") and fits("time", "It was founded on January 25, 1755.")
    assert fits("method", "倍增法先用 O(n log n) 的时间预处理。") and not fits("method", "它是深度最大的节点。")
    assert fits("amount", "Promotion documents should not exceed three pages.")
    assert not fits("amount", "It is one of the oldest universities.")  # "one of" counts nothing
    # A link's address is not read: its digits are no amount, its month no date.
    linked = "The [promotion document](https://docs.google.com/document/d/1oXH9HzdO8gjq/edit) is required."
    assert not fits("amount", linked) and fits("amount", linked.replace("required", "required, 3 pages at most"))
    assert not fits("time", "See https://example.com/2019/may/notes for the minutes.")
    assert fits("time", "The [minutes](https://example.com/notes) of May 2019.")
    assert not fits(None, "anything")


def test_extractive_answer_picks_the_price_sentence_in_a_chunk():
    """The issue's panda-base questions (the demo corpus has no such page): one chunk holding the
    location, the price and the hours; each question quotes its own sentence."""
    from kgrag.config import LLMSettings
    from kgrag.generate.generator import Generator
    from kgrag.retrieve.types import Hit
    from kgrag.types import Chunk

    text = ("成都大熊猫繁育研究基地位于成都市成华区熊猫大道1375号，距市中心约10公里。"
            "熊猫基地门票55元，学生半价。熊猫基地每天7:30开门，18:00闭园。")
    chunk = Chunk(id="p#0", doc_id="p", text=text, title="成都大熊猫繁育研究基地", start=0, end=len(text))
    generator = Generator(LLMSettings())
    price = generator.answer("熊猫基地的门票多少钱？", [Hit(chunk, 1.0)])
    assert "门票55元" in price.text
    hours = generator.answer("熊猫基地几点开门？", [Hit(chunk, 1.0)])
    assert "7:30开门" in hours.text


def test_a_faq_question_is_answered_by_its_answer_line(demo_kb):
    """The demo's FAQ "**问：用户离职后应该怎么处理？** 答：先禁用账号…": the question line shares
    every word with the question, the answer line none; the answer quotes the 答 line."""
    answer = _answer(demo_kb, "用户离职后应该怎么处理？")
    assert not answer.abstained
    assert "先禁用账号" in answer.text, answer.text
    assert "怎么处理" not in answer.text and "答：" not in answer.text, answer.text


def test_faq_question_sentences_are_never_quotable():
    from kgrag.text.sentences import answer_text, faq_paired, split_sentences

    text = ("**问：用户离职后应该怎么处理？** 答：先禁用账号，再回收全部角色。\n\n"
            "Q: Can a user hold both roles?\nA: No. The two roles are exclusive.\n\nAn ordinary paragraph.")
    quotable = faq_paired(text, split_sentences(text))
    texts = [answer_text(q.sentence.text) for q in quotable]
    assert texts == ["先禁用账号，再回收全部角色。", "No.", "The two roles are exclusive.", "An ordinary paragraph."]
    assert [q.asked for q in quotable] == ["**问：用户离职后应该怎么处理？", "Q: Can a user hold both roles?",
                                           "Q: Can a user hold both roles?", ""]


def _chunk_hits(*texts: str):
    from kgrag.retrieve.types import Hit
    from kgrag.types import Chunk

    return [Hit(Chunk(id=f"d{i}#0", doc_id=f"d{i}", text=t, title=f"d{i}", start=0, end=len(t)), 1.0 - i / 10)
            for i, t in enumerate(texts)]


def test_the_sentence_holding_the_asked_kind_leads_the_answer():
    """A two-hop question's bridge sentence comes from the higher-ranked source; the answer still
    leads with the sentence holding the place or the year asked for, then quotes the bridge."""
    from kgrag.config import LLMSettings
    from kgrag.generate.generator import Generator

    generator = Generator(LLMSettings())
    hits = _chunk_hits("Growing Up Smith is a 2015 comedy film directed by Frank Lotito.",
                       "Frank Lotito is an Australian film maker. Frank Lotito was born in Melbourne.")
    answer = generator.answer("Where was Frank Lotito, the director of Growing Up Smith, born?", hits)
    assert answer.text.startswith("Frank Lotito was born in Melbourne [2].")
    assert "Growing Up Smith is a 2015 comedy film" in answer.text
    hits = _chunk_hits("The Gordons toured Ireland with the band Aslan.",
                       "The band Aslan was formed in 1982 in Dublin.")
    answer = generator.answer("In which year was the band the Gordons toured Ireland with formed?", hits)
    assert answer.text.startswith("The band Aslan was formed in 1982 in Dublin [2].")


def test_a_link_address_holds_no_asked_amount():
    """handbook_dev102: "What is the maximum number of pages …?" was answered by the sentence
    whose link address holds digits; the one saying "three pages" now leads."""
    from kgrag.config import LLMSettings
    from kgrag.generate.generator import Generator

    hits = _chunk_hits("The [promotion document](https://docs.google.com/document/d/1oXH9HzdO8gjqdeosstQ/edit) is "
                       "required for all in-line promotions. **Promotion documents should not exceed three pages "
                       "total.**\n\nAs the audience are other team members, the text should be written in third "
                       "person.")
    answer = Generator(LLMSettings()).answer(
        "What is the maximum number of pages allowed for a promotion document required for all in-line promotions?",
        hits)
    assert answer.text.startswith("**Promotion documents should not exceed three pages total.** [1]"), answer.text


def test_the_question_proper_outweighs_its_setting():
    """handbook_dev102's negation questions open with a setting ("At GitLab, where 'Iteration'
    … are core product principles, | what is the term for …"): the sentence answering the
    question proper leads, not the one restating the setting."""
    from kgrag.config import LLMSettings
    from kgrag.generate.extractive.question_setting import setting_terms

    hits = _chunk_hits("At GitLab, rapid iteration and shipping an MVC are core product principles of our product.",
                       "Co-Working Space: team members may expense a professionally managed shared workspace.")
    question = ("At GitLab, where 'Iteration' and shipping an 'MVC' are core product principles, what is the term "
                "for a reimbursable expense for a shared workspace?")
    from kgrag.generate.generator import Generator

    answer = Generator(LLMSettings()).answer(question, hits)
    assert answer.text.startswith("Co-Working Space: team members may expense"), answer.text
    assert setting_terms("GitLab's principles prefer 'Convention over Configuration'. Which legal document, which "
                          "is not a principle, must team members sign?") == {"gitlab", "prefer", "convent", "configur"}
    # A relative clause is no question proper; a question without a setting has none.
    assert setting_terms("In 2004, which band released an album, which sold a million copies?") == {"2004"}
    assert setting_terms("What is the name of the band, which formed in 1990?") == set()
    assert setting_terms("Which film came out first, Blind Shaft or The Mask Of Fu Manchu?") == set()
    assert setting_terms('How many periods in office had the Prime Minister of the "Who? Who?" ministry?') == set()
