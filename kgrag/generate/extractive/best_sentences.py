"""An answer without an LLM: the source sentences that best cover the question, each cited.

Query terms are weighted by how rare they are among the sources (a term every source has
says little about which sentence answers). Sentences are picked greedily: each next one must
cover a query term the picked ones do not, and score at least a fraction of the best one, so
an answer split over two sentences ("X is ... . It was founded in 1755.") is found while
loosely related sentences stay out. Sentences from lower-ranked hits are discounted.

Beyond the words (measured with ``kgrag eval --answers``; docs/decisions.md, "Sentence selection
rules"):
- a sentence holding the kind of answer the question asks for (a year for "when", an amount
  for "多少钱", a method for "怎么求": ``kgrag.text.asks``) scores ``EXTRACTIVE.ask_bonus`` times more;
- a sentence in the other script than the question's (an English sentence for a Chinese
  question) scores ``EXTRACTIVE.other_language`` times less;
- a sentence that shares only a name with the question ("Black Book is an unofficial
  designation of optical disc formats" for a question about the film Black Book) scores
  ``EXTRACTIVE.name_only`` times less;
- the bridge of a two-hop question: when a picked sentence names another source's subject
  (its title: "professor at Moscow State University"), that source's best sentence for the
  rest of the question is added ("It was founded in 1755 by Mikhail Lomonosov");
- the answer leads with the best sentence holding the asked kind (``_answer_first``), not the
  bridge sentence its higher-ranked source puts first in reading order;
- across languages (``_by_meaning``): a sentence in another script than the question shares
  almost no word with it, so with a multilingual model at hand (``Asked.meaning``) the best of
  the first sources' sentences in the other script is weighed by meaning against the best
  sentences of the question's own script, and quoted when it means more.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace

from kgrag.generate.citations import quotable_sentences
from kgrag.generate.extractive.answerer import Extracted, Pick
from kgrag.generate.extractive.asked import Asked
from kgrag.generate.extractive.heading_name import asked_kind, heading_answer
from kgrag.generate.extractive.sections import heading_levels
from kgrag.generate.tuning import ACROSS_LANGUAGES, EXTRACTIVE
from kgrag.generate.types import Source
from kgrag.text.asks import asks_for_code, could_answer, fits
from kgrag.text.markdown_tables import TableLine, table_lines
from kgrag.text.patterns import BRACKETED, PERSONAL_PRONOUNS_EN, SENTENCE_END_CHARS
from kgrag.text.scripts import has_han, is_mainly_non_latin, is_no_space_char
from kgrag.text.sentences import Sentence, answer_text, is_code, plain, readable_cells, row_text, terms

# Sentences picked for holding the asked kind of answer (beyond their words): a method may take
# several ("倍增法…", "Tarjan…"), a date or an amount one ("renamed in 1940" is no second founding).
MAX_ASKED = {"method": 2, "reason": 2}
# Kinds whose answer is an explanation about the question's subject, not a fact next to its
# name: a sentence that only restates the subject ("最近公共祖先是……深度最大的节点" for
# "最近公共祖先怎么求？") answers "what is it", not "how" or "why".
EXPLAINED = frozenset({"method", "reason"})

# Kinds whose sentence leads the answer (``_answer_first``), measured with ``kgrag eval --answers``.
LEADING_KINDS = frozenset({"time", "amount", "duration"})
LEADING_KINDS_ENGLISH = frozenset({"place", "person"})

# A choice between subjects: "Which film came out first, A or B?", "Who was born first out of A
# and B?", "… between A and B", "Are both A and B …?".
_CHOICE = re.compile(r"\bor\b|\bout of\b|\bbetween\b|\bboth\b", re.I)
_PERSONAL_WORDS = "|".join(PERSONAL_PRONOUNS_EN)
_PERSONAL = re.compile(rf"(?:{_PERSONAL_WORDS})\b", re.I)
_PRONOUN = re.compile(rf"(?:{_PERSONAL_WORDS}|this|these)\b|[他她它其该此]", re.I)
_FINAL_PUNCTUATION = re.compile(f"[{SENTENCE_END_CHARS};；]+$")
_NAME = re.compile(r"(?<!^)(?<![.?!]\s)\b[A-Z][\w'-]*(?:\s+(?:[A-Z][\w'-]*|of|the|de|von|van))*(?<![\s])")
_PARENTHESISED = re.compile(rf"\s*{BRACKETED}\s*$")


def choose(asked: Asked, sources: Sequence[Source]) -> list[Pick]:
    """The 1..EXTRACTIVE.max_sentences sentences of the answer, in source and reading order. ``asked.names``:
    other names of the question's entities (aliases); their words count as question words."""
    question = asked.question
    candidates = [_pick(source, q.sentence, q.asked) for source in sources for q in quotable_sentences(source)]
    candidates = [c for c in _tables_as_read(candidates) if c.terms]
    if not asks_for_code(question):  # a line of code answers only a question asking for code
        candidates = [c for c in candidates if not is_code(c.source.text, c.sentence.start, c.body)]
    if not candidates:
        return []
    names = [_bare_title(n) for n in asked.names]  # "Black Book (film)": the disambiguation is no question word
    query = terms(" ".join([question, *names]))
    _read_under_headings(candidates, query)
    weights = _query_weights(query, candidates, len(sources))
    setting = asked.setting
    for t in setting & weights.keys():
        weights[t] *= EXTRACTIVE.setting_share
    total = math.fsum(weights.values())
    kind = asked.kind
    name_terms = _name_terms(question, names)
    chinese = asked.chinese
    for c in candidates:
        covered = math.fsum(weights.get(t, 0.0) for t in c.terms)
        length_discount = 1 + max(0, len(c.body) - EXTRACTIVE.long_sentence) / (2 * EXTRACTIVE.long_sentence)
        rank_discount = 1 + EXTRACTIVE.rank_discount * (c.source.n - 1)
        c.score = covered / total / length_discount / rank_discount if total else 0.0
        c.score *= _cue_factor(c, kind, chinese, name_terms, query, asked.terms)
    _lift_answers_of_the_asked_kind(candidates, kind)
    best = max(candidates, key=lambda c: c.score)
    across = _by_meaning(asked, candidates, query)
    if across is not None:
        return across
    if best.score == 0.0:
        return [_lead_sentence(candidates)]
    picked: list[Pick] = []
    covered_terms = _given(kind, name_terms, candidates, sources)
    ask_gain = total / len(weights) if weights else 0.0  # one average question word
    asked_quota = MAX_ASKED.get(kind or "", 1)
    while len(picked) < EXTRACTIVE.max_sentences:
        fitting = sum(1 for p in picked if fits(kind, p.body))
        rest = [
            (_gain(c, weights, covered_terms) + (ask_gain if fitting < asked_quota and fits(kind, c.body) else 0.0), c)
            for c in candidates
            if c not in picked and c.score >= EXTRACTIVE.min_relative_score * best.score
        ]
        rest = [(g, c) for g, c in rest if g > 0]
        if not rest:
            break
        # Most new coverage first; among equals the better-scored (higher-ranked) sentence.
        _, nxt = max(rest, key=lambda gc: (gc[0] / (1 + EXTRACTIVE.rank_discount * (gc[1].source.n - 1)), gc[1].score))
        picked.append(nxt)
        covered_terms |= nxt.terms
    bridge = _bridge(picked, candidates, weights, covered_terms, kind, question)
    if bridge is not None:
        if len(picked) >= EXTRACTIVE.max_sentences:
            picked.remove(min(picked[1:], key=lambda c: c.score))
        picked.append(bridge)
    in_order = sorted(picked, key=lambda c: (c.source.n, c.sentence.start))
    ordered = _answer_first(in_order, kind) if _leads_with_its_kind(kind, chinese) else in_order
    if chinese:
        return ordered
    reached = bridge if bridge is not None else _reached(picked, question)
    proper = {t: w for t, w in weights.items() if t not in setting}
    if setting or _question_leads(question, ordered, reached, kind, chinese, proper):
        ordered = _proper_first(ordered, proper)
    return _whom(_bridge_first(ordered, reached, question, kind) if reached is not None else ordered)


def _said_in_own_words(query: set[str], own_script: Sequence[Pick]) -> bool:
    """Whether a sentence in the question's script holds ``ACROSS_LANGUAGES.words_say_it`` of the
    question's terms, ``words_say_it_terms`` of them at least (a one-word question, "What can a
    Member do?", is held by any sentence naming a member)."""
    tuned = ACROSS_LANGUAGES
    return bool(query) and any(
        len(held := c.terms & query) >= tuned.words_say_it_terms and len(held) >= tuned.words_say_it * len(query)
        for c in own_script)


def _by_meaning(asked: Asked, candidates: list[Pick], query: set[str]) -> list[Pick] | None:
    """The answer quoted from sentences in another script than the question, when one of them
    means more than the question's own-script rivals: the best sentences of the first
    ``ACROSS_LANGUAGES.sources`` sources in the other script, and the best ``rivals`` of the
    question's script by words, all scored by the multilingual model's language-neutral
    similarity (less ``rank_penalty`` per source rank). None: words decide, as without a model,
    and as when an own-script sentence holds the question's ``query`` terms (``_said_in_own_words``)."""
    tuned = ACROSS_LANGUAGES
    if asked.meaning is None:
        return None
    own = is_mainly_non_latin(asked.question)
    # A sentence of a passage written in the other script (an English page's Russian name line
    # is no Chinese passage); each source's script is read once.
    first = {c.source.n: c.source.text for c in candidates if c.source.n <= tuned.sources}
    other_sources = {n for n, text in first.items() if is_mainly_non_latin(text) != own}
    in_own = [is_mainly_non_latin(c.body) == own for c in candidates]
    # Only sentences that could answer, in either script: a number for "how many", not only a
    # lower bound for "at most" (``asks.could_answer``). For an English question, a Chinese
    # sentence of a first source written mainly in English counts too (a FAQ's Chinese pair
    # beside its English one), as the gate reads it.
    other = [c for c, mine in zip(candidates, in_own, strict=True)
             if not mine and (c.source.n in other_sources or (not own and c.source.n in first and has_han(c.body)))
             and could_answer(asked.question, c.body)]
    if not other or _said_in_own_words(query, [c for c, mine in zip(candidates, in_own, strict=True) if mine]):
        return None
    rivals = sorted((c for c, mine in zip(candidates, in_own, strict=True)
                     if mine and c.score > 0 and could_answer(asked.question, c.body)),
                    key=lambda c: -c.score)[: tuned.rivals]
    sims = asked.meaning.similarities(asked.question, [c.body for c in [*other, *rivals]]).tolist()
    meant = [s - tuned.rank_penalty * (c.source.n - 1) for c, s in zip([*other, *rivals], sims, strict=True)]
    best = max(range(len(other)), key=lambda i: meant[i])
    if rivals and meant[best] < max(meant[len(other):]) + tuned.margin:
        return None
    close = sorted((i for i in range(len(other)) if meant[i] >= meant[best] - tuned.second_within),
                   key=lambda i: -meant[i])[: tuned.quoted]
    return sorted((other[i] for i in close), key=lambda c: (c.source.n, c.sentence.start))


def _question_leads(question: str, ordered: list[Pick], reached: Pick | None, kind: str | None, chinese: bool,
                    proper: dict[str, float]) -> bool:
    """Whether the pick holding most of the question's words should lead, not the first read:
    "How is the LCA computed with binary lifting?" opened with the sentence above the answer (on
    the Euler tour). Not where another rule chose the lead: a hop's end (``_bridge_first``), the
    sentence holding the kind asked and a word of the question (``_answer_first``), one of two
    subjects of a choice, or a name asked, which the first sentence's heading answers
    (``heading_name``)."""
    if not ordered or reached is not None or _CHOICE.search(question) or asked_kind(question) is not None:
        return False
    first = ordered[0]
    return not (_leads_with_its_kind(kind, chinese) and fits(kind, first.body) and any(t in proper for t in first.terms))


def _proper_first(ordered: list[Pick], proper: dict[str, float]) -> list[Pick]:
    """The pick sharing most of the question proper's weighted terms first (ties: as ordered)."""
    def held(c: Pick) -> float:
        return math.fsum(proper.get(t, 0.0) for t in c.terms)

    lead = max(ordered, key=held)
    return ordered if held(lead) <= held(ordered[0]) else [lead, *(c for c in ordered if c is not lead)]


def _leads_with_its_kind(kind: str | None, chinese: bool) -> bool:
    """Whether a sentence holding ``kind`` may lead the answer: a value (a time, an amount, a
    duration) in any language, a place or a person in English. The Chinese place and person cues
    fire on any "中国" or "教授", and an explanation's cues ("because", "通过") on connectives: led
    by them, Chinese first sentences held the gold less often (docs/decisions.md, "Sentence
    selection rules")."""
    return kind in LEADING_KINDS or (kind in LEADING_KINDS_ENGLISH and not chinese)


def _answer_first(picked: list[Pick], kind: str | None) -> list[Pick]:
    """The picks in reading order, but led by the best-scored one holding the asked kind of answer
    when the first does not: the bridge sentence of a two-hop question ("X is a film directed by
    Y") comes from the higher-ranked source, and a reader takes the first sentence as the answer."""
    if not picked or fits(kind, picked[0].body):
        return picked
    fitting = [c for c in picked if fits(kind, c.body)]
    if not fitting:
        return picked
    lead = max(fitting, key=lambda c: c.score)
    at = picked.index(lead)
    head = [lead]
    if _PRONOUN.match(lead.body) and at > 0 and picked[at - 1].source.n == lead.source.n:
        head = [picked[at - 1], lead]  # "He was born in Croydon" never before whom "he" is
    return [*head, *(c for c in picked if c not in head)]


def _reached(picked: list[Pick], question: str) -> Pick | None:
    """A picked sentence from a page whose title another source's picked sentence writes and the
    question does not: the page a first hop reaches (as ``_bridge`` finds one when the main
    picks did not)."""
    asked = question.casefold()
    for p in picked:
        title = _bare_title(p.source.context.title or "").casefold()
        if len(title) < 3 or title in asked:
            continue
        if any(o.source.n != p.source.n and title in o.body.casefold() for o in picked):
            return p
    return None


def _bridge_first(picked: list[Pick], bridge: Pick, question: str, kind: str | None) -> list[Pick]:
    """The picks led by the bridge's sentence: a two-hop question ("In what year was the
    university where Tokarev was a professor founded?") is answered on the page the first hop
    reaches, and a reader takes the first sentence as the answer. Not for a choice between two
    ("A or B?": both subjects' sentences answer), nor when the bridge's sentence lacks the kind
    asked, nor when the first sentence holds every word of the question and an answer of the
    kind asked ("Black Book … directed by Paul Verhoeven …" for "Who directed Black Book?": the
    page of an actress it names is no hop). A sentence opening with a pronoun says whom first: "Moscow State University: It was
    founded on January 25, 1755 …". English only, as the bridge (a title written in a picked
    sentence). docs/decisions.md, "Sentence selection rules": the second hop leads."""
    title = _bare_title(bridge.source.context.title or "")
    if (bridge not in picked or _CHOICE.search(question) or (kind is not None and not fits(kind, bridge.body))
            or title.casefold() in question.casefold()  # a page the question names is no hop's end
            or _answers_alone(picked[0], question, kind)):
        return picked
    lead = bridge
    if _PRONOUN.match(bridge.body) and title:
        lead = replace(bridge, body=f"{title}: {bridge.body}")
    return [lead, *(c for c in picked if c is not bridge)]


def _answers_alone(first: Pick, question: str, kind: str | None) -> bool:
    """Whether ``first`` holds every word of ``question`` and an answer of the ``kind`` asked."""
    return kind is not None and fits(kind, first.body) and terms(question) <= terms(first.body)


def _whom(picked: list[Pick]) -> list[Pick]:
    """A quoted sentence opening with "he", "she", "it" or "they" without the sentence before it
    in its source says first whom the pronoun means: the heading of its section, the page's
    subject ("Henry Lau: He debuted in 2008 as a member of Super Junior-M [3]."). English only."""
    out: list[Pick] = []
    for i, p in enumerate(picked):
        after_own = i > 0 and picked[i - 1].source.n == p.source.n and picked[i - 1].sentence.end <= p.sentence.start
        levels = heading_levels(p.source, p.sentence)
        subject = _bare_title(levels[-1]) if levels else ""
        if _PERSONAL.match(p.body) and not after_own and subject and not p.body.startswith(f"{subject}:"):
            p = replace(p, body=f"{subject}: {p.body}")
        out.append(p)
    return out


def _pick(source: Source, sentence: Sentence, asked: str) -> Pick:
    """A candidate: its quoted body (a FAQ answer without its "答：" marker), scored by its own
    terms and those of the FAQ question it answers."""
    body = answer_text(plain(sentence.text))
    return Pick(source, sentence, body, terms(body) | terms(asked))


def _read_under_headings(candidates: list[Pick], query: set[str]) -> None:
    """A sentence is read with its heading's word when the question asks for that part of a page:
    under "## 应用", "树上两点之间的距离等于…" answers "最近公共祖先有什么应用？" though it never
    says 应用. Only a heading of one word (an aspect: uses, algorithms, 应用, 求法) right above the
    sentence; a longer one names a topic the question's words already find."""
    for c in candidates:
        levels = heading_levels(c.source, c.sentence)
        if len(levels) < 2:
            continue
        heading = terms(levels[-1])
        if len(heading) == 1 and heading <= query:
            c.terms = c.terms | heading


def _tables_as_read(candidates: list[Pick]) -> list[Pick]:
    """Table lines as a reader takes them: a row is its cells named by their columns, so the
    header's words are the row's too ("the output for the Product division" names both, and only
    the Product row holds both); a header or separator line answers nothing."""
    lines: dict[int, dict[int, TableLine]] = {}
    read: list[Pick] = []
    for c in candidates:
        text = c.source.text
        if c.source.n not in lines:
            lines[c.source.n] = {text.index("|", line.start): line for line in table_lines(text)}
        line = lines[c.source.n].get(c.sentence.start)
        if line is not None and line.kind != "row":
            continue
        if line is not None:
            c.body = row_text(*readable_cells(line, c.source.opened_header))
            c.terms = terms(c.body)
        read.append(c)
    return read


def _given(kind: str | None, name_terms: set[str], candidates: list[Pick], sources: Sequence[Source]) -> set[str]:
    """Question terms a sentence gains nothing for: for a "how"/"why" question with a sentence
    that holds a method or reason, the subject's names and the words of the sources' titles
    (a page about the subject restates them in every sentence)."""
    if kind not in EXPLAINED or not any(fits(kind, c.body) for c in candidates):
        return set()
    titles = terms(" ".join(_bare_title(s.context.title or "") for s in sources))
    return name_terms | titles


def _lift_answers_of_the_asked_kind(candidates: list[Pick], kind: str | None) -> None:
    """A sentence holding the asked kind of answer scores at least ``EXTRACTIVE.context_share`` of its
    source's best: "倍增法先用 O(n log n) 预处理……" shares no word with "最近公共祖先怎么求？",
    the source's definition sentence does."""
    if kind is None:
        return
    best_of: dict[int, float] = {}
    for c in candidates:
        best_of[c.source.n] = max(best_of.get(c.source.n, 0.0), c.score)
    for c in candidates:
        if fits(kind, c.body):
            c.score = max(c.score, EXTRACTIVE.context_share * best_of[c.source.n])


def _cue_factor(c: Pick, kind: str | None, chinese: bool, name_terms: set[str], query: set[str],
                asked: set[str]) -> float:
    factor = EXTRACTIVE.ask_bonus if fits(kind, c.body) else 1.0
    if chinese != has_han(c.body):
        factor *= EXTRACTIVE.other_language
    shared = c.terms & query
    if shared and name_terms and shared <= name_terms and not _about(c.source, asked):
        factor *= EXTRACTIVE.name_only
    return factor


def _about(source: Source, asked: set[str]) -> bool:
    """Whether the source's subject (its whole title) is in the question's own words: for
    "Which actress in the film Black Book ...", a page titled "Black Book (film)" is, "Black
    Book (non-standard disc format)" is not."""
    title = source.context.title or ""
    return bool(title) and terms(title) <= asked


def _name_terms(question: str, names: Sequence[str]) -> set[str]:
    """Terms of the question's names: aliases given, and capitalised phrases inside an English
    question ("Black Book", "Sergei Aleksandrovich Tokarev")."""
    found = [m.group() for m in _NAME.finditer(question)]
    return terms(" ".join([*names, *found]))


def _bridge(picked: list[Pick], candidates: list[Pick], weights: dict[str, float], covered: set[str],
            kind: str | None, question: str) -> Pick | None:
    """A two-hop question's second sentence: from a source whose title a picked sentence names
    (the first hop ends at that page), the sentence covering most of what is still uncovered,
    or holding the asked kind of answer. None when the best sentence answers alone (every
    question word and the kind asked): a page it names is no hop."""
    if not picked or _answers_alone(picked[0], question, kind):
        return None
    seen_sources = {p.source.n for p in picked}
    text = " ".join(p.body for p in picked).casefold()
    # A namesake of a picked page is no hop: the film's sentence names "Black Book" because it is
    # the film's page, not because the disc format of that name is where the question goes next.
    picked_titles = {_bare_title(p.source.context.title or "").casefold() for p in picked}
    for source_n in dict.fromkeys(c.source.n for c in candidates):
        if source_n in seen_sources:
            continue
        mine = [c for c in candidates if c.source.n == source_n]
        title = _bare_title(mine[0].source.context.title or "")
        if len(title) < 3 or title.casefold() not in text or title.casefold() in picked_titles:
            continue
        scored = [(_gain(c, weights, covered) + (1.0 if fits(kind, c.body) else 0.0), c) for c in mine]
        gain, best = max(scored, key=lambda gc: (gc[0], -gc[1].sentence.start))
        if gain > 0:
            return best
    return None


def _bare_title(title: str) -> str:
    """"Black Book (film)" → "Black Book": the disambiguation is not written in the text."""
    return _PARENTHESISED.sub("", title).strip()


def _gain(c: Pick, weights: dict[str, float], covered: set[str]) -> float:
    return math.fsum(weights.get(t, 0.0) for t in c.terms - covered)


def _query_weights(query: set[str], candidates: list[Pick], n_sources: int) -> dict[str, float]:
    """Inverse source frequency of each query term found in some source."""
    frequency: dict[str, set[int]] = {}
    for c in candidates:
        for t in c.terms & query:
            frequency.setdefault(t, set()).add(c.source.n)
    return {t: math.log(1 + (n_sources + 1) / (len(found) + 0.5)) for t, found in frequency.items()}


def _lead_sentence(candidates: list[Pick]) -> Pick:
    """No sentence shares a term with the question: the first sentence of the matched chunk of
    the top hit (retrieval ranked it first for a reason the words do not show, e.g. a graph path)."""
    top = [c for c in candidates if c.source.n == candidates[0].source.n]
    chunk = top[0].source.hits[0].chunk
    for c in top:
        if chunk.start <= c.source.offset + c.sentence.start < chunk.end:
            return c
    return top[0]


def cite(body: str, n: int) -> str:
    """The sentence with ``[n]`` before its final punctuation: "... tree [1]." / "……祖先[1]。"."""
    marker = f"[{n}]"
    m = _FINAL_PUNCTUATION.search(body)
    head, tail = (body[: m.start()], m.group()) if m else (body, "")
    head = head.rstrip()
    space = "" if head and is_no_space_char(head[-1]) else " "
    return f"{head}{space}{marker}{tail}"


def compose(picks: Sequence[Pick]) -> str:
    parts: list[str] = []
    for p in picks:
        if parts:
            previous = parts[-1][-1]
            if not is_no_space_char(previous):
                parts.append(" ")
        parts.append(cite(p.body, p.source.n))
    return "".join(parts)


class BestSentences:
    """Any question: the sentences that best cover it (a name asked for is answered by the
    heading above them, ``heading_name``). Passes only when no source has a sentence of words."""

    name = "best_sentences"

    def answer(self, asked: Asked, sources: Sequence[Source]) -> Extracted | None:
        # The first sources read whole: past the prompt's window lies what a reader looks for.
        read = [s.whole() if s.n <= asked.whole_sources else s for s in sources]
        picks = choose(asked, read)
        if not picks:
            return None
        text = compose(picks)
        if (heading := heading_answer(asked.question, picks)) is not None:
            text = f"{heading}: {text}"  # "What is the name of the check …?": the section's heading
        return Extracted(text, picks)
