"""``kgrag query --server`` and ``kgrag aliases --server``: the real CLI against a real server
(the app on a loopback HTTP server, real stores and models), compared with the same commands run
locally, and a check that the remote commands load no model in the calling process."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kgrag.cli import main
from kgrag.conversations import ConversationStore
from kgrag.server.app import create_app
from kgrag.types import Turn
from tests.conftest import REPO
from tests.live_server import start_server
from tests.test_aliases import QUESTION, ingest_seed

KEY = "remote-cli-key"


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture
def admin_server(components, tmp_path):
    """A writable knowledge base (two documents, no glossary) served with an API key."""
    ingest_seed(components, tmp_path)
    settings = components.settings.model_copy(
        update={"server": components.settings.server.model_copy(update={"api_key": KEY})})
    log = io.StringIO()
    live = start_server(create_app(settings, components, log_stream=log), log)
    yield live, components
    live.stop()


def test_remote_query_prints_what_the_local_one_does(demo_kb, live_server):
    data = ["--data-dir", str(demo_kb.settings.data_dir)]
    question = "What is the LCA of two nodes?"
    code, local = cli(*data, "query", "--retrieve-only", "--top-k", "3", question)
    assert code == 0, local
    code, remote = cli(*data, "query", "--server", live_server.url, "--retrieve-only", "--top-k", "3", question)
    assert code == 0, remote
    assert remote == local and "lowest_common_ancestor.md#c0" in remote.splitlines()[0]

    code, out = cli(*data, "query", "--server", live_server.url, "--json", question)
    body = json.loads(out)
    assert code == 0 and body["citations"] and body["citations"][0]["doc_id"].endswith("lowest_common_ancestor.md")
    code, out = cli(*data, "query", "--server", live_server.url, question)
    assert code == 0 and out.startswith(body["answer"]) and "  [1] " in out


def test_remote_query_errors_keep_their_exit_codes(demo_kb, live_server):
    code, out = cli("query", "--server", live_server.url, "--filters", '{"source": "x.md"}', "--mode", "graph",
                    "--top-k", "3", "what?")
    assert code == 0  # a valid filter that matches nothing is no error
    # a refusal by the server (a blank question) is a usage error, exit 2, with its message
    code, out = cli("query", "--server", live_server.url, "   ")
    assert code == 2 and "the server answered 400" in out and "question is empty" in out
    # what the API's request model refuses (a question too long) is refused before sending
    code, out = cli("query", "--server", live_server.url, "x" * 20_000)
    assert code == 2 and "question: String should have at most 4000 characters" in out
    code, out = cli("query", "--server", "http://127.0.0.1:9", "what?")  # nothing listens on port 9
    assert code == 1 and "cannot reach the kgrag server" in out


def test_alias_commands_through_the_server_change_the_served_knowledge_base(admin_server, monkeypatch):
    live, comps = admin_server
    monkeypatch.setenv("KGRAG_SERVER_URL", live.url)
    monkeypatch.setenv("KGRAG_API_KEY", KEY)
    graph_before = comps.retriever.retrieve(QUESTION, modes=("graph",))
    assert not graph_before.hits

    code, out = cli("aliases", "--user", "ana", "add", "LCA", "最近公共祖先", "Lowest Common Ancestor")
    assert code == 0 and "created curated entity 'lca'" in out, out
    after = comps.retriever.retrieve(QUESTION, modes=("graph",))  # the server's own retriever
    assert [le.key for le in after.query.linked] == ["lca"]
    assert {h.chunk.doc_id.rsplit("/", 1)[-1] for h in after.hits} >= {"zh.md", "en.md"}

    code, out = cli("aliases", "list", "--json")
    listed = {e["key"]: e["aliases"] for e in json.loads(out)["entities"]}
    assert code == 0 and listed["lca"] == ["最近公共祖先", "Lowest Common Ancestor"]
    code, out = cli("aliases", "show", "最近公共祖先")
    assert code == 0 and out.startswith("LCA [lca] CONCEPT curated")
    code, out = cli("aliases", "remove", "LCA", "Lowest Common Ancestor")
    assert code == 0 and comps.graph.alias_table().get("lowest common ancestor") != ["lca"]
    code, out = cli("aliases", "audit", "--json")
    entries = json.loads(out)["entries"]
    assert [(e["action"], e["target"]) for e in entries] == [("remove", "lca"), ("add", "lca")]
    assert entries[1]["who"].startswith("ana (api-key:")  # --user reaches the audit as X-Kgrag-User


def test_alias_refusals_and_missing_key_exit_2_and_change_nothing(admin_server, monkeypatch):
    live, comps = admin_server
    monkeypatch.setenv("KGRAG_SERVER_URL", live.url)
    stats = comps.graph.stats()
    code, out = cli("aliases", "add", "LCA", "x")  # no key
    assert code == 2 and "401" in out
    monkeypatch.setenv("KGRAG_API_KEY", KEY)
    code, out = cli("aliases", "rename", "no such entity", "whatever")
    assert code == 2 and "404" in out
    assert comps.graph.stats() == stats


def test_glossary_import_and_export_through_the_server(admin_server, monkeypatch, tmp_path):
    live, comps = admin_server
    monkeypatch.setenv("KGRAG_SERVER_URL", live.url)
    monkeypatch.setenv("KGRAG_API_KEY", KEY)
    glossary = tmp_path / "g.yaml"
    glossary.write_text("- name: LCA\n  type: CONCEPT\n  aliases: [最近公共祖先, Lowest Common Ancestor]\n",
                        encoding="utf-8")
    code, out = cli("aliases", "import", str(glossary))
    assert code == 0, out
    assert comps.graph.get_entity("lca") is not None and comps.graph.get_entity("lca").curated
    code, out = cli("aliases", "export", str(tmp_path / "out.csv"))
    assert code == 0 and "wrote 1 entities (2 aliases)" in out, out
    rows = list(csv.reader((tmp_path / "out.csv").open(encoding="utf-8")))
    assert rows[1][0] == "LCA" and set(rows[1][2].split("|")) == {"最近公共祖先", "Lowest Common Ancestor"}


def test_remote_commands_load_no_model_in_the_calling_process(live_server):
    """What makes ``--server`` fast: neither torch nor a store is imported by the CLI process."""
    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from kgrag.cli import main\n"
        f"r = CliRunner().invoke(main, ['query', '--server', {live_server.url!r}, '--retrieve-only', 'LCA?'])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'spacy', 'jieba',\n"
        "                           'kgrag.stores.sqlite', 'kgrag.components')\n"
        "               if m in sys.modules)\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_query_follow_ups_from_the_command_line_locally_and_through_the_server(demo_kb, live_server):
    """``--history`` and ``--conversation-id`` complete a follow-up as the HTTP API does; the
    options are checked by the API's request model (exit 2 naming the field)."""
    data = ["--data-dir", str(demo_kb.settings.data_dir)]
    previous = "Which manuscripts are known as the Books of Clanranald?"
    follow_up = "And who kept them?"

    def conversation(*args: str) -> dict:
        code, out = cli(*data, "query", "--retrieve-only", "--json", *args)
        assert code == 0, out
        return json.loads(out)

    alone = conversation(follow_up)
    assert alone["trace"]["conversation"] is None
    sent = conversation("--history", json.dumps([{"question": previous}]), follow_up)
    assert sent["trace"]["conversation"]["followup"] and sent["trace"]["conversation"]["carried_from"] == [previous]
    for where in ([], ["--server", live_server.url]):
        thread = f"cli-thread-{len(where)}"
        first = conversation(*where, "--conversation-id", thread, previous)
        assert first["conversation_id"] == thread and first["trace"]["conversation"] is None
        second = conversation(*where, "--conversation-id", thread, follow_up)
        assert second["trace"]["conversation"]["carried_from"] == [previous]
        assert [h["chunk_id"] for h in second["hits"]] == [h["chunk_id"] for h in sent["hits"]]
        # Both kept the turns in the data dir's store, with the first hit shown as the one to go on from.
        store = ConversationStore(demo_kb.settings.data_dir, ttl_s=60, max_turns=5)
        kept = store.turns(thread)
        store.close()
        assert kept == [Turn(previous, None, (first["hits"][0]["chunk_id"],)),
                        Turn(follow_up, None, (second["hits"][0]["chunk_id"],))]

    for args, message in [
        (["--history", '[{"question": "y"}]', "--conversation-id", "t"], "not both"),
        (["--history", '[{"question": ""}]'], "history.0.question"),
        (["--history", '{"question": "y"}'], "expected a JSON list"),
        (["--history", "[{"], "not valid JSON"),
        (["--conversation-id", "no spaces allowed"], "conversation_id"),
    ]:
        code, out = cli(*data, "query", "--retrieve-only", *args, "x?")
        assert code == 2 and message in out, (args, out)


@pytest.mark.parametrize("options", [
    {},
    {"iterate": False, "rerank": False, "modes": ["bm25", "graph"], "top_k": 4},
    {"iterate": True, "iterate_driver": "entities", "recency": {"half_life_days": 30, "weight": 0.5}},
    {"history": [{"question": "Which manuscripts are known as the Books of Clanranald?"}]},
])
def test_the_cli_answers_exactly_as_the_server_does(demo_kb, options):
    """``kgrag query`` (local, models loaded here) and ``POST /v1/query`` ask through one seam
    (``kgrag.asking``): for the same question and options they rank the same chunks and give the
    same answer, citations and generation trace."""
    question = "And who kept them?" if "history" in options else "Who directed Black Book?"
    server = create_app(demo_kb.settings, demo_kb, warm=False).test_client()
    served = server.post("/v1/query", json={"question": question, **options}).get_json()
    args = ["--data-dir", str(demo_kb.settings.data_dir), "query", "--json", question]
    for name, value in options.items():
        if name == "modes":
            args += [a for mode in value for a in ("--mode", mode)]
        elif name == "recency":
            args += ["--recency-half-life", str(value["half_life_days"]), "--recency-weight", str(value["weight"])]
        elif name == "history":
            args += ["--history", json.dumps(value)]
        elif isinstance(value, bool):
            args.append(f"--{'' if value else 'no-'}{name.replace('_', '-')}")
        else:
            args += [f"--{name.replace('_', '-')}", str(value)]
    code, out = cli(*args)
    assert code == 0, out
    local = json.loads(out)
    assert [h["chunk_id"] for h in local["hits"]] == [h["chunk_id"] for h in served["hits"]] != []
    assert local["answer"] == served["answer"]
    assert [c["chunk_id"] for c in local["citations"]] == [c["chunk_id"] for c in served["citations"]]
    assert local["trace"]["generation"]["mode"] == served["trace"]["generation"]["mode"]
    for key in ("modes", "iteration", "conversation", "gate"):
        assert _untimed(local["trace"][key]) == _untimed(served["trace"][key]), key


def _untimed(value):
    """``value`` without its milliseconds (two runs never take the same time)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k != "ms"}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value
