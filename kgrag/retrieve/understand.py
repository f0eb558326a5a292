"""LLM-free query understanding, run on every question before any path: small talk is answered
without retrieval, politeness and filler are stripped from what the keyword path and the
entity linker read, and exclusions ("not about X", "除了X", "不包括X", ", without X") become
constraints every path obeys instead of words to match, and constraints on which documents to
search ("documents from 2023", "最近一年", "in the PDFs") become a metadata filter
(``kgrag.retrieve.constraints``) when the documents carry that metadata.

Rules, not a model: they are anchored (filler only at the start or end of the question, an
exclusion only after its cue), so a question that merely contains "please" or "without" in its
content keeps it. ``understand`` never fails; what it decided is in the trace
(``Understanding.trace``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from kgrag.facets import FacetCatalog
from kgrag.retrieve.constraints import read_constraints
from kgrag.retrieve.types import Understanding
from kgrag.retrieve.word_forms import content_words
from kgrag.text.patterns import PERSONAL_PRONOUNS_EN, QUOTE_CHARS, SENTENCE_END_CHARS, words_pattern
from kgrag.text.scripts import has_han

# Whole-message small talk (after trimming punctuation, emoji and whitespace), en and zh.
_SMALL_TALK_EN = re.compile(
    r"^(?:(?:hi|hello|hey|hiya|yo|greetings|good (?:morning|afternoon|evening|night)|"
    r"thanks?(?: you)?(?: (?:so|very) much)?|thank u|thx|ty|cheers|many thanks|"
    r"bye|goodbye|see you|ok(?:ay)?|cool|great|nice|how are you(?: doing)?|who are you|"
    r"what'?s up)(?: there)?[\s,!.]*)+$", re.IGNORECASE)
_SMALL_TALK_ZH = re.compile(
    r"^(?:你好|您好|大家好|嗨|哈喽|哈啰|早上好|上午好|下午好|晚上好|早安|晚安|谢谢(?:你|您|啦)?|多谢|感谢|"
    r"再见|拜拜|好的|好|嗯|收到|你是谁|你好吗|在吗|辛苦了)+$")
_TRIM = re.compile(r"[\s\W_]+", re.UNICODE)

REPLY_EN = ("Hello! Ask me a question about the documents in the knowledge base and I will answer "
            "with citations.")
REPLY_THANKS_EN = "You're welcome! Ask me anything else about the documents."
REPLY_ZH = "你好！请就知识库中的文档提问，我会给出带引用的回答。"
REPLY_THANKS_ZH = "不客气！还有关于文档的问题可以继续问我。"

# Filler at the start or the end of a question; removed repeatedly ("Hi, could you please tell me").
_LEAD_EN = re.compile(
    r"^(?:(?:hi|hello|hey)(?: there)?[,!.]?\s+|please[,]?\s+|kindly\s+|"
    r"(?:could|can|would|will) you(?: please)?(?: kindly)?\s+(?:tell|show|explain to|let) me\s+|"
    r"(?:could|can|would|will) you(?: please)?\s+(?=(?:explain|describe|list|find|summari[sz]e)\b)|"
    r"i(?:'d| would) like to know\s+|i want to know\s+|i wonder(?:ed)?\s+|do you know\s+|"
    r"tell me\s+(?=(?:who|what|when|where|which|why|how|if|whether|about)\b)|"
    r"(?:just )?(?:a )?quick question[:,]?\s+)", re.IGNORECASE)
# Only after a comma or a sentence end: "the value of saying thanks?" keeps its "thanks".
_TAIL_EN = re.compile(r"(?<=[,.!?])(?:\s*(?:please|thanks?(?: you)?(?: in advance)?(?: so much)?|thx|cheers)[,.!]*)+\s*$",
                      re.IGNORECASE)
_LEAD_ZH = re.compile(r"^(?:你好|您好|嗨|请问一下|请问|请|麻烦(?:你|您)?|劳驾|打扰一下|"
                      r"(?:你|您)?(?:能|可以)(?:不能|不可以)?(?:告诉|帮)我|帮我(?:查|看)(?:一下)?|我想(?:知道|问|了解)(?:一下)?|"
                      r"想问(?:一下)?)[，,、\s]*")
_TAIL_ZH = re.compile(r"(?<=[，,。！!？?])(?:\s*(?:谢谢(?:你|您|啦)?|多谢|感谢|麻烦了|拜托了)[。！!]*)+\s*$")

# Exclusion cues; the excluded topic runs to the next clause boundary. "Apart from / other than /
# besides X" are left out: they usually mean "in addition to X", whose passage holds the answer.
_STOP = r"[^,.;:!?，。；：！？、()（）]"
_EXCLUDE_EN = re.compile(
    rf"(?:^|[\s,;(])(?:(?:but|and) )?(?:not about|not including|excluding|except(?: for)?|leaving out|ignoring)\s+(?P<x>{_STOP}+?)(?=\s*(?:[,.;:!?()]|$))"
    rf"|(?:^|[,;(]\s*)without\s+(?P<w>{_STOP}+?)(?=\s*(?:[,.;:!?()]|$))",
    re.IGNORECASE)
# "除了X还/也…" means "besides X" (X is included, and its passage usually holds the answer): only
# "除了X" without such a continuation excludes; "废除了" (abolished) is not a cue.
_CUE_ZH = re.compile(r"(?<![废排清删解免拆革根扣剔消铲破])除了|除去|不包括|不包含|排除|不是关于|不涉及")
_CLAUSE_END_ZH = re.compile(r"[,.;:!?，。；：！？]")
_TOPIC_END_ZH = re.compile(r"以外|之外|外|的")
_INCLUSIVE_ZH = re.compile(r"[还也]|另外|以及")
_SENTENCE_END_ZH = re.compile(f"[{SENTENCE_END_CHARS}]")
_QUESTION_WORD_ZH = re.compile(r"哪|什么|谁|几|多少|怎")
# A concession that opens the question ("While the People Group is organized into departments
# like …, what is the distinct term for the process, not a department, …?") states what the
# answer is *not*: its words pull every path toward the distractor. It is set aside when it is a
# statement of its own (8+ words, not opening with a participle, preposition or the asker: "While
# traveling, …", "While on leave, …", "While I am away, …" set the scene of the question), the
# question after it asks something on its own (4+ words, no pronoun pointing back into the
# clause) and says its answer is something else (different, distinct, other, "not a …", …); in
# Chinese, "虽然/尽管 …，但 …" (docs/decisions.md, "Opening concessions, statement sentences,
# what the answer is not").
_CONCESSION_EN = re.compile(
    r"^(?P<cue>although|even though|though|whereas|while)\s+(?P<clause>[^,]+(?:,[^,]+?)*?),\s*"
    r"(?=(?:what|which|who|whom|whose|where|when|why|how|is|are|was|were|does|do|did|can|could|should)\b)",
    re.IGNORECASE)
_SCENE_EN = re.compile(r"^(?:\w+ing|in|on|at|during|after|before|for|with|under|abroad|away|i|i'm|we|we're|you|you're)\b",
                       re.IGNORECASE)
# The question refers back to the clause ("Although the v1 API is deprecated, how do I call it?"):
# then the clause names what is asked about, and stays.
_BACK_REFERENCE_EN = re.compile(words_pattern(PERSONAL_PRONOUNS_EN), re.IGNORECASE)
# ... and the question says its answer is something else ("the distinct term …, not a
# department", "the different term …"): without that, the clause may be the question's topic
# ("While the Security team reviews access requests in two days, how long does an urgent one take?").
# A bare "not" is no such sign: "While the runner shows as online, why is my pipeline not
# starting?" asks about the clause's situation.
_CONTRAST_EN = re.compile(
    r"\b(?:different|distinct|other|instead|rather than|unlike|except|no longer|not (?:a|an|the|part of|one of))\b",
    re.IGNORECASE)
_CONCESSION_ZH = re.compile(r"^(?:虽然|尽管|虽说)(?P<clause>[^，,。？?]+)[，,]\s*(?:但是|但|可是|却)")
# The same statement as a sentence of its own before the question ("In the People Group, the
# Talent Assessment program uses a 'Performance/Growth Potential Matrix'. What is the different
# term from the finance handbook that …?"), under the same conditions; a sentence about the asker
# ("I use GitLab 15. …") sets the scene, and a question that points back to it with a demonstrative
# ("such a role", "this channel") asks about it (the same decisions entry).
_PREAMBLE_EN = re.compile(
    r"^(?P<clause>.+[.!])\s+(?=(?:what|which|who|whom|whose|where|when|why|how)\b[^.!?]*\?\s*$)", re.IGNORECASE)
_ASKER_EN = re.compile(r"^(?:i|i'm|i've|we|we're|we've|you|you're|my|our)\b", re.IGNORECASE)
_POINTS_BACK_EN = re.compile(r"\b(?:this|these|those|such|the same|above|mentioned)\b", re.IGNORECASE)
# A clause saying what kind of thing the answer is not (see ``set_aside_non_member``): its words
# name the distractor, and no path reads "not" (the same decisions entry).
_NON_MEMBER_EN = re.compile(
    r"(?:(?P<lead>\s*,)?\s+(?P<rel>that|which|who)\s+(?:is|are|was|were)\s+not|\s*,\s*not)\s+(?:a|an|the|part of|one of)\b"
    r"[^,?]*?(?=\s+but\b|\s*,|\s*\?|$)", re.IGNORECASE)
# Articles and quotes around an excluded topic are not part of it.
_TOPIC_EDGES = re.compile(rf"^(?:the|a|an|any|anything about|those about|ones about)\s+|[{QUOTE_CHARS}]", re.IGNORECASE)


def understand(question: str, catalog: Callable[[], FacetCatalog | None] | None = None,
               today: dt.date | None = None) -> Understanding:
    """The decisions for ``question`` (already stripped, non-empty). ``catalog``: what the
    documents carry (read only when the question states a constraint); None reads no
    constraints. ``today``: the day relative dates count from (default: today, UTC)."""
    reply = small_talk_reply(question)
    if reply is not None:
        return Understanding(question, question, question, reply=reply, route="small_talk")
    exclusions, search_text = _exclusions(question)
    search_text, conceded = set_aside_concession(search_text)
    search_text, unlike = set_aside_non_member(search_text)
    keyword_text, stripped = strip_filler(search_text)
    keyword_text, conceded_after_filler = set_aside_concession(keyword_text)
    said = Understanding(question, search_text, keyword_text, exclusions, stripped,
                         set_aside=[c for c in (conceded, unlike, conceded_after_filler) if c])
    if catalog is not None:
        found = read_constraints(search_text, catalog, today or dt.datetime.now(dt.UTC).date())
        said.constraints = [c.to_dict() for c in found.found]
        said.constraint_filter = found.filter
        for span in found.spans:  # words about which documents, not about the answer
            rest = re.sub(rf"(?:\b(?:the|our|all)\s+)?{re.escape(span)}", " ", said.keyword_text, flags=re.I)
            rest = re.sub(r"\s+(?=[?.!,;:？。！，])", "", re.sub(r"\s{2,}", " ", rest)).strip()
            if _has_content(rest):
                said.keyword_text = rest
    return said


def set_aside_concession(text: str) -> tuple[str, str | None]:
    """``text`` without a concession that opens it (see ``_CONCESSION_EN``), and the clause set
    aside (None: kept as it was)."""
    m = _CONCESSION_EN.match(text)
    if m is not None:
        clause, rest = m.group("clause").strip(), text[m.end():]
        if _is_statement(clause, _SCENE_EN) and _asks_something_else(rest):
            return rest[0].upper() + rest[1:], m.group(0).strip(" ,")
    m = _PREAMBLE_EN.match(text)
    if m is not None:
        clause, rest = m.group("clause").strip(), text[m.end():]
        if _is_statement(clause, _ASKER_EN) and _asks_something_else(rest) and not _POINTS_BACK_EN.search(rest):
            return rest, clause
    m = _CONCESSION_ZH.match(text)
    if m is not None and _has_content(rest := text[m.end():]) and len(rest) >= 4:
        return rest.strip(), m.group(0).strip("，, ")
    return text, None


def _is_statement(clause: str, scene: re.Pattern[str]) -> bool:
    """A statement of its own: 8+ words, not opening the way ``scene`` says a scene is set."""
    return len(clause.split()) >= 8 and not scene.match(clause)


def _asks_something_else(rest: str) -> bool:
    """The question after a statement asks on its own (4+ words, no pronoun pointing back) and
    says its answer is something else."""
    return len(rest.split()) >= 4 and _CONTRAST_EN.search(rest) is not None and not _BACK_REFERENCE_EN.search(rest)


def set_aside_non_member(text: str) -> tuple[str, str | None]:
    """``text`` without a clause that says what kind of thing the answer is *not* ("… a building
    block of functionality that is not a stage in the marketing customer journey?", "…, not a
    department, …"), and the clause (None: kept). What follows a "but" stays: it says what the
    answer is ("that is not an expense category but represents a role …" → "that represents a
    role …"). Kept when less than four content words would be left."""
    m = _NON_MEMBER_EN.search(text)
    if m is None:
        return text, None
    after = text[m.end():]
    if m.group("lead") and after.lstrip().startswith(","):  # ", which is not X, must …": both commas go
        after = " " + after.lstrip()[1:]
    joined = re.sub(r"^\s*but\b", " that", after) if m.group("rel") else after
    rest = (text[:m.start()] + joined).strip()
    rest = re.sub(r"\s+(?=[?.!,])", "", re.sub(r"\s{2,}", " ", rest))
    rest = re.sub(r",(?=[?.!,])", "", rest)  # "the document, which is not X, must …" → "the document, must …"
    if len(content_words(rest)) < 4:
        return text, None
    return rest, m.group(0).strip(" ,")


def small_talk_reply(question: str) -> str | None:
    """A short reply when the whole message is a greeting, thanks or goodbye; else None."""
    core = _TRIM.sub(" ", question).strip()
    if not core:
        return None
    thanks = re.search(r"thank|thx|\bty\b|cheers|谢|感谢", core, re.IGNORECASE) is not None
    if has_han(core):
        if _SMALL_TALK_ZH.match(core.replace(" ", "")):
            return REPLY_THANKS_ZH if thanks else REPLY_ZH
        return None
    if _SMALL_TALK_EN.match(core):
        return REPLY_THANKS_EN if thanks else REPLY_EN
    return None


def strip_filler(text: str) -> tuple[str, list[str]]:
    """``text`` without leading/trailing politeness and filler (en and zh), and what was
    removed. Never returns an empty string: a question that is all filler stays as it was."""
    removed: list[str] = []
    current = text.strip()
    for pattern in (_LEAD_EN, _LEAD_ZH, _TAIL_EN, _TAIL_ZH):
        while True:
            m = pattern.search(current)
            if m is None or not m.group(0).strip() or len(m.group(0)) >= len(current):
                break
            removed.append(m.group(0).strip())
            current = (current[: m.start()] + current[m.end():]).strip().rstrip(",，")
    if current and current[0].islower() and removed and not has_han(current[:1]):
        current = current[0].upper() + current[1:]
    return (current or text.strip()), removed


def _exclusions(question: str) -> tuple[list[str], str]:
    """(excluded topics, the question without the exclusion clauses)."""
    topics: list[str] = []
    spans: list[tuple[int, int]] = []
    for m in _EXCLUDE_EN.finditer(question):
        raw = m.group("x") if m.group("x") is not None else m.group("w")
        topic = _TOPIC_EDGES.sub("", raw.strip()).strip()
        if topic and len(topic) <= 80:
            topics.append(topic)
            spans.append((m.start(), m.end()))
    for topic, span in _zh_exclusions(question):
        topics.append(topic)
        spans.append(span)
    if not spans:
        return [], question
    text = question
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + " " + text[end:]
    text = re.sub(r"\s+([,.;:!?，。；：！？])", r"\1", re.sub(r"\s{2,}", " ", text))
    text = re.sub(rf"[,，;；]+\s*(?=[{SENTENCE_END_CHARS}]|$)", "", text).strip(" ,，;；")
    return list(dict.fromkeys(topics)), (text if _has_content(text) else question)


_TOPIC_PARTS = re.compile(r"\s*(?:,|\band\b|\bor\b|、|和|与|或|及)\s*", re.IGNORECASE)


def split_topic(topic: str) -> list[str]:
    """The parts of a listed topic ("A and B", "A、B"); [] when it is one."""
    parts = [p.strip() for p in _TOPIC_PARTS.split(topic) if p.strip()]
    return parts if len(parts) > 1 else []


def _zh_exclusions(question: str) -> list[tuple[str, tuple[int, int]]]:
    """(topic, span to remove) per Chinese exclusion cue whose clause is not inclusive."""
    out = []
    for cue in _CUE_ZH.finditer(question):
        end = _CLAUSE_END_ZH.search(question, cue.end())
        clause_end = end.start() if end else len(question)
        clause = question[cue.end():clause_end]
        sentence = _SENTENCE_END_ZH.search(question, cue.end())
        rest = question[cue.end(): sentence.start() if sentence else len(question)]
        if _INCLUSIVE_ZH.search(rest):
            continue  # "除了X，还有…": besides X, not without it
        cut = _TOPIC_END_ZH.search(clause)  # "除了哪些部位…" names no topic: skipped below
        topic = _TOPIC_EDGES.sub("", clause[: cut.start()] if cut else clause).strip()
        if topic and len(topic) <= 40 and not _QUESTION_WORD_ZH.search(topic):
            span_end = cue.end() + (cut.end() if cut else len(clause))
            out.append((topic, (cue.start(), span_end)))
    return out


def _has_content(text: str) -> bool:
    return bool(_TRIM.sub("", text))
