"""Yes/no questions about two subjects' countries, answered from the sources without an LLM:
"Were Scott Derrickson and Ed Wood of the same nationality?", "Are both Jim McBride and Neil
Jordan American?", "Are A and B located in different countries?", "Do both films A and B have
directors from the same country?".

Quoting the two subjects' sentences, as the extractive answer otherwise does, leaves the
comparison to the reader and never says "yes" or "no". Here each subject is found in the
question (a source's title written there, else the longest words around "and" that the sources
hold), its defining sentences are read (the first sentences of the source titled with it, else
the first sentence naming it), and the first country they name after the subject's own name
(``kgrag.lexicon.countries``) is its country. For "the directors of films A and B" the hop is
made first: "directed by X" in A's sentences, then X's own sentences. The answer says the verdict
with the words it rests on, each cited, then quotes those sentences:
``No — Caracu River: Brazil [2]; South Fork Rogue River: U.S. [1]. The Caracu River is ...``.

A verdict needs its evidence: "yes" needs both countries; "no" needs both for "the same
country", one that differs for "both American". Without it there is no verdict (None) and the
usual extractive answer stands. Measured with ``kgrag eval --answers`` (README, "Yes/no
questions"): how many verdicts are given, and how many are wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kgrag.generate.citations import source_sentences
from kgrag.generate.extractive import Pick, compose
from kgrag.generate.sentences import Sentence, answer_text, plain, terms
from kgrag.generate.types import Source
from kgrag.lexicon.countries import country_mentions, first_country

_AUX = re.compile(r"^\s*(?:are|is|were|was|do|does|did|have|has|had)\s+", re.I)
_SAME = re.compile(r"\bsame\s+(?:country|nationality|citizenship)\b|\bcommon\s+(?:country|nationality)\b", re.I)
_DIFFERENT = re.compile(r"\bdifferent\s+(?:countries|nationalities)\b", re.I)
_BOTH = re.compile(r"\bboth\b", re.I)
_JOINS = (" and ", " as ")  # "A and B", "A have the same nationality as B"
# The agent a question compares instead of the subjects ("the directors of films A and B") and
# the passive verb a subject's sentence names it with ("directed by Mike Leigh").
_RELATIONS = {"director": "directed", "composer": "composed", "writer": "written", "author": "written",
              "founder": "founded", "creator": "created", "producer": "produced", "architect": "designed"}
_RELATION = re.compile(r"\b(" + "|".join(_RELATIONS) + r")s?\b", re.I)
_PERSON = r"[A-Z][\w.'’-]*(?:\s+(?:[A-Z][\w.'’-]*|de|da|di|del|van|von|der|la|le|bin|al))*"
_PARENTHESISED = re.compile(r"\s*[(（][^)）]*[)）]")
# Between two demonyms of one nationality phrase: "Russian American", "American- Canadian",
# "Italian/ French", "British–American".
_JOINED = re.compile(r"\s*(?:[-–—/]\s*|\s+and\s+)?|\s+")
# "both of Armenian descent" asks about ancestry, and "of Armenian descent" says it: no nationality.
_ANCESTRY = re.compile(r"\s*\b(?:descent|origin|heritage|ancestry|roots|extraction)\b", re.I)
_DEFINING = 2
_GENERIC = terms("type types kind kinds sort sorts form forms example examples")  # "both types of shrub"  # sentences of a subject's own source read for its country


@dataclass(frozen=True)
class PolarAsked:
    subjects: tuple[str, str]  # as written in the question
    relation: str | None  # "director": compare the subjects' directors
    target: str | None  # "both American?": the country both must have
    different: bool  # "in different countries?": yes means they differ
    category: str | None = None  # "both novelists?": what both must be said to be (yes only)


@dataclass(frozen=True)
class _Nationality:
    """The countries one phrase names: "Russian American", "British–American-Japanese"."""

    countries: frozenset[str]
    surface: str


@dataclass(frozen=True)
class _Found:
    name: str  # the subject, or the person the relation led to
    country: _Nationality
    evidence: list[Pick]  # the sentence naming the country (and the one naming the person)


def answer(question: str, sources: Sequence[Source]) -> tuple[str, list[Pick]] | None:
    """The verdict and the sentences it rests on, or None when the question is no yes/no
    question about countries or the sources do not settle it."""
    asked = polar_asked(question, sources)
    if asked is None:
        return None
    if asked.category is not None:
        return _both_are(asked.subjects, asked.category, sources)
    found = [_country_of(s, asked.relation, sources) for s in asked.subjects]
    verdict = _verdict(asked, found)
    if verdict is None:
        return None
    yes, shown = verdict
    picks = sorted(_unique([p for f in shown for p in f.evidence]), key=lambda p: (p.source.n, p.sentence.start))
    said = "; ".join(f"{f.name}: {f.country.surface} {_markers(f)}" for f in shown)
    return f"{'Yes' if yes else 'No'} — {said}. {compose(picks)}", picks


def _both_are(subjects: tuple[str, str], category: str, sources: Sequence[Source]) -> tuple[str, list[Pick]] | None:
    """"Yes" when each subject's defining sentences hold every word of the category (stemmed:
    "novelists" / "novelist"); no verdict otherwise: a sentence not saying "novelist" does not
    say the subject is none."""
    wanted = terms(category) - _GENERIC
    evidence: list[tuple[str, Pick]] = []
    for subject in subjects:
        profile = _profile(subject, sources)
        held = set().union(*(terms(plain(sentence.text)) for _, sentence in profile)) if profile else set()
        if not wanted <= held:
            return None
        source, sentence = max(profile, key=lambda p: len(terms(plain(p[1].text)) & wanted))
        evidence.append((_PARENTHESISED.sub("", subject).strip(), _pick(source, sentence)))
    said = "; ".join(f"{name} [{pick.source.n}]" for name, pick in evidence)
    picks = sorted(_unique([p for _, p in evidence]), key=lambda p: (p.source.n, p.sentence.start))
    return f"Yes — both {category}: {said}. {compose(picks)}", picks


def polar_asked(question: str, sources: Sequence[Source]) -> PolarAsked | None:
    """What a yes/no question about two subjects' countries asks; None for any other question."""
    aux = _AUX.match(question)
    if aux is None or re.search(r"\bor\b", question, re.I):  # "Is A or B older?" asks which
        return None
    body = question[aux.end():].strip().rstrip("?").strip()
    subjects = _subjects(body, sources)
    if subjects is None:
        return None
    (a, a_span), (b, b_span) = subjects
    rest = body[:a_span[0]] + " " + body[a_span[1]:b_span[0]] + " " + body[b_span[1]:]
    relation = _RELATION.search(rest)
    same, different = _SAME.search(rest) is not None, _DIFFERENT.search(rest) is not None
    target = None if same or different or _ANCESTRY.search(rest) else _target(rest)
    category = None if same or different or target else _category(rest)
    if not (same or different or target or category):
        return None
    return PolarAsked((a, b), relation.group(1).lower() if relation else None, target, different, category)


def _category(rest: str) -> str | None:
    """"both novelists" / "both breeds of dog": the words after "both" that say what each is."""
    both = _BOTH.search(rest)
    if both is None:
        return None
    phrase = re.sub(r"^\s*(?:and\s+)?", "", rest[both.end():]).strip(" ,")
    return phrase if terms(phrase) - _GENERIC else None


def _target(rest: str) -> str | None:
    """"both American(s)" / "both from Germany": the country named after "both"."""
    both = _BOTH.search(rest)
    if both is None:
        return None
    tail = rest[both.end():]
    mention = first_country(tail) or first_country(re.sub(r"\b([A-Z]\w+)s\b", r"\1", tail))
    return mention.country if mention else None


def _subjects(body: str, sources: Sequence[Source]) -> tuple[tuple[str, tuple[int, int]], ...] | None:
    """The two subjects and their spans in ``body``: two source titles written there, joined by
    "and"/"as"; else the split at a join whose two sides end in the longest words the sources
    hold."""
    titled = _titled(body, sources)
    if titled is not None:
        return titled
    texts = [_norm(s.text) for s in sources]
    best: tuple[int, tuple[tuple[str, tuple[int, int]], ...]] | None = None
    for join in _JOINS:
        for m in re.finditer(re.escape(join), body, re.I):
            left = _longest_held(body[:m.start()], texts, from_end=True, offset=0)
            right = _longest_held(body[m.end():], texts, from_end=False, offset=m.end())
            if left and right:
                size = len(left[0]) + len(right[0])
                if best is None or size > best[0]:
                    best = (size, (left, right))
    return best[1] if best else None


def _titled(body: str, sources: Sequence[Source]) -> tuple[tuple[str, tuple[int, int]], ...] | None:
    spans: list[tuple[int, int]] = []
    titles = {t for s in sources for t in _title_forms(s.context.title or "")}
    for title in sorted(titles, key=len, reverse=True):
        for m in re.finditer(r"(?<!\w)" + re.escape(title) + r"(?!\w)", body, re.I):
            if all(m.end() <= a or m.start() >= b for a, b in spans):
                spans.append((m.start(), m.end()))
    if len(spans) < 2:
        return None
    pairs = sorted(sorted(spans, key=lambda s: s[1] - s[0], reverse=True)[:2])
    between = body[pairs[0][1]:pairs[1][0]]
    if not any(join.strip() in between.casefold().split() for join in _JOINS):
        return None
    return tuple((body[a:b], (a, b)) for a, b in pairs)


def _title_forms(title: str) -> list[str]:
    bare = _PARENTHESISED.sub("", title).strip()
    return [t for t in dict.fromkeys([title.strip(), bare]) if len(t) >= 3]


def _longest_held(side: str, texts: list[str], *, from_end: bool, offset: int) -> tuple[str, tuple[int, int]] | None:
    """The longest run of whole words at the inner end of ``side`` (next to the join) that some
    source holds and that starts with a capital ("the movies About a Wife" → "About a Wife")."""
    words = list(re.finditer(r"\S+", side))
    runs = range(len(words)) if from_end else range(len(words), 0, -1)
    for i in runs:
        chosen = words[i:] if from_end else words[:i]
        start, end = chosen[0].start(), chosen[-1].end()
        phrase = side[start:end].strip(" ,;:")
        if phrase[:1].isupper() and _norm(phrase).strip() and any(_norm(phrase) in t for t in texts):
            return phrase, (offset + start, offset + start + len(phrase))
    return None


def _country_of(subject: str, relation: str | None, sources: Sequence[Source]) -> _Found | None:
    profile = _profile(subject, sources)
    if relation is not None:
        led = _led_to(profile, _RELATIONS[relation], sources)
        if led is None:
            return None
        person, named_in = led
        found = _country_of(person, None, sources)
        return None if found is None else _Found(person, found.country, _unique([named_in, *found.evidence]))
    for source, sentence in profile:
        mention = _country_after(subject, sentence.text)
        if mention is not None:
            return _Found(_PARENTHESISED.sub("", subject).strip(), mention, [_pick(source, sentence)])
    return None


def _profile(name: str, sources: Sequence[Source]) -> list[tuple[Source, Sentence]]:
    """The sentences that say what ``name`` is: the first ones of the source titled with it,
    else every sentence where it is the subject ("The Gordons are ...", not "... toured
    Ireland"), in source order."""
    own = _titled_with(name, sources)
    if own is not None:
        return [(own, sentence) for sentence in source_sentences(own)[:_DEFINING]]
    subject = re.compile(rf"(?<!\w){re.escape(_PARENTHESISED.sub('', name).strip())}(?:\s*[(（][^)）]*[)）])?,?"
                         r"\s+(?:is|was|are|were)\b", re.I)
    return [(s, sentence) for s in sources if _may_be_about(name, s)
            for sentence in source_sentences(s) if subject.search(sentence.text)]


def _may_be_about(name: str, source: Source) -> bool:
    """A name written with its disambiguation ("The Gordons (duo)") is read only in the source
    titled so: others with "The Gordons" as a subject are about namesakes (an album)."""
    return not _PARENTHESISED.search(name) or _norm(source.context.title or "") == _norm(name)


def _titled_with(name: str, sources: Sequence[Source]) -> Source | None:
    """The source whose document opens with ``name``'s own text, read from its start (a later
    window of it holds no defining sentence): titled with it as written ("The Gordons (duo)",
    never the album "The Gordons (album)"), or, for a name written without a disambiguation,
    titled with it bare ("Seven Sinners" → "Seven Sinners (1936 film)")."""
    opening = [s for s in sources if s.offset == 0]
    key = _norm(name)
    exact = next((s for s in opening if key == _norm(s.context.title or "")), None)
    if exact is not None or _PARENTHESISED.search(name):
        return exact
    return next((s for s in opening if key in {_norm(t) for t in _title_forms(s.context.title or "")}), None)


def _led_to(profile: list[tuple[Source, Sentence]], verb: str, sources: Sequence[Source]) -> tuple[str, Pick] | None:
    """"directed by Mike Leigh" in the subject's sentences (its whole source when titled)."""
    pattern = re.compile(rf"\b{verb}\s+by\s+(?:the\s+)?({_PERSON})")
    read = list(profile)
    for source in {s.n: s for s, _ in profile}.values():
        read += [(source, sentence) for sentence in source_sentences(source)]
    for source, sentence in read:
        m = pattern.search(sentence.text)
        if m:
            return m.group(1), _pick(source, sentence)
    return None


def _country_after(name: str, sentence: str) -> _Nationality | None:
    """The countries of the first phrase naming some after ``name`` (where the sentence names
    it: a country in the name itself, "Republic of Ireland national team", is no answer), outside
    parentheses (a birthplace: "(born Ann Arbor, Michigan, U.S., ...) is an American composer")
    unless only they name one. A province counts where it comes first ("Governor of South
    Dakota ... ambassador to Singapore")."""
    bare = _PARENTHESISED.sub("", name).strip()
    at = re.search(re.escape(bare), sentence, re.I)
    tail_from = at.end() if at else 0
    mentions = [m for m in country_mentions(sentence)
                if m.start >= tail_from and not _ANCESTRY.match(sentence, m.end)]
    bracketed = _bracketed(sentence)  # (an ancestry, "of Armenian descent", is none either)
    outside = [m for m in mentions if not any(a <= m.start < b for a, b in bracketed)]
    chosen = outside or mentions
    if not chosen:
        return None
    phrase = [chosen[0]]
    for m in chosen[1:]:
        gap = sentence[phrase[-1].end:m.start]
        if not (_JOINED.fullmatch(gap) or (re.fullmatch(r"\s*,\s*", gap) and m.country == phrase[-1].country)):
            break  # "Michigan, U.S." is one place; "Brazil, Argentina" would be two
        phrase.append(m)
    return _Nationality(frozenset(m.country for m in phrase), sentence[phrase[0].start:phrase[-1].end])


def _bracketed(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"[(（][^)）]*[)）]", text)]


def _verdict(asked: PolarAsked, found: list[_Found | None]) -> tuple[bool, list[_Found]] | None:
    known = [f for f in found if f is not None]
    if asked.target is not None:
        differing = [f for f in known if asked.target not in f.country.countries]
        if differing:
            return False, differing
        return (True, known) if len(known) == 2 else None
    if len(known) < 2:
        return None
    same = bool(known[0].country.countries & known[1].country.countries)  # one shared is the same
    return same != asked.different, known


def _markers(found: _Found) -> str:
    return f"[{found.evidence[-1].source.n}]"


def _pick(source: Source, sentence: Sentence) -> Pick:
    body = answer_text(plain(sentence.text))
    return Pick(source, sentence, body, terms(body))


def _unique(picks: list[Pick]) -> list[Pick]:
    out: list[Pick] = []
    for p in picks:
        if not any(q.source.n == p.source.n and q.sentence.start == p.sentence.start for q in out):
            out.append(p)
    return out


def _norm(text: str) -> str:
    """Casefolded words between single spaces, padded, so " word run " finds whole words."""
    return " " + " ".join(re.findall(r"\w+", text.casefold())) + " "
