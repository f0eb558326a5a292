"""Document titles as entity names.

Wikipedia-style corpora title each paragraph with the entity it is about;
ingestion makes such a title an entity and graph retrieval maps chunk titles back to entities,
so both must agree on which titles are names and on their spellings. A title is a name when it
is short (at most ``MAX_TITLE_WORDS`` words and ``MAX_TITLE_CHARS`` characters) and matchable.
Its aliases drop a trailing disambiguation ("The Boss (2016 film)" → "The Boss") and a leading
article ("The Beatles" → "Beatles", the form NER reports).
"""

from __future__ import annotations

import re

from kgrag.lexicon.gazetteer import matchable
from kgrag.text.normalize import normalize_alias

MAX_TITLE_WORDS = 8
MAX_TITLE_CHARS = 80
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")
# A leading English article: dropped from title aliases here and from NER spans
# (``kgrag.models.ner``), so a title and the name NER reports for it meet.
LEADING_ARTICLE = re.compile(r"^(?:the|The|THE)\s+")


# "Page > H2 > H3": the title of one section of a page (the handbook corpus, Markdown sections).
SECTION_SEPARATOR = " > "


def section_path_parts(title: str) -> list[str]:
    """The headings of a section title, outermost first ("Guide > Setup" → Guide, Setup); a
    title without the separator is one part."""
    return [part.strip() for part in title.split(SECTION_SEPARATOR) if part.strip()]


_HEADING_TAG = re.compile(r"<[^<>\n]{1,200}>")
_HEADING_EMPHASIS = re.compile(r"(\*\*|__|`)(.+?)\1")


def section_heading(title: str) -> str:
    """The innermost heading of a section title: the name the section is about, without the
    markup a Markdown/HTML heading carries ("**Product Principles**", an icon's ``<i …></i>``):
    the entity is named as a question spells it."""
    parts = section_path_parts(title)
    heading = parts[-1] if parts else title.strip()
    plain = " ".join(_HEADING_EMPHASIS.sub(r"\2", without_tags(heading)).split())
    return plain or heading


def without_tags(heading: str) -> str:
    """A heading without the HTML tags it may carry (an icon's ``<i class="…"></i>``)."""
    return _HEADING_TAG.sub(" ", heading)


def title_aliases(title: str) -> list[str]:
    """The title and its shorter spellings: without disambiguation, without a leading article.
    A section title ("Page > Heading") is not shortened to its heading here: retrieval reads
    these forms to find an entity's own page, and a heading such as "Engineering" or "Sales"
    made a page of every generic table entry (docs/decisions.md, "A section title is not
    shortened to its heading"). Ingestion names the section entity by its heading
    (``section_heading``)."""
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
