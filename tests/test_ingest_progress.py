"""Ingest progress when stderr is not a terminal (a log, a pipe, scripts/serve's demo load):
lines as documents finish and a line at least every few seconds while a group is worked on."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

from kgrag.ingest.report import Progress, ProgressLines

REPO = Path(__file__).resolve().parent.parent


class _Quick(ProgressLines):
    EVERY_S = 0.0
    QUIET_S = 0.3


def test_lines_say_how_far_and_a_quiet_stage_is_never_silent(monkeypatch):
    out = io.StringIO()
    lines = _Quick(3, out)
    lines.stage("embedding 40 chunks")
    time.sleep(1.6)  # one long stage: the thread speaks up
    lines.document(1)
    lines.document(2)
    lines.document(3)
    lines.close()
    said = out.getvalue().splitlines()
    beats = [s for s in said if s == "ingest: 0/3 documents (embedding 40 chunks)"]
    assert len(beats) >= 2, said
    assert said[-3:] == ["ingest: 1/3 documents (embedding 40 chunks)", "ingest: 2/3 documents (embedding 40 chunks)",
                         "ingest: 3/3 documents"]


def test_progress_prints_lines_only_without_a_bar():
    made = [Progress(2, bar=False, callback=None, lines=True), Progress(2, bar=True, callback=None, lines=True),
            Progress(0, bar=False, callback=None, lines=True)]
    assert [p.lines is not None for p in made] == [True, False, False]
    for progress in made:
        progress.close()


def test_kgrag_ingest_into_a_pipe_prints_progress_lines(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(3):
        (docs / f"note{n}.md").write_text(f"# Note {n}\n\nThe gateway number {n} forwards telemetry.\n", encoding="utf-8")
    env = {**os.environ, "KGRAG_DATA_DIR": str(tmp_path / "kb"), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "kgrag.cli", "ingest", str(docs)], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "ingest: 3/3 documents" in done.stderr.splitlines(), done.stderr
    quiet = subprocess.run([sys.executable, "-m", "kgrag.cli", "ingest", "--no-progress", str(docs / "note0.md")],
                           capture_output=True, text=True, env=env, timeout=600)
    assert "ingest:" not in quiet.stderr
