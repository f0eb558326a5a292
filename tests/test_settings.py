"""The typed settings: sources, and a key kgrag does not know refused by name."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kgrag.cli import main
from kgrag.config import load_settings, settings_from_file
from kgrag.errors import ConfigError


def test_a_known_nested_variable_applies(monkeypatch):
    monkeypatch.setenv("KGRAG_LLM__STRUCTURED_OUTPUT", "json_object")
    monkeypatch.setenv("KGRAG_EXTRACTION__LLM", "true")
    settings = load_settings()
    assert settings.llm.structured_output == "json_object" and settings.extraction.llm is True


def test_a_misspelt_variable_is_refused_naming_it_and_the_known_keys(monkeypatch):
    # The README once documented KGRAG_EXTRACTION__LLM_JSON, which no field read: the LLM
    # extraction then sent json_schema to llama-cpp's server and every chunk failed (500).
    monkeypatch.setenv("KGRAG_EXTRACTION__LLM_JSON", "json_object")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "KGRAG_EXTRACTION__LLM_JSON" in message and "extraction.llm_json" in message
    assert "llm_max_tokens" in message  # what the section does know


def test_a_stale_toml_key_is_refused(tmp_path):
    toml = tmp_path / "kgrag.toml"
    toml.write_text('[llm]\nmodel = "openai/x"\n\n[retrieval]\ntop_kk = 5\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"retrieval\.top_kk .*\[retrieval\] top_kk"):
        settings_from_file(toml)
    toml.write_text('[llm]\nmodel = "openai/x"\n', encoding="utf-8")
    assert settings_from_file(toml).llm.model == "openai/x"


def test_the_cli_stops_with_a_usage_error_naming_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("KGRAG_LLM__MODELL", "openai/x")
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path / "kb"), "stats"])
    assert result.exit_code == 2
    assert "KGRAG_LLM__MODELL" in result.output and "model" in result.output
    assert not (tmp_path / "kb").exists()  # nothing opened
