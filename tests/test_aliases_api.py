"""Alias admin routes through Flask's test client (the real app, stores and models) on a fresh
knowledge base: effects reach retrieval at once (fuzzy linking included), refusals are JSON
errors that change nothing, every change is audited with the API caller."""

from __future__ import annotations

import hashlib

import pytest

from kgrag.server.app import create_app
from tests.test_aliases import QUESTION, graph_state, ingest_seed

KEY = "alias-admin-key"
ADMIN = {"X-API-Key": KEY, "X-Kgrag-User": "ana"}
WHO = f"ana (api-key:{hashlib.sha256(KEY.encode()).hexdigest()[:8]})"


@pytest.fixture
def api(components, tmp_path):
    ingest_seed(components, tmp_path)
    settings = components.settings.model_copy(
        update={"server": components.settings.server.model_copy(update={"api_key": KEY})})
    return create_app(settings, components).test_client()


def _graph(api):
    return api.application.config["KGRAG_COMPONENTS"].graph


def _linked(api, question: str) -> list[tuple[str, str]]:
    body = api.post("/v1/retrieve", json={"question": question, "modes": ["graph"]}).get_json()
    return [(e["key"], e["method"]) for e in body["trace"]["linked_entities"]], body["hits"]


def _error(resp, status: int, code: str) -> str:
    assert resp.status_code == status, resp.get_data(as_text=True)
    assert resp.get_json()["error"]["code"] == code
    return resp.get_json()["error"]["message"]


def test_admin_routes_need_the_key(api):
    _error(api.get("/v1/entities/_aliases"), 401, "unauthorized")
    _error(api.post("/v1/entities/LCA/aliases", json={"aliases": ["x"]}, headers={"X-API-Key": "wrong"}),
           401, "unauthorized")
    assert _graph(api).get_entity("lca") is None


def test_add_over_http_links_at_once_exact_and_fuzzy(api):
    # Prime the fuzzy matcher's cached alias list: the misspelling links the extracted entity.
    linked, _ = _linked(api, "What is the Lowest Commn Ancestor?")
    assert linked == [("lowest common ancestor", "fuzzy")]
    linked, hits = _linked(api, QUESTION)
    assert linked == [] and hits == []

    resp = api.post("/v1/entities/LCA/aliases", json={"aliases": ["最近公共祖先", "Lowest Common Ancestor"]},
                    headers=ADMIN)
    assert resp.status_code == 201, resp.get_json()
    body = resp.get_json()
    assert body["changed"] and body["created"] and body["absorbed"] == ["lowest common ancestor"]

    linked, hits = _linked(api, QUESTION)
    assert linked == [("lca", "exact")]
    assert any(h["doc_id"].endswith("zh.md") and ["lca"] in [p["nodes"] for p in h["trace"]["graph_paths"]]
               for h in hits)
    # The route invalidated the cached list: the same misspelling now links the merged entity.
    assert _linked(api, "What is the Lowest Commn Ancestor?")[0] == [("lca", "fuzzy")]
    # The read-only entity route (not ours) still answers beside the admin routes.
    assert api.get("/v1/entities/lca").get_json()["mention_chunks"] == 2
    again = api.post("/v1/entities/lca/aliases", json={"aliases": ["最近公共祖先"]}, headers=ADMIN)
    assert again.status_code == 200 and not again.get_json()["changed"]


def test_list_show_remove_rename_and_audit(api):
    api.post("/v1/entities/LCA/aliases", json={"aliases": ["最近公共祖先", "Least Common Ancestor"]}, headers=ADMIN)
    listed = api.get("/v1/entities/_aliases", headers=ADMIN).get_json()
    assert [(e["key"], e["aliases"]) for e in listed["entities"]] == [("lca", ["最近公共祖先", "Least Common Ancestor"])]
    shown = api.get("/v1/entities/_show", query_string={"name": "最近公共祖先"}, headers=ADMIN).get_json()
    assert shown["key"] == "lca" and shown["chunks"] == 1

    resp = api.delete("/v1/entities/lca/aliases", query_string={"alias": "least common ancestor"}, headers=ADMIN)
    assert resp.status_code == 200 and resp.get_json()["aliases"] == ["Least Common Ancestor"]
    resp = api.delete("/v1/entities/lca/aliases", json={"aliases": ["Least Common Ancestor"]}, headers=ADMIN)
    assert resp.status_code == 200 and not resp.get_json()["changed"]

    resp = api.post("/v1/entities/lca/rename", json={"name": "Lowest common ancestor (LCA)"}, headers=ADMIN)
    assert resp.get_json()["target"] == "lowest common ancestor lca"
    entries = api.get("/v1/entities/_audit", headers=ADMIN).get_json()["entries"]
    assert [(e["who"], e["action"], e["target"]) for e in entries] == [
        (WHO, "rename", "lowest common ancestor lca"), (WHO, "remove", "lca"), (WHO, "add", "lca")]


def test_merge_split_over_http_restore_the_counts(api):
    api.post("/v1/entities/LCA/aliases", json={"aliases": ["最近公共祖先"]}, headers=ADMIN)
    before = graph_state(_graph(api))
    resp = api.post("/v1/entities/_merge", json={"keep": "lca", "drop": ["Lowest Common Ancestor"]}, headers=ADMIN)
    assert resp.status_code == 200 and resp.get_json()["dropped"] == ["lowest common ancestor"]
    resp = api.post("/v1/entities/lca/split", json={"aliases": ["Lowest Common Ancestor"],
                                                    "into": "Lowest Common Ancestor"}, headers=ADMIN)
    assert resp.status_code == 201 and resp.get_json()["restored_chunks"] == 1
    after = graph_state(_graph(api))
    assert (after["mentions"], after["stats"], after["weights"]) == (before["mentions"], before["stats"], before["weights"])
    resp = api.delete("/v1/entities/lowest common ancestor", headers=ADMIN)
    assert resp.status_code == 200 and _graph(api).get_entity("lowest common ancestor") is None


def test_export_import_csv_and_ambiguity(api):
    csv_body = "canonical,type,aliases\nApple Inc.,ORG,Apple|AAPL\nApple (fruit),FOOD,Apple|pomme\n"
    resp = api.post("/v1/entities/_import", data=csv_body.encode(), content_type="text/csv", headers=ADMIN)
    assert resp.status_code == 201, resp.get_json()
    assert sorted(resp.get_json()["created"]) == ["apple fruit", "apple inc"]
    ambiguous = api.get("/v1/entities/_aliases", query_string={"ambiguous": "true"}, headers=ADMIN).get_json()
    assert ambiguous["ambiguous"][0]["alias"] == "apple"
    assert [c["key"] for c in ambiguous["ambiguous"][0]["candidates"]] == ["apple fruit", "apple inc"]
    linked, _ = _linked(api, "Is Apple a fruit?")
    assert sorted(linked) == [("apple fruit", "exact"), ("apple inc", "exact")]
    exported = api.get("/v1/entities/_export", headers=ADMIN)
    assert exported.mimetype == "text/csv"
    assert exported.get_data(as_text=True).splitlines() == [
        "canonical,type,aliases", "Apple (fruit),FOOD,Apple|pomme", "Apple Inc.,ORG,Apple|AAPL"]
    state = graph_state(_graph(api))
    again = api.post("/v1/entities/_import", data=exported.get_data(), content_type="text/csv", headers=ADMIN)
    assert again.status_code == 200 and not again.get_json()["changed"]
    assert graph_state(_graph(api)) == state


def test_refusals_are_json_errors_that_change_nothing(api):
    api.post("/v1/entities/Tree algorithms/aliases", json={"aliases": ["算法"]}, headers=ADMIN)
    graph = _graph(api)
    state, audit = graph_state(graph), graph.audit.audit_log()
    assert "no entity named 'nope'" in _error(
        api.delete("/v1/entities/nope/aliases", json={"aliases": ["x"]}, headers=ADMIN), 404, "unknown_entity")
    assert "alias is empty" in _error(
        api.post("/v1/entities/LCA/aliases", json={"aliases": [" "]}, headers=ADMIN), 400, "invalid")
    assert "--force" in _error(
        api.post("/v1/entities/LCA/aliases", json={"aliases": ["Tree algorithms"]}, headers=ADMIN), 409, "conflict")
    assert "aliases" in _error(api.post("/v1/entities/LCA/aliases", json={}, headers=ADMIN), 400, "invalid_request")
    _error(api.post("/v1/entities/_merge", json={"keep": "tree algorithms", "drop": ["nope"]}, headers=ADMIN),
           404, "unknown_entity")
    _error(api.post("/v1/entities/_import", data=b"canonical,type\n,CONCEPT\n", content_type="text/csv",
                    headers=ADMIN), 400, "invalid")
    _error(api.post("/v1/entities/_import", json={"x": 1}, headers=ADMIN), 415, "unsupported_media_type")
    _error(api.delete("/v1/entities/nope", headers=ADMIN), 404, "unknown_entity")
    assert graph_state(graph) == state and graph.audit.audit_log() == audit


def test_suggest_over_http(api):
    api.post("/v1/entities/LCA/aliases", json={"aliases": ["最近公共祖先"]}, headers=ADMIN)
    body = api.get("/v1/entities/_suggest", query_string={"embeddings": "false"}, headers=ADMIN).get_json()
    pairs = {frozenset((s["keep"]["key"], s["drop"]["key"])) for s in body["suggestions"]}
    assert frozenset(("lca", "lowest common ancestor")) in pairs


def test_a_failing_store_is_503_and_changes_nothing(api, monkeypatch):
    """A store failure (the real store's write failing to take SQLite's lock, raised as
    ``SqliteDatabase.write`` raises it) is the server's trouble, 503, not the caller's
    conflict (409, which stays for refusals such as a taken key)."""
    from kgrag.errors import StoreError

    graph = _graph(api)
    state = graph_state(graph)
    db = graph.alias_admin._db
    real_write = db.write

    def locked(what):
        raise StoreError(f"{db.path}: {what}: database is locked")

    monkeypatch.setattr(db, "write", lambda what: real_write(what) if what.startswith("read") else locked(what))
    resp = api.post("/v1/entities/LCA/aliases", json={"aliases": ["lowest ancestor"]}, headers=ADMIN)
    assert resp.status_code == 503, resp.get_data(as_text=True)
    assert resp.get_json()["error"]["code"] == "store_unavailable"
    monkeypatch.undo()
    assert graph_state(graph) == state
