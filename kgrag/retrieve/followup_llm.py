"""With an LLM configured: a follow-up rewritten into a standalone question.

The LLM-free rule (``kgrag.retrieve.followup``) decides *whether* a question is a follow-up and
what it carries; the LLM only rewrites one the rule took as a follow-up ("And for the next
one?" → "What is the prefix for the channel category after Group Channels in Slack?"). Its
output is constrained: one line ending in a question mark, not too long, in the question's language, different from the
follow-up, and sharing a content term with the questions it follows up on (else it did not use
them). Anything else — an LLM that is down, slow or off the rails — raises ``RewriteRejected``
and the pipeline keeps the rule's completion, saying why in the trace.
"""

from __future__ import annotations

import re

from kgrag.config import LLMSettings
from kgrag.errors import ModelError
from kgrag.models.llm import LLMError, complete
from kgrag.retrieve.followup import content_terms
from kgrag.retrieve.types import Completion
from kgrag.text.patterns import QUOTE_CHARS
from kgrag.text.scripts import han_runs, has_han

MAX_TOKENS = 96
MAX_CHARS = 400
_LABEL = re.compile(r"^\s*(?:(?:the|rewritten|standalone|last)\s+)*(?:question|rewrite|改写后的问题|问题)\s*[:：]\s*",
                    re.IGNORECASE)
_QUOTES = QUOTE_CHARS + "`"

SYSTEM = (
    "You rewrite the user's last question so that it can be understood without the conversation. "
    "Replace pronouns and references such as 'the next one' or 'it' with what they refer to, using the "
    "earlier questions. Keep the question's language. Reply with the rewritten question only, on one line."
)


class RewriteRejected(ModelError):
    """The LLM gave no usable standalone question; the message says why."""


def rewrite_followup(settings: LLMSettings, completion: Completion) -> str:
    """A standalone question for the follow-up ``completion``. Raises ``RewriteRejected``."""
    earlier = "\n".join(f"- {q}" for q in completion.carried_from)
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Earlier questions:\n{earlier}\n\nLast question: {completion.original}\n\n"
                                    "Rewritten last question:"},
    ]
    try:
        reply = complete(settings.model_copy(update={"max_tokens": min(settings.max_tokens, MAX_TOKENS)}), messages)
    except LLMError as error:
        raise RewriteRejected(f"LLM unavailable: {error}") from error
    return accept(reply, completion)


def accept(reply: str, completion: Completion) -> str:
    """The reply as a standalone question, or ``RewriteRejected`` naming the failed check."""
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    if not lines:
        raise RewriteRejected("the LLM's rewrite is empty")
    text = _LABEL.sub("", lines[0]).strip(_QUOTES + " ")
    if not text:
        raise RewriteRejected("the LLM's rewrite is empty")
    if len(text) > MAX_CHARS:
        raise RewriteRejected(f"the LLM's rewrite is longer than {MAX_CHARS} characters")
    if not text.endswith(("?", "？")):
        # Small models answer instead of rewriting ("The Berlin office is in Berlin." from
        # SmolLM2-135M): a rewrite is a question.
        raise RewriteRejected("the LLM's rewrite is not a question")
    if has_han(text) != has_han(completion.original):
        raise RewriteRejected("the LLM's rewrite is not in the question's language")
    if text.casefold() == completion.original.casefold():
        raise RewriteRejected("the LLM repeated the follow-up unchanged")
    if not shares_a_term(text, completion.carried_from):
        raise RewriteRejected("the LLM's rewrite shares no term with the earlier questions")
    return text


def shares_a_term(text: str, earlier: list[str]) -> bool:
    """A content word (or, in Chinese, two consecutive characters) of the earlier questions."""
    own = {t.casefold() for t in content_terms(text)}
    bigrams = {m.group()[i:i + 2] for m in han_runs(text) for i in range(len(m.group()) - 1)}
    for question in earlier:
        if own & {t.casefold() for t in content_terms(question)}:
            return True
        if any(m.group()[i:i + 2] in bigrams for m in han_runs(question) for i in range(len(m.group()) - 1)):
            return True
    return False
