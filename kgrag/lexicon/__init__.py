"""Entity names, shared by ingestion, query linking and alias administration.

One layer decides what a name is, so that the three agree: an alias stored by ingestion, typed
by an admin or written in a question meets the same entity. It imports nothing of kgrag but
``text``, ``types`` and ``errors`` (and spaCy's stop-word list on first use of a gazetteer), so
answering a question never loads the ingestion job. Names are normalized by
``kgrag.text.normalize`` (``normalize_alias``, ``normalize_with_offsets``), characters told
apart by ``kgrag.text.scripts``.

- ``gazetteer``: ``Gazetteer`` (alias → entity keys, ``match`` over running text),
  ``candidate_aliases`` (what to look up in a store to match a text), ``find_aliases`` (the
  n-gram loop under both), ``matchable``, ``english_stop_words``.
- ``titles``: document titles as names (``title_aliases``, ``is_name_like_title``).
- ``glossary``: curated glossary files, CSV / YAML / lines (``load_glossary``,
  ``write_glossary_csv``, ``glossary_aliases``, ``GlossaryError``).
"""
