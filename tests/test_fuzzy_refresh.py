"""The fuzzy linker's alias list: refreshed in the background when stale (the question that
finds it stale is not made to wait for the table), at once after ``invalidate()``."""

from __future__ import annotations

from kgrag.retrieve.linking import EntityLinker
from kgrag.stores.sqlite.graph import SqliteGraphStore
from kgrag.types import Chunk, Document, Entity, Mention


def _store_with(tmp_path, *names: str) -> SqliteGraphStore:
    graph = SqliteGraphStore(tmp_path / "graph.sqlite")
    _add(graph, "films", *names)
    return graph


def _add(graph: SqliteGraphStore, doc_id: str, *names: str) -> None:
    entities = [Entity(key=n.lower(), name=n, aliases=[n]) for n in names]
    graph.write_document(Document(id=doc_id, source=f"{doc_id}.md", hash=doc_id),
                         [Chunk(id=f"{doc_id}#0", doc_id=doc_id, text=" ".join(names), ordinal=0)],
                         entities, [Mention(e.key, f"{doc_id}#0") for e in entities], [])


def _fuzzy_keys(linker: EntityLinker, question: str) -> set[str]:
    return {le.key for le in linker.link(question) if le.method == "fuzzy"}


def test_a_stale_list_serves_its_question_and_is_replaced_in_the_background(tmp_path):
    graph = _store_with(tmp_path, "Glass Harbor")
    linker = EntityLinker(graph)
    assert _fuzzy_keys(linker, "Who directed Glass Harbr?") == {"glass harbor"}
    _add(graph, "towers", "Crimson Lighthouse")
    assert _fuzzy_keys(linker, "Who built the Crimson Lighthuse?") == set()  # fresh list: not yet known
    linker._fuzzy_list.loaded_at = 0.0  # the list is now older than FUZZY_TTL_S
    assert _fuzzy_keys(linker, "Who built the Crimson Lighthuse?") == set()  # served by the old list
    refreshing = linker._fuzzy_list.refreshing
    assert refreshing is not None
    refreshing.join(timeout=30)
    assert _fuzzy_keys(linker, "Who built the Crimson Lighthuse?") == {"crimson lighthouse"}
    assert linker._fuzzy_list.refreshing is None


def test_invalidate_reloads_at_once_and_a_refresh_begun_before_it_does_not_land(tmp_path):
    graph = _store_with(tmp_path, "Glass Harbor")
    linker = EntityLinker(graph)
    question = "Who built the Crimson Lighthuse?"
    assert _fuzzy_keys(linker, "Who directed Glass Harbr?") == {"glass harbor"}
    read = linker._read_alias_list

    def read_then_an_admin_change(previous):  # the change lands while a refresh reads the table
        stale = read(previous)
        linker._read_alias_list = read  # type: ignore[method-assign]
        _add(graph, "towers", "Crimson Lighthouse")
        linker.invalidate()
        assert _fuzzy_keys(linker, question) == {"crimson lighthouse"}  # reloaded at once
        return stale

    linker._read_alias_list = read_then_an_admin_change  # type: ignore[method-assign]
    linker._fuzzy_list.refresh()
    assert _fuzzy_keys(linker, question) == {"crimson lighthouse"}  # the older read did not land


def test_an_unchanged_table_keeps_its_list_and_a_write_from_any_connection_renews_it(tmp_path):
    graph = _store_with(tmp_path, "Glass Harbor")
    linker = EntityLinker(graph)
    assert _fuzzy_keys(linker, "Who directed Glass Harbr?") == {"glass harbor"}
    held = linker._fuzzy_list.current
    assert graph.alias_table() is graph.alias_table()  # kept until the file changes
    linker._fuzzy_list.refresh()
    assert linker._fuzzy_list.current is held  # nothing changed: the list is not built again
    other = SqliteGraphStore(tmp_path / "graph.sqlite")  # another process's ingest
    _add(other, "towers", "Crimson Lighthouse")
    other.close()
    assert "crimson lighthouse" in graph.alias_table()
    linker._fuzzy_list.refresh()
    assert linker._fuzzy_list.current is not held
    assert _fuzzy_keys(linker, "Who built the Crimson Lighthuse?") == {"crimson lighthouse"}
