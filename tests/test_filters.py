"""SearchFilter: parsing (what is accepted, what is refused and how the refusal names the field),
the reference ``matches``, and ``kgrag query --filters`` (the CLI edge). Engine translations are
checked against ``matches`` in tests/contract/test_filter_contract.py; the HTTP edge in
tests/test_server.py."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kgrag.cli import main
from kgrag.errors import InputError
from kgrag.stores.filters import SearchFilter
from kgrag.types import Chunk


@pytest.mark.parametrize(
    ("raw", "doc_id", "source", "prefix"),
    [
        ({"doc_id": "guide"}, ("guide",), None, None),
        ({"doc_id": ["zh", "guide", "zh"]}, ("guide", "zh"), None, None),  # sorted, no repeats
        ({"doc_id": ("a",)}, ("a",), None, None),  # Python callers may pass any collection
        ({"doc_id": frozenset({"b", "a"})}, ("a", "b"), None, None),
        ({"source": "docs/算法.md", "section_path_prefix": "树 > "}, None, "docs/算法.md", "树 > "),
        ({"section_path_prefix": ""}, None, None, ""),
        ({}, None, None, None),
    ],
)
def test_valid_filters_parse_into_typed_fields(raw, doc_id, source, prefix):
    f = SearchFilter.parse(raw)
    assert f is not None and (f.doc_id, f.source, f.section_path_prefix) == (doc_id, source, prefix)
    assert SearchFilter.parse(f.as_dict()) == f  # the request form reads back to the same filter
    assert SearchFilter.parse(f) is f


def test_no_filters_is_none():
    assert SearchFilter.parse(None) is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"source": 5}, "filters.source: expected a string, got int 5"),
        ({"section_path_prefix": b"Guide"}, "filters.section_path_prefix: expected a string, got bytes"),
        ({"doc_id": 5}, "filters.doc_id: expected a document id or a non-empty list of ids, got int 5"),
        ({"doc_id": {"id": "x"}}, "filters.doc_id: expected a document id"),
        ({"doc_id": ["a", 5]}, "filters.doc_id.1: Input should be a valid string"),
        ({"doc_id": []}, "filters.doc_id: an empty list matches nothing"),
        ({"doc_id": None}, "filters.doc_id: null is not a filter value"),
        ({"lang": "en"}, "filters: unknown filter key(s) 'lang'; known: doc_id, source, section_path_prefix"),
        ({"lang": "en", "doc_id": "x"}, "'lang'"),
        ("guide", "filters: expected an object with any of the keys doc_id, source, section_path_prefix, language, "
                  "doc_type, tags, date_from, date_to; got str"),
        (["doc_id"], "filters: expected an object"),
        (5, "filters: expected an object"),
    ],
)
def test_bad_filters_are_refused_naming_the_field(raw, message):
    with pytest.raises(InputError) as caught:
        SearchFilter.parse(raw)
    assert message in str(caught.value)


def test_unknown_filter_key_is_refused():
    """(Was a store-level check in the chunk-index contract: unknown keys no longer reach a store.)"""
    with pytest.raises(InputError, match="lang"):
        SearchFilter.parse({"lang": "en"})


def test_a_filter_is_immutable_and_hashable():
    f = SearchFilter(doc_id="a")
    with pytest.raises(ValueError):
        f.source = "x"  # type: ignore[misc]
    assert hash(f) == hash(SearchFilter.parse({"doc_id": ["a"]}))


def test_matches_is_exact_case_sensitive_and_literal():
    c = Chunk(id="c", doc_id="Guide", text="t", source="docs/a_b.md", section_path="100% / a_b*?\\ 树")
    assert SearchFilter().matches(c)
    assert SearchFilter(doc_id=["x", "Guide"]).matches(c) and not SearchFilter(doc_id="guide").matches(c)
    assert SearchFilter(source="docs/a_b.md").matches(c) and not SearchFilter(source="docs/a").matches(c)
    for prefix in ("", "100%", "100% / a_b*?\\", "100% / a_b*?\\ 树"):
        assert SearchFilter(section_path_prefix=prefix).matches(c), prefix
    for prefix in ("100 ", "%", "100% / aXb", "100% / a_b*?\\ 树木", "100% / A"):
        assert not SearchFilter(section_path_prefix=prefix).matches(c), prefix
    assert not SearchFilter(doc_id="Guide", source="docs/other.md").matches(c)  # every key must hold


# -- kgrag query --filters ------------------------------------------------------------------------
MODE_ARGS = [[], ["--mode", "dense"], ["--mode", "bm25"], ["--mode", "graph"], ["--mode", "bm25", "--mode", "graph"]]


@pytest.mark.parametrize(
    ("filters", "mentions"),
    [
        ('{"source": 5}', "filters.source: expected a string"),
        ('{"doc_id": []}', "filters.doc_id: an empty list"),
        ('{"bogus": "x"}', "'bogus'"),
        ('["guide"]', "filters: expected an object"),
        ("{doc_id: x}", "not valid JSON"),
    ],
)
def test_cli_refuses_bad_filters_on_every_mode(tmp_path, filters, mentions):
    """Parsed when the option is read: exit 2 naming the field, before any store or model opens."""
    for modes in MODE_ARGS:
        args = ["--data-dir", str(tmp_path / "kb"), "query", "Who directed Glass Harbor?", *modes,
                "--filters", filters, "--retrieve-only"]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        assert "--filters" in result.output and mentions in result.output, result.output
    assert not (tmp_path / "kb").exists()


def test_cli_graph_only_query_applies_filters(demo_kb):
    args = ["--data-dir", str(demo_kb.settings.data_dir), "query", "Who directed Glass Harbor?",
            "--mode", "graph", "--retrieve-only", "--json", "--filters", '{"doc_id": ["person-maret-kuusik"]}']
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)["hits"]
    assert hits and {h["doc_id"] for h in hits} == {"person-maret-kuusik"}
