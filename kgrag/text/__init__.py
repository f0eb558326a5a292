"""BM25 analysis shared by every chunk index and the answer checks (names and their
normalization live in ``kgrag.lexicon``)."""
