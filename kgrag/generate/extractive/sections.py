"""The headings above a quoted sentence: which section of which page it lies in."""

from __future__ import annotations

from kgrag.generate.types import Source
from kgrag.lexicon.titles import section_path_parts, without_tags
from kgrag.text.sentences import Sentence, readable


def heading_levels(source: Source, sentence: Sentence) -> list[str]:
    """The headings above ``sentence`` of ``source``, outermost first, as read: the document
    title's ("Job Families > Failed Pipeline", a title keeping its page's path), then the section
    path at the sentence ("Failed pipeline / Inclusive Language Check", the chunker's)."""
    context = source.context
    at = source.offset + sentence.start - context.start
    levels = section_path_parts(context.title) + (context.section_at(at) or context.section_path).split(" / ")
    read = [readable(without_tags(level)).strip(" #:") for level in levels]
    return [level for level in read if level]
