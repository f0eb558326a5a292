"""A follow-up that asks for a neighbour by position, answered from what the last turn cited
(kgrag.retrieve.cited_neighbour): the rule, then the real pipeline (embedded stores, MiniLM, spaCy) on a
hand-made page of Slack channel categories, one section each, the third spanning two chunks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kgrag.retrieve.cited_neighbour import NEIGHBOUR
from kgrag.retrieve.followup import asked_direction, complete
from kgrag.retrieve.trace import result_dict
from kgrag.types import Turn
from tests.conftest import ingested_kb

PAGE = Path(__file__).parent / "fixtures" / "positions" / "slack-channels.md"
DOC = "slack-channels.md"  # its id: the path relative to the folder ingested
GROUP, WORKING, FEATURE, FEATURE_2, EXTERNAL = (f"{DOC}#c{i}" for i in (1, 2, 3, 4, 5))


@pytest.mark.parametrize(("question", "direction"), [
    ("And for the next one?", "after"), ("And the one after that?", "after"),
    ("What about the following category?", "after"), ("And for the next level down?", "after"),
    ("What about the level above that?", "before"), ("And the previous one?", "before"),
    ("And the one before that?", "before"), ("下一个呢？", "after"), ("上一个呢？", "before"),
    ("And the last one?", None),
])
def test_the_direction_a_positional_follow_up_points(question, direction):
    assert asked_direction(question) == direction


def test_only_a_positional_follow_up_after_a_citing_turn_has_an_anchor():
    cited = Turn("Which prefix do working group channels carry?", "`wg_` [1]", (WORKING, GROUP))
    positional = complete("And the next one?", [cited], [])
    assert positional.anchor == (WORKING, GROUP) and positional.direction == "after"
    assert complete("And what is it for?", [cited], []).anchor == ()  # a follow-up, not by position
    assert complete("And the next one?", [Turn(cited.question)], []).anchor == ()  # nothing cited
    trace = positional.trace()
    assert trace["anchor"] == [WORKING, GROUP] and trace["direction"] == "after"


@pytest.fixture(scope="module")
def channels(tmp_path_factory, embedder, recognizer):
    comps = ingested_kb(tmp_path_factory.mktemp("positions"), embedder, recognizer, [PAGE.parent], new=1)
    ids = [c.id for c in comps.chunk_index.get([GROUP, WORKING, FEATURE, FEATURE_2, EXTERNAL])]
    assert ids == [GROUP, WORKING, FEATURE, FEATURE_2, EXTERNAL], "the fixture's chunking changed"
    yield comps
    comps.close()


def _ids(result) -> list[str]:
    return [h.chunk.id for h in result.hits]


def _rules(result) -> list[str]:
    return [str(h.placed_by["rule"]) for h in result.hits]


@pytest.mark.parametrize(("previous", "cited", "question", "neighbour"), [
    ("Which prefix do working group channels carry?", WORKING, "And the next one?", FEATURE),
    # Before: the first chunk of the section before (its heading), not the last one.
    ("Which prefix do external channels carry?", EXTERNAL, "And the one before that?", FEATURE),
    ("Which prefix do feature channels carry?", FEATURE_2, "What about the following category?", EXTERNAL),
])
def test_the_hits_open_with_the_cited_chunk_and_its_neighbour(channels, previous, cited, question, neighbour):
    retriever = channels.retriever
    without = retriever.retrieve(question, top_k=5, history=[Turn(previous)])
    assert _ids(without)[:2] != [cited, neighbour], "the carried question alone must not find both, else this proves nothing"
    result = retriever.retrieve(question, top_k=5, history=[Turn(previous, "…", (cited,))])
    assert _ids(result)[:2] == [cited, neighbour]
    assert _rules(result)[:2] == ["previous_answer", "position"]
    assert result.hits[1].placed_by["anchor"] == cited
    assert len(set(_ids(result))) == len(result.hits)  # placed, not repeated
    conversation = result_dict(result)["trace"]["conversation"]
    assert conversation["anchor"] == [cited] and conversation["position_note"] is None


def test_without_a_direction_or_a_neighbour_only_the_cited_chunk_opens(channels):
    retriever = channels.retriever
    last = retriever.retrieve("And the last one?", top_k=5,
                              history=[Turn("Which prefix do group channels carry?", None, (GROUP,))])
    assert _ids(last)[0] == GROUP and "position" not in _rules(last)
    edge = retriever.retrieve("And the next one?", top_k=5,
                              history=[Turn("Which prefix do external channels carry?", None, (EXTERNAL,))])
    assert _ids(edge)[0] == EXTERNAL and "position" not in _rules(edge)
    assert edge.query.completion.position_note == "no section after the cited chunk in its document"


@pytest.mark.parametrize(("previous", "cited", "question", "expected"), [
    ("Which prefix do working group channels carry?", WORKING, "And the next one?",
     "Feature channels carry the prefix feat_"),
    ("Which prefix do working group channels carry?", WORKING, "And the previous one?",
     "Group channels carry the prefix g_"),
])
def test_the_answer_reads_the_neighbouring_section_for_the_previous_question(channels, previous, cited, question,
                                                                             expected):
    """No table or list to step through: the answer quotes the section retrieval placed next to
    the cited one, read for what the previous turn asked (its prefix), not the follow-up's words."""
    result = channels.retriever.retrieve(question, top_k=5, history=[Turn(previous, "…", (cited,))])
    answer = channels.generator.answer_to(question, result)
    neighbour = next(h.chunk for h in result.hits if h.placed_by["rule"] == NEIGHBOUR)
    assert answer.text.replace("`", "").startswith(expected), answer.text
    assert [c.chunk_id for c in answer.citations] == [neighbour.id]
    without = channels.generator.answer_to(question, channels.retriever.retrieve(question, top_k=5,
                                                                               history=[Turn(previous)]))
    assert not without.text.replace("`", "").startswith(expected)  # no cited chunk: no neighbour placed


def test_a_cited_chunk_that_is_gone_changes_nothing_and_says_so(channels):
    retriever = channels.retriever
    history = [Turn("Which prefix do working group channels carry?")]
    plain = retriever.retrieve("And the next one?", top_k=5, history=history)
    gone = retriever.retrieve("And the next one?", top_k=5, history=[Turn(history[0].question, None, ("nope#c0",))])
    assert _ids(gone) == _ids(plain)
    assert "no longer in the knowledge base" in gone.query.completion.position_note


def test_conversation_store_keeps_cited_chunks_and_upgrades_an_old_file(tmp_path):
    from kgrag.conversations import ConversationStore

    old = sqlite3.connect(tmp_path / "conversations.sqlite")  # the schema before turns kept citations
    old.executescript("CREATE TABLE turns (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, "
                      "question TEXT NOT NULL, answer TEXT, PRIMARY KEY (conversation_id, seq));"
                      "INSERT INTO turns VALUES ('c1', 1, 1000.0, 'earlier?', 'yes');")
    old.commit()
    old.close()
    store = ConversationStore(tmp_path, ttl_s=60, max_turns=5, clock=lambda: 1001.0)
    store.append("c1", Turn("Which prefix?", "`wg_` [1]", (WORKING, GROUP)))
    assert store.turns("c1") == [Turn("earlier?", "yes"), Turn("Which prefix?", "`wg_` [1]", (WORKING, GROUP))]
    store.close()
    again = ConversationStore(tmp_path, ttl_s=60, max_turns=5, clock=lambda: 1001.0)  # opens the upgraded file
    assert again.turns("c1")[-1].cited == (WORKING, GROUP)
    again.close()


def test_over_http_a_conversation_remembers_what_was_shown_first(channels, tmp_path):
    from kgrag.server.app import create_app

    settings = channels.settings.model_copy(update={"data_dir": tmp_path})
    client = create_app(settings, channels, warm=False).test_client()
    first = client.post("/v1/retrieve", json={"question": "Which prefix do working group channels carry?",
                                              "conversation_id": "t1"}).get_json()
    shown = first["hits"][0]["chunk_id"]
    assert shown == WORKING
    second = client.post("/v1/retrieve", json={"question": "And the next one?", "conversation_id": "t1"}).get_json()
    assert second["trace"]["conversation"]["anchor"] == [shown]
    assert [h["chunk_id"] for h in second["hits"][:2]] == [WORKING, FEATURE]
    assert second["hits"][1]["trace"]["placed_by"] == {"rule": "position", "anchor": WORKING, "direction": "after"}
    sent = client.post("/v1/retrieve", json={"question": "And the one before that?", "history": [
        {"question": "Which prefix do external channels carry?", "cited_chunk_ids": [EXTERNAL]}]}).get_json()
    assert [h["chunk_id"] for h in sent["hits"][:2]] == [EXTERNAL, FEATURE]
    answered = client.post("/v1/query", json={"question": "Which prefix do feature channels carry?",
                                              "conversation_id": "t2"}).get_json()
    cited = list(dict.fromkeys(c["chunk_id"] for c in answered["citations"]))
    assert cited and cited[0].startswith(f"{DOC}#c")
    after = client.post("/v1/retrieve", json={"question": "And the next one?", "conversation_id": "t2"}).get_json()
    assert after["trace"]["conversation"]["anchor"] == cited  # the answer's citations, in their order
    abstained = client.post("/v1/query", json={"question": "Who won the 1998 football world cup final in Paris?",
                                               "conversation_id": "t3"}).get_json()
    assert abstained["abstained"] is True and abstained["hits"]  # retrieved something, answered nothing
    nothing = client.post("/v1/retrieve", json={"question": "And the next one?", "conversation_id": "t3"}).get_json()
    assert nothing["trace"]["conversation"]["anchor"] == []  # "not in the knowledge base" has no place
    too_many = client.post("/v1/retrieve", json={"question": "And the next one?", "history": [
        {"question": "x?", "cited_chunk_ids": [f"c{i}" for i in range(21)]}]})
    assert too_many.status_code == 400 and "cited_chunk_ids" in too_many.get_json()["error"]["message"]


def test_the_followups_benchmark_plays_a_conversation_over_rebuilt_pages(tmp_path):
    """``benchmarks/followups.py`` (the README's follow-up table) on the fixture page cut into a
    section corpus: it rebuilds the page, and the follow-up asked after an answer finds the next
    section through the answer's citation."""
    import json
    import subprocess
    import sys

    from tests.conftest import REPO

    bench = tmp_path / "bench"
    bench.mkdir()
    text = PAGE.read_text(encoding="utf-8")
    sections = ["# " + part if i == 0 else "## " + part for i, part in enumerate(text.lstrip("# ").split("\n## "))]
    with (bench / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for i, body in enumerate(sections):
            f.write(json.dumps({"id": f"slack.md#s{i:03d}", "title": "Slack", "text": body.strip()}) + "\n")
    question = {"id": "fu-0", "question": "And the next one?", "gold_ids": ["slack.md#s003"], "answers": ["feat_"],
                "meta": {"category": "contextual_anaphora", "context": "Which prefix do working group channels carry?"}}
    (bench / "queries.jsonl").write_text(json.dumps(question) + "\n", encoding="utf-8")
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, "benchmarks/followups.py", str(bench), "--work", str(tmp_path / "work"),
                           "--json", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "work" / "pages" / "slack.md").read_text(encoding="utf-8").strip() == text.strip()
    assert "| answered | " in proc.stdout and "| questions only | " in proc.stdout
    (row,) = json.loads(out.read_text(encoding="utf-8"))
    assert row["cited"] and row["cited"][0] == "slack.md#c2"  # the working group section answered it
    assert row["ranks"]["answered"] == 2  # the cited chunk, then the next section: the gold
    assert row["contains"] == {"questions only": False, "shown": True, "answered": True}, row["answers"]
    assert "| answered | 0.0 | 100.0 | 100.0 |" in proc.stdout
