"""Document facets (kgrag/facets.py, kgrag/ingest/record_facets.py): what each loader records, that
every chunk carries them through ingestion into the embedded stores, that a knowledge base
written before they existed keeps working, filters on them on every path, and the recency
preference. The engines' filter translations are in tests/contract/test_filter_contract.py."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import numpy as np
import pytest

from kgrag.config import MetadataSettings
from kgrag.facets import FacetCatalog, detect_language, parse_date, parse_tags
from kgrag.ingest.loaders import load
from kgrag.ingest.loaders.front_matter import front_matter
from kgrag.ingest.record_facets import record_facets
from kgrag.retrieve.recency import Recency, boost, prefer_recent
from kgrag.retrieve.types import Hit
from kgrag.stores.filters import SearchFilter
from kgrag.stores.sqlite.chunks import SqliteChunkIndex
from kgrag.types import Chunk

MTIME_2020 = dt.datetime(2020, 1, 2, 12, tzinfo=dt.UTC).timestamp()


def _facets(path: Path, settings: MetadataSettings | None = None) -> list[dict]:
    docs = load(path)
    for doc in docs:
        record_facets(doc, settings or MetadataSettings())
    return [doc.facets for doc in docs]


def _write(path: Path, text: str, mtime: float = MTIME_2020) -> Path:
    path.write_text(text, encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


# -- per loader -----------------------------------------------------------------------------------
def test_markdown_front_matter_gives_tags_and_date(tmp_path):
    md = _write(tmp_path / "leave.md", "---\ntitle: Leave\ntags: [hr, policy]\ndate: 2023-04-05\n---\n"
                                      "# Leave\n\nAnnual leave is 25 days a year.\n")
    assert _facets(md) == [{"language": "en", "doc_type": "markdown", "tags": ["hr", "policy"],
                            "date": "2023-04-05", "date_source": "front_matter"}]


def test_an_email_is_dated_by_its_date_header(tmp_path):
    mail = _write(tmp_path / "decision.eml", "From: ana@example.com\nSubject: Key rotation\n"
                                           "Date: Tue, 14 Oct 2025 23:30:00 -0700\n\nKeys rotate every 90 days.\n")
    assert _facets(mail) == [{"language": "en", "doc_type": "email", "date": "2025-10-14", "date_source": "field"}]


def test_jsonl_fields_give_tags_date_and_doc_type(tmp_path):
    records = [
        {"id": "n1", "text": "央行宣布下调存款准备金率，释放长期资金约一万亿元。", "tags": "news, 财经",
         "published": "2022-11-03T10:00:00Z"},
        {"id": "n2", "text": "The board approved the budget.", "date": "2021-07", "doc_type": "minutes",
         "tags": ["board", "board", " "]},
        {"id": "n3", "text": "No date here, and a date field that is not one.", "date": "next Tuesday"},
    ]
    path = _write(tmp_path / "news.jsonl", "\n".join(json.dumps(r, ensure_ascii=False) for r in records))
    n1, n2, n3 = _facets(path)
    assert n1 == {"language": "zh", "doc_type": "jsonl", "tags": ["news", "财经"], "date": "2022-11-03",
                  "date_source": "field"}
    assert n2 == {"language": "en", "doc_type": "minutes", "tags": ["board"], "date": "2021-07-01",
                  "date_source": "field"}
    # An unparseable date falls back to the file's modification time, and says so.
    assert (n3["date"], n3["date_source"], "tags" in n3) == ("2020-01-02", "mtime", False)


def test_file_mtime_is_the_date_of_last_resort_and_a_path_mapping_sets_the_doc_type(tmp_path):
    (tmp_path / "policies").mkdir()
    txt = _write(tmp_path / "policies" / "travel.txt", "Book trains for trips under 600 km.")
    [plain] = _facets(txt)
    assert plain == {"language": "en", "doc_type": "text", "date": "2020-01-02", "date_source": "mtime"}
    mapped = MetadataSettings(doc_type_by_path={"*/policies/*": "policy"}, date_fields=[])
    [facets] = _facets(txt, mapped)
    assert facets["doc_type"] == "policy"


def test_explicit_facets_are_part_of_the_hash_and_the_mtime_is_not(tmp_path):
    path = tmp_path / "a.jsonl"

    def hash_of(record: dict, mtime: float) -> str:
        _write(path, json.dumps(record), mtime)
        [doc] = load(path)
        record_facets(doc, MetadataSettings())
        return doc.hash

    base = {"id": "a", "text": "Same text."}
    assert hash_of(base, MTIME_2020) == hash_of(base, MTIME_2020 + 86400 * 400)  # touching: no re-ingest
    assert hash_of({**base, "tags": ["x"]}, MTIME_2020) != hash_of({**base, "tags": ["y"]}, MTIME_2020)
    assert hash_of({**base, "date": "2023-01-01"}, MTIME_2020) != hash_of(base, MTIME_2020)


@pytest.mark.parametrize(("text", "language"), [
    ("The lowest common ancestor of two nodes is the deepest node above both.", "en"),
    ("最近公共祖先（LCA）是树中两个节点的最深公共祖先。", "zh"),
    ("Deploy with kubectl apply. 部署前请先检查集群状态和配置文件是否正确，然后再运行命令。 Then check the pods "
     "and the logs of the service for errors before you continue.", "mixed"),
    ("Привет, как дела? Это русский текст о погоде.", "other"),
    ("12345 — 67 %", None),
])
def test_language_is_detected_from_the_script(text, language):
    assert detect_language(text) == language


def test_dates_and_tags_parse_only_what_is_unambiguous():
    assert parse_date("2023-05-01T10:00:00Z") == dt.date(2023, 5, 1)
    assert parse_date(2021) == dt.date(2021, 1, 1) and parse_date("2021-13") is None
    assert parse_date(dt.date(2020, 2, 29)) == dt.date(2020, 2, 29)
    assert parse_date("05/01/2023") is None and parse_date(True) is None and parse_date("last week") is None
    assert parse_tags("a, b,,a") == ["a", "b"] and parse_tags({"a": 1}) is None
    assert front_matter("---\n- just a list\n---\ntext") == {} and front_matter("no front matter") == {}


# -- through ingestion into the embedded stores ---------------------------------------------------
PASSWORD = "Passwords must be rotated every {days} days and must hold at least {n} characters."


@pytest.fixture
def dated_kb(components, tmp_path):
    """Three documents about password rotation with different dates, types and tags."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _write(corpus / "security-2023.md", "---\ntags: [security]\ndate: 2023-04-05\n---\n# Password policy 2023\n\n"
           + PASSWORD.format(days=90, n=12) + "\n")
    _write(corpus / "security-2021.md", "---\ntags: [hr]\ndate: 2021-02-01\n---\n# Password policy 2021\n\n"
           + PASSWORD.format(days=180, n=8) + "\n")
    _write(corpus / "notes.txt", "Password rotation notes: " + PASSWORD.format(days=60, n=10))
    report = components.ingest_job().run([corpus], progress=False)
    assert not report.failed and len(report.new) == 3
    return components


def test_every_chunk_carries_its_documents_facets(dated_kb):
    chunks = [c for c, _ in dated_kb.chunk_index.iter_chunks()]
    assert chunks and all(c.metadata.get("date_source") in {"front_matter", "mtime"} for c in chunks)
    by_doc = {c.doc_id.rsplit("/", 1)[-1]: c.metadata for c in chunks}
    assert by_doc["security-2023.md"]["tags"] == ["security"] and by_doc["security-2023.md"]["date"] == "2023-04-05"
    assert by_doc["notes.txt"] == {"language": "en", "doc_type": "text", "date": "2020-01-02", "date_source": "mtime"}
    assert dated_kb.chunk_index.facet_catalog() == FacetCatalog(
        frozenset({"markdown", "text"}), frozenset({"security", "hr"}), "2020-01-02", "2023-04-05", frozenset({"en"}))


@pytest.mark.parametrize("modes", [("dense",), ("bm25",), ("graph",), None])
def test_facet_filters_hold_on_every_path(dated_kb, modes):
    """Dense and BM25 filter in the store; the graph's hits are filtered by ``matches`` in the
    pipeline (the graph holds no chunk metadata): each keeps exactly its unfiltered documents
    that the filter allows."""
    # The graph reaches a page only through an entity the question links ("password").
    question = "What does the Password policy say about rotation?"
    unfiltered = {h.chunk.doc_id.rsplit("/", 1)[-1]
                  for h in dated_kb.retriever.retrieve(question, modes=modes, iterate=False).hits}
    assert unfiltered == ({"notes.txt"} if modes == ("graph",) else {"security-2023.md", "security-2021.md", "notes.txt"})
    cases = [
        ({"date_from": "2023-01-01", "date_to": "2023-12-31"}, {"security-2023.md"}),
        ({"tags": ["hr", "nothing"]}, {"security-2021.md"}),
        ({"doc_type": "text"}, {"notes.txt"}),
        ({"date_to": "2022-01-01", "language": "en"}, {"security-2021.md", "notes.txt"}),
        ({"language": "zh"}, set()),
    ]
    for raw, allowed in cases:
        hits = dated_kb.retriever.retrieve(question, modes=modes, filters=SearchFilter.parse(raw), iterate=False).hits
        got = {h.chunk.doc_id.rsplit("/", 1)[-1] for h in hits}
        assert got == unfiltered & allowed, (raw, got)


def test_a_knowledge_base_written_before_facets_keeps_working(tmp_path):
    """Same SQLite schema: chunks with no facets are unknown on every facet: no filter on a facet
    keeps them, the catalog is empty, no question constraint applies, nothing fails."""
    index = SqliteChunkIndex(tmp_path / "chunks.sqlite", dim=4)
    try:
        old = [Chunk(id=f"old#{i}", doc_id="old", text=f"password rotation {i}", ordinal=i) for i in range(3)]
        index.upsert(old, np.eye(3, 4, dtype=np.float32))
        assert index.facet_catalog() == FacetCatalog()
        assert len(index.search_bm25("password", 10)) == 3
        for raw in ({"language": "en"}, {"tags": "x"}, {"date_from": "1900-01-01"}, {"doc_type": "text"}):
            f = SearchFilter.parse(raw)
            assert index.search_bm25("password", 10, f) == [] and index.search_dense(np.ones(4), 10, f) == []
        assert len(index.search_bm25("password", 10, SearchFilter(doc_id="old"))) == 3
    finally:
        index.close()


# -- recency ---------------------------------------------------------------------------------------
def _hit(doc_id: str, date: str | None, score: float, rank: int) -> Hit:
    metadata = {} if date is None else {"date": date}
    return Hit(Chunk(id=f"{doc_id}#c0", doc_id=doc_id, text="t", metadata=metadata), score, fused_rank=rank)


def test_recency_boost_follows_its_formula():
    today = dt.date(2024, 6, 1)
    r = Recency(half_life_days=100, weight=0.5)
    assert boost(_hit("a", "2024-06-01", 1, 1), r, today) == pytest.approx(1.5)
    assert boost(_hit("a", "2024-02-22", 1, 1), r, today) == pytest.approx(1.25)  # 100 days old
    assert boost(_hit("a", "2030-01-01", 1, 1), r, today) == pytest.approx(1.5)  # future: age 0
    assert boost(_hit("a", None, 1, 1), r, today) == 1.0


def test_recency_reorders_otherwise_equal_hits_and_not_clear_winners():
    today = dt.date(2024, 6, 1)
    r = Recency(half_life_days=365)
    equal = prefer_recent([_hit("old", "2019-01-01", 0.02, 1), _hit("new", "2024-05-01", 0.02, 2)], r, today)
    assert [h.chunk.doc_id for h in equal] == ["new", "old"] and [h.fused_rank for h in equal] == [1, 2]
    clear = prefer_recent([_hit("old", "2019-01-01", 0.05, 1), _hit("new", "2024-05-01", 0.02, 2)], r, today)
    assert [h.chunk.doc_id for h in clear] == ["old", "new"]


def test_recency_on_the_pipeline_puts_the_newer_of_two_equal_documents_first(components, tmp_path):
    corpus = tmp_path / "twins.jsonl"
    text = "The cafeteria closes at 3 pm on Fridays during the summer months."
    corpus.write_text("\n".join(json.dumps(r) for r in [
        {"id": "twin-old", "title": "Cafeteria hours", "text": text, "date": "2015-06-01"},
        {"id": "twin-new", "title": "Cafeteria hours", "text": text, "date": "2024-05-01"},
    ]), encoding="utf-8")
    assert not components.ingest_job().run([corpus], progress=False).failed
    retriever = components.retriever
    retriever.today = lambda: dt.date(2024, 6, 1)
    question = "When does the cafeteria close on Fridays?"
    plain = retriever.retrieve(question, iterate=False, rerank=False).hits
    assert {h.chunk.doc_id for h in plain[:2]} == {"twin-old", "twin-new"}
    # Otherwise equal: same text, so only their places in each path's list (RRF 1/61 vs 1/62) differ.
    assert plain[1].score >= 0.95 * plain[0].score
    for _ in range(2):  # whichever the fused order put first, the newer one ends up first
        hits = retriever.retrieve(question, iterate=False, rerank=False, recency=Recency(half_life_days=365)).hits
        assert [h.chunk.doc_id for h in hits[:2]] == ["twin-new", "twin-old"]
        assert hits[0].score > hits[1].score
    components.settings.retrieval.recency_half_life_days = 365  # the setting switches it on for every request
    assert retriever.retrieve(question, iterate=False, rerank=False).hits[0].chunk.doc_id == "twin-new"
