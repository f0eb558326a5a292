"""Answers without an LLM, quoted from the sources: a registry of answerers, one per kind of
question (``registry.ANSWERERS``), each reading the question parsed once (``asked.Asked``) and
returning the sentences it quotes (``answerer.Extracted``)."""
