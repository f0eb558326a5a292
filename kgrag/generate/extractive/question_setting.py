"""A question's setting and the question proper.

Questions written to test a reader open with a setting before they ask ("While the Marketing
team measures success along a 'customer journey', what is the term for a job role …?",
"GitLab's principles prefer 'Convention over Configuration'. Which legal document must team
members sign?"). The setting's words are shared by passages restating it; the answer shares the
words of the question proper. The extractive answerer weighs setting-only terms less and leads
with the sentence answering the question proper (docs/decisions.md, "Sentence selection
rules").
"""

from __future__ import annotations

import re

from kgrag.text.scripts import has_han
from kgrag.text.sentences import terms

# The question proper after a setting: a wh-word opening a clause after a comma or a sentence.
_ASKING = re.compile(r"(?P<sep>[,;.!?])['\"’”]?\s+(?P<wh>what|which|who|whom|whose|when|where|how|why)\b", re.I)
_SETTING_OPENS = re.compile(r"\s*(?:while|whilst|although|though|excluding|except|besides|apart from|aside from|"
                            r"unlike|other than|beyond|at|in|within|given|since|as|for|among|considering)\b", re.I)
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')
# "…, which is not …": a relative clause, not the question.
_RELATIVE = re.compile(r"which\s+(?:is|are|was|were|has|have|had|can|could|may|might|will|would|does|do|did|also|"
                       r"not|\w+ed)\b", re.I)


def setting_terms(question: str) -> set[str]:
    """Terms only of a question's setting, the clause or sentence before the question proper
    ("While the Marketing team measures success along a 'customer journey', | what is the term
    for a job role …?", "GitLab's principles prefer 'Convention over Configuration'. | Which legal
    document must team members sign?"): weighed less (``EXTRACTIVE.setting_share``, ``kgrag.generate.tuning``), so the sentence
    answering the question proper leads, not one restating the setting. English only; a relative
    clause (", which is …", ", where …") is no question proper."""
    if has_han(question):
        return set()
    found = list(_ASKING.finditer(_QUOTED.sub(lambda q: "x" * len(q.group()), question)))  # not in a title
    after_sentence = [m for m in found if m.group("sep") in ".!?"]
    after_comma = [m for m in found if m.group("sep") == "," and m.group("wh").casefold() in ("what", "which")
                   and not _RELATIVE.match(question, m.start("wh"))]
    if after_sentence:  # "X prefers Y. | Which legal document …?"
        m = after_sentence[-1]
    elif after_comma and _SETTING_OPENS.match(question):  # "While X, | what is …?" (not "…, which sold …")
        m = after_comma[0]
    else:
        return set()
    setting, proper = question[:m.start("wh")], question[m.start("wh"):]
    return terms(setting) - terms(proper)
