"""Whether a name labelled a place is one (issue 43: entity types follow evidence).

The small English NER model and jieba's part-of-speech tags call many names places that are
not: "Tarjan" (in "Tarjan's off-line algorithm"), "Verhoeven", 日志 (log), 加盟 (to join), 欧拉
(Euler). A person exploring the graph trusts a type, so a place label (GPE, LOC) stands only
with evidence, and a name without it stays untyped (CONCEPT) rather than guessed:

- a country or one of its provinces (``kgrag.lexicon.countries``, from ``countryinfo``), or a
  place CC-CEDICT describes as one (``kgrag.text.bilingual``: "Maoming prefecture-level city
  in Guangdong" → Maoming, 茂名);
- a name that says it is a place ("Cape May County", "Schroon River", "Lake Elkhorn");
- a mention written as a place: an English name after a preposition of place ("in Kharkiv",
  "from Tartu"), before a known place ("Kenosha, Wisconsin") or described as one ("Bakersfield is
  a city in …"), a Chinese name ending in a word for a place (莱州, 环渤海地区, 雷州半岛). "在"
  before a Chinese name is no evidence: "在中超联赛中" is in a league.
"""

from __future__ import annotations

import re

from kgrag.lexicon.countries import is_country_or_province
from kgrag.text.bilingual import place_names
from kgrag.text.normalize import to_simplified
from kgrag.text.scripts import has_han

PLACE_LABELS = frozenset({"GPE", "LOC"})
_EN_BEFORE = re.compile(r"\b(?:in|at|from|near|to|into|across|outside|inside|around|throughout|towards?|via)\s+"
                        r"(?:the\s+)?$", re.I)
# A name that says it is a place: "Cape May County", "Schroon River", "Lake Elkhorn", "Kingdom of
# Hawaii", "West 57th Street".
_EN_PLACE_NOUNS = ("county|township|prefecture|district|region|province|state|city|town|village|borough|parish|"
                   "municipality|commune|oblast|canton|shire|republic|kingdom|empire|island|islands|isle|peninsula|"
                   "lake|river|creek|brook|bay|harbor|harbour|coast|sea|ocean|gulf|strait|canal|valley|mountain|"
                   "mountains|mount|hill|hills|cape|port|fort|park|forest|desert|plain|plains|street|avenue|road|"
                   "square|heights|springs|falls|estates|delta|basin|plateau|highlands")
_EN_PLACE_NAME = re.compile(rf"\b(?:{_EN_PLACE_NOUNS})\b", re.I)
# Written as a place after it: "Kenosha, Wisconsin", "Bakersfield is a city in …".
_EN_AFTER = re.compile(rf"^(?:,\s+(?P<in>[A-Z][\w.]*(?:\s+[A-Z][\w.]*)?)|\s+(?:is|was)\s+(?:a|an|the)\s+"
                       rf"(?:[\w-]+\s+){{0,3}}?(?:{_EN_PLACE_NOUNS}|capital|hamlet|suburb|neighborhood|neighbourhood|"
                       rf"community|locality|settlement|country|area|census-designated place)\b)")
_ZH_ENDS = ("省", "市", "县", "区", "镇", "乡", "村", "州", "岛", "山", "河", "江", "湖", "海", "湾", "港", "站", "峡",
            "岭", "城", "半岛", "地区", "平原", "盆地", "高原")


def is_known_place(name: str) -> bool:
    """Whether a dictionary knows ``name`` as a place."""
    if is_country_or_province(name):
        return True
    known = place_names()
    if not has_han(name):
        return name.casefold() in known.places
    simplified = to_simplified(name)
    # A country CC-CEDICT glosses by its English name: 德国 "Germany", 巴西 "Brazil".
    gloss = known.glossed_as.get(simplified)
    return simplified in known.places or (gloss is not None and is_country_or_province(gloss))


def place_evidenced(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]``, labelled a place, is one: a known place, or written as one."""
    name = text[start:end]
    if has_han(name):
        return name.endswith(_ZH_ENDS) or is_known_place(name)
    if _EN_PLACE_NAME.search(name) or _EN_BEFORE.search(text[max(0, start - 40):start]):
        return True
    after = _EN_AFTER.match(text[end : end + 80])
    if after is not None and (after.group("in") is None or is_known_place(after.group("in"))):
        return True
    return is_known_place(name)
