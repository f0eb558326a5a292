"""Readiness that tells the truth about damaged store files (issue 47): a file emptied, cut
short, replaced or overwritten under a running server is named by ``/readyz`` (503) within
2 s, before questions meet it; a server started on a damaged store still starts and says
which file; every CLI command prints one line naming the file and the repair command."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time

import pytest
from click.testing import CliRunner

from kgrag.cli import main
from kgrag.components import Components
from kgrag.server.app import create_app
from tests.conftest import hotpot_corpus, ingested_corpus

N_DOCS = 3
REPAIR = "kgrag check --repair"


@pytest.fixture
def corpus(tmp_path):
    return hotpot_corpus(tmp_path, N_DOCS)


@pytest.fixture
def ingested(components, corpus):
    return ingested_corpus(components, corpus, N_DOCS)


def _checkpointed(path) -> None:
    """Move the WAL into the file, so damage to the file hits what queries read."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _damage(path, how: str) -> None:
    _checkpointed(path)
    size = path.stat().st_size
    if how == "emptied":
        os.truncate(path, 0)
    elif how == "halved":
        os.truncate(path, size // 2)
    elif how == "mid-file":  # the header stays: the file opens, its pages are garbage
        with open(path, "r+b") as f:
            f.seek(4096)
            f.write(os.urandom(size - 8192))
    elif how == "replaced":  # another file put in its place (a restore gone wrong)
        other = path.with_name(path.name + ".other")
        shutil.copy(path, other)
        os.replace(other, path)
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("name", ["chunks.sqlite", "graph.sqlite"])
@pytest.mark.parametrize("how", ["emptied", "halved", "replaced"])
def test_a_file_damaged_under_a_running_server_is_named_by_readyz_within_2_s(ingested, name, how):
    """Before: ``truncate -s 0 chunks.sqlite`` left ``/readyz`` at 200 with the old counts while
    ``/v1/query`` answered 503."""
    app = create_app(ingested.settings, ingested, warm=False)
    app.config["KGRAG_WARM"] = True  # the models are the session's, already loaded
    client = app.test_client()
    assert client.get("/readyz").status_code == 200
    _damage(ingested.settings.data_dir / name, how)
    started = time.monotonic()
    while (resp := client.get("/readyz")).status_code == 200 and time.monotonic() - started < 2.0:
        time.sleep(0.05)
    assert resp.status_code == 503, resp.get_json()
    assert time.monotonic() - started < 2.0
    reason = resp.get_json()["reason"]
    assert name in reason and str(ingested.settings.data_dir) not in reason, reason
    if how != "replaced":  # a replaced file may be sound: the server must reopen it
        assert REPAIR in reason, reason
    assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize("name", ["chunks.sqlite", "graph.sqlite"])
@pytest.mark.parametrize("how", ["mid-file", "halved"])
def test_a_server_started_on_a_damaged_store_starts_and_names_it(ingested, settings, name, how):
    """Before: bytes overwritten in the middle of a store file, or the file cut to half, made
    the worker fail to boot (gunicorn exited 3): no /readyz to ask."""
    ingested.close()
    _damage(settings.data_dir / name, how)
    restarted = Components(settings, embedder=ingested.embedder, recognizer=ingested.recognizer)
    try:
        app = create_app(settings, restarted, warm=True)  # what the worker runs at boot
        client = app.test_client()
        resp = client.get("/readyz")
        assert resp.status_code == 503, resp.get_json()
        reason = resp.get_json()["reason"]
        assert name in reason and REPAIR in reason, reason
        assert client.get("/healthz").status_code == 200
        answer = client.post("/v1/query", json={"question": "Who directed the film?"})
        assert answer.status_code == 503 and answer.get_json()["error"]["code"] == "store_unavailable"
    finally:
        restarted.close()


@pytest.mark.parametrize("command", [["stats"], ["ingest", "CORPUS"], ["delete", "some-doc"],
                                     ["query", "Who directed the film?"], ["aliases", "list"]],
                         ids=lambda c: c[0])
@pytest.mark.parametrize("name", ["chunks.sqlite", "graph.sqlite", "journal.sqlite"])
def test_every_command_names_the_damaged_file_and_the_repair_in_one_line(ingested, settings, corpus, command, name):
    """Before: ``kgrag ingest`` and ``kgrag stats`` printed raw tracebacks."""
    ingested.close()
    path = settings.data_dir / name
    if name == "journal.sqlite":
        path.write_bytes(os.urandom(8192))  # garbage, as the issue found it
    else:
        _damage(path, "halved")
    args = [str(corpus) if a == "CORPUS" else a for a in command]
    result = CliRunner().invoke(main, ["--data-dir", str(settings.data_dir), *args])
    if command[0] in ("stats", "query", "aliases") and name == "journal.sqlite":
        # These never open the journal: they answer.
        assert result.exit_code in (0, 1), result.output
        assert "Traceback" not in result.output
        return
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and name in lines[0] and REPAIR in lines[0], result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, (sqlite3.Error, AttributeError))
