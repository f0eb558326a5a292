"""``kgrag.atomic_files``: a file is replaced whole or left as it was, a failed write leaves no
fragment, and fragments of writers that died are swept by the next write — for the helper and
for the graph snapshot that uses it (the ONNX export's own test is in test_onnx_embedder.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from kgrag.atomic_files import remove_dead_fragments, written_whole
from kgrag.stores.sqlite.compact_graph import load_snapshot, save_snapshot
from tests.test_compact_walk import compact_from


def _dead_pid() -> int:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    return int(finished.stdout)


def test_the_target_is_replaced_only_when_the_write_ends(tmp_path):
    target = tmp_path / "data.bin"
    target.write_bytes(b"old")
    with written_whole(target) as fragment:
        fragment.write_bytes(b"new, written in parts")
        assert target.read_bytes() == b"old"  # a reader meanwhile sees the whole old file
        assert fragment.name == f"data.bin.{os.getpid()}.partial"
    assert target.read_bytes() == b"new, written in parts"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.bin"]


def test_a_failed_write_leaves_the_old_file_and_no_fragment(tmp_path):
    target = tmp_path / "data.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="disk full"), written_whole(target) as fragment:
        fragment.write_bytes(b"half")
        raise RuntimeError("disk full")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.bin"]


def test_fragments_of_dead_writers_go_and_a_live_writers_stays(tmp_path):
    target = tmp_path / "data.bin"
    dead = _dead_pid()
    killed = tmp_path / f"data.bin.{dead}.partial"
    old_style = tmp_path / f"data.bin.{dead}.tmp"  # the snapshot's name before this module
    live = tmp_path / f"data.bin.{os.getppid()}.partial"
    other = tmp_path / f"other.bin.{dead}.partial"  # another target's: not ours to judge
    for path in (killed, old_style, live, other):
        path.write_bytes(b"fragment")
    assert sorted(p.name for p in remove_dead_fragments(target)) == sorted([killed.name, old_style.name])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])


def test_a_graph_snapshot_that_fails_midway_keeps_the_previous_one(tmp_path, monkeypatch):
    path = tmp_path / "graph.sqlite.walk.npz"
    before = compact_from([("a", "b", "CO_OCCURS", 1.0), ("b", "c", "PART_OF", 2.0)])
    save_snapshot(before, path, 7, ("a", "b"))
    leftover = tmp_path / f"{path.name}.{_dead_pid()}.tmp"  # a snapshot writer killed earlier
    leftover.write_bytes(b"PK half a zip")

    def fails_midway(f, **arrays):
        f.write(b"PK\x03\x04 the first bytes")
        raise OSError("No space left on device")

    monkeypatch.setattr(np, "savez", fails_midway)
    after = compact_from([("a", "c", "CO_OCCURS", 1.0)])
    with pytest.raises(OSError, match="No space left"):
        save_snapshot(after, path, 9, ("a", "c"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    loaded = load_snapshot(path)
    assert loaded is not None
    graph, seq, mark = loaded
    assert (graph.keys, seq, mark) == (["a", "b", "c"], 7, ("a", "b"))
