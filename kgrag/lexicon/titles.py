"""Document titles as entity names.

Wikipedia-style corpora (HotpotQA, MuSiQue) title each paragraph with the entity it is about;
ingestion makes such a title an entity and graph retrieval maps chunk titles back to entities,
so both must agree on which titles are names and on their spellings. A title is a name when it
is short (at most ``MAX_TITLE_WORDS`` words and ``MAX_TITLE_CHARS`` characters) and matchable.
Its aliases drop a trailing disambiguation ("The Boss (2016 film)" → "The Boss") and a leading
article ("The Beatles" → "Beatles", the form NER reports).
"""

from __future__ import annotations

import re

from kgrag.lexicon.gazetteer import matchable
from kgrag.lexicon.normalize import normalize_alias

MAX_TITLE_WORDS = 8
MAX_TITLE_CHARS = 80
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")
# A leading English article: dropped from title aliases here and from NER spans
# (``kgrag.models.ner``), so a title and the name NER reports for it meet.
LEADING_ARTICLE = re.compile(r"^(?:the|The|THE)\s+")


def title_aliases(title: str) -> list[str]:
    """The title and its shorter spellings: without disambiguation, without a leading article."""
    forms = [title.strip()]
    base = _DISAMBIGUATION.sub("", forms[0]).strip()
    for form in (base, LEADING_ARTICLE.sub("", base).strip()):
        if form and normalize_alias(form) not in {normalize_alias(f) for f in forms}:
            forms.append(form)
    return forms


def is_name_like_title(title: str) -> bool:
    """Whether a document title is short enough to be an entity name."""
    title = title.strip()
    return (
        0 < len(title) <= MAX_TITLE_CHARS
        and len(title.split()) <= MAX_TITLE_WORDS
        and matchable(normalize_alias(title))
    )
