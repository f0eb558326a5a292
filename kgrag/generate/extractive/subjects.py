"""The subjects a question compares, found in the sources without an LLM: which words of the
question name them (source titles written there, else the longest words around "and"/"or" the
sources hold), the sentences that say what each is (``profile``), and the person a relation
leads to ("the director of Seven Sinners" → "directed by Albert de Courville").

Used by the yes/no answers (``polar``), the which-of-two answers (``compare``) and the hops
(``relayed``, ``located``). Names are
matched as casefolded word runs (``norm``), so "About A Wife, A Dream And Another..." finds
"About a Wife, a Dream and Another ...".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgrag.generate.citations import source_sentences
from kgrag.generate.extractive.answerer import Pick
from kgrag.generate.tuning import EXTRACTIVE
from kgrag.generate.types import Source
from kgrag.text.patterns import BRACKETED
from kgrag.text.sentences import Sentence, answer_text, plain, terms

# The agent a question compares instead of the subjects ("the directors of films A and B",
# "the film whose director ...") and the passive verb a subject's sentence names it with.
RELATIONS = {"director": "directed", "writer": "(?:written|screenplay)",
             # "a one-act singspiel by Mozart", "a play by the Norwegian playwright Henrik Ibsen"
             "composer": "(?:composed|music|opera|operetta|ballet|symphony|singspiel|concerto|sonata|oratorio)",
             "author": "(?:written|novel|play|book|poem|story|memoir|comedy|tragedy)",
             "founder": "founded", "creator": "created", "producer": "produced",
             "architect": "designed", "performer": "(?:performed|recorded|sung|song|album|single)"}
RELATION = re.compile(r"\b(" + "|".join(RELATIONS) + r")s?\b", re.I)
_PERSON = (r"[A-Z][\w.'’-]*(?:\s+(?:[A-Z][\w.'’-]*|(?:de|da|di|del|van|von|der|la|le|bin|al|of)(?=\s+[A-Z])))*"
           r"(?:,\s+(?:Duke|Count|Countess|Duchess|King|Queen|Prince|Princess|Earl|Lord|Lady|Margrave|Margravine|"
           r"Viscount|Baron|Marquess|Emperor|Empress|Bishop)\s+of\s+[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)?")
# What a sentence may say of the person before naming them: "by the American rock band Pearl
# Jam", "by saxophonist Sonny Stitt" — words, not a name's particles ("by Albert de Courville") or
# a join ("by Madonna and Britney Spears").
_DESCRIBED = (r"(?:(?:[A-Z][a-z]+\s+)?(?:(?!(?:and|or|with|in|at|of|on|for|from|the|de|da|di|del|van|von|der|"
              r"la|le|bin|al)\s)[a-z][\w-]*\s+){1,3})?")
# A relative a question reaches through the subject ("the father of X", "X's wife") and how the
# subject's page names them: "son of A and B" (A the father, B the mother), "his wife, C", "married C".
_OF_PARENTS = rf"\b(?:son|daughter|child|heir|eldest child|only child)\s+of\s+(?:the\s+)?({_PERSON})"
KIN = {
    "father": [_OF_PARENTS, rf"\b(?:his|her)\s+father,?\s+(?:was\s+)?(?:the\s+)?({_PERSON})"],
    "mother": [rf"{_OF_PARENTS}\s+and\s+(?:his\s+wife\s+|of\s+)?({_PERSON})",
               rf"\b(?:his|her)\s+mother,?\s+(?:was\s+)?(?:the\s+)?({_PERSON})"],
    "spouse": [rf"\bmarried\s+(?:to\s+)?({_PERSON})", rf"\b(?:wife|husband|spouse|widow|consort)\s+of\s+({_PERSON})",
               rf"\b(?:his|her)\s+(?:wife|husband|spouse),?\s+(?:was\s+)?({_PERSON})"],
}
KIN_WORDS = {"father": "father", "mother": "mother", "husband": "spouse", "wife": "spouse", "spouse": "spouse"}
PARENTHESISED = re.compile(rf"\s*{BRACKETED}")


def bare(name: str) -> str:
    """"Seven Sinners (1936 Film)" → "Seven Sinners"."""
    return PARENTHESISED.sub("", name).strip()


def subjects_around(body: str, sources: Sequence[Source], joins: Sequence[str]) -> tuple[tuple[str, tuple[int, int]], ...] | None:
    """The two subjects and their spans in ``body``: two source titles written there, joined by
    one of ``joins``; else the split at a join whose two sides end in the longest words the
    sources hold."""
    titled = titled_spans(body, sources, joins)
    if titled is not None:
        return titled
    texts = [norm(s.text) for s in sources]
    best: tuple[int, tuple[tuple[str, tuple[int, int]], ...]] | None = None
    for join in joins:
        for m in re.finditer(re.escape(join), body, re.I):
            left = longest_held(body[:m.start()], texts, from_end=True, offset=0)
            right = longest_held(body[m.end():], texts, from_end=False, offset=m.end())
            if left and right:
                size = len(left[0]) + len(right[0])
                if best is None or size > best[0]:
                    best = (size, (left, right))
    return best[1] if best else None


def titled_spans(body: str, sources: Sequence[Source], joins: Sequence[str]) -> tuple[tuple[str, tuple[int, int]], ...] | None:
    """Two source titles written in ``body`` (the longest that do not overlap), in reading order,
    with one of ``joins`` ("and", "or") between them; None otherwise."""
    spans: list[tuple[int, int]] = []
    titles = {t for s in sources for t in title_forms(s.context.title or "")}
    for title in sorted(titles, key=len, reverse=True):
        for m in re.finditer(r"(?<!\w)" + re.escape(title) + r"(?!\w)", body, re.I):
            if all(m.end() <= a or m.start() >= b for a, b in spans):
                spans.append((m.start(), m.end()))
    if len(spans) < 2:
        return None
    pairs = sorted(sorted(spans, key=lambda s: s[1] - s[0], reverse=True)[:2])
    between = body[pairs[0][1]:pairs[1][0]]
    if not any(join.strip() in between.casefold().split() for join in joins):
        return None
    return tuple((body[a:b], (a, b)) for a, b in pairs)


def title_forms(title: str) -> list[str]:
    bare = PARENTHESISED.sub("", title).strip()
    return [t for t in dict.fromkeys([title.strip(), bare]) if len(t) >= 3]


def longest_held(side: str, texts: list[str], *, from_end: bool, offset: int) -> tuple[str, tuple[int, int]] | None:
    """The longest run of whole words at the inner end of ``side`` (next to the join) that some
    source holds and that starts with a capital ("the movies About a Wife" → "About a Wife")."""
    words = list(re.finditer(r"\S+", side))
    runs = range(len(words)) if from_end else range(len(words), 0, -1)
    for i in runs:
        chosen = words[i:] if from_end else words[:i]
        start, end = chosen[0].start(), chosen[-1].end()
        phrase = side[start:end].strip(" ,;:?!")  # "… the Hornets' Nest?": the question mark is no part of it
        if phrase[:1].isupper() and norm(phrase).strip() and any(norm(phrase) in t for t in texts):
            return phrase, (offset + start, offset + start + len(phrase))
    return None


def profile(name: str, sources: Sequence[Source]) -> list[tuple[Source, Sentence]]:
    """The sentences that say what ``name`` is: the first ones of the source titled with it,
    else every sentence where it is the subject ("The Gordons are ...", not "... toured
    Ireland"), in source order."""
    own = titled_with(name, sources)
    if own is not None:
        return [(own, sentence) for sentence in source_sentences(own)[:EXTRACTIVE.defining_sentences]]
    subject = re.compile(rf"(?<!\w){re.escape(bare(name))}(?:\s*{BRACKETED})?,?"
                         r"\s+(?:is|was|are|were)\b", re.I)
    return [(s, sentence) for s in sources if may_be_about(name, s)
            for sentence in source_sentences(s) if subject.search(sentence.text)]


def may_be_about(name: str, source: Source) -> bool:
    """A name written with its disambiguation ("The Gordons (duo)") is read only in the source
    titled so: others with "The Gordons" as a subject are about namesakes (an album)."""
    return not PARENTHESISED.search(name) or norm(source.context.title or "") == norm(name)


def titled_with(name: str, sources: Sequence[Source]) -> Source | None:
    """The source whose document opens with ``name``'s own text, read from its start (a later
    window of it holds no defining sentence): titled with it as written ("The Gordons (duo)",
    never the album "The Gordons (album)"), or, for a name written without a disambiguation,
    titled with it bare ("Seven Sinners" → "Seven Sinners (1936 film)")."""
    opening = [s for s in sources if s.offset == 0]
    key = norm(name)
    exact = next((s for s in opening if key == norm(s.context.title or "")), None)
    if exact is not None or PARENTHESISED.search(name):
        return exact
    return next((s for s in opening if key in {norm(t) for t in title_forms(s.context.title or "")}), None)


def led_to(profile: list[tuple[Source, Sentence]], relation: str) -> tuple[str, Pick] | None:
    """The person ``relation`` names in the subject's sentences, then in its whole source: an
    agent by its passive verb ("director" → "directed by Mike Leigh"), a relative as a page names
    one ("mother" → "son of Amadeus IX, Duke of Savoy and Yolande of Valois")."""
    if relation in RELATIONS:
        patterns = [(re.compile(rf"\b{RELATIONS[relation]}\s+by\s+(?:the\s+)?{_DESCRIBED}({_PERSON})"), 1)]
    else:
        compiled = [re.compile(p) for p in KIN[KIN_WORDS[relation]]]
        patterns = [(c, c.groups) for c in compiled]  # the last group: "son of A and B" → B
    read = list(profile)
    for source in {s.n: s for s, _ in profile}.values():
        whole = source.whole()
        read += [(whole, sentence) for sentence in source_sentences(whole)]
    for pattern, group in patterns:
        for source, sentence in read:
            m = pattern.search(sentence.text)
            if m:
                return _name(m.group(group)), pick(source, sentence)
    return None


def _name(found: str) -> str:
    """A name as matched, without the sentence's full stop ("Yolande of Valois." → "Yolande of
    Valois"; "J. R. R." keeps its initials)."""
    return found if re.search(r"\b[A-Z]\.$", found) else found.rstrip(".")


def bracketed(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(BRACKETED, text)]


def pick(source: Source, sentence: Sentence) -> Pick:
    body = answer_text(plain(sentence.text))
    return Pick(source, sentence, body, terms(body))


def in_reading_order(picks: list[Pick]) -> list[Pick]:
    """Each sentence once, in source and reading order: how an answer quotes its evidence."""
    return sorted(unique(picks), key=lambda p: (p.source.n, p.sentence.start))


def unique(picks: list[Pick]) -> list[Pick]:
    out: list[Pick] = []
    for p in picks:
        if not any(q.source.n == p.source.n and q.sentence.start == p.sentence.start for q in out):
            out.append(p)
    return out


def norm(text: str) -> str:
    """Casefolded words between single spaces, padded, so " word run " finds whole words."""
    return " " + " ".join(re.findall(r"\w+", text.casefold())) + " "
