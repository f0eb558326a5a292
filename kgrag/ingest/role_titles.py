"""Role titles and the unit each one leads, read from the title itself.

An organisation's documents name an executive by a title that spells the unit it leads ("Chief
Marketing Officer", "Chief Information Security Officer", "VP of Global Channels", "Head of Legal")
and rarely say it in a sentence: a role and the division it leads may share no table row and seldom
co-occur, so a question that chains "the team → its division → the executive who leads it → their
Slack channel" had no edge to walk from the division to the role (docs/decisions.md, "Role titles
lead their unit"). ``role_units`` finds each title and the names its unit may be stored under, most
specific first ("Information Security", "Security"; "Financial" → "Finance" as well); the term
extractor relates the title to the first of them that is an entity (a LEADS relation evidenced by
the chunk that names the title).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# A role leads its unit as strongly as a table row relates its entries (``terms.WEIGHTS``).
LEADS_WEIGHT = 2.0
# A word of a unit's name: capitalised, and no word of a title (a list of titles is not a unit).
_UNIT_WORD = r"(?!(?:Chief|Head|Director|Senior|Vice|VP|SVP|EVP|Manager|Officer)\b)[A-Z][\w&'’-]*"
_UNIT = rf"{_UNIT_WORD}(?:\s+(?:and\s+|&\s+)?{_UNIT_WORD}){{0,3}}"
_CHIEF = re.compile(rf"\bChief\s+({_UNIT_WORD}(?:\s+{_UNIT_WORD}){{0,2}}?)\s+Officer\b")
# Titles that head a unit "of" it, longest first; both the running-text and the stored-name
# patterns below are built from this one list.
_HEADS = ("Senior Vice President", "Executive Vice President", "Vice President", "SVP", "EVP", "VP", "Head",
          "Senior Director", "Director")
_HEAD_WORDS = "|".join(r"\s+".join(h.split()) for h in _HEADS)
_HEAD_OF = re.compile(rf"\b(?:{_HEAD_WORDS})(?:\s+of\s+|,\s+)({_UNIT})")
# Units a title names by a word that is no unit of its own ("Chief Executive Officer").
_NOT_UNITS = frozenset({"executive", "operating", "staff", "people manager"})
_CONNECTORS = frozenset({"and", "&", "of", "the", "for"})
# The same titles as a stored entity's normalized name spells them (lower case, no commas).
_STORED_CHIEF = re.compile(r"^chief ((?:\S+ ){0,2}\S+) officer$")
_STORED_HEAD_OF = re.compile(rf"^(?:{'|'.join(h.lower() for h in _HEADS)}) of ((?:\S+ ){{0,3}}\S+)$")
_STORED_STARTS = tuple(sorted({"chief ", *(f"{h.lower().split()[0]} " for h in _HEADS)}))
# Adjective → the noun a unit is named by ("Chief Financial Officer" leads Finance).
_ADJECTIVE_ENDINGS = (("ial", "e"), ("ical", "ics"))


@dataclass(frozen=True)
class RoleTitle:
    """A role title in a text (its span) and the names its unit may go by, best first."""

    title: str
    start: int
    end: int
    units: tuple[str, ...]


def role_titles(text: str) -> list[RoleTitle]:
    """Every role title of ``text`` whose title names a unit, in order of appearance."""
    found = []
    for pattern, tails in ((_CHIEF, True), (_HEAD_OF, False)):
        for m in pattern.finditer(text):
            units = unit_names(m.group(1), tails)
            if units:
                found.append(RoleTitle(m.group(0), m.start(), m.end(), units))
    found.sort(key=lambda r: r.start)
    return found


def unit_names(words: str, tails: bool = True) -> tuple[str, ...]:
    """The names a unit spelled ``words`` in a title may go by, most specific first: the words,
    then (``tails``) each shorter tail ("Information Security" → "Security"), each also with an
    adjective turned into its noun ("Financial" → "Finance"). Tails are for "Chief … Officer",
    whose words are a unit's name; "VP of Global Channels" leads no "Channels"."""
    parts = words.split()
    names: list[str] = []
    for i in range(len(parts) if tails else 1):
        tail = parts[i:]
        if tail[0].casefold() in _CONNECTORS:
            continue  # "Research and Development": no unit is called "and Development"
        names.append(" ".join(tail))
        nouns = [_noun(w) for w in tail]
        if nouns != tail:
            names.append(" ".join(nouns))
    return tuple(dict.fromkeys(n for n in names if n.casefold() not in _NOT_UNITS))


def stored_role_units(alias: str) -> tuple[str, ...]:
    """The names of the unit a stored entity's normalized name ("chief marketing officer",
    "vp of global channels") leads, best first; () for a name that is no role title."""
    if not alias.startswith(_STORED_STARTS):
        return ()
    m = _STORED_CHIEF.match(alias)
    if m is not None:
        return unit_names(m.group(1), tails=True)
    m = _STORED_HEAD_OF.match(alias)
    return unit_names(m.group(1), tails=False) if m is not None else ()


def _noun(word: str) -> str:
    lower = word.casefold()
    for ending, replacement in _ADJECTIVE_ENDINGS:
        if lower.endswith(ending) and len(lower) > len(ending) + 3:
            return word[: -len(ending)] + replacement
    return word


class AwaitedUnits:
    """Roles whose unit no entity named yet, kept until one does: documents arrive in any order
    (a handbook's executives' section may come before its divisions' table), and the
    relation must not depend on it. ``wait`` a role on its unit's names; ``arrived`` returns the
    roles a new entity is the unit of, each role once. An extractor starts waiting for the units
    of the roles stored by earlier runs (``stored_role_units``), so a unit ingested in a later
    run — or in the re-run after a crash — is led as in one clean run."""

    def __init__(self) -> None:
        self._by_unit: dict[str, list[str]] = {}  # unit key → role keys waiting for it
        self._led: set[str] = set()  # roles given their unit

    def wait(self, role_key: str, unit_keys: Sequence[str]) -> None:
        if role_key in self._led:
            return
        for key in unit_keys:
            waiting = self._by_unit.setdefault(key, [])
            if role_key not in waiting:
                waiting.append(role_key)

    def __bool__(self) -> bool:
        """Whether any role waits."""
        return bool(self._by_unit)

    def led(self, role_key: str) -> None:
        """``role_key`` was related to a stored unit: it waits no more."""
        self._led.add(role_key)

    def arrived(self, unit_key: str) -> list[str]:
        roles = [r for r in self._by_unit.pop(unit_key, []) if r not in self._led]
        self._led.update(roles)
        return roles
