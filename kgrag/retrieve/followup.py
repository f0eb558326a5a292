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
- it has no content word at all ("Why?", "How so?");
- it is short, links no entity and only asks: a question word, a kind of answer ("What year?",
  "怎么求？", "在哪里？");
Anything else is standalone and is never changed: standalone questions are seldom taken for
follow-ups, and a follow-up is searched with the previous question prepended to its content
words (docs/decisions.md, "Telling a follow-up, and what it carries").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
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
# Chinese drops a subject the conversation holds: "有什么应用？", "还有哪些算法？" ask what the subject
# has; the noun after the question word is the thing asked, not what it is asked of.
_DROPPED_SUBJECT_ZH = re.compile(rf"^\s*(?:那么?|那)?还?有(?:什么|哪些|几种|几个)[{HAN}]{{1,6}}(?:呢)?\s*[?？]?\s*$")
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
# The pronoun a follow-up stands its subject in by ("When did it premiere?", "它的电话号码呢？").
_SUBJECT_PRONOUN_EN = re.compile(words_pattern(PERSONAL_PRONOUNS_EN), re.IGNORECASE)
_SUBJECT_PRONOUN_ZH = re.compile(r"它们|他们|她们|它|(?<![其吉])他|她")
# What an ellipsis asks with, and kinds of answer it may name ("What year?", "Which city?").
_WH_EN = re.compile(r"^\s*(?:how\s+(?:much|many|long|often|old|far)|what\s+\w+|which\s+\w+|when|where|why|who|whom|"
                    r"whose|how|what|which)\b\s*\??", re.IGNORECASE)
_ASKED_KINDS = frozenset("year date time day month century place city country town state person name reason way "
                         "method price cost number amount size age".split())
_ASKING_ZH = re.compile(r"怎么样|怎么|怎样|如何|什么时候|什么|哪里|哪儿|哪个|哪些|哪年|哪一年|何时|何地|为什么|为何|"
                        r"多少钱|多少|多久|多长|还有|那么|几|谁|吗|呢|的|了|是|在|要|能|会|可以|又|还|那")
_OPENER = re.compile(r"^\s*(?:and|also|then|but|so)\s+(?=\w)|^\s*(?:那么|那|还有|然后|另外|以及)(?=\S)", re.IGNORECASE)
_CAPITALISED = re.compile(r"(?<!^)(?<![.?!]\s)\b[A-Z][\w'’-]*(?:\s+(?:of|the|de|von|van|for|and)?\s*[A-Z][\w'’-]*)*")


def complete(question: str, history: Sequence[Turn], linked: Sequence[LinkedEntity],
             link: Callable[[str], Sequence[LinkedEntity]] | None = None) -> Completion:
    """``question`` completed from ``history`` (oldest turn first) when it depends on the last
    turn; ``linked`` are the entities the question links on its own. ``link``: links an earlier
    question (the pipeline's linker), so each earlier turn is read as it was asked — a chain
    "Who directed Black Book?" → "When did it premiere?" → "Where?" keeps Black Book; without
    it an earlier question is judged by its wording only, as naming its own subject. Pure: no
    store is read but through ``link``."""
    question = question.strip()
    if not history:
        return Completion(question, question, reason="no history", subject=_subject_of(question, linked))
    previous: Completion | None = None
    replayed = [t for t in history if t.question.strip()][-FOLLOW_UPS.replayed_turns:]
    for i, turn in enumerate(replayed):
        own = link(turn.question) if link is not None else None
        previous = _completed(turn.question.strip(), replayed[:i], previous, own)
    if previous is None:
        return Completion(question, question, reason="the history holds no question")
    return _completed(question, history, previous, linked)


def _completed(question: str, history: Sequence[Turn], previous: Completion | None,
               linked: Sequence[LinkedEntity] | None) -> Completion:
    """``question`` read after ``previous`` (the last turn's own completion; None: the first
    turn). ``linked`` None: not linked (an earlier turn read without a linker), taken as naming
    an entity of its own when it writes a name (``_subject_of``)."""
    names = _subject_of(question, linked or ())
    if previous is None:
        return Completion(question, question, reason="no history", subject=names)
    reason = followup_reason(question, bool(linked) if linked is not None else bool(names))
    if reason is None:
        new_topic = bool(previous.subject) and not _shares_a_name(names, previous.subject)
        return Completion(question, question, reason="standalone: names its own subject", subject=names,
                          new_topic=new_topic)
    carried = [*(previous.carried_from if previous.followup else []), previous.original][-FOLLOW_UPS.max_carried_turns:]
    own = content_terms(question)
    text = " ".join([*carried, *own])
    positional = asks_by_position(question)
    last = history[-1] if history else None
    anchor = last.cited if positional and last is not None else ()
    completion = Completion(text, question, followup=True, reason=reason, carried_from=carried, own_terms=own,
                            positional=positional, anchor=anchor,
                            direction=asked_direction(question) if anchor else None,
                            previous_answer=last.answer if positional and last is not None else None,
                            subject=list(previous.subject))
    if not positional:
        _rewrite(completion, previous, names)
    return completion


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
    if _DROPPED_SUBJECT_ZH.match(question):
        return "asks what something has and drops the subject (有什么…)"
    if not links_entity and _is_short(question, FOLLOW_UPS.max_referring_words, FOLLOW_UPS.max_referring_han) and (
            _REFERENCE_EN.search(question) or _REFERENCE_ZH.search(question)):
        return "refers back (next, previous, that one) and names no entity of its own"
    if not links_entity and short and (_PRONOUN_EN.search(question) or _PRONOUN_ZH.search(question)):
        return "short, uses a pronoun and names no entity of its own"
    if not content_terms(question):
        return "has no content word of its own"
    if not links_entity and short and _only_asks(question):
        return "only asks (a question word, a kind of answer) and names nothing of its own"
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


def _rewrite(completion: Completion, previous: Completion, names: list[str]) -> None:
    """The follow-up as a question of its own (``Completion.standalone``, what the answerer
    reads), by the first rule that applies:

    * a switch to a sibling — a continuation naming something else ("And the Auditor?" after
      "What does the Administrator role allow?", "审计员呢？" after "管理员有哪些权限？"): the last
      question with its subject replaced, "What does the Auditor role allow?" (the paths still
      search the earlier question with the follow-up's words, which finds where the two are
      listed together: the CFO's row of the table the CEO's question found);
    * a pronoun ("When did it premiere?", "它的电话号码呢？"): the pronoun replaced by the subject;
    * an ellipsis that only asks ("Where?", "What year?"): the last question asked that way,
      "Where did Black Book premiere?"; in Chinese the subject before it ("怎么求？" →
      "最近公共祖先怎么求？");
    * anything else: the follow-up with its subject after it ("And renamed? (Moscow State
      University)").
    The subject carries on: a follow-up keeps the last question's, a switch takes the new names."""
    question = completion.original
    asked_before = previous.standalone or previous.original
    subject = previous.subject
    switch = _switched_to(question, names, subject, asked_before)
    if switch is not None:
        old, new = switch
        completion.switched = (old, new)
        completion.subject = [new if n == old else n for n in subject]
        completion.standalone = _replace_once(asked_before, old, new)
        return
    if not subject:
        return
    if (pronoun := _first_pronoun(question)) is not None:
        completion.standalone = _without_opener(_with_subject(question, pronoun, subject))
        return
    if _only_asks(question):
        completion.standalone = _asked_again(question, asked_before, subject)
        return
    said = _without_opener(question)
    completion.standalone = (f"{subject[0]}{said}" if has_han(question) and not _WORD.search(_HAN.sub(" ", said))
                             else f"{said} ({', '.join(subject)})")


def _subject_of(question: str, linked: Sequence[LinkedEntity]) -> list[str]:
    """What a question is about, as it names it: the surfaces of its linked entities (a longer
    one before the names inside it), else its capitalised names ("the Administrator role"),
    else, in Chinese, its words less the asking ("最近公共祖先是什么？" → 最近公共祖先)."""
    surfaces = list(dict.fromkeys(le.surface.strip() for le in linked if le.surface.strip()))
    surfaces = [s for s in surfaces if not any(s != o and s in o for o in surfaces)]
    if surfaces:
        return sorted(surfaces, key=question.find)
    capitalised = [m.group() for m in _CAPITALISED.finditer(question)
                   if m.group().casefold() not in _english_stop_words()]
    if capitalised:
        return list(dict.fromkeys(capitalised))
    if has_han(question):
        runs = [word for run in _ASKING_ZH.split(_PUNCT.sub(" ", question)) for word in run.split()]
        return [w for w in runs if len(w) >= 2 and has_han(w)][:1]
    return []


def _switched_to(question: str, names: list[str], subject: list[str], asked_before: str) -> tuple[str, str] | None:
    """(the subject left, the sibling named) when the follow-up is a continuation that names
    something other than the subject and the last question spells the subject, else None."""
    if not subject or _first_pronoun(question) is not None or asks_by_position(question):
        return None
    if not (_CONTINUATION_EN.search(question) or _CONTINUATION_ZH.search(question) or _ELLIPSIS_ZH.search(question)):
        return None
    new = [n for n in names if not _shares_a_name([n], subject)]
    if not new or not all(any(t in n for n in new) for t in content_terms(question)):
        return None  # "And renamed?": the follow-up asks something new of the subject, names no sibling
    spelled = [n for n in subject if n in asked_before]
    if not spelled:
        return None
    return max(spelled, key=lambda n: _alike(n, new[0])), new[0]


def _alike(a: str, b: str) -> tuple[bool, bool, bool, int]:
    """How much two names look like names of one kind (a sibling replaces the subject name most
    like it: "CFO" the "CEO" of "the Slack channel for the CEO", not "Slack"): same script, both
    acronyms or neither, as many words, close in length."""
    return (has_han(a) == has_han(b), a.isupper() == b.isupper(), len(a.split()) == len(b.split()),
            -abs(len(a) - len(b)))


def _shares_a_name(names: Sequence[str], others: Sequence[str]) -> bool:
    folded = {n.casefold() for n in others}
    return any(n.casefold() in folded for n in names)


def _replace_once(text: str, old: str, new: str) -> str:
    at = text.find(old)
    return text if at < 0 else f"{text[:at]}{new}{text[at + len(old):]}"


def _first_pronoun(question: str) -> re.Match[str] | None:
    return _SUBJECT_PRONOUN_EN.search(question) or _SUBJECT_PRONOUN_ZH.search(question)


def _with_subject(question: str, pronoun: re.Match[str], subject: list[str]) -> str:
    """The question with its first pronoun replaced by the subject's main name ("its" by
    "X's"; "它的" becomes "X的")."""
    name = subject[0]
    if pronoun.group().casefold() in ("its", "their", "his", "her"):
        name = f"{name}'s"
    return f"{question[:pronoun.start()]}{name}{question[pronoun.end():]}"


def _only_asks(question: str) -> bool:
    """Whether the question only asks — a question word, a kind of answer — and says nothing
    of what it asks about ("Where?", "What year?", "怎么求？", "在哪里？")."""
    if has_han(question):
        rest = _ASKING_ZH.sub("", _PUNCT.sub("", question))
        return len(rest) <= FOLLOW_UPS.asking_han
    return all(t.casefold() in _ASKED_KINDS for t in content_terms(question))


def _asked_again(question: str, asked_before: str, subject: list[str]) -> str:
    """An ellipsis asked as the last question was: "Where?" after "When did Black Book
    premiere?" → "Where did Black Book premiere?"; in Chinese the subject before it."""
    said = _without_opener(question)
    if has_han(question):
        return f"{subject[0]}{said}"
    asking = _WH_EN.match(said)
    before = _WH_EN.match(asked_before)
    if asking and before:
        return f"{asking.group().rstrip(' ?')} {asked_before[before.end():].lstrip()}"
    return f"{said} ({asked_before})"


def _without_opener(question: str) -> str:
    """"And who kept them?" → "Who kept them?": a continuation's opener adds nothing to it."""
    stripped = _OPENER.sub("", question, count=1)
    return stripped[:1].upper() + stripped[1:] if stripped and stripped != question else question


def _is_short(question: str, words: int = FOLLOW_UPS.max_short_words, han_chars: int = FOLLOW_UPS.max_short_han) -> bool:
    han = len(_HAN.findall(question))
    if han:
        return han <= han_chars and len(_WORD.findall(_HAN.sub(" ", question))) <= 3
    return len(_WORD.findall(question)) <= words


@lru_cache(maxsize=1)
def _english_stop_words() -> frozenset[str]:
    from kgrag.lexicon.gazetteer import english_stop_words

    return english_stop_words()
