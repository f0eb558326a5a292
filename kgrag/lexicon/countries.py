"""Countries named in English text: "an American clergyman", "in the U.S. state of Oregon",
"People's Republic of China", "Hubei Province" → one country each.

The names come from ``countryinfo`` (PyPI, MIT: short names, alternative spellings, demonyms and
provinces of 250 countries), not from a hand-kept list; ``_EXTRA_NAMES`` / ``_EXTRA_DEMONYMS`` add the few forms it lacks
that encyclopaedic text uses all the time ("U.S.", "English", "Soviet"). A demonym two countries
share ("American": the United States and American Samoa) names the more populous one. A
province is a weaker clue than a country or a demonym (``CountryMention.province``), and one
whose name two countries share ("Victoria", "Limburg") or that is itself a country ("Georgia")
names none.

Where a country's name is part of a longer name it names nothing: "Neil Jordan", "New Jersey",
"Chad Smith" (a capitalised word right before or after it, other than an opener such as "In").
A demonym is not so guarded ("an American Western film"), but "German-born" is a birthplace,
not a nationality, and is skipped.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_EXTRA_NAMES = {
    "U.S.": "United States",
    "U.S.A.": "United States",
    "US": "United States",
    "USA": "United States",
    "America": "United States",
    "UK": "United Kingdom",
    "U.K.": "United Kingdom",
    "Britain": "United Kingdom",
    "England": "United Kingdom",
    "Scotland": "United Kingdom",
    "Wales": "United Kingdom",
    "Soviet Union": "Russia",
    "Holland": "Netherlands",
}
_EXTRA_DEMONYMS = {
    "English": "United Kingdom",
    "Scottish": "United Kingdom",
    "Welsh": "United Kingdom",
    "Soviet": "Russia",
    "Dutch": "Netherlands",
    "Icelandic": "Iceland",  # countryinfo has the noun, "Icelander"
    "Korean": "South Korea",
    "New Zealander": "New Zealand",
    "Thai": "Thailand",
    "Scots": "United Kingdom",
}
# Adjectives of a people or a region that name no one country: still no names to look for in
# a question ("Which African country …", "the European Union's …").
_REGIONAL_ADJECTIVES = frozenset({"African", "European", "Asian", "Arab", "Arabian", "Scandinavian", "Caribbean",
                                  "Latin", "Slavic", "Nordic", "Balkan", "Baltic", "Middle Eastern"})
# Alternative spellings that are common English words, never read as a country.
_NOT_NAMES = frozenset({"Island"})
# A capitalised word before a country that does not make it part of a name ("In France", "The
# United States"): sentence openers.
_FUNCTION_WORDS = frozenset("in the from at to for by on of and both across throughout within outside inside"
                            " like unlike whereas while since when after before".split())
_SHORT_OK = frozenset({"US", "UK", "USA"})  # two/three-letter codes otherwise name nothing


@dataclass(frozen=True)
class CountryMention:
    country: str  # the country's English short name: "United States"
    surface: str  # as written: "American"
    start: int
    end: int
    province: bool = False  # named through one of its provinces or states ("Oregon")


@dataclass(frozen=True)
class _Name:
    country: str
    demonym: bool
    province: bool


def demonym(country: str) -> str:
    """The people's adjective of ``country`` ("United States" → "American"), else its name."""
    return _demonyms().get(country, country)


def is_demonym(word: str) -> bool:
    """Whether ``word`` (any case) is the adjective of a people: a country's ("American",
    "Chinese", "Danish") or a region's ("African", "European")."""
    return word.casefold() in _demonym_words()


@lru_cache(maxsize=1)
def _demonym_words() -> frozenset[str]:
    country = {word.casefold() for word, name in _names().items() if name.demonym}
    return frozenset(country | {word.casefold() for word in [*_EXTRA_DEMONYMS, *_REGIONAL_ADJECTIVES]})


def country_mentions(text: str) -> list[CountryMention]:
    """Every country ``text`` names, in order; country names and demonyms before provinces
    only in ``first_country``'s choice, here simply in reading order."""
    names = _names()
    found: list[CountryMention] = []
    for m in _pattern().finditer(text):
        name = names[m.group()]
        if text.startswith("-born", m.end()):
            continue
        if not name.demonym and _inside_a_longer_name(text, m.start(), m.end()):
            continue
        found.append(CountryMention(name.country, m.group(), m.start(), m.end(), name.province))
    return found


def first_country(text: str) -> CountryMention | None:
    """The first country ``text`` names by name or demonym; else the first it names by a
    province; else None."""
    mentions = country_mentions(text)
    direct = [m for m in mentions if not m.province]
    chosen = direct or mentions
    return chosen[0] if chosen else None


def _inside_a_longer_name(text: str, start: int, end: int) -> bool:
    before = re.search(r"([A-Z][\w'.-]*)\s+$", text[max(0, start - 40):start])
    if before and before.group(1).casefold() not in _FUNCTION_WORDS:
        return True
    return re.match(r"\s+[A-Z]", text[end:end + 3]) is not None


@lru_cache(maxsize=1)
def _names() -> dict[str, _Name]:
    from countryinfo import all_countries  # ~30 ms, once, and only where a question needs it

    countries: list[dict[str, Any]] = [dict(c.info()) for c in all_countries()]
    population = {c["name"]: c.get("population") or 0 for c in countries}
    by_demonym: dict[str, str] = {}
    for c in sorted(countries, key=lambda c: population[c["name"]]):
        if c.get("demonym"):
            by_demonym[c["demonym"]] = c["name"]  # the more populous country comes last and wins
    names: dict[str, _Name] = {}
    for c in countries:
        for spelling in [c["name"], *(c.get("altSpellings") or [])]:
            if _usable(spelling) and spelling not in _NOT_NAMES:
                names.setdefault(spelling, _Name(c["name"], demonym=False, province=False))
    for word, country in by_demonym.items():
        names.setdefault(word, _Name(country, demonym=True, province=False))
    for word, country in _EXTRA_NAMES.items():
        names[word] = _Name(country, demonym=False, province=False)
    for word, country in _EXTRA_DEMONYMS.items():
        names.setdefault(word, _Name(country, demonym=True, province=False))
    for province, country in _provinces(countries, names).items():
        names.setdefault(province, _Name(country, demonym=False, province=True))
    return names


def _usable(spelling: str) -> bool:
    return len(spelling) > 3 or spelling in _SHORT_OK or "." in spelling


def _provinces(countries: list[dict[str, Any]], taken: dict[str, _Name]) -> dict[str, str]:
    """Province name → its country, for names only one country has ("Abu Zaby (Abu Dhabi)" gives
    both forms)."""
    pairs = [(name, c["name"]) for c in countries for p in (c.get("provinces") or []) for name in _forms(p)]
    owners = Counter(name for name, _ in set(pairs))
    return {name: country for name, country in pairs
            if owners[name] == 1 and name not in taken and _usable(name) and name[0].isupper()}


def _forms(province: str) -> list[str]:
    m = re.fullmatch(r"(.+?)\s*\((.+)\)", province)
    return [m.group(1).strip(), m.group(2).strip()] if m else [province.strip()]


@lru_cache(maxsize=1)
def _demonyms() -> dict[str, str]:
    out: dict[str, str] = {}
    for word, name in _names().items():
        if name.demonym and not name.province:
            out.setdefault(name.country, word)
    return out


@lru_cache(maxsize=1)
def _pattern() -> re.Pattern[str]:
    words = sorted(_names(), key=len, reverse=True)  # longest first: "British Columbia" before "British"
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(w) for w in words) + r")(?![\w])")


def is_country_or_province(name: str, any_case: bool = False) -> bool:
    """Whether ``name`` as written (or in any case) is a country's name or spelling
    ("Netherlands", "U.S.") or one of its provinces or states ("Oregon"); a demonym ("Dutch")
    is not."""
    if any_case:
        return name.strip().casefold() in _folded_places()
    found = _names().get(name.strip())
    return found is not None and not found.demonym


@lru_cache(maxsize=1)
def _folded_places() -> frozenset[str]:
    return frozenset(word.casefold() for word, name in _names().items() if not name.demonym)
