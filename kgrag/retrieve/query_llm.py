"""The LLM calls of query rewriting and of the LLM iteration driver (``kgrag.retrieve.llm_rewrites``).

Each call reads its prompt from ``prompts/<kind>.<en|zh>.txt`` (system text, a ``---`` line,
then the user message with ``$question``, ``$n``, ``$passages``), chosen by the question's
language; asks for JSON matching a schema (``llm.structured_output`` says how the provider is
told); and validates the reply with pydantic and the checks below. Anything unusable — an LLM
that is down or slow (``llm.query_timeout_s``), JSON that does not parse or match, a refusal,
nothing left after the checks — raises ``QueryRewriteRejected`` naming the cause, and retrieval
goes on without the rewrite (the reason in the trace).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from kgrag.config import LLMSettings
from kgrag.errors import ModelError
from kgrag.models.llm import LLMError, complete_json
from kgrag.retrieve.followup_llm import shares_a_term
from kgrag.retrieve.llm_rewrites import REWRITES, Judgement
from kgrag.text.scripts import has_han

PROMPTS = Path(__file__).parent / "prompts"
PROMPT_KINDS = (*REWRITES, "iterate")
MAX_QUERY_CHARS = 300
MAX_PASSAGE_CHARS = 2000
MAX_SUB_QUESTIONS = 4
# What the iteration driver shows of each hit: three 500-character openings keep the prompt
# near 500 tokens (SmolLM2-135M on 2 cores reads ~200 tokens/s).
JUDGE_HITS_CHARS = 500
_REFUSAL = re.compile(r"^\W*(i'?m sorry|i am sorry|sorry,|i cannot|i can't|i am unable|i'm unable|as an ai"
                      r"|抱歉|对不起|我无法|我不能|作为一?个?(ai|人工智能))", re.IGNORECASE)
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


class QueryRewriteRejected(ModelError):
    """The LLM gave no usable rewrite or judgement; the message says why."""


class _Passage(BaseModel):
    passage: str = Field(max_length=MAX_PASSAGE_CHARS * 2)


class _Questions(BaseModel):
    questions: list[str]


class _SubQuestions(BaseModel):
    sub_questions: list[str]


class _Question(BaseModel):
    question: str


class _Judgement(BaseModel):
    enough: bool
    next_query: str = ""


_STRING = {"type": "string"}


def _list_schema(key: str, most: int) -> dict[str, Any]:
    return {"type": "object", "required": [key],
            "properties": {key: {"type": "array", "items": _STRING, "minItems": 1, "maxItems": most}}}


def schema_for(kind: str, n: int = 3) -> dict[str, Any]:
    """The JSON schema the reply of ``kind`` must match (what the provider's grammar enforces)."""
    if kind == "hyde":
        return {"type": "object", "properties": {"passage": _STRING}, "required": ["passage"]}
    if kind == "multi_query":
        return _list_schema("questions", n)
    if kind == "decompose":
        return _list_schema("sub_questions", MAX_SUB_QUESTIONS)
    if kind == "step_back":
        return {"type": "object", "properties": {"question": _STRING}, "required": ["question"]}
    if kind == "iterate":
        return {"type": "object", "properties": {"enough": {"type": "boolean"}, "next_query": _STRING},
                "required": ["enough", "next_query"]}
    raise ValueError(f"unknown rewrite kind {kind!r}; known: {list(PROMPT_KINDS)}")


def language_of(question: str) -> str:
    """``zh`` for a question written (at least in part) in Chinese, else ``en``."""
    return "zh" if has_han(question) else "en"


@cache
def _prompt(kind: str, language: str) -> tuple[str, str]:
    text = (PROMPTS / f"{kind}.{language}.txt").read_text(encoding="utf-8")
    system, sep, user = text.partition("\n---\n")
    if not sep:
        raise ValueError(f"prompt {kind}.{language}.txt has no '---' line between system and user text")
    return system.strip(), user.strip()


def messages_for(kind: str, question: str, **values: object) -> list[dict[str, str]]:
    """The chat messages of ``kind`` for ``question``, in the question's language."""
    system, user = _prompt(kind, language_of(question))
    fields = {"question": question, **{k: str(v) for k, v in values.items()}}
    return [{"role": "system", "content": Template(system).safe_substitute(fields)},
            {"role": "user", "content": Template(user).safe_substitute(fields)}]


class LLMQueryRewriter:
    """The ``QueryLLM`` of ``kgrag.retrieve.llm_rewrites``, through litellm with ``settings``."""

    def __init__(self, settings: LLMSettings):
        self.settings = settings.model_copy(update={"timeout_s": settings.query_timeout_s,
                                                    "max_tokens": settings.query_max_tokens})

    def rewrite(self, kind: str, question: str, n: int = 3) -> list[str]:
        """The texts ``kind`` searches with besides ``question`` (a HyDE passage, paraphrases,
        sub-questions, a step-back question). Raises ``QueryRewriteRejected``."""
        reply = self._ask(kind, messages_for(kind, question, n=n), schema_for(kind, n))
        return accept(kind, reply, question, n)

    def judge(self, question: str, passages: list[str]) -> Judgement:
        """Whether ``passages`` answer ``question``, else the next query. Raises ``QueryRewriteRejected``."""
        shown = "\n\n".join(f"[{i}] {' '.join(p.split())[:JUDGE_HITS_CHARS]}" for i, p in enumerate(passages, 1))
        reply = self._ask("iterate", messages_for("iterate", question, passages=shown), schema_for("iterate"))
        return accept_judgement(reply, question)

    def _ask(self, kind: str, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        try:
            return complete_json(self.settings, messages, schema, name=kind)
        except LLMError as error:
            raise QueryRewriteRejected(f"LLM unavailable: {error}") from error


def _load(model: type[BaseModel], reply: str) -> Any:
    text = _FENCE.sub("", reply.strip())
    try:
        return model.model_validate_json(text)
    except ValidationError as error:
        try:
            json.loads(text)
        except json.JSONDecodeError:
            raise QueryRewriteRejected(f"the LLM's reply is not JSON: {reply[:120]!r}") from error
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise QueryRewriteRejected(f"the LLM's JSON does not match the schema ({where}: {first['msg']})") from error


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.casefold()).strip()


def _problem(text: str, question: str, limit: int = MAX_QUERY_CHARS) -> str | None:
    """Why ``text`` cannot be searched for ``question`` (None: it can)."""
    if not text:
        return "empty"
    if _REFUSAL.search(text):
        return "a refusal"
    if len(text) > limit:
        return f"longer than {limit} characters"
    if has_han(text) != has_han(question):
        return "not in the question's language"
    if _norm(text) == _norm(question):
        return "the question unchanged"
    if not shares_a_term(text, [question]):
        # Off the rails: "The answer is 12", "1984", "USA" as sub-questions of a question about
        # Publix stores or Johnnycake, West Virginia (a 135M model's sub-questions).
        return "sharing no content word with the question"
    return None


def _kept(texts: list[str], question: str, most: int, what: str) -> list[str]:
    kept: list[str] = []
    dropped: list[str] = []
    for raw in texts:
        text = " ".join(raw.split())
        problem = _problem(text, question)
        if problem is None and _norm(text) in {_norm(k) for k in kept}:
            problem = "a repeat"
        if problem is None:
            kept.append(text)
        else:
            dropped.append(problem)
    if not kept:
        reasons = ", ".join(f"{n}× {p}" for p, n in _counts(dropped).items()) or "none given"
        raise QueryRewriteRejected(f"no usable {what} from the LLM ({reasons})")
    return kept[:most]


def _counts(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def accept(kind: str, reply: str, question: str, n: int = 3) -> list[str]:
    """The usable texts in the LLM's ``reply`` to a ``kind`` rewrite of ``question``, or
    ``QueryRewriteRejected`` naming what failed."""
    if kind == "hyde":
        passage = " ".join(_load(_Passage, reply).passage.split())
        problem = "too short" if len(passage) < (8 if has_han(passage) else 30) else \
            _problem(passage, question, MAX_PASSAGE_CHARS)
        if problem is not None:
            raise QueryRewriteRejected(f"the LLM's passage is {problem}")
        return [passage]
    if kind == "multi_query":
        return _kept(_load(_Questions, reply).questions, question, n, "paraphrase")
    if kind == "decompose":
        return _kept(_load(_SubQuestions, reply).sub_questions, question, MAX_SUB_QUESTIONS, "sub-question")
    if kind == "step_back":
        return _kept([_load(_Question, reply).question], question, 1, "step-back question")
    raise ValueError(f"unknown rewrite kind {kind!r}; known: {list(REWRITES)}")


def accept_judgement(reply: str, question: str) -> Judgement:
    """The iteration driver's judgement in ``reply``: enough, or a usable next query."""
    judged = _load(_Judgement, reply)
    if judged.enough:
        return Judgement(True, "")
    next_query = " ".join(judged.next_query.split())
    problem = _problem(next_query, question)
    if problem is not None:
        raise QueryRewriteRejected(f"the LLM's next query is {problem}")
    return Judgement(False, next_query)
