"""The abstention gate: is anything retrieved relevant enough to answer from?

A pure function of the question, its linked entities and the hits (``assess``), so the
pipeline and the evaluation's negative-rejection check (``kgrag eval --negatives``: the same
hits with the question's gold passages taken out) decide the same way.

Signals, read from the top ``RANKING.gate_depth`` hits:

- ``coverage``: share of the question's content words found in the top three hits, matched
  as *word forms*: a word matches itself and its inflections ("capital", "capitals"), never a
  longer derived word that merely shares a stem ("Capitalisme", "capitalize").
- ``missing_names``: the question's names (linked entity surfaces; in English also words
  written with a capital inside the question) that no top hit contains. A question about
  "Australia" answered from pages that never say "Australia" is not answered.
- ``best_dense``: the best dense cosine among the top hits, in the space the dense threshold is
  measured in (MiniLM, weak on Chinese; e5's cosines, which bunch in 0.7–0.9 whatever the text
  says, do not count: an English question of a bilingual knowledge base is searched in both).
- ``across``: the best hit is written in another script than the question
  (``kgrag.retrieve.cross_script``). Its words cannot cover the question's, so the word signals
  (coverage, missing names, the lone path: only the dense path sees across scripts) give way to
  the dense path's language-neutral similarity of that hit (``across_dense``): under
  ``min_dense_across`` the gate abstains, unless a name of the question is tied to a top hit (by
  the graph or by pinyin, ``NameTies``); at or above it the question's names count as found in
  the other script. A name that no top hit writes is not missing either when it is so tied.
  docs/decisions.md, "Questions across languages", has the runs and what the threshold separates.

With a reranker and ``min_score`` set, the reranker's score decides alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from kgrag.config import RetrievalSettings
from kgrag.retrieve import answerable, cross_script
from kgrag.retrieve.tuning import CROSS_SCRIPT, LINKING, RANKING, VouchTuning
from kgrag.retrieve.types import Hit, LinkedEntity, NameTies
from kgrag.retrieve.word_forms import (
    LATIN_WORD,
    HitText,
    TextWords,
    content_words,
    inflection_found,
    is_nationality,
    name_found,
    question_names,
    when_words,
    word_coverage,
    word_forms,
)
from kgrag.text.analyze import EN_STOP
from kgrag.text.asks import asked_acronyms, could_answer, spells_out
from kgrag.text.normalize import fold_marks
from kgrag.text.scripts import HAN_RUN, has_han, is_mainly_non_latin
from kgrag.text.sentences import prose_sentences

# A page title's disambiguation, "(film)", "(footballer, born 1906)", or a trailing ", Florida".
_TITLE_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$|,.*$")
# Comparatives and superlatives name a comparison the reader makes from two facts ("led their team
# for a longer period of time, Tim Cluess or Steve Prohm?"): no page states them, so they are no
# relation words to look for.
COMPARATIVES = frozenset(
    "more most less least fewer longer longest older oldest younger youngest larger largest bigger biggest "
    "smaller smallest higher highest lower lowest taller tallest shorter shortest greater greatest newer "
    "newest closer further farther".split())
@dataclass
class Assessment:
    """What the gate saw and decided. ``reason``: why it abstained (None: it did not)."""

    abstain: bool
    reason: str | None = None
    coverage: float = 0.0
    best_dense: float | None = None
    missing_names: list[str] = field(default_factory=list)
    across: bool = False  # the best hit is written in another script than the question
    across_dense: float | None = None  # ... and its dense similarity (language-neutral)
    # best language-neutral similarity of the question with an other-script sentence of the
    # first hits (read only when the words cannot decide; None: not read, or none there)
    meaning_across: float | None = None
    tied_names: list[str] = field(default_factory=list)  # names found only across scripts
    # the fitted model's probability that the first hits answer the question, and what it read
    # (None: not asked: a rule decided, or the question or its best hit is not in Latin script)
    answerable: float | None = None
    signals: dict[str, float] | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class GateSettings:
    min_dense: float = RetrievalSettings.model_fields["abstain_min_dense"].default
    min_coverage: float = 0.0  # under this, abstain whatever the dense score
    # under this, abstain when the dense score is weak too
    min_coverage_weak_dense: float = RetrievalSettings.model_fields["abstain_min_coverage"].default
    min_score: float | None = None  # reranker score (only when a reranker ran)
    # An English question about a named thing that no top hit is about (no hit's title is in
    # the question's words): abstain unless the top hits hold this share of its words, and this
    # share of its words outside the names (the relation it asks about: "founded", "born").
    # (docs/decisions.md, "The gate's thresholds": the sweep).
    min_coverage_no_subject: float = 0.6
    min_relation_no_subject: float = 0.6
    weak_dense_no_subject: float = 0.55  # ... and only when the best dense cosine is under this
    # The relation share alone fires under a stronger dense cosine than the word coverage: pages
    # that name the question's things without one being about them, and without the relation it
    # asks, are namesakes however well they match as a whole (docs/decisions.md, "The gate's
    # thresholds": the relation band).
    weak_dense_no_relation: float = 0.65
    # Under this probability from the fitted model (``kgrag.retrieve.answerable``), abstain when
    # every rule let the question pass. 0: the model is not consulted for a decision.
    min_answerable: float = RetrievalSettings.model_fields["abstain_min_answerable"].default


def gate_settings(retrieval: RetrievalSettings) -> GateSettings:
    """The gate's thresholds from ``RetrievalSettings``."""
    return GateSettings(min_dense=retrieval.abstain_min_dense, min_coverage_weak_dense=retrieval.abstain_min_coverage,
                        min_score=retrieval.min_score, min_answerable=retrieval.abstain_min_answerable)


def assess(question: str, hits: Sequence[Hit], linked: Sequence[LinkedEntity], gate: GateSettings,
           *, reranked: bool = False, ties: NameTies | None = None,
           meaning: Callable[[float], float | None] | None = None) -> Assessment:
    """The gate's decision on ``hits`` (best first) for ``question``. ``ties``: the question's
    names tied to hits written in another script (``cross_script.tie_names``). ``meaning``:
    gives the best language-neutral similarity of the question with an other-script sentence of
    the first hits, or the first that reaches the bar it is given (``AcrossMeaning``), called only
    when the words cannot decide."""
    if not hits:
        return Assessment(True, "no hits")
    if not linked and not content_words(question):  # "^", "*", "AND", a bare "Who?"
        return Assessment(True, "the question names nothing to look for")
    top = hits[:RANKING.gate_depth]
    scored = [h.rerank_score for h in top if h.rerank_score is not None]
    if reranked and gate.min_score is not None and scored:
        best = max(scored)
        return Assessment(best < gate.min_score, "reranker score under min_score" if best < gate.min_score else None)
    read = [HitText(h) for h in top]
    # Words do not cross scripts: the question's words are looked for in the first hits written
    # in its own script (a passage in the other language, found through the question's
    # translation, holds none of them and would take the place of an own-script hit that may).
    # A passage in the other script may still write some of them (a mixed guide's English lines):
    # the first hits count beside the first own-script ones.
    own = [r for r, h in zip(read, top, strict=True) if not cross_script.across(question, h)]
    depth = RANKING.coverage_depth
    coverage = word_coverage(question, [*own[:depth], *(r for r in read[:depth] if r not in own[:depth])])
    # The weak-dense rule reads only cosines on the scale ``min_dense`` is measured on (the
    # English model's, ``PathRank.calibrated``): e5's bunch high whatever the text says. The
    # subject rule reads the best of any space, as it was measured (docs/decisions.md).
    dense = [d.calibrated for h in top if (d := h.paths.get("dense")) is not None and d.calibrated is not None]
    best_dense = max(dense) if dense else None
    any_dense = max((d.score for h in top if (d := h.paths.get("dense")) is not None), default=None)
    other_names = {le.surface: le.name for le in linked}
    missing = [n for n in question_names(question, linked)
               if not name_found(n, read) and not (n in other_names and name_found(other_names[n], read))]
    ids = [h.chunk.id for h in top]
    tied = [n for n in missing if ties is not None and ties.tied(n, ids)]
    missing = [n for n in missing if n not in tied]
    names = question_names(question, linked)
    out = Assessment(False, None, round(coverage, 3), None if best_dense is None else round(best_dense, 3), missing,
                     tied_names=tied)
    out.across = cross_script.across(question, top[0])
    if out.across:  # words do not cross scripts: the language-neutral dense match decides
        if "dense" in top[0].paths:
            out.across_dense = round(top[0].paths["dense"].score, 3)
        # A name of the question is in a top hit, in the other script, and no name spelled in
        # pinyin is missing: its Chinese page would be tied were it there. One tied name (the
        # club) vouches for no page about another person ("Yu Le" unwritten); a place named in
        # English ("Portugal" for 葡萄牙) stays missing on the right page.
        vouched = bool(tied) and not any(cross_script.spells_pinyin(n) for n in missing)
        if not vouched and not missing and _stated_in_own_script(question, names, top[:depth]):
            vouched = True  # a mixed passage's own-script sentence says it in the question's words
        if not vouched and not missing and _expansion_written(question, top[:depth]):
            vouched = True  # "What does RBAC stand for?": "…（Role-Based Access Control，简称 RBAC）"
        if not vouched and not _meant_across(question, out, meaning, gate):
            out.abstain, out.reason = True, "weak match with a hit in another script"
        # else: the question, names and all, matched the hit: its names are there in the other
        # script (``missing_names`` still lists those neither written nor tied)
    elif missing:
        out.abstain, out.reason = True, "a name in the question is in none of the top hits"
    elif _lone_path(top):
        out.abstain, out.reason = True, "the best hit was found by one retrieval path of several"
    elif _unsupported_subject(question, names, top, read, coverage, any_dense, gate):
        out.abstain, out.reason = True, "no top hit is about the question's subject, and they miss its words"
    elif coverage < gate.min_coverage:
        out.abstain, out.reason = True, "low word coverage"
    elif _weak_dense(question, best_dense, gate) and coverage < gate.min_coverage_weak_dense:
        out.abstain, out.reason = True, "weak dense match and low word coverage"
        # The words sought may be written in the other script: a mixed passage, or an other-script
        # hit below the first.
        if meaning is not None and _meant(question, out, meaning):
            out.abstain, out.reason = False, None
    if not out.abstain and not out.across and answerable.applies(question, top):
        _fitted(question, names, top, read, out, gate)
    return out


def _expansion_written(question: str, top: Sequence[Hit]) -> bool:
    """The question asks what an acronym stands for ("What does RBAC stand for?") and a first hit
    spells it out ("用户权限模型（Role-Based Access Control，简称 RBAC）", ``asks.spells_out``):
    the hit answers it, whatever script the rest of it is written in."""
    return any(spells_out(a, h.context.text) for a in asked_acronyms(question) for h in top)


def _stated_in_own_script(question: str, names: Sequence[str], top: Sequence[Hit]) -> bool:
    """A sentence of a first hit, written in the question's script inside a passage of the other
    ("A rotated key stays valid for 24 hours." in a Chinese guide), holds the relation the
    question asks (``CROSS_SCRIPT.own_sentence_relation`` of its relation words, at least one) and
    could answer it (a number for "how long"). The question's names are found in the hits (the
    caller's check), the relation in one sentence: "Acme Portal" in a Chinese passage vouches for
    no question about its price."""
    relation = _relation_words(question, names)
    if not relation:
        return False
    own = is_mainly_non_latin(question)
    for hit in top:
        for s in prose_sentences(hit.context.text, own):
            words = TextWords(s.text)
            if (sum(words.has(w) for w in relation) >= CROSS_SCRIPT.own_sentence_relation * len(relation)
                    and could_answer(question, s.text)):
                return True
    return False


def _relation_words(question: str, names: Sequence[str]) -> set[str]:
    """The question's content words outside its names and comparatives: the relation it asks
    ("father", "founded")."""
    name_words = {w for n in names for w in word_forms(n) if w not in EN_STOP}
    return {w for w in content_words(question) if w not in name_words and w not in COMPARATIVES}


def _fitted(question: str, names: list[str], top: Sequence[Hit], read: Sequence[HitText], out: Assessment,
            gate: GateSettings) -> None:
    """The fitted model's reading of a question every rule let pass (recorded; it abstains
    under ``min_answerable``)."""
    asked = _Words(question)
    out.signals = answerable.features(
        question, names, top, read, coverage=out.coverage, best_dense=out.best_dense,
        about=[_is_about(h, asked) for h in top], relation_words=_relation_words(question, names))
    out.answerable = round(answerable.shipped_model().probability(out.signals), 3)
    if out.answerable < gate.min_answerable:
        out.abstain, out.reason = True, "the fitted model judges the top hits unlikely to answer the question"


def _vouch(question: str) -> VouchTuning:
    return CROSS_SCRIPT.non_latin_question if is_mainly_non_latin(question) else CROSS_SCRIPT.latin_question


def _meant(question: str, out: Assessment, meaning: Callable[[float], float | None]) -> bool:
    """An other-script sentence of the first hits means what the question asks (records it).
    Only where sentence meaning vouches alone (``VouchTuning.min_dense`` None): a Chinese
    question's similarities run high with any English sentence, and no other-script best hit
    has a dense similarity to hold them to."""
    vouch = _vouch(question)
    if vouch.min_dense is not None:
        return False
    found = _read(out, meaning, vouch.min_meaning)
    return found is not None and found >= vouch.min_meaning


def _meant_across(question: str, out: Assessment, meaning: Callable[[float], float | None] | None,
                  gate: GateSettings) -> bool:
    """Whether the best hit, written in another script, answers the question: a sentence of the
    first hits means what it asks, and the best hit's dense similarity holds where the question's
    script needs it or a name of the question is neither written nor tied (a sentence on a
    railway's length means "How long is the Trans-Siberian railway?" whichever railway it is
    about); without sentence meaning, the dense similarity alone. A hit that writes the question's
    words all the same (a mixed passage: a Chinese sentence among English lines) is held to the
    dense similarity alone: its words vouch for it, whatever its other-script sentences mean."""
    dense = out.across_dense
    dense_holds = dense is not None and dense >= CROSS_SCRIPT.min_dense_across
    if dense_holds and out.coverage >= gate.min_coverage_weak_dense:
        return True
    vouch = _vouch(question)
    floor = vouch.min_dense
    if floor is None and out.missing_names:
        floor = CROSS_SCRIPT.min_dense_across
    floor_holds = floor is None or (dense is not None and dense >= floor)
    if not floor_holds and not dense_holds:  # no sentence could vouch: none is embedded
        return False
    found = _read(out, meaning, vouch.min_meaning) if meaning is not None else None
    if found is None:
        return dense_holds
    return found >= vouch.min_meaning and floor_holds


def _read(out: Assessment, meaning: Callable[[float], float | None], enough: float) -> float | None:
    """The gate's sentence meaning (the best, or the first of ``enough`` or more), recorded in
    the assessment."""
    found = meaning(enough)
    out.meaning_across = None if found is None else round(found, 3)
    return found


def _lone_path(top: Sequence[Hit]) -> bool:
    """The best hit was found by one path while several ran (the others found other hits): no
    path agrees with it (docs/decisions.md, "The gate's thresholds")."""
    ran = {name for h in top for name in h.paths}
    return len(ran) >= 2 and len(top[0].paths) == 1


def _unsupported_subject(question: str, names: list[str], top: Sequence[Hit], read: Sequence[HitText],
                         coverage: float, best_dense: float | None, gate: GateSettings) -> bool:
    """An English question naming something, answered from pages none of which is about a thing it
    names (their titles are not in its words), while the top hits miss its words: the pages share
    names with the question but are about other things (Wikipedia distractors with the gold pages
    removed: "Thomas Knox, 1st Earl of Ranfurly" for the 3rd Earl; the replayed figures are in
    docs/decisions.md, "The gate's thresholds"). A question naming nothing (descriptive: "the
    largest known example of Iron Age silver work") is left to the other signals."""
    written = fold_marks(question)
    names = [n for n in names if fold_marks(n) in written and n[:1].isupper()]  # proper names the question writes
    weak_for_words = best_dense is None or best_dense < gate.weak_dense_no_subject
    weak_for_relation = best_dense is None or best_dense < gate.weak_dense_no_relation
    if has_han(question) or not names or not (weak_for_words or weak_for_relation):
        return False
    asked = _Words(question)
    if any(_is_about(hit, asked) for hit in top):
        return False
    if weak_for_words and coverage < gate.min_coverage_no_subject:
        return True
    relation = _relation_words(question, names)
    found = {w for w in relation if any(r.has(w) for r in read[:RANKING.coverage_depth])}
    relation -= when_words(question, relation) - found  # "the date of the last Berlin meetup": not missed
    return weak_for_relation and bool(relation) and len(found) / len(relation) < gate.min_relation_no_subject


class _Words:
    """A question's words, for asking whether a title's words are among them (inflections and
    near spellings count: "Apratim" in "Apatim Majumdar")."""

    def __init__(self, text: str) -> None:
        self.words = set(LATIN_WORD.findall(HAN_RUN.sub(" ", fold_marks(text.replace("&amp;", "&")))))

    def holds(self, word: str) -> bool:
        if inflection_found(word, self.words):
            return True
        if len(word) < LINKING.min_fuzzy_word:
            return False
        from rapidfuzz import fuzz, process

        return process.extractOne(word, self.words, scorer=fuzz.ratio, score_cutoff=LINKING.fuzzy_word_ratio) is not None


def _is_about(hit: Hit, asked: _Words) -> bool:
    """Whether the hit's page is about something the question names: every word of its title,
    or of one level of a heading path ("MEDDPPICC > Overview": "MEDDPPICC"), is a word of the
    question (a disambiguation in parentheses and a trailing ", qualifier" dropped: "Palm
    Springs, Florida", "Group Channels (g_)")."""
    levels = f"{hit.chunk.title} > {hit.chunk.section_path or ''}".replace("&amp;", "&").split(" > ")
    for level in levels:
        words = [w for w in word_forms(_TITLE_QUALIFIER.sub("", level), han=False) if w not in EN_STOP]
        if words and all(asked.holds(w) or is_nationality(w) for w in words):
            return True
    return False


def _weak_dense(question: str, best_dense: float | None, gate: GateSettings) -> bool:
    """A Chinese question's dense score never vouches for it: the thresholds were measured with
    MiniLM, which sits out for Chinese, so the Chinese figures are coverage alone; e5's cosines (the
    routed embedder's for Chinese) run high for unrelated text (0.88 for the demo's unanswerable
    "Acme Portal 的数据库多久备份一次？") and are not calibrated against ``min_dense``."""
    return best_dense is None or best_dense < gate.min_dense or has_han(question)


