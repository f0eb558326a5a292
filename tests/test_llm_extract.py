"""Optional LLM extraction (kgrag/ingest/llm_extract.py) without a model: what a reply must hold
to be kept, and an ingest whose LLM cannot be reached (every chunk skipped with its reason, the
ingest whole). The real model's path: tests/test_llm_extract_llm.py."""

from __future__ import annotations

import socket

import pytest

from kgrag.errors import ConfigError
from kgrag.ingest.llm_extract import ChunkGraph, relation_type, supported

TEXT = "The Security Operations team is led by the Chief Information Security Officer (CISO)."


def _reply(entities: list[dict], relations: list[dict] = ()) -> ChunkGraph:  # type: ignore[assignment]
    return ChunkGraph.model_validate({"entities": entities, "relations": list(relations)})


def test_entities_the_chunk_does_not_hold_are_dropped_with_their_relations():
    reply = _reply(
        [{"name": "Security Operations team", "type": "TEAM"},
         {"name": "Chief Information Security Officer", "type": "ROLE", "aliases": ["CISO", "Chief Security Guy"]},
         {"name": "Finance team", "type": "TEAM"}],  # not in the text: invented
        [{"source": "CISO", "relation": "leads", "target": "Security Operations team"},
         {"source": "Finance team", "relation": "LEADS", "target": "Security Operations team"}],
    )
    entities, relations, dropped = supported(reply, TEXT)
    assert [(e.name, e.aliases) for e in entities] == [
        ("Security Operations team", []), ("Chief Information Security Officer", ["CISO"])]
    assert dropped == 1
    # The relation named the entity by its alias; it lands on the kept name.
    assert [(r.source, r.relation, r.target) for r in relations] == [
        ("Chief Information Security Officer", "leads", "Security Operations team")]
    assert relation_type("leads") == "llm:LEADS" and relation_type("reports to!") == "llm:REPORTS_TO"


def test_an_alias_another_entity_claims_is_not_kept():
    # What SmolLM2-135M answered for TEXT: the acronym given to the team.
    reply = _reply([{"name": "Security Operations team", "type": "TEAM", "aliases": ["CISO"]},
                    {"name": "Chief Information Security Officer (CISO)", "type": "ROLE"}])
    entities, _, _ = supported(reply, TEXT)
    assert [(e.name, e.aliases) for e in entities] == [
        ("Security Operations team", []), ("Chief Information Security Officer (CISO)", [])]


def test_a_reply_off_the_schema_is_refused():
    with pytest.raises(ValueError):
        ChunkGraph.model_validate({"entities": [{"type": "TEAM"}]})  # no name


def test_llm_extraction_needs_a_configured_model(tmp_path):
    from kgrag.components import Components
    from kgrag.config import Settings

    comps = Components(Settings(data_dir=tmp_path, extraction={"llm": True}))
    with pytest.raises(ConfigError, match="llm.model"):
        comps.llm_extractor()
    comps.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed when the socket is: nothing listens there


def test_an_unreachable_llm_skips_each_chunk_with_its_reason_and_the_ingest_goes_on(tmp_path, embedder, recognizer):
    from kgrag.components import Components
    from kgrag.config import Settings

    doc = tmp_path / "security.md"
    doc.write_text(f"# Security\n\n{TEXT}\n", encoding="utf-8")
    settings = Settings(
        data_dir=tmp_path / "kb", extraction={"llm": True, "llm_timeout_s": 5},
        llm={"model": "openai/none", "api_base": f"http://127.0.0.1:{_closed_port()}/v1", "api_key": "x"},
    )
    comps = Components(settings, embedder=embedder, recognizer=recognizer)
    try:
        report = comps.ingest_job().run([doc], progress=False)
        assert report.ok and report.chunks_written >= 1
        assert report.llm is not None
        assert report.llm["calls"] == report.chunks_written == report.llm["failed"]
        assert all(s["reason"].startswith("LLM call failed:") for s in report.llm["skipped"])
        assert len(report.llm["skipped"]) == report.llm["failed"]
        # NER and terms still ran: the acronym and its long form are one entity of the graph.
        cisos = comps.graph.get_entity("chief information security officer")
        assert cisos is not None and "CISO" in cisos.aliases
        assert not any(e.type.startswith("llm:") for e in comps.graph.alias_admin.list_entities())
    finally:
        comps.close()
