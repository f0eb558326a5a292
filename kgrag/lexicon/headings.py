"""Which section headings name something (issue 43, "a cleaner graph").

A heading became an entity whatever it said, so a person exploring the graph met "Definition",
"Uses", "定义" and "2.1 管理员" beside the things the documents are about, and one "Definition"
entity joined the definition sections of unrelated pages. A heading is its section's name only
when it names something:

- its numbering is no part of the name ("2.1 管理员" is 管理员, "4. PROCEDURES" is PROCEDURES);
- a question ("What is TeamOps?", "问：用户离职后应该怎么处理？") or a sentence labelled as an
  example or an answer ("示例：把 auditor 角色分配给 u-1024", "Example: Fixing broken main") names
  nothing ("Meals: Company Provided while Traveling" does);
- a heading that says what kind of text follows rather than what it is about names nothing:
  every word of it is a word for a part of a text ("Definition", "Uses", "See also", "Time
  complexity", "定义", "应用", "常见问题") — unless the documents define it as a term (``known``).

A first rule, "one common word of the dictionary names nothing", read the handbook's units as
nothing: "Marketing", "Sales" and "Revenue" are common words that name the unit a "Chief Revenue
Officer" leads. The words below are the closed class of a document's parts (as a stop-word list
is the closed class of function words), not fitted to a set.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kgrag.text.analyze import jieba
from kgrag.text.scripts import HAN_RUN

# "2.1 ", "4. ", "3) ", "IV. ", "2.1、": a section's number, not its name ("2021 Goals" keeps its
# year: a bare number without a dot or bracket is no numbering).
_NUMBERING = re.compile(r"^\s*(?:\d+(?:\.\d+)+\.?|\d+[.)、]|[IVX]+\.)\s*")
_QUESTION = re.compile(r"[?？]\s*$")
# A label before its sentence ("Q: …", "问：…", "示例：…", "Example: …"): the label is a part
# of a text or a question's or an answer's mark.
_LABEL = re.compile(r"^([^:：]{1,20}?)\s*[:：]\s*\S")
_QA_MARKS = frozenset("q a 问 答".split())
_EN_WORDS = re.compile(r"[A-Za-z]+")
_NOT_WORDS = re.compile(r"[^A-Za-z\s&,/\-]")

# Words for a part of a text, and the words that join or qualify them in such a heading
# ("Definitions and uses", "Further reading", "Getting started", "Time complexity").
_EN_PARTS = frozenset("""
    about abstract acknowledgement advantage algorithm appendix application approach background
    bibliography citation complexity con conclusion content context criticism definition
    description detail disadvantage discussion etymology example explanation extension faq
    footnote foreword general generalization glossary history implementation index instruction
    intro introduction limitation link method misc miscellaneous motivation note objective
    other outline overview preface prerequisite pro proof property purpose rationale reading
    reference remark resource result scope see source start step summary synopsis terminology usage use
    variant variation
""".split())
_EN_JOINING = frozenset("""
    a also an and basic common external further getting key main more of on
    quick related space started the time to
""".split())
_ZH_PARTS = frozenset("""
    定义 概述 简介 介绍 引言 前言 背景 目的 范围 用法 应用 用途 使用 示例 例子 举例 实例 注意
    注意事项 备注 说明 参考 参考文献 参考资料 历史 其他 其它 常见问题 问答 附录 目录 总结 小结 结论
    方法 求法 算法 步骤 概念 基本概念 特点 性质 原理 实现 复杂度 证明 变体 优点 缺点 局限 阅读 链接
    另见 参见 术语 场景 代码
""".split())
_ZH_JOINING = frozenset("相关 基本 常见 主要 其他 延伸 外部 时间 空间 及 和 与 的".split())


def without_numbering(heading: str) -> str:
    """The heading without its section number ("2.1 管理员" → "管理员")."""
    return _NUMBERING.sub("", heading, count=1).strip() or heading.strip()


def heading_name(heading: str, known: Callable[[str], bool] = lambda _: False) -> str | None:
    """The name a heading gives its section, or None when it names nothing; ``known`` says
    whether the documents define a string as a term."""
    name = without_numbering(heading)
    if not name or _QUESTION.search(name):
        return None
    label = _LABEL.match(name)
    if label:  # "STEP 1: Request your new username", "示例：…", "Q: …"
        word = re.sub(r"\d+", " ", label.group(1)).strip().casefold()
        if word in _QA_MARKS or (word and names_a_part_of_text(word)):
            return None
    if names_a_part_of_text(name) and not known(name):
        return None
    return name


def names_a_part_of_text(heading: str) -> bool:
    """Whether every word of the heading is a word for a part of a text (or joins such words):
    "Definition", "Uses", "Definitions and uses", "定义", "应用", "常见问题", "相关链接"."""
    if HAN_RUN.fullmatch(heading.replace(" ", "")):
        words = [w for w in jieba().cut(heading.replace(" ", ""), HMM=False)]
        return any(w in _ZH_PARTS for w in words) and all(w in _ZH_PARTS or w in _ZH_JOINING for w in words)
    if _NOT_WORDS.search(heading):  # a digit, another script, an apostrophe: a name's
        return False
    words = [w.casefold() for w in _EN_WORDS.findall(heading)]
    if not words or any(w.isupper() and len(w) > 1 and w.casefold() != "faq" for w in _EN_WORDS.findall(heading)):
        return False
    stems = [_singular(w) for w in words]
    return any(s in _EN_PARTS for s in stems) and all(s in _EN_PARTS or s in _EN_JOINING for s in stems)


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def path_names(parts: list[str], known: Callable[[str], bool] = lambda _: False) -> list[str | None]:
    """Each part of a section path ("Page > H2 > H3", outermost first) as the name it gives, or
    None where it names nothing; the first part is the page's own title and keeps its name."""
    return [part if i == 0 else heading_name(part, known) for i, part in enumerate(parts)]
