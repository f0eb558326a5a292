"""Question + retrieval hits -> a checked, cited Answer (LLM, extractive, or abstention).

Layering: the retrieval pipeline decides relevance (``abstain=True`` when nothing passed its
threshold); this module only writes and checks the answer. It never raises for an LLM
failure: the answer falls back to the extractive one and says why in ``fallback_reason``.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator, Sequence

from kgrag.config import LLMSettings
from kgrag.generate.citations import CheckResult, check, chunk_span, citation_for, citations_for
from kgrag.generate.extractive import dates_for_today as dated
from kgrag.generate.extractive.answerer import Extracted, Pick
from kgrag.generate.extractive.asked import Asked, Meaning, PositionAsked
from kgrag.generate.extractive.registry import extract
from kgrag.generate.prompt import build_messages, build_sources
from kgrag.generate.types import Answer, Citation, Source
from kgrag.models import llm
from kgrag.retrieve.types import Hit, RetrievalResult, Understanding
from kgrag.text.scripts import has_han

ABSTAIN_EN = "The knowledge base does not say anything that answers this question."
ABSTAIN_ZH = "知识库中没有相关信息，无法回答这个问题。"


def abstention(question: str) -> Answer:
    return Answer(
        text=ABSTAIN_ZH if has_han(question) else ABSTAIN_EN,
        citations=[],
        abstained=True,
        mode="abstain",
    )


def small_talk(reply: str) -> Answer:
    """The reply to a greeting or thanks (``kgrag.retrieve.understand``): nothing was retrieved."""
    return Answer(text=reply, citations=[], abstained=False, mode="small_talk")


def _generation_args(question: str, result: RetrievalResult) -> tuple[str, list[Hit]]:
    completion = result.query.completion
    return (completion.for_generation if completion is not None else question), result.hits


def _generation_options(result: RetrievalResult) -> dict:
    understanding = result.query.understanding
    return {"abstain": result.below_threshold, "expansions": result.query.expansions,
            "reply": understanding.reply if understanding is not None else None,
            "position": PositionAsked.of(result.query.completion), "understanding": understanding}


class Generator:
    """Thread-safe: holds settings only, so one instance serves every request thread."""

    def __init__(self, settings: LLMSettings, *, max_sources: int | None = None,
                 max_context_chars: int | None = None, meaning: Meaning | None = None) -> None:
        """``max_sources``/``max_context_chars``: override the settings' packing budget.
        ``meaning``: language-neutral similarity (``kgrag.models.meaning``), with which the
        extractive answer quotes a sentence written in another language than the question."""
        max_sources = settings.max_sources if max_sources is None else max_sources
        max_context_chars = settings.max_context_chars if max_context_chars is None else max_context_chars
        if max_sources < 1:
            raise ValueError(f"max_sources must be at least 1, got {max_sources}")
        if max_context_chars < 200:
            raise ValueError(f"max_context_chars must be at least 200, got {max_context_chars}")
        self.settings = settings
        self.max_sources = max_sources
        self.max_context_chars = max_context_chars
        self.meaning = meaning

    def _sources(self, hits: Sequence[Hit]) -> list[Source]:
        """The numbered sources. The packing choices (``context``, ``source_order``) shape the
        LLM's prompt; the extractive answerer reads parents in rank order (its rank discount
        counts from source 1)."""
        if not self.settings.model:
            return build_sources(hits, self.max_sources, self.max_context_chars)
        return build_sources(hits, self.max_sources, self.max_context_chars,
                             context=self.settings.context, order=self.settings.source_order)

    def answer(self, question: str, hits: Sequence[Hit], *, abstain: bool = False,
               expansions: Sequence[str] = (), reply: str | None = None,
               position: PositionAsked | None = None, understanding: Understanding | None = None) -> Answer:
        """``expansions``: other names of the entities the question names (from retrieval); the
        extractive answerer counts them as question terms ("LCA" finds "lowest common ancestor").
        ``reply``: the question was small talk; this is the answer (no LLM call).
        ``position``: a positional follow-up; the extractive answer quotes the item asked for.
        ``understanding``: what retrieval's rules read in the question (the answerers may use it)."""
        started = time.perf_counter()
        if reply is not None:
            return _timed(small_talk(reply), started)
        question = _checked_question(question)
        if abstain or not hits:
            return _timed(abstention(question), started)
        sources = self._sources(hits)
        asked = self._asked(question, expansions, position, understanding)
        if not self.settings.model:
            return _timed(self._extractive(asked, sources), started)
        llm_started = time.perf_counter()
        try:
            text = llm.complete(self.settings, self._messages(question, sources))
        except llm.LLMError as error:
            answer = self._extractive(asked, sources, fallback_reason=str(error))
            answer.timings_ms["llm"] = _ms(llm_started)
            return _timed(answer, started)
        answer = self._checked_llm_answer(text, sources)
        answer.timings_ms["llm"] = _ms(llm_started)
        return _timed(answer, started)

    def answer_to(self, question: str, result: RetrievalResult) -> Answer:
        """``answer`` to ``question`` as asked, from its retrieval: a follow-up read as completed
        from the conversation, the abstention, alias expansions and small-talk reply taken from
        ``result`` — what the HTTP API, its stream and ``kgrag query`` all answer with."""
        return self.answer(*_generation_args(question, result), **_generation_options(result))

    def stream_to(self, question: str, result: RetrievalResult) -> Iterator[dict]:
        """``stream`` with the arguments ``answer_to`` uses."""
        return self.stream(*_generation_args(question, result), **_generation_options(result))

    def stream(self, question: str, hits: Sequence[Hit], *, abstain: bool = False,
               expansions: Sequence[str] = (), reply: str | None = None,
               position: PositionAsked | None = None, understanding: Understanding | None = None) -> Iterator[dict]:
        """Events: ``{"type": "token", "text": ...}``... then ``{"type": "answer", "answer": {...}}``.

        The answer event's text is the authoritative one: the checked text (invalid markers
        removed, markers normalised), or the extractive fallback when the LLM failed part-way,
        so a client replaces what it showed from the tokens with it. Extractive and abstention
        answers come as one token event.
        """
        started = time.perf_counter()
        question = _checked_question(question)
        if reply is not None or abstain or not hits or not self.settings.model:
            answer = self.answer(question, hits, abstain=abstain, expansions=expansions, reply=reply,
                                 position=position, understanding=understanding)
            yield {"type": "token", "text": answer.text}
            yield {"type": "answer", "answer": answer.to_dict()}
            return
        sources = self._sources(hits)
        llm_started = time.perf_counter()
        pieces: list[str] = []
        try:
            for piece in llm.stream(self.settings, self._messages(question, sources)):
                pieces.append(piece)
                yield {"type": "token", "text": piece}
            if not "".join(pieces).strip():
                raise llm.LLMError("the model returned an empty answer")
        except llm.LLMError as error:
            answer = self._extractive(self._asked(question, expansions, position, understanding), sources,
                                      fallback_reason=str(error))
            if not pieces:
                yield {"type": "token", "text": answer.text}
        else:
            answer = self._checked_llm_answer("".join(pieces), sources)
        answer.timings_ms["llm"] = _ms(llm_started)
        yield {"type": "answer", "answer": _timed(answer, started).to_dict()}

    def on(self, today: dt.date) -> Generator:
        """This generator with ``today`` as the day its prompts give (an evaluation question's)."""
        return Generator(self.settings.model_copy(update={"today": today}), max_sources=self.max_sources,
                         max_context_chars=self.max_context_chars, meaning=self.meaning)

    def _today(self) -> dt.date:
        """The day questions are asked on: the settings' (an evaluation question's), else UTC's."""
        return self.settings.today or dt.datetime.now(dt.UTC).date()

    def _messages(self, question: str, sources: list[Source]) -> list[dict[str, str]]:
        today = self._today()
        worked = dated.answer(question, sources, today)
        note = dated.note(worked[2]) if worked is not None else None
        return build_messages(question, sources, today, note)

    def _checked_llm_answer(self, text: str, sources: list[Source]) -> Answer:
        result = check(text, sources)
        # The model declined: an answer that says it cannot answer and cites nothing (or is
        # just that one sentence) is an abstention, whatever it cites.
        declined = result.not_in_kb and (not result.cited or _one_sentence(result))
        return Answer(
            text=result.text,
            citations=[] if declined else citations_for(result, sources),
            abstained=declined,
            mode="llm",
            model=self.settings.model,
            invalid_citations=result.invalid,
            unsupported_sentences=[] if declined else result.unsupported,
        )

    def _asked(self, question: str, expansions: Sequence[str], position: PositionAsked | None,
               understanding: Understanding | None) -> Asked:
        # No token budget bounds the extractive answer: its first sources may be read whole.
        return Asked(question, self._today(), tuple(expansions), position, self.settings.extractive_whole_sources,
                     understanding, self.meaning)

    def _extractive(self, asked: Asked, sources: list[Source], fallback_reason: str | None = None) -> Answer:
        """The first answer of the extractive answerers (``extractive.registry``), its quotes
        checked and cited; an abstention when no source holds a sentence of words."""
        found = extract(asked, sources)
        if found is None:
            answer = abstention(asked.question)
            answer.fallback_reason = fallback_reason
            return answer
        _, extracted = found
        answer = _quoting(extracted, sources, fallback_reason)
        answer.worked_out = extracted.worked_out
        return answer


def _quoting(extracted: Extracted, sources: list[Source], fallback_reason: str | None) -> Answer:
    """The extractive answer, checked, each quoted sentence cited. A pick read from a source's
    whole context rather than its prompt window is checked against that context. The preface
    (what was worked out from the quotes: a date for today) quotes nothing, so it is not checked."""
    text, picks, preface = extracted.text, extracted.picks, extracted.preface
    read = {p.source.n: p.source for p in picks}
    result: CheckResult = check(text, [read.get(s.n, s) for s in sources])
    citations: dict[int, Citation] = {}
    for p in picks:  # cite the very sentence quoted (the first one per source)
        citations.setdefault(p.source.n, citation_for(p.source, p.sentence))
    for p in picks:  # and highlight every sentence quoted from it
        _highlight(citations[p.source.n], p)
    return Answer(
        text=f"{preface} {result.text}" if preface else result.text,
        citations=[citations[n] for n in sorted(citations)],
        abstained=False,
        mode="extractive",
        invalid_citations=result.invalid,
        unsupported_sentences=result.unsupported,
        fallback_reason=fallback_reason,
    )


def _highlight(citation: Citation, pick: Pick) -> None:
    hit = next((h for h in pick.source.hits if h.chunk.id == citation.chunk_id), None)
    if hit is None:
        return
    span = chunk_span(pick.source, pick.sentence, hit.chunk.text, hit.chunk.start)
    if span and span not in citation.highlights:
        citation.highlights.append(span)
        citation.highlights.sort()


def _checked_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty string")
    return question.strip()


def _one_sentence(result: CheckResult) -> bool:
    return result.sentences <= 1


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def _timed(answer: Answer, started: float) -> Answer:
    answer.timings_ms["generate"] = _ms(started)
    return answer
