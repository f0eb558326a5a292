"""``kgrag ingest`` as a user runs it: the files it leaves behind are ready for a fast start."""

from __future__ import annotations

from click.testing import CliRunner

from kgrag.cli import main
from kgrag.stores.sqlite.chunks import SqliteChunkIndex
from kgrag.stores.sqlite.graph import SqliteGraphStore


def test_an_ingest_or_a_delete_notes_its_integrity_check_so_the_next_start_skips_it(tmp_path):
    """The server's start checks each store file (``PRAGMA quick_check``: 8.5 s at 100k
    passages) unless a passed check is noted for the file as it is; the ingest checks the files
    it wrote after closing them, so the first start after it is as fast as a restart."""
    doc = tmp_path / "glass-harbor.txt"
    doc.write_text("Glass Harbor is a 2019 film directed by Maret Kuusik in Tallinn.\n", encoding="utf-8")
    kb = tmp_path / "kb"
    result = CliRunner().invoke(main, ["--data-dir", str(kb), "ingest", str(doc), "--no-progress"])
    assert result.exit_code == 0, result.output
    _assert_noted(kb)
    # A delete writes the same files: it notes its check too.
    other = tmp_path / "other.txt"
    other.write_text("Maret Kuusik was born in Tartu.\n", encoding="utf-8")
    assert CliRunner().invoke(main, ["--data-dir", str(kb), "ingest", str(other), "--no-progress"]).exit_code == 0
    before = {name: (kb / f"{name}.checked").read_text() for name in ("chunks.sqlite", "graph.sqlite")}
    result = CliRunner().invoke(main, ["--data-dir", str(kb), "delete", _doc_id(kb, "other.txt")])
    assert result.exit_code == 0, result.output
    assert all((kb / f"{name}.checked").read_text() != note for name, note in before.items())  # noted anew
    _assert_noted(kb)


def _doc_id(kb, source_name: str) -> str:
    index = SqliteChunkIndex(kb / "chunks.sqlite")
    try:
        return next(c.doc_id for c, _ in index.iter_chunks() if c.source.endswith(source_name))
    finally:
        index.close()


def _assert_noted(kb) -> None:
    for name, store_type in (("chunks.sqlite", SqliteChunkIndex), ("graph.sqlite", SqliteGraphStore)):
        assert (kb / f"{name}.checked").exists(), name
        store = store_type(kb / name)  # opened as the server opens it
        try:
            assert store.problems() == [], name
            assert store._db.quick_checks == 0, name  # the ingest's note stands: not repeated
        finally:
            store.close()
