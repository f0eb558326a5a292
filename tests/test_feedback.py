"""The feedback loop: POST /v1/feedback → stored beside the knowledge base → `kgrag feedback
export` → `kgrag eval` on the team's own questions; and `kgrag eval --compare`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kgrag.cli import main
from kgrag.ingest.loaders.base import content_hash
from kgrag.server.app import create_app
from kgrag.types import Document

NOTES = {
    "notes/heap": ("Binary heap", "# Binary heap\n\nA binary heap keeps the smallest key at its root; push and pop take O(log n) time."),
    "notes/trie": ("Trie", "# Trie\n\nA trie stores strings by their prefixes, one character per edge, so lookups take O(length) time."),
    "notes/lighthouse": ("Vormsi lighthouse", "# Vormsi lighthouse\n\nThe Vormsi lighthouse was built in 1871 and stands 24 metres tall on the island's western cape."),
}


@pytest.fixture
def notes_app(components):
    docs = [Document(id=i, source=i, title=title, text=text, hash=content_hash(title, text, "md"), format="md")
            for i, (title, text) in NOTES.items()]
    report = components.ingest_job().run_documents(docs)
    assert not report.failed and len(report.new) == 3
    return create_app(components.settings, components, warm=False).test_client()


def _chunk_of(components, doc_id: str) -> str:
    return next(c.id for c in components.chunk_index.get([f"{doc_id}#c0"]))


def _rate(client, question: str, rating: str, relevant: list[str] | None = None, comment: str = "") -> dict:
    answer = client.post("/v1/query", json={"question": question}).get_json()
    resp = client.post("/v1/feedback", json={
        "rating": rating, "question": question, "answer": answer["answer"], "comment": comment,
        "citations": answer["citations"], "relevant_chunks": relevant or [], "trace_id": answer["trace_id"]})
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()


@pytest.mark.parametrize(("body", "status", "mentions"), [
    ({"rating": "great", "question": "q"}, 400, "rating"),
    ({"rating": "helpful"}, 400, "question"),
    ({"rating": "helpful", "question": "q", "mood": "happy"}, 400, "mood"),
    ({"rating": "helpful", "question": "q", "trace_id": "has space"}, 400, "trace_id"),
    ({"rating": "helpful", "question": "q", "relevant_chunks": ["no-such-chunk"]}, 404, "no-such-chunk"),
    ({"rating": "helpful", "question": "q", "citations": [{"n": 1, "chunk_id": "nope#c9"}]}, 404, "nope#c9"),
])
def test_bad_feedback_is_refused_naming_the_field(notes_app, body, status, mentions):
    resp = notes_app.post("/v1/feedback", json=body)
    assert resp.status_code == status
    assert mentions in resp.get_json()["error"]["message"]


def test_feedback_export_then_eval_gives_the_expected_recall(notes_app, components, tmp_path):
    """Three rated questions with a right source: the heap and trie questions find theirs first;
    the third marks the lighthouse note as the right source for a heap question, which no
    retriever ranks first. So R@1 is exactly 2/3. A 'wrong' with no source marked is left out."""
    helpful = _rate(notes_app, "What does a binary heap keep at its root?", "helpful", comment="good")
    assert helpful["gold_ids"] == ["notes/heap"]  # nothing marked: the cited chunks count
    _rate(notes_app, "How does a trie store strings?", "missing_source", [_chunk_of(components, "notes/trie")])
    _rate(notes_app, "Which key sits at the root of a binary heap?", "wrong", [_chunk_of(components, "notes/lighthouse")])
    _rate(notes_app, "Who built the heap?", "wrong")
    data_dir = str(components.settings.data_dir)
    assert (components.settings.data_dir / "feedback.sqlite").is_file()

    runner = CliRunner()
    listed = runner.invoke(main, ["--data-dir", data_dir, "feedback", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["rating"] for r in rows] == ["helpful", "missing_source", "wrong", "wrong"]
    assert all(r["trace_id"] and r["citations"] is not None for r in rows)

    out = tmp_path / "fb-set"
    exported = runner.invoke(main, ["--data-dir", data_dir, "feedback", "export", str(out)])
    assert exported.exit_code == 0, exported.output
    assert "left out 1 rating" in exported.stderr
    records = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    assert [r["gold_ids"] for r in records] == [["notes/heap"], ["notes/trie"], ["notes/lighthouse"]]
    assert set(records[0]) == {"id", "question", "answers", "gold_ids", "meta"}
    assert records[1]["meta"]["gold_chunk_ids"] == [_chunk_of(components, "notes/trie")]

    report = tmp_path / "eval.json"
    result = runner.invoke(main, ["--data-dir", data_dir, "eval", "--queries", str(out / "queries.jsonl"),
                                  "--modes", "bm25+dense+graph", "--ks", "1,2", "--json", str(report)])
    assert result.exit_code == 0, result.output
    summary = json.loads(report.read_text())["modes"][0]
    assert summary["recall"]["1"] == pytest.approx(2 / 3)
    assert summary["recall"]["2"] >= summary["recall"]["1"]


def test_export_without_feedback_says_so(components, tmp_path):
    result = CliRunner().invoke(main, ["--data-dir", str(components.settings.data_dir), "feedback", "export", str(tmp_path)])
    assert result.exit_code == 1 and "no feedback stored yet" in result.output


def test_paired_bootstrap_interval():
    from kgrag.eval.compare import paired_bootstrap

    same = paired_bootstrap([0.5, 1, 0, 1], [0.5, 1, 0, 1])
    assert same == (0.0, 0.0, 0.0)
    diff, low, high = paired_bootstrap([0.0] * 30, [1.0] * 20 + [0.0] * 10, resamples=1000)
    assert diff == pytest.approx(2 / 3) and 0.4 < low < diff < high < 0.9
    # Paired: a constant shift has no spread at all, however different the questions are.
    assert paired_bootstrap([0.1, 0.9, 0.4], [0.2, 1.0, 0.5])[1:] == pytest.approx((0.1, 0.1))


@pytest.mark.slow
def test_compare_two_settings_files_reports_differences_with_intervals(tmp_path):
    """40 HotpotQA questions over their gold passages plus distractors; B keeps 1 candidate
    per path (at most 3 chunks fused), so its recall@10 must fall, with an interval below 0."""
    from tests.conftest import BENCH, bench_path, write_jsonl

    queries = [json.loads(line) for line in bench_path("hotpotqa_dev500", "queries.jsonl").read_text().splitlines()[:40]]
    wanted = {g for q in queries for g in q["gold_ids"]}
    corpus = []
    with (BENCH / "hotpotqa_dev500" / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["id"] in wanted or len(corpus) < len(wanted) + 30:
                corpus.append(record)
    assert wanted <= {r["id"] for r in corpus}
    write_jsonl(tmp_path / "corpus.jsonl", corpus)
    write_jsonl(tmp_path / "queries.jsonl", queries)
    (tmp_path / "a.toml").write_text("[retrieval]\ncandidates = 50\n")
    (tmp_path / "b.toml").write_text("[retrieval]\ncandidates = 1\n")
    out = tmp_path / "compare.json"
    result = CliRunner().invoke(main, [
        "--data-dir", str(tmp_path / "data"), "eval", "--corpus", str(tmp_path / "corpus.jsonl"),
        "--queries", str(tmp_path / "queries.jsonl"), "--compare", str(tmp_path / "a.toml"), str(tmp_path / "b.toml"),
        "--resamples", "1000", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "| R@10 |" in result.stdout and "95% CI" in result.stdout
    modes = json.loads(out.read_text())["modes"]
    assert list(modes) == ["bm25+dense+graph+iter"]  # the served mode by default: what /v1/query runs
    rows = {d["metric"]: d for d in modes["bm25+dense+graph+iter"]}
    assert set(rows) == {"R@1", "R@2", "R@5", "R@10", "AllGold@5", "NDCG@10", "MRR"}
    for d in rows.values():
        assert d["low"] <= d["diff"] <= d["high"] and d["diff"] == pytest.approx(d["b"] - d["a"])
    assert rows["R@10"]["diff"] < 0 and rows["R@10"]["high"] < 0 and rows["R@10"]["excludes_zero"]


def test_the_small_stores_open_like_the_embedded_ones(tmp_path):
    """Feedback and conversations open through kgrag.stores.sqlite.db: an old unmarked file is
    adopted with its rows, a file of another kind is refused naming both kinds, and a damaged
    file is named as damaged with the way out."""
    import sqlite3

    from kgrag.conversations import ConversationStore
    from kgrag.errors import StoreDamaged, StoreError
    from kgrag.feedback.store import Feedback, FeedbackStore

    old = sqlite3.connect(tmp_path / "feedback.sqlite")  # written before the store was stamped
    old.executescript("CREATE TABLE feedback (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, rating TEXT NOT NULL, "
                      "comment TEXT NOT NULL DEFAULT '', question TEXT NOT NULL, answer TEXT NOT NULL DEFAULT '', "
                      "citations TEXT NOT NULL DEFAULT '[]', relevant TEXT NOT NULL DEFAULT '[]', trace_id TEXT);"
                      "INSERT INTO feedback (id, created_at, rating, question) VALUES ('f1', '2026-01-01', 'wrong', 'q?');")
    old.commit()
    old.close()
    store = FeedbackStore(tmp_path)
    store.add(Feedback(rating="helpful", question="Who?"))
    assert [(f.id, f.rating) for f in store.list()][0] == ("f1", "wrong") and len(store.list()) == 2
    store.close()

    other = tmp_path / "other"
    other.mkdir()
    (tmp_path / "feedback.sqlite").rename(other / "conversations.sqlite")  # a feedback file where turns belong
    with pytest.raises(StoreError, match="expected a kgrag conversation store file, found kgrag feedback store"):
        ConversationStore(other, ttl_s=60, max_turns=5)

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "feedback.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreDamaged, match="feedback.sqlite"):
        FeedbackStore(damaged)
