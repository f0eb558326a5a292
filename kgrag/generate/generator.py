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
from kgrag.generate import compare, dated, extractive, located, named, polar, positional, relayed
from kgrag.generate.citations import CheckResult, check, chunk_span, citation_for, citations_for
from kgrag.generate.positional import PositionAsked
from kgrag.generate.prompt import build_messages, build_sources
from kgrag.generate.types import Answer, Citation, Source
from kgrag.lexicon.scripts import has_han
from kgrag.models import llm
from kgrag.retrieve.types import Hit, RetrievalResult

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
            "position": PositionAsked.of(result.query.completion)}


class Generator:
    """Thread-safe: holds settings only, so one instance serves every request thread."""

    def __init__(self, settings: LLMSettings, *, max_sources: int | None = None,
                 max_context_chars: int | None = None) -> None:
        """``max_sources``/``max_context_chars``: override the settings' packing budget."""
        max_sources = settings.max_sources if max_sources is None else max_sources
        max_context_chars = settings.max_context_chars if max_context_chars is None else max_context_chars
        if max_sources < 1:
            raise ValueError(f"max_sources must be at least 1, got {max_sources}")
        if max_context_chars < 200:
            raise ValueError(f"max_context_chars must be at least 200, got {max_context_chars}")
        self.settings = settings
        self.max_sources = max_sources
        self.max_context_chars = max_context_chars

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
               position: PositionAsked | None = None) -> Answer:
        """``expansions``: other names of the entities the question names (from retrieval); the
        extractive answerer counts them as question terms ("LCA" finds "lowest common ancestor").
        ``reply``: the question was small talk; this is the answer (no LLM call).
        ``position``: a positional follow-up; the extractive answer quotes the item asked for."""
        started = time.perf_counter()
        if reply is not None:
            return _timed(small_talk(reply), started)
        question = _checked_question(question)
        if abstain or not hits:
            return _timed(abstention(question), started)
        sources = self._sources(hits)
        if not self.settings.model:
            return _timed(self._extractive(question, sources, expansions=expansions, position=position), started)
        llm_started = time.perf_counter()
        try:
            text = llm.complete(self.settings, self._messages(question, sources))
        except llm.LLMError as error:
            answer = self._extractive(question, sources, fallback_reason=str(error), expansions=expansions,
                                      position=position)
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
               position: PositionAsked | None = None) -> Iterator[dict]:
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
                                 position=position)
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
            answer = self._extractive(question, sources, fallback_reason=str(error), expansions=expansions,
                                      position=position)
            if not pieces:
                yield {"type": "token", "text": answer.text}
        else:
            answer = self._checked_llm_answer("".join(pieces), sources)
        answer.timings_ms["llm"] = _ms(llm_started)
        yield {"type": "answer", "answer": _timed(answer, started).to_dict()}

    def on(self, today: dt.date) -> Generator:
        """This generator with ``today`` as the day its prompts give (an evaluation question's)."""
        return Generator(self.settings.model_copy(update={"today": today}), max_sources=self.max_sources,
                         max_context_chars=self.max_context_chars)

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

    def _extractive(self, question: str, sources: list[Source], fallback_reason: str | None = None,
                    expansions: Sequence[str] = (), position: PositionAsked | None = None) -> Answer:
        if position is not None and (read := _positional(question, sources, position, fallback_reason)) is not None:
            return read
        if (worked := dated.answer(question, sources, self._today())) is not None:
            preface, picks, worked_out = worked
            answer = _quoting(extractive.compose(picks), picks, sources, fallback_reason, preface=preface)
            answer.worked_out = worked_out
            return answer
        if (compared := _compared_or_relayed(question, sources)) is not None:
            return _quoting(*compared, sources, fallback_reason)
        whole = self.settings.extractive_whole_sources  # no token budget: past the prompt's window
        window_or_whole = [s.whole() if s.n <= whole else s for s in sources]
        picks = extractive.choose(question, window_or_whole, names=expansions)
        if not picks:  # sources without a single sentence of words
            answer = abstention(question)
            answer.fallback_reason = fallback_reason
            return answer
        text = extractive.compose(picks)
        if (heading := named.heading_answer(question, picks)) is not None:
            text = f"{heading}: {text}"  # "What is the name of the check …?": the section's heading
        return _quoting(text, picks, sources, fallback_reason)


def _compared_or_relayed(question: str, sources: list[Source]) -> tuple[str, list[extractive.Pick]] | None:
    """A yes/no or which-of-two comparison, a question about whom a relation leads to, or one
    about a place reached through something else, read as such (``polar``, ``compare``,
    ``relayed``, ``located``); None for any other question."""
    return (polar.answer(question, sources) or compare.answer(question, sources) or relayed.answer(question, sources)
            or located.answer(question, sources))


def _quoting(text: str, picks: list[extractive.Pick], sources: list[Source], fallback_reason: str | None,
             preface: str = "") -> Answer:
    """The extractive answer ``text`` made of ``picks``, checked, each quoted sentence cited. A
    pick read from a source's whole context rather than its prompt window (``relayed``) is
    checked against that context. ``preface``: what was worked out from the quoted sentences
    (a date for today, ``dated``), put before them; it quotes nothing, so it is not checked."""
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


def _positional(question: str, sources: list[Source], asked: PositionAsked, fallback_reason: str | None) -> Answer | None:
    """The extractive answer to a positional follow-up: the row or list item asked for, else the
    section retrieval placed next to the cited one, read for what the last turn asked; None
    when neither is there (the usual extractive answer then stands)."""
    if (found := positional.answer_item(asked, sources)) is not None:
        return _positional_answer(question, sources, asked, *found, fallback_reason)
    section = positional.neighbour_section(asked, sources)
    if section is None or not (picks := extractive.choose(asked.about, [section])):
        return None
    title = positional.section_title(section)
    text = extractive.compose(picks)
    return _quoting(f"{title}: {text}" if title and title not in text else text, picks, sources, fallback_reason)


def _positional_answer(question: str, sources: list[Source], asked: PositionAsked, anchor: positional.Item,
                       target: positional.Item, fallback_reason: str | None) -> Answer:
    """The item asked for, quoted and cited, its row or list line highlighted; checked against
    the source it was read from (the whole context: the row may lie past the prompt's window)."""
    text = positional.compose(asked, anchor, target, question)
    result = check(text, [target.source if s.n == target.source.n else s for s in sources])
    return Answer(text=result.text, citations=[citation_for(target.source, positional.quoted_sentence(target))],
                  abstained=False, mode="extractive", invalid_citations=result.invalid,
                  unsupported_sentences=result.unsupported, fallback_reason=fallback_reason)


def _highlight(citation: Citation, pick: extractive.Pick) -> None:
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
