"""Optional LLM extraction end to end with the real local model (SmolLM2-135M-Instruct served by
llama-cpp-python, tests/llm_server.py): an ingest with ``extraction.llm`` on merges the model's
schema-constrained entities into the graph with ``llm:`` provenance and reports the cost; a
reply cut short (garbage JSON) skips that chunk's LLM extraction with the reason and the ingest
goes on. A 135M model is a plumbing test, not a quality one: its entities are few and often
wrong (the reply rules in kgrag/ingest/llm_extract.py drop what the chunk does not hold)."""

from __future__ import annotations

import pytest

from tests.llm_server import llm_settings  # noqa: F401  (session fixture: the running server)

pytestmark = [pytest.mark.llm, pytest.mark.slow]

TEXT = "The Security Operations team is led by the Chief Information Security Officer (CISO).\n"


def _ingest(tmp_path, llm_settings, embedder, recognizer, **extraction):  # noqa: F811
    from kgrag.components import Components
    from kgrag.config import Settings

    doc = tmp_path / "security.txt"  # prose: NER only, so what the LLM adds stands out
    doc.write_text(TEXT, encoding="utf-8")
    settings = Settings(data_dir=tmp_path / "kb", llm=llm_settings.model_copy(update={"structured_output": "json_object"}),
                        extraction={"llm": True, "llm_timeout_s": 600, **extraction})
    comps = Components(settings, embedder=embedder, recognizer=recognizer)
    return comps, comps.ingest_job().run([doc], progress=False)


def test_llm_entities_join_the_graph_with_provenance_and_cost(tmp_path, llm_settings, embedder, recognizer):  # noqa: F811
    comps, report = _ingest(tmp_path, llm_settings, embedder, recognizer, llm_max_tokens=200)
    try:
        assert report.ok and report.llm is not None
        assert report.llm["calls"] == report.chunks_written == 1 and report.llm["failed"] == 0
        assert report.llm["prompt_tokens"] > 0 and report.llm["completion_tokens"] > 0
        assert report.llm["entities_kept"] >= 1
        found = [e for e in comps.graph.alias_admin.list_entities() if e.type.startswith("llm:")]
        assert found, "an entity only the LLM named is in the graph, typed llm:<TYPE>"
        mentions = comps.graph.mentions_of([e.key for e in found])
        for entity in found:
            assert entity.name.lower() in TEXT.lower()  # written in the chunk, not invented
            assert mentions.get(entity.key), f"{entity.name} is mentioned by the chunk"
    finally:
        comps.close()


def test_a_reply_cut_short_skips_the_chunk_with_the_reason(tmp_path, llm_settings, embedder, recognizer):  # noqa: F811
    comps, report = _ingest(tmp_path, llm_settings, embedder, recognizer, llm_max_tokens=16)
    try:
        assert report.ok and report.chunks_written == 1  # the ingest is whole
        assert report.llm is not None and report.llm["failed"] == 1
        [skipped] = report.llm["skipped"]
        assert skipped["reason"].startswith("reply is not JSON of the schema")
        assert not any(e.type.startswith("llm:") for e in comps.graph.alias_admin.list_entities())
        assert comps.graph.alias_admin.list_entities(), "NER's entities are still written"
    finally:
        comps.close()
