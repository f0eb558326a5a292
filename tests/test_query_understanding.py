"""LLM-free query understanding (kgrag/retrieve/understand.py, exclude.py): the rules on their
own, then end to end on the demo knowledge base (embedded stores, shipped models) and over HTTP."""

from __future__ import annotations

import re

import pytest

from kgrag.retrieve.types import Query
from kgrag.retrieve.understand import set_aside_concession, small_talk_reply, strip_filler, understand
from kgrag.server.app import create_app

LCA_NAMES = ("Lowest Common Ancestor", "LCA", "最近公共祖先", "最低公共祖先")


@pytest.mark.parametrize("question, expected", [
    ("Could you please tell me who directed Glass Harbor? Thanks", "Who directed Glass Harbor?"),
    ("Hi, can you tell me what LCA is? Thanks in advance!", "What LCA is?"),
    ("I'd like to know how permissions are granted", "How permissions are granted"),
    ("请问最近公共祖先怎么求？谢谢", "最近公共祖先怎么求？"),
    ("麻烦你帮我查一下RBAC是什么", "RBAC是什么"),
    ("我想知道倍增法的复杂度", "倍增法的复杂度"),
    # Content words that look like filler stay.
    ("What is the company value of saying thanks?", "What is the company value of saying thanks?"),
    ("What does please mean?", "What does please mean?"),
    ("please", "please"),
])
def test_filler_is_stripped_in_both_languages(question, expected):
    assert strip_filler(question)[0] == expected


@pytest.mark.parametrize("message", ["你好", "您好！", "谢谢", "thanks!", "Hi there", "Hello, how are you?",
                                     "Thank you so much :)", "good morning", "再见～"])
def test_small_talk_gets_a_reply(message):
    reply = small_talk_reply(message)
    assert reply
    assert bool(re.search(r"[\u4e00-\u9fff]", reply)) == bool(re.search(r"[\u4e00-\u9fff]", message))


@pytest.mark.parametrize("question", ["Hello world program in C?", "Thanks to whom was the bridge built?",
                                      "你好是什么意思？", "What is LCA?"])
def test_questions_are_not_small_talk(question):
    assert small_talk_reply(question) is None
    assert understand(question).route == "retrieve"


@pytest.mark.parametrize("question, topics, searched", [
    ("Which algorithms answer queries in O(log n), not about LCA?", ["LCA"],
     "Which algorithms answer queries in O(log n)?"),
    ("Excluding the Red Book, how are the Books of Clanranald kept?", ["Red Book"],
     "how are the Books of Clanranald kept?"),
    ("Without Docker, how do I install it?", ["Docker"], "how do I install it?"),
    ("除了北京以外，哪些城市举办过奥运会？", ["北京"], "哪些城市举办过奥运会？"),
    ("哪些城市举办过奥运会，不包括北京？", ["北京"], "哪些城市举办过奥运会？"),
    ("不包括张三的项目有哪些", ["张三"], "项目有哪些"),
    # Not exclusions: "besides X" includes X; "without" inside a clause is content; "废除了" is a verb.
    ("赫哲诸语言除了赫哲语还包括哪些语言？", [], "赫哲诸语言除了赫哲语还包括哪些语言？"),
    ("泰国皇家军队除了效忠国王，还有什么职责？", [], "泰国皇家军队除了效忠国王，还有什么职责？"),
    ("柴郡废除了非都市郡，改制为几个单一管理区？", [], "柴郡废除了非都市郡，改制为几个单一管理区？"),
    ("How do I run the server without root?", [], "How do I run the server without root?"),
])
def test_exclusions_are_parsed_out_of_the_searched_text(question, topics, searched):
    u = understand(question)
    assert u.exclusions == topics
    assert u.search_text == searched
    for topic in topics:  # never a keyword to match
        assert topic not in u.keyword_text


@pytest.mark.parametrize("question, aside", [
    # A statement conceded first, then the question: the statement names what is not asked.
    ("While the People Group is organized into departments like 'Talent and Engagement' and 'Total Rewards', "
     "what is the distinct term for the process used for identifying future leaders?",
     "While the People Group is organized into departments like 'Talent and Engagement' and 'Total Rewards'"),
    ("Although every project grants permissions to its members through roles and groups, "
     "which other algorithm answers an LCA query in constant time?",
     "Although every project grants permissions to its members through roles and groups"),
    # The question does not say its answer is something else: the clause may be its topic.
    ("While the Security team reviews access requests within two business days normally, how long does an "
     "urgent request take?", None),
    ("While the runner is registered with the instance and shows as online, why is my pipeline not starting?", None),
    ("虽然公司有很多部门负责不同的业务，但是负责财务预算的是哪个部门？", "虽然公司有很多部门负责不同的业务，但是"),
    # The scene of the question, not a concession: kept.
    ("While traveling abroad for a customer visit next month, how do I submit my expenses?", None),
    ("While on parental leave for three months in the summer, who approves my expenses?", None),
    ("While I am away on parental leave for three months, who approves my team's expenses?", None),
    ("While the office is closed, how do I get my mail?", None),  # too short to be a statement of its own
    # The question points back into the clause: the clause names what is asked about.
    ("Although the old billing API has been deprecated since version three, how do I configure it?", None),
    # "Besides X, …" includes X (MuSiQue's bridge is in it): no concession.
    ("Besides the continent of the river which the Tekeze River turns into, where did Germany have "
     "imperial interests?", None),
])
def test_an_opening_concession_is_set_aside(question, aside):
    u = understand(question)
    if aside is None:
        assert u.search_text == question and u.set_aside == []
        return
    rest = question[len(aside):].lstrip(" ,，")
    searched = rest[0].upper() + rest[1:]
    assert u.set_aside == [aside] and u.search_text == searched and u.keyword_text == searched
    assert set_aside_concession(searched) == (searched, None)  # nothing left to set aside


@pytest.mark.parametrize("question, aside", [
    # A statement as a sentence of its own, then a question whose answer is something else.
    ("In the People Group, the Talent Assessment program uses a 'Performance/Growth Potential Matrix'. What is "
     "the different term from the finance handbook for the one-year period used for accounting?",
     "In the People Group, the Talent Assessment program uses a 'Performance/Growth Potential Matrix'."),
    ("Every project grants permissions to its members through roles and groups. Which other structure answers "
     "an LCA query in constant time?",
     "Every project grants permissions to its members through roles and groups."),
    # The question points back to the sentence: it asks about it.
    ("In the MEDDPPICC framework, one element is the individual with the power to spend. What is the Slack "
     "channel for the highest-ranking example of such a role at GitLab?", None),
    ("The release notes list every deprecated setting of the runner configuration. Which other settings "
     "replace these?", None),
    # Context about the asker sets the scene; no sign of something else: the sentence stays.
    ("I run GitLab 15 on a single server with an external database. What other backup tools do I need?", None),
    ("The 'ext-' prefix is for Slack channels with external partners, where information must be kept SAFE. "
     "What is the Slack channel for the executive in charge of the department whose output is to "
     "'Ensure compliance'?", None),
    ("Our team is short. What is the other channel?", None),  # too short to be a statement of its own
])
def test_an_opening_statement_sentence_is_set_aside_under_the_same_conditions(question, aside):
    u = understand(question)
    if aside is None:
        assert u.set_aside == [] and u.search_text == question
        return
    searched = question[len(aside):].strip()
    assert u.set_aside == [aside] and u.search_text == searched
    assert set_aside_concession(searched) == (searched, None)


@pytest.mark.parametrize("question, searched, aside", [
    ("What is the term for a small, reusable building block of functionality that is not a stage in the "
     "customer journey?", "What is the term for a small, reusable building block of functionality?",
     "that is not a stage in the customer journey"),
    # What follows "but" says what the answer is: it stays.
    ("What is the term that is not an expense category but names a role where someone coaches others?",
     "What is the term that names a role where someone coaches others?", "that is not an expense category"),
    # Between commas, both commas go.
    ("Which legal document, which is not a product principle, must team members sign every year?",
     "Which legal document must team members sign every year?", "which is not a product principle"),
    ("What is the distinct term for the process, not a department, used for developing future leaders?",
     "What is the distinct term for the process, used for developing future leaders?", "not a department"),
    # A negation that is not about what kind of thing the answer is: kept.
    ("Which fee is not refundable after the first month of the subscription?", None, None),
    ("Which services are not covered by the travel insurance policy?", None, None),
    # Too little would be left to search with.
    ("What is it that is not a bird?", None, None),
])
def test_a_clause_saying_what_the_answer_is_not_is_set_aside(question, searched, aside):
    u = understand(question)
    if aside is None:
        assert u.set_aside == [] and u.search_text == question
        return
    assert u.set_aside == [aside] and u.search_text == searched


def test_a_conceded_topic_does_not_pull_the_search_to_it(demo_kb):
    """The concession holds the permission guide's words (searched alone, it finds the guide
    first); what is asked is about LCA, and LCA comes first."""
    aside = "While every project grants permissions to its members through roles, groups and access levels"
    clause_alone = demo_kb.retriever.retrieve(aside.removeprefix("While "), top_k=5)
    assert "permission_guide" in clause_alone.hits[0].chunk.doc_id  # so the test can fail
    result = demo_kb.retriever.retrieve(f"{aside}, what is the lowest common ancestor of two nodes in a rooted "
                                        "tree instead?", top_k=5)
    assert result.query.understanding.set_aside == [aside]
    assert _about_lca(result.hits[0]), [h.chunk.doc_id for h in result.hits]
    assert not any("permission_guide" in h.chunk.doc_id for h in result.hits[:3])


def test_a_statement_sentence_before_the_question_does_not_pull_the_search_to_it(demo_kb):
    aside = "Every project grants permissions to its members through roles, groups and access levels."
    kept = demo_kb.retriever.retrieve(f"{aside} What is the lowest common ancestor of two nodes in a rooted tree?",
                                      top_k=5)  # no sign that the answer is something else: searched whole
    assert kept.query.understanding.set_aside == []
    result = demo_kb.retriever.retrieve(f"{aside} What is the lowest common ancestor of two nodes in a rooted "
                                        "tree instead?", top_k=5)
    assert result.query.understanding.set_aside == [aside]
    assert _about_lca(result.hits[0]), [h.chunk.doc_id for h in result.hits]
    assert not any("permission_guide" in h.chunk.doc_id for h in result.hits[:3])
    assert any("permission_guide" in h.chunk.doc_id for h in kept.hits[:3]), "the sentence must pull, else this proves nothing"


def test_what_the_answer_is_not_does_not_pull_the_search_to_it(demo_kb):
    question = ("What is the lowest common ancestor of two nodes in a rooted tree, which is not an access level "
                "or role that grants permissions to project members?")
    result = demo_kb.retriever.retrieve(question, top_k=5)
    assert result.query.understanding.set_aside == [
        "which is not an access level or role that grants permissions to project members"]
    assert _about_lca(result.hits[0]), [h.chunk.doc_id for h in result.hits]
    assert not any("permission_guide" in h.chunk.doc_id for h in result.hits[:3])
    whole = demo_kb.retriever.paths["bm25"].search(Query(question, 5), 5)  # the question as written
    assert any("permission_guide" in h.id for h in whole.hits[:3]), "the clause must pull, else this proves nothing"


def _about_lca(hit) -> bool:
    """Independent of the implementation: the heading names LCA, or the text does twice."""
    head = f"{hit.chunk.title} {hit.chunk.section_path}"
    mentions = sum(hit.chunk.text.count(name) for name in LCA_NAMES)
    return any(name in head for name in LCA_NAMES) or mentions >= 2


@pytest.mark.parametrize("modes, iterate", [
    (("dense",), False), (("bm25",), False), (("graph",), False),
    (("dense", "bm25", "graph"), False), (("dense", "bm25", "graph"), True),
])
@pytest.mark.parametrize("asked, excluded", [
    ("Which algorithms answer each query in O(log n)?", "Which algorithms answer each query in O(log n), not about LCA?"),
    ("哪些算法借助并查集回答询问？", "除了最近公共祖先，哪些算法借助并查集回答询问？"),
])
def test_an_excluded_topic_never_comes_back_on_any_path(demo_kb, modes, iterate, asked, excluded):
    plain = demo_kb.retriever.retrieve(asked, top_k=10, modes=modes, iterate=iterate)
    if "bm25" in modes:  # so the test can fail (MiniLM ranks Chinese near randomly: dense alone not)
        assert any(_about_lca(h) for h in plain.hits), "the test question must reach LCA pages"
    result = demo_kb.retriever.retrieve(excluded, top_k=10, modes=modes, iterate=iterate)
    assert not [h.chunk.id for h in result.hits if _about_lca(h)]
    exclusion = result.query.exclusion
    assert exclusion is not None and "lowest common ancestor" in exclusion.entities
    assert "lowest common ancestor" not in [le.key for le in result.query.linked]  # never a seed
    assert "LCA" not in result.query.keyword_text and "最近公共祖先" not in result.query.keyword_text


def test_filler_does_not_reach_keyword_search(demo_kb):
    result = demo_kb.retriever.retrieve("请问最近公共祖先怎么求？谢谢", top_k=5)
    u = result.query.understanding
    assert u.keyword_text == "最近公共祖先怎么求？" and u.stripped == ["请问", "谢谢"]
    assert any("zuijin_gonggong_zuxian.md" in h.chunk.doc_id for h in result.hits[:3])


def test_small_talk_retrieves_nothing(demo_kb):
    result = demo_kb.retriever.retrieve("你好")
    assert result.hits == [] and result.query.understanding.route == "small_talk"
    assert "link" not in result.timings_ms  # no path ran


@pytest.fixture(scope="module")
def client(demo_kb):
    return create_app(demo_kb.settings, demo_kb).test_client()


def test_small_talk_over_http_gets_a_short_reply_and_the_decision_in_the_trace(client):
    body = client.post("/v1/query", json={"question": "thanks!"}).get_json()
    assert body["mode"] == "small_talk" and body["hits"] == [] and not body["abstained"]
    assert "welcome" in body["answer"]
    assert body["trace"]["understanding"]["route"] == "small_talk"
    zh = client.post("/v1/query", json={"question": "你好"}).get_json()
    assert zh["mode"] == "small_talk" and "你好" in zh["answer"]


def test_exclusion_and_iteration_are_in_the_http_trace(client):
    body = client.post("/v1/retrieve", json={"question": "Which algorithms answer each query in O(log n), "
                                                         "not about LCA?"}).get_json()
    trace = body["trace"]
    assert trace["understanding"]["exclusions"] == ["LCA"]
    assert "lowest common ancestor" in trace["exclusion"]["entities"]
    assert sum(trace["exclusion"]["dropped"].values()) > 0
    assert trace["iteration"]["driver"] == "entities" and trace["iteration"]["rounds"][0]["round"] == 1


def test_iterate_request_field_switches_the_rounds(client):
    q = "In which city was the director of Glass Harbor born?"
    off = client.post("/v1/retrieve", json={"question": q, "iterate": False}).get_json()
    assert off["trace"]["iteration"] is None
    on = client.post("/v1/retrieve", json={"question": q, "iterate": True}).get_json()
    assert on["trace"]["iteration"]["rounds"][0]["query"] == q
    bad = client.post("/v1/retrieve", json={"question": q, "iterate": "yes"})
    assert bad.status_code == 400 and "iterate" in bad.get_data(as_text=True)
