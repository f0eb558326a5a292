"""The evaluation harness: metric functions on hand-computed cases, the runner on a tiny set
whose BM25 outcome is fixed by construction, the knowledge-base reuse rules, and the CLI end to
end on the shared ``hipporag_sample`` set (one subprocess: it loads its own models)."""

from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from kgrag.eval import metrics as m
from kgrag.eval.answers import answer_contains, answer_exact, answer_leads, check_citations, normalize_answer
from kgrag.eval.data import EvalDataError, check_gold_in_corpus, load_corpus, load_queries
from kgrag.eval.kb import MANIFEST, KnowledgeBaseError, default_kb_dir, reset_kb_dir
from kgrag.eval.provenance import code_version
from kgrag.eval.runner import EvalConfigError, parse_modes, run_eval
from kgrag.generate.types import Answer, Citation
from kgrag.retrieve.types import Hit
from kgrag.types import Chunk, Turn
from tests.conftest import bench_path, write_jsonl

LOG2_3 = math.log2(3)


# -- metrics ------------------------------------------------------------------------------------
def test_recall_all_gold_ndcg_mrr_with_duplicates():
    # Distinct ranking: a b c d; gold {a, c} (the duplicate "a" in gold counts once).
    ranked, gold = ["a", "b", "a", "c", "d"], ["c", "a", "a"]
    assert m.distinct(ranked) == ["a", "b", "c", "d"]
    assert m.recall_at_k(ranked, gold, 1) == 0.5
    assert m.recall_at_k(ranked, gold, 2) == 0.5
    assert m.recall_at_k(ranked, gold, 3) == 1.0  # "c" is third among distinct ids, not fourth
    assert m.all_gold_at_k(ranked, gold, 2) == 0.0
    assert m.all_gold_at_k(ranked, gold, 3) == 1.0
    # DCG = 1/log2(2) + 1/log2(4) = 1.5; ideal = 1 + 1/log2(3).
    assert m.ndcg_at_k(ranked, gold, 10) == pytest.approx(1.5 / (1 + 1 / LOG2_3))
    assert m.ndcg_at_k(ranked, gold, 1) == pytest.approx(1.0)  # ideal@1 is one gold at rank 1
    assert m.reciprocal_rank(ranked, gold) == 1.0
    assert m.gold_ranks(ranked, gold) == {"c": 3, "a": 1}


def test_mrr_counts_first_gold_over_distinct_ids():
    # The repeated "x" (three chunks of one passage) occupies one rank, so gold "g" is second.
    assert m.reciprocal_rank(["x", "x", "x", "g"], ["g"]) == 0.5
    assert m.recall_at_k(["x", "x", "x", "g"], ["g"], 2) == 1.0
    # Two gold passages: the first one found decides (rank 2), not the better-listed gold.
    assert m.reciprocal_rank(["x", "g2", "g1"], ["g1", "g2"]) == 0.5
    assert m.ndcg_at_k(["x", "g2", "g1"], ["g1", "g2"], 10) == pytest.approx(
        (1 / LOG2_3 + 1 / 2) / (1 + 1 / LOG2_3))


def test_missing_gold_scores_zero_and_empty_gold_is_refused():
    assert m.recall_at_k(["x", "y"], ["z"], 10) == 0.0
    assert m.ndcg_at_k(["x", "y"], ["z"], 10) == 0.0
    assert m.reciprocal_rank([], ["z"]) == 0.0
    assert m.gold_ranks(["x"], ["z"]) == {"z": None}
    with pytest.raises(ValueError, match="at least one gold"):
        m.recall_at_k(["x"], [], 5)
    with pytest.raises(ValueError, match="k must be at least 1"):
        m.ndcg_at_k(["x"], ["x"], 0)


def test_percentiles_interpolate():
    assert m.percentiles([4, 1, 3, 2]) == {"p50": 2.5, "p95": 3.85}
    assert all(math.isnan(v) for v in m.percentiles([]).values())


def test_answer_normalisation():
    assert normalize_answer("The  Beatles!") == "beatles"
    assert answer_exact("the Beatles.", ["Beatles"])
    assert answer_contains("It was the Eiffel Tower, in Paris.", ["eiffel tower"])
    assert not answer_contains("19550 people", ["1955"])  # whole words only
    assert answer_contains("报告新增确诊病例189例。", ["189"])  # no space between Chinese and a number
    assert answer_contains("最大的模型突破了50%的大关", ["50%"]) and answer_contains("在ABC公司", ["abc"])
    assert not answer_contains("报告新增确诊病例1890例。", ["189"])
    assert answer_contains("ＡＢＣ Corp", ["abc corp"])  # NFKC: full-width letters
    # CJK: whitespace and punctuation ignored, full-width hyphen folded by NFKC.
    assert answer_contains("《战国无双3》由光荣和ω－force合作开发。", ["光荣和ω-force"])
    assert not answer_contains("anything at all", ["The"])  # a gold of only an article matches nothing
    assert not answer_contains("The film", ["The"])
    # A gold normalization would empty (a Slack prefix) is compared as written, as a whole token.
    assert answer_contains("These channels (prefixed with a `a_`) are for accounts.", ["a_"])
    assert not answer_contains("a channel prefixed with `b_`", ["a_"]) and answer_exact("a_", ["A_"])
    assert not answer_exact("Paris, France", ["Paris"])


def test_the_first_sentence_is_what_an_answer_leads_with():
    """Quoting both options of a which-of-two question contains either gold; only the one the
    first sentence names leads."""
    both = "Everyday is a 2012 British drama film [2]. Seven Sinners is a 1936 British thriller film [1]."
    assert answer_contains(both, ["Seven Sinners"]) and not answer_leads(both, ["Seven Sinners"])
    chosen = "Seven Sinners — 1936 [1]. Everyday — 2012 [2]. Seven Sinners is a 1936 British thriller film [1]."
    assert answer_leads(chosen, ["Seven Sinners"]) and not answer_leads(chosen, ["Everyday"])
    assert answer_leads("最近公共祖先是深度最大的公共祖先[1]。其余略[2]。", ["深度最大"])
    assert not answer_leads("", ["anything"])


def _hit(cid: str, doc: str, text: str) -> Hit:
    return Hit(Chunk(id=cid, doc_id=doc, text=text, title=doc), 1.0)


def _citation(n: int, chunk_id: str, doc_id: str) -> Citation:
    return Citation(n, chunk_id, doc_id, "", doc_id, None, "", "")


def test_citation_checks():
    hits = [_hit("c1", "d1", "Paris is the capital of France."),
            _hit("c2", "d2", "Berlin is the capital of Germany.")]
    text = ("Paris is the capital of France [1]. Berlin is the capital of Germany [1]. "
            "Rome is the capital of Italy [3].")
    answer = Answer(text, [_citation(1, "c1", "d1"), _citation(3, "c9", "d9")], False, "llm")
    checks = {c.n: c for c in check_citations(answer, hits, gold_ids=["d1"])}
    assert (checks[1].retrieved, checks[1].supported, checks[1].gold) == (True, True, True)
    assert (checks[3].retrieved, checks[3].precise, checks[3].gold) == (False, False, False)
    # A citation whose chunk is retrieved but shares nothing with the sentence citing it.
    answer = Answer("Rome is the capital of Italy [2].", [_citation(2, "c2", "d2")], False, "llm")
    (check,) = check_citations(answer, hits, gold_ids=["d1"])
    assert check.retrieved and not check.supported


# -- data -----------------------------------------------------------------------------------------
def test_query_file_errors_name_the_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "question": "x?", "gold_ids": ["1"]}\n{"id": "b", "question": "y?"}\n')
    with pytest.raises(EvalDataError, match=r"line 2: field 'gold_ids'"):
        load_queries(path)
    assert [q.id for q in load_queries(path, limit=1)] == ["a"]
    path.write_text('{"id": "a", "question": "x?", "gold_ids": ["1"]}\n{"id": "a", "question": "y?", "gold_ids": [2]}\n')
    with pytest.raises(EvalDataError, match="line 2: query id 'a' already used on line 1"):
        load_queries(path)
    path.write_text('{"id": "a", "question": "x?", "gold_ids": ["1"]}\nnot json\n')
    with pytest.raises(EvalDataError, match="line 2: not valid JSON"):
        load_queries(path)


def test_gold_ids_must_be_corpus_ids(tmp_path):
    corpus = load_corpus(write_jsonl(tmp_path / "corpus.jsonl", [{"id": 7, "title": "T", "text": "x"}]))
    assert corpus.titles == {"7": "T"}  # integer ids become the document ids ingestion uses
    queries = load_queries(write_jsonl(tmp_path / "q.jsonl", [{"id": "q", "question": "x?", "gold_ids": [7, "8"]}]))
    with pytest.raises(EvalDataError, match=r"1 gold id\(s\) are not ids of corpus .*'8' \(query 'q'\)"):
        check_gold_in_corpus(queries, corpus)


def test_parse_modes():
    names = [mode.name for mode in parse_modes(None, reranker=False)]
    assert names == ["bm25", "dense", "graph", "bm25+dense", "bm25+dense+graph"]
    assert [mode.name for mode in parse_modes(None, reranker=True)][-1] == "bm25+dense+graph+rerank"
    (mode,) = parse_modes("Dense+BM25+dense", reranker=False)
    assert (mode.name, mode.paths, mode.rerank) == ("dense+bm25", ("dense", "bm25"), False)
    with pytest.raises(EvalConfigError, match="unknown path"):
        parse_modes("bm25+sparse", reranker=False)
    with pytest.raises(EvalConfigError, match="needs a reranker"):
        parse_modes("bm25+rerank", reranker=False)


def test_the_served_mode_is_named_by_what_the_server_runs():
    """``--modes served`` is what /v1/query runs: iteration when retrieval.iterate is on (the
    default), the reranker when one is configured; plain "bm25+dense+graph" never iterates."""
    from kgrag.config import RetrievalSettings

    assert RetrievalSettings().iterate  # the default the served mode follows
    served = lambda **kw: [m.name for m in parse_modes("served", **kw)]  # noqa: E731
    assert served(reranker=False, iterate=True) == ["bm25+dense+graph+iter"]
    assert served(reranker=True, iterate=True) == ["bm25+dense+graph+rerank+iter"]
    assert served(reranker=False, iterate=False) == ["bm25+dense+graph"]
    (plain,) = parse_modes("bm25+dense+graph", reranker=False, iterate=True)
    assert plain.iterate is None
    (mode,) = parse_modes("served", reranker=False, iterate=True)
    assert mode.iterate == "entities" and mode.paths == ("bm25", "dense", "graph")


# -- the runner on a tiny set ---------------------------------------------------------------------
def _lantern_text() -> str:
    # Long enough for several chunks; every paragraph names the quorvex so BM25 finds several
    # chunks of this one passage (it must count once).
    paragraphs = [
        f"Paragraph {i}: the quorvex of the old tower burns with a pale flame. Keepers trimmed its wick "
        f"every evening and wrote the hours in a ledger, one entry per night, for {i + 3} generations. "
        "Travellers saw the light from far across the valley and turned their carts towards it."
        for i in range(12)
    ]
    return "\n\n".join(paragraphs)


TINY_CORPUS = [
    {"id": "t-lantern", "title": "Tower Light", "text": _lantern_text()},
    {"id": "t-brim", "title": "Brimhollow",
     "text": "Brimhollow is a village where the zentharp festival is held each spring."},
    {"id": "t-mirelda", "title": "Mirelda Osk",
     "text": "Mirelda Osk is a sculptor who carved stone figures for many gardens."},
    {"id": "t-orchard", "title": "Plumtide",
     "text": "Plumtide is an orchard on a hill, planted with pear trees."},
    {"id": "t-harbor", "title": "Selk Harbor",
     "text": "Selk Harbor shelters fishing boats during winter storms."},
]
# BM25 only ranks passages sharing a query term, and every term below is in one passage only:
# q1 finds its gold first; q2 finds one of two golds (the other shares no term); q3 finds a
# passage that is not its gold.
TINY_QUERIES = [
    {"id": "q1", "question": "Which quorvex?", "answers": ["pale flame"], "gold_ids": ["t-lantern"],
     "meta": {"type": "single"}},
    {"id": "q2", "question": "zentharp brimhollow?", "answers": ["Mirelda Osk"], "gold_ids": ["t-brim", "t-mirelda"],
     "meta": {"type": "bridge"}},
    {"id": "q3", "question": "plumtide?", "answers": ["Selk"], "gold_ids": ["t-harbor"], "meta": {"type": "bridge"}},
]


@pytest.fixture
def tiny_set(tmp_path):
    return write_jsonl(tmp_path / "corpus.jsonl", TINY_CORPUS), write_jsonl(tmp_path / "queries.jsonl", TINY_QUERIES)


def test_tiny_set_bm25_metrics_match_hand_computation(components, tiny_set):
    corpus, queries = tiny_set
    report = run_eval(components, corpus, queries, modes="bm25,dense,bm25+dense+graph", answers=True)
    bm25 = report.mode("bm25")
    # q1: 1 at every k; q2: 1/2 at every k; q3: 0.
    assert bm25.recall == {"1": 0.5, "2": 0.5, "5": 0.5, "10": 0.5}
    assert bm25.all_gold_at_5 == pytest.approx(1 / 3)
    assert bm25.ndcg_at_10 == pytest.approx((1 + 1 / (1 + 1 / LOG2_3) + 0) / 3)
    assert bm25.mrr == pytest.approx(2 / 3)
    rows = {r["id"]: r["modes"]["bm25"] for r in report.per_query}
    assert rows["q1"]["ranked"] == ["t-lantern"] and rows["q1"]["chunks"] >= 2  # chunks -> one passage
    assert rows["q2"]["gold_ranks"] == {"t-brim": 1, "t-mirelda": None}
    assert rows["q2"]["missed"]["10"] == ["t-mirelda"]
    assert rows["q3"]["ranked"] == ["t-orchard"] and rows["q3"]["rr"] == 0.0
    assert report.ingest.reused is False and report.ingest.documents == 5

    # Dense ranks every passage of a 5-passage corpus: all gold lies in the top 5.
    dense = report.mode("dense")
    assert dense.recall["5"] == dense.all_gold_at_5 == 1.0
    for mode in report.modes:  # every summary is the mean of its per-query values
        rows = [r["modes"][mode.mode] for r in report.per_query]
        assert mode.mrr == pytest.approx(sum(r["rr"] for r in rows) / 3)
        for r in rows:
            first = min((rank for rank in r["gold_ranks"].values() if rank), default=None)
            assert r["rr"] == (1 / first if first else 0.0)
        assert {"total", "fusion"} <= set(mode.latency_ms)
        assert mode.foreign_hits == 0
    assert "dense" in report.mode("bm25+dense+graph").latency_ms

    # The extractive answerer quotes retrieved sentences: every citation is precise.
    assert report.answers is not None and report.answers.mode == "bm25+dense+graph"
    assert report.answers.citations >= 1 and report.answers.citation_precision == 1.0
    for r in report.per_query:
        assert r["answer"]["contains"] == (not r["answer"]["abstained"] and answer_contains(r["answer"]["text"], r["answers"]))
        assert r["answer"]["leads"] == (not r["answer"]["abstained"] and answer_leads(r["answer"]["text"], r["answers"]))
        assert r["answer"]["leads"] <= r["answer"]["contains"]
    assert report.answers.leads == pytest.approx(sum(r["answer"]["leads"] for r in report.per_query) / 3)

    md = report.markdown()
    assert "| bm25 | 50.0 | 50.0 | 50.0 | 50.0 | 33.3 |" in md
    # R@5 per question type: single (q1) 1; bridge (q2 1/2, q3 0) 1/4.
    assert "| mode | R@5 all | single (1) | bridge (2) | AllGold@5 |" in md
    assert "| bm25 | 50.0 | 100.0 | 25.0 | 33.3 |" in md
    assert [r["type"] for r in report.per_query] == ["single", "bridge", "bridge"]
    data = json.loads(json.dumps(report.to_dict()))  # JSON-clean (no NaN)
    assert data["titles"]["t-mirelda"] == "Mirelda Osk"
    # What measured it (kgrag eval report prints it beside every table); never a secret.
    assert data["provenance"]["commit"] == code_version()
    assert dt.datetime.fromisoformat(data["provenance"]["date"]).tzinfo is not None
    assert data["provenance"]["settings"]["ingest"]["chunking"]["child_size"] == components.settings.chunking.child_size
    assert not {"api_key", "api_base"} & set(data["provenance"]["settings"]["llm"])
    assert "Measured by kgrag" in md


def test_second_run_reuses_the_knowledge_base(components, tiny_set, embedder, recognizer):
    from kgrag.components import Components

    corpus, queries = tiny_set
    first = run_eval(components, corpus, queries, modes="bm25")
    manifest = (components.settings.data_dir / MANIFEST).read_text()
    assert first.ingest.reused is False and first.ingest.seconds > 0

    # A tuning variant: other retrieval settings, same base, no re-ingestion.
    retrieval = components.settings.retrieval.model_copy(update={"weights": {"dense": 2.0, "bm25": 1.0, "graph": 0.5}})
    variant = Components(components.settings.model_copy(update={"retrieval": retrieval}),
                         embedder=embedder, recognizer=recognizer)
    try:
        second = run_eval(variant, corpus, queries, modes="bm25,bm25+dense")
    finally:
        variant.close()
    assert second.ingest.reused is True and second.ingest.seconds is None
    assert second.ingest.built_seconds == first.ingest.built_seconds
    assert (components.settings.data_dir / MANIFEST).read_text() == manifest  # untouched
    assert second.mode("bm25").recall == first.mode("bm25").recall
    assert second.retrieval_settings["weights"]["dense"] == 2.0
    assert "reused (built in" in second.markdown()


def test_changed_ingestion_settings_are_refused(components, tiny_set, embedder, recognizer, tmp_path):
    from kgrag.components import Components

    corpus, queries = tiny_set
    run_eval(components, corpus, queries, modes="bm25", limit=1)
    chunking = components.settings.chunking.model_copy(update={"child_size": 400})
    other = components.settings.model_copy(update={"chunking": chunking})
    assert default_kb_dir(other, load_corpus(corpus)) != default_kb_dir(components.settings, load_corpus(corpus))
    changed = Components(other, embedder=embedder, recognizer=recognizer)
    try:
        with pytest.raises(KnowledgeBaseError, match="setting chunking: built with"):
            run_eval(changed, corpus, queries, modes="bm25", limit=1)
    finally:
        changed.close()
    # A directory holding documents but no manifest is somebody's knowledge base, not ours.
    (components.settings.data_dir / MANIFEST).unlink()
    with pytest.raises(KnowledgeBaseError, match="no eval-manifest.json"):
        run_eval(components, corpus, queries, modes="bm25", limit=1)
    with pytest.raises(KnowledgeBaseError, match="not an eval knowledge base"):
        reset_kb_dir(components.settings.data_dir, components.settings)


# -- the command line, end to end -----------------------------------------------------------------
@pytest.mark.slow
def test_cli_on_hipporag_sample(tmp_path):
    corpus, queries = bench_path("hipporag_sample", "corpus.jsonl"), bench_path("hipporag_sample", "queries.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    cmd = [sys.executable, "-m", "kgrag.cli", "--data-dir", str(tmp_path / "data"), "eval",
           "--corpus", str(corpus), "--queries", str(queries), "--modes", "bm25,dense,bm25+dense+graph",
           "--json", str(out / "r.json"), "--markdown", str(out / "r.md"), "--chart", str(out / "r.png"),
           "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0, proc.stderr
    assert "| mode | R@1 | R@2 | R@5 | R@10 | AllGold@5 | NDCG@10 | MRR |" in proc.stdout
    assert (out / "r.md").read_text() in proc.stdout + "\n"
    assert (out / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((out / "r.json").read_text())
    assert report["queries"] == 1 and report["ingest"]["documents"] == 3
    assert Path(report["ingest"]["kb_dir"]).parent == tmp_path / "data" / "eval"
    (q,) = report["per_query"]
    assert q["gold_ids"] == ["sample-0"]
    for summary in report["modes"]:
        row = q["modes"][summary["mode"]]
        rank = row["gold_ranks"]["sample-0"]
        # By hand from the gold passage's rank r (one gold): R@k = [r <= k], MRR = 1/r,
        # NDCG@10 = 1/log2(r + 1).
        assert summary["recall"] == {str(k): float(rank <= k) for k in (1, 2, 5, 10)}
        assert summary["mrr"] == pytest.approx(1 / rank)
        assert summary["ndcg_at_10"] == pytest.approx(1 / math.log2(rank + 1))
    # Dense ranks all three passages: the gold is within the top 5 whatever the order.
    assert report["modes"][1]["recall"]["5"] == 1.0 and q["modes"]["dense"]["passages"] == 3


def test_follow_ups_are_asked_after_their_context_unless_history_is_off(components, tiny_set, tmp_path):
    corpus, _ = tiny_set
    queries = write_jsonl(tmp_path / "followups.jsonl", [
        {"id": "f1", "question": "And what about it?", "gold_ids": ["t-brim"],
         "meta": {"context": "Which village holds the zentharp festival?", "category": "follow-up"}},
        {"id": "f2", "question": "And the sculptor?", "gold_ids": ["t-mirelda"],
         "meta": {"context": [{"question": "Who carved stone figures?", "answer": "Mirelda Osk"}],
                  "category": "follow-up"}},
        {"id": "s1", "question": "Which quorvex?", "gold_ids": ["t-lantern"], "meta": {"category": "single"}},
    ])
    assert [len(q.history) for q in load_queries(queries)] == [1, 1, 0]
    with_history = run_eval(components, corpus, queries, modes="bm25")
    assert with_history.mode("bm25").recall["1"] == 1.0
    assert "| bm25 | 100.0 | 100.0 |" in with_history.markdown()  # R@5 per category: follow-up, single
    alone = run_eval(components, corpus, queries, modes="bm25", history=False)
    assert alone.mode("bm25").recall["1"] < 1.0  # "And what about it?" names nothing to search for
    assert "| follow-up (2) | single (1) |" in alone.markdown()


def test_bad_meta_context_names_the_line(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "question": "x?", "gold_ids": ["1"], "meta": {"context": [5]}}])
    with pytest.raises(EvalDataError, match=r"line 1: meta.context must be a question string"):
        load_queries(path)
    cited = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "question": "x?", "gold_ids": ["1"], "meta": {
        "context": [{"question": "y?", "cited_chunk_ids": "doc#c0"}]}}])
    with pytest.raises(EvalDataError, match=r"line 1: meta.context cited_chunk_ids must be a list of chunk ids"):
        load_queries(cited)


def test_a_context_turn_may_name_the_chunks_its_answer_cited(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "question": "And the next one?", "gold_ids": ["1"], "meta": {
        "context": [{"question": "Which prefix?", "answer": "`wg_`", "cited_chunk_ids": ["doc#c2", "doc#c3"]}]}}])
    (q,) = load_queries(path)
    assert q.history == (Turn("Which prefix?", "`wg_`", ("doc#c2", "doc#c3")),)


def test_negative_rejection_takes_the_gold_passages_out_of_the_hits(components, tiny_set):
    """--negatives: each question judged again with its gold passages out of its hits. Without
    the lantern passage nothing retrieved says "quorvex": the gate abstains there, and not with
    the gold present."""
    corpus, queries = tiny_set
    report = run_eval(components, corpus, queries, modes="bm25+dense+graph", answers=True, negatives=True, limit=1)
    record = report.per_query[0]
    assert record["modes"]["bm25+dense+graph"]["gate"]["abstain"] is False
    negative = record["negative"]
    assert negative["gate"]["abstain"] is True and negative["answer"]["abstained"] is True
    assert report.negatives is not None
    assert (report.negatives.gate_present, report.negatives.gate_removed) == (0.0, 1.0)
    assert (report.negatives.answer_present, report.negatives.answer_removed) == (0.0, 1.0)
    md = report.markdown()
    assert "| gate | 0.0 | 100.0 |" in md and "Negative rejection" in md


def test_answers_count_from_the_day_each_question_is_asked(tmp_path, embedder, recognizer):
    """``meta.reference_time`` is when a question is asked ("the current quarter", "last month"):
    the answer prompt says that day, not the day the evaluation runs; a question without one
    gets today (UTC). The prompt goes out through litellm to a stand-in OpenAI server."""
    import datetime as dt

    from kgrag.components import Components
    from kgrag.config import Settings
    from tests.chat_server import chat_server

    corpus = write_jsonl(tmp_path / "corpus.jsonl", [
        {"id": "fy", "title": "Fiscal year", "text": "The fiscal year begins on February 1. Each fiscal quarter "
                                                     "is three months: the current one began on the first day of "
                                                     "November, August, May or February."},
        {"id": "x", "title": "Other", "text": "The cafeteria opens at eight."}])
    queries = write_jsonl(tmp_path / "queries.jsonl", [
        {"id": "t", "question": "When did the current fiscal quarter begin?", "answers": ["2025-11-01"],
         "gold_ids": ["fy"], "meta": {"reference_time": "2025-11-11T11:11:11 (Tuesday)"}},
        {"id": "u", "question": "When does the fiscal year begin?", "answers": ["February 1"], "gold_ids": ["fy"]}])
    assert [q.day for q in load_queries(queries)] == [dt.date(2025, 11, 11), None]
    with chat_server(lambda body: "It began on November 1 [1].") as server:
        comps = Components(Settings(data_dir=tmp_path / "kb", llm=server.settings()), embedder=embedder,
                           recognizer=recognizer)
        try:
            report = run_eval(comps, corpus, queries, modes="bm25", answers=True)
        finally:
            comps.close()
        asked = [body["messages"][-1]["content"] for body in server.requests]
    assert [r["answer"]["mode"] for r in report.per_query] == ["llm", "llm"]
    answering = [c for c in asked if "Question: " in c and "Today is " in c]  # not a query rewrite
    first = [c for c in answering if "Question: When did the current fiscal quarter begin?" in c]
    second = [c for c in answering if "Question: When does the fiscal year begin?" in c]
    assert len(first) == len(second) == 1, asked
    assert "Today is 2025-11-11 (Tuesday)." in first[0]
    assert f"Today is {dt.datetime.now(dt.UTC).date().isoformat()}" in second[0]


def test_a_reference_time_that_is_no_date_names_the_line(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "question": "x?", "gold_ids": ["1"],
                                              "meta": {"reference_time": "last Tuesday"}}])
    with pytest.raises(EvalDataError, match=r"line 1: meta.reference_time must start with a date"):
        load_queries(path)


def test_same_tells_whether_two_runs_behaved_alike_question_by_question(components, tiny_set, tmp_path):
    """`kgrag eval same A.json B.json`: the check a refactoring is held to. The same run twice is
    the same (exit 0); a run whose second question ranked and answered otherwise is named (exit 1)."""
    from click.testing import CliRunner

    from kgrag.cli import main

    corpus, queries = tiny_set
    report = run_eval(components, corpus, queries, modes="bm25", answers=True, negatives=True)
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    report.write_json(first)
    report.write_json(second)
    result = CliRunner().invoke(main, ["eval", "same", str(first), str(second)])
    n = len(report.per_query)
    assert result.exit_code == 0, result.output
    assert f"| bm25 | {n} | {n}/{n} | {n}/{n} | {n}/{n} |" in result.stdout

    data = json.loads(second.read_text())
    changed = data["per_query"][1]
    changed["modes"]["bm25"]["ranked"] = list(reversed(changed["modes"]["bm25"]["ranked"])) + ["elsewhere"]
    changed["answer"]["text"] = "Something else [1]."
    second.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["eval", "same", str(first), str(second)])
    assert result.exit_code == 1
    assert f"| bm25 | {n} | {n - 1}/{n} | {n - 1}/{n} | {n}/{n} |" in result.stdout
    assert f"differs: {changed['id']}" in result.stderr
def test_off_topic_questions_are_scored_by_abstention_alone(components, tiny_set, tmp_path):
    """--off-topic: another set's questions asked of this knowledge base, which answers none of
    them; only abstention is reported. A question whose gold passage is in this corpus is no
    off-topic question and is refused."""
    corpus, _ = tiny_set
    foreign = write_jsonl(tmp_path / "foreign.jsonl", [
        {"id": "o1", "question": "What is the boiling point of water at sea level?", "answers": ["100 °C"],
         "gold_ids": ["other-1"]},
        {"id": "o2", "question": "How do I reset my VPN password?", "answers": ["self-service"], "gold_ids": ["other-2"]},
        {"id": "o3", "question": "^", "answers": ["x"], "gold_ids": ["other-3"]},
    ])
    report = run_eval(components, corpus, foreign, modes="bm25+dense+graph", answers=True, off_topic=True)
    assert report.off_topic is not None and report.negatives is None and report.off_topic.queries == 3
    assert report.off_topic.gate_abstained == 1.0 and report.off_topic.answer_abstained == 1.0
    assert report.off_topic.reasons["the question names nothing to look for"] == 1
    md = report.markdown()
    assert "Off-topic questions" in md and "| gate | 100.0 |" in md and "R@1" not in md
    with pytest.raises(EvalDataError, match="off-topic questions must come from another set"):
        run_eval(components, corpus, write_jsonl(tmp_path / "own.jsonl", TINY_QUERIES[:1]), modes="bm25", off_topic=True)
    with pytest.raises(EvalConfigError, match="drop --negatives"):
        run_eval(components, corpus, foreign, modes="bm25", off_topic=True, negatives=True)
