"""Text rules shared by every layer, written once: which writing system a character belongs to
(``scripts``), folding and name normalization (``normalize``: ``fold``, ``normalize_alias``),
the patterns questions and sources are read with (``patterns``: years, months, sentence ends,
quotes, brackets, pronouns, when-words), BM25 analysis (``analyze``) and Markdown tables
(``markdown_tables``). It imports nothing of kgrag above ``types`` and ``errors``."""
