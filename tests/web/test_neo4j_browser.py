"""Graph exploration in Neo4j Browser: the project's own Neo4j (engines/neo4j, the Browser app from
Maven Central) serves the Browser; headless Chromium logs in over Bolt and runs every saved query
of cypher/browser-guide.cypher, typed into the Browser's editor as a person would, against the
demo knowledge base (the session's demo, its graph copied into Neo4j by ``kgrag transfer``).
Each query's result table in the page must hold what the same query returns over Bolt, and the
demo's entities must be in it (the glossary's Lowest Common Ancestor with its Chinese aliases)."""

from __future__ import annotations

import json
import re

import pytest

from tests.neo4j_servers import fresh_store, local_neo4j, neo4j_server
from tests.test_neo4j_store import guide_queries

pytestmark = pytest.mark.neo4j

LCA = "lowest common ancestor"  # the demo glossary's entity key
PARAMS = {"key": LCA, "alias": "lca", "limit": 25}


@pytest.fixture(scope="module")
def demo_in_neo4j(demo_kb):
    """The demo knowledge base's graph in the session's Neo4j (emptied again afterwards)."""
    from kgrag.transfer import plan_transfer, run_transfer

    target = neo4j_server()
    with fresh_store(target, "browser") as store:
        settings = demo_kb.settings.model_copy(update={"neo4j": target.settings("browser")})
        report = run_transfer(plan_transfer(settings, "neo4j", target_data_dir=settings.data_dir.parent / "to-neo4j"))
        assert report.ok, report.to_dict()
        assert store.stats()["documents"] == len(demo_kb.graph.list_documents()) > 5
        yield store


def _one_line(query: str) -> str:
    return re.sub(r"\s+", " ", query).strip()


def _run(page, command: str) -> str:
    """Type ``command`` into the Browser's editor, run it, and return its frame's text once the
    frame says it completed (the newest frame is the first)."""
    editor = page.locator('[data-testid="activeEditor"]')
    editor.click()
    page.keyboard.type(command)
    page.keyboard.press("Escape")  # close an autocompletion popup, if one opened
    frames = page.locator('[data-testid="frame"]')
    before = frames.count()
    page.click('[data-testid="editor-Run"]')
    frames.nth(before).wait_for(state="attached")  # one frame more (the Browser's CSP forbids eval)
    frame = frames.first
    assert _one_line(frame.locator('[data-testid="frameCommand"]').inner_text()) == _one_line(command)
    if not command.startswith(":"):
        frame.get_by_text("Table", exact=True).first.click()  # nodes and paths open as a picture
        frame.locator('[data-testid="frameStatusbar"]').filter(has_text=re.compile("completed after")).wait_for()
    return frame.inner_text()


def test_browser_guide_queries_return_the_demo_entities_in_neo4j_browser(page, demo_in_neo4j):
    server = local_neo4j()
    doc_id = sorted(d.id for d in demo_in_neo4j.list_documents() if "lowest_common_ancestor" in d.id)[0]
    params = {**PARAMS, "doc_id": doc_id}
    queries = guide_queries()
    with demo_in_neo4j._run.driver.session() as session:
        expected = [session.run(q, params).data() for q in queries]

    page.goto(f"{server.browser_url}?dbms=bolt://neo4j@127.0.0.1:{server.bolt_port}&db=neo4j")
    page.fill('[data-testid="password"]', server.password)
    page.click('[data-testid="connect"]')
    page.get_by_text("You are connected as user").wait_for()
    for name, value in params.items():
        shown = _run(page, f":param {name} => {json.dumps(value, ensure_ascii=False)}")
        assert json.dumps(value, ensure_ascii=False) in shown

    shown = [_run(page, _one_line(q)) for q in queries]
    for i, (text, rows) in enumerate(zip(shown, expected), start=1):
        assert rows, f"guide query {i} returns nothing on the demo"
        for row in rows:  # every scalar the server returns is in the page's table
            for value in row.values():
                if isinstance(value, str) and len(value) < 60:
                    assert value in text, f"guide query {i}: {value!r} missing from the Browser's result"
    # 1: the entity with its glossary aliases; 2: the alias names it; 9: full-text finds it
    assert "Lowest Common Ancestor" in shown[0] and "最近公共祖先" in shown[0] and "LCA" in shown[0]
    assert "Lowest Common Ancestor" in shown[1] and "Lowest Common Ancestor" in shown[8]
    # 5: the chunks that mention it come from the English and the Chinese page
    assert {r["document"] for r in expected[4]} >= {"Lowest Common Ancestor (LCA)", "最近公共祖先"}
