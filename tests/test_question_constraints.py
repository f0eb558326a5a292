"""Constraints a question states about which documents to search (kgrag/retrieve/constraints.py):
parsed en + zh into filters, applied only when the documents carry that metadata, merged with
request filters, shown in the trace, and never read out of a factual question."""

from __future__ import annotations

import datetime as dt

import pytest

from kgrag.facets import FacetCatalog
from kgrag.retrieve.constraints import merge_filters
from kgrag.retrieve.understand import understand
from kgrag.server.app import create_app
from kgrag.stores.filters import SearchFilter
from tests.test_facets import dated_kb  # noqa: F401  (a fixture)

TODAY = dt.date(2024, 6, 1)
CATALOG = FacetCatalog(frozenset({"pdf", "markdown", "jsonl", "xlsx", "pptx", "email", "notebook"}), frozenset({"security", "hr", "算法"}),
                       "2019-03-01", "2024-05-31")
YEAR_2023 = {"date_from": "2023-01-01", "date_to": "2023-12-31"}
PAST_YEAR = {"date_from": "2023-06-02", "date_to": "2024-06-01"}


def _filter(question: str, catalog: FacetCatalog | None = CATALOG) -> dict | None:
    said = understand(question, lambda: catalog, TODAY)
    return None if said.constraint_filter is None else said.constraint_filter.as_dict()


@pytest.mark.parametrize(("question", "expected"), [
    ("What do the documents from 2023 say about leave?", YEAR_2023),
    ("Summarise the 2023 reports on hiring", YEAR_2023),
    ("Which news published in 2023 mention the merger?", YEAR_2023),
    ("What do news since 2022 say about rates?", {"date_from": "2022-01-01"}),
    ("What did the reports before 2021 recommend?", {"date_to": "2020-12-31"}),
    ("What did last year's reports say about hiring?", YEAR_2023),
    ("What changed in the past year?", PAST_YEAR),
    ("Which incidents happened in the last 6 months?", {"date_from": "2023-12-04", "date_to": "2024-06-01"}),
    ("2023年的新闻里提到了哪些并购？", YEAR_2023),
    ("2022年以来的文件怎么规定报销？", {"date_from": "2022-01-01"}),
    ("去年的文件说了什么？", YEAR_2023),
    ("最近一年的销售额是多少？", PAST_YEAR),
    ("近一年公司有哪些变化？", PAST_YEAR),
    ("过去三个月的新闻有哪些？", {"date_from": "2024-03-03", "date_to": "2024-06-01"}),
    ("What is the leave policy in the PDFs?", {"doc_type": "pdf"}),
    ("PDF 里怎么说请假？", {"doc_type": "pdf"}),
    ("PDF文件中提到的报销上限是多少？", {"doc_type": "pdf"}),
    ("Which contacts are in the spreadsheets?", {"doc_type": "xlsx"}),
    ("Excel 文件里有哪些联系人？", {"doc_type": "xlsx"}),
    ("What is said in the slides about access reviews?", {"doc_type": "pptx"}),
    ("PPT 里怎么说访问审查？", {"doc_type": "pptx"}),
    ("What was decided in the emails about key rotation?", {"doc_type": "email"}),
    ("邮件里怎么说密钥轮换？", {"doc_type": "email"}),
    ("Which threshold is used in the notebooks?", {"doc_type": "notebook"}),
    ("What do the security docs say about passwords?", {"tags": "security"}),
    ("Which documents tagged hr mention parental leave?", {"tags": "hr"}),
    ("算法相关的文档有哪些？", {"tags": "算法"}),
    ("What do the 2023 documents in the PDFs say about leave?", {**YEAR_2023, "doc_type": "pdf"}),
])
def test_constraints_become_filters(question, expected):
    assert _filter(question) == expected


@pytest.mark.parametrize("question", [
    # A year or a relative date in a factual question is about the facts, not the documents.
    "Who won the 2023 Nobel prize in physics?",
    "What happened in 2023?",
    "Who published a paper in 2023?",
    "What did the 2023 report find?",
    "Who has been CEO since 2022?",
    "Who won the championship last year?",
    "When did the current fiscal quarter begin?",
    "What was the deadline last month for contractors to submit invoices?",
    "2023年诺贝尔物理学奖得主是谁？",
    "去年冠军是谁？",
    "2022年以来GDP增长了多少？",
    # A format word that is not about where to search; a tag word without a document noun.
    "How do I export a PDF in the PDF editor?",
    "What is security?",
    "How is a Markdown table written?",
])
def test_factual_questions_get_no_filter(question):
    said = understand(question, lambda: CATALOG, TODAY)
    assert said.constraint_filter is None and not any(c["applied"] for c in said.constraints), said.constraints


def test_constraints_apply_only_when_the_documents_carry_that_metadata():
    undated = FacetCatalog(frozenset({"markdown"}), frozenset())
    said = understand("What do the documents from 2023 say about leave?", lambda: undated, TODAY)
    assert said.constraint_filter is None
    assert said.constraints == [{"text": "documents from 2023", "facet": "date", "value": YEAR_2023,
                                 "applied": False, "reason": "the documents carry no dates"}]
    # Dated, but not in that range: a filter would only hide everything.
    assert _filter("documents from 2012 about leave", CATALOG) is None
    # A format or tag the knowledge base does not hold.
    assert _filter("What is in the Word files?") is None
    assert _filter("What do the finance docs say?") is None
    # A store that lists no facets: nothing applies, the question is searched as asked.
    said = understand("What do the documents from 2023 say?", lambda: None, TODAY)
    assert said.constraint_filter is None and said.constraints[0]["reason"]


def test_the_catalog_is_read_only_when_a_constraint_may_be_stated():
    reads = []

    def catalog():
        reads.append(1)
        return CATALOG

    understand("Who directed Glass Harbor?", catalog, TODAY)
    assert not reads
    understand("What do the documents from 2023 say?", catalog, TODAY)
    assert reads


def test_request_filters_win_and_combine_with_the_question():
    request = SearchFilter.parse({"date_from": "2020-01-01", "doc_type": "markdown"})
    question = SearchFilter.parse({"date_from": "2023-01-01", "date_to": "2023-12-31", "tags": "hr"})
    merged = merge_filters(request, question)
    assert merged is not None and merged.as_dict() == {"date_from": "2020-01-01", "date_to": "2023-12-31",
                                                       "doc_type": "markdown", "tags": "hr"}
    # Contradictory (an empty date range): the request's filters alone.
    late = SearchFilter.parse({"date_from": "2024-01-01"})
    assert merge_filters(late, SearchFilter.parse({"date_to": "2023-12-31"})) == late
    assert merge_filters(None, question) == question and merge_filters(request, None) == request


def test_the_keyword_text_drops_the_constraint_words():
    said = understand("What do the documents from 2023 say about password rotation?", lambda: CATALOG, TODAY)
    assert said.keyword_text == "What do say about password rotation?"
    assert said.search_text == "What do the documents from 2023 say about password rotation?"


# -- end to end ------------------------------------------------------------------------------------
def test_a_question_constraint_filters_every_path_and_shows_in_the_trace(dated_kb):
    retriever = dated_kb.retriever
    retriever.today = lambda: TODAY
    result = retriever.retrieve("What do the documents from 2023 say about password rotation?")
    assert result.hits and {h.chunk.doc_id.rsplit("/", 1)[-1] for h in result.hits} == {"security-2023.md"}
    trace = result.query.understanding.trace()
    assert trace["filters"] == YEAR_2023 and trace["constraints"][0]["applied"] is True
    # Request filters combine with it (AND): here they exclude the only 2023 document.
    none_left = retriever.retrieve("What do the documents from 2023 say about password rotation?",
                                   filters=SearchFilter(tags=("hr",)))
    assert none_left.hits == []
    # The same words without the constraint phrasing search every document.
    factual = retriever.retrieve("What did the 2023 password policy change about rotation?")
    assert factual.query.filters is None
    assert len({h.chunk.doc_id for h in factual.hits}) == 3


def test_the_http_trace_lists_the_constraints(dated_kb):
    dated_kb.retriever.today = lambda: TODAY
    client = create_app(dated_kb.settings, dated_kb, warm=False).test_client()
    body = client.post("/v1/retrieve", json={"question": "最近一年的文件里密码多久轮换一次？"}).get_json()
    understanding = body["trace"]["understanding"]
    assert understanding["constraints"][0]["text"] == "最近一年"
    # The knowledge base's dates end 2023-04-05: the past year from 2024-06-01 holds none of them.
    assert understanding["constraints"][0]["applied"] is False and understanding["filters"] is None
    resp = client.post("/v1/retrieve", json={"question": "x", "recency": {"half_life_days": -1}})
    assert resp.status_code == 400 and "recency.half_life_days" in resp.get_json()["error"]["message"]
    ok = client.post("/v1/retrieve", json={"question": "How often must passwords be rotated?",
                                           "filters": {"tags": "security", "date_from": "2023-01-01"},
                                           "recency": {"half_life_days": 365}})
    assert ok.status_code == 200
    assert {h["doc_id"].rsplit("/", 1)[-1] for h in ok.get_json()["hits"]} == {"security-2023.md"}
