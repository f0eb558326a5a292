"""Entity types follow evidence (issue 43, "a cleaner graph"): a place label of the shipped
spaCy pipeline or of jieba stands only when a dictionary knows the place (countryinfo,
CC-CEDICT) or the text writes the name as one; otherwise the entity stays untyped."""

from __future__ import annotations

import pytest

from kgrag.lexicon.places import place_evidenced
from kgrag.types import CONCEPT


def _at(text: str, name: str) -> tuple[str, int, int]:
    start = text.index(name)
    return text, start, start + len(name)


@pytest.mark.parametrize(("text", "name"), [
    ("Tarjan's off-line lowest common ancestors algorithm", "Tarjan"),
    ("The film was directed by Paul Verhoeven.", "Verhoeven"),
    ("审计员的每一次查询都会写入日志。", "日志"),  # jieba tags 日志 (log) a place
    ("他在2010年加盟球队。", "加盟"),  # … and 加盟 (to join)
    ("他在中超联赛中出场。", "中超联赛"),  # "在" before a league makes no place of it
    ("欧拉提出了这个问题。", "欧拉"),  # Euler: a person CC-CEDICT knows
])
def test_a_place_label_without_evidence_does_not_stand(text, name):
    assert not place_evidenced(*_at(text, name))


@pytest.mark.parametrize(("text", "name"), [
    ("Moscow is the capital.", "Moscow"),  # CC-CEDICT: "Moscow, capital of Russia"
    ("The Netherlands won.", "Netherlands"),  # a country (countryinfo)
    ("She was born in Tartu in 1974.", "Tartu"),  # written as a place
    ("茂名是一座城市。", "茂名"),  # CC-CEDICT: "Maoming prefecture-level city in Guangdong"
    ("他后来去了德国。", "德国"),  # glossed by a country's name: Germany
    ("莱州靠海。", "莱州"),  # a name ending in a word for a place
])
def test_a_place_with_evidence_keeps_its_label(text, name):
    assert place_evidenced(*_at(text, name))


def test_the_demo_graph_types_only_evidenced_places(demo_kb):
    tarjan = demo_kb.graph.get_entity("tarjan")  # spaCy's small model calls him a place
    assert tarjan is not None and tarjan.type == CONCEPT
    moscow = demo_kb.graph.get_entity("moscow")
    assert moscow is not None and moscow.type == "GPE"
    guangzhou = demo_kb.graph.get_entity("广州")
    assert guangzhou is not None and guangzhou.type == "GPE"
