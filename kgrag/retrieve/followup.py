"""Follow-up questions, completed from the conversation without an LLM.

"What is the prefix for Group Channels in Slack?" → "And for the next one?": the second
question names nothing to search for. ``complete(question, history, linked)`` decides whether a
question depends on the previous turn and, when it does, returns the text every retrieval path
searches with: the previous question(s) followed by the follow-up's own content words (its
function words and anaphora — "and", "the next one", "它", "呢" — carry nothing to match and
only pull the dense vector away from the topic). The pipeline links entities on that text, so
the previous turn's entities are carried into the keyword and graph paths too.

A question is a follow-up when the conversation has a turn before it and one of:
- it opens like a continuation ("and …", "what about …", "how about …"; "那 …", "还有 …" with
  no entity of its own) or ends in the Chinese ellipsis particle "呢", and is short;
- it refers back ("the next one", "the one after that", "the last one", "下一个", "第二个",
  "这个"), is not long and links no entity of its own;
- it is short, uses a pronoun ("it", "they", "它") and links no entity of its own;
- it has no content word at all ("Why?", "How so?").
Anything else is standalone and is never changed: standalone questions are seldom taken for
follow-ups, and a follow-up is searched with the previous question prepended to its content
words (docs/decisions.md, "Telling a follow-up, and what it carries").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from kgrag.retrieve.tuning import FOLLOW_UPS
from kgrag.retrieve.types import Completion, LinkedEntity
from kgrag.text.patterns import DEMONSTRATIVES_EN, PERSONAL_PRONOUNS_EN, QUOTE_CHARS, words_pattern
from kgrag.text.scripts import HAN, has_han
from kgrag.types import Turn

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+", re.UNICODE)
_HAN = re.compile(f"[{HAN}]")
_CONTINUATION_EN = re.compile(
    r"^\s*(and|also|then|but|so|same|what about|how about|what of|and what about|and how about)\b",
    re.IGNORECASE)
# Chinese openers are also the first character of names (那不勒斯, 和语): with an entity linked
# the question is taken as standalone unless it ends in 呢.
_CONTINUATION_ZH = re.compile(r"^\s*(那么|那|还有|然后|另外|以及)")
_ELLIPSIS_ZH = re.compile(r"呢\s*[?？!！。.]*\s*$")
_REFERENCE_EN = re.compile(
    r"\bthe\s+(?:next|previous|prior|following|last|second|third|other)\s+"
    r"(?:one|ones|item|level|step|category|row|entry|section)\b|"
    r"\b(?:the|that|this)\s+one\b|\b(?:after|before|above|below)\s+(?:that|this|it)\b|\bnext\s+level\b",
    re.IGNORECASE)
# 这个/那个 refer back only where they open the question ("这个呢？"); after a name they are
# appositive ("隐面龙这个名字", "this name 'X'").
_REFERENCE_ZH = re.compile(
    r"(下一个|上一个|前一个|后一个|最后一个|第[二三四五六七八九十\d]+个|前者|后者|^\s*(?:那么|那)?(?:这个|那个|这些|那些))")
# A reference to a place in a list or a document ("the next one", "the level above that",
# "下一个"): the follow-up asks about a neighbour of what the last turn found.
_POSITION_EN = re.compile(
    r"\b(?:next|previous|prior|preceding|following|last|first)\s+(?:one|ones|item|level|step|row|entry|section|"
    r"category|page|chapter|article|rule)\b|\b(?:after|before|above|below)\s+(?:that|this|it)\b|"
    r"\b(?:level|one|step|row|item)\s+(?:above|below|down|up)\b", re.IGNORECASE)
_POSITION_ZH = re.compile(r"下一|上一|前一个|后一个|最后一[个项步条]|第一[个项步条]")  # 下一 holds 下一个, 下一步 ...
# The way such a reference points, in reading order ("the level above that" is the one before).
_AFTER_EN = re.compile(r"\b(?:next|following|after|below|down)\b", re.IGNORECASE)
_BEFORE_EN = re.compile(r"\b(?:previous|prior|preceding|before|above|up)\b", re.IGNORECASE)
_AFTER_ZH = re.compile(r"下一|后一个")
_BEFORE_ZH = re.compile(r"上一|前一个")
_PRONOUN_EN = re.compile(words_pattern(PERSONAL_PRONOUNS_EN + DEMONSTRATIVES_EN), re.IGNORECASE)
_PRONOUN_ZH = re.compile(r"(它|(?<![其吉])他|她)")  # not 其他 ("other"), 吉他 ("guitar")
# Words that point back rather than say what is asked: dropped from the carried text.
_ANAPHORA_EN = frozenset(
    "next previous prior last first second third following same former latter one ones other level item "
    "step category row after before above below down up what about how also then".split())
_ANAPHORA_ZH = re.compile(
    r"下一个|上一个|前一个|后一个|最后一个|第[一二三四五六七八九十\d]+个|前者|后者|这个|那个|这些|那些|同样|"
    r"它们|他们|她们|那么|还有|然后|另外|以及|它|他|她|其|该|那|呢|吗|的|是|什么|怎么样|怎样|如何|呀|啊")
_PUNCT = re.compile(rf"[\s?？!！。.,，、;；:：{QUOTE_CHARS}()（）]+")


def complete(question: str, history: Sequence[Turn], linked: Sequence[LinkedEntity]) -> Completion:
    """``question`` completed from ``history`` (oldest turn first) when it depends on the last
    turn; ``linked`` are the entities the question links on its own. Pure: no store is read."""
    question = question.strip()
    if not history:
        return Completion(question, question, reason="no history")
    reason = followup_reason(question, bool(linked))
    if reason is None:
        return Completion(question, question, reason="standalone: names its own subject")
    carried = _carried_questions(history)
    if not carried:
        return Completion(question, question, reason="the history holds no question")
    own = content_terms(question)
    text = " ".join([*carried, *own])
    positional = asks_by_position(question)
    anchor = history[-1].cited if positional else ()
    return Completion(text, question, followup=True, reason=reason, carried_from=carried, own_terms=own,
                      positional=positional, anchor=anchor, direction=asked_direction(question) if anchor else None,
                      previous_answer=history[-1].answer if positional else None)


def asks_by_position(question: str) -> bool:
    """Whether ``question`` names what it asks about by a place in a list or a document ("the
    next one", "the one after that", "the level above", "下一个")."""
    return bool(_POSITION_EN.search(question) or _POSITION_ZH.search(question))


def asked_direction(question: str) -> str | None:
    """Which way a positional follow-up points from what the last turn cited: "after" ("the
    next one", "the level below", "下一个"), "before" ("the previous one", "the level above
    that", "上一个"), or None when it does not say ("the last one", "the other one")."""
    after = bool(_AFTER_EN.search(question) or _AFTER_ZH.search(question))
    before = bool(_BEFORE_EN.search(question) or _BEFORE_ZH.search(question))
    return "after" if after and not before else "before" if before and not after else None


def followup_reason(question: str, links_entity: bool) -> str | None:
    """Why ``question`` reads as depending on an earlier turn; None when it stands alone."""
    short = _is_short(question)
    if short and (_CONTINUATION_EN.search(question) or (_CONTINUATION_ZH.search(question) and not links_entity)):
        return "short and opens like a continuation"
    if short and _ELLIPSIS_ZH.search(question):
        return "short and ends in the ellipsis particle 呢"
    if not links_entity and _is_short(question, FOLLOW_UPS.max_referring_words, FOLLOW_UPS.max_referring_han) and (
            _REFERENCE_EN.search(question) or _REFERENCE_ZH.search(question)):
        return "refers back (next, previous, that one) and names no entity of its own"
    if not links_entity and short and (_PRONOUN_EN.search(question) or _PRONOUN_ZH.search(question)):
        return "short, uses a pronoun and names no entity of its own"
    if not content_terms(question):
        return "has no content word of its own"
    return None


def content_terms(question: str) -> list[str]:
    """The words of ``question`` that say what is asked: stop words and anaphora removed.
    Chinese runs are kept whole, less their pronouns and particles."""
    stop = _english_stop_words()
    terms: list[str] = []
    for run in _PUNCT.split(question):
        if not run:
            continue
        if has_han(run):
            rest = _ANAPHORA_ZH.sub(" ", run)
            terms += [t for t in rest.split() if t]
            continue
        for word in _WORD.findall(run):
            low = word.lower()
            if low not in stop and low not in _ANAPHORA_EN:
                terms.append(word)
    return list(dict.fromkeys(terms))


def _carried_questions(history: Sequence[Turn]) -> list[str]:
    """The last question, and before it each question it followed up on, oldest first: "CEO's
    channel?" → "And the CFO?" → "And the last one?" carries both earlier questions."""
    out: list[str] = []
    for turn in reversed(history):
        q = turn.question.strip()
        if not q:
            continue
        out.append(q)
        # Earlier questions are judged without linking (no store here): only the wording.
        if len(out) >= FOLLOW_UPS.max_carried_turns or followup_reason(q, links_entity=True) is None:
            break
    return out[::-1]


def _is_short(question: str, words: int = FOLLOW_UPS.max_short_words, han_chars: int = FOLLOW_UPS.max_short_han) -> bool:
    han = len(_HAN.findall(question))
    if han:
        return han <= han_chars and len(_WORD.findall(_HAN.sub(" ", question))) <= 3
    return len(_WORD.findall(question)) <= words


@lru_cache(maxsize=1)
def _english_stop_words() -> frozenset[str]:
    from kgrag.lexicon.gazetteer import english_stop_words

    return english_stop_words()
