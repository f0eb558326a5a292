"""Entity names, shared by ingestion, query linking and alias administration.

One layer decides what a name is, so that the three agree: an alias stored by ingestion, typed
by an admin or written in a question meets the same entity. It imports nothing of kgrag but
``types`` and ``errors`` (and spaCy's stop-word list on first use of a gazetteer), so answering
a question never loads the ingestion job.

- ``scripts``: which writing system a character belongs to — every Unicode range kgrag uses,
  named once (``has_han``, ``han_runs``, ``is_char_breakable``, ``is_no_space_char``, ...).
- ``normalize``: ``normalize_alias`` (when two surface forms are one name) and
  ``normalize_with_offsets`` (the same for running text, with the way back to offsets).
- ``gazetteer``: ``Gazetteer`` (alias → entity keys, ``match`` over running text),
  ``candidate_aliases`` (what to look up in a store to match a text), ``find_aliases`` (the
  n-gram loop under both), ``matchable``, ``english_stop_words``.
- ``titles``: document titles as names (``title_aliases``, ``is_name_like_title``).
- ``glossary``: curated glossary files, CSV / YAML / lines (``load_glossary``,
  ``write_glossary_csv``, ``glossary_aliases``, ``GlossaryError``).
"""
