"""What a question asks for (a time, an amount, a person, a method, a reason, a place), in
English and Chinese, and whether a sentence holds that kind of answer.

The extractive answerer ranks sentences by the question's words; a sentence that shares them
but holds no answer of the asked kind ("熊猫基地位于成都" for "门票多少钱？") loses to one that
does ("门票 55 元"). Cues are surface patterns, deliberately coarse: they reorder candidates
that already share the question's words, they never bring in a sentence that shares none.
"""

from __future__ import annotations

import functools
import re

from kgrag.text.patterns import FULL_MONTH_NAME, WHEN_WORDS_ZH, YEAR, alternatives
from kgrag.text.scripts import HAN

# Order matters: "how much" and "how long" are asked before a plain "how".
_ASKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("amount", re.compile(r"\bhow (?:much|many)\b|\bwhat (?:is the )?(?:price|cost|number)\b|"
                          r"\bwhat (?:is|was|are|were) the (?:maximum|minimum|max|min|total|allowable|allowed|\s)+"
                          r"(?:\w+ ){0,2}?(?:number|percentage|percent|amount|limit|price|cost|fee|rate)\b|多少|几个|几种|几位|"
                          r"价格|票价|门票|费用|多大|多高|多重|多远|几岁", re.I)),
    ("duration", re.compile(r"\bhow (?:long|often)\b|多久|多长时间|多长|频率|每隔", re.I)),
    ("time", re.compile(r"\bwhen\b|\bwhat (?:(?:is|was) (?:the )?)?(?:year|date|time|day|month|century)\b|"
                        r"\bwhich (?:year|date|day)\b|\bdate of\b|"
                        rf"\bhow old\b|{alternatives(WHEN_WORDS_ZH)}|哪一年|哪年|几点|几时|时间|几月|开门|关门|营业", re.I)),
    ("person", re.compile(r"^\s*(?:who|whom|whose)\b|\bwho\b|\bwhich (?:actor|actress|person|man|woman|author|"
                          r"director|singer|player|writer|artist|politician|king|queen|president)\b|谁|哪位|何人", re.I)),
    ("place", re.compile(r"\bwhere\b|\bwhich (?:city|country|state|county|town|place|region)\b|"
                         r"\bplace of (?:birth|death|burial)\b|\bbirthplace\b|"
                         r"\bin what (?:city|country|state|county|town)\b|哪里|哪儿|何地|在哪|哪个(?:城市|国家|省)", re.I)),
    ("reason", re.compile(r"\bwhy\b|为什么|为何|原因|何故", re.I)),
    ("method", re.compile(r"^\s*how\b|\bhow (?:do|does|did|can|to|is|are)\b|怎么|如何|怎样|方法|步骤|办法", re.I)),
)

_FITS: dict[str, re.Pattern[str]] = {
    "amount": re.compile(r"\d|[一二两三四五六七八九十百千万亿]+\s*[元个种位只次人岁米吨块]|[$€£¥]|\b(?:dollars?|"
                         r"euros?|pounds?|million|billion|thousand|hundred|dozen|two|three|four|five|six|seven|"
                         r"eight|nine|ten|eleven|twelve|twenty|fifty)\b|免费|\bfree\b", re.I),
    "duration": re.compile(r"\d+\s*(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)|每(?:天|日|周|月|年|小时)|"
                           r"\b(?:daily|weekly|monthly|yearly|annually|hourly|every)\b|\d+\s*(?:秒|分钟|小时|天|周|个月|年)", re.I),
    "time": re.compile(rf"\b{YEAR}\b|\d{{1,2}}[:：]\d{{2}}|\b{FULL_MONTH_NAME}\b|\b(?:century|BC|AD)\b|"
                       r"\d+\s*[年月日点时]|"
                       r"[一二三四五六七八九十]+\s*[点时月]|世纪|年代|朝|上午|下午|晚上|早上"),
    "person": re.compile(rf"\b[A-Z][a-z]+(?:\s+[A-Z]\.)?\s+[A-Z][a-z]+|[{HAN}]{{1,4}}(?:先生|女士|教授|博士)|"
                         r"由.{1,12}(?:创立|创建|建立|提出|发明|设计)"),
    "place": re.compile(rf"\b(?:in|at|near|located)\s+[A-Z]|位于|坐落|地处|[{HAN}](?:市|省|县|区|国|州|镇|村)"),
    "reason": re.compile(r"\b(?:because|due to|since|as a result|owing to|so that|in order to|reason)\b|因为|由于|所以|"
                         r"原因|为了|因此|以便|导致", re.I),
    "method": re.compile(r"\b(?:by|using|uses?|through|via|method|algorithm|steps?|first|then|approach|technique|"
                         r"procedure|computed|found|solved|preprocess(?:ing|ed)?)\b|方法|算法|通过|使用|利用|采用|步骤|首先|然后|可以用|求解|预处理|"
                         r"倍增|递归", re.I),
}


# A question that asks for code, an API call or a command: only it may be answered by a line of
# code (a call quoted for "What is the maximum length of a role name?" answers nothing). A status,
# error or exit code is a value, not code.
_ASKS_FOR_CODE = re.compile(
    r"\b(?:(?<!status )(?<!error )(?<!response )(?<!return )(?<!exit )(?<!postal )(?<!zip )(?<!country )(?<!area )code|snippets?|commands?|cli|curl|scripts?|functions?|syntax|endpoints?|sdk|regex|sql|"
    r"shell|terminal|programmatically|implement(?:ation|ed)?)\b"
    r"|\bapi\s+(?:calls?|requests?)\b|\b(?:through|via|using|with|from|over)\s+(?:the\s+|an?\s+)?(?:rest\s+)?api\b"
    r"|\b(?:call|invoke|run|execute|import)\b|[A-Za-z_]\w*\(\)|`[^`]+`|\b[a-z]+_[a-z_]+\b"
    r"|代码|命令|指令|接口|调用|脚本|函数|语法|怎么写|如何写|(?:通过|用|使用)\s*(?:REST\s*)?API",
    re.IGNORECASE)


def asks_for_code(question: str) -> bool:
    """Whether ``question`` asks for code, an API call or a command ("How do I assign a role
    through the API?", "用什么命令…", a question naming ``an_identifier`` or ``f()``)."""
    return _ASKS_FOR_CODE.search(question) is not None


def ask_of(question: str) -> str | None:
    """The kind of answer the question asks for, or None (a yes/no or a "what is" question)."""
    for kind, pattern in _ASKS:
        if pattern.search(question):
            return kind
    return None


# Where a link points is not what a sentence says: "The [promotion document](https://docs.google.com/
# document/d/1oXH9…) is required" holds no amount, though its address holds digits.
_ADDRESS = re.compile(r"(?<=\])\([^)\s]*\)|<?\b(?:https?://|www\.)[^\s>)]+>?")


def fits(kind: str | None, sentence: str) -> bool:
    """Whether ``sentence`` holds an answer of ``kind`` (always False for no kind); link
    addresses are not read."""
    return kind is not None and _fits(kind, sentence)


@functools.lru_cache(maxsize=4096)
def _fits(kind: str, sentence: str) -> bool:
    """The extractive answerer asks again for each sentence picked."""
    return bool(_FITS[kind].search(_ADDRESS.sub(" ", sentence)))


# A question asking for a value (a count, an age, a length, a time, a date): a sentence holding no
# number cannot answer it, in any script. Stricter than ``_ASKS``, which only reorders sentences
# that share the question's words: "when" asks only when no other interrogative does ("What
# happens when…?" asks what), "时间领主" is a name, and "how often" is answered by "rarely".
_ASKS_VALUE = re.compile(
    r"\bhow (?:much|many|long|old|far|tall|high|big|large|often)\b|\b(?:what|which|in what) (?:year|date|century|decade)\b|"
    r"多少|几个|几种|几位|几名|几岁|几年|几次|多久|多长|多大|多高|多远|多重|哪一年|哪年|什么时候|何时|几月|几号|几点|哪一天|哪天",
    re.I)
_WHEN = re.compile(r"^\s*when\b", re.I)
_OTHER_INTERROGATIVE = re.compile(r"\b(?:what|which|who|whom|whose|where|why|how)\b", re.I)
_NUMBER = re.compile(r"\d|[一二两三四五六七八九十百千万亿]+\s*[元个种位只次人岁米吨块名项条倍座年月日天周]|"
                     r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|"
                     r"hundred|thousand|million|billion|dozen|once|twice)\b|"
                     r"\b(?:never|rarely|seldom|sometimes|often|usually|always|daily|weekly|monthly|yearly|annually)\b|"
                     r"很少|偶尔|经常|通常|总是|从不|每(?:天|日|周|月|年)|世纪|年代", re.I)


@functools.lru_cache(maxsize=1024)
def asks_value(question: str) -> bool:
    """Whether ``question`` asks for a value: how many / much / long / old / often, which year,
    when (as its only interrogative), 多少, 几…, 多久, 哪一年, 什么时候."""
    if _ASKS_VALUE.search(question):
        return True
    return bool(_WHEN.search(question)) and not _OTHER_INTERROGATIVE.search(question)


# One bound of an amount, asked or stated: "at most 64", "至少保留一名".
_UPPER = re.compile(r"\b(?:at most|maximum|max|up to|no more than|not more than|not exceed\w*)\b|"
                    r"最多|至多|上限|不超过|不得超过|不高于", re.I)
_LOWER = re.compile(r"\b(?:at least|minimum|min|no less than|no fewer than|not less than)\b|至少|最少|下限|不少于|不低于",
                    re.I)


@functools.lru_cache(maxsize=1024)
def bound_asked(question: str) -> str | None:
    """"upper" or "lower" when the question asks for one bound of an amount only ("How many
    administrators can a tenant have at most?"), else None."""
    upper, lower = bool(_UPPER.search(question)), bool(_LOWER.search(question))
    return "upper" if upper and not lower else "lower" if lower and not upper else None


def states_other_bound(bound: str | None, sentence: str) -> bool:
    """Whether ``sentence`` states only the bound the question does not ask for ("Every tenant
    keeps at least one administrator" for "at most"): it says what was not asked, and not what
    was."""
    if bound is None:
        return False
    same, other = (_UPPER, _LOWER) if bound == "upper" else (_LOWER, _UPPER)
    return bool(other.search(sentence)) and not same.search(sentence)


def could_answer(question: str, sentence: str) -> bool:
    """Whether ``sentence`` could answer ``question`` by what it holds, whatever its words or
    script: a number (or a frequency, a century) when a value is asked (``asks_value``), and not
    only the bound the question does not ask for. The question is read once for all the
    sentences weighed for it."""
    if asks_value(question) and not _NUMBER.search(_ADDRESS.sub(" ", sentence)):
        return False
    return not states_other_bound(bound_asked(question), sentence)


# A question asking what an acronym stands for ("What does RBAC stand for?", "RBAC 的全称是什么？").
_ASKS_EXPANSION = re.compile(r"\b(?:stands?|stood)\s+for\b|\bshort\s+for\b|\babbreviation\s+(?:of|for)\b|"
                             r"\bacronym\s+(?:of|for)\b|全称|缩写|代表什么", re.I)
_ACRONYM = re.compile(r"(?<![A-Za-z])[A-Z]{2,10}(?![A-Za-z])")
# Capitalised words in a row, hyphenated ones counting each part ("Role-Based Access Control").
_SMALL_WORDS = ("of", "and", "for", "the", "to")
_CAPITALISED_WORDS = re.compile(rf"[A-Z][a-z]+(?:[\s-]+(?:(?:{'|'.join(_SMALL_WORDS)})\s+)*[A-Z][a-z]+)+")
_LETTER_ASKED = re.compile(r"['\"‘’“”][A-Z]['\"‘’“”]|\bletters?\s+[A-Z]\b")


def asked_acronyms(question: str) -> list[str]:
    """The acronyms a question asks the long form of ("RBAC" for "What does RBAC stand for?");
    [] when it asks no such thing, or asks what one letter of an acronym stands for ("what does
    the 'E' in MEDDPPICC stand for?": ``kgrag.retrieve.acronyms``)."""
    if not _ASKS_EXPANSION.search(question) or _LETTER_ASKED.search(question):
        return []
    return _ACRONYM.findall(question)


def spells_out(acronym: str, text: str) -> bool:
    """Whether ``text`` writes ``acronym`` and capitalised words in a row whose initials spell it
    ("Role-Based Access Control，简称 RBAC")."""
    if acronym not in text:
        return False
    for m in _CAPITALISED_WORDS.finditer(text):
        words = [w for w in re.split(r"[\s-]+", m.group()) if w and w not in _SMALL_WORDS]
        if acronym in "".join(w[0] for w in words).upper():
            return True
    return False
