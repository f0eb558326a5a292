"""Asking the knowledge base: the one application seam every front end calls.

A question goes history → retrieve → answer → remember: the conversation's earlier turns are
read (sent with the request, or kept under its ``conversation_id``), the retrieval pipeline runs
with the request's options, the generator answers from the hits, and the turn is added to the
named conversation with the chunks it cited (what "and the next one?" is the neighbour of).
``/v1/query`` (JSON and stream), ``/v1/retrieve``, ``kgrag query`` and ``kgrag eval`` all go
through ``Asking``, so what the CLI prints and what an evaluation measures is what the server
answers. Front ends parse their input into an ``AskRequest`` at their edge and turn
``RetrievalError`` into their own error (a 400, a usage error)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kgrag.generate.generator import Generator
from kgrag.generate.types import Answer
from kgrag.retrieve.iterate import IterationDriver
from kgrag.retrieve.pipeline import Retriever
from kgrag.retrieve.recency import Recency
from kgrag.retrieve.trace import result_dict
from kgrag.retrieve.types import RetrievalResult
from kgrag.stores.filters import SearchFilter
from kgrag.types import Turn

if TYPE_CHECKING:  # the remote CLI imports this module's request types without opening any store
    from kgrag.conversations import ConversationStore

# What a kept turn holds at most: the bounds a sent history's turns are checked against too.
MAX_ANSWER_CHARS = 8000
MAX_CITED = 20  # an answer cites a few sources; more would only cost bytes


@dataclass(frozen=True)
class AskRequest:
    """One question with its options, parsed at the front end's edge (the HTTP request model,
    the CLI's options, an evaluation query). ``None`` options take the server's settings.
    ``today``: the day the question is asked on, for answers worked out relative to it (an
    evaluation question's reference time; None: today)."""

    question: str
    top_k: int | None = None
    filters: SearchFilter | None = None
    modes: tuple[str, ...] | None = None
    rerank: bool = True
    iterate: bool | None = None
    iterate_driver: str | None = None  # "entities" | "llm"; None: the server's
    rewrites: tuple[str, ...] | None = None
    recency: Recency | None = None
    history: tuple[Turn, ...] = ()
    conversation_id: str | None = None
    today: dt.date | None = None
    # Options that run degraded on this server, each naming the missing setting: the trace's
    # ``warnings`` (``kgrag.request_options``, checked at the front end's edge).
    warnings: tuple[str, ...] = ()


@dataclass
class Asked:
    """What one question gave: the retrieval, the answer (None when only retrieval was asked),
    and the response body the HTTP API sends and ``kgrag query --json`` prints."""

    result: RetrievalResult
    answer: Answer | None
    body: dict[str, Any] = field(default_factory=dict)


@dataclass
class Streamed:
    """A streamed answer: the retrieval (already done) and the events, ``(name, data)`` pairs:
    ``retrieval`` first, then the generator's ``token`` events and one ``answer``. The turn is
    remembered when the ``answer`` event is produced."""

    result: RetrievalResult
    events: Iterator[tuple[str, dict[str, Any]]]


def remembered_chunks(cited: Sequence[str], shown: Sequence[str], abstained: bool) -> tuple[str, ...]:
    """What a turn keeps as ``Turn.cited``: the answer's cited chunk ids in citation order; for an
    answer that cites none (or a turn that only retrieved), the first hit ``shown``; for an
    abstention, none ("the next one" after "not in the knowledge base" has no place)."""
    if abstained:
        return ()
    return tuple(dict.fromkeys(cited)) or tuple(shown[:1])


def kept_turn(question: str, answer: str | None, cited: Sequence[str]) -> Turn:
    """The turn a question adds to its conversation, within what a sent history may hold."""
    return Turn(question.strip(), None if answer is None else answer[:MAX_ANSWER_CHARS], tuple(cited[:MAX_CITED]))


class AskingParts(Protocol):
    """What asking reads from the process's components (``kgrag.components.Components``), each
    built on first use."""

    @property
    def retriever(self) -> Retriever: ...

    @property
    def generator(self) -> Generator: ...

    def iteration_driver(self, name: str) -> IterationDriver: ...


class Asking:
    """Thread-safe as its parts are: one instance serves every request thread.

    ``parts``: the retriever, the generator and the iteration driver a request names, read when
    a question comes (so building the seam loads no model); ``conversations``: the conversation
    store, opened on first use (``ConversationStore.on_demand``)."""

    def __init__(self, parts: AskingParts, conversations: Callable[[], ConversationStore]) -> None:
        self.parts = parts
        self._conversations = conversations

    def history(self, ask: AskRequest) -> list[Turn]:
        """The turns before this question: the named conversation's, else those sent."""
        if ask.conversation_id is not None:
            return self._conversations().turns(ask.conversation_id)
        return list(ask.history)

    def retrieve(self, ask: AskRequest, *, top_k: int | None = None) -> RetrievalResult:
        """The retrieval for ``ask`` (``top_k``: rank this many instead, as an evaluation does to
        score deeper than it answers). Raises ``RetrievalError`` for a request it cannot serve."""
        driver = None if ask.iterate_driver is None else self.parts.iteration_driver(ask.iterate_driver)
        result = self.parts.retriever.retrieve(
            ask.question, top_k=top_k or ask.top_k, filters=ask.filters, modes=ask.modes, rerank=ask.rerank,
            history=self.history(ask), iterate=ask.iterate, recency=ask.recency, rewrites=ask.rewrites,
            driver=driver,
        )
        result.warnings = [*ask.warnings, *result.warnings]
        return result

    def answer(self, ask: AskRequest, result: RetrievalResult) -> Answer:
        """The answer to ``ask`` from ``result``: a follow-up read as completed from the
        conversation, the gate's abstention, alias expansions and a small-talk reply taken from
        the retrieval."""
        return self._generator(ask).answer_to(ask.question, result)

    def ask(self, ask: AskRequest) -> Asked:
        """history → retrieve → answer → remember."""
        result = self.retrieve(ask)
        answer = self.answer(ask, result)
        body = answer.response(result)
        body["trace"]["generation"] = {
            "mode": answer.mode, "model": answer.model, "timings_ms": answer.timings_ms,
            "fallback_reason": answer.fallback_reason,
        }
        self._remember(ask, answer.text, remembered_chunks([c.chunk_id for c in answer.citations],
                                                           _shown(result), answer.abstained), body)
        return Asked(result, answer, body)

    def retrieve_only(self, ask: AskRequest) -> Asked:
        """history → retrieve → remember (the first hit shown stands for the cited chunk)."""
        result = self.retrieve(ask)
        body = result_dict(result)
        self._remember(ask, None, remembered_chunks([], _shown(result), abstained=False), body)
        return Asked(result, None, body)

    def stream(self, ask: AskRequest) -> Streamed:
        """Retrieves now (a ``RetrievalError`` is raised before any event); the answer streams."""
        result = self.retrieve(ask)
        return Streamed(result, self._events(ask, result))

    def _events(self, ask: AskRequest, result: RetrievalResult) -> Iterator[tuple[str, dict[str, Any]]]:
        retrieval = result_dict(result)
        yield "retrieval", retrieval
        shown = _shown(result)
        for event in self._generator(ask).stream_to(ask.question, result):
            if event.get("type") == "answer":
                answer = event["answer"]
                cited = remembered_chunks([c["chunk_id"] for c in answer.get("citations") or []], shown,
                                          bool(answer.get("abstained")))
                self._remember(ask, answer.get("text") or answer.get("answer"), cited, answer)
            yield event.get("type", "message"), event

    def _generator(self, ask: AskRequest) -> Generator:
        generator = self.parts.generator
        return generator if ask.today is None else generator.on(ask.today)

    def _remember(self, ask: AskRequest, answer: str | None, cited: tuple[str, ...], body: dict[str, Any]) -> None:
        """Adds this turn to the named conversation (nothing without one)."""
        if ask.conversation_id is None:
            return
        self._conversations().append(ask.conversation_id, kept_turn(ask.question, answer, cited))
        body["conversation_id"] = ask.conversation_id


def _shown(result: RetrievalResult) -> list[str]:
    return [h.chunk.id for h in result.hits]

